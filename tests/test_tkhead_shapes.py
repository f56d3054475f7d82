"""Shapes of TK HEAD's undecided obligations, decided (round 8): arrival sites of one role at
different loop depths whose every visit brings a phase's count (`completion._one_phase_per_visit`;
a visit that overflows is TK302), and a consumer's wait on loads issued by a warp picked by the
iteration (`phases._pre_completions` reads the per-iteration issuers)."""

from tkcheck.checks import completion, phases, violations
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


WAITS = ROOT / "fixtures" / "completion" / "warp_per_iteration_waits.cu"


def test_loads_by_a_warp_picked_by_the_iteration_are_another_roles_loop():
    got = {}
    for m in models_of(str(WAITS), text=WAITS.read_text()):
        for wp in phases.phases(Analysis(m)):
            if wp.op.barrier.name == "loaded":
                got[m.name] = wp
    assert got["turns_consumer<0>"].status == "ok", got["turns_consumer<0>"].reason
    bad = got["turns_consumer<1>"]
    assert bad.status == "mismatch" and bad.witness["iteration"] == 0


PIPELINED = ROOT / "fixtures" / "loops" / "pipelined_release_visits.cu"


def _pipelined():
    out = {}
    for m in models_of(str(PIPELINED), text=PIPELINED.read_text()):
        an = Analysis(m)
        out[m.name] = (completion.accounts(an), violations.arrival_mismatches(an), violations.byte_mismatches(an))
    return out


def test_a_pipelined_walks_visit_loops_and_interleaved_releases_are_decided():
    # round 17: a release loop of constant trip directly in the task loop (its round the task
    # loop), and two stages released in one half loop (proved apart): one phase a visit
    got = _pipelined()
    accs, arrivals, _ = got["pipelined_release<1>"]
    assert accs["freed"].ok(), accs["freed"].unknown
    assert not [r for r in arrivals if r.name == "freed"]
    accs, arrivals, _ = got["pipelined_release<3>"]
    (rec,) = [r for r in arrivals if r.name == "freed"]
    assert [c.op.location.row for c in rec.contribs] == [60]


def test_a_release_loop_on_a_stage_known_only_as_a_walks_value_is_one_visit():
    # the body walk's last stage after the k loop: its index reads none of the half loop's
    # counters, so the loop lands on one stage (`visit_groups.one_phase_visit`)
    accs, arrivals, _ = _pipelined()["pipelined_release_once<1>"]
    assert accs["freed"].ok(), accs["freed"].unknown
    assert not [r for r in arrivals if r.name == "freed"]


def test_a_pipelined_walks_armed_visits_pair_their_bytes_with_one_stage():
    got = _pipelined()
    accs, _, byts = got["pipelined_arm<1>"]
    assert accs["full"].ok(), accs["full"].unknown
    assert not [r for r in byts if r.name == "full"]
    accs, _, byts = got["pipelined_arm<2>"]
    (rec,) = [r for r in byts if r.name == "full"]
    assert [c.op.location.row for c in rec.exps] == [grep_row("TAIL_TILES * size_bytes")]


def grep_row(text: str) -> int:
    return next(i for i, line in enumerate(PIPELINED.read_text().splitlines(), 1) if text in line)
