"""What each ThunderKittens / CUDA operation means, in one table.

Read from TK's public headers (include/ops/thread/util/{sync,tma}.cuh,
include/ops/group/..., prototype/) and the PTX ISA; see CONTRACTS.md "Scope
decides counts". A call is looked up by its *qualifier* (the scope part of the
spelled name: '', 'tma', 'warp', 'warpgroup', 'group<N>', 'everyone', ...) and
its *base name*. The entry says which model operation it is, what its
arguments mean, and who executes the PTX:

* thread scope: every thread that reaches the call executes it;
* group scope (`warp::`, `warpgroup::`, `group<N>::`): the call is made by the
  whole group and the PTX is issued by one elected lane (lane 0 of the group).

TK changed the `tma::` ops to thread scope in late 2025; before, several of
them guarded lane 0 themselves ("lane-guarded"). `tma_lane_guarded` marks the
entries whose meaning depends on that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..model import ir


@dataclass(frozen=True)
class OpSpec:
    kind: str
    # positional argument roles, in order. '*tiles' consumes the rest.
    args: tuple[str, ...] = ()
    group_elects: bool = True  # group-scoped spelling: one lane per group issues
    tma_lane_guarded: bool = False  # old TK: the thread-scope spelling guarded lane 0 itself
    # what the name fixes of its kind's facts (ir.SyncFacts, ir.FenceFacts, ...):
    sync_kind: str | None = None  # SYNC: block | warp | cluster | ...; group (named or warp by
    #                                   its arguments), block_named (everyone::sync(id))
    syncthreads: bool = False  # SYNC: CUDA's __syncthreads (barrier 0)
    # the call's value is the same for every thread of the block (a voting barrier's reduction)
    uniform_result: bool = False
    fence_kind: str | None = None  # FENCE
    tmem: str | None = None  # TMEM_OP: the action
    tcgen05_commit: bool = False  # MBAR_ARRIVE by tcgen05.commit
    remote: bool = False  # MBAR_ARRIVE / TMA_LOAD on another CTA's barrier
    tk_barrier: bool = False  # SYNC / NAMED_ARRIVE on TK's barrier<N> object (its id and 32*N)
    and_wait: bool = False  # MBAR_ARRIVE then wait
    proxy_fence: bool = False  # TMA_STORE: TK fences the async proxy before the copy
    read_only: bool = False  # TMA_STORE_WAIT: waits for the reads only
    increase: bool | None = None  # SETMAXNREG: .inc / .dec
    registers: int | None = None  # SETMAXNREG: the count the name fixes
    # CP_ASYNC: where the copy comes from (CopyFacts.via); commits: the call closes its own
    # commit group after the copies (TK's load_async); CP_ASYNC_WAIT: then_sync is the barrier
    # the call runs after the wait ("warp": __syncwarp, "group": the group's named barrier)
    copy_via: str | None = None
    commits: bool = False
    then_sync: str | None = None
    pdl: str | None = None  # PDL: wait | launch_dependents


# Base names valid at thread scope ('' or 'kittens' qualifier, or 'tma').
THREAD_OPS: dict[str, OpSpec] = {
    "init_semaphore": OpSpec(ir.MBAR_INIT, ("barrier", "count", "tx")),
    "invalidate_semaphore": OpSpec(ir.CALL, ("barrier",)),
    "arrive": OpSpec(ir.MBAR_ARRIVE, ("barrier", "count")),
    "wait": OpSpec(ir.MBAR_WAIT, ("barrier", "parity")),
    "careful_wait": OpSpec(ir.MBAR_WAIT, ("barrier", "parity")),
    "arrive_and_wait": OpSpec(ir.MBAR_ARRIVE, ("barrier", "parity"), and_wait=True),
    "__syncthreads": OpSpec(ir.SYNC, (), sync_kind="block", syncthreads=True),
    # the voting barriers (`bar.red.{or,and,popc}` on barrier 0): __syncthreads plus a block-wide
    # reduction of a predicate, the same value for every thread of the block
    "__syncthreads_or": OpSpec(ir.SYNC, ("predicate",), sync_kind="block", syncthreads=True, uniform_result=True),
    "__syncthreads_and": OpSpec(ir.SYNC, ("predicate",), sync_kind="block", syncthreads=True, uniform_result=True),
    "__syncthreads_count": OpSpec(ir.SYNC, ("predicate",), sync_kind="block", syncthreads=True, uniform_result=True),
    "__syncwarp": OpSpec(ir.SYNC, ("mask",), sync_kind="warp"),
    "tensor_commit": OpSpec(ir.MBAR_ARRIVE, ("barrier",), tcgen05_commit=True),
    "tensor_before_thread_sync": OpSpec(ir.FENCE, (), fence_kind="tcgen05_before"),
    "tensor_after_thread_sync": OpSpec(ir.FENCE, (), fence_kind="tcgen05_after"),
    "tensor_load_wait": OpSpec(ir.TMEM_OP, (), tmem="wait_ld"),
    "tm_load_wait": OpSpec(ir.TMEM_OP, (), tmem="wait_ld"),  # TK of early 2025
    "tm_store_wait": OpSpec(ir.TMEM_OP, (), tmem="wait_st"),
    "tensor_store_wait": OpSpec(ir.TMEM_OP, (), tmem="wait_st"),
    # TK ops/thread/util/sync.cuh: cp.async.wait_all (N = 0) / cp.async.wait_group N, then __syncwarp
    "load_async_wait": OpSpec(ir.CP_ASYNC_WAIT, (), then_sync="warp"),
    # CUDA's cuda_pipeline_primitives.h: cp.async of 4/8/16 bytes, commit_group, wait_group N
    "__pipeline_memcpy_async": OpSpec(ir.CP_ASYNC, ("dst", "src", "bytes"), copy_via="pipeline"),
    "__pipeline_commit": OpSpec(ir.CP_ASYNC_COMMIT, ()),
    "__pipeline_wait_prior": OpSpec(ir.CP_ASYNC_WAIT, ("count",)),
    # CUDA memory fences: __threadfence() is fence.sc.gpu (membar.gl), a release+acquire at gpu scope
    "__threadfence": OpSpec(ir.FENCE, (), fence_kind="membar_gl"),
    "__threadfence_system": OpSpec(ir.FENCE, (), fence_kind="membar_sys"),
    "__threadfence_block": OpSpec(ir.FENCE, (), fence_kind="membar_cta"),
    # programmatic dependent launch, the CUDA runtime's device calls: griddepcontrol.wait and
    # griddepcontrol.launch_dependents (one PDL event whatever the spelling, PDL_OPS)
    "cudaGridDependencySynchronize": OpSpec(ir.PDL, (), pdl="wait"),
    "cudaTriggerProgrammaticLaunchCompletion": OpSpec(ir.PDL, (), pdl="launch_dependents"),
}

# ---- wide shared accesses (issue 25, round 10) ------------------------------------------------
# A store or load through a pointer to a wider type than the element (`*reinterpret_cast<uint4 *>(
# &a_s[r][c]) = v`, CUDA's vector types) and a warp's `ldmatrix` / `stmatrix` row (16 bytes a row,
# each lane of `.x4` naming one row) touch several consecutive elements of the last index: the
# walk lowers such an access to an access of its first element (frontend/walk_exprs.py,
# walk_asm.py), as it lowers a wide load (`*(float2 *)&x[i]`). A conflict found on it is real; one
# on the other elements only (a partial overlap at another offset) is not seen. One access per
# covered element found the same bugs and cost 90x the check time on a 16-step K loop (idioms9
# ldmatrix_mma_stmatrix: 116 s against 1.3 s). Bytes of the vector types by name.
VECTOR_TYPE_BYTES: dict[str, int] = {
    **{
        f"{b}{n}": s * n
        for b, s in (("char", 1), ("uchar", 1), ("short", 2), ("ushort", 2), ("int", 4), ("uint", 4), ("float", 4))
        for n in (2, 4)
    },
    **{f"{b}2": 16 for b in ("double", "longlong", "ulonglong", "long", "ulong")},
    "__half2": 4,
    "half2": 4,
    "__nv_bfloat162": 4,
    "nv_bfloat162": 4,
}
# ldmatrix / stmatrix `.xN` (N = 1, 2, 4): N 8x8 matrices, each of 8 rows of 16 bytes; lanes
# 0 .. 8N - 1 name the shared address of one row each (`.x1` / `.x2` read the addresses of lanes
# 0-7 / 0-15 only)
MATRIX_ROW_BYTES = 16
MATRIX_ROWS_PER_PIECE = 8

# ---- libcu++ (<cuda/barrier>, <cuda/pipeline>; frontend/walk_libcu.py lowers them) ----------
# Read from libcu++'s headers (cuda/pipeline, cuda/__barrier, cuda/__memcpy_async): a block-scope
# `cuda::barrier` is an mbarrier; a partitioned `cuda::pipeline` is a ring of (produced, consumed)
# barrier pairs in its `pipeline_shared_state`, with per-thread head / tail counters and phase
# parities (consumed starts at parity 1: a fresh stage is free); the unified (thread-scope)
# pipeline is cp.async commit groups.
# pipeline methods -> what they are (partitioned | unified)
LIBCU_PIPELINE_METHODS: dict[str, tuple[str, str]] = {
    "producer_acquire": ("wait consumed[head % S], parity (head / S + 1) % 2", "nothing"),
    "producer_commit": (
        "arrive produced[head % S] (after the thread's copies); ++head",
        "cp.async.commit_group; ++head",
    ),
    "consumer_wait": ("wait produced[tail % S], parity (tail / S) % 2", "cp.async.wait_group head - tail - 1; ++tail"),
    "consumer_release": ("arrive consumed[tail % S]; ++tail", "nothing"),
}
# barrier methods: arrive(n) -> token (the parity of the thread's phase), wait(token), wait_parity(p),
# arrive_and_wait()
LIBCU_BARRIER_METHODS = frozenset({"arrive", "wait", "wait_parity", "arrive_and_wait", "arrive_and_drop"})
# `cuda::latch<scope>` (<cuda/latch>) in `__shared__` storage (raw bytes and placement new: a
# latch has no default constructor), block or wider scope, is a one-phase mbarrier of the block
# (libcu++ keeps a counter the constructor sets, count_down is a release RMW on it, wait an acquire
# spin until it reads 0: the phase-0 completion of an mbarrier initialised with the count, which
# orders at block scope, all a shared-memory object's users need). frontend/walk_libcu.py lowers:
LIBCU_LATCH_METHODS: dict[str, str] = {
    "latch(n)": "MBAR_INIT count n (placement new on the storage; the constructing thread's guard)",
    "count_down(n = 1)": "MBAR_ARRIVE count n",
    "wait()": "MBAR_WAIT parity 0 (the completion of the latch's one phase)",
    "arrive_and_wait(n = 1)": "MBAR_ARRIVE count n, then MBAR_WAIT parity 0",
}
LIBCU_LATCH_T = re.compile(r"\bcuda::(?:__\d+::)?latch<\s*(?:::)?(?:cuda::)?(?:\w+::)*thread_scope_(\w+)")
# `cuda::binary_semaphore<scope>` (`counting_semaphore<scope, 1>`, <cuda/semaphore>) on global memory
# (reached through a kernel pointer: `sems[i].acquire()`, `s->release()`) is libcu++'s
# `__atomic_semaphore<scope, 1>`: an int that is 1 while free. frontend/walk_libcu.py lowers
# (the word's base, element index and scope as an atomic's; checks/locks.py reads the spin):
LIBCU_SEMAPHORE_METHODS: dict[str, str] = {
    "acquire()": "SPIN loop: GLOBAL_SIGNAL exch 0 (acquire), going on while the old value != 1",
    "try_acquire()": "GLOBAL_SIGNAL exch 0 (acquire); its value is old == 1",
    "release()": "GLOBAL_SIGNAL st 1 (release)",
}
LIBCU_BINARY_SEMAPHORE_T = re.compile(
    r"\bcuda::(?:__\d+::)?counting_semaphore<\s*(?:::)?(?:cuda::)?(?:\w+::)*thread_scope_(\w+)\s*,\s*1\s*>"
)
# libcu++ synchronisation objects the model does not lower: `cuda::latch` where the above does not
# apply (global storage, a storage not known, `try_wait`, thread scope) and
# `cuda::counting_semaphore` other than the binary one above (and a binary one in shared memory or
# at an address not known, `try_acquire_for` / `_until`). A call of one of their
# methods is a synchronisation the engines cannot see through: the walk emits an opaque CALL there
# (every engine is blind across a CALL), so an access ordered only by it stays undecided
# (coverage), never a finding and never a silent pass. Matched on libclang's type of the object.
LIBCU_UNLOWERED_SYNC_TYPES = re.compile(r"\bcuda::(?:__\d+::)?(?:latch|counting_semaphore)<")
LIBCU_UNLOWERED_SYNC_METHODS = frozenset(
    {
        "count_down",
        "arrive_and_wait",
        "wait",
        "try_wait",
        "acquire",
        "try_acquire",
        "try_acquire_for",
        "try_acquire_until",
        "release",
    }
)
# free functions: cuda::make_pipeline, cuda::memcpy_async (a cp.async copy of the issuing thread),
# cuda::init (mbarrier init), cuda::pipeline_consumer_wait_prior<N> (cp.async.wait_group N),
# cuda::device::barrier_arrive_tx (arrive.expect_tx, then the other arrivals),
# cuda::device::experimental::cp_async_bulk_global_to_shared (a bulk copy completing bytes on the barrier)
LIBCU_FUNCTIONS = frozenset(
    {
        "make_pipeline",
        "memcpy_async",
        "init",
        "pipeline_consumer_wait_prior",
        "barrier_arrive_tx",
        # r16-expecttx: cuda::device::barrier_expect_tx(bar, tx): mbarrier.expect_tx, bytes only
        "barrier_expect_tx",
        "cp_async_bulk_global_to_shared",
        # pipe (round 5): cuda::device::memcpy_async_tx, a bulk copy completing bytes on the barrier
        "memcpy_async_tx",
    }
)

# CUDA's cache-hinted loads (`__ldg`, `__ldcg`, ...): `__ldcg(&p[i])` is a plain (weak) load of
# `p[i]` with a cache operator, no memory order (PTX `ld.global.cg` & co)
CUDA_LOAD_HINTS = ("__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv")

# CUDA atomics (relaxed, gpu scope; `_system` variants system scope): on a global counter they are
# the signal side of a cross-block dependency (which needs release ordering before them)
CUDA_ATOMICS = (
    "atomicAdd",
    "atomicSub",
    "atomicExch",
    "atomicInc",
    "atomicDec",
    "atomicOr",
    "atomicAnd",
    "atomicXor",
    "atomicMax",
    "atomicMin",
    "atomicCAS",
    "atomicAdd_system",
    "atomicExch_system",
    "atomicAdd_block",
)

# the read-modify-write each of them performs (GlobalAccessFacts.atomic / AccessFacts.atomic)
CUDA_ATOMICS_OP = {name: name[len("atomic") :].split("_")[0].lower() for name in CUDA_ATOMICS}
# the scope of the `_block` / `_system` variants (the others: gpu, GlobalAccessFacts.scope None)
CUDA_ATOMICS_SCOPE = {"block": "cta", "system": "sys"}
# libcu++ / C++ atomic objects (`cuda::atomic_ref<T, scope>`, `cuda::atomic<T, scope>`,
# `cuda::std::atomic` / `atomic_ref`; frontend/walk_atomics.py): the class templates, and each
# member call as the event it is -- (kind, read-modify-write) as for CUDA's atomics and PTX's
# red / atom (GLOBAL_SIGNAL), a flag store (`st`, like `st.release`), a poll (GLOBAL_LOAD)
ATOMIC_OBJECT_TEMPLATES = ("atomic", "atomic_ref")
ATOMIC_METHODS: dict[str, tuple[str, str | None]] = {
    "fetch_add": (ir.GLOBAL_SIGNAL, "add"),
    "fetch_sub": (ir.GLOBAL_SIGNAL, "sub"),
    "fetch_or": (ir.GLOBAL_SIGNAL, "or"),
    "fetch_and": (ir.GLOBAL_SIGNAL, "and"),
    "fetch_xor": (ir.GLOBAL_SIGNAL, "xor"),
    "fetch_max": (ir.GLOBAL_SIGNAL, "max"),
    "fetch_min": (ir.GLOBAL_SIGNAL, "min"),
    "exchange": (ir.GLOBAL_SIGNAL, "exch"),
    "compare_exchange_strong": (ir.GLOBAL_SIGNAL, "cas"),
    "compare_exchange_weak": (ir.GLOBAL_SIGNAL, "cas"),
    "store": (ir.GLOBAL_SIGNAL, "st"),
    "load": (ir.GLOBAL_LOAD, None),
}
# C++20 atomic waiting (`a.wait(old, order)`, `a.notify_one()` / `notify_all()`): `wait` blocks
# while the value equals `old` and may wake spuriously, so it is the spin `while (a.load(order) ==
# old) {}` -- a SPIN over a GLOBAL_LOAD (a poll of the word, with the wait's order: a load order)
# that both engines read like any spin; a notify only wakes waiters: no event (the store it
# follows is the release), a modelled site
ATOMIC_WAIT_METHODS = ("wait",)
ATOMIC_NOTIFY_METHODS = ("notify_one", "notify_all")
ATOMIC_OTHER_METHODS = ATOMIC_WAIT_METHODS + ATOMIC_NOTIFY_METHODS
MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
# a C++ memory_order -> the event's order (GlobalAccessFacts.sem), per kind of access (an order a
# kind does not allow -- a release load -- is missing: not modelled). seq_cst is at least as
# strong as acq_rel / acquire / release, which is all the happens-before engine asks of it
ATOMIC_RMW_ORDER = {
    "relaxed": "relaxed",
    "consume": "acquire",
    "acquire": "acquire",
    "release": "release",
    "acq_rel": "acq_rel",
    "seq_cst": "acq_rel",
}
ATOMIC_LOAD_ORDER = {"relaxed": "relaxed", "consume": "acquire", "acquire": "acquire", "seq_cst": "acquire"}
ATOMIC_STORE_ORDER = {"relaxed": "relaxed", "release": "release", "seq_cst": "release"}
# `cuda::thread_scope_X` -> the scope of the event, in PTX's words (GlobalAccessFacts.scope)
THREAD_SCOPES = {"system": "sys", "device": "gpu", "block": "cta", "cluster": "cluster", "thread": "thread"}
# `atomic_thread_fence(order, scope)` (order not relaxed): libcu++ emits `fence.acq_rel` /
# `fence.sc` at the scope, the fence kinds of `__threadfence*` and PTX fences
ATOMIC_FENCE_KIND = {"sys": "membar_sys", "gpu": "membar_gl", "cta": "membar_cta", "cluster": "membar_cluster"}
# TK's multi-GPU synchronisation over a `barrier_t` (a pgl of int counters, one per device): not
# mbarriers but counters in global memory. `signal` / `signal_all` add with red.release.sys (the
# latter through the multicast address), `wait(bar, coord, dev_idx, expected)` spins with
# ld.relaxed.sys until the counter holds `expected`, `barrier_all` is signal_all, wait, and a
# release add taking NUM_DEVICES back. Each is these global-memory operations, in order.
MULTI_GPU_OPS: dict[str, tuple[tuple[str, str], ...]] = {
    "signal": ((ir.GLOBAL_SIGNAL, "release"),),
    "signal_all": ((ir.GLOBAL_SIGNAL, "release"),),
    "wait": ((ir.GLOBAL_LOAD, "relaxed"),),
    "barrier_all": ((ir.GLOBAL_SIGNAL, "release"), (ir.GLOBAL_LOAD, "relaxed"), (ir.GLOBAL_SIGNAL, "release")),
}
# their arguments: (barrier, coord, dst_dev_idx, val), (barrier, coord, val),
# (barrier, coord, dev_idx, expected), (barrier, coord, dev_idx)
MULTI_GPU_ARITY = {"signal": 4, "signal_all": 3, "wait": 4, "barrier_all": 3}

# TK's expects are mbarrier.arrive.expect_tx: each also arrives once; PTX's `mbarrier.expect_tx`
# (`BarrierFacts.tx_only`) arrives not at all. The engines read `ir.Op.expect_arrivals`.

# Base names under `tma::` (and `tma::cluster::`).
TMA_OPS: dict[str, OpSpec] = {
    "expect_bytes": OpSpec(ir.MBAR_EXPECT, ("barrier", "bytes", "cta"), tma_lane_guarded=True),
    "expect": OpSpec(ir.MBAR_EXPECT, ("barrier", "*tiles"), tma_lane_guarded=True),
    # tma::cluster::load_async(dst, gl, coord, bar, mask[, dst_mbar_cta]): with dst_mbar_cta the
    # cta_group::2 form, whose bytes complete on that CTA's copy of `bar`
    "load_async": OpSpec(ir.TMA_LOAD, ("dst", "gl", "coord", "barrier", "mask", "mbar_cta"), tma_lane_guarded=True),
    "prefetch": OpSpec(ir.CALL, ("dst", "gl", "coord")),
    # TK's store_*async issue `fence.proxy.async.shared::cta` in the issuing thread right before
    # the bulk copy (checked in the PTX of a TK build): proxy_fence
    "store_async": OpSpec(ir.TMA_STORE, ("gl", "src", "coord"), proxy_fence=True, tma_lane_guarded=True),
    "store_add_async": OpSpec(ir.TMA_STORE, ("gl", "src", "coord"), proxy_fence=True, tma_lane_guarded=True),
    "store_min_async": OpSpec(ir.TMA_STORE, ("gl", "src", "coord"), proxy_fence=True, tma_lane_guarded=True),
    "store_max_async": OpSpec(ir.TMA_STORE, ("gl", "src", "coord"), proxy_fence=True, tma_lane_guarded=True),
    "store_commit_group": OpSpec(ir.TMA_STORE_COMMIT, ()),
    "store_async_wait": OpSpec(ir.TMA_STORE_WAIT, ()),
    "store_async_read_wait": OpSpec(ir.TMA_STORE_WAIT, (), read_only=True),
    "arrive": OpSpec(ir.MBAR_ARRIVE, ("barrier", "cta", "count"), remote=True),
}

# tcgen05 completion and cluster launch control (TK ops/thread/mma/tcgen05.cuh, ops/thread/util/util.cuh):
# `detail::tcgen05::commit<ncta>(sem)` is what `tensor_commit<ncta>` and the MMA overloads with a
# semaphore run: tcgen05.commit.cta_group::ncta.mbarrier::arrive::one, multicast to both CTAs of
# the pair (mask 0b11) for ncta == 2; one arrival on each CTA's copy once the issuing thread's
# earlier tcgen05 operations complete.
# (frontend/walk_calls.py `_emit_tcgen05_commit` emits it: an MBAR_ARRIVE with `mbar.tcgen05_commit`.)
# `clc::schedule(handle, sem)`: clusterlaunchcontrol.try_cancel.async ... mbarrier::complete_tx::bytes
# .multicast::cluster::all.b128: the 16-byte response lands in every CTA of the cluster and completes
# 16 tx bytes on each CTA's `sem`, which each CTA expects itself (tma::cluster::expect_bytes).
CLC_RESPONSE_BYTES = 16
# `pdl::arrive()` = griddepcontrol.launch_dependents, `pdl::wait()` = griddepcontrol.wait
PDL_OPS = {"arrive": "launch_dependents", "wait": "wait"}
_PTX_GRIDDEP = re.compile(r"\bgriddepcontrol\.(wait|launch_dependents)\b")
# the host side of PDL (frontend/launch_chain.py): the launch attribute that lets a kernel start
# before its predecessor in the stream completed, and the field of its value that switches it on
PDL_LAUNCH_ATTRIBUTE = "cudaLaunchAttributeProgrammaticStreamSerialization"
PDL_LAUNCH_VALUE_FIELD = "programmaticStreamSerializationAllowed"
# `tma::cluster::store_async(dst, src, dst_cta, [bytes,] sem)`: a copy of shared memory into another
# CTA's shared memory (distributed shared memory), completing as transaction bytes on that CTA's
# mbarrier `sem` (same address there): a delivery to a barrier of another CTA, not a bulk store
# with a commit group.
CLUSTER_COPY_OPS: dict[int, OpSpec] = {
    4: OpSpec(ir.TMA_LOAD, ("dst", "src", "cta", "barrier"), remote=True, tma_lane_guarded=True),
    5: OpSpec(ir.TMA_LOAD, ("dst", "src", "cta", "bytes", "barrier"), remote=True, tma_lane_guarded=True),
}

# `everyone::sync(id)`: bar.sync id over every thread of the block
# TK's named-barrier object `barrier<num_warps>` (id from its constructor, `b[i]` = id + i):
# `arrive(b)` / `group<N>::arrive(b)` is `bar.arrive id, 32*num_warps`, `arrive_and_wait(b)` /
# `group<N>::arrive_and_wait(b)` is `bar.sync id, 32*num_warps`; every thread that runs them
# executes the instruction (the walk picks these specs when the argument is such an object)
TK_BARRIER_ARRIVE = OpSpec(ir.NAMED_ARRIVE, ("tkbar",), group_elects=False, tk_barrier=True)
TK_BARRIER_SYNC = OpSpec(ir.SYNC, ("tkbar",), sync_kind="named", group_elects=False, tk_barrier=True)
EVERYONE_SYNC = OpSpec(ir.SYNC, ("id",), sync_kind="block_named", group_elects=False)

# Cluster-wide barriers: `everyone::tma::cluster::sync()`, `tma::cluster::sync()`...
CLUSTER_OPS: dict[str, OpSpec] = {
    "sync": OpSpec(ir.SYNC, (), sync_kind="cluster"),
    "arrive": OpSpec(ir.SYNC, (), sync_kind="cluster_arrive"),
    "arrive_aligned": OpSpec(ir.SYNC, (), sync_kind="cluster_arrive"),
    "wait": OpSpec(ir.SYNC, (), sync_kind="cluster_wait"),
    "wait_aligned": OpSpec(ir.SYNC, (), sync_kind="cluster_wait"),
}

# Base names under a group scope (`warp::`, `warpgroup::`, `group<N>::`).
GROUP_OPS: dict[str, OpSpec] = {
    "sync": OpSpec(ir.SYNC, ("id",), sync_kind="group", group_elects=False),
    "arrive": OpSpec(ir.MBAR_ARRIVE, ("barrier", "count")),  # semaphore: lane 0 of the group
    # `warp::wait(sem, phase)` (TK ops/group/util/sync.cuh): every thread of the group spins on
    # mbarrier.try_wait.parity (two arguments; `group<N>::wait()` without is another operation)
    "wait": OpSpec(ir.MBAR_WAIT, ("barrier", "parity"), group_elects=False),
    "init_semaphore": OpSpec(ir.MBAR_INIT, ("barrier", "count", "tx")),
    "increase_registers": OpSpec(ir.SETMAXNREG, (), increase=True, group_elects=False),
    "decrease_registers": OpSpec(ir.SETMAXNREG, (), increase=False, group_elects=False),
    "producer_registers": OpSpec(ir.SETMAXNREG, (), increase=False, registers=24, group_elects=False),
    "consumer_registers": OpSpec(ir.SETMAXNREG, (), increase=True, group_elects=False),
    # TK's warpgroup mma_*/mm_* call mma_fence() by default: wgmma.fence + fence.proxy.async.shared::cta
    # in every thread of the warpgroup before the wgmma (the checks take any wgmma as fenced)
    "mma_AB": OpSpec(ir.MMA, ("acc", "a", "b"), group_elects=False),
    "mma_ABt": OpSpec(ir.MMA, ("acc", "a", "b"), group_elects=False),
    "mma_AtB": OpSpec(ir.MMA, ("acc", "a", "b"), group_elects=False),
    "mma_AtBt": OpSpec(ir.MMA, ("acc", "a", "b"), group_elects=False),
    "mm_AB": OpSpec(ir.MMA, ("acc", "a", "b"), group_elects=False),
    "mm_ABt": OpSpec(ir.MMA, ("acc", "a", "b"), group_elects=False),
    "mm_AtB": OpSpec(ir.MMA, ("acc", "a", "b"), group_elects=False),
    "mm_AtBt": OpSpec(ir.MMA, ("acc", "a", "b"), group_elects=False),
    "mma_async_wait": OpSpec(ir.MMA_WAIT, (), group_elects=False),
    "mma_commit_group": OpSpec(ir.MMA_COMMIT, (), group_elects=False),
    "mma_fence": OpSpec(ir.MMA_FENCE, ("acc",), group_elects=False),
    # TK ops/group/memory/{tile,vec}/global_to_shared.cuh: every thread of the group issues
    # cp.async.cg for its part of the tile, then cp.async.commit_group (one group per call)
    "load_async": OpSpec(ir.CP_ASYNC, ("dst", "gl", "coord"), group_elects=False, copy_via="tk", commits=True),
    # TK ops/group/util/sync.cuh: cp.async.wait_group N, then __syncwarp() (no argument) or
    # the group's named barrier `sync(bar_id)`
    "load_async_wait": OpSpec(ir.CP_ASYNC_WAIT, ("id",), group_elects=False, then_sync="group"),
}

# TK's `mma<trans_A, trans_B>` / `mm<trans_A, trans_B>` (warpgroup.cuh) dispatch on `transpose::N`
# (0) and `transpose::T` (1) to the named forms
TRANSPOSE_VALUES = {"N": 0, "T": 1}


def transposed_mma_name(base: str, trans_a: int, trans_b: int) -> str:
    """`mm` with (T, N) -> `mm_AtB`: the named form TK's template dispatches to."""
    return f"{base}_{'At' if trans_a else 'A'}{'Bt' if trans_b else 'B'}"


