"""Round 17 (r17-silent): a `for (;;)` loop left only by `if (c) break;` on a value the block read
repeats (its iteration 0 goes on past the break), so the pairs around its back edge are asked; the
barrier after the break, on the path to the next iteration, orders them."""

from __future__ import annotations

from tkcheck.checks import happens_before
from tkcheck.checks.analysis import Analysis
from tkcheck.checks.syncscope import _repeats
from tkcheck.engine import models_of

from conftest import ROOT

MEM = ROOT / "fixtures" / "memory"


def _analysis(path) -> Analysis:
    (m,) = models_of(str(path))
    return Analysis(m)


def test_a_loop_left_by_a_break_repeats():
    an = _analysis(MEM / "job_draw_reuse_good.cu")
    (lid,) = [lid for lid, lp in an.model.loops.items() if lp.infinite and lp.continues]
    assert _repeats(an, lid, ())


def test_the_next_draw_against_this_iteration_read_is_asked_not_passed():
    bad = happens_before.memory(_analysis(MEM / "job_draw_reuse_no_end_sync_bad.cu"))
    assert [(w.location.row, r.location.row) for w, r, _ in bad.undecided] == [(15, 13)]
    assert not bad.races  # the loop's own head (a spin on `job_s`) is an op between: undecided
    good = happens_before.memory(_analysis(MEM / "job_draw_reuse_good.cu"))
    assert not good.undecided and not good.races  # the barrier after the break orders the pair


def test_a_barrier_before_the_break_does_not_stand_for_one_after_it(tmp_path):
    """The end barrier moved above the break (it runs in every iteration, the work after it has
    none): still ordered; with no barrier after the read at all, undecided as in the bad one."""
    src = (MEM / "job_draw_reuse_no_end_sync_bad.cu").read_text()
    p = tmp_path / "early.cu"
    p.write_text(
        src.replace("        if (j >= NJOBS) break;\n", "        __syncthreads();\n        if (j >= NJOBS) break;\n")
    )
    assert not happens_before.memory(_analysis(p)).undecided
