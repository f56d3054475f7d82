"""The progress search over the CTAs of a cluster (issue 25, round 9): a kernel whose sync ops
depend on the CTA's rank or land on another CTA's barrier is explored with one copy of its roles
and barriers per CTA (`protocol._cluster_size`), each op landing where
`completion.destinations_at` says. A deadlock of that model stays undecided (the cluster
barriers are not in the search), never a finding."""

from tkcheck.checks import completion, protocol
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.findings import Location
from tkcheck.model import expr as E
from tkcheck.model import ir

from conftest import ROOT

GOOD = ROOT / "fixtures" / "progress" / "cluster_pair_good.cu"
LOC = Location("f.cu", 1, 1)
BAD = ROOT / "fixtures" / "progress" / "cluster_pair_bad.cu"


def _explore(path):
    (m,) = models_of(str(path), text=path.read_text())
    return protocol.explore(Analysis(m))


def test_a_pair_whose_waits_the_other_cta_signals_is_explored_clean():
    ex = _explore(GOOD)
    assert ex.cluster == 2
    assert ex.status == "explored", ex.reason
    assert ex.deadlock is None
    assert {r.cta for r in ex.roles} == {0, 1}
    # CTA 1's loader waits on its own `empty`, which CTA 0's consumer arrives on remotely
    (loader1,) = [r for r in ex.roles if r.cta == 1 and any(e.kind == "load" for e in r.events)]
    assert {e.elem[0] for e in loader1.events if e.kind == "wait"} == {"empty@cta1"}
    # its copies complete on CTA 0's `full`
    assert {e.elem[0] for e in loader1.events if e.kind == "load"} == {"full@cta0"}


def test_a_stage_never_handed_back_to_the_peer_is_a_deadlock_of_the_model_left_undecided():
    ex = _explore(BAD)
    assert ex.cluster == 2
    assert ex.status == "unknown" and ex.deadlock is None
    assert "2-CTA model" in ex.reason


def test_destinations_at_reads_the_rank_of_the_issuer():
    bar = ir.Ref("b", ())
    rank = E.Var("cta_rank", E.PARAM)
    peer = ir.Op(
        ir.MBAR_ARRIVE,
        "tma::cluster::arrive",
        LOC,
        ir.Guard(),
        (),
        barrier=bar,
        mbar=ir.BarrierFacts(remote=True, cta=E.binop("-", E.Const(1), rank)),
    )
    assert completion.destinations_at(peer, 0, 2) == [1]
    assert completion.destinations_at(peer, 1, 2) == [0]
    own = ir.Op(ir.MBAR_ARRIVE, "arrive", LOC, ir.Guard(), (), barrier=bar)
    assert completion.destinations_at(own, 1, 2) == [1]
    mc = ir.Op(
        ir.TMA_LOAD,
        "tma::cluster::load_async",
        LOC,
        ir.Guard(),
        (),
        barrier=bar,
        mbar=ir.BarrierFacts(multicast=True, mask=E.binop("<<", E.Const(1), rank), mbar_cta=E.Const(0)),
    )
    assert completion.destinations_at(mc, 1, 2) == [0]


WATCHERS = ROOT / "fixtures" / "progress"


def test_a_cluster_deadlock_that_needs_a_starved_watcher_says_so():
    """The opening handshake is the cluster's only barrier (`protocol._cluster_barrier_opens`): the
    2-CTA search without starved warps covers the code's schedules without one, reaches no deadlock,
    and the obligation is undecided for the lagging watcher, not for the 2-CTA model."""
    ex = _explore(WATCHERS / "cluster_watchers_lag.cu")
    assert ex.cluster == 2
    assert ex.status == "unknown" and ex.deadlock is None
    assert "warps 2-3" in ex.reason and "starved by the scheduler" in ex.reason
    assert "2-CTA model" not in ex.reason