# MMA names (TK ops/group/mma/warpgroup.cuh, ops/thread/mma/tcgen05.cuh): `mma*` accumulate
# (D += A*B), `mm*` overwrite (D = A*B); `2` is tcgen05's cta_group::2 (the pair of CTAs); the
# suffix says which operand is given transposed: `_AB`, `_ABt` (B as N x K), `_AtB` (A as K x M),
# `_AtBt`. tcgen05 also spells `mma<trans_a, trans_b>` and a bare `mma` (the name says nothing).
# The warpgroup (wgmma) names are the GROUP_OPS entries of kind MMA.
_MMA_NAME = re.compile(r"(mma?)(2?)(?:_(At?)(Bt?))?")


def tcgen05_mma_name(base: str) -> bool:
    """A base name the thread-scope tcgen05 MMAs use (`mm_ABt`, `mma2_AB`, `mma`, ...)."""
    return _MMA_NAME.fullmatch(base) is not None


def mma_facts(base: str, family: str, commit_barrier: ir.Ref | None = None) -> ir.MmaFacts | None:
    """What an MMA's base name says, for `family` ("wgmma" | "tcgen05"); None: not an MMA name."""
    m = _MMA_NAME.fullmatch(base)
    if m is None:
        return None
    spelled = m.group(3) is not None
    return ir.MmaFacts(
        family,
        accumulate=m.group(1) == "mma",
        ncta=2 if m.group(2) else 1,
        transpose_a=m.group(3) == "At" if spelled else None,
        transpose_b=m.group(4) == "Bt" if spelled else None,
        commit_barrier=commit_barrier,
    )


