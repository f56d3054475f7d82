"""The typed facts of operations, decoded once from knowledge/ops.py (MMA names, inline PTX)."""

import pytest

from tkcheck.knowledge import ops as K
from tkcheck.model import ir


@pytest.mark.parametrize(
    "base, facts",
    [
        ("mma_AB", (True, 1, False, False)),
        ("mma_ABt", (True, 1, False, True)),
        ("mm_AtB", (False, 1, True, False)),
        ("mm_AtBt", (False, 1, True, True)),
        ("mma2_ABt", (True, 2, False, True)),
        ("mm2_AB", (False, 2, False, False)),
        ("mma", (True, 1, None, None)),  # tcgen05 `mma<ta, tb>` / bare: the name does not say
        ("mm2", (False, 2, None, None)),
    ],
)
def test_mma_names_decode_once(base, facts):
    f = K.mma_facts(base, "tcgen05")
    assert (f.accumulate, f.ncta, f.transpose_a, f.transpose_b) == facts
    assert K.tcgen05_mma_name(base)


@pytest.mark.parametrize("base", ["mma_BA", "mma_At", "mmaAB", "mma3_AB", "mma_async_wait", "mma_fence"])
def test_other_names_are_not_mmas(base):
    assert K.mma_facts(base, "wgmma") is None and not K.tcgen05_mma_name(base)


def test_every_wgmma_entry_decodes():
    names = [k for k, v in K.GROUP_OPS.items() if v.kind == ir.MMA]
    assert len(names) == 8
    assert all(K.mma_facts(n, "wgmma").transpose_a is not None for n in names)


def test_ptx_classification():
    wg = K.classify_ptx("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0}, %1, %2;")
    assert wg.async_mma and not wg.arrives and wg.instruction == "wgmma.mma_async"
    tc = K.classify_ptx("tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3;")
    assert tc.async_mma and tc.instruction == "tcgen05.mma"
    assert not K.classify_ptx("tcgen05.mma_ws.cta_group::1 [%0];").async_mma
    ar = K.classify_ptx("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;")
    assert ar.arrives and ar.expects_tx and ar.instruction == "mbarrier.arrive.expect_tx.shared"
    ex = K.classify_ptx("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;")
    assert ex.expects_tx and not ex.arrives
    wait = K.classify_ptx("mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;")
    assert not (wait.arrives or wait.expects_tx or wait.async_mma)
    assert wait.instruction == "mbarrier.try_wait.parity.shared"
    assert K.classify_ptx("bar.sync 1, 128;").instruction is None


