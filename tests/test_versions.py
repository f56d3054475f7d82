"""Reads validated by a version word and spins on a stored value (checks/versions.py, issue 25,
round 12): the engine's answers on the fixtures of fixtures/versions/, piece by piece."""

from __future__ import annotations

from tkcheck.checks import protocol, versions
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

VERSIONS = ROOT / "fixtures" / "versions"


def _analyses(name: str) -> dict[str, Analysis]:
    return {m.name: Analysis(m) for m in models_of(str(VERSIONS / name))}


def test_each_missing_piece_is_one_torn_read_with_its_pair():
    got = {
        name: [(t.kind, t.at.location.row, t.other.location.row) for t in versions.versions(an).torn]
        for name, an in _analyses("generation_record_bad.cu").items()
    }
    assert got == {
        "accepts_odd": [("odd", 30, 14)],  # the data load; the opening store whose value is kept
        "no_fence_after_odd": [("writer-open", 46, 44)],  # the data store; the opening store
        "no_fence_before_recheck": [("reader-second", 89, 90)],  # the data load; the second load
        "recheck_before_read": [("unbracketed", 121, 119)],
    }


def test_clean_protocols_are_decided_and_their_retry_loops_proved_left():
    for name in ("generation_record_good.cu", "counter_seqlock_good.cu"):
        (an,) = _analyses(name).values()
        vf = versions.versions(an)
        assert len(vf.reads) == 1 and not vf.torn and not vf.undecided, name
        sw = protocol.spin_waits(an)
        assert len(sw.proved) == 1 and not sw.undecided and not sw.unreached, name


def test_counted_writer_values_and_the_odd_number_kept():
    (an,) = _analyses("counter_seqlock_bad.cu").values()
    (t,) = versions.versions(an).torn
    # thread 0's two `atomicAdd(seq, 1)` per round: 2r + 1 after the first (from 0)
    assert t.kind == "odd" and t.value is not None and t.value.eval({"k1": 3}) == 7


def test_spin_past_the_last_stored_value_never_ends():
    (bad,) = _analyses("progress_count_bad.cu").values()
    (su,) = protocol.spin_waits(bad).unreached
    assert su.flag == "done" and su.initial == 0 and len(su.writes) == 1
    (good,) = _analyses("progress_count_good.cu").values()
    sw = protocol.spin_waits(good)
    assert len(sw.proved) == 1 and not sw.unreached and not sw.undecided