# Inline PTX (asm statements) the SASS cross-check expects in the binary, and the instruction a
# message names for a raw asm statement.
_PTX_ASYNC_MMA = re.compile(r"wgmma\.mma_async|\btcgen05\.mma\b")
_PTX_ARRIVE = re.compile(r"\bmbarrier\.arrive\b")
_PTX_EXPECT_TX = re.compile(r"\bmbarrier\.(arrive\.)?expect_tx\b")
_PTX_SHOWN = re.compile(
    r"\b(wgmma\.mma_async|tcgen05\.mma|mbarrier\.[a-z_.]+|fence\.proxy\.async[a-z:_.]*|"
    r"cp\.async\.bulk[a-z:_.]*)"
)


def classify_ptx(ptx: str) -> ir.AsmFacts:
    """The facts of one asm statement's PTX text (its strings, joined)."""
    shown = _PTX_SHOWN.search(ptx)
    return ir.AsmFacts(
        async_mma=_PTX_ASYNC_MMA.search(ptx) is not None,
        arrives=_PTX_ARRIVE.search(ptx) is not None,
        expects_tx=_PTX_EXPECT_TX.search(ptx) is not None,
        mbarrier="mbarrier" in ptx,
        instruction=shown.group(1) if shown else None,
    )


# Warp collectives with a member mask (PTX ISA, "Parallel Synchronization and Communication
# Instructions": shfl.sync, vote.sync, match.sync, redux.sync, elect.sync, bar.warp.sync). Each
# makes the executing thread wait until every non-exited thread named in its membermask has
# executed the instruction "with the same qualifiers and same membermask value" (elect.sync: "all
# threads in the membermask"); the behaviour is undefined when the executing thread is not in the
# mask. bar.warp.sync (CUDA's __syncwarp) pairs any bar.warp.sync of the same mask on sm_70+.
# The CUDA intrinsics are those instructions (CUDA C++ Programming Guide, warp shuffle / vote /
# match / reduce functions: "all non-exited threads named in mask must execute the same intrinsic
# with the same mask"). The name kept is the instruction with the qualifiers that must agree
# (the data type aside: two sites that differ only in it are taken as one, which can only hide a
# mismatch, never make one). Argument 0 is the mask.
# `__activemask()`: a WARP_COLL event with this instr, no collective (it waits for no lane); its
# value is a run-time member mask (checks/warp_collectives.py)
ACTIVEMASK = "activemask"
WARP_COLLECTIVE_CALLS: dict[str, str] = {
    "__shfl_sync": "shfl.sync.idx",
    "__shfl_up_sync": "shfl.sync.up",
    "__shfl_down_sync": "shfl.sync.down",
    "__shfl_xor_sync": "shfl.sync.bfly",
    "__ballot_sync": "vote.sync.ballot",
    "__any_sync": "vote.sync.any",
    "__all_sync": "vote.sync.all",
    "__uni_sync": "vote.sync.uni",
    "__match_any_sync": "match.sync.any",
    "__match_all_sync": "match.sync.all",
    "__reduce_add_sync": "redux.sync.add",
    "__reduce_min_sync": "redux.sync.min",
    "__reduce_max_sync": "redux.sync.max",
    "__reduce_and_sync": "redux.sync.and",
    "__reduce_or_sync": "redux.sync.or",
    "__reduce_xor_sync": "redux.sync.xor",
}
# `shfl.sync.down.b32 d|p, a, b, c, membermask;`, `vote.sync.ballot.b32 d, p, membermask;`,
# `match.any.sync.b32 d, a, membermask;`, `redux.sync.add.u32 d, a, membermask;`,
# `elect.sync d|p, membermask;`, `bar.warp.sync membermask;`: the membermask is the last operand
_PTX_WARP_COLL = re.compile(
    r"(?<![\w.])(shfl\.sync|vote\.sync|match\.(?:any|all)\.sync|redux\.sync|elect\.sync|bar\.warp\.sync)"
    r"((?:\.[a-z0-9]+)*)\s*([^;]*);"
)
_PTX_WARP_MODES = {
    "shfl.sync": ("up", "down", "bfly", "idx"),
    "vote.sync": ("all", "any", "uni", "ballot"),
    "redux.sync": ("add", "min", "max", "and", "or", "xor"),
}


