"""Round 9 (r9b-cbarrier, issue 25): libcu++ `cuda::barrier::arrive_and_drop()` is PTX
`mbarrier.arrive_drop` (an arrival that lowers the expected count of this and every later
phase): the per-phase account (completion._ragged_account) follows it, and a ragged loop whose
rounds wait only while the thread goes on is still one round a phase."""

import json

from conftest import ROOT, cli

FIX = ROOT / "fixtures" / "libcu" / "barrier_drop_ragged.cu"


def test_arrive_and_drop_is_modelled_and_the_good_kernel_has_no_finding():
    p = cli(["coverage", str(FIX), "--output-format", "json"], ROOT)
    assert p.returncode == 0, p.stderr
    recs = {r["kernel"]: r for r in json.loads(p.stdout)}
    for r in recs.values():
        assert r["sync_ops_modelled"] == r["sync_ops"]  # arrive_and_drop no longer an unknown
        assert "arrive_and_drop: not modelled" not in json.dumps(r["unknowns"])
    # the good kernel's account is decided (no unknown about its arrivals per phase)
    assert "arrivals/bytes per phase" not in json.dumps(recs["drop_good"]["unknowns"])
    c = cli(["check", str(FIX), "--output-format", "json"], ROOT)
    found = json.loads(c.stdout)
    assert not [f for f in found if f["kernel"] == "drop_good"]
    assert {(f["kernel"], f["code"]) for f in found} == {("drop_plain", "TK302"), ("drop_count", "TK302")}


def test_break_at_a_per_thread_round_is_a_per_thread_trip_count():
    """`for (k = 0; k < 4; k++) { if (k == last) { drop; break; } arrive; wait; }`: each thread
    starts last + 1 iterations (4 where last >= 4), so the barrier's phases are enumerated."""
    fix = ROOT / "fixtures" / "libcu" / "barrier_drop_break.cu"
    c = cli(["check", str(fix), "--output-format", "json"], ROOT)
    found = json.loads(c.stdout)
    assert {(f["kernel"], f["code"]) for f in found} == {
        ("break_plain", "TK302"),
        ("break_count", "TK302"),
        ("break_no_sync", "TK307"),  # the drop's threads over the iterations (ThreadSets.over_iterations)
    }
    (plain,) = [f for f in found if f["kernel"] == "break_plain"]
    assert "[128, 128, 96, 64]" in plain["message"]
    p = cli(["coverage", str(fix), "--output-format", "json"], ROOT)
    good = [r for r in json.loads(p.stdout) if r["kernel"] == "break_good"][0]
    assert "arrivals/bytes per phase" not in json.dumps(good["unknowns"])
