"""Warp collectives as events with a member mask (knowledge/ops.py, frontend, checks/warp_collectives.py)."""

from tkcheck.checks.analysis import Analysis
from tkcheck.checks.warp_collectives import collectives, describe_lanes
from tkcheck.engine import models_of
from tkcheck.knowledge import ops as K
from tkcheck.model import ir


def test_ptx_warp_collectives_names_and_masks():
    assert K.ptx_warp_collectives("shfl.sync.down.b32 %0|p, %1, %2, 0x1f, 0xffffffff;") == [
        ("shfl.sync.down", "0xffffffff")
    ]
    assert K.ptx_warp_collectives("vote.sync.ballot.b32 %0, %1, %2;") == [("vote.sync.ballot", "%2")]
    assert K.ptx_warp_collectives("match.all.sync.b64 %0|p, %1, %2;") == [("match.sync.all", "%2")]
    assert K.ptx_warp_collectives("redux.sync.min.u32 %0, %1, 0xffff;") == [("redux.sync.min", "0xffff")]
    assert K.ptx_warp_collectives("elect.sync _|P, 0xffffffff; @P mov.u32 %0, 1;") == [("elect.sync", "0xffffffff")]
    assert K.ptx_warp_collectives("bar.warp.sync %0;") == [("bar.warp.sync", "%0")]
    assert K.ptx_warp_collectives("bar.sync 1, 128;") == []


def test_describe_lanes():
    assert describe_lanes(range(16, 32)) == "lanes 16-31"
    assert describe_lanes({3}) == "lane 3"
    assert describe_lanes({0, 1, 2, 8, 9}) == "lanes 0-2, 8-9"


_SRC = """
__device__ inline bool pick() {
    unsigned p = 0;
    asm volatile("{\\n\\t.reg .pred P;\\n\\telect.sync _|P, 0xffffffff;\\n\\t@P mov.u32 %0, 1;\\n\\t}" : "+r"(p));
    return p != 0;
}
__global__ __launch_bounds__(64) void k(float *y, int *c) {
    const int lane = threadIdx.x % 32;
    float v = y[threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane < 16 && pick()) atomicAdd(c, 1);
    y[threadIdx.x] = v;
}
"""


def test_collectives_are_events_with_masks_and_guards():
    (m,) = models_of("k.cu", text=_SRC)
    coll = [o for o in m.ops if o.kind == ir.WARP_COLL]
    assert [o.warp_coll.instr for o in coll] == ["shfl.sync.bfly", "elect.sync"]
    assert all(o.warp_coll.mask.eval({}) == 0xFFFFFFFF for o in coll)
    # the halving loop has a constant trip count, so its body's guard is exact
    shfl = coll[0]
    assert shfl.guard.exact and m.loops[shfl.loops[-1]].trip.eval({}) == 5
    # `lane < 16 && pick()`: the election runs under the left operand
    assert coll[1].guard.thread.eval({"tid": 3}) and not coll[1].guard.thread.eval({"tid": 20})


def test_half_warp_election_is_a_mismatch():
    (m,) = models_of("k.cu", text=_SRC)
    facts = collectives(Analysis(m))
    assert facts.asked == 2 and not facts.undecided
    (mm,) = facts.mismatches
    assert mm.kind == "missing" and mm.instr == "elect.sync" and mm.missing == frozenset(range(16, 32))


_TURN = """
__global__ __launch_bounds__(128) void k(float *y, int iters) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int it = 0; it < iters; it++) {
        float v = y[threadIdx.x];
        if (warp == it % 4) v += __shfl_xor_sync(0xffffffffu, v, 1);
        if (lane == it % 32) __syncwarp();
        y[threadIdx.x] = v;
    }
}
"""


def test_warp_uniform_guard_over_a_loop_counter_is_kept_a_lane_dependent_one_undecided():
    """`warp == it % 4` names the loop counter but splits no warp (z3: the guard at tid equals
    the guard at its warp's lane 0): the full-mask shuffle is kept. `lane == it % 32` picks one
    lane per iteration: its full-mask `__syncwarp()` is not decided (no finding, no pass)."""
    from tkcheck.checks.warp_collectives import warp_uniform_full

    (m,) = models_of("k.cu", text=_TURN)
    an = Analysis(m)
    shfl = next(o for o in m.ops if o.kind == ir.WARP_COLL)
    sync = next(o for o in m.ops if o.kind == ir.SYNC and o.sync_kind == "warp")
    assert warp_uniform_full(an, shfl) and not warp_uniform_full(an, sync)
    facts = collectives(an)
    assert facts.asked == 2 and not facts.mismatches
    assert [u.instr for u in facts.undecided] == ["bar.warp.sync"]