# `.sync.aligned` instructions that take no member mask: every lane of the warp must execute the
# same instruction convergently (PTX ISA, tensormap.cp_fenceproxy: "all threads in the warp must
# execute the same instruction"); a warp collective of the full warp. Their memory effect (the
# copy to global memory, the proxy release) is not modelled: ALIGNED_UNMODELLED
# `ldmatrix` / `stmatrix` (`.sync.aligned` mandatory): the warp's lanes name the rows of the
# matrices it reads or writes as one instruction (their memory accesses: frontend/walk_asm.py
# `_matrix_rows`); a lane that skips it leaves the others undefined (observed: a hang)
_PTX_ALIGNED_WARP = re.compile(r"(?<![\w.])(tensormap\.cp_fenceproxy|ldmatrix|stmatrix)((?:\.[\w:]+)*)\s*[^;]*;")
ALIGNED_UNMODELLED = frozenset({"tensormap.cp_fenceproxy"})
ALIGNED_WARP = frozenset({"tensormap.cp_fenceproxy", "ldmatrix", "stmatrix"})


_PTX_TENSORMAP_ORDER = re.compile(
    r"(?<![\w.])(tensormap\.cp_fenceproxy|fence\.proxy\.tensormap::generic)((?:\.[\w:]+)*)\s*([^;]*);"
)


def ptx_tensormap_orders(ptx: str) -> list[tuple[str, str | None]]:
    """The tensormap-proxy orderings of one asm statement's PTX, in order: ("tensormap_release",
    the global map operand) for `tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic
    .release.<scope>.sync.aligned [gmap], [smap], size`, ("tensormap_acquire", the map operand)
    for `fence.proxy.tensormap::generic.acquire.<scope> [addr], size`; the operand's text inside
    its brackets (`%0`), None when it is not one address operand; ("tensormap_release", None) for
    the release fence of the tensormap proxy (`fence.proxy.tensormap::generic.release.<scope>`,
    round 10: it releases the thread's generic writes of maps, at no one address). Other forms
    give nothing."""
    text = ptx.replace("\\n", " ").replace("\\t", " ")
    out: list[tuple[str, str | None]] = []
    for m in _PTX_TENSORMAP_ORDER.finditer(text):
        quals = set(m.group(2).split("."))
        args = [a.strip() for a in m.group(3).split(",")]
        addr = _bracket(args[0]) if args else None
        if m.group(1) == "tensormap.cp_fenceproxy" and "release" in quals and "global" in quals:
            out.append(("tensormap_release", addr))
        elif m.group(1).startswith("fence.") and "acquire" in quals:
            out.append(("tensormap_acquire", addr))
        elif m.group(1).startswith("fence.") and "release" in quals:
            # `fence.proxy.tensormap::generic.release.<scope>;` (no address): the writing thread's
            # release of its generic writes of any map into the tensormap proxy (round 10)
            out.append(("tensormap_release", None))
    return out


_PTX_TENSORMAP_ACCESS = re.compile(r"(?<![\w.])(tensormap\.replace|tensormap\.cp_fenceproxy)((?:\.[\w:]+)*)\s*([^;]*);")


def ptx_tensormap_accesses(ptx: str) -> list[tuple[str, str, str]]:
    """The generic-proxy memory accesses of tensor-map objects in one asm statement's PTX (round
    10), in order: (mode, state space, address operand text). `tensormap.replace.<mode>.<field>
    .<space>.b1024.<type> [addr], ...` is a weak write of the whole 128-byte map at `addr` in the
    generic proxy (PTX ISA: a write of the entire opaque tensor-map object), `space` "shared" or
    "global"; `tensormap.cp_fenceproxy.global.shared::cta... [gmap], [smap], 128` reads all of
    the shared map `smap` ("read", "shared"; its write of gmap and its release into the tensormap
    proxy are `ptx_tensormap_orders`' event). An operand that is not one bracketed address gives
    nothing."""
    text = ptx.replace("\\n", " ").replace("\\t", " ")
    out: list[tuple[str, str, str]] = []
    for m in _PTX_TENSORMAP_ACCESS.finditer(text):
        quals = set(m.group(2).split("."))
        args = [a.strip() for a in m.group(3).split(",")]
        if m.group(1) == "tensormap.replace":
            addr = _bracket(args[0]) if args else None
            space = "shared" if "shared::cta" in quals else "global" if "global" in quals else None
            if addr is not None and space is not None:
                out.append(("write", space, addr))
        elif "shared::cta" in quals and len(args) >= 2:
            addr = _bracket(args[1])
            if addr is not None:
                out.append(("read", "shared", addr))
    return out


def ptx_warp_collectives(ptx: str) -> list[tuple[str, str | None]]:
    """The warp collectives of one asm statement's PTX, in order: (the instruction with the
    qualifiers that must agree -- "shfl.sync.down", "match.sync.any", "elect.sync",
    "bar.warp.sync", "tensormap.cp_fenceproxy" --, the membermask operand's text: `0xffffffff`,
    `%3`, or None)."""
    out: list[tuple[str, str | None]] = []
    text = ptx.replace("\\n", " ").replace("\\t", " ")
    for m in _PTX_ALIGNED_WARP.finditer(text):
        if {"sync", "aligned"} <= set(m.group(2).split(".")):
            out.append((m.group(1), "0xffffffff"))
    for m in _PTX_WARP_COLL.finditer(text):
        base, quals, args = m.group(1), [q for q in m.group(2).split(".") if q], m.group(3)
        if base.startswith("match."):
            name = "match.sync." + base.split(".")[1]
        else:
            mode = next((q for q in quals if q in _PTX_WARP_MODES.get(base, ())), None)
            name = base + ("." + mode if mode else "")
        ops = [a.strip() for a in args.split(",") if a.strip()]
        out.append((name, ops[-1] if ops else None))
    return out


# The model ops an asm statement's PTX performs (frontend/walk_asm.py emits them in this order):
# block and named barriers, fences, register reallocation, global signals and loads, then a shared
# access (its address operand tracked) and, for raw mbarrier / bulk-copy / wgmma PTX, an opaque
# call whose operands are not tracked.
# `bar{.cta}.sync a{, b}`, `barrier{.cta}.sync{.aligned} a{, b}`, `bar.arrive a, b`,
# `bar.red.popc.u32 d, a{, b}, c` (a reduction that waits like bar.sync): a is the barrier id,
# b the thread count (none: every thread of the CTA)
_PTX_BAR = re.compile(r"\b(?:bar|barrier)(?:\.cta)?\.(sync|arrive|red)\b((?:\.[a-z0-9]+)*)\s*([^;]*)")
_PTX_FENCE = re.compile(r"\b(membar\.(gl|sys|cta)|fence\.(acq_rel|sc)\.(gpu|sys|cta|cluster)|fence\.mbarrier_init)")
_PTX_GLOBAL_SIGNAL = (re.compile(r"\b(red|atom)\.[a-z.]*global"), re.compile(r"\b(red|atom)\.(release|relaxed|acq)"))
_PTX_ATOMIC_OP = re.compile(r"\b(red|atom)((?:\.[a-z0-9_:]+)+)")
# `ld.acquire.gpu.global.b32` and the order ptxas also takes, `ld.global.acquire.gpu.b32`: the
# qualifiers of the whole instruction name (group 1)
_PTX_GLOBAL_LOAD = re.compile(r"\bld((?:\.[\w:]+)*?\.global(?:\.[\w:]+)*)")
_PTX_FLAG_STORE = re.compile(r"\bst\.(release|relaxed)\.[a-z.:]*global\b")
_PTX_DATA_STORE = re.compile(r"\bst(?:\.weak)?\.global\b")
_PTX_STORE_OPERANDS = re.compile(r"\bst[.\w:]*\s+\[\s*%(\d+)\s*\](?:\s*,\s*%(\d+)\b)?")
# the operands of a global load / atomic: `ld... %0, [%1]`, `red... [%0], %1`, `atom... %0, [%1], %2`
_PTX_LOAD_OPERANDS = re.compile(r"\bld[.\w:]*\s+(?:%(\d+)|\{[^}]*\})\s*,\s*\[\s*%(\d+)\s*\]")
_PTX_ATOMIC_OPERANDS = re.compile(r"\b(?:red|atom)[.\w:]*\s+(?:%(?P<out>\d+)\s*,\s*)?\[\s*%(?P<addr>\d+)\s*\]")


def _ptx_scope(quals: list[str]) -> str | None:
    """The scope qualifier of an instruction's qualifiers (`.cta`, `.cluster`, `.gpu`, `.sys`);
    None: none written (PTX's default for atomics and fences is gpu)."""
    return next((q for q in quals if q in ("cta", "cluster", "gpu", "sys")), None)


def _ptx_instruction(ptx: str, start: int) -> str:
    """The one instruction of the PTX text that starts at `start` (for messages)."""
    end = ptx.find(";", start)
    return ptx[start : end if end >= 0 else start + 80].strip()[:80]


_PTX_SHARED = re.compile(r"\b(st|ld)\.shared\b|\bldmatrix\b|\bstmatrix\b")


# ---- dsmem: distributed shared memory in inline PTX (issue 25, round 5) ----
# `ld/st/red/atom{.sem}{.scope}.shared::cluster ... [%N]`: an access of the shared memory of a CTA
# of the cluster, its address the output of a `mapa.shared::cluster` (frontend/walk_asm.py maps it
# back to the `__shared__` element and the CTA): the same SMEM_ACCESS a cooperative-groups
# `cluster.map_shared_rank(p, r)[i]` is, `cta` the rank. A weak ld/st is a data access; a
# `.relaxed` / `.acquire` / `.release` / `.volatile` one and every red/atom synchronise (or race
# by design): `atomic` names them, and the happens-before engine leaves their pairs undecided.
_PTX_DSMEM = re.compile(r"\b(ld|st|red|atom)((?:\.[\w]+)*)\.shared::cluster((?:\.[\w]+)*)")


@dataclass(frozen=True)
class PtxDsmemAccess:
    """One ld/st/red/atom of `.shared::cluster` memory: read/write, the synchronising form (None:
    a weak ld/st), the address operand (`%N` inside the brackets) and its constant offset."""

    mode: str
    sync: str | None
    addr_operand: int | None
    offset: int = 0
    api: str = ""
    # the address is a PTX register a `mapa.shared::cluster` of the same statement set
    # (`mapa.shared::cluster.u32 ra, %1, %2; ld.shared::cluster.f32 %0, [ra];`): its local
    # address and CTA operands (`%1`, `%2`)
    mapa: tuple[str, str] | None = None
    scope: str | None = None  # `.cta` / `.cluster` / `.gpu` / `.sys` as written
    # a st / red / atom: the stored value's operand (`%N`, the last operand); None: another form
    value_operand: int | None = None


