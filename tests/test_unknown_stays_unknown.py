"""Round 17 (issue 25, item 5 "unknown stays unknown"): values read per iteration that were one
value for the loop (a local array's element, a TK `gl` element, a `gl`'s raw pointer), calls the
model does not know that receive a libcu++ barrier, and three constructs the walk read as less
than they are (`cg::invoke_one`, `c ? shared[l] : 0`, a temporary `atomic_ref`)."""

import json

from tkcheck.engine import models_of
from tkcheck.model import expr as E

from conftest import ROOT, cli

LOOPS = ROOT / "fixtures" / "loops"
LIBCU = ROOT / "fixtures" / "libcu"


def _coverage(path):
    p = cli(["coverage", path.name, "--output-format", "json"], path.parent)
    return {r["kernel"]: r for r in json.loads(p.stdout)}


def test_per_iteration_is_an_opaque_app_that_a_substitution_replaces_whole():
    v = E.opaque("len[t]")
    k = E.Var("k2", E.LOOP)
    x = E.per_iteration(v, (k,))
    assert isinstance(x, E.App) and x.is_opaque() and E.per_iteration_name(x) == v.name
    assert E.per_iteration(v, ()) is v  # outside every loop: the one unknown
    assert E.substitute(E.binop("+", x, E.Const(1)), {v.name: E.Const(3)}) == E.Const(4)
    assert E.per_iteration_name(E.App("?f#1", (k,))) is None  # a value read from memory (round 16)


def test_lengths_read_per_iteration_are_no_single_value_for_the_loop():
    path = LOOPS / "local_array_per_iteration_bad.cu"
    models = {m.name: m for m in models_of(str(path))}
    for name in ("segments_local", "segments_gl", "segments_raw_ptr"):
        m = models[name]
        # the producer's segment length is a function of the segment counter
        counters = {
            v.kind for lp in m.loops.values() if lp.trip is not None for a in E.apps(lp.trip) for v in a.free_vars()
        }
        assert E.LOOP in counters and E.OPAQUE in counters, (name, counters)
    cov = _coverage(path)
    for name in ("segments_local", "segments_gl", "segments_raw_ptr"):
        whys = [u["why"] for u in cov[name]["unknowns"]]
        # the progress of the hanging kernels is not proved with one length for every segment
        assert any(w.startswith("progress") for w in whys), (name, whys)


def test_lengths_read_per_iteration_keep_their_accounts_decided():
    cov = _coverage(LOOPS / "local_array_per_iteration_good.cu")
    for name in ("segments_local", "segments_gl", "segments_raw_ptr"):
        whys = [u["why"] for u in cov[name]["unknowns"]]
        assert not any("arrivals/bytes per phase" in w for w in whys), (name, whys)


def test_a_barrier_passed_to_a_call_tkcheck_does_not_model_is_undecided():
    cov = _coverage(LIBCU / "barrier_unmodelled_call_bad.cu")
    calls = {"by_reference": "extra_arrive", "by_pointer": "extra_arrive_ptr", "libcu_call": "barrier_native_handle"}
    for name, call in calls.items():
        rec = cov[name]
        whys = [u["why"] for u in rec["unknowns"]]
        assert any("arrivals/bytes per phase" in w and call in w for w in whys), (name, whys)
        assert any(w.startswith("wait on 'ready'") for w in whys), (name, whys)
        assert any(w.startswith("progress") and call in w for w in whys), (name, whys)
    whys = [u["why"] for u in cov["pipeline_call"]["unknowns"]]
    for arr in ("pss.produced", "pss.consumed"):
        assert any(f"barrier '{arr}'" in w and "extra_commit" in w for w in whys), (arr, whys)
    good = _coverage(LIBCU / "barrier_unmodelled_call_good.cu")["by_reference"]
    assert not any("ready" in u["why"] and "barrier" in u["why"] for u in good["unknowns"]), good["unknowns"]


def test_a_temporary_atomic_ref_is_a_modelled_site():
    rec = _coverage(ROOT / "fixtures" / "atomics" / "atomic_ref_temporary_good.cu")["publish_rows"]
    assert rec["sync_ops"] == rec["sync_ops_modelled"] == 4, rec


def test_a_selected_shared_element_is_read_as_a_value():
    rec = _coverage(ROOT / "fixtures" / "memory" / "select_shared_element_good.cu")["block_absmax"]
    assert rec["obligations"] > 0 and rec["obligations_decided"] == rec["obligations"], rec["unknowns"]


def test_invoke_one_is_a_branch_of_one_thread():
    (m, _) = models_of(str(ROOT / "fixtures" / "cg" / "invoke_one_good.cu"))
    stores = [o for o in m.ops if o.kind == "smem_access" and o.access_mode == "write"]
    assert len(stores) == 1 and str(stores[0].guard.thread) == "(tid == 0)", [str(o.guard.thread) for o in stores]
