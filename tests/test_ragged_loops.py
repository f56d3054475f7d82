"""Loops each thread leaves at its own iteration (`checks/ragged.py`, round 10, r10-exits): the
happens-before engine pairs iteration i of one thread with iteration j of another, ordered by a
split barrier's phases, a warp-scoped op, or nothing."""

from tkcheck.checks import happens_before, ragged
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

GOOD = ROOT / "fixtures" / "memory" / "ragged_exit_split_barrier_good.cu"
BAD = ROOT / "fixtures" / "memory" / "ragged_exit_split_barrier_bad.cu"


def _facts(path, kernel):
    (m,) = [m for m in models_of(str(path), text=path.read_text()) if m.name == kernel]
    an = Analysis(m)
    return an, happens_before.memory(an)


def test_per_thread_trip_is_a_ragged_loop_and_its_phases_order_every_pair():
    an, mf = _facts(GOOD, "ragged_good")
    (lp,) = an.model.loops.values()
    assert not lp.thread_exit and lp.trip is not None and lp.trip.depends_on("thread")
    assert mf.races == [] and mf.undecided == []


def test_data_exit_marks_the_loop_and_its_body():
    an, _ = _facts(BAD, "own_exit")
    (lp,) = an.model.loops.values()
    assert lp.thread_exit
    body = [o for o in an.model.ops if o.loops == (lp.id,) and o.kind == "smem_access"]
    assert body and all(o.guard.exact_but_exits and o.guard.exits == (lp.id,) for o in body)
    assert all(ragged.ragged_loop(an, o) is lp for o in body)


def test_arrive_before_write_races_across_one_round():
    _, mf = _facts(BAD, "arrive_before_write")
    (race,) = mf.races
    rp = race.ragged
    assert rp is not None and rp.barrier == "bar" and rp.waited
    assert rp.second_iteration == rp.first_iteration + 1 and rp.first.access_mode == "write"
    assert rp.assumption is None  # a trip over the thread index: no launch assumption


def test_data_exit_race_states_its_assumption_and_warp_vote_is_narrow():
    _, mf = _facts(BAD, "own_exit")
    (race,) = mf.races
    assert race.ragged.assumption.startswith(f"when thread {race.ragged.second_thread} runs at least 2")
    assert not race.narrow
    _, mf = _facts(BAD, "warp_vote_exit")
    (race,) = mf.races
    assert race.narrow and race.narrow[0].api == "__any_sync"
    assert race.first_thread // 32 != race.second_thread // 32