def ptx_dsmem_accesses(ptx: str) -> tuple[PtxDsmemAccess, ...]:
    """The `.shared::cluster` accesses of one asm statement's PTX (not `mapa`, not bulk copies)."""
    out = []
    mapas: dict[str, tuple[str, str]] = {}
    for opcode, ops in _ptx_instructions(ptx):
        if opcode.startswith("mapa.shared::cluster") and len(ops) == 3 and not ops[0].startswith("%"):
            mapas[ops[0]] = (ops[1], ops[2])
            continue
        mm = _PTX_DSMEM.fullmatch(opcode)
        if mm is None:
            continue
        what = mm.group(1)
        quals = [q for q in (mm.group(2) + mm.group(3)).split(".") if q]
        addr = next((b for b in (_bracket(o) for o in ops) if b is not None), None)
        am = re.fullmatch(r"%(\d+)\s*(?:\+\s*(\d+))?", addr or "")
        rm = re.fullmatch(r"([A-Za-z_$][\w$]*)\s*(?:\+\s*(\d+))?", addr or "")
        scope = _ptx_scope(quals)
        vm = re.fullmatch(r"%(\d+)", ops[-1].strip()) if what == "st" and len(ops) == 2 else None
        value_operand = int(vm.group(1)) if vm else None
        if am is None and rm is not None and rm.group(1) in mapas:
            sem = next(
                (q for q in quals if q in ("relaxed", "acquire", "release", "acq_rel", "volatile", "mmio")), None
            )
            out.append(
                PtxDsmemAccess(
                    "read" if what == "ld" else "write",
                    what if what in ("red", "atom") else sem,
                    None,
                    int(rm.group(2)) if rm.group(2) else 0,
                    f"{what}.shared::cluster",
                    mapa=mapas[rm.group(1)],
                    scope=scope,
                    value_operand=value_operand,
                )
            )
            continue
        sem = next((q for q in quals if q in ("relaxed", "acquire", "release", "acq_rel", "volatile", "mmio")), None)
        out.append(
            PtxDsmemAccess(
                "read" if what == "ld" else "write",
                what if what in ("red", "atom") else sem,
                int(am.group(1)) if am else None,
                int(am.group(2)) if am and am.group(2) else 0,
                f"{what}.shared::cluster",
                scope=scope,
                value_operand=value_operand,
            )
        )
    return tuple(out)


# ---- end dsmem block ----
# ---- ordered shared accesses: `ld.acquire` / `st.release` on shared memory (issue 25, round 9) ----
# `ld{.relaxed,.acquire}.{scope}.shared{::cta}.{type} %0, [%1]` / `st{.relaxed,.release}.{scope}
# .shared{::cta}.{type} [%0], %1` (also `.volatile`, no scope): a memory-model ordered access of the
# CTA's own shared memory, the same event as a libcu++ `atomic_ref<T, scope>` load / store of it
# (AccessFacts atomic "load" / "st", `order`, `scope`; volatile: relaxed at cta scope, as PTX
# defines it). A weak `ld.shared` / `st.shared` is a data access (`shared_access`), never this.
_PTX_SHARED_ORDERED = re.compile(
    r"\b(ld|st)\.(relaxed|acquire|release|volatile)((?:\.(?:cta|cluster|gpu|sys))?)\.shared(?:::cta)?((?:\.[\w]+)*)"
)


@dataclass(frozen=True)
class PtxSharedOrdered:
    """One ordered ld/st of the CTA's own shared memory: read/write, its order (relaxed |
    acquire | release), its scope, the address operand (`%N` in the brackets), the loaded
    value's output operand (ld) or the stored value's operand (st)."""

    mode: str
    order: str
    scope: str | None
    addr_operand: int
    value_operand: int | None
    api: str


def ptx_shared_ordered(ptx: str) -> tuple[PtxSharedOrdered, ...] | None:
    """The ordered shared::cta accesses of one asm statement's PTX; None when it has one whose
    operands are not plain `%N` (the statement is then not modelled by this table)."""
    out = []
    for opcode, ops in _ptx_instructions(ptx):
        mm = _PTX_SHARED_ORDERED.fullmatch(opcode)
        if mm is None:
            continue
        what, sem, scope = mm.group(1), mm.group(2), mm.group(3).lstrip(".") or None
        if sem == ("release" if what == "ld" else "acquire") or len(ops) != 2:
            return None
        if sem == "volatile":
            sem, scope = "relaxed", "cta"
        elif scope is None:
            scope = "sys"  # PTX: the default scope of a .relaxed / .acquire / .release access
        addr_text, val_text = (ops[1], ops[0]) if what == "ld" else (ops[0], ops[1])
        am = re.fullmatch(r"%(\d+)", _bracket(addr_text) or "")
        vm = re.fullmatch(r"%(\d+)", val_text.strip())
        if am is None:
            return None
        out.append(
            PtxSharedOrdered(
                "read" if what == "ld" else "write",
                sem,
                scope,
                int(am.group(1)),
                int(vm.group(1)) if vm else None,
                f"{what}.{sem}.shared",
            )
        )
    return tuple(out)


_PTX_UNTRACKED = ("mbarrier", "cp.async.bulk", "wgmma")
# non-bulk cp.async (sm_80): the copy (its shared address the first `[%N]`, its size the last
# immediate), the commit, the waits; wait_all is commit_group + wait_group 0
_PTX_CP_ASYNC = re.compile(
    r"\bcp\.async\.(?:ca|cg)\.shared(?:::cta)?\.global\b[^;]*?\[\s*%(\d+)\s*\][^;]*?,\s*(\d+)\s*[,;]?"
)
_PTX_CP_COMMIT = re.compile(r"\bcp\.async\.commit_group\b")
_PTX_CP_WAIT = re.compile(r"\bcp\.async\.wait_group\s+(?:(\d+)|%(\d+))")
_PTX_CP_WAIT_ALL = re.compile(r"\bcp\.async\.wait_all\b")


@dataclass(frozen=True)
class PtxOp:
    """One model op an inline PTX statement performs: its kind, the api it is shown as, and the
    facts of its kind (an `ir.Op` field each)."""

    kind: str
    api: str
    sync: ir.SyncFacts | None = None
    fence: ir.FenceFacts | None = None
    global_access: ir.GlobalAccessFacts | None = None
    increase: bool | None = None  # SETMAXNREG: .inc (else .dec)
    # SYNC / NAMED_ARRIVE: the operand texts of the barrier id and the thread count ("%0", "1");
    # count None: every thread of the CTA
    bar_id: str | None = None
    bar_count: str | None = None
    copy: ir.CopyFacts | None = None  # CP_ASYNC
    # operands the front end resolves: the shared address (CP_ASYNC), the count (CP_ASYNC_WAIT
    # written `wait_group %N`); a constant count / size written in the PTX itself
    addr_operand: int | None = None
    # GLOBAL_LOAD / GLOBAL_SIGNAL: the operand the loaded (old) value is written to (`%0` of
    # `ld.acquire.gpu.global.b32 %0, [%1]`, of `atom.add %0, [%1], %2`)
    out_operand: int | None = None
    # GLOBAL_SIGNAL `st.release` / `st.relaxed`: the operand holding the value stored (`%1` of
    # `st.release.gpu.global.u32 [%0], %1`), the value a spin on the word may be waiting for
    value_operand: int | None = None
    count_operand: int | None = None
    count: int | None = None
    bytes: int | None = None
    pdl: str | None = None  # PDL: wait | launch_dependents (griddepcontrol.*)

    def op_fields(self) -> dict[str, object]:
        """The `ir.Op` fields this op sets (its kind facts)."""
        fields = {
            "pdl": self.pdl,
            "sync": self.sync,
            "fence": self.fence,
            "global_access": self.global_access,
            "increase": self.increase,
            "copy": self.copy,
        }
        return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True)
class PtxOps:
    """What one asm statement's PTX does, classified once."""

    ops: tuple[PtxOp, ...]  # in program order
    shared_access: str | None = None  # ldmatrix | stmatrix | st.shared | ld.shared: an SMEM_ACCESS
    untracked: bool = False  # raw mbarrier / bulk-copy / wgmma PTX: recorded, operands not tracked


def ptx_ops(ptx: str) -> PtxOps:
    """The model ops of one asm statement's PTX text (its strings, joined)."""
    ops: list[PtxOp] = []
    for m in _PTX_GRIDDEP.finditer(ptx):
        # programmatic dependent launch: the same PDL event as TK's pdl::wait() / pdl::arrive()
        ops.append(PtxOp(ir.PDL, f"griddepcontrol.{m.group(1)}", pdl=m.group(1)))
    mb = _PTX_BAR.search(ptx)
    if mb:
        what, args = mb.group(1), [a.strip() for a in mb.group(3).split(",") if a.strip()]
        if what == "red":
            args = args[1:-1]  # the destination and the predicate around a{, b}
        bid = args[0] if args else None
        cnt = args[1] if len(args) > 1 else None
        if what == "arrive":
            ops.append(PtxOp(ir.NAMED_ARRIVE, "bar.arrive", bar_id=bid, bar_count=cnt))
        else:
            ops.append(PtxOp(ir.SYNC, f"bar.{what}", sync=ir.SyncFacts("named"), bar_id=bid, bar_count=cnt))
    if "fence.proxy.async" in ptx:
        ops.append(PtxOp(ir.FENCE, "fence.proxy.async", fence=ir.FenceFacts("proxy_async")))
    mf = _PTX_FENCE.search(ptx)
    if mf:
        scope = mf.group(2) or mf.group(4) or "cluster"
        what = (
            "mbarrier_init" if "mbarrier_init" in mf.group(1) else f"membar_{'gl' if scope in ('gl', 'gpu') else scope}"
        )
        ops.append(PtxOp(ir.FENCE, mf.group(1), fence=ir.FenceFacts(what)))
    if "setmaxnreg" in ptx:
        ops.append(PtxOp(ir.SETMAXNREG, "setmaxnreg", increase=".inc" in ptx))
    if any(p.search(ptx) for p in _PTX_GLOBAL_SIGNAL) and not _PTX_DSMEM.search(ptx):
        sem = (
            "release"
            if ".release" in ptx
            else ("acq_rel" if ".acq_rel" in ptx else ("acquire" if ".acquire" in ptx else "relaxed"))
        )
        mo = _PTX_ATOMIC_OP.search(ptx)
        quals = mo.group(2).split(".") if mo else []
        op = next(
            (q for q in quals if q in ("add", "inc", "dec", "exch", "cas", "min", "max", "or", "and", "xor")), None
        )
        dtype = next((q for q in quals if re.fullmatch(r"[usbf]\d+|bf16(x2)?|f16x2", q)), None)
        scope = _ptx_scope(quals)
        mops = _PTX_ATOMIC_OPERANDS.search(ptx)
        ops.append(
            PtxOp(
                ir.GLOBAL_SIGNAL,
                "asm red/atom",
                global_access=ir.GlobalAccessFacts(
                    sem,
                    _ptx_instruction(ptx, mo.start() if mo else 0),
                    atomic=op,
                    dtype=("float" if dtype and dtype[0] in "fb" and dtype != "b32" else dtype),
                    scope=scope,
                ),
                addr_operand=int(mops.group("addr")) if mops else None,
                out_operand=int(mops.group("out")) if mops and mops.group("out") else None,
            )
        )
    ms = _PTX_FLAG_STORE.search(ptx)
    if ms:
        # `st.release.gpu.global [%0], %1` / `st.relaxed`: a flag set with memory-model order (a
        # signal, like a red that sets instead of adding); a weak `st.global` is a data store
        mops = _PTX_STORE_OPERANDS.search(ptx, ms.start())
        ops.append(
            PtxOp(
                ir.GLOBAL_SIGNAL,
                "asm st.global",
                global_access=ir.GlobalAccessFacts(
                    ms.group(1),
                    _ptx_instruction(ptx, ms.start()),
                    atomic="st",
                    scope=_ptx_scope(_ptx_instruction(ptx, ms.start()).split()[0].split(".")),
                ),
                addr_operand=int(mops.group(1)) if mops else None,
                value_operand=int(mops.group(2)) if mops and mops.group(2) else None,
            )
        )
    elif _PTX_DATA_STORE.search(ptx):
        # a weak `st.global` (a helper's vector store): data written, like `p[i] = v`
        md = _PTX_DATA_STORE.search(ptx)
        assert md is not None
        mops = _PTX_STORE_OPERANDS.search(ptx, md.start())
        ops.append(
            PtxOp(
                ir.GLOBAL_STORE,
                "asm st.global",
                global_access=ir.GlobalAccessFacts("weak", _ptx_instruction(ptx, md.start())),
                addr_operand=int(mops.group(1)) if mops else None,
            )
        )
    for m in _PTX_CP_ASYNC.finditer(ptx):
        ops.append(
            PtxOp(
                ir.CP_ASYNC, "cp.async", copy=ir.CopyFacts("ptx"), addr_operand=int(m.group(1)), bytes=int(m.group(2))
            )
        )
    if _PTX_CP_COMMIT.search(ptx):
        ops.append(PtxOp(ir.CP_ASYNC_COMMIT, "cp.async.commit_group"))
    mw = _PTX_CP_WAIT.search(ptx)
    if mw:
        ops.append(
            PtxOp(
                ir.CP_ASYNC_WAIT,
                "cp.async.wait_group",
                count=int(mw.group(1)) if mw.group(1) else None,
                count_operand=int(mw.group(2)) if mw.group(2) else None,
            )
        )
    elif _PTX_CP_WAIT_ALL.search(ptx):
        ops.append(PtxOp(ir.CP_ASYNC_COMMIT, "cp.async.wait_all"))
        ops.append(PtxOp(ir.CP_ASYNC_WAIT, "cp.async.wait_all", count=0))
    ml = _PTX_GLOBAL_LOAD.search(ptx)
    if ml:
        quals = ml.group(1).split(".")
        sem = next((q for q in ("acquire", "relaxed", "volatile", "weak") if q in quals), "weak")
        mops = _PTX_LOAD_OPERANDS.search(ptx, ml.start())
        ops.append(
            PtxOp(
                ir.GLOBAL_LOAD,
                "asm ld.global",
                global_access=ir.GlobalAccessFacts(sem, _ptx_instruction(ptx, ml.start()), scope=_ptx_scope(quals)),
                addr_operand=int(mops.group(2)) if mops else None,
                out_operand=int(mops.group(1)) if mops and mops.group(1) else None,
            )
        )
    shared = None
    if _PTX_SHARED.search(ptx):
        shared = (
            "ldmatrix"
            if "ldmatrix" in ptx
            else "stmatrix"
            if "stmatrix" in ptx
            else ("st.shared" if re.search(r"\bst\.shared", ptx) else "ld.shared")
        )
    return PtxOps(tuple(ops), shared, any(w in ptx for w in _PTX_UNTRACKED))