def test_ptx_ops_table():
    """The model ops an asm statement performs, in program order, with their facts."""

    def kinds(ptx: str) -> list[tuple[str, str]]:
        return [(p.kind, p.api) for p in K.ptx_ops(ptx).ops]

    assert kinds("bar.sync 1, 128;") == [(ir.SYNC, "bar.sync")]
    assert K.ptx_ops("barrier.cta.sync 2;").ops[0].sync == ir.SyncFacts("named")
    assert kinds("bar.arrive 3, 256;") == [(ir.NAMED_ARRIVE, "bar.arrive")]
    # the barrier id and thread count operands, every spelling (bar.red: between d and c)
    operands = {
        ptx: (K.ptx_ops(ptx).ops[0].kind, K.ptx_ops(ptx).ops[0].bar_id, K.ptx_ops(ptx).ops[0].bar_count)
        for ptx in (
            "bar.sync %0, %1;",
            "barrier.sync.aligned 1, 256;",
            "bar.cta.sync 0;",
            "barrier.cta.arrive %0, 128;",
            "bar.red.popc.u32 %0, 2, 64, %p;",
        )
    }
    assert operands == {
        "bar.sync %0, %1;": (ir.SYNC, "%0", "%1"),
        "barrier.sync.aligned 1, 256;": (ir.SYNC, "1", "256"),
        "bar.cta.sync 0;": (ir.SYNC, "0", None),
        "barrier.cta.arrive %0, 128;": (ir.NAMED_ARRIVE, "%0", "128"),
        "bar.red.popc.u32 %0, 2, 64, %p;": (ir.SYNC, "2", "64"),
    }
    assert not K.ptx_ops("bar.warp.sync 0xffffffff;").ops  # __syncwarp, not a named barrier
    assert not K.ptx_ops("mbarrier.arrive.shared::cta.b64 _, [%0];").ops
    assert kinds("fence.proxy.async.shared::cta;") == [(ir.FENCE, "fence.proxy.async")]
    fences = {p: K.ptx_ops(p).ops[0].fence for p in ("membar.gl;", "fence.acq_rel.gpu;", "fence.sc.cta;")}
    assert [f.kind for f in fences.values() if f is not None] == ["membar_gl", "membar_gl", "membar_cta"]
    assert K.ptx_ops("fence.mbarrier_init.release.cluster;").ops[0].fence == ir.FenceFacts("mbarrier_init")
    inc, dec = K.ptx_ops("setmaxnreg.inc.sync.aligned.u32 240;"), K.ptx_ops("setmaxnreg.dec.sync.aligned.u32 40;")
    assert (inc.ops[0].increase, dec.ops[0].increase) == (True, False)
    sig = K.ptx_ops("red.release.gpu.global.add.u32 [%0], %1;").ops[0]
    assert sig.kind == ir.GLOBAL_SIGNAL and sig.global_access == ir.GlobalAccessFacts(
        "release", "red.release.gpu.global.add.u32 [%0], %1", atomic="add", dtype="u32", form="ptx", scope="gpu"
    )
    # the scope is part of the order: a release at cta scope holds within the block only
    cta = K.ptx_ops("red.release.cta.global.add.u32 [%0], %1;").ops[0].global_access
    assert cta is not None and cta.scope == "cta" and cta.across_blocks is False
    assert K.ptx_ops("st.release.cluster.global.b32 [%0], %1;").ops[0].global_access.across_blocks is None
    assert K.ptx_ops("ld.global.acquire.sys.b32 %0, [%1];").ops[0].global_access.scope == "sys"
    assert (sig.addr_operand, sig.out_operand) == (0, None)
    ld = K.ptx_ops("ld.acquire.gpu.global.u32 %0, [%1];").ops[0]
    assert ld.kind == ir.GLOBAL_LOAD and ld.global_access is not None and ld.global_access.sem == "acquire"
    # the walker binds the loaded value to operand 0 and resolves the address of operand 1
    assert (ld.addr_operand, ld.out_operand) == (1, 0)
    atom = K.ptx_ops("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;").ops[0]
    assert atom.global_access is not None and atom.global_access.sem == "acq_rel"
    assert (atom.addr_operand, atom.out_operand) == (1, 0)
    assert K.ptx_ops("atom.acquire.gpu.global.cas.b32 %0, [%1], 0, 1;").ops[0].global_access.sem == "acquire"  # type: ignore[union-attr]
    # a release / relaxed store of a flag is a signal; a weak st.global stores data
    flag = K.ptx_ops("st.release.gpu.global.b32 [%0], %1;").ops[0]
    assert flag.kind == ir.GLOBAL_SIGNAL and flag.global_access is not None
    assert (flag.global_access.sem, flag.global_access.atomic, flag.addr_operand) == ("release", "st", 0)
    (data,) = K.ptx_ops("st.global.v4.b32 [%0], {%1, %2, %3, %4};").ops
    assert data.kind == ir.GLOBAL_STORE and data.global_access is not None and data.global_access.sem == "weak"
    # qualifiers after `.global` (`ld.global.acquire.gpu`, ptxas takes both orders), vector outputs
    assert K.ptx_ops("ld.global.acquire.gpu.b32 %0, [%1];").ops[0].global_access.sem == "acquire"  # type: ignore[union-attr]
    vec = K.ptx_ops("ld.global.L1::no_allocate.v4.b32 {%0, %1, %2, %3}, [%4];").ops[0]
    assert (vec.addr_operand, vec.out_operand) == (4, None)
    # shared accesses keep their address operand (the walker evaluates it); raw mbarrier PTX is untracked
    assert K.ptx_ops("st.shared.u32 [%0], %1;").shared_access == "st.shared"
    assert K.ptx_ops("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0}, [%1];").shared_access == "ldmatrix"
    assert K.ptx_ops("ld.shared.u32 %0, [%1];").shared_access == "ld.shared"
    wait = K.ptx_ops("mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;")
    assert wait.untracked and not wait.ops and wait.shared_access is None
    assert not K.ptx_ops("mov.u32 %0, %laneid;").untracked
    # two instructions in one statement: both ops, in the table's order
    assert kinds("fence.proxy.async; bar.sync 0;") == [(ir.SYNC, "bar.sync"), (ir.FENCE, "fence.proxy.async")]


