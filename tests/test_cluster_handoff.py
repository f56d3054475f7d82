"""Round 9 (issue 25): ordered shared-memory accesses in inline PTX and flag hand-offs between
the CTAs of a cluster (checks/cluster_handoff.py)."""

from tkcheck.checks import cluster_handoff
from tkcheck.checks.analysis import Analysis
from tkcheck.checks import happens_before
from tkcheck.engine import models_of
from tkcheck.knowledge import ops as K

from conftest import ROOT


def test_ordered_shared_accesses_parsed():
    (acq,) = K.ptx_shared_ordered("ld.acquire.cluster.shared::cta.u32 %0, [%1];")
    assert (acq.mode, acq.order, acq.scope, acq.addr_operand, acq.value_operand) == ("read", "acquire", "cluster", 1, 0)
    (rel,) = K.ptx_shared_ordered("st.release.cta.shared.u32 [%0], %1;")
    assert (rel.mode, rel.order, rel.scope, rel.addr_operand, rel.value_operand) == ("write", "release", "cta", 0, 1)
    (vol,) = K.ptx_shared_ordered("ld.volatile.shared.u32 %0, [%1];")
    assert (vol.order, vol.scope) == ("relaxed", "cta")
    (lax,) = K.ptx_shared_ordered("st.relaxed.gpu.shared::cta.u32 [%0], %1;")
    assert (lax.order, lax.scope) == ("relaxed", "gpu")
    # weak accesses are data, remote ones `ptx_dsmem_accesses`', malformed orders nothing
    assert K.ptx_shared_ordered("ld.shared.u32 %0, [%1];") == ()
    assert K.ptx_shared_ordered("st.release.cluster.shared::cluster.u32 [%0], %1;") == ()
    assert K.ptx_shared_ordered("ld.release.cta.shared.u32 %0, [%1];") is None
    (st,) = K.ptx_dsmem_accesses("st.release.cluster.shared::cluster.u32 [%0], %1;")
    assert (st.sync, st.scope, st.value_operand) == ("release", "cluster", 1)


def _analysis(name: str) -> Analysis:
    (m,) = models_of(str(ROOT / "fixtures" / "cluster" / name))
    return Analysis(m)


def test_flags_and_polls_of_the_ring():
    an = _analysis("flag_ring_good.cu")
    h = cluster_handoff.handoffs(an)
    assert sorted(h.flags) == ["empty", "full"]
    full, empty = h.flags["full"], h.flags["empty"]
    assert (full.rank, full.target, full.thread) == (0, 1, 0)
    assert (empty.rank, empty.target, empty.thread) == (1, 0, 0)
    assert sorted(p.flag.name for p in h.polls) == ["empty", "full"]
    facts = happens_before.memory(an)
    assert not facts.undecided and not facts.handoff_races and not facts.dsmem_races


def test_ring_races_by_cause():
    causes = {
        "flag_ring_relaxed_bad.cu": "release",
        "flag_ring_no_sync_after_poll_bad.cu": "lanes",
        "flag_ring_hand_back_early_bad.cu": "after_release",
        "flag_ring_no_empty_wait_bad.cu": "unwaited",
    }
    for name, cause in causes.items():
        races = happens_before.memory(_analysis(name)).handoff_races
        assert races and {r.cause for r in races} == {cause}, name
