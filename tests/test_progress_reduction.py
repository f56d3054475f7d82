"""The deadlock search's partial-order reduction (`protocol._search(stepwise=True)`, the second
try of `_explore_with` past the full search's bound) answers as the full search: on every
deadlock and progress fixture, good and bad, the reduced search from the same roles reaches a
deadlock exactly when the full one does, and where the full one decides, so does it. A deadlock
it reaches is one of the full model (its trace is a path of the full search)."""

import pytest

from tkcheck.checks import protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

FIXTURES = sorted((ROOT / "fixtures" / "deadlock").glob("*.cu")) + sorted((ROOT / "fixtures" / "progress").glob("*.cu"))


def _searched(ex: protocol.Exploration, stepwise: bool) -> protocol.Exploration:
    out = protocol.Exploration()
    protocol._search(out, ex.roles, ex.counts, stepwise=stepwise)
    return out


def _replay(ex: protocol.Exploration, trace) -> tuple:
    """The state the trace's steps lead to, each step run by the full search's own step
    (`_run_role`, one event at a time): the trace is a path of the unreduced model."""
    elems = sorted(ex.counts)
    eidx = {e: i for i, e in enumerate(elems)}
    bars = tuple((0, ex.counts[e], 0, 0) for e in elems)
    state = (tuple(0 for _ in ex.roles), tuple(-1 for _ in ex.roles), bars, ())
    for ri, e, _ in trace:
        r = ex.roles[ri]
        assert r.events[state[0][ri]] is e
        gone = sum(len(x.threads) for i, x in enumerate(ex.roles) if state[0][i] >= len(x.events) and x.cta == r.cta)
        res = protocol._run_role(ri, r, state, eidx, gone, ex.counts, elems, split=True, stepwise=True)
        assert res is not None
        state = res[0]
    return state


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_reduced_deadlock_search_answers_as_the_full_one(path):
    for m in models_of(str(path), text=path.read_text()):
        ex = protocol._explore_model(Analysis(m))
        if not ex.roles or ex.rounds is not None:
            continue  # (not unrolled, or a data-exit stream explored round by round)
        full = _searched(ex, stepwise=False)
        red = _searched(ex, stepwise=True)
        if full.status == "explored":
            assert red.status == "explored", (path.name, m.name, red.reason)
            assert (red.deadlock is None) == (full.deadlock is None), (path.name, m.name)
        if red.deadlock is not None:
            end = _replay(ex, red.deadlock.trace)
            blocked = {i for i, _ in red.deadlock.blocked}
            assert blocked == {i for i, r in enumerate(ex.roles) if end[0][i] < len(r.events)}


def test_independent_pipelines_past_the_full_bound_are_decided():
    """Six warp pairs with rings of their own: the full search stops at its bound (undecided);
    with the reduction, every role finishes, and the pair made to wait once more deadlocks."""
    good = ROOT / "fixtures" / "progress" / "independent_pipelines_good.cu"
    (m,) = models_of(str(good), text=good.read_text())
    ex = protocol._explore_model(Analysis(m))
    assert ex.status == "explored" and ex.deadlock is None
    full = _searched(ex, stepwise=False)
    assert full.status == "unknown" and full.reason == "exploration bound reached"
    bad = ROOT / "fixtures" / "progress" / "independent_pipelines_bad.cu"
    (m,) = models_of(str(bad), text=bad.read_text())
    ex = protocol._explore_model(Analysis(m))
    red = _searched(ex, stepwise=True)
    assert red.status == "explored" and red.deadlock is not None
    ((ri, e),) = red.deadlock.blocked
    assert e.kind == "wait" and e.elem == ("full", 5, 1)


def test_groups_of_dependent_roles_are_decided_by_persistent_sets():
    """Six groups of three warps (two producers arriving on one counted element, a consumer):
    no single warp's step commutes with everything, so one warp at a time did not reduce and the
    search stopped at its bound; a persistent set of one group's warps (`_LocalSteps.persistent`)
    decides the good kernel, and still reaches the bad one's hang, a path of the full model."""
    good = ROOT / "fixtures" / "progress" / "paired_producer_groups_good.cu"
    (m,) = models_of(str(good), text=good.read_text())
    ex = protocol._explore_model(Analysis(m))
    assert ex.status == "explored" and ex.deadlock is None, ex.reason
    full = _searched(ex, stepwise=False)
    assert full.status == "unknown" and full.reason == "exploration bound reached"
    bad = ROOT / "fixtures" / "progress" / "paired_producer_groups_bad.cu"
    (m,) = models_of(str(bad), text=bad.read_text())
    ex = protocol._explore_model(Analysis(m))
    red = _searched(ex, stepwise=True)
    assert red.status == "explored" and red.deadlock is not None
    ((ri, e),) = red.deadlock.blocked
    assert e.kind == "wait" and e.elem == ("freed", 5, 1)
    end = _replay(ex, red.deadlock.trace)
    assert [i for i, r in enumerate(ex.roles) if end[0][i] < len(r.events)] == [ri]


def test_persistent_set_is_closed_under_interaction():
    """On every state the reduced search visits on the good fixture, the set taken has an enabled
    role and no role outside it has, in its remaining program, an event on an object the next
    event of a role inside it touches (the closure the persistence argument needs)."""
    good = ROOT / "fixtures" / "progress" / "paired_producer_groups_good.cu"
    (m,) = models_of(str(good), text=good.read_text())
    ex = protocol._explore_model(Analysis(m))
    seen = []
    orig = protocol._LocalSteps.persistent

    def spy(self, state, enabled):
        got = orig(self, state, enabled)
        seen.append((self, state, set(enabled), got))
        return got

    protocol._LocalSteps.persistent = spy
    try:
        _searched(ex, stepwise=True)
    finally:
        protocol._LocalSteps.persistent = orig
    assert seen
    for por, state, enabled, got in seen:
        assert got and got <= enabled
        pcs = state[0]
        inside = {i for i in range(len(ex.roles)) if i in got}
        objs = {protocol._footprint(ex.roles[i].events[pcs[i]]) for i in inside}
        for j, r in enumerate(ex.roles):
            if j in inside or pcs[j] >= len(r.events) or j not in enabled:
                continue
            mine = {protocol._footprint(e) for e in r.events[pcs[j] :]}
            assert not (objs & mine - {None}), (j, objs & mine)
