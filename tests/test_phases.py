"""Phase reasoning (TK303-TK307): closed forms of phase idioms, proofs, counterexamples."""

import tomllib
from pathlib import Path

import pytest

from tkcheck import registry
from tkcheck.checks import phases
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.model import expr as E

from conftest import ROOT

ALL = frozenset(r.code for r in registry.all_rules())
PHASE_RULES = {"TK303", "TK304", "TK305", "TK306", "TK307"}


def _models(path: Path, text: str | None = None):
    text = path.read_text() if text is None else text
    return models_of(str(path), text=text)


def _phases(path: Path, text: str | None = None):
    out = {}
    for m in _models(path, text):
        for wp in phases.phases(Analysis(m)):
            out[(m.name, wp.op.location.row)] = wp
    return out


@pytest.mark.parametrize(
    "name",
    [
        "good_ring_div_parity",
        "good_tic_toc",
        "good_stage_wrap_idiom",
        "good_phase_xor_condition",
        "good_pre_arrived_tokens",
    ],
)
def test_correct_idioms_are_proved_not_just_unknown(name):
    wps = _phases(ROOT / "fixtures" / "completion" / f"{name}.cu")
    assert wps, "no wait sites found"
    assert all(wp.status == "ok" for wp in wps.values()), {k: (w.status, w.reason) for k, w in wps.items()}


def test_corpus_ring_and_attention_waits_proved():
    for kernel in ("gemm_ring.cu", "attn_fwd.cu"):
        wps = _phases(ROOT / "corpus" / "hopper" / kernel)
        assert wps and all(w.status == "ok" for w in wps.values()), {k: (w.status, w.reason) for k, w in wps.items()}


def test_producer_fresh_barrier_offset_and_pre_arrivals():
    wps = _phases(ROOT / "fixtures" / "completion" / "good_pre_arrived_tokens.cu")
    producer = [w for w in wps.values() if w.barrier == "empty"][0]
    assert (producer.offset, producer.pre) == (-1, 1)
    wps = _phases(ROOT / "fixtures" / "completion" / "good_ring_div_parity.cu")
    producer = [w for w in wps.values() if w.barrier == "empty"][0]
    assert (producer.offset, producer.pre) == (-1, 0)


def test_smallest_counterexample():
    wps = _phases(ROOT / "fixtures" / "completion" / "bad_iteration_parity.cu")
    bad = [w for w in wps.values() if w.status == "mismatch"]
    assert len(bad) == 1
    assert bad[0].witness["iteration"] == 1 and bad[0].witness["stage"] == 1
    assert (bad[0].witness["parity_waited"], bad[0].witness["parity_due"]) == (1, 0)


def test_phase_flip_closed_forms():
    # tic ^= 1; if (tic == 0) phase ^= 1  ->  phase(k) = (k / 2) % 2
    wps = _phases(ROOT / "corpus" / "hopper" / "attn_fwd.cu")
    w = [w for w in wps.values() if w.barrier == "kv_full"][0]
    k = next(v for v in w.op.parity.free_vars() if v.kind == E.LOOP)
    assert [w.op.parity.eval({k.name: i}) for i in range(6)] == [0, 0, 1, 1, 0, 0]


