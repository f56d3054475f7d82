"""Round 9 (r9-gridbar, issue 25): a hand-written grid barrier as primitives -- atomics on bare
kernel pointers are events, the counter's instances followed over the grid size
(checks/grid_barriers.py), thread-private global data (happens_before.thread_private)."""

from tkcheck import solver
from tkcheck.checks import grid_barriers as G
from tkcheck.checks import happens_before as H
from tkcheck.checks import protocol as P
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

GOOD = ROOT / "fixtures" / "gridbar" / "epoch_barrier_good.cu"
BAD = ROOT / "fixtures" / "gridbar" / "epoch_barrier_bad.cu"
COOP = ROOT / "corpus" / "idioms7" / "coop_sense_barrier.cu"


def _an(path, name=None):
    ms = models_of(str(path))
    m = next(m for m in ms if name is None or m.name == name)
    return Analysis(m)


def test_the_clean_barrier_is_proved_left_by_every_block():
    for path in (GOOD, COOP):
        an = _an(path)
        with solver.session():
            facts = G.barriers(an)
            spins = P.spin_waits(an)
        assert len(facts.barriers) == 2 and not facts.hangs and not facts.late_resets
        assert len(spins.proved) == 2 and not spins.undecided
        # the arrival is an event whose old value is the guard's Var
        arr = facts.barriers[0].arrive
        assert arr.global_access.atomic == "add" and arr.global_access.base in ("arrived", "count")


def test_a_counter_never_reset_hangs_at_the_second_instance():
    an = _an(BAD, "no_reset")
    with solver.session():
        (h,) = G.barriers(an).hangs
    assert h.iteration == 1 and str(h.start) == "gridDim.x"


def test_grid_stride_data_is_thread_private_and_slots_are_not():
    an = _an(COOP)
    with solver.session():
        assert H.thread_private(an, "y") is True
        assert H.thread_private(an, "partial") is False


def test_a_sense_flag_is_followed_by_its_value():
    good = _an(ROOT / "fixtures" / "gridbar" / "sense_barrier_good.cu")
    with solver.session():
        facts = G.barriers(good)
        assert len(facts.barriers) == 2 and all(b.target is not None for b in facts.barriers)
        assert len(facts.proved) == 2 and not facts.hangs
    bad = _an(ROOT / "fixtures" / "gridbar" / "sense_barrier_bad.cu", "sense_const")
    with solver.session():
        (h,) = G.barriers(bad).hangs
    assert str(h.wrote) == "1" and str(h.barrier.target) == "0" and str(h.before) == "1"
