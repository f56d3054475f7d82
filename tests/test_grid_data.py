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