def test_lcf_bitfield_closed_form():
    from tkcheck.recurrence import phase_bit, solve_dependent

    start = E.Var("bits@start", E.LOOP)
    ring = E.Var("ring@start", E.LOOP)
    end = E.binop("^", start, E.binop("<<", E.Const(1), E.binop("+", ring, E.Const(16))))
    f = solve_dependent(
        "bits",
        start,
        end,
        E.Const(0xFFFF0000),
        {"ring": lambda k: E.binop("%", k, E.Const(4))},
        {"ring": ring, "bits": start},
    )
    assert f is not None
    for k in range(12):
        bits = f(E.Const(k))
        bit = phase_bit(bits, E.Const(k % 4 + 16))
        assert bit.eval({}) == (1 ^ (k // 4) % 2)  # starts at 1, flips once per round
        assert bits.eval({}) == _simulate(k)


def _simulate(k):
    b = 0xFFFF0000
    for j in range(k):
        b ^= 1 << (j % 4 + 16)
    return b


def _mutations():
    out = []
    for f in ("mutations.toml", "mutations_completion.toml"):
        for mu in tomllib.load(open(ROOT / "corpus" / f, "rb"))["mutation"]:
            if set(mu["rules"]) & PHASE_RULES:
                out.append(mu)
    return out


@pytest.mark.parametrize("mu", _mutations(), ids=lambda m: m["id"])
def test_planted_phase_bugs_reported(mu, corpus_checks):
    src = (ROOT / "corpus" / mu["kernel"]).read_text()
    assert src.count(mu["find"]) == 1
    # the mutant as tests/test_corpus.py checks it (`tkcheck eval`'s check, every rule): one per session
    (m,) = [m for m in corpus_checks.mutations if m.id == mu["id"]]
    res = corpus_checks.mutation(m)
    got = {f.code for f in res.findings}
    for code in set(mu["rules"]) & PHASE_RULES:
        assert code in got, (mu["id"], sorted(got))
        f = next(f for f in res.findings if f.code == code)
        assert f.witness, "a counterexample comes with every finding"


def test_protocol_phase_bitfields_are_the_ones_the_protocol_files_use():
    """`protocols.PHASE_BITFIELDS` stands for the protocol files' bitfields (not re-read per check):
    the front end's pre-pass over each parsed protocol file finds exactly those."""
    from tkcheck.frontend.builder import phasebit_names
    from tkcheck.frontend.parse import protocol_function
    from tkcheck.knowledge import protocols

    used: set[str] = set()
    for kind in protocols.PROTOCOL_FILES:
        fn = protocol_function(kind)
        assert fn is not None, kind
        path = str(protocols.protocol_file(kind))
        used |= phasebit_names(
            [
                c
                for c in fn.translation_unit.cursor.get_children()
                if c.location.file is not None and c.location.file.name == path
            ]
        )
    assert used and frozenset(used) == protocols.PHASE_BITFIELDS


def test_a_carried_value_with_a_prefix_is_solved_periodically():
    """A ring index wrapped at the top of the body runs 0, 1, 2, 3, 4, 1, 2, 3, 4, ... at the loop
    head: one prefix value, then period 4. Its closed form indexes the cycle by k itself (a form
    `(k - 1) % 4` would not be periodic by construction, and the proof of the form would fail)."""
    from tkcheck import recurrence

    k = E.Var("k1", E.LOOP)
    s, p = E.Var("s@start", E.LOOP), E.Var("p@start", E.LOOP)
    wrap = E.binop("==", s, E.Const(4))
    unsolved = {
        "s": (s, E.binop("+", E.ite(wrap, E.Const(0), s), E.Const(1)), E.Const(0)),
        "p": (p, E.ite(wrap, E.binop("^", p, E.Const(1)), p), E.Const(0)),
    }
    forms = recurrence.solve_by_simulation(unsolved, {}, {"s": s, "p": p}, k)
    assert set(forms) == {"s", "p"}
    head_s = [0] + [(j - 1) % 4 + 1 for j in range(1, 40)]
    head_p = [0] + [((j - 1) // 4) % 2 for j in range(1, 40)]
    assert [forms["s"](E.Const(j)).eval({}) for j in range(40)] == head_s
    assert [forms["p"](E.Const(j)).eval({}) for j in range(40)] == head_p
    assert recurrence.canonical_form(head_s, 1, 4, k).free_vars() == {k}
    assert (
        recurrence.structural_period(recurrence._periodic_part(recurrence.canonical_form(head_s, 1, 4, k), k, 2), k)
        == 4
    )


def test_a_drain_loop_continues_the_main_loops_counter_and_its_waits_are_proved():
    """`for (; k < K + S; ++k)` after `for (; k < K; ++k)`: the drain loop records the loop it
    continues and starts from that loop's trip count; its wait is proved (not a false TK303, not
    left undecided), and the drain waiting on the wrong parity is a counterexample at the
    drain's own iteration."""
    path = ROOT / "fixtures" / "loops" / "drain_carried_counter.cu"
    ms = {m.name: m for m in _models(path)}
    good = ms["drain_good"]
    drain = [lp for lp in good.loops.values() if lp.carried_from is not None]
    assert len(drain) == 1
    main = good.loops[drain[0].carried_from]
    assert drain[0].init == main.trip and drain[0].step == E.Const(1)
    wps = _phases(path)
    drained = [wp for (name, _), wp in wps.items() if name == "drain_good" and wp.op.loops == (drain[0].id,)]
    assert [wp.status for wp in drained] == ["ok"]
    bad = [wp for (name, _), wp in wps.items() if name == "drain_off_by_one" and wp.status == "mismatch"]
    assert len(bad) == 1 and bad[0].witness["iteration"] == 0 and bad[0].loop == bad[0].op.loops[-1]


def test_loops_without_a_count_are_proved_for_every_trip_count():
    """A scheduler loop that ends on a sentinel read from memory, and one that ends on its own
    counter: the waits of their rings are decided, the good ones proved."""
    for fixture, good in (("persistent_scheduler.cu", "scheduled"), ("counter_exit.cu", "counter_exit")):
        wps = _phases(ROOT / "fixtures" / "loops" / fixture)
        mine = [wp for (name, _), wp in wps.items() if name == good]
        assert mine and all(wp.status == "ok" for wp in mine), [(wp.op.location.row, wp.reason) for wp in mine]


def test_a_ring_walked_at_several_sites_of_a_task_is_one_visit_counter():
    """Ring walks (`frontend/ring_walk.py`): a ring advanced before, inside and after the inner
    loop of a persistent task loop whose inner trip changes from task to task. Every wait's visit
    is recorded; the reducer's waits (head, body, two tail waits) are proved; the same walk with
    the parity flipped at every site is a counterexample in the first task; an advance skipped
    after the head wait leaves that wait undecided (visits and uses differ), never a finding."""
    path = ROOT / "fixtures" / "loops" / "ring_walk_task_sites.cu"
    ms = {m.name: m for m in _models(path)}
    good = ms["walk_head_body_tail"]
    assert good.ring_walks and good.ring_visits
    wps = _phases(path)
    by = {}
    for (name, row), wp in wps.items():
        by.setdefault(name, []).append((row, wp))
    assert [wp.status for _, wp in sorted(by["walk_head_body_tail"])] == ["ok"] * 5
    flipped = [
        wp
        for _, wp in sorted(by["walk_parity_flipped"])
        if wp.op.guard.thread != by["walk_parity_flipped"][0][1].op.guard.thread
    ]
    assert [wp.status for wp in flipped] == ["mismatch"] * 3
    assert all(wp.witness.get("outer_iteration") in (None, 0) for wp in flipped)
    skipped = sorted(by["walk_advance_skipped"])
    assert skipped[1][1].status == "unknown"
    assert all(wp.status != "mismatch" for _, wp in skipped)


def test_the_b300_shaped_ring_is_decided():
    """`ring_steps_around_k_loop.cu`: the first K tile before the k loop, V then K in each
    iteration, the last V after it -- the consumer's four waits are proved (they were "parity or
    barrier index not modelled")."""
    wps = _phases(ROOT / "fixtures" / "loops" / "ring_steps_around_k_loop.cu")
    good = [wp for (name, _), wp in wps.items() if name == "steps_around_k_loop"]
    assert [wp.status for wp in good] == ["ok"] * 6


def test_counted_uses_of_uneven_visits():
    """8 steps a task over 3 stages (0 1 2 0 1 2 0 1 | 0 ...): the uses of step v's element
    before v, tabulated over the period 8, against a count by hand."""
    from tkcheck.checks import ring_uses

    k = E.Var("f1", E.LOOP)
    index = (E.binop("%", E.binop("%", k, E.Const(8)), E.Const(3)),)
    got = ring_uses.counted_uses(index, k, 10_000)
    assert got is not None
    use, period = got
    assert period == E.Const(8)
    seq = [(v % 8) % 3 for v in range(40)]
    for v in range(40):
        assert use.eval({"f1": v}) == seq[:v].count(seq[v])
    # once a period (a plain ring): v / S
    plain = ring_uses.counted_uses((E.binop("%", k, E.Const(3)),), k, 10_000)
    assert plain is not None and all(plain[0].eval({"f1": v}) == v // 3 for v in range(20))


def test_lagging_back_channel_decided_with_its_assumption_stated():
    """A back channel whose signallers' release of round t needs only what the waiter does before
    its wait of round t (the lcf/lcsf finish block): the parity of the previous round's release is
    proved and the lag it assumes is stated (`wp.stated`, a coverage note); the parity of the
    current round's release is proved with nothing assumed; parities that pass a stale phase are
    refuted (TK304 / TK303 in the fixtures)."""
    d = ROOT / "fixtures" / "completion"
    (lag,) = [w for w in _phases(d / "lagging_release.cu").values() if w.barrier == "out_free"]
    assert lag.status == "ok" and lag.offset == -1 and "progress obligation" in lag.stated, (lag.status, lag.reason)
    (cur,) = [w for w in _phases(d / "lagging_release_good.cu").values() if w.barrier == "out_free"]
    assert cur.status == "ok" and not cur.stated, (cur.status, cur.reason)
    (half,) = [w for w in _phases(d / "lagging_release_bad_half.cu").values() if w.barrier == "out_free"]
    assert half.status == "mismatch" and half.witness["iteration"] == 3, (half.status, half.reason, half.witness)


def test_a_wait_after_the_loop_is_the_loops_next_use():
    """`for (..; toc ^= 1) wait(freed, toc); wait(freed, toc);`: the wait after the loop, by the
    threads of the loop's one wait site, is their use number trip-count of the barrier: proved
    with the carried parity, and refuted (TK303, not TK304: one use) with the parity flipped."""
    wps = _phases(ROOT / "fixtures" / "loops" / "tail_wait_after_loop.cu")
    tails = {name: wp for (name, _), wp in wps.items() if not wp.op.loops and wp.barrier in ("freed", "empty")}
    assert tails["stage_tail_good"].status == "ok" and tails["ring_tail_good"].status == "ok"
    for name in ("stage_tail_flipped", "ring_tail_behind"):
        wp = tails[name]
        assert wp.status == "mismatch", (wp.status, wp.reason)
        assert wp.witness["iteration"] is None and wp.witness["after_loop"] == 0


def test_a_warps_cp_async_copies_tell_the_handshake_direction():
    """A loader warp's cp.async copies published by its lane 0's arrive make that barrier the
    forward (data) one: the correct kernel proved, a parity off by a round refuted (both were
    "handshake direction not recognised" while only a copy under the arrive's own guard counted)."""
    wps = _phases(ROOT / "fixtures" / "loops" / "warp_copy_handshake.cu")
    by: dict[str, list] = {}
    for (name, _), wp in sorted(wps.items()):
        by.setdefault(name, []).append(wp.status)
    assert by["cp_async_ring_good"] == ["ok", "ok"]
    assert by["cp_async_ring_late"] == ["ok", "mismatch"]


def test_a_bitfield_flipped_right_after_each_wait_is_decided_through_any_nest():
    """`bitfield_paired_deep_nest.cu`: each wait reads its barrier's bit and flips it right after,
    in a three-deep loop nest the closed-form counts do not follow: the good kernel's two waits
    are proved; the bad kernel's wrong initial bit stays undecided (no counterexample is read
    from the pairs), never a proof."""
    wps = _phases(ROOT / "fixtures" / "loops" / "bitfield_paired_deep_nest.cu")
    good = [wp for (name, _), wp in wps.items() if name == "paired_deep_good"]
    bad = {wp.barrier: wp for (name, _), wp in wps.items() if name == "paired_deep_bad"}
    assert [wp.status for wp in good] == ["ok", "ok"], [wp.reason for wp in good]
    # undecided by the pairs, then read as before them (the closed-form counts' reason)
    assert bad["done"].status == "unknown"
    assert bad["ready"].status == "ok"


def test_a_drain_in_the_leaving_task_counts_the_k_loops_uses():
    """`bitfield_drain_past_last.cu`: the drain's waits (in the task that leaves, beside the k
    loop) are the ring's uses after every earlier task's: proved in the good kernel, a wrong
    parity (a flip before the wait) refuted in the bad one."""
    wps = _phases(ROOT / "fixtures" / "loops" / "bitfield_drain_past_last.cu")
    by: dict = {}
    for (name, row), wp in wps.items():
        by.setdefault(name, {})[row] = wp
    assert all(wp.status == "ok" for wp in by["drain_past_last_good"].values())
    assert by["drain_past_last_bad"][38].status == "mismatch"


def test_a_value_read_at_a_moving_index_is_one_value_per_iteration():
    """`op = ops[t]` in a loop over t is ops(t), an uninterpreted function of the counter: two
    iterations may read different values, one iteration reads one."""
    from tkcheck import solver

    t = E.Var("k1", E.LOOP)
    ops = E.App("?ops[t]#1", (t,))
    nxt = E.substitute(ops, {"k1": E.binop("+", t, E.Const(1))})
    assert nxt == E.App("?ops[t]#1", (E.binop("+", t, E.Const(1)),))
    assert solver.always(E.binop("==", ops, nxt)) is False
    assert solver.always(E.binop("==", ops, E.App("?ops[t]#1", (t,)))) is True
    assert E.loop_outside_data(E.binop("<", ops, E.Const(0))) is False
    assert E.loop_outside_data(E.binop("<", t, E.Const(4))) is True


def test_branches_on_data_read_per_iteration_are_not_exclusive():
    """`data_per_iteration_{good,bad}.cu`: read as one value for the loop, `op == 0` and `op == 1`
    excluded each other (a false TK303 on the good op stream) and `lens[t]` made a flat parity
    `t * n + j` look proved. Now the good stream's wait is undecided, the carried parity over
    segments of lens(t) waits is proved, and neither bad wait is proved."""
    good = _phases(ROOT / "fixtures" / "loops" / "data_per_iteration_good.cu")
    bad = _phases(ROOT / "fixtures" / "loops" / "data_per_iteration_bad.cu")
    by = {name: wp.status for (name, _), wp in {**good, **bad}.items()}
    assert by == {
        "op_stream": "unknown",
        "segments_carried": "ok",
        "op_stream_flipped": "unknown",
        "segments_flat": "unknown",
    }, by


def test_a_data_exit_tests_the_value_read_in_its_round():
    """`if (t < 0) break;` with `t = schedule[it]`: the exit tests schedule(it), a value per
    round, and the loop is still a loop that ends on data (its waits proved for every trip)."""
    ms = {m.name: m for m in _models(ROOT / "fixtures" / "loops" / "persistent_scheduler.cu")}
    exits = [lp for lp in ms["scheduled"].loops.values() if lp.trip is None and lp.continues]
    assert exits and all(any(E.apps(c) for c in lp.continues) for lp in exits)
    assert all(phases._data_exit_ok(lp) and not phases._counter_exit(lp) for lp in exits)


def test_a_signal_of_unknown_barrier_leaves_every_phase_undecided():
    """An arrive on a `mapa` address plus a byte offset is not attributed to `freed[s]`: the
    barrier's known signallers are a subset of the real ones, so "no handshake found" is no proof
    of the direction (main gave a false TK303 on this correct kernel; idioms15 dsmem_bulk_relay)."""
    (m,) = models_of(str(ROOT / "fixtures" / "cluster" / "mapa_arrive_unattributed_good.cu"))
    (wp,) = phases.phases(Analysis(m))
    assert wp.status == "unknown"
    assert "an mbarrier operation whose barrier is not known (line 41) may signal it" in wp.reason
