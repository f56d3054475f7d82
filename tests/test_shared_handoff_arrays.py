"""Round 17 (issue 25): index arrays in the shared-memory hand-off engine (one lap counter per
ring slot, checks/shared_handoff._array_index): fixtures/handoff/lap_slots_*.cu."""

from tkcheck.checks import happens_before, shared_handoff
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT


def _analysis(name: str, text: str | None = None) -> Analysis:
    (m,) = models_of(str(ROOT / "fixtures" / "handoff" / name), text=text)
    return Analysis(m)


def test_lap_counter_array_is_an_index_and_its_poll_reads_an_element():
    an = _analysis("lap_slots_good.cu")
    h = shared_handoff.handoffs(an)
    assert sorted(h.indices) == ["freed", "ready"]
    freed = h.indices["freed"]
    assert freed.element is not None and freed.extent is not None and freed.extent.eval({}) == 4
    assert h.indices["ready"].element is None
    (p,) = [p for p in h.polls if p.index is freed]
    assert p.element is not None
    facts = happens_before.memory(an)
    assert not facts.undecided and not facts.handoff_races


def test_lap_behind_is_a_race_the_producer_does_not_wait_for():
    races = happens_before.memory(_analysis("lap_slots_behind_bad.cu")).handoff_races
    assert races and {r.cause for r in races} == {"unwaited"}
    assert {r.indices for r in races} == {("freed",)}


def test_an_element_the_initial_stores_do_not_cover_is_no_poll():
    # the zeroing loop covers freed[0..2] only: the poll of freed[3] could see any value, so the
    # array is no poll's index, and the slot pairs stay undecided (no finding, no proof)
    text = (ROOT / "fixtures" / "handoff" / "lap_slots_good.cu").read_text()
    text = text.replace(
        "for (int s = 0; s < DEPTH; s++) freed[s] = 0;", "for (int s = 0; s < DEPTH - 1; s++) freed[s] = 0;"
    )
    an = _analysis("lap_slots_good.cu", text)
    h = shared_handoff.handoffs(an)
    assert not [p for p in h.polls if p.index.name == "freed"]
    facts = happens_before.memory(an)
    assert not facts.handoff_races and facts.undecided
