"""Protocol exploration (TK502-TK505): roles, interleavings, traces, SVG."""

import tomllib
from pathlib import Path

import pytest

from tkcheck import registry
from tkcheck.checks import protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import CheckOptions, check_file, models_of
from tkcheck.render.trace_svg import write_trace_svgs

from conftest import ROOT

ALL = frozenset(r.code for r in registry.all_rules())
DEADLOCK_RULES = {"TK502", "TK503", "TK504", "TK505"}


def _explore(path: Path, text: str | None = None):
    text = path.read_text() if text is None else text
    ms = models_of(str(path), text=text)
    return {m.name: protocol.explore(Analysis(m)) for m in ms}


@pytest.mark.parametrize("kernel", ["hopper/gemm_ring.cu", "hopper/attn_fwd.cu"])
def test_correct_kernels_explore_without_deadlock(kernel):
    ex = _explore(ROOT / "corpus" / kernel)
    main = [e for e in ex.values() if e.roles]
    assert main, {k: e.reason for k, e in ex.items()}
    for e in main:
        assert e.status == "explored" and e.deadlock is None
        names = " ".join(r.name for r in e.roles)
        assert "producer" in names and "consumer" in names


@pytest.mark.parametrize("fixture", ["good_pingpong_named.cu", "good_pingpong_ptx.cu"])
def test_pingpong_named_barriers_explore_without_deadlock(fixture):
    """Two consumer warpgroups taking turns through two named barriers (bar.sync on one's own,
    bar.arrive on the other's) explore to the end: bar.arrive counts without waiting, a turn
    handed across iterations lands in the generation open at that time."""
    (ex,) = _explore(ROOT / "fixtures" / "deadlock" / fixture).values()
    assert ex.status == "explored" and ex.deadlock is None, ex.reason
    kinds = {(e.kind, e.sync) for r in ex.roles for e in r.events if e.kind in ("sync", "barrive")}
    assert ("barrive", (2, 256)) in kinds and ("sync", (3, 256)) in kinds


@pytest.mark.parametrize(
    "fixture, blocked_at",
    [
        ("bad_pingpong_turn_to_self.cu", {3: (128, 0)}),
        ("bad_pingpong_no_first_turn.cu", {2: (128, 0), 3: (128, 0)}),
        ("bad_pingpong_count_never_reached.cu", {2: (256, 0), 3: (128, 0)}),
    ],
)
def test_pingpong_named_barrier_deadlocks(fixture, blocked_at):
    """The broken ping-pongs reach a state where consumers are blocked at their named barrier
    with the generation's arrivals short of the count."""
    (ex,) = _explore(ROOT / "fixtures" / "deadlock" / fixture).values()
    d = ex.deadlock
    assert d is not None
    at = {e.sync[0]: d.state["syncs"][e.sync[0]] for _, e in d.blocked if e.kind == "sync"}
    assert at == blocked_at
    # each blocked warp counts 32 threads: a warpgroup adds 128 per bar.sync
    assert all(e.arrivals == 128 for _, e in d.blocked if e.kind == "sync")


def test_block_barrier_waits_for_threads_not_exited():
    """Warps that returned early do not hold up a later __syncthreads() of the others."""
    (ex,) = _explore(ROOT / "fixtures" / "deadlock" / "good_syncthreads_after_exit.cu").values()
    assert ex.status == "explored" and ex.deadlock is None, ex.reason
    assert any(e.kind == "sync" and e.block for r in ex.roles for e in r.events)
    # warps 1-3 leave (their `return`) before the last barrier
    assert any(e.kind == "exit" for r in ex.roles for e in r.events)