def test_watchers_that_release_their_rounds_are_explored_clean():
    ex = _explore(WATCHERS / "cluster_watchers_good.cu")
    assert ex.cluster == 2
    assert ex.status == "explored" and ex.deadlock is None, ex.reason


def test_a_hang_without_a_starved_warp_stays_a_deadlock_of_the_2cta_model():
    ex = _explore(WATCHERS / "cluster_watchers_bad.cu")
    assert ex.status == "unknown" and ex.deadlock is None
    assert "2-CTA model" in ex.reason


def test_a_closing_cluster_sync_keeps_the_prompt_search_out():
    """cluster_pair_*.cu close with a second cluster sync: the lagging-warp argument does not hold
    there (a role may be held at that barrier), so a deadlock stays one of the 2-CTA model."""
    (m,) = models_of(str(BAD), text=BAD.read_text())
    an = Analysis(m)
    ops = [o for o in m.ops if protocol._relevant(o)]
    assert not protocol._cluster_barrier_opens(an, ops)
    (m,) = models_of(str(WATCHERS / "cluster_watchers_lag.cu"), text=(WATCHERS / "cluster_watchers_lag.cu").read_text())
    an = Analysis(m)
    assert protocol._cluster_barrier_opens(an, [o for o in m.ops if protocol._relevant(o)])


# ---- r17-remote: clusters of more than two CTAs, renamings of the ranks, the cluster race search

CLUSTER = ROOT / "fixtures" / "cluster"


def _model(name):
    path = CLUSTER / name
    (m,) = models_of(str(path), text=path.read_text())
    return m


def test_a_four_cta_cluster_is_explored_with_and_without_the_renamings(monkeypatch):
    ex = protocol.explore(Analysis(_model("remote_rounds4_good.cu")))
    assert ex.cluster == 4
    assert ex.status == "explored", ex.reason
    assert ex.deadlock is None
    # one role per CTA: the warp that initialised the barriers runs the others' program
    assert sorted(r.cta for r in ex.roles) == [0, 1, 2, 3]
    reduced = ex.states
    monkeypatch.setattr(protocol, "_rank_automorphisms", lambda *a, **k: [])
    full = protocol.explore(Analysis(_model("remote_rounds4_good.cu")))
    assert full.status == "explored" and full.deadlock is None
    assert reduced < full.states


def test_an_eight_cta_cluster_is_decided_by_the_renamings():
    ex = protocol.explore(Analysis(_model("remote_rounds8_good.cu")))
    assert ex.cluster == 8
    assert ex.status == "explored", ex.reason
    assert ex.deadlock is None


def test_a_deadlock_of_the_four_cta_model_stays_undecided():
    ex = protocol.explore(Analysis(_model("remote_rounds4_empty_ahead_bad.cu")))
    assert ex.cluster == 4
    assert ex.status == "unknown" and ex.deadlock is None
    assert "4-CTA model" in ex.reason


def _roles_of(name):
    got = {}

    def spy(ex, roles, counts, *a, **k):
        got["roles"], got["counts"] = roles, counts
        ex.status = "explored"

    import pytest

    mp = pytest.MonkeyPatch()
    mp.setattr(protocol, "_search", spy)
    try:
        protocol.explore(Analysis(_model(name)))
    finally:
        mp.undo()
    return got["roles"], got["counts"]


def test_a_ring_has_its_rotations_only():
    roles, counts = _roles_of("ring_remote_arrive_release_good.cu")
    elems = sorted(counts)
    autos = protocol._rank_automorphisms(roles, elems, False, counts, protocol._rank_candidates(4))
    assert len(autos) == 3  # c -> c + 1, c + 2, c + 3 (mod 4); no exchange of two ranks
    swaps = [(1, 0, 2, 3), (0, 2, 1, 3), (0, 1, 3, 2)]
    assert protocol._rank_automorphisms(roles, elems, False, counts, swaps, aligned=True) == []


