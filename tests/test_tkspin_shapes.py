"""Shapes of TK HEAD's parallel kernels, decided (round 13, branch r13-tkspin): a counted loop
whose header declares several variables, a persistent loop's exit test that names the thread yet
is the same for every thread running it, and bulk stores whose read wait follows a wait in an
inner loop or sits under the store's own test of a loaded value. Each good fixture is decided
in full; what must stay open stays open."""

import json

from tkcheck.engine import models_of
from tkcheck.model.expr import alike_for_all

from conftest import ROOT, cli

LOOPS = ROOT / "fixtures" / "loops"
COMPLETION = ROOT / "fixtures" / "completion"


def _coverage(path):
    p = cli(["coverage", path.name, "--output-format", "json"], path.parent)
    return {r["kernel"]: r for r in json.loads(p.stdout)}


def _decided(path):
    for name, rec in _coverage(path).items():
        assert rec["obligations"] > 0, name
        assert rec["obligations_decided"] == rec["obligations"], (name, rec["unknowns"])


def test_the_induction_variable_is_the_one_the_increment_names():
    (m,) = models_of(str(LOOPS / "for_several_declarators_good.cu"))
    counted = {lp.location.row: lp for lp in m.loops.values()}
    assert counted[23].var == "k" and counted[23].trip is not None and not counted[23].infinite
    assert counted[31].var == "k" and counted[31].trip is not None  # `k++, done++`: k, named by the condition
    assert not [o for o in m.ops if o.kind == "spin"]
    _decided(LOOPS / "for_several_declarators_good.cu")


def test_a_break_test_every_running_thread_answers_alike_is_the_loops_exit():
    (m,) = models_of(str(LOOPS / "break_alike_for_runners_good.cu"))
    consumer = next(lp for lp in m.loops.values() if lp.location.row == 35)
    assert consumer.continues and not any(c.depends_on("thread") for c in consumer.continues)
    _decided(LOOPS / "break_alike_for_runners_good.cu")


def test_a_break_test_that_differs_between_threads_stays_per_thread(tmp_path):
    src = (LOOPS / "break_alike_for_runners_good.cu").read_text()
    # warpgroup 1 leaves one task earlier than warpgroup 0: not one exit for the block
    src = src.replace("if (row == -1) break;", "if (row == -1 || row + 1 >= 2 * ntasks) break;")
    (tmp_path / "k.cu").write_text(src)
    (m,) = models_of(str(tmp_path / "k.cu"))
    consumer = next(lp for lp in m.loops.values() if lp.location.row == 35)
    assert not consumer.continues


def test_a_store_waited_after_an_inner_loop_of_waits_is_waited():
    _decided(COMPLETION / "store_wait_in_inner_loop_good.cu")
    (rec,) = _coverage(COMPLETION / "store_wait_in_inner_loop_bad.cu").values()
    assert [u["why"] for u in rec["unknowns"]] == [
        "TMA store from 'o_s[0]': waited for before its thread exits not established: "
        "`tma::store_async_read_wait` in another loop or of threads not known"
    ]


def test_a_wait_under_the_stores_own_test_of_loaded_data_covers_it(tmp_path):
    _decided(COMPLETION / "store_under_loaded_test_good.cu")
    # the wait under another test of loaded data may skip some storing lanes: open, no finding
    src = (COMPLETION / "store_under_loaded_test_good.cu").read_text()
    src = src.replace("                tma::store_async_wait();\n            }", "            }\n")
    src = src.replace(
        "        __syncthreads();", "        if (idx[it] > 0) tma::store_async_wait();\n        __syncthreads();"
    )
    (tmp_path / "k.cu").write_text(src)
    (rec,) = _coverage(tmp_path / "k.cu").values()
    assert rec["obligations_decided"] < rec["obligations"]
    p = cli(["check", "k.cu", "--select", "TK504"], tmp_path)
    assert "TK504" not in p.stdout


def test_a_value_every_thread_carries_alike_across_groups_is_uniform():
    # `tile` left by a walk of a uniform test and no break, carried to the next group: the
    # walk's test is block-uniform, so the threads of its barriers are known
    _decided(LOOPS / "uniform_task_walk_good.cu")
    (m,) = models_of(str(LOOPS / "uniform_task_walk_good.cu"))
    arrive = next(o for o in m.ops if o.kind == "mbar_arrive")
    assert arrive.guard.exact and all(alike_for_all(c) for c in arrive.guard.uniform)
    p = cli(["check", "uniform_task_walk_bad.cu", "--select", "TK302"], LOOPS)
    assert "TK302" in p.stdout


def test_a_carried_value_updated_per_thread_stays_unknown(tmp_path):
    src = (LOOPS / "uniform_task_walk_good.cu").read_text()
    # the threads of the second warpgroup step by one tile more: no longer one value for all
    src = src.replace("tile -= n;", "tile -= n - (threadIdx.x >= 128);")
    (tmp_path / "k.cu").write_text(src)
    (m,) = models_of(str(tmp_path / "k.cu"))
    arrive = next(o for o in m.ops if o.kind == "mbar_arrive")
    assert not arrive.guard.exact
