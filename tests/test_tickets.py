"""Block-scope tickets (checks/tickets.py, issue 25 round 12): a `__shared__` counter's atomic whose
old value a branch tests, as a release -> acquire event of the happens-before engine and as one
execution per arriver for warp collectives."""

from __future__ import annotations

import pytest

from tkcheck.checks import happens_before, tickets, warp_collectives
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.model import ir

from conftest import CORPUS, ROOT

TICKETS = ROOT / "fixtures" / "tickets"


def _analysis(path) -> Analysis:
    (m,) = models_of(str(path))
    return Analysis(m)


def test_the_last_warps_ticket_is_broadcast_to_its_warp():
    an = _analysis(CORPUS / "idioms10" / "smem_atomic_last_warp.cu")
    (tk,) = tickets.tickets(an)
    assert tk.counter == "arrived_s"
    assert tk.arrivers == tuple(range(0, 256, 32))  # each warp's lane 0
    (bc,) = tk.broadcasts
    assert bc.src == 0
    reads = [o for o in an.model.ops if o.kind == ir.SMEM_ACCESS and o.access_mode == "read" and o.buffer is not None]
    g = tickets.guarded(an, reads[0])
    assert g is not None and g.k == 7 and g.drawn
    # the warp of the arriver that draws 7, its lanes below 8 (the `lane < WARPS` test)
    assert g.threads(64) == frozenset(range(64, 72))
    mem = happens_before.memory(an)
    assert not mem.ticket_races and not mem.races and not mem.undecided
    assert not warp_collectives.collectives(an).undecided


def test_a_leaders_own_ticket_orders_its_group_through_the_named_barrier():
    an = _analysis(TICKETS / "last_group_good.cu")
    (tk,) = tickets.tickets(an)
    assert tk.arrivers == (0, 128, 256, 384) and not tk.broadcasts
    mem = happens_before.memory(an)
    assert not mem.ticket_races and not mem.undecided and ("shared", "warp_sum_s") in mem.examined


@pytest.mark.parametrize(
    "name,why",
    [
        ("last_group_early_test_bad.cu", "count"),
        ("last_group_no_group_barrier_bad.cu", "gather"),
        ("last_group_relaxed_ref_bad.cu", "release"),
    ],
)
def test_what_the_ticket_does_not_order(name, why):
    an = _analysis(TICKETS / name)
    races = happens_before.memory(an).ticket_races
    assert races and races[0].why == why
    race = races[0]
    assert race.reader == race.arriver  # the leader reads
    assert race.writer != race.reader


def test_a_ticket_only_lane_0_holds_leaves_the_other_lanes_out_of_the_epilogues_shuffles():
    wc = warp_collectives.collectives(_analysis(TICKETS / "leader_warp_no_broadcast_bad.cu"))
    (mm,) = [m for m in wc.mismatches if m.kind == "missing"]
    assert mm.reaching == frozenset({0}) and "draws ticket 3 of `groups_done_s`" in mm.when
    assert mm.site.guard.opaque, "reported at the user's site, not at an instance"
    good = warp_collectives.collectives(_analysis(TICKETS / "leader_warp_broadcast_good.cu"))
    assert not good.mismatches and not good.undecided
