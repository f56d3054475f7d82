"""Adopting tkcheck in an existing kernel repository: configuration per file, suppressions in any
comment, a baseline, SARIF for code scanning, mechanical fixes, messages in the user's words, and
the small usage errors that used to be internal errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ROOT
from tkcheck.cli.cli import main

BAD = (ROOT / "fixtures" / "completion" / "bad_consumer_parity_flipped.cu").read_text()
COUNTS = (ROOT / "fixtures" / "core" / "arrival_count.cu").read_text()
TK406_FIXABLE = """\
#include "kittens.cuh"
using namespace kittens;
__global__ void r(float *out) {
    if (warpgroup::groupid() == 0) {
        warpgroup::decrease_registers<40>();
    } else {
        warpgroup::increase_registers<232>();
        out[threadIdx.x] = 1.0f;
    }
}
void launch(float *o) { r<<<1, 384>>>(o); }
"""
WHOLE_WARP = """\
#include "kittens.cuh"
using namespace kittens;
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    __shared__ semaphore bar;
    __shared__ tile a;
    if (threadIdx.x == 0) init_semaphore(bar, 0, 32);
    __syncthreads();
    if (warpid() == 0) {
        tma::expect(bar, a);
        tma::load_async(a, A, {0, 0, 0, 0}, bar);
    }
    wait(bar, 0);
}
"""


def run(args, cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["--no-cache", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


# ---------------------------------------------------------------- configuration per file


def test_each_file_gets_its_closest_config(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "k.cu").write_text(COUNTS)
    (tmp_path / "b" / "k.cu").write_text(COUNTS)
    (tmp_path / "a" / "tkcheck.toml").write_text('select = ["TK302"]\n')
    (tmp_path / "b" / "pyproject.toml").write_text('[tool.tkcheck]\nselect = ["TK303"]\n')
    folder = run(["--output-format", "concise", "."], tmp_path)
    files = run(["--output-format", "concise", "a/k.cu", "b/k.cu"], tmp_path)
    assert folder.stdout == files.stdout  # pre-commit (files) and CI (a folder) agree
    lines = folder.stdout.splitlines()
    assert lines and all(("a/k.cu" in l and "[TK302]" in l) or ("b/k.cu" in l and "[TK303]" in l) for l in lines)
    assert any("[TK302]" in l for l in lines) and any("[TK303]" in l for l in lines)


# ---------------------------------------------------------------- suppressions, end to end


@pytest.mark.parametrize(
    "comment",
    [
        "/* tkcheck: ignore[TK303] */",
        "// the consumer's parity // tkcheck: ignore[TK303]",
        "/* see the producer */ // tkcheck: ignore[TK303] // intended",
    ],
)
def test_suppression_spellings(tmp_path, comment):
    lines = BAD.splitlines()
    lines[26] = lines[26].split("//")[0].rstrip() + "  " + comment  # row 27: the TK303
    (tmp_path / "k.cu").write_text("\n".join(lines) + "\n")
    r = run(["k.cu"], tmp_path)
    assert r.exit_code == 0 and "TK303" not in r.stdout, r.output


def test_directive_that_does_not_parse_is_tk000(tmp_path):
    lines = BAD.splitlines()
    lines[26] = lines[26].split("//")[0].rstrip() + "  // tkcheck ignore[TK303]"
    (tmp_path / "k.cu").write_text("\n".join(lines) + "\n")
    r = run(["k.cu"], tmp_path)
    assert r.exit_code == 2 and "[TK000]" in r.stdout and "looks like a tkcheck directive" in r.stdout


# ---------------------------------------------------------------- baseline


def test_baseline_records_todays_findings_and_fails_only_new_ones(tmp_path):
    (tmp_path / ".git").mkdir()  # the repository root, for repository-relative paths
    (tmp_path / "k.cu").write_text(BAD)
    w = run(["--write-baseline", "tkcheck-baseline.json", "k.cu"], tmp_path)
    assert w.exit_code == 0 and "1 finding(s) recorded" in w.stderr
    data = json.loads((tmp_path / "tkcheck-baseline.json").read_text())
    assert [r["code"] for r in data["findings"]] == ["TK303"]
    r = run(["--baseline", "tkcheck-baseline.json", "k.cu"], tmp_path)
    assert r.exit_code == 0 and "TK303" not in r.stdout, r.output
    # lines inserted above and the file re-indented: still the same finding
    shifted = "// a new comment\n// and another\n\n" + BAD.replace("\n    ", "\n      ")
    (tmp_path / "k.cu").write_text(shifted)
    r = run(["--baseline", "tkcheck-baseline.json", "k.cu"], tmp_path)
    assert r.exit_code == 0, r.output
    # a new finding fails; the recorded one stays hidden
    (tmp_path / "k2.cu").write_text(BAD)
    r = run(["--baseline", "tkcheck-baseline.json", "--output-format", "concise", "k.cu", "k2.cu"], tmp_path)
    assert r.exit_code == 1 and r.stdout.count("[TK303]") == 1 and "k2.cu" in r.stdout
    # the config key does the same
    (tmp_path / "tkcheck.toml").write_text('baseline = "tkcheck-baseline.json"\n')
    assert run(["k.cu"], tmp_path).exit_code == 0


def test_bad_baseline_exits_2(tmp_path):
    (tmp_path / "k.cu").write_text(BAD)
    (tmp_path / "b.json").write_text("[1]")
    r = run(["--baseline", "b.json", "k.cu"], tmp_path)
    assert r.exit_code == 2 and "not a tkcheck baseline" in r.output
    r = run(["--baseline", "missing.json", "k.cu"], tmp_path)
    assert r.exit_code == 2 and "missing.json" in r.output


# ---------------------------------------------------------------- SARIF


def test_sarif_fingerprints_fixes_and_help_uri(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "k.cu").write_text(TK406_FIXABLE)
    (tmp_path / "tkcheck-baseline.json").write_text("")
    run(["--write-baseline", "tkcheck-baseline.json", "k.cu"], tmp_path)
    recorded = {r["fingerprint"] for r in json.loads((tmp_path / "tkcheck-baseline.json").read_text())["findings"]}
    log = json.loads(run(["--output-format", "sarif", "k.cu"], tmp_path).stdout)
    results = log["runs"][0]["results"]
    assert results and {r["partialFingerprints"]["tkcheck/v1"] for r in results} == recorded
    fix = next(r["fixes"] for r in results if r["ruleId"] == "TK406")
    rep = fix[0]["artifactChanges"][0]["replacements"][0]
    assert rep["insertedContent"]["text"] == " __launch_bounds__(384, 1)"
    assert rep["deletedRegion"]["startColumn"] == rep["deletedRegion"]["endColumn"]  # an insertion
    # helpUri only for an absolute URL (none is configured for this package: none is emitted)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(re.match(r"^https?://", d["helpUri"]) for d in rules if "helpUri" in d)
    from tkcheck.render import sarif

    monkeypatch.setattr(sarif, "_docs_base", lambda: "https://example.invalid/tkcheck/docs")
    assert sarif.help_uri("TK301") == "https://example.invalid/tkcheck/docs/rules.md#tk301"
    monkeypatch.setattr(sarif, "_docs_base", lambda: None)
    assert sarif.help_uri("TK301") is None


def test_sarif_validates_against_the_schema_with_fixes(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from test_render import _sarif_schema

    (tmp_path / "k.cu").write_text(TK406_FIXABLE)
    (tmp_path / "w.cu").write_text(WHOLE_WARP)
    log = json.loads(run(["--output-format", "sarif", "k.cu", "w.cu"], tmp_path).stdout)
    assert sum(len(r.get("fixes", [])) for r in log["runs"][0]["results"]) == 3
    jsonschema.validate(log, _sarif_schema())


# ---------------------------------------------------------------- fixes


def test_fix_shows_diffs_and_applies_only_safe_fixes(tmp_path):
    (tmp_path / "r.cu").write_text(TK406_FIXABLE)
    (tmp_path / "w.cu").write_text(WHOLE_WARP)
    full = run(["--output-format", "full", "r.cu", "w.cu"], tmp_path).stdout
    assert "+__global__ __launch_bounds__(384, 1) void r(float *out) {" in full
    assert "+        if (laneid() == 0) tma::expect(bar, a);" in full
    assert "safe, `--fix` applies it" in full and "suggested" in full
    r = run(["--fix", "r.cu", "w.cu"], tmp_path)
    assert "1 finding(s) fixed in 1 file(s)" in r.stderr
    assert "__global__ __launch_bounds__(384, 1) void r(float *out) {" in (tmp_path / "r.cu").read_text()
    assert (tmp_path / "w.cu").read_text() == WHOLE_WARP  # a suggestion is never applied
    assert "TK406" not in run(["r.cu"], tmp_path).stdout


# ---------------------------------------------------------------- messages in the user's words


def _all_text(res_json) -> str:
    return json.dumps(res_json)


def test_loop_counters_read_as_the_users_variables(tmp_path):
    (tmp_path / "k.cu").write_text(BAD)
    out = json.loads(run(["--output-format", "json", "k.cu"], tmp_path).stdout)
    # the barrier as the user wrote it at the wait (`int s = k % STAGES; wait(full[s], ...)`), issue 28
    assert out[0]["witness"]["barrier"] == "full[s]"
    from_one = BAD.replace("for (int k = 0; k < n; k++)", "for (int k = 1; k <= n; k++)")
    assert from_one != BAD
    (tmp_path / "from_one.cu").write_text(from_one)
    text = run(["--output-format", "json", "from_one.cu"], tmp_path).stdout
    assert not re.search(r"\bk\d+\b", text), text
    dead = (ROOT / "fixtures" / "deadlock" / "bad_one_shot_load_after_ring.cu").read_text()
    (tmp_path / "d.cu").write_text(dead)
    text = run(["--output-format", "json", "d.cu"], tmp_path).stdout
    assert re.search(r'"iteration": {\s*"k": 2\s*}', text) and "[k=0]" in text
    assert not re.search(r"\bk\d+\b", text)


def test_no_internal_loop_name_in_any_finding(corpus_checks):
    leaks = []
    for p in sorted((ROOT / "fixtures").rglob("*.cu")) + sorted((ROOT / "corpus").rglob("*.cu")):
        res = corpus_checks.swept(p)
        for f in res.findings:
            m = re.search(r"\bk\d+\b", json.dumps(f.to_json()))
            if m and not re.search(rf"\b{m.group()}\b", p.read_text()):
                leaks.append(f"{p.name}:{f.location.row} {f.code}: {m.group()}")
    assert not leaks, leaks


def test_statistics_says_one_finding(tmp_path):
    (tmp_path / "k.cu").write_text(BAD)
    assert "Found 1 finding." in run(["--statistics", "k.cu"], tmp_path).stdout


def test_concise_output_keeps_one_line_per_finding_with_a_newline_in_the_name(tmp_path):
    name = "a\nb.cu"
    (tmp_path / name).write_text(BAD)
    r = run(["--output-format", "concise", name], tmp_path)
    assert r.stdout.count("\n") == 1 and r.stdout.startswith("a\\nb.cu:27:13:"), r.stdout


# ---------------------------------------------------------------- usage errors, not internal errors


@pytest.mark.parametrize(
    "args,words",
    [
        (["--file-timeout", "inf"], "--file-timeout"),
        (["--file-timeout", "nan"], "--file-timeout"),
        (["--trace-svg", "/dev/null/x"], "--trace-svg"),
    ],
)
def test_usage_errors(tmp_path, args, words):
    (tmp_path / "k.cu").write_text(BAD)
    r = run([*args, "k.cu"], tmp_path)
    assert r.exit_code == 2 and words in r.output and "internal error" not in r.output, r.output


def test_rule_list_into_a_closed_pipe():
    rfd, wfd = os.pipe()
    os.close(rfd)  # the reader is gone before anything is written
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "tkcheck", "rule", "--all"], stdout=wfd, stderr=subprocess.PIPE, env=env, timeout=120
    )
    os.close(wfd)
    assert p.returncode == 0 and b"BrokenPipe" not in p.stderr and b"Traceback" not in p.stderr, p.stderr


# ---------------------------------------------------------------- confirm's entry


def test_confirm_applies_the_config_selection(tmp_path):
    (tmp_path / "k.cu").write_text(BAD)
    (tmp_path / "tkcheck.toml").write_text('ignore = ["TK303"]\n')
    r = run_confirm(["k.cu"], tmp_path)
    assert r.exit_code == 0 and "no findings to confirm" in r.output, r.output


def run_confirm(args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["confirm", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


def test_confirm_commands_keep_shell_and_awk_braces():
    from tkcheck.config import ConfirmConfig
    from tkcheck.confirm import runner

    cfg = ConfirmConfig(
        build="make HOME=${HOME} && awk '{print $1}' {src} > {dir}/out", run=("sh", "-c", "echo ${HOME} {bin}")
    ).format_ready()
    built = runner._subst(cfg.build, {"src": "/w/k.cu", "bin": "/w/b", "dir": "/w"})
    assert built == "make HOME=${HOME} && awk '{print $1}' /w/k.cu > /w/out"
    assert runner._subst(cfg.run, {"src": "/w/k.cu", "bin": "/w/b", "dir": "/w"}) == ["sh", "-c", "echo ${HOME} /w/b"]