# Raw PTX of the asynchronous machinery (mbarriers, bulk and tensor copies, tcgen05, wgmma), as
# kernels without TK write it in small `__device__` helpers: each instruction maps to the op a TK call
# performing it maps to. The operands stay text (`%0`, `8`, `%1+8`): the front end evaluates them.
_PTX_ASYNC_WORDS = (
    "mbarrier.",
    "cp.async.bulk",
    "cp.reduce.async.bulk",
    "wgmma.",
    "tcgen05.",
    "barrier.cluster.",
    "cp.async.mbarrier.",
)


@dataclass(frozen=True)
class PtxAsyncOp:
    """One asynchronous-machinery instruction of an asm statement: its op kind, the instruction
    as shown, and its operands as PTX text."""

    kind: str
    api: str
    barrier: str | None = None  # the mbarrier's shared address (inside `[...]`)
    buffer: str | None = None  # a copy's shared address
    count: str | None = None  # init count / arrive count / wait_group N
    bytes: str | None = None  # expect_tx bytes / a bulk copy's size
    parity: str | None = None
    mask: str | None = None  # multicast mask
    mbar: ir.BarrierFacts | None = None
    fence: ir.FenceFacts | None = None
    tmem: str | None = None  # TMEM_OP action
    mma: ir.MmaFacts | None = None
    sync: ir.SyncFacts | None = None
    read_only: bool = False  # bulk wait_group.read
    cols: str | None = None  # tcgen05.alloc: the columns
    warpgroup: bool = False  # wgmma's fence / commit / wait: .sync.aligned over the warpgroup
    tensor_map: str | None = None  # cp.async.bulk.tensor: the tensor map's address operand
    # wgmma.mma_async: the A and B shared-memory descriptor operands (`%32`); A None when it is
    # a register fragment (`{...}`)
    desc_a: str | None = None
    desc_b: str | None = None
    # an instruction on `barrier` the table does not model (kind CALL): an unmodelled use
    unmodelled: bool = False
    # r12-token: the state token of the split-phase mbarrier. On an arrive (`mbarrier.arrive
    # .b64 %k, [b]`): the output operand that receives the state of the phase the thread arrived
    # in; on a wait (`mbarrier.try_wait / test_wait .b64 p, [b], %k`, no parity): the operand
    # holding that state, the wait being for exactly that phase to complete
    token: str | None = None


def _ptx_instructions(ptx: str) -> list[tuple[str, list[str]]]:
    """(opcode, operands) of each instruction of a PTX text: braces, labels and guard predicates
    dropped, operands split at top-level commas."""
    text = ptx.replace("\\n", " ").replace("\\t", " ")
    out = []
    for raw in text.split(";"):
        ins = raw.strip()
        while True:
            ins = ins.lstrip("{} \t\n")
            # a label; `WAIT_%=:` takes nvcc's per-asm-instance number (`%=`)
            mm = re.match(r"[A-Za-z_$][\w$]*(?:%=)?\s*:(?!:)", ins)
            if mm:
                ins = ins[mm.end() :]
                continue
            mm = re.match(r"@!?%*[\w$]+\s+", ins)
            if mm:
                ins = ins[mm.end() :]
                continue
            break
        ins = ins.rstrip("} \t\n")
        if not ins:
            continue
        parts = ins.split(None, 1)
        ops: list[str] = []
        if len(parts) > 1:
            depth, cur = 0, ""
            for ch in parts[1]:
                depth += ch in "[{"
                depth -= ch in "]}"
                if ch == "," and depth == 0:
                    ops.append(cur.strip())
                    cur = ""
                else:
                    cur += ch
            if cur.strip():
                ops.append(cur.strip())
        out.append((parts[0], ops))
    return out


def _bracket(text: str) -> str | None:
    """`[%0]` -> `%0`: an address operand's inside; None for any other operand."""
    t = text.strip()
    return t[1:-1].strip() if t.startswith("[") and t.endswith("]") else None


def _cta_group(opcode: str) -> int | None:
    mm = re.search(r"\.cta_group::(\d+)", opcode)
    return int(mm.group(1)) if mm else None


def ptx_async_ops(ptx: str, looped: bool = False) -> tuple[tuple[PtxAsyncOp, ...], bool]:
    """The asynchronous-machinery ops of one asm statement's PTX, and whether every such
    instruction in it was understood (False: at least one is left to an opaque call).
    `looped`: the statement is repeated by a C++ loop until its try_wait succeeds."""
    out: list[PtxAsyncOp] = []
    understood = True
    loops = looped or re.search(r"\bbra(\.uni)?\b", ptx) is not None
    for opcode, ops in _ptx_instructions(ptx):
        # (and any instruction completing on an mbarrier: `st.async ... .mbarrier::complete_tx`)
        if not any(opcode.startswith(w) for w in _PTX_ASYNC_WORDS) and "mbarrier::" not in opcode:
            continue
        q = opcode.split(".")
        op = _ptx_async_op(opcode, q, ops, loops)
        if op is None:
            understood = False
            # i7model: an instruction the table does not know that names an mbarrier operand
            # (`mbarrier.arrive_drop [b]`, `st.async ... mbarrier::complete_tx::bytes [d], v, [b]`)
            # may arrive on it, complete bytes or re-arm it: an opaque use of THAT barrier (its
            # account, its waits' phases and the progress that rests on it are unknown)
            bar = _unmodelled_barrier_operand(opcode, ops)
            if bar is not None:
                out.append(PtxAsyncOp(ir.CALL, opcode, barrier=bar, unmodelled=True))
        elif op.kind:
            out.append(op)
    return tuple(out), understood


def _unmodelled_barrier_operand(opcode: str, ops: list[str]) -> str | None:
    """The mbarrier address operand of an instruction the table does not model: the first
    `[...]` operand of an `mbarrier.*` instruction, the last of one completing on an mbarrier
    (`.mbarrier::complete_tx::bytes`, whose barrier is its last address operand); None when the
    instruction names no barrier so (it stays an unattributed mbarrier operation)."""
    addrs = [b for b in (_bracket(o) for o in ops) if b]
    q = opcode.split(".")
    if not addrs or (q[0] == "mbarrier" and len(q) > 1 and q[1] in ("try_wait", "test_wait", "pending_count", "inval")):
        # a probe reads the barrier's phase and changes nothing of its account; `inval` ends the
        # barrier's life (no arrival, no bytes): both stay the opaque asm call they were
        return None
    if q[0] == "mbarrier" or "mbarrier" in q[1:]:
        return addrs[0]
    if "mbarrier::" in opcode:
        return addrs[-1]
    return None


def ptx_probe_outputs(ptx: str) -> dict[int, bool]:
    """The outputs of a one-shot mbarrier probe (`mbarrier.try_wait.parity` / `test_wait.parity`
    into a predicate, then `selp.<t> %k, A, B, pred;` with integer literals) that say whether the
    phase completed: output k -> True when `%k` is nonzero exactly when the phase with the given
    parity completed, False when exactly when it did not. Empty for any other statement (no
    probe, several probes, a branch back: the statement is a wait by itself then)."""
    ins = _ptx_instructions(ptx)
    probes = [
        ops[0]
        for opcode, ops in ins
        if re.fullmatch(r"mbarrier\.(try|test)_wait\.parity(\.[\w:]+)*", opcode) and len(ops) >= 3
    ]
    if len(probes) != 1 or re.search(r"\bbra(\.uni)?\b", ptx) or not re.fullmatch(r"%*[\w$]+", probes[0]):
        return {}
    pred = probes[0].lstrip("%")
    out: dict[int, bool] = {}
    for opcode, ops in ins:
        if not opcode.startswith("selp.") or len(ops) != 4:
            continue
        dst, a, b, p = (o.strip() for o in ops)
        negated = p.startswith("!")
        if not re.fullmatch(r"%\d+", dst) or p.lstrip("!").lstrip("%") != pred:
            continue
        if not (re.fullmatch(r"-?\d+", a) and re.fullmatch(r"-?\d+", b)) or (int(a) != 0) == (int(b) != 0):
            continue
        out[int(dst[1:])] = (int(a) != 0) != negated
    return out


