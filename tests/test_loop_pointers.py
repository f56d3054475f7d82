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
        (PTRS / "conditional_swap_undecided.cu", {17}, "lo"),
        (PTRS / "shared_stride_undecided.cu", {9, 10}, "p"),
        (PTRS / "nested_swap_undecided.cu", {12, 18}, "src"),
        (PTRS / "ternary_thread_undecided.cu", {9}, "threadIdx.x < 32 ? lo : hi"),
    ],
    ids=lambda v: v.name if hasattr(v, "name") else None,
)
def test_an_access_through_a_pointer_the_loop_changes_unsolved_is_undecided(path, rows, name):
    res, cov = _check(path)
    assert not res.findings
    assert cov.analysed and cov.obligations > cov.obligations_decided
    got = {int(u.location.split(":")[1]) for u in cov.unknowns if "its target is not known" in u.why}
    assert got == rows, [(u.location, u.why) for u in cov.unknowns]
    assert any(f"through `{name}`" in u.why for u in cov.unknowns)
    (m,) = models_of(str(path))
    assert {o.location.row for o in m.ops if o.kind == ir.UNKNOWN_ACCESS} == rows


@pytest.mark.parametrize(
    "path",
    [
        MEMORY / "swapped_pointers_good.cu",
        PTRS / "rotation3_good.cu",
        PTRS / "global_pingpong_good.cu",
        PTRS / "ternary_choice_good.cu",
    ],
    ids=lambda p: p.name,
)
def test_a_rotation_followed_per_residue_decides_the_good_kernels(path):
    res, cov = _check(path)
    assert not res.findings
    assert cov.obligations and cov.obligations == cov.obligations_decided, [u.why for u in cov.unknowns]


def test_the_swapped_pointers_are_followed_per_parity():
    # round 14's unsound miss: every iteration read `src` as `ping` and `dst` as `pong`
    (m,) = models_of(str(MEMORY / "swapped_pointers_bad.cu"))
    in_loop = [o for o in m.ops if o.loops and o.kind == ir.SMEM_ACCESS]
    stores = {(o.buffer.name, str(o.guard.uniform[-1])) for o in in_loop if o.access_mode == "write"}
    assert stores == {("pong", "((s % 2) == 0)"), ("ping", "((s % 2) == 1)")}
    assert not [o for o in m.ops if o.kind == ir.UNKNOWN_ACCESS]
    # after the loop `src` names the array of the trip count's parity: one load per option
    after = [o for o in m.ops if not o.loops and o.kind == ir.SMEM_ACCESS and o.location.row == 20]
    assert sorted(o.buffer.name for o in after) == ["ping", "pong"]
    assert all(len(o.guard.uniform) == 1 and "steps" in str(o.guard.uniform[0]) for o in after)


def test_a_rotation_of_three_is_followed_modulo_three():
    (m,) = models_of(str(PTRS / "rotation3_bad.cu"))
    writes = {o.buffer.name: str(o.guard.uniform[-1]) for o in m.ops if o.loops and o.access_mode == "write"}
    assert writes == {"s2": "((s % 3) == 0)", "s0": "((s % 3) == 1)", "s1": "((s % 3) == 2)"}


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
    acc = [o for o in m.ops if o.location.row == 50 and o.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_STORE)]
    got = {(o.kind, o.global_access.base, str(o.guard.uniform[-1])) for o in acc if o.global_access is not None}
    assert got == {
        (ir.GLOBAL_LOAD, "a", "((p % 2) == 0)"),
        (ir.GLOBAL_LOAD, "b", "((p % 2) == 1)"),
        (ir.GLOBAL_STORE, "b", "((p % 2) == 0)"),
        (ir.GLOBAL_STORE, "a", "((p % 2) == 1)"),
    }


def test_a_pointer_chosen_by_a_uniform_condition_is_one_access_per_option():
    # `transpose ? a : b` used to be an opaque value: the store through it made no event
    (m,) = models_of(str(PTRS / "ternary_choice_bad.cu"))
    stores = [o for o in m.ops if o.kind == ir.SMEM_ACCESS and o.access_mode == "write"]
    assert sorted(o.buffer.name for o in stores) == ["a", "b"]
    assert all(len(o.guard.uniform) == 1 and "transpose" in str(o.guard.uniform[0]) for o in stores)


@pytest.mark.parametrize("bad", [False, True], ids=["good", "bad"])
def test_a_copy_of_a_shared_element_is_a_value_not_a_pointer(bad):
    # round 17: `float m = c ? part[i] : 0.0f` held the element itself, so the shuffle loop's
    # `m = fmaxf(...)` made `m` a pointer of unknown target and `*(unsigned *)&m` a shared load
    # through it (undecided); the copy is a value: one read of the element at its declaration
    path = PTRS / f"element_copy_{'bad' if bad else 'good'}.cu"
    m = models_of(str(path))[0]
    assert not [o for o in m.ops if o.kind == ir.UNKNOWN_ACCESS]
    reads = [o for o in m.ops if o.kind == ir.SMEM_ACCESS and o.access_mode == "read"]
    assert [(o.buffer.name, o.location.row) for o in reads] == [("part", 12 if bad else 13)]
    res = check_file(str(path), CheckOptions(enabled=all_codes()))
    for cov in res.coverage:
        assert cov.obligations and cov.obligations == cov.obligations_decided, [u.why for u in cov.unknowns]
    assert [f.code for f in res.findings] == (["TK408"] if bad else [])


def test_the_address_of_a_copy_is_no_memory():
    # `*(unsigned *)&first` of `float first = part[0]`: a read of the copy, no access (before
    # round 17: a second read of the element, or, with the copy a value, a global load)
    m = models_of(str(PTRS / "element_copy_good.cu"))[1]
    row = [o for o in m.ops if o.location.row == 31]
    assert [o.kind for o in row] == [ir.GLOBAL_STORE]
    reads = [o.location.row for o in m.ops if o.kind == ir.SMEM_ACCESS and o.access_mode == "read"]
    assert reads == [30]
