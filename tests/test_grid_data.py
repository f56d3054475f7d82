"""Round 14 (issue 25, branch r14-gridremote): global data ordered across blocks by grid barriers
only (checks/grid_data.py) -- the happens-before question over global memory with the block as
the extra dimension; a pair not decided is coverage, never a finding."""

from tkcheck.checks import grid_data
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

GRIDSYNC = ROOT / "fixtures" / "gridsync"


def _facts(path):
    (m,) = models_of(str(path))
    an = Analysis(m)
    return grid_data.grid_data(an)


def test_grid_barriers_order_the_histogram():
    f = _facts(GRIDSYNC / "histogram_two_phase_good.cu")
    assert not f.races and not f.undecided and "bins" in f.asked


def test_missing_grid_barrier_is_a_race_between_two_blocks():
    f = _facts(GRIDSYNC / "histogram_two_phase_bad.cu")
    (r,) = f.races
    assert r.base == "bins" and r.first_block != r.second_block
    assert r.first.kind == "global_store" and r.second.global_access.atomic == "add"


def test_level_loop_rotating_slots():
    """Three counter slots rotating over the levels of a loop left on data: ordered by the grid
    barrier at the end of each level (a barrier after the loop's `break` counts, `Loop.continues`);
    the clear of a slot read two levels later races once that barrier is gone."""
    f = _facts(GRIDSYNC / "level_slots_good.cu")
    assert not f.races and "tot" in f.asked
    f = _facts(GRIDSYNC / "level_slots_bad.cu")
    assert [r.base for r in f.races] == ["tot"] and f.races[0].later == -1


def test_a_claim_under_a_data_test_is_asked_without_it():
    """The raise runs under a test of data (`Guard.opaque`): asked without that test (a
    relaxation), the pairs it cannot meet are decided; one it may meet is undecided, never a race."""
    f = _facts(GRIDSYNC / "converge_flag_good.cu")
    assert not f.races and not f.undecided and f.asked == {"moved"}
    f = _facts(GRIDSYNC / "converge_flag_early_undecided.cu")
    assert not f.races and [(a.location.row, b.location.row) for a, b, _w in f.undecided] == [(17, 19)]


def test_grid_barrier_under_a_break_on_unordered_data_is_undecided():
    """A `break` before the grid barrier on a flag another block may raise in the same level:
    the per-block counts take the loaded value alike for every block, which is not established
    (coverage at the barrier), and no divergence is claimed."""
    from tkcheck.checks import wide_barriers

    for name, rows in (("converge_flag_good.cu", []), ("converge_flag_early_undecided.cu", [(20, 19)])):
        (m,) = models_of(str(GRIDSYNC / name))
        an = Analysis(m)
        got = [(s.location.row, ld.location.row) for s, ld, _w in wide_barriers.data_undecided(an)]
        assert got == rows and not wide_barriers.divergences(an), name


def test_a_cas_claim_is_a_free_choice():
    """An addition under `atomicCAS(&owner[key], -1, g) == -1` (every write of `owner` such a
    claim, its element data): the claim succeeds for some input, so the race of the addition with
    an unordered clear is proved and says so; with the grid barrier between, decided."""
    f = _facts(GRIDSYNC / "claim_count_good.cu")
    assert not f.races and not f.undecided and f.asked == {"total"}
    f = _facts(GRIDSYNC / "claim_count_bad.cu")
    (r,) = f.races
    assert r.claims and r.base == "total" and r.element == "total[0]"


def test_a_race_forward_across_iterations():
    """The read of step k and block 0's store of a later step name one element (seq[k + 1]); the
    store never meets a later read: the pair is asked from the earlier access to a later
    iteration of the later one too, where no grid barrier lies in the body."""
    assert not _facts(GRIDSYNC / "read_ahead_good.cu").races
    (r,) = _facts(GRIDSYNC / "read_ahead_bad.cu").races
    assert r.later == -1 and r.first.kind == "global_load" and r.second.kind == "global_store"
