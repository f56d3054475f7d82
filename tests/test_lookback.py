"""Round 13 (issue 25, branch r13-lookback): the primitives the decoupled look-back scan of
corpus/idioms11 needs, asked of the engines on the fixtures of their own shapes."""

from __future__ import annotations

from tkcheck.checks import happens_before, loop_pairs, protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.model import ir

from conftest import ROOT

FIX = ROOT / "fixtures"


def _analysis(path) -> Analysis:
    (m,) = models_of(str(path))
    return Analysis(m)


def _analyses(path) -> dict[str, Analysis]:
    return {m.name: Analysis(m) for m in models_of(str(path))}


def test_a_block_strided_loop_is_the_set_of_each_threads_iterations():
    an = _analysis(FIX / "memory" / "strided_stage_bad.cu")
    (w,) = [o for o in an.model.ops if o.kind == ir.SMEM_ACCESS and o.access_mode == "write"]
    its = loop_pairs.own_iterations(an, w, 0)
    assert its is not None and len(its) == 4  # 1000 elements over 256 threads: 4 iterations at most
    assert [len(who) for _, who in its] == [256, 256, 256, 232]  # the fourth: threads 0..231
    assert max(its[-1][1]) == 231


def test_a_read_hoisted_above_the_acquire_is_an_acquisition_before_it():
    bad = happens_before.memory(_analysis(FIX / "memory" / "chained_read_before_acquire_bad.cu"))
    assert [a.how for a in bad.acquisitions] == ["before"]
    good = happens_before.memory(_analysis(FIX / "memory" / "chained_read_before_acquire_good.cu"))
    assert not good.acquisitions
    # the question is an obligation on both (decided on the good one: no read before the poll)
    assert any(k[0] == "global" for k in good.examined)
    assert not [u for u in good.undecided if u[1].kind == ir.GLOBAL_LOAD]


def test_a_poll_of_an_element_nobody_writes_is_a_hang():
    bad = protocol.spin_waits(_analysis(FIX / "progress" / "spin_unwritten_element_bad.cu"))
    (sw,) = bad.never
    assert sw.element == 0 and sw.flag == "done" and sw.reached_with == {"blockIdx.x": 1}
    good = protocol.spin_waits(_analysis(FIX / "progress" / "spin_unwritten_element_good.cu"))
    assert not good.never and len(good.undecided) == 1


def test_scalar_pairs_under_different_uniform_conditions_are_decided():
    facts = {
        k: happens_before.memory(an) for k, an in _analyses(FIX / "memory" / "uniform_branch_scalar_good.cu").items()
    }
    assert all(not f.races and not f.undecided for f in facts.values())
    (bad,) = [happens_before.memory(an) for an in _analyses(FIX / "memory" / "uniform_branch_scalar_bad.cu").values()]
    assert bad.races and bad.races[0].first.buffer.name == "row_s"


def test_the_guard_after_an_if_with_a_nested_exit_is_narrowed():
    an = _analysis(FIX / "loops" / "nested_exit_bad.cu")
    syncs = [o for o in an.model.ops if o.kind == ir.SYNC and o.loops]
    # the step's barrier runs only where the `continue` nested in `if (t < s)` was not taken: a
    # test of the loaded value, not every thread
    assert syncs and all(not o.guard.exact and o.guard.opaque for o in syncs)
    good = _analyses(FIX / "loops" / "nested_exit_good.cu")["tail_blocks_leave"]
    (sync,) = [o for o in good.model.ops if o.kind == ir.SYNC]
    assert sync.guard.exact and len(sync.guard.uniform) == 1