def _ptx_async_op(opcode: str, q: list[str], ops: list[str], loops: bool) -> PtxAsyncOp | None:
    """One instruction; None: not understood; kind "": understood, nothing to model."""
    # --- pipe (round 5): cp.async completion on an mbarrier ---------------------------------
    # `cp.async.mbarrier.arrive.noinc.shared{::cta}.b64 [mbar]`: one arrival of the barrier's
    # count that lands once the thread's earlier cp.async copies have landed (a wait observing
    # its phase observes them). Without .noinc the pending count of the current phase is raised
    # by one first and taken back when the copies land: no net arrival (count 0), but the phase
    # still cannot complete before the copies have landed, so a wait observing it observes them
    # just the same (the thread's own `mbarrier.arrive` is what counts).
    if opcode.startswith("cp.async.mbarrier.arrive"):
        if len(ops) == 1 and _bracket(ops[0]):
            noinc = "noinc" in q
            return PtxAsyncOp(
                ir.MBAR_ARRIVE,
                "cp.async.mbarrier.arrive.noinc" if noinc else "cp.async.mbarrier.arrive",
                barrier=_bracket(ops[0]),
                count="1" if noinc else "0",
                mbar=ir.BarrierFacts(cp_async=True),
            )
        return None
    # --- end pipe ---------------------------------------------------------------------------
    if q[0] == "mbarrier":
        what = q[1] if len(q) > 1 else ""
        # r16-remote: the op's .sem and .scope as spelled, PTX's defaults (.release / .acquire,
        # .cta) where absent
        waits = what in ("try_wait", "test_wait")
        sem = "relaxed" if "relaxed" in q else ("acquire" if waits else "release")
        ordered = ir.BarrierFacts(sem=sem, scope="cluster" if "cluster" in q else "cta")
        if what == "init" and len(ops) == 2 and _bracket(ops[0]):
            return PtxAsyncOp(ir.MBAR_INIT, "mbarrier.init", barrier=_bracket(ops[0]), count=ops[1])
        if what == "expect_tx" and len(ops) == 2 and _bracket(ops[0]):
            # r16-expecttx: `mbarrier.expect_tx{.relaxed}{.cta|.cluster}{.shared{::cta|::cluster}}
            # .b64 [addr], txCount` raises the pending transaction count of the current phase by
            # txCount and makes NO arrival (PTX ISA, mbarrier.expect_tx): bytes only, no release
            return PtxAsyncOp(
                ir.MBAR_EXPECT,
                "mbarrier.expect_tx",
                barrier=_bracket(ops[0]),
                bytes=ops[1],
                mbar=ir.BarrierFacts(tx_only=True),
            )
        if what == "arrive" and "noComplete" not in q and len(ops) >= 2 and _bracket(ops[1]):
            if len(q) > 2 and q[2] == "expect_tx":
                if len(ops) != 3:
                    return None
                return PtxAsyncOp(
                    ir.MBAR_EXPECT, "mbarrier.arrive.expect_tx", barrier=_bracket(ops[1]), bytes=ops[2], mbar=ordered
                )
            if len(ops) > 3:
                return None
            return PtxAsyncOp(
                ir.MBAR_ARRIVE,
                "mbarrier.arrive",
                barrier=_bracket(ops[1]),
                count=ops[2] if len(ops) == 3 else "1",
                token=ops[0].strip() if re.fullmatch(r"\s*%\d+\s*", ops[0]) else None,
                mbar=ordered,
            )
        if (
            what == "arrive_drop"
            and len(q) > 2
            and q[2] not in ("expect_tx", "noComplete")
            and len(ops) in (2, 3)
            and _bracket(ops[1])
        ):
            # i7model: an arrival on the current phase that also lowers the expected count of the
            # current and every later phase by `count` (PTX ISA `mbarrier.arrive_drop`; libcu++'s
            # `arrive_and_drop`): the barrier account follows it per phase (completion.py)
            return PtxAsyncOp(
                ir.MBAR_ARRIVE,
                "mbarrier.arrive_drop",
                barrier=_bracket(ops[1]),
                count=ops[2] if len(ops) == 3 else "1",
                mbar=replace(ordered, drop=True),
            )
        if what in ("try_wait", "test_wait") and "parity" in q and len(ops) >= 3 and _bracket(ops[1]) and loops:
            # a wait that the asm itself repeats until the phase with this parity completed
            return PtxAsyncOp(
                ir.MBAR_WAIT, f"mbarrier.{what}.parity", barrier=_bracket(ops[1]), parity=ops[2], mbar=ordered
            )
        if (
            what in ("try_wait", "test_wait")
            and "parity" not in q
            and len(ops) in (3, 4)
            and _bracket(ops[1])
            and re.fullmatch(r"\s*%\d+\s*", ops[2])
            and loops
        ):
            # r12-token: a wait on a state token (`... p, [b], state{, hint}`), repeated until it
            # succeeds: a wait for the phase the token's arrival was in (the parity the front end
            # gives the token, walk_asm)
            return PtxAsyncOp(
                ir.MBAR_WAIT, f"mbarrier.{what}", barrier=_bracket(ops[1]), token=ops[2].strip(), mbar=ordered
            )
        return None
    # --- i7model: `st.async{.weak}.shared::cluster.mbarrier::complete_tx::bytes{.v2|.v4}.<t>
    # [addr], value, [remote_bar]` (and `red.async...`, PTX ISA 8.1, sm_90): a store into a CTA
    # of the cluster's shared memory (its address by `mapa`) whose bytes complete on THAT CTA's
    # mbarrier -- for the barrier's account the delivery a TMA load is (bytes on the barrier, no
    # arrival), issued by every thread that runs it; its data a write the peer's wait on the
    # barrier orders (the front end makes it the remote shared write too)
    if q[0] in ("st", "red") and "async" in q[1:2] and "shared::cluster" in q and "mbarrier::complete_tx::bytes" in q:
        addrs = [b for b in (_bracket(o) for o in ops) if b]
        width = next((int(t[1:]) for t in q if re.fullmatch(r"[busf](8|16|32|64)", t)), None)
        vec = next((int(t[1:]) for t in q if t in ("v2", "v4")), 1)
        if len(addrs) != 2 or width is None:
            return None
        return PtxAsyncOp(
            ir.TMA_LOAD,
            f"{q[0]}.async",
            barrier=addrs[1],
            buffer=addrs[0],
            bytes=str(width // 8 * vec),
            mbar=ir.BarrierFacts(remote_store=True),
        )
    if opcode.startswith("cp.reduce.async.bulk"):
        # a bulk reduction into global memory (`cp.reduce.async.bulk{.tensor.Nd}.global.shared::cta
        # .bulk_group.add.f32 [dst], [src], size` / `[tmap, {coords}], [src]`) is, for
        # synchronisation, a bulk store: the async proxy reads its shared source, its bulk group's
        # commit_group / wait_group(.read) complete it. Into another CTA's shared memory (completing
        # on an mbarrier): not modelled.
        if "global" in q and "bulk_group" in q and len(ops) >= 2:
            api = "cp.reduce.async.bulk.tensor" if q[4:5] == ["tensor"] else "cp.reduce.async.bulk"
            dst = _bracket(ops[0]) if api.endswith(".tensor") else None
            return PtxAsyncOp(
                ir.TMA_STORE, api, buffer=_bracket(ops[1]), tensor_map=dst.split(",")[0].strip() if dst else None
            )
        return None
    if opcode.startswith("cp.async.bulk"):
        if q[3:4] == ["commit_group"]:
            return PtxAsyncOp(ir.TMA_STORE_COMMIT, "cp.async.bulk.commit_group")
        if q[3:4] == ["wait_group"] and len(ops) == 1:
            return PtxAsyncOp(ir.TMA_STORE_WAIT, "cp.async.bulk.wait_group", count=ops[0], read_only="read" in q[4:])
        tensor = q[3:4] == ["tensor"]
        dirs = [w for w in q if w in ("shared::cta", "shared::cluster", "global")]
        to_shared = dirs[:1] in (["shared::cta"], ["shared::cluster"]) and "global" in dirs
        api = "cp.async.bulk.tensor" if tensor else "cp.async.bulk"
        if to_shared and "mbarrier::complete_tx::bytes" in q:
            multicast = "multicast::cluster" in q
            # `[dst], [tensor_map, {coords}], [mbar]` / `[dst], [src], size, [mbar]`
            bars = [i for i, o in enumerate(ops) if _bracket(o) is not None]
            if len(bars) < 3:
                return None
            mbar_at = bars[2]
            rest = ops[mbar_at + 1 :]
            src = _bracket(ops[1]) if tensor else None
            return PtxAsyncOp(
                ir.TMA_LOAD,
                api,
                barrier=_bracket(ops[mbar_at]),
                buffer=_bracket(ops[0]),
                bytes=None if tensor else (ops[2] if len(ops) > 3 else None),
                mask=rest[0] if multicast and rest else None,
                mbar=ir.BarrierFacts(multicast=multicast),
                # `[%1, {%2, %3}]`: the tensor map's address, then the coordinates
                tensor_map=src.split(",")[0].strip() if src else None,
            )
        if dirs[:1] == ["global"] and "bulk_group" in q:
            dst = _bracket(ops[0]) if tensor and ops else None
            return PtxAsyncOp(
                ir.TMA_STORE,
                api,
                buffer=_bracket(ops[1]) if len(ops) > 1 else None,
                # `[tensor_map, {coords}], [src]`
                tensor_map=dst.split(",")[0].strip() if dst else None,
            )
        return None
    if q[0] == "tcgen05":
        what = q[1] if len(q) > 1 else ""
        ncta = _cta_group(opcode)
        if what == "commit" and "mbarrier::arrive::one" in q and ops and _bracket(ops[0]):
            multicast = "multicast::cluster" in q
            return PtxAsyncOp(
                ir.MBAR_ARRIVE,
                "tcgen05.commit",
                barrier=_bracket(ops[0]),
                count="1",
                mask=ops[1] if multicast and len(ops) > 1 else None,
                mbar=ir.BarrierFacts(tcgen05_commit=True, ncta=ncta or 1, multicast=multicast),
            )
        if what.startswith("fence::"):
            kind = {"fence::before_thread_sync": "tcgen05_before", "fence::after_thread_sync": "tcgen05_after"}.get(
                what
            )
            return PtxAsyncOp(ir.FENCE, f"tcgen05.{what}", fence=ir.FenceFacts(kind)) if kind else None
        if what in ("wait::ld", "wait::st"):
            return PtxAsyncOp(ir.TMEM_OP, f"tcgen05.{what}", tmem="wait_ld" if what == "wait::ld" else "wait_st")
        if what == "alloc" and len(ops) == 2:
            return PtxAsyncOp(ir.TMEM_OP, "tcgen05.alloc", tmem="alloc", cols=ops[1])
        if what == "dealloc":
            return PtxAsyncOp(ir.TMEM_OP, "tcgen05.dealloc", tmem="dealloc")
        if what == "relinquish_alloc_permit":
            return PtxAsyncOp("", "")
        if what in ("ld", "st"):
            return PtxAsyncOp(ir.TMEM_OP, f"tcgen05.{what}", tmem="load" if what == "ld" else "store")
        if what == "mma":
            # D (TMEM) = A*B (+ D when the enable-input-d predicate holds): the operands are
            # descriptors and TMEM addresses the model does not follow
            return PtxAsyncOp(ir.MMA, "tcgen05.mma", mma=ir.MmaFacts("tcgen05", accumulate=True, ncta=ncta or 1))
        return None
    if q[0] == "wgmma":
        what = q[1] if len(q) > 1 else ""
        if what == "fence":
            return PtxAsyncOp(ir.MMA_FENCE, "wgmma.fence", warpgroup=True)
        if what == "commit_group":
            return PtxAsyncOp(ir.MMA_COMMIT, "wgmma.commit_group", warpgroup=True)
        if what == "wait_group" and len(ops) == 1:
            return PtxAsyncOp(ir.MMA_WAIT, "wgmma.wait_group", count=ops[0], warpgroup=True)
        # ---- wgptx: `wgmma.mma_async` as the MMA event TK's `warpgroup::mma_*` produce; its
        # accumulator is the asm's `"+f"` operands (the front end resolves them), its A/B
        # operands shared-memory descriptors (`d, a-desc|{a regs}, b-desc, ...`: the front end
        # follows them to their start address); it commits no group of its own
        if what == "mma_async":
            desc_a = ops[1] if len(ops) > 1 and not ops[1].startswith("{") else None
            desc_b = ops[2] if len(ops) > 2 else None
            return PtxAsyncOp(
                ir.MMA,
                "wgmma.mma_async",
                mma=ir.MmaFacts("wgmma", accumulate=True, self_commit=False),
                warpgroup=True,
                desc_a=desc_a,
                desc_b=desc_b,
            )
        return None
    if q[:2] == ["barrier", "cluster"] and len(q) > 2 and q[2] in ("arrive", "wait"):
        kind = "cluster_arrive" if q[2] == "arrive" else "cluster_wait"
        # dsmem: `barrier.cluster.arrive.relaxed` orders nothing the thread did before it (no
        # release); the default arrive is .release, the wait is always .acquire
        return PtxAsyncOp(ir.SYNC, f"barrier.cluster.{q[2]}", sync=ir.SyncFacts(kind, relaxed="relaxed" in q[3:]))
    return None


# `group<N>::tma::...` — the group versions elect lane 0 of the group.
GROUP_TMA_OPS: dict[str, OpSpec] = {
    k: replace(v, group_elects=True, tma_lane_guarded=False) for k, v in TMA_OPS.items()
}

# Register / shared-tile operations that touch a register tile (accumulator).
# Value: index of the written argument (others are read), or None (all read).
REGISTER_OPS: dict[str, int | None] = {
    "zero": 0,
    "one": 0,
    "neg_infty": 0,
    "pos_infty": 0,
    "copy": 0,
    "load": 0,
    "add": 0,
    "sub": 0,
    "mul": 0,
    "div": 0,
    "exp": 0,
    "exp2": 0,
    "log": 0,
    "abs": 0,
    "max": 0,
    "min": 0,
    "relu": 0,
    "row_max": 0,
    "row_sum": 0,
    "col_max": 0,
    "col_sum": 0,
    "sub_row": 0,
    "mul_row": 0,
    "div_row": 0,
    "add_row": 0,
    "sub_col": 0,
    "mul_col": 0,
    "div_col": 0,
    "add_col": 0,
    "swap_layout": 0,
    "transpose_sep": 0,
    "store": None,
    "store_async": None,
}

GROUP_SCOPES_WARPS = {"warp": 1, "warpgroup": 4}

# TK constants the evaluator folds.
CONSTANTS = {
    "WARP_THREADS": 32,
    "WARPGROUP_WARPS": 4,
    "WARPGROUP_THREADS": 128,
    "MAX_SHARED_MEMORY": 227 * 1024,
    "MAX_TENSOR_ROWS": 128,
    "MASK_ALL": 0xFFFFFFFF,  # the full warp mask of the shuffles (common/util.cuh)
    "warpSize": 32,
}

# Byte widths of TK and CUDA element types.
DTYPE_BYTES = {
    "bf16": 2,
    "__nv_bfloat16": 2,
    "nv_bfloat16": 2,
    "half": 2,
    "__half": 2,
    "fp16": 2,
    "float": 4,
    "fp32": 4,
    "int": 4,
    "uint32_t": 4,
    "int32_t": 4,
    "unsigned": 4,
    "fp8e4m3": 1,
    "fp8e5m2": 1,
    "__nv_fp8_e4m3": 1,
    "__nv_fp8_e5m2": 1,
    "fp8e8m0": 1,
    "bf16_2": 4,
    "half_2": 4,
    "float2": 8,
    # CUDA's vector types: a 16-byte cp.async copies one float4 / int4 / uint4
    "float4": 16,
    "int2": 8,
    "int4": 16,
    "uint2": 8,
    "uint4": 16,
    "double": 8,
    "uint64_t": 8,
    "int64_t": 8,
    "char": 1,
    "uint8_t": 1,
    "int8_t": 1,
    "short": 2,
    "uint16_t": 2,
    "int16_t": 2,
    "bool": 1,
    "long": 8,
    "size_t": 8,
    # Blackwell number formats: an e8m0 scale is a byte, fp4 values come packed two per byte
    "__nv_fp8_e8m0": 1,
    "fp4e2m1_2": 1,
    "__nv_fp4x2_e2m1": 1,
    "fp4e2m1x2": 1,
    "__nv_fp4x4_e2m1": 2,
    "uint": 4,
    "unsigned int": 4,
    "unsigned long long": 8,
    "long long": 8,
    "ushort": 2,
}
DTYPE_CANON = {
    "__nv_bfloat16": "bf16",
    "nv_bfloat16": "bf16",
    "__half": "half",
    "fp16": "half",
    "fp32": "float",
    "__nv_fp8_e4m3": "fp8e4m3",
    "__nv_fp8_e5m2": "fp8e5m2",
    "__nv_fp8_e8m0": "fp8e8m0",
    "__nv_fp4x2_e2m1": "fp4e2m1_2",
}

# ---- wgptx: the element sizes of the host's tensor maps (`CUtensorMapDataType`), for the bytes
# of a raw `cp.async.bulk.tensor` through a map the host encodes (frontend/tensor_maps.py);
# the packed sub-byte types are left out (their box bytes are not a product of elements)
TENSOR_MAP_DTYPE_BYTES = {
    "CU_TENSOR_MAP_DATA_TYPE_UINT8": 1,
    "CU_TENSOR_MAP_DATA_TYPE_UINT16": 2,
    "CU_TENSOR_MAP_DATA_TYPE_UINT32": 4,
    "CU_TENSOR_MAP_DATA_TYPE_INT32": 4,
    "CU_TENSOR_MAP_DATA_TYPE_UINT64": 8,
    "CU_TENSOR_MAP_DATA_TYPE_INT64": 8,
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT16": 2,
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT32": 4,
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT64": 8,
    "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16": 2,
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ": 4,
    "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32": 4,
    "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ": 4,
}

# Tile aliases: alias -> (kind, dtype). st_bf<R, C> == st<bf16, R, C>.
TILE_ALIASES = {
    "st": ("st", None),
    "st_bf": ("st", "bf16"),
    "st_hf": ("st", "half"),
    "st_fl": ("st", "float"),
    "st_fp8e4m3": ("st", "fp8e4m3"),
    "st_fp8e5m2": ("st", "fp8e5m2"),
    "st_fp8e8m0": ("st", "fp8e8m0"),
    "st_fp4e2m1_2": ("st", "fp4e2m1_2"),
    "sv": ("sv", None),
    "sv_bf": ("sv", "bf16"),
    "sv_hf": ("sv", "half"),
    "sv_fl": ("sv", "float"),
    "sv_fp8e4m3": ("sv", "fp8e4m3"),
    "sv_fp8e5m2": ("sv", "fp8e5m2"),
    "sv_fp8e8m0": ("sv", "fp8e8m0"),
    "sv_fp4e2m1_2": ("sv", "fp4e2m1_2"),
    "rt": ("rt", None),
    "rt_bf": ("rt", "bf16"),
    "rt_hf": ("rt", "half"),
    "rt_fl": ("rt", "float"),
    "rt_fp8e4m3": ("rt", "fp8e4m3"),
    "rv": ("rv", None),
    "rv_bf": ("rv", "bf16"),
    "rv_hf": ("rv", "half"),
    "rv_fl": ("rv", "float"),
    "tt": ("tt", None),
    "tmem": ("tt", None),  # TK of January 2025: tmem<T, R, C> (renamed tt)
    # tt.cuh: full_tt_X<width> = tt<X, MAX_TENSOR_ROWS (128), width>
    "full_tt_bf": ("full_tt", "bf16"),
    "full_tt_hf": ("full_tt", "half"),
    "full_tt_fl": ("full_tt", "float"),
    "full_tt_fp8e4m3": ("full_tt", "fp8e4m3"),
    "full_tt_fp8e5m2": ("full_tt", "fp8e5m2"),
    "full_tt_fp8e8m0": ("full_tt", "fp8e8m0"),
    "full_tt_fp4e2m1_2": ("full_tt", "fp4e2m1_2"),
    "gl": ("gl", None),
    "semaphore": ("semaphore", None),
}


# ======================================================================================
# Cooperative groups (CUDA's <cooperative_groups.h>)
# ======================================================================================
# A group object is known by its C++ type (libclang's canonical spelling of the variable or
# the call's value: `cooperative_groups::__v1::grid_group` with CUDA's headers,
# `cooperative_groups::grid_group` with tkcheck's stand-in), never by a variable's name.
# kind: block (thread_block), tile (thread_block_tile<N>), coalesced (coalesced_group),
# cluster (cluster_group), grid (grid_group), group (thread_group: a partition of unknown kind)
CG_GROUP_TYPES: dict[str, str] = {
    "thread_block": "block",
    "thread_block_tile": "tile",
    "coalesced_group": "coalesced",
    "cluster_group": "cluster",
    "grid_group": "grid",
    "thread_group": "group",
}

_CG_TYPE = re.compile(
    r"^(?:const\s+|volatile\s+)*(?:::)?cooperative_groups::(?:__v\d+::)?(?:details::)?(\w+)\s*(?:<\s*(\d+)[^>]*>)?\s*&?$"
)


def cg_group_type(spelling: str) -> tuple[str, int | None] | None:
    """(kind, tile size) of a cooperative-groups group type spelling; None: not a group."""
    m = _CG_TYPE.match(spelling.strip())
    if m is None:
        return None
    kind = CG_GROUP_TYPES.get(m.group(1))
    if kind is None:
        return None
    return kind, (int(m.group(2)) if m.group(2) else None)


# `g.sync()` / `cg::sync(g)` by the group's kind (CUDA's cooperative_groups/details/sync.h):
# thread_block -> bar.sync 0 (__syncthreads: the same hardware barrier, paired with it);
# thread_block_tile<N>, N <= 32, and coalesced_group -> __syncwarp(the group's lanes);
# cluster_group -> barrier.cluster.arrive.release + barrier.cluster.wait.acquire (TK's
# cluster::sync); grid_group -> the grid barrier: every thread of every block of a cooperative
# launch (a block barrier, then a gpu-scope release/acquire on a counter in global memory)
CG_SYNC_OPS: dict[str, OpSpec] = {
    "block": OpSpec(ir.SYNC, (), sync_kind="block", syncthreads=True),
    "tile": OpSpec(ir.SYNC, (), sync_kind="warp"),
    "coalesced": OpSpec(ir.SYNC, (), sync_kind="warp"),
    "cluster": OpSpec(ir.SYNC, (), sync_kind="cluster"),
    "grid": OpSpec(ir.SYNC, (), sync_kind="grid"),
}
# cluster_group's split barrier: barrier.cluster.arrive (release) / barrier.cluster.wait (acquire)
CG_CLUSTER_OPS: dict[str, OpSpec] = {
    "barrier_arrive": OpSpec(ir.SYNC, (), sync_kind="cluster_arrive"),
    "barrier_wait": OpSpec(ir.SYNC, (), sync_kind="cluster_wait"),
}
# the group methods whose values the walk computes (frontend/walk_calls.py `_cg_value`):
# thread_rank, num_threads / size, block_rank, num_blocks, meta_group_rank, meta_group_size
CG_VALUE_METHODS = frozenset(
    ("thread_rank", "num_threads", "size", "block_rank", "num_blocks", "meta_group_rank", "meta_group_size")
)
# the functions that make a group (their value's type names the kind)
CG_FACTORIES = frozenset(("this_thread_block", "this_grid", "this_cluster", "coalesced_threads", "tiled_partition"))

# Cooperative groups' collective async copies (CUDA's cooperative_groups/memcpy_async.h and
# details/async.h), lowered onto the cp.async commit-group events (frontend/walk_calls.py
# `_cg_async`):
#   memcpy_async(g, dst, src, n)  -> every thread of g issues cp.async of its chunks of the n bytes
#                                    (CollectiveCopy), then __pipeline_commit: one group per call
#   wait_prior<N>(g)              -> __pipeline_wait_prior(N), then g.sync()
#   wait(g)                       -> __pipeline_wait_prior(0), then g.sync()
# The copies' data is visible to g's threads after the wait (its g.sync()); to other threads of
# the block only after a block barrier.
CG_ASYNC_OPS = frozenset(("memcpy_async", "wait_prior", "wait"))
# the groups memcpy_async supports (`_async_copy_group_supported`) whose ranks the model knows
CG_COPY_GROUPS = frozenset(("block", "tile"))


def cg_copy_chunk(align_hint: int) -> int | None:
    """Bytes per cp.async of a collective copy, from its static alignment hint (the N of a
    `cuda::aligned_size_t<N>` size, else alignof of the element type): `_memcpy_async_align_dispatch`
    copies 4-, 8- and 16-byte segments straight (a hint over 16 is 16); a hint of 1 or 2 picks the
    segment from the pointers' alignment at run time (None: the split over the threads is not
    known statically)."""
    hint = min(align_hint, 16)
    return hint if hint in (4, 8, 16) else None
