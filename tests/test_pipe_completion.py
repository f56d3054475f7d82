"""cp.async copies ordered by mbarriers (issue 25, round 5 task pipe): the cp.async engine's
mbarrier runs, TK308's proved index equality, and counters advanced under a condition on the
iteration (recurrence.solve_guarded)."""

from __future__ import annotations

from tkcheck import recurrence, solver
from tkcheck.checks import async_groups, releases
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.frontend.walk_arith import solve_recurrence
from tkcheck.model import expr as E
from tkcheck.model import ir

from conftest import ROOT

LIBCU = ROOT / "fixtures" / "libcu"


def _analysis(name: str) -> Analysis:
    (m,) = models_of(str(LIBCU / name))
    return Analysis(m)


def test_producer_commit_carries_the_threads_copies():
    an = _analysis("pipeline_no_consumer_wait_good.cu")
    (commit,) = [o for o in an.model.ops if o.api == "cuda::pipeline::producer_commit"]
    assert commit.kind == ir.MBAR_ARRIVE and commit.mbar is not None and commit.mbar.cp_async


def test_barrier_copy_names_its_barrier():
    an = _analysis("barrier_memcpy_good.cu")
    (copy,) = an.model.ops_of(ir.CP_ASYNC)
    assert copy.copy is not None and copy.copy.mbarrier is not None and copy.copy.mbarrier.name == "bar"


def test_runs_find_the_unwaited_read_and_leave_the_waited_one_undecided():
    bad = async_groups.obligations(_analysis("pipeline_no_consumer_wait_bad.cu"))
    found = [ob for ob in bad if ob.status == "violated" and ob.kind == "complete"]
    assert found and all(ob.witness.get("via") == "mbarrier" for ob in found)
    # the copying threads are the producers (warps 0-1), the readers the consumers
    assert all(ob.witness["writer_thread"] < 64 <= ob.witness["reader_thread"] for ob in found)
    good = async_groups.obligations(_analysis("pipeline_no_consumer_wait_good.cu"))
    assert good and all(ob.status == "undecided" for ob in good)
    assert all("not proved for every schedule" in ob.reason for ob in good)


def test_ring_shorter_than_pipeline_is_found_by_a_run():
    obs = async_groups.obligations(_analysis("pipeline_ring_short_bad.cu"))
    assert {ob.kind for ob in obs if ob.status == "violated"} >= {"complete"}
    good = async_groups.obligations(_analysis("pipeline_ring_short_good.cu"))
    assert not [ob for ob in good if ob.status == "violated"]


def test_release_before_read_in_an_inner_loop_is_a_violation():
    rf = releases.reads_after_release(_analysis("pipeline_release_mask_index_bad.cu"))
    assert rf.violations and not rf.undecided
    v = rf.violations[0]
    assert v.arrive.api == "cuda::pipeline::consumer_release" and v.thread >= 64
    good = releases.reads_after_release(_analysis("pipeline_release_mask_index_good.cu"))
    assert not good.violations


def test_mask_and_remainder_indices_are_proved_equal():
    k = E.Var("k1", E.LOOP)
    an = _analysis("pipeline_release_mask_index_good.cu")
    with solver.session():
        key = releases.index_of(ir.Ref("b", (E.binop("%", k, E.Const(4)),)))
        assert releases.same_index(key, (E.binop("&", k, E.Const(3)),), an)
        # a different stage is not the same index
        assert not releases.same_index(key, (E.binop("&", E.binop("+", k, E.Const(1)), E.Const(3)),), an)


def test_guarded_counter_is_the_iteration_inside_the_loop_only():
    k = E.Var("k9", E.LOOP)
    n = E.Var("n", E.PARAM)
    start = E.Var("head@start", E.LOOP)
    trip = n
    # `if (k + 1 < n) ++head;`: true in every iteration but the last
    end = E.ite(E.binop("<", E.binop("+", k, E.Const(1)), n), E.binop("+", start, E.Const(1)), start)
    with solver.session():
        f = recurrence.solve_guarded(start, end, E.Const(0), "head", k, trip, solve_recurrence)
        assert f is not None
        assert f(k) == E.binop("+", E.Const(0), E.binop("*", E.Const(1), k))
        after = f(trip)  # after the loop the last iteration's condition counts: unknown
        assert isinstance(after, E.Var) and after.kind == E.OPAQUE
        # `if (k + 2 < n) ++head;` fails in the last two iterations: no closed form
        end2 = E.ite(E.binop("<", E.binop("+", k, E.Const(2)), n), E.binop("+", start, E.Const(1)), start)
        assert recurrence.solve_guarded(start, end2, E.Const(0), "head", k, trip, solve_recurrence) is None
