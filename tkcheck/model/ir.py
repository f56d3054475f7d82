"""The KernelModel: what one kernel does, in terms the contract checks query.

No rule logic lives here. The front end (`tkcheck.frontend.builder`) fills it
from the source; the SASS front end may add facts later. Every operation
records *where* it is (a Location), *who* runs it (a thread guard over `tid`
plus uniform conditions), and *how often* (the loops around it), so that
"which threads execute this, how many times per iteration" is computable.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator

from ..findings import Location
from . import expr as E
from .expr import Expr


# ---------------------------------------------------------------- types ----


@dataclass(frozen=True)
class TileType:
    """A ThunderKittens data type as the kernel spells it, folded to numbers.

    kind: st (shared tile), sv (shared vector), rt (register tile), rv
    (register vector), tt (TMEM tile), gl (global layout), semaphore,
    struct (a user struct of tiles, e.g. lcf's input_block), array.
    """

    kind: str
    spelling: str
    dtype: str | None = None  # "bf16", "half", "float", "fp8e4m3", ...
    dtype_bytes: int | None = None
    rows: Expr | None = None
    cols: Expr | None = None
    swizzle_bytes: Expr | None = None  # shared tiles: chosen from the width unless explicit
    layout: str | None = None  # rt: "row"/"col"
    members: tuple[tuple[str, "TileType", Expr | None], ...] = ()  # struct: (name, type, array count)
    element: "TileType | None" = None  # array element / gl registered tile types
    count: Expr | None = None  # array length
    registered: tuple["TileType", ...] = ()  # gl: tile types registered for TMA

    def size_bytes(self) -> Expr | None:
        """Bytes of one object of this type, as TK's size_bytes<T> computes them."""
        if self.kind in ("st", "tt") and self.rows is not None and self.cols is not None and self.dtype_bytes:
            return E.binop("*", E.binop("*", self.rows, self.cols), E.Const(self.dtype_bytes))
        if self.kind == "sv" and self.cols is not None and self.dtype_bytes:
            return E.binop("*", self.cols, E.Const(self.dtype_bytes))
        if self.kind == "semaphore":
            return E.Const(8)
        if self.kind == "array" and self.element is not None and self.count is not None:
            inner = self.element.size_bytes()
            return None if inner is None else E.binop("*", inner, self.count)
        if self.kind == "struct" and self.members:
            total: Expr = E.Const(0)
            for _, t, n in self.members:
                s = t.size_bytes()
                if s is None:
                    return None
                total = E.binop("+", total, s if n is None else E.binop("*", s, n))
            return total
        return None

    def short(self) -> str:
        return self.spelling


# --------------------------------------------------------------- places ----


@dataclass(frozen=True)
class Ref:
    """A reference to a named object, possibly indexed: `full[stage]`, `args.input.a[i]`."""

    name: str
    index: tuple[Expr, ...] = ()
    # the reference as the user wrote it at this site (`empty[k % STAGES]`), when the front end
    # read it from source; not part of its identity (two spellings of one element are equal)
    spelling: str | None = field(default=None, compare=False)

    def __str__(self):
        return self.name + "".join(f"[{_bare(str(i))}]" for i in self.index)

    def shown(self) -> str:
        """What findings show the user: their own spelling, else the model's form."""
        return self.spelling or str(self)


def _bare(text: str) -> str:
    """`(k % 2)` -> `k % 2`: an index's own brackets already group it, as the user wrote it."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0 and i < len(text) - 1:
            return text  # `(a) + (b)`: the first bracket closes early
    return text[1:-1]


@dataclass
class SharedBuffer:
    name: str
    type: TileType
    dims: tuple[Expr, ...]  # array dimensions (stages, ...)
    location: Location
    alignment: int | None = None  # proven base alignment in bytes
    storage: str = "static"  # static (__shared__), allocator, extern, template
    stage_dim: int | None = None  # which dim is the pipeline stage
    base_offset: int = 0  # bytes from an `alignment`-aligned address to element [0...]
    strides: tuple[int | None, ...] = ()  # bytes per step of each dim (empty: from the type)


@dataclass(frozen=True)
class SharedRegion:
    """A stage region carved by hand from a `__shared__` array (dynamic shared memory): stage s
    starts at `anchor + offset + s * stride` bytes, `anchor` the array's (aligned) shared address
    as the kernel computes it. Raw TMA destinations name it (`Ref(name, (s,))`); its extent is
    what the copies into it write."""

    name: str
    array: str
    anchor: Expr
    offset: int
    stride: int


@dataclass(frozen=True)
class SmemAddress:
    """`__cvta_generic_to_shared(&tile)`: the 32-bit shared address of a buffer element, as the
    kernel computes it for its own address math (the Var standing for it in Exprs is `var`)."""

    var: str
    buffer: Ref
    tile_type: TileType | None
    location: Location


@dataclass
class Barrier:
    """An mbarrier (TK `semaphore`) or an array of them."""

    name: str
    dims: tuple[Expr, ...]
    location: Location
    storage: str = "static"  # static, template (lcf), allocator, global (MK counters)
    # for template-owned barriers the protocol fixes init count and first phase
    template_init_count: Expr | None = None


@dataclass
class TmemAllocator:
    """A TK `tensor_allocator<nblocks_per_sm, ncta, managed>` (alias `tm_allocator`): it owns
    `cols` TMEM columns of this CTA (512 / nblocks_per_sm, rounded down to 32), allocated by
    `provision()` (tcgen05.alloc by one whole warp; the constructor does it when managed) and
    freed by `deprovision()` (tcgen05.dealloc; the destructor when managed)."""

    name: str
    nblocks_per_sm: int | None
    ncta: int | None
    managed: bool | None
    cols: int | None
    location: Location


@dataclass
class TmemTile:
    """A `tt<T, R, C>` handed out by `allocator.allocate<TT>(col)` (or `(superlane, col)`).
    `elements[i]` is (lane offset, column offset in 32-bit TMEM columns) of array element i
    (one element for a scalar tile); None where the offset is not known."""

    name: str
    type: TileType
    allocator: str | None
    elements: tuple[tuple[Expr, Expr] | None, ...]
    dims: tuple[Expr, ...]
    location: Location


@dataclass
class Loop:
    id: int
    var: str | None  # induction variable name
    counter: E.Var  # iteration counter k (0, 1, ...)
    init: Expr | None
    step: Expr | None
    trip: Expr | None  # number of iterations, when known/symbolic
    location: Location
    parent: int | None
    infinite: bool = False  # for(;;) / while(true) with breaks
    uniform: bool = True  # trip count the same for every thread of the block
    # an infinite loop left only through `if (c) break;` on block-uniform conditions (an
    # interpreter's `if (op == STOP) break;`): the conditions under which an iteration goes
    # on past each break (`!c`, as they appear in the guards of the ops after it); empty
    # when the loop has another kind of exit or none (a `return` inside is the kernel's
    # exit, an EXIT op, not the loop's)
    continues: tuple[Expr, ...] = ()
    # the loop's uniform condition when its trip count is not known (`task < num_tasks` with
    # `task += gridDim.x`): in the guards of its body, true in every iteration that runs
    cond: Expr | None = None
    # the loop before it, nested in the same loops, whose carried values this loop goes on
    # with (`for (; k < K + S; ++k)` after `for (; k < K; ++k)`): at its iteration k they hold
    # that loop's closed forms at that loop's trip + k; `init` is then the carried counter's start
    carried_from: int | None = None
    # a `while (c)` whose block-uniform condition c reads data only (no loop counter, nothing
    # opaque) and that has no `break`: like an infinite loop with `continues`, its trip count
    # is a number N >= 0 the model does not bound (proofs hold for every N)
    data_cond: bool = False
    # a `while (c)` whose condition reads a value each thread computes on its own (data the model
    # does not follow: `more = delta > TOL`, a warp vote's answer): every thread leaves at an
    # iteration of its own. Its trip count is a symbol N(t) >= 1 per thread; the body's ops carry
    # the loop in `Guard.exits` (inexact for that reason alone)
    thread_exit: bool = False
    # loop-carried values with no closed form (a phase bitfield flipped under a condition: TK's
    # `update_phasebit` inside `if (k == S - 1)`): (unknown, start, update, after, head) each.
    # `head` is the form the body sees for the value at the start of an iteration, over one
    # `unknown` (the unknown itself, or `k == 0 ? v0 : unknown`); `start` is the value before the
    # loop, `update` the value at the end of an iteration (over `head`, the counter and the other
    # carried values' closed forms: the front end's own symbolic walk of the body) and `after`
    # names the unknown that stands for the value after the loop (None: none). An unrolling with
    # concrete sizes runs these updates (checks/protocol._unroll); nothing else reads them.
    simulated: tuple[tuple[str, Expr, Expr, str | None, Expr], ...] = ()
    # the induction variable's value over the counter when it is no `init + step k`: a geometric
    # loop's closed form (`k <<= 1` from 2: `2 << k1`; frontend `_geometric_trip`)
    form: Expr | None = None


@dataclass
class Guard:
    """Who runs an op: a thread predicate over `tid` plus block-uniform conditions.

    `thread` is a boolean Expr over thread variables (and possibly loop
    counters / params); `uniform` lists conditions that are the same for the
    whole block (kernel arguments, blockIdx, loop-carried uniform values).
    `exact` is False when some condition could not be modelled at all.
    """

    thread: Expr = E.TRUE
    uniform: tuple[Expr, ...] = ()
    exact: bool = True
    # the conditions that made it inexact, where they are expressions at all (over unmodelled
    # values: an atomic's old value, a `__shared__` flag): what a test of them guards
    opaque: tuple[Expr, ...] = ()
    # made inexact by something that is no expression (an unmodelled loop exit, a condition the
    # walk could not evaluate): then `thread`, `uniform` and `opaque` together do not say who runs
    # it. False: the guard is exactly `thread && uniform && opaque` (checks/warp_collectives.py
    # reads conditions over a lane's input through it)
    blind: bool = False
    # the loops (`Loop.thread_exit`) each thread leaves on data of its own that alone made the
    # guard inexact: the op runs, for each thread the rest of the guard names, in every iteration
    # that thread has not left yet (its own trip count, a symbol N(t)); None: inexact for another
    # reason as well
    exits: tuple[int, ...] | None = ()

    def with_thread(self, cond: Expr) -> "Guard":
        return replace(self, thread=E.binop("&&", self.thread, cond))

    def with_uniform(self, cond: Expr) -> "Guard":
        return replace(self, uniform=self.uniform + (cond,))

    def inexact(self, cond: Expr | None = None) -> "Guard":
        return Guard(
            self.thread,
            self.uniform,
            False,
            self.opaque + ((cond,) if cond is not None else ()),
            self.blind or cond is None,
            None,
        )

    def exit_inexact(self, lid: int) -> "Guard":
        """Inside loop `lid`, which each thread leaves on data of its own (`Loop.thread_exit`): an
        unmodelled exit, so blind as well (who runs it is not `thread && uniform && opaque`)."""
        exits = None if self.exits is None or (not self.exact and not self.exits) else self.exits + (lid,)
        return Guard(self.thread, self.uniform, False, self.opaque, True, exits)

    @property
    def exact_but_exits(self) -> bool:
        """Exact but for the per-thread exits of `exits` (which every thread may take at its own iteration)."""
        return not self.exact and bool(self.exits)


# ------------------------------------------------------------- op facts ----
# What an op's spelling means, decoded once by the front end from `knowledge/ops.py`: checks and
# rules read these fields, never the spelled name (`Op.api` is the text messages show).


@dataclass(frozen=True)
class MmaOperand:
    """One operand of an MMA (`acc`, `a`, `b`) as the front end resolved it."""

    kind: str  # what the argument is: regtile | buffer | tmem | descriptor | ...
    type: TileType | None = None
    reinterpreted_from: TileType | None = None  # a shared tile viewed as another tile type
    # kind "descriptor": the shared-memory matrix descriptor's start address (a 32-bit shared
    # address, `model.descriptors.descriptor_start`); the checks resolve it to the region it reads
    address: Expr | None = None


@dataclass(frozen=True)
class MmaFacts:
    """A tensor-core MMA: a Hopper wgmma (`warpgroup::mma_ABt`) or a Blackwell tcgen05 MMA
    (`mm2_AB`, `mma<ta, tb>`)."""

    family: str  # "wgmma" | "tcgen05"
    accumulate: bool  # `mma*`: D += A*B; `mm*`: D = A*B
    ncta: int = 1  # cta_group::ncta (tcgen05 `*2`: the pair of CTAs)
    # the name's `At` / `Bt`: A given as K x M (MN-major), B given as N x K (K-major); None where
    # the name does not say (`mma<ta, tb>`, a bare `mma`)
    transpose_a: bool | None = None
    transpose_b: bool | None = None
    commit_barrier: Ref | None = None  # tcgen05 overloads with a semaphore: committed to it after
    # wgmma: the MMA closes its own commit group (TK's `warpgroup::mma_*`); False for a raw
    # `wgmma.mma_async`, which joins the group the next `wgmma.commit_group` closes
    self_commit: bool = True
    acc: MmaOperand | None = None  # None: the argument is not a known object
    a: MmaOperand | None = None
    b: MmaOperand | None = None

    def operand(self, role: str) -> MmaOperand | None:
        return {"acc": self.acc, "a": self.a, "b": self.b}[role]

    def kind_of(self, role: str) -> str | None:
        """What the `role` argument is (regtile, buffer, tmem, ...); None: not a known object."""
        o = self.operand(role)
        return o.kind if o is not None else None


@dataclass(frozen=True)
class AsmFacts:
    """An op written as inline PTX (`asm volatile("...")`), its PTX classified once."""

    async_mma: bool = False  # wgmma.mma_async / tcgen05.mma
    arrives: bool = False  # mbarrier.arrive*
    expects_tx: bool = False  # mbarrier[.arrive].expect_tx
    mbarrier: bool = False  # names an mbarrier at all (its operands are not tracked)
    instruction: str | None = None  # the mbarrier / bulk-copy / MMA / proxy-fence instruction it names


@dataclass(frozen=True)
class SyncFacts:
    """A SYNC: which barrier it waits at."""

    kind: str  # block | named | warp | cluster | cluster_arrive | cluster_wait | grid
    mask: Expr | None = None  # __syncwarp(mask)
    # the block-wide barriers the checks pair across sites: CUDA's __syncthreads() (barrier 0)
    # and TK's everyone::sync(id) (barrier `sync_id`); a block sync that is neither (the
    # bar.sync 0 inside a TMEM allocation) is not paired
    syncthreads: bool = False
    everyone: bool = False
    # cluster_arrive: `barrier.cluster.arrive.relaxed` (no release: the thread's earlier writes are
    # not ordered before what its peers do after their wait)
    relaxed: bool = False


@dataclass(frozen=True)
class WarpCollFacts:
    """A WARP_COLL: a warp collective with a member mask (PTX `shfl.sync`, `vote.sync`,
    `match.sync`, `redux.sync`, `elect.sync`; CUDA's `__shfl_*_sync`, `__ballot_sync`, ...). Each
    executing thread waits until every non-exited lane named in `mask` has executed the same
    instruction (`instr`: its name with the qualifiers that must agree, "shfl.sync.down") with
    the same mask; the executing lane must be in the mask. No memory ordering: not a SYNC.
    `__syncwarp(mask)` / `bar.warp.sync` stays a SYNC of kind warp (it orders memory too);
    checks/warp_collectives.py reads both."""

    instr: str
    mask: Expr | None = None  # None: not known (e.g. `__activemask()`)
    # a `.sync.aligned` instruction whose other effect (tensormap.cp_fenceproxy: a copy to global
    # memory with a proxy release) the model does not have: its site stays unmodelled (coverage)
    effect_unmodelled: bool = False
    # the value the collective returns, as the Var the walk bound it to (a run-time member mask
    # computed by `__ballot_sync` / `__match_any_sync` / `__activemask()` names its lanes through
    # it: checks/warp_collectives.py `MaskValue`); None: not bound
    result: str | None = None
    # its operands after the mask (`__ballot_sync`'s predicate, `__match_any_sync`'s value)
    operands: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class FenceFacts:
    """A FENCE: proxy_async | tcgen05_before | tcgen05_after | mbarrier_init | membar_gl |
    membar_sys | membar_cta | membar_cluster | tensormap_release (the release into the tensormap
    proxy of `tensormap.cp_fenceproxy`, at the global map it writes; the copy itself is no event)
    | tensormap_acquire (`fence.proxy.tensormap::generic.acquire [addr]`)."""

    kind: str
    address: Expr | None = None  # tensormap_*: the global tensor map's address (None: not known)


@dataclass(frozen=True)
class BarrierFacts:
    """Where an mbarrier op (arrive, expect, wait) or a delivery to a barrier (TMA load, CLC
    response) lands, and how it completes."""

    remote: bool = False  # tma::cluster::arrive / a DSMEM copy: another CTA's barrier
    cta: Expr | None = None  # the CTA whose copy of the barrier it names
    mbar_cta: Expr | None = None  # cta_group::2 loads: the CTA whose barrier the bytes complete on
    mask: Expr | None = None  # multicast mask (TMA load, tcgen05.commit of a CTA pair)
    multicast: bool = False
    tcgen05_commit: bool = False  # an arrive by tcgen05.commit (when earlier tcgen05 ops complete)
    ncta: int | None = None  # tcgen05.commit's cta_group
    of_mma: bool = False  # the commit of an MMA overload with a semaphore
    and_wait: bool = False  # arrive_and_wait
    clc: bool = False  # the 16-byte response of a cluster launch control request
    # an arrive that lands once the issuing thread's earlier cp.async copies have landed
    # (`cp.async.mbarrier.arrive.noinc`, libcu++'s partitioned producer_commit): a wait that
    # observes its phase observes those copies complete
    cp_async: bool = False
    # i7model: bytes a thread's `st.async` / `red.async` into a (peer) CTA's shared memory
    # completes on that CTA's barrier: every thread that runs it issues it (no TMA engine, no
    # tensor map); for the account a delivery of bytes as a TMA load's
    remote_store: bool = False
    # i7model: `mbarrier.arrive_drop`: the arrival also lowers the barrier's expected count for the
    # current and every later phase by its count (the thread leaves the barrier)
    drop: bool = False
    # r9-i7async: an `st.async` / `red.async` whose destination and barrier are mapped (`mapa`)
    # to CTAs not shown to be one: the destination's CTA and the barrier named (`cta` is then the
    # barrier's CTA). The op stays an unmodelled use of the barrier (no account counts it);
    # `violations.split_remote_stores` asks whether the two CTAs differ for every thread
    store_cta: Expr | None = None
    store_bar: Ref | None = None
    # r16-expecttx: an MBAR_EXPECT that only raises the pending transaction count of the current
    # phase by its bytes, with no arrival (`mbarrier.expect_tx`, libcu++'s
    # `cuda::device::barrier_expect_tx`): it neither counts toward the phase's arrivals nor
    # releases anything (`Op.expect_arrivals` is 0)
    tx_only: bool = False
    # r16-remote: an inline-PTX mbarrier op's memory semantics and scope as spelled, with PTX's
    # defaults filled in: an arrive (arrive, arrive.expect_tx, arrive_drop) `release` | `relaxed`,
    # a wait (try_wait / test_wait) `acquire` | `relaxed`; scope `cta` | `cluster`. None: not
    # inline PTX (a library call whose semantics the op table does not spell)
    sem: str | None = None
    scope: str | None = None


@dataclass(frozen=True)
class TransferFacts:
    """A TMA copy (TMA_LOAD / TMA_STORE): the shared tile and the global layout."""

    tile_type: TileType | None = None
    reinterpreted_from: TileType | None = None
    coord: tuple[Expr, ...] = ()
    gl: str | None = None  # the global layout's name
    gl_type: TileType | None = None
    proxy_fence: bool = False  # TK fences the async proxy in the issuing thread first
    # a raw tensor copy through a tensor map that is not a `__grid_constant__` parameter (a map in
    # global memory, which the device may patch and publish: `tensormap.replace`,
    # `tensormap.cp_fenceproxy`, `fence.proxy.tensormap::generic.acquire`): whether its
    # descriptor read is ordered after the map's writes in the tensormap proxy is not modelled
    map_unordered: bool = False
    map_addr: Expr | None = None  # then: the map operand's value (None: not evaluated)


@dataclass(frozen=True)
class AccessFacts:
    """A REG_ACCESS / SMEM_ACCESS."""

    mode: str  # read | write | zero
    # element (a scalar of a shared array) | scalar (a `__shared__` scalar variable) | asm (address math)
    via: str | None = None
    tile_type: TileType | None = None
    reinterpreted_from: TileType | None = None
    addr: Expr | None = None  # via asm: the address operand
    atomic: str | None = None  # an atomic read-modify-write of the element (`atomicAdd` -> "add")
    value: Expr | None = None  # via scalar, a write: the value stored (`am_last = (old == n - 1)`)
    # distributed shared memory: the rank of the CTA of the cluster whose shared memory the
    # access reads or writes (`cluster.map_shared_rank(p, r)[i]`); None: the CTA's own
    cta: Expr | None = None
    # r16-remote: the write is the data of an `st.async` / `red.async`, whose bytes complete_tx
    # on the destination CTA's mbarrier: a wait observing that phase observes the data (no
    # release needed), unlike a generic `st.shared::cluster`
    complete_tx: bool = False
    # a `__shared__` variable declared volatile: a volatile load / store (relaxed in PTX's memory
    # model, a morally strong access that the compiler performs every time it is spelled)
    volatile: bool = False
    # an atomic of a libcu++ atomic_ref (`atomic` "load" / "st" / an RMW): its memory order in
    # GlobalAccessFacts.sem's words (relaxed | acquire | release | acq_rel) and scope (cta | ...)
    order: str | None = None
    scope: str | None = None
    # a read in a condition the walk evaluates for its memory events (a spin's `while (tail <= i)`):
    # the Var that stands for the loaded value in SpinFacts.cond
    result: str | None = None
    # an atomic read-modify-write: the Var of the old value it returns (a ticket a branch may
    # test, checks/tickets.py) and its operand (`atomicAdd`'s increment, `atomicInc`'s limit)
    old: str | None = None
    operand: Expr | None = None


@dataclass(frozen=True)
class TmemFacts:
    """A TMEM_OP."""

    action: str  # alloc | dealloc | load | store | wait_ld | wait_st | cp
    allocator: str | None = None  # alloc / dealloc: the allocator's name
    cols: int | None = None  # alloc: its columns
    managed: bool | None = None  # alloc by a managed allocator's constructor (freed by its destructor)
    tile_type: TileType | None = None  # load / store: the accessed tt
    lane_off: Expr | None = None  # load / store: the lane offset from the tile's element base


@dataclass(frozen=True)
class GlobalAccessFacts:
    """A memory event on global memory (GLOBAL_SIGNAL / GLOBAL_LOAD / GLOBAL_STORE): its
    memory-order semantics, and for atomics the operation and the value's type."""

    sem: str  # relaxed | release | acq_rel | acquire | weak | volatile
    text: str | None = None  # the instruction as written (for messages)
    atomic: str | None = None  # add | exch | cas | ... (None: a plain load or store, or PTX red/atom)
    dtype: str | None = None  # the atomic's value type as the source spells it (`float`, `unsigned int`)
    # the atomic's old value, as the Var the walk bound it to (a last-arriver test compares it)
    result: str | None = None
    # a plain load's value (`p[i]`), as the Var the walk bound it to: a lane's input where no
    # thread of the kernel writes that memory (checks/warp_collectives.py `lane_inputs`); kept
    # apart from `result`, which the polls of spin loops read
    value: str | None = None
    # how the source spells it: ptx | volatile | atomic (CUDA's atomicAdd & co) | object (a libcu++ /
    # C++ atomic object's member call) | plain | tk
    form: str = "ptx"
    # the kernel pointer parameter the address is computed from (`sem` for `&sem[tile]`, through
    # local pointers and helper arguments); None: not known
    base: str | None = None
    # the scope the order holds at, in PTX's words: cta | cluster | gpu | sys | thread (libcu++'s
    # `thread_scope_block` is cta, `_device` gpu, `_system` sys); None: gpu (CUDA's atomicAdd,
    # PTX without a scope qualifier)
    scope: str | None = None
    # an atomic's operand: the amount added (`add`, `sub`, `inc`'s bound), the value exchanged or
    # stored (`exch`, `st`); None where the walk did not evaluate it (round 9, the counters of a
    # hand-written grid barrier, checks/grid_barriers.py)
    operand: Expr | None = None
    # `p[i]` of the kernel pointer itself: the element index i (over tid, the block index, loop
    # counters); None where the address is not an index of the parameter (round 9: whether
    # other threads of the grid touch an element, `happens_before.thread_private`)
    index: Expr | None = None
    # the word within `base` when it is one address for every thread of the grid: "" the pointer
    # itself (`atomicCAS(lock, 0, 1)`, `*flag`), "->f" a field through it (`a->sum`); None: not
    # known to be one address (an element `p[i]`, an offset pointer)
    where: str | None = None
    # the values as evaluated: an atomic's value operands (atomicCAS: compare, new; atomicExch /
    # atomicAdd: the value), a plain `*p = v` store's v; () where none was recorded
    operands: tuple = ()
    # a store's address as pointer + element (round 10, the tensor-map proxy): `pointer` the
    # pointer value indexed or dereferenced (`ws + blockIdx.x` of `reinterpret_cast<uint32_t *>
    # (gmap)[lane]`, casts dropped), `element` the index in that pointer's elements (`lane`; 0
    # for `*p`); None where not evaluated. Only stores fill them (checks/tensormaps.unreleased)
    pointer: Expr | None = None
    element: Expr | None = None
    # an atomic's element `i` of `atomicAdd(&p[i], v)` on a kernel pointer parameter (over tid, the
    # block index, loop counters); None where not known. Kept apart from `index` (plain accesses,
    # which several engines read as such): the grid-barrier query (checks/grid_data.py) reads both
    atomic_index: Expr | None = None
    # a read-modify-write whose old value the source throws away (`(void)sem.try_acquire();`):
    # nothing can test it (checks/locks.Untested)
    discarded: bool = False

    @property
    def across_blocks(self) -> bool | None:
        """Does the order (a release, an acquire) hold between threads of different blocks? True
        at gpu / sys scope, False at cta / thread scope, None at cluster scope (only the blocks of
        one cluster: whether the other side is one of them is not known)."""
        if self.scope in (None, "gpu", "sys"):
            return True
        return None if self.scope == "cluster" else False

    @property
    def data(self) -> bool:
        """A floating-point atomic: it accumulates data (a split-K partial), it counts nothing."""
        return self.dtype is not None and any(w in self.dtype for w in ("float", "double", "half", "bf16"))


@dataclass(frozen=True)
class SpinFacts:
    """SPIN: the loop's condition (it runs on while `cond` holds), evaluated with the values its
    polls load as the Vars their GlobalAccessFacts.result name; None where it did not evaluate."""

    cond: Expr | None = None
    breaks: bool = False  # the loop has a `break` (it may end without the condition failing)
    empty: bool = False  # the loop's body is empty (`while (c) { }`, `while (c);`): only its condition runs
    # a loop with no condition left by one `break` under an `if` (`for (;;) { if (atomicCAS(l, 0,
    # 1) == 0) break; ... }`): what lets an iteration go on past it, the values its polls load as
    # the Vars their events name; None otherwise
    goes_on: Expr | None = None
    # a condition over a carried value the body's last load leaves (`seen = ld(C); while (seen <
    # T) { ...; seen = ld(C); }`): (the name `cond` gives that value in the previous iteration,
    # the result name of the body's load that left it), round 13
    carried: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CopyFacts:
    """A CP_ASYNC: a copy of global memory into shared memory by the issuing thread, in the
    async proxy of that thread; it lands when a later CP_ASYNC_WAIT of the same thread leaves at
    most `count` newer commit groups pending (per-thread semantics, PTX cp.async.wait_group)."""

    via: str  # ptx (inline cp.async.{ca,cg}) | pipeline (__pipeline_memcpy_async) | tk (load_async)
    dst_unknown: str | None = None  # the destination operand, when it is not a known shared buffer
    # the mbarrier the copy's completion holds open (libcu++'s `memcpy_async(.., barrier)`:
    # cp.async then `cp.async.mbarrier.arrive` on it): the phase in progress when it is issued
    # does not complete before the copy lands
    mbarrier: Ref | None = None
    # a copy the threads of a group issue together (cooperative groups' memcpy_async): the op
    # stands for every thread's part; None: `buffer` / `bytes` are the issuing thread's own copy
    collective: CollectiveCopy | None = None


@dataclass(frozen=True)
class CollectiveCopy:
    """How a group-wide copy is split over its threads (CUDA's cooperative_groups/details/async.h,
    `accelerated_async_copy`): the `bytes` from `buffer` are `bytes // chunk` chunks; the thread of
    rank r in a group of `size` threads copies the chunks r, r + size, r + 2 size, ... For a
    `thread_block_tile` (`tile_tail`) only the chunks below the last multiple of size go that way;
    the remainder, chunk w + k (k < rem), is copied by the rank min(r, rem - 1) = k."""

    size: int  # threads of the group
    rank: Expr  # the thread's rank in the group (over tid)
    chunk: int | None  # bytes per cp.async: 4, 8 or 16 (None: chosen at run time by the pointers)
    elem_bytes: int | None  # bytes per element of the destination array
    # extents of the destination array's dims after the first (row-major): an index (i0, ..., ik)
    # is the flat element ((i0 e1 + i1) e2 + ...) + ik; None: not constants
    extents: tuple[int, ...] | None
    tile_tail: bool = False


@dataclass(frozen=True)
class PhasebitFacts:
    """TK's phase bitfield: set to a constant (`phasebit_set`), a bit flipped (`phasebit_flip`,
    `update_phasebit`), or the bit a wait's parity reads (`get_phasebit`, on MBAR_WAIT)."""

    bitfield: str
    pos: Expr | None = None  # flip / read: the bit position
    value: int | None = None  # set: the constant


# ------------------------------------------------------------------ ops ----

# Op kinds. Every kind's operands are documented where the front end creates it
# (tkcheck/knowledge/ops.py holds the table from API spellings to kinds).
MBAR_INIT = "mbar_init"  # barrier, count (arrivals + tx count, as TK sums them)
MBAR_ARRIVE = "mbar_arrive"  # barrier, count (arrivals per issuing thread), mbar
MBAR_EXPECT = "mbar_expect"  # barrier, bytes (tx per issuing thread); arrives once (arrive.expect_tx),
# or not at all when `mbar.tx_only` (expect_tx alone: `Op.expect_arrivals`)
MBAR_WAIT = "mbar_wait"  # barrier, parity
TMA_LOAD = "tma_load"  # buffer (dst), bytes, barrier, transfer, mbar
TMA_STORE = "tma_store"  # buffer (src), bytes, transfer
TMA_STORE_COMMIT = "tma_store_commit"
TMA_STORE_WAIT = "tma_store_wait"  # count (wait<N>), read_only
CP_ASYNC = "cp_async"  # non-bulk async copy global -> shared: buffer (dst), bytes, copy (CopyFacts)
CP_ASYNC_COMMIT = "cp_async_commit"  # closes the issuing thread's pending copies into one group
CP_ASYNC_WAIT = "cp_async_wait"  # count (wait_group N: at most N of the thread's groups pending)
MMA = "mma"  # operands (acc, a, b), mma
MMA_COMMIT = "mma_commit"
MMA_WAIT = "mma_wait"  # n
MMA_FENCE = "mma_fence"
SYNC = "sync"  # sync (SyncFacts); sync_id, count
WARP_COLL = "warp_coll"  # warp_coll (WarpCollFacts): shfl/vote/match/redux/elect .sync with a member mask
NAMED_ARRIVE = "named_arrive"  # bar.arrive id, count
FENCE = "fence"  # fence (FenceFacts)
SETMAXNREG = "setmaxnreg"  # increase, count (registers)
REG_ACCESS = "reg_access"  # buffer (the tile), access (AccessFacts)
SMEM_ACCESS = "smem_access"  # buffer, access (AccessFacts)
GLOBAL_SIGNAL = "global_signal"  # atomic/red on global memory: global_access
GLOBAL_LOAD = "global_load"  # a load of global memory in inline PTX or volatile: global_access
GLOBAL_STORE = "global_store"  # a plain (weak) store to global memory: `p[i] = v`, `*p = v`,
#                                 `warpgroup::store(gl, tile, ...)`: global_access (sem "weak")
# a load or store through a pointer whose target the model does not follow (a local pointer a loop
# swaps or rotates): access (AccessFacts: mode), buffer (Ref of the pointer's name), memory (shared |
# global). No engine pairs it; the memory engine makes the locations it may touch undecided
UNKNOWN_ACCESS = "unknown_access"
TMEM_OP = "tmem_op"  # tmem (TmemFacts): alloc | dealloc | load | store | wait_ld | wait_st | cp;
#                                 load/store: operands (tile Ref), group_warps
PDL = "pdl"  # pdl: wait (griddepcontrol.wait: the previous grid's results
#                                 are visible after it) | launch_dependents (the next grid may start)
PHASEBIT_SET = "phasebit_set"  # a phase bitfield set to a constant: phasebit (bitfield, value)
PHASEBIT_FLIP = "phasebit_flip"  # update_phasebit: phasebit (bitfield, pos)
SPIN = "spin"  # the head of a loop left when a value allows it (`while (flag != v)`, `for (;;)` with a
#                 break): inside the loop, each iteration; its condition's memory events follow it
EXIT = "exit"  # return from the kernel (early exit)
CALL = "call"  # a call the front end recognised but does not model
NOP = "nop"  # a synchronisation call the front end modelled that does nothing (libcu++'s unified
#              pipeline producer_acquire / consumer_release): no check reads it


@dataclass
class Op:
    kind: str
    api: str  # the spelled callee: "tma::load_async", "warpgroup::arrive"
    location: Location
    guard: Guard
    loops: tuple[int, ...]  # enclosing loop ids, outermost first
    scope: str = "thread"  # thread | warp | warpgroup | group<N> | block | cluster
    issuers_per_group: int = 0  # for group scopes: 1 elected lane per group instance
    group_warps: int = 1  # group<N>::... ops: N warps per instance
    barrier: Ref | None = None
    buffer: Ref | None = None
    operands: tuple[Ref, ...] = ()
    count: Expr | None = None  # arrivals / init count / wait<N> / sync thread count
    bytes: Expr | None = None  # tx bytes (expect) or bytes delivered (load/store)
    parity: Expr | None = None
    sync_id: Expr | None = None
    # the facts of each kind (None on ops of other kinds), filled once by the front end
    mma: MmaFacts | None = None  # MMA
    asm: AsmFacts | None = None  # any op written as inline PTX
    sync: SyncFacts | None = None  # SYNC
    warp_coll: WarpCollFacts | None = None  # WARP_COLL
    fence: FenceFacts | None = None  # FENCE
    mbar: BarrierFacts | None = None  # MBAR_ARRIVE, MBAR_EXPECT, MBAR_WAIT, TMA_LOAD
    transfer: TransferFacts | None = None  # TMA_LOAD, TMA_STORE
    access: AccessFacts | None = None  # REG_ACCESS, SMEM_ACCESS
    tmem: TmemFacts | None = None  # TMEM_OP
    global_access: GlobalAccessFacts | None = None  # GLOBAL_SIGNAL, GLOBAL_LOAD, GLOBAL_STORE
    phasebit: PhasebitFacts | None = None  # phasebit_set, phasebit_flip, MBAR_WAIT
    copy: CopyFacts | None = None  # CP_ASYNC
    spin: SpinFacts | None = None  # SPIN
    increase: bool | None = None  # SETMAXNREG: .inc (else .dec)
    read_only: bool = False  # TMA_STORE_WAIT: store_async_read_wait (reads done, not writes)
    pdl: str | None = None  # PDL: wait | launch_dependents
    # the op names a barrier the front end could not resolve (the argument's text): its counts
    # and phases are not known
    barrier_unknown: str | None = None
    # CALL: a call tkcheck does not model received this barrier (it may arrive, wait, re-init)
    unmodelled_barrier_use: bool = False
    not_inlined: bool = False  # CALL: a user function past the inlining bound
    order: int = 0  # program order within the kernel (source walk order)
    callers: tuple[Location, ...] = ()  # inlining chain: user device functions / callbacks
    role_hint: str | None = None  # lcf: producer / consumer (which template branch)

    # the kind facts most queries test, None on ops of other kinds
    @property
    def sync_kind(self) -> str | None:
        return self.sync.kind if self.sync is not None else None

    @property
    def expect_arrivals(self) -> int:
        """The arrivals an MBAR_EXPECT makes besides its bytes: 1 (arrive.expect_tx), 0 for an
        expect_tx alone (`mbar.tx_only`); 0 on ops of other kinds."""
        if self.kind != MBAR_EXPECT:
            return 0
        return 0 if self.mbar is not None and self.mbar.tx_only else 1

    @property
    def tx_only(self) -> bool:
        """An MBAR_EXPECT with no arrival (`mbarrier.expect_tx`): bytes only, no release."""
        return self.kind == MBAR_EXPECT and self.mbar is not None and self.mbar.tx_only

    @property
    def fence_kind(self) -> str | None:
        return self.fence.kind if self.fence is not None else None

    @property
    def access_mode(self) -> str | None:
        return self.access.mode if self.access is not None else None

    def describe(self) -> str:
        what = self.barrier or self.buffer
        return f"{self.api}({what})" if what else self.api


# ---- the grid level: kernels launched in order on a stream (frontend/launch_chain.py) ----------
# what a launch's predecessor on its stream is when it is no launch of this file
PRED_NONE = -1  # nothing runs on the stream (program start, after a synchronisation or a copy)
PRED_UNKNOWN = -2  # not known (host code not followed, another stream, an event wait)


@dataclass(frozen=True)
class GridLaunch:
    """One launch of a kernel by the translation unit's host code, on one path of it."""

    kernel: str  # the kernel function's name (its models: GridModel.models[kernel])
    location: Location
    # launched with `cudaLaunchAttributeProgrammaticStreamSerialization` on: the kernel may start
    # before its predecessor on the stream completed (None: not known)
    pdl: bool | None
    # kernel parameter -> the host buffer it receives (a token naming one allocation or host
    # variable; None: not known)
    args: tuple[tuple[str, str | None], ...]
    predecessor: int  # index in GridModel.launches, or PRED_NONE / PRED_UNKNOWN
    # the instance of a template kernel the launch names, as its model is named
    # (`stage<1>`, `kernel<config<256, 64>>`); None: not a template, or not resolved
    instance: str | None = None
    # the number of blocks of a `k<<<g, b>>>` launch whose g the host walk evaluates to an
    # integer (round 9: a spin lock's second block); None: not known (a dim3, a config struct)
    blocks: int | None = None

    def buffer(self, param: str) -> str | None:
        return next((b for p, b in self.args if p == param), None)


@dataclass
class GridModel:
    """The launch sequence of the whole translation unit, shared by its kernels' models."""

    launches: list[GridLaunch] = field(default_factory=list)
    # kernel name -> its models (several for the instances of a template)
    models: dict[str, list] = field(default_factory=dict)
    # kernels launched somewhere the host walk did not follow (a launch with PRED_UNKNOWN is
    # listed in launches; a kernel in neither is launched by no host code of this file)
    unfollowed: set = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def launches_of(self, kernel: str) -> list[tuple[int, GridLaunch]]:
        return [(i, g) for i, g in enumerate(self.launches) if g.kernel == kernel]


@dataclass
class KernelModel:
    name: str
    location: Location
    kind: str  # "global" | "lcf" | "lcsf" | "lcsc" | "interpreter"
    block_threads: Expr | None  # threads per block (all dimensions), folded when possible
    block_threads_source: str = ""  # where the number came from (launch_bounds, template flags)
    # the block's (x, y, z) when the launch in the translation unit fixes it
    # (frontend/launch_shape.py); None: one-dimensional as far as the model knows
    block_dims: tuple[int, int, int] | None = None
    # the grid's (x, y, z) blocks when every launch in the translation unit gives that one constant
    # shape (frontend/launch_shape.grid_shapes, round 16); None: not known
    grid_dims: tuple[int, int, int] | None = None
    # `threadIdx.y` / `.z` or `blockDim.y` / `.z` read with no shape known: the thread count alone
    # (`__launch_bounds__`) does not say which thread is where, so the walk drops the count after
    # the kernel (block size unknown: obligations undecided, never read as a 1-D block)
    reads_yz_without_shape: str = ""
    # a register cap fixed at entry (`__launch_bounds__`): True / False / None (unknown,
    # e.g. an attribute tkcheck cannot identify) -- setmaxnreg needs it
    launch_bounds: bool | None = None
    min_blocks: Expr | None = None  # second __launch_bounds__ argument
    cluster: Expr | None = None
    template_params: dict[str, Expr | None] = field(default_factory=dict)
    buffers: dict[str, SharedBuffer] = field(default_factory=dict)
    barriers: dict[str, Barrier] = field(default_factory=dict)
    reg_tiles: dict[str, TileType] = field(default_factory=dict)
    globals: dict[str, TileType] = field(default_factory=dict)
    loops: dict[int, Loop] = field(default_factory=dict)
    # `__ffs(m)` of a run-time member mask m: the Var of its value -> the Var of m (the lowest lane
    # of m plus one: a group's leader is the lane with `lane == __ffs(m) - 1`;
    # checks/warp_collectives.py `leader_lanes`)
    lowest_lane_of: dict[str, str] = field(default_factory=dict)
    # an unknown every thread holds alike computed from whole `__shared__` scalars (`!last_s`,
    # `last_s == 1` after a barrier): its Var name -> those scalars' names. What the value tests
    # (an "am I last" flag set from an atomic's old value) is the memory engine's question
    shared_scalar_unknowns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # a local array of scalars the model keeps no memory of (`unsigned key[8];`), named by the
    # unknown its declaration binds (`?uninit key#8`): the values stored into its elements, in walk
    # order (a Var's name, or None for a value that is no Var: an expression, a compound update),
    # the Var of each element read -> that array, and the arrays the walk saw used otherwise (its
    # address taken, handed to a call, an asm operand): what a read may hold is the checks'
    # question (checks/inputs.py: data of the launch's input)
    local_array_stores: dict[str, list[str | None]] = field(default_factory=dict)
    local_array_reads: dict[str, str] = field(default_factory=dict)
    local_array_escapes: set[str] = field(default_factory=set)
    ops: list[Op] = field(default_factory=list)
    smem_addresses: dict[str, SmemAddress] = field(default_factory=dict)  # Var name -> buffer
    regions: dict[str, SharedRegion] = field(default_factory=dict)  # hand-carved stage regions
    tmem_allocators: dict[str, TmemAllocator] = field(default_factory=dict)
    tmem_tiles: dict[str, TmemTile] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # assumptions stated to the user
    unmodelled: list[tuple[Location, str]] = field(default_factory=list)  # for --show-unknown
    # pointer variables whose target the walk does not follow (UNKNOWN_ACCESS ops name them): why
    pointer_unknowns: dict[str, str] = field(default_factory=dict)
    # asm statements written by macros that synchronise or could not be read (coverage sites)
    macro_asm: list[Location] = field(default_factory=list)
    # (file, row, census name) of libcu++ atomic sites the walk modelled that no event stands at: the
    # declaration of an atomic object whose calls are events, a relaxed fence (coverage's census)
    atomic_sites: set = field(default_factory=set)
    tk_semantics: str = "thread-scope"  # or "lane-guarded" (pre late-2025 TK)
    # one instantiation of a template kernel, or a function a TK launcher runs as a kernel:
    # where the file names it (findings point there too), and how (launch, explicit, ...)
    instance_site: Location | None = None
    instance_how: str | None = None
    # source ranges (file, (line, col), (line, col)) this kernel never runs: the branch of an
    # `if constexpr` (or a constant condition) not taken
    dead_code: set = field(default_factory=set)
    # why the progress exploration's deadlocks are not the kernel's (a template model that runs
    # in sequence two duties the template polls: `tkcheck_sequential_duties` in its protocol file)
    progress_approx: str | None = None
    # ring walks (frontend/ring_walk.py): walk id -> (task loop id, B: visits of the earlier
    # tasks, visits of one task); op.order -> (walk id, the visit the op's index/parity are at)
    ring_walks: dict = field(default_factory=dict)
    ring_visits: dict = field(default_factory=dict)
    # the launch sequence of the file's host code (frontend/launch_chain.py), one object shared
    # by every kernel of the file; None where it was not read
    grid: GridModel | None = None

    # queries ----------------------------------------------------------------
    def ring_walk_bases(self, loop_id: int) -> list[str]:
        """The names of the visit counters B of the ring walks of this task loop."""
        return sorted({w[1].name for w in self.ring_walks.values() if w[0] == loop_id})

    def ops_of(self, *kinds: str) -> Iterator[Op]:
        return (o for o in self.ops if o.kind in kinds)

    def loop_chain(self, op: Op) -> list[Loop]:
        return [self.loops[i] for i in op.loops]

    def barrier_of(self, ref: Ref | None) -> Barrier | None:
        return None if ref is None else self.barriers.get(ref.name)

    def user_iteration(self, pairs) -> dict:
        """Loop-counter values (`k3` = 4) as the user's variables (`k` = 4, or `k` = 9 for a loop
        from 1 in steps of 2); other names stay as they are."""
        by_counter = {lp.counter.name: lp for lp in self.loops.values()}
        out = {}
        for name, v in pairs.items() if isinstance(pairs, dict) else pairs:
            lp = by_counter.get(name)
            if lp is None:
                out[name] = v
                continue
            init = lp.init.eval({}) if lp.init is not None else None
            step = lp.step.eval({}) if lp.step is not None else None
            if (
                lp.var
                and isinstance(v, int)
                and isinstance(init, int)
                and isinstance(step, int)
                and not isinstance(v, bool)
            ):
                out[lp.var] = init + step * v
            else:
                out[str(lp.counter)] = v
        return out

    def num_threads(self) -> int | None:
        v = self.block_threads.eval({}) if self.block_threads is not None else None
        return v if isinstance(v, int) and v > 0 else None
