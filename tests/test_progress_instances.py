"""The progress exploration's instances and data-decided byte counts (round 5): what it explores
and what it leaves unknown."""

from pathlib import Path

from tkcheck.checks import protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

PROGRESS = ROOT / "fixtures" / "progress"


def _explore(path: Path, text: str | None = None):
    text = path.read_text() if text is None else text
    ms = models_of(str(path), text=text)
    return [protocol.explore(Analysis(m)) for m in ms]


def test_sizes_apart_get_a_solved_instance():
    """No one value of every size gives both loops an iteration and the ring two wraps: the
    instance is solved per size and checked by evaluation (every loop runs, one runs long)."""
    (ex,) = _explore(PROGRESS / "trip_sizes_apart_good.cu")
    assert ex.status == "explored" and ex.deadlock is None, ex.reason
    p = ex.params
    tasks = min(p["batches"], p["A.batch()"] - p["blockIdx.y"] * p["batches"]) * p["A.depth()"]
    rows = min(8, p["A.rows()"] // 16 - p["blockIdx.x"] * 8)
    assert tasks >= 1 and rows >= 1 and max(tasks, rows) >= 5  # two wraps of a two-stage ring


def test_one_thread_block_is_explored():
    (ex,) = _explore(PROGRESS / "one_thread_block_good.cu")
    assert ex.status == "explored" and ex.deadlock is None, ex.reason
    assert [sorted(r.threads) for r in ex.roles] == [[0]]


def test_data_bytes_paired_on_one_role_explore_and_find_the_missing_sentinel():
    (good,) = _explore(PROGRESS / "data_stream_sentinel_good.cu")
    assert good.status == "explored" and good.deadlock is None, good.reason
    loads = [e for r in good.roles for e in r.events if e.kind in ("expect", "load")]
    assert loads and all("lens" in e.sym for e in loads)
    (bad,) = _explore(PROGRESS / "data_stream_sentinel_bad.cu")
    assert bad.deadlock is not None
    assert [protocol.event_text(e) for _, e in bad.deadlock.blocked] == ["wait(full[1], 0)"]


def test_a_known_expect_beside_a_data_copy_stays_unknown():
    """`MAXLEN * 4` expected, `len * 4` copied: the counts are not multiples of one data count,
    so nothing is explored (no finding from a guess about the data)."""
    path = PROGRESS / "data_stream_sentinel_good.cu"
    text = path.read_text()
    assert "bar_arrive_tx(&full[s], len * 4);" in text
    text = text.replace("bar_arrive_tx(&full[s], len * 4);", "bar_arrive_tx(&full[s], MAXLEN * 4);")
    (ex,) = _explore(path, text)
    assert ex.status == "unknown" and "bytes not known" in ex.reason


def test_a_conditional_phase_bit_flip_is_run_with_the_instance():
    """The producer's bit of the storer's barrier is flipped under `kk == STAGES - 1`: no closed
    form over the loop counters. The unrolling runs the front end's own end-of-body value of the
    bitfield (`Loop.simulated`) with the instance's sizes: the correct kernel explores clean, the
    flip one step early is a circular wait (producer at out_empty, consumers at full)."""
    (good,) = _explore(PROGRESS / "phasebit_conditional_flip_good.cu")
    assert good.status == "explored" and good.deadlock is None, good.reason
    waits = [e for r in good.roles for e in r.events if e.kind == "wait" and e.elem == ("out_empty",)]
    assert [e.parity for e in waits][:2] == [1, 0]  # task 0 passes the fresh barrier, task 1 waits
    (bad,) = _explore(PROGRESS / "phasebit_conditional_flip_bad.cu")
    assert bad.deadlock is not None
    blocked = {protocol.event_text(e) for _, e in bad.deadlock.blocked}
    assert "wait(out_empty, 0)" in blocked and "wait(full[3], 0)" in blocked


def test_a_model_with_sequential_duties_reports_no_deadlock_of_its_own():
    """lcsf / interpreter protocol files run the two producer duties the template polls in sequence
    (`tkcheck_sequential_duties`): a deadlock reached there is unknown, never a finding."""
    (m,) = models_of(str(ROOT / "corpus" / "hopper" / "rotary_lcsf.cu"))
    assert m.progress_approx and "polls" in m.progress_approx
    (b,) = models_of(str(PROGRESS / "phasebit_conditional_flip_bad.cu"))
    b.progress_approx = m.progress_approx
    ex = protocol.explore(Analysis(b))
    assert ex.deadlock is None and ex.status == "unknown" and ex.reason.startswith("a deadlock of the model only")


def test_roles_with_one_program_share_a_visited_key():
    """Warps with the same events (the same ops, elements, counts) are interchangeable: the search
    visits a state and the one with two such roles' (pc, mark) swapped once."""
    (ex,) = _explore(PROGRESS / "phasebit_conditional_flip_good.cu")
    r = ex.roles[0]
    twins = [protocol.Role("a", r.threads, r.events), protocol.Role("b", r.threads, r.events), ex.roles[1]]
    key = protocol._symmetry(twins)
    s1 = ((1, 0, 0), (-1, 0, -1), (), ())
    s2 = ((0, 1, 0), (0, -1, -1), (), ())
    assert key(s1) == key(s2)
    assert key(((1, 0, 1), (-1, -1, -1), (), ())) != key(((1, 0, 0), (-1, -1, -1), (), ()))


def test_a_task_head_read_through_the_flip_after_the_k_loop_is_run_with_the_instance():
    """The producer waits at the head of each task on a bit it flips after its k loop, whose flips
    are indexed by a stage carried from task to task: the head is `t == 0 ? v0 : x ^ m` over the
    value x the k loop left, solved for x (`_solve_for`). The good kernel explores to the end over
    several tasks; the bad one (the storer's first arrival missing) reaches the circular wait."""
    (good,) = _explore(PROGRESS / "phasebit_after_inner_loop_good.cu")
    assert good.status == "explored" and good.deadlock is None, good.reason
    producer = [r for r in good.roles if any(e.elem == ("out_empty",) and e.kind == "wait" for e in r.events)]
    assert len(producer) == 1
    parities = [e.parity for e in producer[0].events if e.kind == "wait" and e.elem == ("out_empty",)]
    assert len(parities) >= 2 and parities[:2] == [0, 1]
    (bad,) = _explore(PROGRESS / "phasebit_after_inner_loop_bad.cu")
    assert bad.deadlock is not None
    assert "wait(out_empty, 0)" in [protocol.event_text(e) for _, e in bad.deadlock.blocked]


def test_solve_for_inverts_the_update_through_the_conditionals_it_decides():
    from tkcheck.model import expr as E

    k, x = E.Var("k", E.LOOP), E.Var("?x", E.OPAQUE)
    head = E.ite(E.binop("==", k, E.const(0)), E.const(5), E.binop("^", x, E.const(8)))
    assert protocol._solve_for(head, "?x", {"k": 1}, 3) == 11
    assert protocol._solve_for(E.binop("-", E.const(10), x), "?x", {}, 4) == 6
    assert protocol._solve_for(E.binop("+", x, E.const(2)), "?x", {}, 4) == 2
    # the condition is not decided, or x on both sides: no answer
    assert protocol._solve_for(head, "?x", {}, 3) is None
    assert protocol._solve_for(E.binop("^", x, x), "?x", {}, 0) is None


def _explore_unmerged(path: Path, monkeypatch):
    with monkeypatch.context() as mp:
        mp.setattr(protocol, "_merge_pure_waiters", lambda roles, sids, rename: roles)
        mp.setattr(protocol, "_merge_whole_generations", lambda roles, sids: roles)
        return _explore(path)


def test_waiting_roles_and_back_to_back_meetings_are_run_merged(monkeypatch):
    """Warps 1 and 2-3 of a consumer warpgroup (split by warp 1's barrier init) only wait and meet:
    one role of warps 1-3; the warpgroup's three back-to-back `warpgroup::sync(1)` (every
    generation needs all 128 threads) one meeting. The verdicts are those of the search without
    the merges: no deadlock on the good kernel, the same blocked sync on the bad one (warp 0
    leaves out a meeting), told of the merged role."""
    (good,) = _explore(PROGRESS / "split_warpgroup_epilogue_good.cu")
    assert good.status == "explored" and good.deadlock is None, good.reason
    names = [r.name for r in good.roles]
    assert "consumer (warps 1-3 (threads 32-127))" in names, names
    merged = next(r for r in good.roles if len(r.threads) == 96)
    meets = [e for e in merged.events if e.kind == "sync" and not e.block]
    assert len(meets) == 5 and all(e.arrivals == 96 for e in meets)  # one per k step of the instance
    (plain,) = _explore_unmerged(PROGRESS / "split_warpgroup_epilogue_good.cu", monkeypatch)
    assert plain.status == "explored" and plain.deadlock is None and len(plain.roles) == len(good.roles) + 1
    assert good.states < plain.states
    (bad,) = _explore(PROGRESS / "split_warpgroup_epilogue_bad.cu")
    (bad_plain,) = _explore_unmerged(PROGRESS / "split_warpgroup_epilogue_bad.cu", monkeypatch)
    assert bad.deadlock is not None and bad_plain.deadlock is not None
    blocked = [(bad.roles[i].name, protocol.event_text(e)) for i, e in bad.deadlock.blocked]
    assert blocked == [("consumer (warps 1-3 (threads 32-127))", "warpgroup::sync(id 1, 128 threads) +96")]
    rows = {e.op.location.row for _, e in bad_plain.deadlock.blocked}
    assert rows == {e.op.location.row for _, e in bad.deadlock.blocked}
    assert bad.deadlock.trace  # the trace to it is spelled out


def test_a_lagging_waiter_is_not_merged_with_the_loader():
    """A warp that waits and loads is no pure waiter: the lcf producer warps that only wait stay a
    role apart from the loading warp, so the search still reaches the state where they fell two
    phases behind (the lagging-waiter class). That deadlock needs the idle warps starved while the
    consumers release a stage (round 13, `_prompt_search`): progress is undecided, naming them."""
    (ex,) = _explore(ROOT / "fixtures" / "prototype" / "lcf_finish_store_one_task.cu")
    assert ex.deadlock is None and ex.status == "unknown"
    assert "a deadlock only when producer (warps 5-7" in ex.reason
    assert "'inputs_finished[1]'" in ex.reason


def test_a_deadlock_that_needs_a_starved_waiter_is_undecided():
    """The idle producer warp can pass its waits on the ring by itself; the full search reaches a
    deadlock only by leaving it there while the ring completes another phase of the same parity
    (`Deadlock.missed`). The search with prompt laggers (`_prompt_search`) finds none: progress is
    undecided with that reason, never a finding."""
    (ex,) = _explore(PROGRESS / "lagging_helper_good.cu")
    assert ex.deadlock is None and ex.status == "unknown"
    assert "a deadlock only when" in ex.reason and "starved by the scheduler" in ex.reason
    assert "'empty[" in ex.reason


def test_a_waiter_behind_by_construction_keeps_its_deadlock():
    """The checking warp starts its walk after a block barrier that follows every release: it is
    two phases behind without any warp starved, so the deadlock stands (no lag in its trace)."""
    (ex,) = _explore(PROGRESS / "lagging_helper_bad.cu")
    assert ex.status == "explored" and ex.deadlock is not None
    assert ex.deadlock.missed is None
    assert [protocol.event_text(e) for _, e in ex.deadlock.blocked] == ["wait(empty[0], 1)"]


def test_the_prompt_search_only_drops_lagging_schedules():
    """The prompt search on a kernel whose deadlock needs no lag finds the same blocked waits as
    the full search (a subset of its schedules, terminal states kept)."""
    path = PROGRESS / "lagging_helper_bad.cu"
    (m,) = models_of(str(path), text=path.read_text())
    ex = protocol.explore(Analysis(m))
    again = protocol.Exploration()
    protocol._search(again, ex.roles, ex.counts, prompt=True)
    assert again.deadlock is not None
    assert [protocol.event_text(e) for _, e in again.deadlock.blocked] == [
        protocol.event_text(e) for _, e in ex.deadlock.blocked
    ]


def test_lcf_early_return_gets_an_instance_and_no_lagging_finding():
    """The early return of the user's `common_setup` sets the count of the path taken (the task
    loop stops): the template is explored, and its one deadlock needs an idle producer warp
    starved for a whole phase, so progress is undecided with that reason (no finding)."""
    (ex,) = _explore(ROOT / "fixtures" / "prototype" / "lcf_early_return_setup_good.cu")
    assert ex.params and ex.deadlock is None
    assert "starved by the scheduler" in ex.reason


def test_a_barrier_id_from_warpgroupid_is_known_per_warpgroup():
    """`group<4>::sync(5 + warpgroupid())`: TK's `warpgroupid()` is threadIdx.x >> 7, so each
    warpgroup's meeting has its own id and the roles are explored (the id was unknown before)."""
    (ex,) = _explore(PROGRESS / "warpgroupid_barrier_good.cu")
    assert ex.status == "explored" and ex.deadlock is None, ex.reason
    ids = {e.sync[0] for r in ex.roles for e in r.events if e.kind == "sync" and e.sync[0] in (5, 6)}
    assert ids == {5, 6}
