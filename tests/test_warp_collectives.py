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


_AGG = """
__global__ __launch_bounds__(64) void k(const int *keys, int *out) {
    __shared__ int bins_s[8];
    const int t = threadIdx.x, lane = t % 32;
    if (t < 8) bins_s[t] = 0;
    __syncthreads();
    const int key = keys[blockIdx.x * 64 + t];
    const unsigned valid = __ballot_sync(0xffffffffu, key >= 0);
    if (key >= 0) {
        const unsigned peers = __match_any_sync(valid, key);
        if (lane == __ffs(peers) - 1) atomicAdd(&bins_s[key & 7], __popc(peers));
    }
    __syncthreads();
    if (t < 8) out[blockIdx.x * 8 + t] = bins_s[t];
}
"""


def test_run_time_masks_are_lane_sets_of_their_producers():
    """The match's mask is the ballot's value (the lanes that took the branch), the ballot is
    reached by whole warps: every class kept, nothing undecided; `__ffs(peers)` names its mask."""
    from tkcheck.checks.warp_collectives import kept_by_its_mask, mask_producer

    (m,) = models_of("k.cu", text=_AGG)
    an = Analysis(m)
    match = next(o for o in m.ops if o.kind == ir.WARP_COLL and o.warp_coll.instr == "match.sync.any")
    assert mask_producer(an, match).warp_coll.instr == "vote.sync.ballot"
    assert kept_by_its_mask(an, match)
    facts = collectives(an)
    assert facts.asked == 2 and not facts.undecided and not facts.mismatches
    assert set(m.lowest_lane_of.values()) == {match.warp_coll.result}


def test_full_mask_under_a_lane_input_is_a_mismatch_for_some_input():
    (m,) = models_of("k.cu", text=_AGG.replace("__match_any_sync(valid, key)", "__match_any_sync(0xffffffffu, key)"))
    (mm,) = collectives(Analysis(m)).mismatches
    assert mm.kind == "missing" and mm.instr == "match.sync.any" and mm.input_cond is not None
    assert mm.reaching == frozenset({0}) and mm.missing == frozenset(range(1, 32))
    assert "keys[" in mm.input_text


def test_a_value_other_lanes_share_is_no_lane_input():
    """`keys[blockIdx.x * 64 + t / 2]`: two lanes load one element, so no lane chooses its own
    value: no mismatch is claimed (undecided)."""
    src = _AGG.replace("keys[blockIdx.x * 64 + t]", "keys[blockIdx.x * 64 + t / 2]").replace(
        "__match_any_sync(valid, key)", "__match_any_sync(0xffffffffu, key)"
    )
    (m,) = models_of("k.cu", text=src)
    facts = collectives(Analysis(m))
    assert not facts.mismatches and facts.undecided


def test_leaders_are_one_lane_a_warp_under_one_chosen_input():
    from tkcheck.checks.warp_collectives import instances

    (m,) = models_of("k.cu", text=_AGG)
    an = Analysis(m)
    add = next(o for o in m.ops if o.kind == ir.SMEM_ACCESS and o.access is not None and o.access.atomic)
    zero = next(o for o in m.ops if o.kind == ir.SMEM_ACCESS and o.access_mode == "write" and o.guard.exact)
    (inst,) = instances(an, [zero, add], (zero, 3))
    assert an.threads.executing(inst.op) == frozenset({0, 32})
    assert inst.op.buffer.index[0].eval({}) == 3