_KERNEL = """
#include "kittens.cuh"
using namespace kittens;
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout G) {
    __shared__ tile a, b;
    __shared__ semaphore bar;
    rt_fl<16, 64> acc;
    __syncthreads();
    everyone::sync(3);
    __syncwarp(0xffff);
    if (threadIdx.x == 0) {
        init_semaphore(bar, 0, 1);
        tma::expect_bytes(bar, sizeof(tile));
        tma::load_async(a, G, {0, 0, 0, 0}, bar);
        tma::store_async(G, b, {0, 0, 0, 0});
        tma::store_async_read_wait();
    }
    wait(bar, 0);
    warpgroup::mma_ABt(acc, a, b);
    warpgroup::mma_async_wait();
    warpgroup::store(b, acc);
}
"""


def test_the_front_end_fills_each_kinds_facts(tmp_path):
    from tkcheck.engine import ParseOptions, models_of

    p = tmp_path / "k.cu"
    p.write_text(_KERNEL)
    (m,) = models_of(str(p), ParseOptions())
    assert not hasattr(m.ops[0], "detail")
    syncs = [o.sync for o in m.ops_of(ir.SYNC)]
    assert [(s.kind, s.syncthreads, s.everyone) for s in syncs] == [
        ("block", True, False),
        ("block", False, True),
        ("warp", False, False),
    ]
    assert syncs[2].mask.eval({}) == 0xFFFF
    load = next(m.ops_of(ir.TMA_LOAD))
    assert (
        load.transfer.tile_type.spelling == "st_bf<64, 64>"
        and load.transfer.gl == "G"
        and len(load.transfer.coord) == 4
    )
    assert load.mbar == ir.BarrierFacts()
    store = next(m.ops_of(ir.TMA_STORE))
    assert store.transfer.proxy_fence and next(m.ops_of(ir.TMA_STORE_WAIT)).read_only
    mma = next(m.ops_of(ir.MMA)).mma
    assert (mma.family, mma.transpose_a, mma.transpose_b) == ("wgmma", False, True)
    assert [mma.kind_of(r) for r in ("acc", "a", "b")] == ["regtile", "buffer", "buffer"]
    assert {o.access_mode for o in m.ops if o.kind in (ir.SMEM_ACCESS, ir.REG_ACCESS)} == {"read", "write"}


