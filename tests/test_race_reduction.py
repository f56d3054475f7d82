"""The race search's partial-order reduction (`protocol._LocalSteps`) is exact: on kernels with
races and without, the reduced search gives the unreduced one's answer (the same status, a race
of the same two accesses), over no more states. The unreduced search (`races(..., reduce=False)`)
exists for this comparison only."""

import pytest

from tkcheck.checks import protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

MEM = ROOT / "fixtures" / "memory"


def _answer(ex: protocol.Exploration):
    r = ex.race
    # the witness class: the two accesses (their lines) and the array; the element and the
    # iteration may be another instance of the same pair (the reduced search reaches states in
    # another breadth-first order)
    pair = None if r is None else (frozenset({r.ea.op.location.row, r.eb.op.location.row}), r.ea.mem[0])
    return ex.status, ex.reason, pair


@pytest.mark.parametrize(
    ("fixture", "name", "race"),
    [
        ("nbar_refill_good.cu", "box", False),
        ("nbar_refill_bad.cu", "box", True),
        ("syncwarp_release_good.cu", "scale_s", False),
        ("syncwarp_release_bad.cu", "scale_s", True),
        ("turn_handover_good.cu", None, False),
        ("turn_handover_bad.cu", None, None),
        ("mbar_scalar_after_arrive_good.cu", None, None),
        ("mbar_scalar_after_arrive_bad.cu", None, None),
        ("mbar_scalar_read_after_release_bad.cu", None, None),
        ("block_reduce_slots_good.cu", None, None),
        ("block_reduce_slots_bad.cu", None, None),
    ],
)
def test_reduced_race_search_answers_as_the_unreduced(fixture, name, race):
    path = MEM / fixture
    for m in models_of(str(path), text=path.read_text()):
        names = (
            [name]
            if name
            else sorted({o.buffer.name for o in m.ops if o.buffer is not None and o.kind == "smem_access"})
        )
        for nm in names:
            a = protocol.races(Analysis(m), frozenset([nm]))
            b = protocol.races(Analysis(m), frozenset([nm]), reduce=False)
            assert _answer(a) == _answer(b), (fixture, nm)
            assert a.states <= b.states
            if race is not None and name:
                assert (a.race is not None) == race


def test_pingpong_race_search_completes():
    """The clean ping-pong scan: the unreduced search stops at its bound (50,001 states, undecided);
    the reduced one explores the instance to the end, without a race on `carry_s` (the ordered
    section is handed over through the turn barriers), in a few thousand states."""
    path = ROOT / "corpus" / "idioms2" / "pingpong_scan.cu"
    (m,) = models_of(str(path), text=path.read_text())
    ex = protocol.races(Analysis(m), frozenset(["carry_s"]))
    assert ex.status == "explored" and ex.race is None, ex.reason
    assert ex.states < 5000


def _touched_reference(self, state, fi, eidx, o, writes_only):
    """`_LocalSteps._touched_while_held` by its definition: `_runs` over `_reach_reference`."""
    rc = self._reach_reference(state, fi, eidx)[0]
    return any(
        self._runs(j, o, state[0][j], rc[j], writes_only=writes_only, arrivals=True)
        for j in range(len(self.roles))
        if j != fi
    )


@pytest.mark.parametrize(
    "path",
    [
        MEM / "nbar_refill_good.cu",
        MEM / "nbar_id_collision_bad.cu",
        MEM / "syncwarp_release_good.cu",
        MEM / "mbar_scalar_after_arrive_good.cu",
        MEM / "mbar_scalar_read_after_release_bad.cu",
        ROOT / "corpus" / "idioms2" / "pingpong_scan.cu",
    ],
    ids=lambda p: p.name,
)
def test_compiled_reach_is_the_reference_on_every_state(path, monkeypatch):
    """`_LocalSteps._reach` (the roles' events compiled to tuples) and `_touched_while_held` (the
    same fixpoint, stopped at the first step on the element; issue 29) answer as their
    definitions on every state and held role the search asks about, and the search then visits
    the same states in the same number of steps as with the definitions."""
    steps = protocol._LocalSteps
    fast, fast_touched = steps._reach, steps._touched_while_held
    asked = []

    def both(self, state, fi, eidx):
        got = fast(self, state, fi, eidx)
        assert got == self._reach_reference(state, fi, eidx), (path.name, state, fi)
        asked.append("reach")
        return got

    def both_touched(self, state, fi, eidx, o, writes_only):
        got = fast_touched(self, state, fi, eidx, o, writes_only)
        assert got == _touched_reference(self, state, fi, eidx, o, writes_only), (path.name, state, fi, o)
        asked.append("touched")
        return got

    for m in models_of(str(path), text=path.read_text()):
        names = sorted({o.buffer.name for o in m.ops if o.buffer is not None and o.kind == "smem_access"})
        for nm in names:
            with monkeypatch.context() as mp:
                mp.setattr(steps, "_reach", steps._reach_reference)
                mp.setattr(steps, "_touched_while_held", _touched_reference)
                ref = protocol.races(Analysis(m), frozenset([nm]))
            with monkeypatch.context() as mp:
                mp.setattr(steps, "_reach", both)
                mp.setattr(steps, "_touched_while_held", both_touched)
                got = protocol.races(Analysis(m), frozenset([nm]))
            assert (_answer(got), got.states, got.steps) == (_answer(ref), ref.states, ref.steps), (path.name, nm)
    assert asked, f"{path.name}: the search asked neither: the test compares nothing"


@pytest.mark.parametrize(
    "path",
    [
        MEM / "nbar_refill_bad.cu",
        MEM / "syncwarp_release_good.cu",
        MEM / "mbar_scalar_read_after_release_bad.cu",
        ROOT / "corpus" / "idioms2" / "pingpong_scan.cu",
    ],
    ids=lambda p: p.name,
)
def test_race_at_with_its_memo_answers_as_without_on_every_state(path, monkeypatch):
    """`_race_at`'s memo of a search (issue 29, round 15) gives, on every state the search asks
    about, the answer computed from scratch -- the same race (the same two events, threads and
    element) or none -- and the search is then the one made without it (status, race, states,
    steps). The memo must have served some state: else this compares nothing."""
    plain = protocol._race_at
    asked = []

    def both(roles, pcs, marks=(), program_order=False, memo=None):
        assert memo is not None, "the search keeps a memo"
        served = len(memo)
        got = plain(roles, pcs, marks, program_order, memo)
        assert got == plain(roles, pcs, marks, program_order), (path.name, pcs, marks)
        asked.append(len(memo) == served)  # True: answered from the memo alone
        return got

    def without(roles, pcs, marks=(), program_order=False, memo=None):
        return plain(roles, pcs, marks, program_order)

    for m in models_of(str(path), text=path.read_text()):
        names = sorted({o.buffer.name for o in m.ops if o.buffer is not None and o.kind == "smem_access"})
        for nm in names:
            with monkeypatch.context() as mp:
                mp.setattr(protocol, "_race_at", without)
                ref = protocol.races(Analysis(m), frozenset([nm]))
            with monkeypatch.context() as mp:
                mp.setattr(protocol, "_race_at", both)
                got = protocol.races(Analysis(m), frozenset([nm]))
            assert (_answer(got), got.states, got.steps) == (_answer(ref), ref.states, ref.steps), (path.name, nm)
    assert any(asked), f"{path.name}: no state was answered from the memo"
