"""Pointer variables a loop changes (issue 25, round 15): a local pointer swapped, rotated,
advanced or set by a branch in a loop body is carried round the loop as a value the walk
follows, or as an unknown pointer; an access through an unknown pointer is an event of unknown
location whose ordering is an undecided obligation at the user's line -- never an access of the
value the pointer had before the loop (a silent, unsound pass), never no event, never a finding."""

from __future__ import annotations

import pytest

from tkcheck.engine import CheckOptions, check_file, models_of
from tkcheck.evaluate import all_codes
from tkcheck.model import ir

from conftest import ROOT

PTRS = ROOT / "fixtures" / "pointers"
MEMORY = ROOT / "fixtures" / "memory"


def _check(path):
    res = check_file(str(path), CheckOptions(enabled=all_codes()))
    (cov,) = res.coverage
    return res, cov


@pytest.mark.parametrize(
    "path, rows, name",
    [
        (PTRS / "rotation3_undecided.cu", {13, 20}, "cur"),
        (PTRS / "conditional_swap_undecided.cu", {17}, "lo"),
        (PTRS / "shared_stride_undecided.cu", {9, 10}, "p"),
        (PTRS / "global_pingpong_undecided.cu", {14}, "src"),
        (MEMORY / "swapped_pointers_bad.cu", {14, 20}, "src"),
        (MEMORY / "swapped_pointers_good.cu", {9, 15}, "src"),
    ],
    ids=lambda v: v.name if hasattr(v, "name") else None,
)
def test_an_access_through_a_pointer_the_loop_changes_is_undecided(path, rows, name):
    res, cov = _check(path)
    assert not res.findings
    assert cov.analysed and cov.obligations > cov.obligations_decided
    got = {int(u.location.split(":")[1]) for u in cov.unknowns if "its target is not known" in u.why}
    assert got == rows, [(u.location, u.why) for u in cov.unknowns]
    assert any(f"through `{name}`" in u.why for u in cov.unknowns)


def test_the_swapped_pointers_are_no_longer_read_as_their_values_before_the_loop():
    # round 14's unsound miss: every iteration read `src` as `ping` and `dst` as `pong`
    (m,) = models_of(str(MEMORY / "swapped_pointers_bad.cu"))
    in_loop = [o for o in m.ops if o.loops and o.kind in (ir.SMEM_ACCESS, ir.UNKNOWN_ACCESS)]
    assert in_loop and all(o.kind == ir.UNKNOWN_ACCESS for o in in_loop)
    assert {o.buffer.name for o in in_loop if o.buffer is not None} == {"src", "dst"}
    # the candidates told: the two arrays the pair swaps
    assert all({r.name for r in o.operands} == {"ping", "pong"} for o in in_loop)


def test_a_global_pointer_advanced_by_a_stride_is_followed():
    (m,) = models_of(str(PTRS / "global_stride_good.cu"))
    assert not [o for o in m.ops if o.kind == ir.UNKNOWN_ACCESS]
    bases = {o.global_access.base for o in m.ops if o.global_access is not None}
    assert bases == {"in", "out"}
    res, cov = _check(PTRS / "global_stride_good.cu")
    assert not res.findings and not cov.unknowns


def test_swapped_global_pointers_make_events_not_a_silent_gap():
    # idioms12's dissemination barrier: the phase's accesses through `src` / `dst` made no op
    (m,) = models_of(str(ROOT / "corpus" / "idioms12" / "dissemination_barrier.cu"))
    unk = [o for o in m.ops if o.kind == ir.UNKNOWN_ACCESS]
    assert {(o.access.mode, o.buffer.name) for o in unk} == {("read", "src"), ("write", "dst")}
    assert all(o.location.row == 50 for o in unk)
