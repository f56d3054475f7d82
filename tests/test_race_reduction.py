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


def test_a_run_of_steps_is_what_the_steps_make_one_by_one():
    """`_runs_of` (issue 29, round 17): from every position of a run of steps that cannot stop
    `_reach` (writes, bar.arrives, accesses), the run's tuple moves to the role's next wait / sync
    / exit and makes the writes and bar.arrives of the steps from that position on, in order; a
    wait, a sync or an exit stays itself."""
    K = protocol
    evs = [
        (K._K_OTHER,),
        (K._K_WRITE, "full"),
        (K._K_BARRIVE, 3, 64),
        (K._K_OTHER,),
        (K._K_WAIT, 0, 1, "full"),
        (K._K_WRITE, "empty"),
        (K._K_SYNC, 1, 128, True, 32),
        (K._K_BARRIVE, 3, 32),
        (K._K_WRITE, "empty"),
        (K._K_BARRIVE, 4, 32),
        (K._K_EXIT,),
        (K._K_OTHER,),
    ]
    blockers = (K._K_WAIT, K._K_SYNC, K._K_EXIT)
    runs = K._runs_of(evs)
    assert len(runs) == len(evs)
    seen_mid_run = False
    for p, e in enumerate(evs):
        if e[0] in blockers:
            assert runs[p] == e
            continue
        q = next((j for j in range(p, len(evs)) if evs[j][0] in blockers), len(evs))
        writes = tuple(x[1] for x in evs[p:q] if x[0] == K._K_WRITE)
        barrives = tuple((x[1], x[2]) for x in evs[p:q] if x[0] == K._K_BARRIVE)
        kind, nxt, ws, wi, bs, bi = runs[p]
        assert (kind, nxt, ws[wi:], bs[bi:]) == (K._K_RUN, q, writes, barrives), p
        seen_mid_run |= wi > 0 or bi > 0
    assert seen_mid_run


def test_compiled_reach_is_the_reference_on_random_programs():
    """`_reach` (runs of steps made at once, `_runs_of`) against `_reach_reference` (one event at
    a time, the definition) on made-up roles and states: positions inside a run of writes and
    bar.arrives, waits on elements written before and after a role's position, syncs at and past
    an arrival mark. The searches of real kernels (the test above) need not meet every such
    state; this one does (seeded: the same programs each run)."""
    import random
    from types import SimpleNamespace as NS

    rng = random.Random(29)
    elems = ["a", "b", "c"]
    eidx = {e: i for i, e in enumerate(elems)}

    def event():
        k = rng.choice(["wait", "wait", "sync", "barrive", "arrive", "expect", "mem", "mem", "exit"])
        if k == "wait":
            return NS(kind=k, elem=rng.choice(elems), parity=rng.randrange(2))
        if k == "sync":
            return NS(kind=k, sync=(rng.randrange(2), rng.choice([32, 64, 96])), block=rng.random() < 0.3, arrivals=32)
        if k == "barrive":
            return NS(kind=k, sync=(rng.randrange(2), 0), arrivals=32)
        if k in ("arrive", "expect"):
            return NS(kind=k, elem=rng.choice(elems))
        return NS(kind=k)

    compared = 0
    for _ in range(60):
        roles = [NS(events=[event() for _ in range(rng.randrange(1, 12))], threads=range(32)) for _ in range(3)]
        steps = protocol._LocalSteps.__new__(protocol._LocalSteps)
        steps.roles, steps.sizes = roles, [32] * len(roles)
        steps._code = steps._code_eidx = None
        for _ in range(40):
            pcs = tuple(rng.randrange(len(r.events) + 1) for r in roles)
            marks = tuple(rng.choice([-1, -1, 0, 1]) for _ in roles)
            bars = tuple((rng.randrange(3), 1, 0, 0) for _ in elems)
            syncs = tuple((sid, (rng.choice([0, 32, 64]), rng.randrange(3))) for sid in range(2) if rng.random() < 0.6)
            state = (pcs, marks, bars, syncs)
            for fi in range(len(roles)):
                assert steps._reach(state, fi, eidx) == steps._reach_reference(state, fi, eidx), (state, fi)
                compared += 1
    assert compared == 60 * 40 * 3
