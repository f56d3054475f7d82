"""-j N: a check per forked child of a warm parent (the engine imported once, before the first
fork); a cached result costs no process.

The checks are patched in the parent before the children are forked (fork copies them): a file
named `crash*` ends its process, `hang*` never finishes. Nothing here is timed."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest

from conftest import ROOT

from tkcheck.cli import cli as C
from tkcheck import evaluate
from tkcheck.engine import CheckOptions

KERNEL = "__global__ void k{i}(float *p) {{ p[threadIdx.x] = {i}.0f; }}\n"
# a whole warp issues one TMA copy (TK302, TK403): the language server's fixture
BAD = (ROOT / "fixtures" / "server" / "lane_elect_bad.cu").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(not C._can_fork(), reason="workers need fork")


def _jobs(tmp_path, n, cache_dir=None, names=None):
    opts = CheckOptions(enabled=evaluate.all_codes(), cache_dir=cache_dir)
    jobs = []
    for i in range(n):
        name = names[i] if names else f"k{i}.cu"
        p = tmp_path / name
        p.write_text(BAD if i % 3 == 0 else KERNEL.format(i=i), encoding="utf-8")
        jobs.append(C._Job(i, str(p), opts))
    return jobs


def _summary(res):
    return (res.path, [(f.code, f.location.row, f.message) for f in res.findings], res.notes, res.internal_errors)


def test_forked_checks_give_what_checks_in_this_process_give(tmp_path):
    jobs = _jobs(tmp_path, 9)
    in_process = C.run_jobs(jobs, 1, False, isolate=False)
    for workers in (1, 2):
        got = C.run_jobs(jobs, workers, False, file_timeout=300)
        assert [_summary(r) for r in got] == [_summary(r) for r in in_process]
    assert [sorted({f.code for f in r.findings}) for r in in_process[:2]] == [["TK302", "TK403"], []]


def test_a_crashed_or_stuck_check_costs_only_its_file(tmp_path, monkeypatch):
    names = ["a.cu", "crash.cu", "b.cu", "hang.cu", "c.cu", "d.cu"]
    jobs = _jobs(tmp_path, len(names), names=names)
    real = C._check_job

    def check(job):
        base = os.path.basename(job.path)
        if base.startswith("crash"):
            os._exit(3)
        if base.startswith("hang"):
            time.sleep(3600)
        return real(job)

    monkeypatch.setattr(C, "_check_job", check)
    got = C.run_jobs(jobs, 2, False, file_timeout=20)
    by_name = {os.path.basename(r.path): r for r in got}
    assert [os.path.basename(r.path) for r in got] == names  # job order
    assert "exited with status 3" in by_name["crash.cu"].internal_errors[0]
    assert "stopped after 20 s" in by_name["hang.cu"].internal_errors[0]
    for n in ("a.cu", "b.cu", "c.cu", "d.cu"):
        assert not by_name[n].internal_errors, by_name[n].notes
    assert by_name["a.cu"].findings  # a.cu is job 0: the racy kernel


def test_a_cached_result_is_answered_without_a_process(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    jobs = _jobs(tmp_path, 4, cache_dir=str(cache))
    first = C.run_jobs(jobs, 2, False)
    assert not any(r.cached for r in first)

    def no_workers(*a, **k):
        raise AssertionError("a process was started for cached results")

    monkeypatch.setattr(C, "_run_forked", no_workers)
    again = C.run_jobs(jobs, 2, False)
    assert all(r.cached for r in again)
    assert [_summary(r) for r in again] == [_summary(r) for r in first]
    # an edited file is checked again (in a child), the others still come from the cache
    monkeypatch.undo()
    (tmp_path / "k1.cu").write_text(KERNEL.format(i=41), encoding="utf-8")
    mixed = C.run_jobs([replace(j) for j in jobs], 2, False)
    assert [r.cached for r in mixed] == [True, False, True, True]


def test_a_worker_checks_worker_files_files_then_a_fresh_fork_takes_over(tmp_path, monkeypatch):
    """WORKER_FILES bounds what one worker checks (issue 28): with 2, five files on one worker
    go to three processes, two files each but the last, in job order; the answers are those of
    checks in this process (each check starts from nothing a former one left)."""
    jobs = _jobs(tmp_path, 5)
    in_process = C.run_jobs(jobs, 1, False, isolate=False)
    real = C._check_job

    def check(job):  # patched before the forks: the worker's process id travels in a note
        i, res = real(job)
        res.notes.append(f"pid {os.getpid()}")
        return i, res

    monkeypatch.setattr(C, "_check_job", check)
    monkeypatch.setattr(C, "WORKER_FILES", 2)
    got = C.run_jobs(jobs, 1, False, file_timeout=300)
    pids = [next(n for n in r.notes if n.startswith("pid ")) for r in got]
    assert pids[0] == pids[1] and pids[2] == pids[3] and len({pids[0], pids[2], pids[4]}) == 3, pids
    assert os.getpid() not in {int(p.split()[1]) for p in pids}
    for r, want in zip(got, in_process):
        r.notes = [n for n in r.notes if not n.startswith("pid ")]
        assert _summary(r) == _summary(want)


def test_the_parent_warms_what_every_worker_would_import_and_nothing_of_a_check(tmp_path):
    """`_warm_for_workers` (issue 28), in a fresh interpreter: the checks and the front end's
    modules (the SASS cross-check only with --sass), the modules of the rules the jobs enable and
    no other (but the two the engine itself imports: parse errors and unused suppressions, as in
    tests/test_conventions.py), libclang's version and the model's digest when a cache is used."""
    import subprocess
    import sys

    k = tmp_path / "k.cu"
    k.write_text(KERNEL.format(i=1), encoding="utf-8")
    code = (
        "import sys\n"
        "from tkcheck.cli import cli as C\n"
        "from tkcheck.engine import CheckOptions\n"
        "from tkcheck.frontend import parse as P\n"
        f"opts = CheckOptions(enabled=frozenset({{'TK302'}}), cache_dir={str(tmp_path / 'cache')!r})\n"
        f"C._warm_for_workers([C._Job(0, {str(k)!r}, opts), C._Job(1, {str(k)!r}, opts)])\n"
        "print('libclang', P._libclang_version.cache_info().currsize, 'digest', len(P._DIGEST))\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[0] == "libclang 1 digest 1"
    mods = set(lines[1:])
    import pkgutil

    import tkcheck.checks
    import tkcheck.frontend

    for pkg in (tkcheck.checks, tkcheck.frontend):
        for m in pkgutil.iter_modules(pkg.__path__):
            name = f"{pkg.__name__}.{m.name}"
            assert (name in mods) == (m.name != "sass_cross"), name
    from tkcheck import registry

    rules = {m for m in mods if m.startswith("tkcheck.rules.tk")}
    assert f"tkcheck.rules.{registry.catalog()['TK302'].module}" in rules
    always = {"tkcheck.rules.tk000_parse_error", "tkcheck.rules.tk001_unused_suppression"}
    others = {f"tkcheck.rules.{i.module}" for c, i in registry.catalog().items() if c != "TK302"} - always
    assert not rules & others, sorted(rules & others)
