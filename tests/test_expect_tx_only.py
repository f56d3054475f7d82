"""r16-expecttx (issue 25): `mbarrier.expect_tx` without an arrival -- bytes on the current
phase, no arrival, no release -- in the op table (knowledge/ops), the IR (`Op.expect_arrivals`,
`Op.tx_only`), the barrier account (completion), the progress engine (protocol) and the
single-issue facts."""

from __future__ import annotations

import json

from tkcheck.checks import completion, protocol, single_issue, violations
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.knowledge import ops as K
from tkcheck.model import ir

from conftest import ROOT, cli

COMPLETION = ROOT / "fixtures" / "completion"


def _analyses(name: str) -> dict[str, Analysis]:
    return {m.name: Analysis(m) for m in models_of(str(COMPLETION / name))}


def test_ptx_expect_tx_is_bytes_without_arrival():
    for text in (
        "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;",
        "mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%0], %1;",
        "mbarrier.expect_tx.shared::cta.b64 [%0], %1;",
    ):
        (a,), understood = K.ptx_async_ops(text)
        assert understood and a.kind == ir.MBAR_EXPECT and a.barrier == "%0" and a.bytes == "%1"
        assert a.mbar is not None and a.mbar.tx_only and not a.unmodelled
    # the arriving form keeps its one arrival
    (b,), _ = K.ptx_async_ops("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;")
    assert b.kind == ir.MBAR_EXPECT and (b.mbar is None or not b.mbar.tx_only)


def test_account_counts_bytes_not_arrivals():
    ans = _analyses("expect_tx_only_good.cu")
    an = ans["ring_expect_apart"]
    (exp,) = an.model.ops_of(ir.MBAR_EXPECT)
    assert exp.tx_only and exp.expect_arrivals == 0
    acc = completion.accounts(an)["full"]
    assert acc.ok()
    # the arrivals of `full` are lane 31's arrive alone; the expect_tx is in the bytes only
    assert all(c.op.kind == ir.MBAR_ARRIVE for cs in acc.arrivals.values() for c in cs)
    assert any(c.op is exp for cs in acc.expects.values() for c in cs)
    for a in ans.values():
        assert not violations.byte_mismatches(a) and not violations.arrival_mismatches(a)
        # per-lane expects are not a copy issued twice
        assert not [o for o in single_issue.single_issue_ops(a.model) if o.kind == ir.MBAR_EXPECT]


def test_progress_and_coverage_are_decided_on_the_good_kernels():
    ans = _analyses("expect_tx_only_good.cu")
    for an in ans.values():
        ex = protocol.explore(an)
        assert ex.status == "explored" and ex.deadlock is None, (an.model.name, ex.reason)
    p = cli(["coverage", "expect_tx_only_good.cu", "--output-format", "json"], COMPLETION)
    recs = json.loads(p.stdout)
    assert len(recs) == 2
    assert all(r["obligations"] == r["obligations_decided"] and r["sync_ops"] == r["sync_ops_modelled"] for r in recs)


def test_expect_tx_is_no_arrival_of_the_count():
    an = _analyses("expect_tx_only_bad.cu")["count_two"]
    (mm,) = violations.arrival_mismatches(an)
    assert mm.name == "two_bar"


WARPCOLL = ROOT / "fixtures" / "warpcoll"


def test_elect_sync_elects_the_lowest_lane_of_its_constant_mask():
    ans = {m.name: Analysis(m) for m in models_of(str(WARPCOLL / "elect_arrival_good.cu"))}
    an = ans["upper_half_elects"]
    (arr,) = an.model.ops_of(ir.MBAR_ARRIVE)
    # lane 16 of each warp: one arrival a warp, the count of `done`
    assert an.threads.issuers(arr) == frozenset({16, 48, 80, 112})
    (coll,) = [o for o in an.model.ops_of(ir.WARP_COLL) if o.warp_coll.instr == "elect.sync"]
    assert coll.warp_coll.mask is not None and coll.warp_coll.mask.eval({}) == 0xFFFF0000
    for a in ans.values():
        assert not violations.arrival_mismatches(a)
        assert completion.accounts(a)[next(iter(a.model.barriers))].ok()


def test_libcu_barrier_expect_tx_is_bytes_without_arrival():
    (m,) = models_of(str(ROOT / "fixtures" / "libcu" / "barrier_expect_tx_good.cu"))
    an = Analysis(m)
    (exp,) = m.ops_of(ir.MBAR_EXPECT)
    assert exp.api == "cuda::device::barrier_expect_tx" and exp.tx_only and exp.expect_arrivals == 0
    assert not violations.byte_mismatches(an) and not violations.arrival_mismatches(an)


def test_expect_after_the_completing_arrival_leaves_the_bytes_undecided():
    ans = _analyses("expect_tx_only_bad.cu")
    acc = completion.accounts(ans["arrive_before_expect"])["late_bar"]
    assert not acc.ok() and acc.arrivals_ok()
    assert "not shown to come before the arrival that completes its phase" in acc.unknown[0]
    assert not violations.byte_mismatches(ans["arrive_before_expect"])
    # ordered by program order (count_two), by `__syncwarp` (short_copy): claimed
    assert completion.accounts(ans["short_copy"])["short_bar"].ok()
    assert completion.accounts(ans["count_two"])["two_bar"].ok()