def test_roles_are_warps_not_lanes():
    ex = _explore(ROOT / "corpus" / "hopper" / "gemm_ring.cu")["gemm_ring_kernel"]
    for r in ex.roles:
        assert all(t // 32 * 32 + l in r.threads for t in r.threads for l in range(32))


def _mutated(mu):
    src = (ROOT / "corpus" / mu["kernel"]).read_text()
    assert src.count(mu["find"]) == 1
    return src.replace(mu["find"], mu["replace"])


def _mutations():
    return [p.values[0] for p in _mutation_params()]


def _mutation_params():
    out = []
    for f in ("mutations.toml", "mutations_completion.toml"):
        for mu in tomllib.load(open(ROOT / "corpus" / f, "rb"))["mutation"]:
            if set(mu["rules"]) & DEADLOCK_RULES:
                marks = (
                    [pytest.mark.xfail(reason=f"known miss: {mu['known_miss']}", strict=True)]
                    if mu.get("known_miss")
                    else []
                )
                out.append(pytest.param(mu, id=mu["id"], marks=marks))
    return out


def _planted(mu, corpus_checks):
    """The planted bug checked as the corpus sweeps check it: the session memo's check, shared
    with test_corpus and test_solver_budget (read, never changed)."""
    m = next(x for x in corpus_checks.mutations if x.id == mu["id"])
    return corpus_checks.mutation(m)


@pytest.mark.parametrize("mu", _mutation_params())
def test_planted_deadlocks_reported_with_trace(mu, corpus_checks, tmp_path):
    res = _planted(mu, corpus_checks)
    got = {f.code for f in res.findings}
    for code in set(mu["rules"]) & DEADLOCK_RULES:
        assert code in got, (mu["id"], sorted(got))
        f = next(f for f in res.findings if f.code == code)
        assert f.witness
        if code in ("TK502", "TK503"):
            assert f.trace and any(s.blocked for s in f.trace)
            assert "blocks forever" in f.trace[-1].text or any("blocks forever" in s.text for s in f.trace)
            paths = write_trace_svgs(res.findings, str(tmp_path / "svg"))
            assert paths and Path(paths[0]).read_text().startswith("<svg")


def test_trace_reads_as_numbered_story(corpus_checks):
    res = _planted(next(m for m in _mutations() if m["id"] == "attn_fwd-q-after-kv-loop"), corpus_checks)
    f = next(f for f in res.findings if f.code == "TK503")
    texts = [s.text for s in f.trace]
    assert any(t.startswith("wait(kv_empty[0], 1) passes (fresh barrier)") for t in texts)
    blocked = [s for s in f.trace if s.blocked]
    assert {s.barrier for s in blocked} >= {"kv_empty[0]", "q_full"}
    assert any("needs 1 more arrival" in s.text for s in blocked)


def test_svg_is_deterministic(tmp_path, corpus_checks):
    res = _planted(next(m for m in _mutations() if m["id"] == "gemm_ring-producer-short-trip"), corpus_checks)
    a = [Path(x).read_text() for x in write_trace_svgs(res.findings, str(tmp_path / "a"))]
    b = [Path(x).read_text() for x in write_trace_svgs(res.findings, str(tmp_path / "b"))]
    assert a and a == b


def test_exploration_is_bounded_in_steps_not_time(monkeypatch):
    """The explorer's bound is a count (states, events run), never a clock: the same kernel gets
    the same answer on any machine under any load, and a bound reached is unknown, not a finding."""
    path = ROOT / "corpus" / "hopper" / "attn_fwd.cu"
    an = Analysis(models_of(str(path))[0])
    ex = protocol.explore(an)
    assert ex.status == "explored" and ex.deadlock is None
    assert 0 < ex.steps <= protocol.MAX_STEPS and 0 < ex.states <= protocol.MAX_STATES
    assert protocol.explore(an) is ex
    assert "protocol" in an.timings
    assert not hasattr(protocol, "TIME_CAP_S")
    # (a bound the full search passes and the reduced one too: `_search(stepwise=True)`, tried
    # past the full search's bound, decides this kernel in fewer steps than half the full one's)
    monkeypatch.setattr(protocol, "MAX_STEPS", 5)
    short = protocol.explore(Analysis(models_of(str(path))[0]))
    assert short.status == "unknown" and short.reason == "exploration bound reached" and short.deadlock is None
    monkeypatch.setattr(protocol, "MAX_STEPS", ex.steps)
    again = protocol.explore(Analysis(models_of(str(path))[0]))
    assert (again.status, again.states, again.steps) == (ex.status, ex.states, ex.steps)


def test_a_spent_exploration_bound_is_undecided_coverage_not_a_finding(monkeypatch, tmp_path):
    mu = next(m for m in _mutations() if m["id"] == "gemm_ring-producer-short-trip")
    p = tmp_path / "gemm_ring.cu"
    p.write_text(_mutated(mu))
    assert {f.code for f in check_file(str(p), CheckOptions(enabled=ALL)).findings} & DEADLOCK_RULES
    monkeypatch.setattr(protocol, "MAX_STEPS", 0)
    res = check_file(str(p), CheckOptions(enabled=ALL))
    assert not {f.code for f in res.findings} & DEADLOCK_RULES
    reasons = [u.why for c in res.coverage for u in c.unknowns]
    assert any("progress (no role blocked forever) not established: exploration bound reached" in r for r in reasons)


def test_committed_trace_svg_exists():
    svgs = list((ROOT / "docs" / "traces").glob("*.svg"))
    assert svgs and all("<svg" in s.read_text() for s in svgs)


def _races(path: Path, names: frozenset[str]):
    (m,) = models_of(str(path), text=path.read_text())
    return protocol.races(Analysis(m), names)


@pytest.mark.parametrize(
    ("fixture", "name", "race"),
    [
        ("nbar_refill_good.cu", "box", False),
        ("nbar_refill_bad.cu", "box", True),
        ("syncwarp_release_good.cu", "scale_s", False),
        ("syncwarp_release_bad.cu", "scale_s", True),
    ],
)
def test_race_search(fixture, name, race):
    """The race search: accesses as local events of the roles' programs; a race is a reachable
    state where two roles of two warps can each access one element (one writing) before they
    synchronise again. A correct hand-over explores to the end without one; the bad variants
    reach one, with the interleaving that leads there."""
    ex = _races(ROOT / "fixtures" / "memory" / fixture, frozenset([name]))
    assert ex.status == "explored", ex.reason
    assert (ex.race is not None) == race
    if race:
        r = ex.race
        assert r.ea.mem[0] == r.eb.mem[0] == name and (r.ea.mem[1] or r.eb.mem[1])
        assert r.thread_a // 32 != r.thread_b // 32
        assert any(e.kind in ("wait", "sync", "barrive", "arrive") for _, e, _ in r.trace)


def test_race_search_splits_lanes_and_models_syncwarp():
    """Lane 0 (it releases the slot) and lanes 1-31 (they only read) are roles of their own, and
    `__syncwarp()` is a barrier of the warp's lanes: in the correct kernel the lanes meet there
    (each role counted per lane, the warp's 32 once all have arrived)."""
    ex = _races(ROOT / "fixtures" / "memory" / "syncwarp_release_good.cu", frozenset(["scale_s"]))
    readers = [r for r in ex.roles if any(e.kind == "mem" and not e.mem[1] for e in r.events)]
    assert len(readers) == 2 and sorted(len(r.threads) for r in readers) == [2, 62]
    warp_syncs = {e.sync for r in readers for e in r.events if e.kind == "sync" and e.sync[0] >= protocol.WARP_SYNC_IDS}
    assert warp_syncs == {(protocol.WARP_SYNC_IDS + 1, 64)}


def test_race_search_stays_out_of_unfollowed_orders(tmp_path):
    """A poll on a shared flag orders threads in a way the search does not follow: no search."""
    p = tmp_path / "k.cu"
    p.write_text(
        "__global__ void k(int *out) {\n"
        "    __shared__ volatile int flag;\n"
        "    __shared__ int v;\n"
        "    if (threadIdx.x == 0) { v = 1; flag = 1; }\n"
        "    if (threadIdx.x == 32) { while (flag == 0) {} out[0] = v; }\n"
        "}\n"
    )
    ex = _races(p, frozenset(["v"]))
    assert ex.race is None and ex.status != "explored"
