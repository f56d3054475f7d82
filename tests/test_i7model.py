"""Round 8 (i7model, issue 25): an instruction the model does not know, on an mbarrier it names,
is an unmodelled use of THAT barrier -- its account, its waits' phases and the progress resting
on it undecided (coverage), never a finding, and the site counted "not modelled"."""

import json

from tkcheck.knowledge import ops as K

from conftest import ROOT, cli


def test_an_unknown_instruction_on_a_barrier_names_it():
    (a,), ok = K.ptx_async_ops("mbarrier.complete_tx.shared::cta.b64 [%0], %1;")
    assert not ok and a.unmodelled and a.barrier == "%0"
    # a completion on an mbarrier not modelled (a shared-to-peer bulk copy): the barrier is the
    # last address operand
    (b,), ok = K.ptx_async_ops(
        "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
    )
    assert not ok and b.unmodelled and b.barrier == "%3"
    # red.async into a peer's shared memory: a 4-byte delivery on the barrier, as st.async
    (r,), ok = K.ptx_async_ops(
        "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%0], %1, [%2];"
    )
    assert ok and not r.unmodelled and (r.barrier, r.buffer, r.bytes) == ("%2", "%0", "4") and r.mbar.remote_store
    # a one-shot probe changes no account: not an unmodelled use
    probes, ok = K.ptx_async_ops("mbarrier.test_wait.parity.shared::cta.b64 p, [%0], %1;")
    assert not ok and not probes


def test_unknown_barrier_op_is_coverage_not_a_finding():
    path = ROOT / "fixtures" / "completion" / "ptx_unmodelled_barrier_op.cu"
    p = cli(["coverage", str(path), "--output-format", "json"], ROOT)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    assert rec["analysed"]
    assert rec["sync_ops_modelled"] < rec["sync_ops"]  # the complete_tx site is not modelled
    text = json.dumps(rec["unknowns"])
    assert "complete_tx" in text