def test_an_all_gather_in_rank_order_is_symmetric_between_waits_only():
    roles, counts = _roles_of("remote_rounds4_good.cu")
    elems = sorted(counts)
    swaps = [(1, 0, 2, 3), (0, 2, 1, 3), (0, 1, 3, 2)]
    # the arrivals between two waits go to CTAs 0, 1, 2, 3 in every CTA: equal per element only
    assert len(protocol._rank_automorphisms(roles, elems, False, counts, swaps, aligned=True)) == 3
    assert protocol._rank_automorphisms(roles, elems, True, counts, swaps, aligned=True) == []


def test_the_cluster_race_search_pairs_a_release_arrive_with_the_wait_of_its_phase():
    ex = protocol.races(Analysis(_model("remote_pair_rounds_good.cu")), frozenset({"box"}), cluster=True)
    assert ex.cluster == 2
    assert ex.status == "explored" and ex.race is None
    assert not ex.stuck and not ex.within


def test_the_cluster_race_search_finds_a_store_after_the_release():
    ex = protocol.races(
        Analysis(_model("remote_pair_rounds_store_after_arrive_bad.cu")), frozenset({"box"}), cluster=True
    )
    r = ex.race
    assert r is not None
    n = 64
    assert r.thread_a // n != r.thread_b // n  # two CTAs' threads
    assert {r.ea.op.access.mode, r.eb.op.access.mode} == {"read", "write"}


def test_a_relaxed_remote_arrive_releases_nothing_in_the_cluster_race_search():
    ex = protocol.races(Analysis(_model("remote_alltoall4_relaxed_bad.cu")), frozenset({"slot"}), cluster=True)
    assert ex.race is not None
    assert any(e.relaxed for r in ex.roles for e in r.events if e.kind == "arrive")


def test_the_cluster_race_search_refuses_what_it_cannot_place():
    # a split cluster barrier with events between its arrive and wait is not joined
    e_arr = protocol.Event(
        "barrive",
        ir.Op(ir.SYNC, "barrier.cluster.arrive", LOC, ir.Guard(), ()),
        arrivals=32,
        sync=(protocol.CLUSTER_SID, 64),
    )
    e_mem = protocol.Event("mem", ir.Op(ir.SMEM_ACCESS, "st", LOC, ir.Guard(), ()), mem=("x", True, False, ()))
    e_wait = protocol.Event(
        "cwait", ir.Op(ir.SYNC, "barrier.cluster.wait", LOC, ir.Guard(), ()), sync=(protocol.CLUSTER_SID, 64)
    )
    assert protocol._join_cluster([e_arr, e_mem, e_wait]) is None
    joined = protocol._join_cluster([e_mem, e_arr, e_wait])
    assert joined is not None and [e.kind for e in joined] == ["mem", "sync"]


def _dsmem_undecided(text: str, name: str) -> list:
    from tkcheck.checks import happens_before

    (m,) = models_of(str(CLUSTER / "remote_pair_rounds_good.cu"), text=text)
    facts = happens_before.memory(Analysis(m))
    return [u for u in facts.undecided if any(o.buffer is not None and o.buffer.name == name for o in u[:2])]


def test_the_pairs_are_proved_only_with_cluster_scoped_release_and_acquire():
    text = (CLUSTER / "remote_pair_rounds_good.cu").read_text()
    assert _dsmem_undecided(text, "box") == []
    # a `.cta`-scoped remote arrive is not morally strong with the peer's thread: no proof
    cta = text.replace("mbarrier.arrive.release.cluster.shared::cluster", "mbarrier.arrive.release.cta.shared::cluster")
    assert cta != text and _dsmem_undecided(cta, "box")
    # nor a `.cta`-scoped acquire wait on a barrier a peer arrives on
    wait = text.replace("try_wait.parity.acquire.cluster", "try_wait.parity.acquire.cta")
    assert wait != text and _dsmem_undecided(wait, "box")
