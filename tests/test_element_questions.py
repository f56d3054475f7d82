"""The race search's element questions under a small solver budget (issue 29): a budget bounds the
work. A question z3 gives up on at the budget is asked of z3 once per check, whichever of its two
names for a spent rlimit it answers with, and the race search asks whether two index components
differ once per pair of components, not once per pair of thread classes."""

from __future__ import annotations

from tkcheck import solver
from tkcheck.checks import happens_before
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.model import expr as E

from conftest import ROOT

MEMORY = ROOT / "fixtures" / "memory"


def _parity_pair() -> E.Expr:
    """`(it % 2) != ((it % 2) ^ 1)`: true for every `it`, which z3 does not prove in 3000 steps (it
    answers "canceled", not "max. resource limit exceeded", for this mix of `%` and `^`)."""
    it = E.Var("k0", E.LOOP)
    cur = E.binop("%", it, E.Const(2))
    return E.binop("!=", cur, E.binop("^", cur, E.Const(1)))


def test_a_question_the_budget_stops_runs_z3_once_per_check(monkeypatch):
    calls = []
    real = solver.checked

    def counted(s, *a):
        calls.append(1)
        return real(s, *a)

    monkeypatch.setattr(solver, "checked", counted)
    pred = _parity_pair()
    for budget in (1, 3000):
        calls.clear()
        with solver.session(budget=budget):
            solver.fresh_context()
            mark = solver.inconclusive_count()
            first = solver.always(pred)
            second = solver.always(pred)
            unknown = solver.inconclusive_count() - mark
        assert first is second, budget
        # decided or not, the second asking makes no z3 run; an unknown one counts each time
        assert len(calls) == 1, (budget, len(calls))
        assert unknown == (2 if first is None else 0), budget


def _memory_at(path, name, budget):
    (m,) = [m for m in models_of(str(path)) if m.name == name]
    with solver.session(budget=budget):
        solver.fresh_context()
        return happens_before.memory(Analysis(m))


def test_the_race_search_asks_each_pair_of_index_components_once(monkeypatch):
    """fixtures/memory/parity_double_buffer_good.cu: 256 x 256 thread classes whose elements are
    `row[it & 1][t +- 1]` (read) and `row[(it & 1) ^ 1][t]` (write) in one iteration. Before issue
    29's change each class pair asked z3 whether the halves differ: 131,072 questions at budget 1
    and 195,840 at the default; at budget 3000 each was a z3 run, and the check did not finish in
    minutes. Counted, not timed."""
    asked = []
    real = solver.differ_always

    def counted(a, b, *rest):
        asked.append((a, b))
        return real(a, b, *rest)

    monkeypatch.setattr(solver, "differ_always", counted)
    path = MEMORY / "parity_double_buffer_good.cu"
    for budget in (1, 3000, None):
        asked.clear()
        f = _memory_at(path, "parity_sweep", budget)
        assert not f.races, budget
        assert len(asked) <= 8, (budget, len(asked))
        if budget is None:
            assert not f.undecided  # the halves differ in every iteration: proved at the default
        else:
            assert f.undecided, budget  # not proved at a spent budget: undecided, never a pass


def test_the_in_place_sweep_is_still_a_race():
    f = _memory_at(MEMORY / "parity_double_buffer_bad.cu", "parity_sweep_same_half", None)
    assert f.races
