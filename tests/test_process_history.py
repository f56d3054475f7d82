"""A check answers the same whatever the process checked before: each check has a z3 context of
its own (solver.session) and per-check memos (solver.memo), so a long-lived worker (-j), the
language server or `--debug` (every file in one process) give a file the findings and witnesses a
process of its own gives it.

Until round 8 `solver.fresh_context` set `z3._main_ctx` (an attribute of the package, which z3's
`main_ctx()` never reads): every check of a process shared one z3 context, and
`fixtures/layout/reinterpret_bad.cu` after `wide_b_operand_clean.cu` gave TK104 at element
(21, 8) instead of (10, 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import z3

from conftest import ROOT

from tkcheck import solver
from tkcheck.cli import cli as C
from tkcheck.model import expr as E

# files whose witnesses (counterexample elements, values) come from z3 models, and others that
# fill the z3 context before them: layout proofs, phases, protocol, happens-before
BEFORE = [
    "fixtures/layout/wide_b_operand_clean.cu",
    "fixtures/layout/handwritten_epilogue.cu",
    "fixtures/completion/bad_consumer_parity_flipped.cu",
    "corpus/hopper/gemm_ring.cu",
]
AFTER = [
    "fixtures/layout/reinterpret_bad.cu",
    "fixtures/layout/handwritten_epilogue.cu",
    "fixtures/completion/bad_consumer_parity_flipped.cu",
]


def _json_check(files: list[str], *extra: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tkcheck",
            "check",
            "--no-cache",
            "--exit-zero",
            "-q",
            "--output-format",
            "json",
            "--file-timeout",
            "0",
            *extra,
            *files,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    found = json.loads(out.stdout)
    for f in found:
        f.pop("fingerprint", None)
    return found


def _of(findings: list[dict], path: str) -> list[dict]:
    return sorted((f for f in findings if f["filename"].endswith(path)), key=lambda f: json.dumps(f, sort_keys=True))


def test_files_checked_after_others_in_one_process_answer_as_alone():
    """Every file in one process (--debug) after others vs each file in a process of its own:
    the same findings, messages, witnesses and traces."""
    together = _json_check([*BEFORE, *AFTER], "--debug")
    for path in AFTER:
        alone = _json_check([path])
        assert _of(together, path) == _of(alone, path), path
    assert any("element (10, 0)" in f["message"] for f in _of(together, AFTER[0]))


# files whose witnesses (a phase counterexample's sizes and block) came from z3's own pick among
# the models, which follows z3's process-wide history even in a fresh context (round 8 shipped
# WORKER_FILES = 1 for them); now the smallest model (solver.smallest_model)
HISTORY = [
    "fixtures/loops/bitfield_conditional_flip.cu",
    "fixtures/loops/bitfield_in_record.cu",
    "fixtures/loops/counter_exit.cu",
]


def _z3_history(n: int) -> None:
    """Work in a z3 context of its own, then dropped: what an earlier check leaves behind."""
    c = z3.Context()
    xs = [z3.Int(f"v{i}", c) for i in range(n)]
    o = z3.Optimize(ctx=c)
    o.add(z3.Sum(xs) > 5)
    o.minimize(xs[0])
    assert o.check() == z3.sat
    o.model()


@pytest.mark.parametrize("rel", HISTORY)
def test_a_check_answers_the_same_after_z3_was_used_in_other_contexts(rel):
    """The same check before and after z3 worked in other contexts of the process: the whole
    result equal (findings with witnesses, notes, coverage). Before round 9,
    bitfield_conditional_flip's TK303 at line 63 gave tasks 60, gridDim.x 2 first and tasks 2,
    gridDim.x 1 after `_z3_history(10)` (tasks 47, gridDim.x 15 after `_z3_history(1000)`)."""
    import importlib.util as iu

    from tkcheck.engine import check_file
    from tkcheck.expectations import options_for, parse_fixture

    spec = iu.spec_from_file_location("tkcheck_dump_checks", ROOT / "scripts" / "dump_checks.py")
    assert spec is not None and spec.loader is not None
    dump = iu.module_from_spec(spec)
    spec.loader.exec_module(dump)
    path = ROOT / rel
    text = path.read_text()
    opts = options_for(parse_fixture(text)[0])

    def result() -> str:
        # the whole result as scripts/dump_checks.py writes it (clock fields dropped)
        return json.dumps(dump.plain(check_file(str(path), opts, text)), sort_keys=True)

    first = result()
    assert '"witness"' in first
    for n in (5, 10, 1000):
        _z3_history(n)
        assert result() == first, (rel, n)


def test_the_history_files_after_others_in_one_process_answer_as_alone():
    """The files whose witnesses followed the process's history, after others in one process
    (--debug) and each in a process of its own (one forked child per file)."""
    together = _json_check([*BEFORE, *HISTORY], "--debug")
    alone = _json_check(HISTORY)
    for path in HISTORY:
        assert _of(together, path) == _of(alone, path), path
        assert _of(alone, path), path


def test_a_session_has_a_z3_context_of_its_own_and_restores_the_outer_one():
    outer = z3.main_ctx()
    with solver.session() as ctx:
        assert ctx.z3ctx is not None and z3.main_ctx() is ctx.z3ctx and ctx.z3ctx is not outer
        assert z3.Int("x").ctx is ctx.z3ctx
        first = ctx.z3ctx
        solver.fresh_context()
        assert z3.main_ctx() is ctx.z3ctx is not first
        with solver.session() as inner:
            assert z3.main_ctx() is inner.z3ctx is not ctx.z3ctx
        assert z3.main_ctx() is ctx.z3ctx
    assert z3.main_ctx() is outer


def test_memos_live_as_long_as_their_check():
    with solver.session():
        solver.memo("t")["a"] = 1
        assert solver.memo("t") == {"a": 1}
        with solver.session():
            assert solver.memo("t") == {}
        assert solver.memo("t") == {"a": 1}
    with solver.session():
        assert solver.memo("t") == {}
    # outside a session: the thread's default context, as before
    x = E.Var("x", E.PARAM)
    assert solver.always(E.binop("==", x, x)) is True


@pytest.mark.skipif(not C._can_fork(), reason="workers need fork")
def test_a_worker_checks_many_files_and_answers_as_a_process_per_file(tmp_path, monkeypatch):
    """-j 1 with a worker that checks every file in one process (WORKER_FILES = 64, the default
    since round 9) gives what a process per file gives (WORKER_FILES = 1) on these files,
    witnesses included."""
    from tkcheck import evaluate
    from tkcheck.engine import CheckOptions

    opts = CheckOptions(enabled=evaluate.all_codes())
    jobs = [C._Job(i, str(ROOT / p), opts) for i, p in enumerate([*BEFORE[:2], *AFTER, *HISTORY])]
    monkeypatch.setattr(C, "WORKER_FILES", 64)
    pooled = C.run_jobs(jobs, 1, False, file_timeout=0)
    monkeypatch.setattr(C, "WORKER_FILES", 1)
    per_file = C.run_jobs(jobs, 1, False, file_timeout=0)

    def summary(r):
        return (
            r.path,
            [(f.code, f.location.row, f.location.column, f.message, f.witness) for f in r.findings],
            r.notes,
        )

    assert [summary(r) for r in pooled] == [summary(r) for r in per_file]
    assert not any(r.internal_errors for r in pooled)