def test_ptx_async_ops_table():
    """The asynchronous-machinery PTX of helpers written without TK: each instruction's op and
    its operands as text (the front end evaluates them); an instruction of these families not
    understood leaves the statement an opaque call."""

    def ops(ptx):
        out, understood = K.ptx_async_ops(ptx)
        return [(a.kind, a.barrier, a.count or a.bytes or a.parity) for a in out], understood

    assert ops("mbarrier.init.shared::cta.b64 [%0], %1;") == ([(ir.MBAR_INIT, "%0", "%1")], True)
    assert ops("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];") == ([(ir.MBAR_ARRIVE, "%0", "1")], True)
    assert ops("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;") == (
        [(ir.MBAR_EXPECT, "%0", "%1")],
        True,
    )
    # a wait is one only where the asm repeats it (a branch back); without, the C++ loop decides
    loop = "{\\n\\t.reg .pred P1;\\n\\tLAB:\\n\\tmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\\n\\t@!P1 bra.uni LAB;\\n\\t}"
    assert ops(loop) == ([(ir.MBAR_WAIT, "%0", "%1")], True)
    assert ops("mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;") == ([], False)
    bulk = "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
    assert ops(bulk) == ([(ir.TMA_LOAD, "%3", "%2")], True)
    tensor = "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
    (load,), ok = K.ptx_async_ops(tensor)
    assert ok and load.kind == ir.TMA_LOAD and load.barrier == "%4" and load.buffer == "%0" and load.bytes is None
    (commit,), ok = K.ptx_async_ops(
        "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;"
    )
    assert ok and commit.kind == ir.MBAR_ARRIVE and commit.mask == "%1"
    assert commit.mbar == ir.BarrierFacts(tcgen05_commit=True, ncta=2, multicast=True)
    assert [
        a.kind for a in K.ptx_async_ops("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;")[0]
    ] == [ir.TMEM_OP]
    assert K.ptx_async_ops("barrier.cluster.wait.acquire.aligned;")[0][0].sync == ir.SyncFacts("cluster_wait")
    assert K.ptx_async_ops("wgmma.wait_group.sync.aligned 1;")[0][0].count == "1"
    # an instruction of the family not modelled: an unmodelled use of the barrier it names (i7model)
    assert ops("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;") == ([(ir.CALL, "%0", None)], False)
    # r16-expecttx: the expect_tx without an arrival is modelled (bytes only, `tx_only`)
    assert ops("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;") == ([(ir.MBAR_EXPECT, "%0", "%1")], True)
    (drop,), ok = K.ptx_async_ops("mbarrier.arrive_drop.shared::cta.b64 _, [%0];")
    assert ok and drop.kind == ir.MBAR_ARRIVE and drop.mbar == ir.BarrierFacts(drop=True, sem="release", scope="cta")
    # r16-remote: an mbarrier op's .sem / .scope as spelled, PTX's defaults where absent
    facts = {
        "mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];": ("relaxed", "cluster"),
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];": ("release", "cluster"),
        "mbarrier.arrive.shared::cluster.b64 _, [%0];": ("release", "cta"),
        "mbarrier.arrive.expect_tx.relaxed.cluster.shared::cta.b64 _, [%0], %1;": ("relaxed", "cluster"),
        "{ W: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1; @!p bra W; }": (
            "acquire",
            "cluster",
        ),
        "{ W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }": ("acquire", "cta"),
        "{ W: mbarrier.try_wait.parity.relaxed.cluster.shared::cta.b64 p, [%0], %1; @!p bra W; }": (
            "relaxed",
            "cluster",
        ),
    }
    for text, want in facts.items():
        (op,), ok = K.ptx_async_ops(text)
        assert ok and op.mbar is not None and (op.mbar.sem, op.mbar.scope) == want, text
    (sta,), ok = K.ptx_async_ops("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];")
    assert ok and (sta.kind, sta.barrier, sta.buffer, sta.bytes) == (ir.TMA_LOAD, "%3", "%0", "8")


@pytest.mark.parametrize(
    "ptx, outputs",
    [
        # the probe's predicate selected into %0: nonzero exactly when the phase completed
        ("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }", {0: True}),
        # the other way round: nonzero while the phase is pending
        ("{ .reg .pred q; mbarrier.test_wait.parity.shared::cta.b64 q, [%1], %2; selp.b32 %0, 0, 1, q; }", {0: False}),
        # a try_wait that branches back on itself is a wait by itself, no probe
        ("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }", {}),
        # selp of values that are both nonzero says nothing
        ("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 2, 1, p; }", {}),
        # two probes: not one answer
        (
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%3], %2; selp.u32 %0, 1, 0, p; }",
            {},
        ),
    ],
)
def test_ptx_probe_outputs(ptx, outputs):
    assert K.ptx_probe_outputs(ptx) == outputs
