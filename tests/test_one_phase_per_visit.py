"""Arrival sites of one role at different loop depths whose every visit brings a phase's count
(`completion._one_phase_per_visit`, round 8): decided, and a visit that overflows is TK302."""

from tkcheck.checks import completion, violations
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of

from conftest import ROOT

FIXTURE = ROOT / "fixtures" / "loops" / "one_phase_per_visit.cu"


def _accounts():
    out = {}
    for m in models_of(str(FIXTURE), text=FIXTURE.read_text()):
        an = Analysis(m)
        out[m.name] = (completion.accounts(an), violations.arrival_mismatches(an))
    return out


def test_sites_at_different_depths_each_a_whole_phase_are_decided():
    got = _accounts()
    for name in ("head_loop_tail<1>", "element_head_loop"):
        accs, mismatches = got[name]
        assert accs["scores"].ok(), accs["scores"].unknown
        assert not [r for r in mismatches if r.name == "scores"]


def test_a_visit_with_more_than_the_count_is_refuted_at_that_site():
    accs, mismatches = _accounts()["head_loop_tail<32>"]
    assert accs["scores"].ok()
    (rec,) = [r for r in mismatches if r.name == "scores"]
    assert [c.op.location.row for c in rec.contribs] == [44]
