"""The command line: exit codes, formats, config, selection, discovery, -j, stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tkcheck.cli.cli import load_compile_commands, main

# A kernel whose expect_tx announces one tile while two tiles land on the barrier.
BAD = textwrap.dedent("""\
    #include "kittens.cuh"
    using namespace kittens;

    using smem_tile = st_bf<64, 64>;
    using glayout = gl<bf16, 1, 1, -1, -1, smem_tile>;
    __global__ __launch_bounds__(128, 1) void two_tiles(const __grid_constant__ glayout X,
                                                        const __grid_constant__ glayout Y) {
        __shared__ semaphore ready;
        __shared__ smem_tile x_s, y_s;
        if (threadIdx.x == 0) init_semaphore(ready, 0, 1);
        __syncthreads();
        if (threadIdx.x == 0) {
            tma::expect_bytes(ready, size_bytes<smem_tile>);
            tma::load_async(x_s, X, {0, 0, 0, 0}, ready);
            tma::load_async(y_s, Y, {0, 0, 0, 0}, ready);
        }
        wait(ready, 0);
    }
    """)
BAD_ROW = 13
GOOD = BAD.replace(
    "tma::expect_bytes(ready, size_bytes<smem_tile>);", "tma::expect_bytes(ready, 2 * size_bytes<smem_tile>);"
)


def run(args, cwd: Path, input=None):
    """Invoke the CLI in-process from `cwd` (no cache unless asked)."""
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)
    finally:
        os.chdir(old)


def assert_clean_error(result):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output


@pytest.fixture
def kernels(tmp_path: Path) -> Path:
    (tmp_path / "bad.cu").write_text(BAD)
    (tmp_path / "good.cu").write_text(GOOD)
    return tmp_path


# ---------------------------------------------------------------- exit codes


def test_clean_file_exits_0(kernels):
    r = run(["--no-cache", "good.cu"], kernels)
    assert r.exit_code == 0, r.output
    assert r.stdout == ""  # concise when not on a terminal: nothing to say


def test_findings_exit_1_with_concise_line(kernels):
    r = run(["--no-cache", "bad.cu"], kernels)
    assert r.exit_code == 1, r.output
    assert r.stdout.startswith(f"bad.cu:{BAD_ROW}:")
    assert "error:" in r.stdout and r.stdout.rstrip().endswith("[TK301]")


def test_explicit_check_subcommand(kernels):
    assert run(["check", "--no-cache", "bad.cu"], kernels).exit_code == 1


def test_exit_zero(kernels):
    r = run(["--no-cache", "--exit-zero", "bad.cu"], kernels)
    assert r.exit_code == 0
    assert "[TK301]" in r.stdout


def test_fail_level_error_ignores_warnings(kernels):
    r = run(["--no-cache", "--fail-level", "error", "bad.cu"], kernels)
    assert r.exit_code == 1


def test_nonexistent_path_exits_2(kernels):
    r = run(["--no-cache", "nope.cu"], kernels)
    assert_clean_error(r)
    assert "nope.cu" in r.stderr and "no such file" in r.stderr


def test_no_paths_checks_the_current_folder(kernels):
    # as ruff: a bare `tkcheck` (or `tkcheck check`) checks `.` (issue 28; it was a usage error)
    r = run(["check", "--no-cache", "--output-format", "concise"], kernels)
    assert r.exit_code == 1 and "bad.cu:" in r.stdout and "good.cu" not in r.stdout, r.output


def test_binary_input_exits_2(kernels):
    (kernels / "blob.cu").write_bytes(b"\x7fELF\x00\x01\x02" * 50)
    r = run(["--no-cache", "blob.cu"], kernels)
    assert_clean_error(r)
    assert "TK000" in r.stdout


def test_unknown_selector_exits_2(kernels):
    r = run(["--no-cache", "--select", "TK9Z", "bad.cu"], kernels)
    assert_clean_error(r)
    assert "TK9Z" in r.stderr


def test_unknown_option_exits_2(kernels):
    assert_clean_error(run(["--no-such-option", "bad.cu"], kernels))


# ---------------------------------------------------------------- formats


@pytest.mark.parametrize("fmt", ["full", "concise", "json", "json-lines", "sarif", "github", "junit"])
def test_every_output_format(kernels, fmt):
    r = run(["--no-cache", "--output-format", fmt, "bad.cu"], kernels)
    assert r.exit_code == 1, r.output
    out = r.stdout
    if fmt == "full":
        assert "[TK301]" in out and "^" in out and "Found 1 finding in 1 file." in out, out
        assert "note:" in out  # the assumptions tkcheck made are told
    elif fmt == "concise":
        assert out.count("\n") == 1 and "[TK301]" in out
    elif fmt == "json":
        recs = json.loads(out)
        assert [(x["code"], x["filename"], x["location"]["row"]) for x in recs] == [("TK301", "bad.cu", BAD_ROW)]
    elif fmt == "json-lines":
        recs = [json.loads(line) for line in out.splitlines()]
        assert [x["code"] for x in recs] == ["TK301"]
    elif fmt == "sarif":
        doc = json.loads(out)
        assert doc["version"] == "2.1.0"
        results = doc["runs"][0]["results"]
        assert [x["ruleId"] for x in results] == ["TK301"]
        loc = results[0]["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "bad.cu" and loc["region"]["startLine"] == BAD_ROW
    elif fmt == "github":
        assert out.startswith("::error ") and "TK301" in out and f"line={BAD_ROW}" in out
    elif fmt == "junit":
        root = ET.fromstring(out)
        assert "TK301" in ET.tostring(root, encoding="unicode")


def test_quiet_full_has_no_notes(kernels):
    r = run(["--no-cache", "-q", "--output-format", "full", "bad.cu"], kernels)
    assert r.exit_code == 1
    assert "note: TK" not in r.stdout


def test_output_file(kernels):
    r = run(["--no-cache", "--output-format", "json", "-o", "report.json", "bad.cu"], kernels)
    assert r.exit_code == 1
    assert r.stdout == ""
    assert json.loads((kernels / "report.json").read_text())[0]["code"] == "TK301"


def test_statistics(kernels):
    r = run(["--no-cache", "--statistics", "bad.cu", "good.cu"], kernels)
    assert r.exit_code == 1
    assert "TK301" in r.stdout and "expect-tx-mismatch" in r.stdout
    r = run(["--no-cache", "--statistics", "--output-format", "json", "bad.cu"], kernels)
    doc = json.loads(r.stdout)
    assert doc["findings"] == [{"code": "TK301", "name": "expect-tx-mismatch", "count": 1}]
    cov = doc["coverage"]  # what was modelled, beside what was found
    assert cov["kernels"] == cov["analysed"] >= 1 and cov["sync_ops"] >= cov["sync_ops_modelled"] > 0


def test_timing_goes_to_stderr(kernels):
    r = run(["--no-cache", "--timing", "--output-format", "json", "bad.cu"], kernels)
    assert r.exit_code == 1
    json.loads(r.stdout)  # the report stays parseable
    for label in ("front end", "model", "rules", "solver", "total"):
        assert label in r.stderr


# ---------------------------------------------------------------- rules


def test_rule_explains():
    r = CliRunner().invoke(main, ["rule", "TK301"])
    assert r.exit_code == 0
    assert "TK301" in r.stdout and "## What it does" in r.stdout and "Use instead:" in r.stdout


def test_explain_alias_and_names():
    a = CliRunner().invoke(main, ["--explain", "TK301"])
    b = CliRunner().invoke(main, ["rule", "expect-tx-mismatch"])
    assert a.exit_code == b.exit_code == 0 and a.stdout == b.stdout


def test_rule_all_json():
    r = CliRunner().invoke(main, ["rule", "--all", "--output-format", "json"])
    assert r.exit_code == 0
    rules = json.loads(r.stdout)
    codes = [x["code"] for x in rules]
    assert "TK301" in codes and codes == sorted(codes)
    assert all({"code", "name", "contract", "severity", "doc"} <= set(x) for x in rules)


def test_rule_all_text():
    r = CliRunner().invoke(main, ["rule", "--all"])
    assert r.exit_code == 0 and "TK301" in r.stdout


def test_unknown_rule_exits_2():
    r = CliRunner().invoke(main, ["rule", "TK999"])
    assert r.exit_code == 2 and "TK999" in r.stderr


def test_version():
    r = CliRunner().invoke(main, ["--version"])
    assert r.exit_code == 0 and r.stdout.startswith("tkcheck ")


# ---------------------------------------------------------------- config and selection


def test_config_file_ignore(kernels):
    (kernels / "tkcheck.toml").write_text('ignore = ["TK301"]\n')
    assert run(["--no-cache", "bad.cu"], kernels).exit_code == 0


def test_config_file_select(kernels):
    (kernels / "tkcheck.toml").write_text('select = ["TK5"]\n')
    assert run(["--no-cache", "bad.cu"], kernels).exit_code == 0
    # the command line's --select wins over the file's
    assert run(["--no-cache", "--select", "TK3", "bad.cu"], kernels).exit_code == 1


def test_pyproject_table(kernels):
    (kernels / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.tkcheck]\nignore = ["expect-tx-mismatch"]\n'
    )
    assert run(["--no-cache", "bad.cu"], kernels).exit_code == 0


def test_explicit_config_file(kernels):
    cfg = kernels / "elsewhere.toml"
    cfg.write_text('ignore = ["TK3"]\n')
    assert run(["--no-cache", "--config-file", str(cfg), "bad.cu"], kernels).exit_code == 0


def test_config_override(kernels):
    assert run(["--no-cache", "--config", 'ignore=["TK301"]', "bad.cu"], kernels).exit_code == 0
    assert run(["--no-cache", "--config", "arch=sm_90a", "bad.cu"], kernels).exit_code == 1


def test_bad_config_exits_2(kernels):
    (kernels / "tkcheck.toml").write_text('selekt = ["TK3"]\n')
    r = run(["--no-cache", "bad.cu"], kernels)
    assert_clean_error(r)
    assert "selekt" in r.stderr and "select" in r.stderr
    r = run(["--no-cache", "--config", "arch=sm_42", "good.cu"], kernels)
    assert_clean_error(r)


def test_cli_ignore_and_prefix(kernels):
    assert run(["--no-cache", "--ignore", "TK30", "bad.cu"], kernels).exit_code == 0
    assert (
        run(
            ["--no-cache", "--select", "ALL", "--ignore", "TK3", "--extend-select", "TK301", "bad.cu"], kernels
        ).exit_code
        == 1
    )


def test_per_file_ignores(kernels):
    assert run(["--no-cache", "--per-file-ignores", "bad*.cu:TK301", "bad.cu"], kernels).exit_code == 0
    assert run(["--no-cache", "--per-file-ignores", "other.cu:TK301", "bad.cu"], kernels).exit_code == 1
    assert_clean_error(run(["--no-cache", "--per-file-ignores", "no-colon", "bad.cu"], kernels))


def test_inline_suppression(kernels):
    (kernels / "sup.cu").write_text(
        BAD.replace(
            "tma::expect_bytes(ready, size_bytes<smem_tile>);",
            "tma::expect_bytes(ready, size_bytes<smem_tile>);  // tkcheck: ignore[TK301] // a test",
        )
    )
    assert run(["--no-cache", "sup.cu"], kernels).exit_code == 0


# ---------------------------------------------------------------- discovery, -j, stdin, cache


def _tree(root: Path) -> Path:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "deep_bad.cu").write_text(BAD)
    (root / "a" / "ok.cuh").write_text(GOOD)
    (root / "a" / "notes.txt").write_text("not a kernel {{{")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skipped.cu").write_text(BAD)
    for i in range(3):
        (root / f"k{i}.cu").write_text(BAD if i % 2 else GOOD)
    return root


def test_directories_recurse(tmp_path):
    _tree(tmp_path)
    r = run(["--no-cache", "--output-format", "json", "."], tmp_path)
    assert r.exit_code == 1, r.output
    files = sorted(x["filename"] for x in json.loads(r.stdout))
    assert files == ["a/b/deep_bad.cu", "k1.cu"]
    r = run(["--no-cache", "--output-format", "full", "a"], tmp_path)
    assert "in 2 files." in r.stdout


def test_jobs_give_the_same_output(tmp_path):
    _tree(tmp_path)
    one = run(["--no-cache", "-j", "1", "--output-format", "full", "."], tmp_path)
    two = run(["--no-cache", "-j", "2", "--output-format", "full", "."], tmp_path)
    assert one.exit_code == two.exit_code == 1
    assert one.stdout == two.stdout


def test_stdin_with_filename(kernels):
    r = run(["--no-cache", "--stdin-filename", "kernels/from_editor.cu", "-"], kernels, input=BAD)
    assert r.exit_code == 1, r.output
    assert r.stdout.startswith(f"kernels/from_editor.cu:{BAD_ROW}:")
    r = run(["--no-cache", "-"], kernels, input=GOOD)
    assert r.exit_code == 0, r.output


def test_stdin_filename_without_dash(kernels):
    assert_clean_error(run(["--stdin-filename", "x.cu", "good.cu"], kernels))


def test_cache_is_used_and_written_next_to_the_config(kernels):
    (kernels / "tkcheck.toml").write_text("")
    first = run(["--timing", "bad.cu"], kernels)
    second = run(["--timing", "bad.cu"], kernels)
    assert first.exit_code == second.exit_code == 1
    assert first.stdout == second.stdout
    assert "(1 from cache)" in second.stderr
    cache = kernels / ".tkcheck_cache"
    assert cache.is_dir() and (cache / ".gitignore").is_file()
    assert "(0 from cache)" in run(["--timing", "--no-cache", "bad.cu"], kernels).stderr


def test_compile_commands_supply_includes(kernels):
    inc = kernels / "inc"
    inc.mkdir()
    (inc / "project_tiles.h").write_text("#pragma once\n#define TILE_COUNT 2\n")
    (kernels / "uses_header.cu").write_text(
        '#include "project_tiles.h"\n'
        + GOOD.replace("2 * size_bytes<smem_tile>", "TILE_COUNT * size_bytes<smem_tile> * SCALE")
    )
    (kernels / "build").mkdir()
    (kernels / "build" / "compile_commands.json").write_text(
        json.dumps(
            [
                {
                    "directory": str(kernels / "build"),
                    "command": "nvcc -I../inc -DSCALE=1 -c ../uses_header.cu -o x.o",
                    "file": "../uses_header.cu",
                }
            ]
        )
    )
    r = run(["--no-cache", "-p", "build", "uses_header.cu"], kernels)
    assert r.exit_code == 0, r.output
    r = run(["--no-cache", "uses_header.cu"], kernels)  # the header is not found without them
    assert_clean_error(r)


def test_compile_commands_parsing(tmp_path):
    (tmp_path / "compile_commands.json").write_text(
        json.dumps(
            [
                {
                    "directory": str(tmp_path),
                    "arguments": ["nvcc", "-I", "a", "-Ib", "-isystem", "/sys/inc", "-D", "X=1", "-DY", "-c", "k.cu"],
                    "file": "k.cu",
                }
            ]
        )
    )
    table = load_compile_commands(tmp_path)
    entry = table[os.path.normpath(str(tmp_path / "k.cu"))]
    assert entry["include_dirs"] == (str(tmp_path / "a"), str(tmp_path / "b"), "/sys/inc")
    assert entry["defines"] == ("X=1", "Y")


def test_broken_compile_commands_exit_2(kernels):
    (kernels / "compile_commands.json").write_text("{not json")
    assert_clean_error(run(["--no-cache", "-p", ".", "good.cu"], kernels))


def test_update_expectations(kernels):
    fixture = kernels / "fixture.cu"
    fixture.write_text("// tkcheck-test: select=TK301\n" + BAD)
    r = run(["--update-expectations", "fixture.cu"], kernels)
    assert r.exit_code == 0, r.output
    line = fixture.read_text().splitlines()[BAD_ROW]  # one header line shifts the rows by one
    assert "expect: TK301" in line


# ---------------------------------------------------------------- the installed entry point


def test_entry_point_subprocess(kernels):
    """`python -m tkcheck`, as a user runs it: exit codes and no traceback."""
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    for args, code in ((["bad.cu"], 1), (["good.cu"], 0), (["missing.cu"], 2)):
        p = subprocess.run(
            [sys.executable, "-m", "tkcheck", "--no-cache", *args],
            cwd=kernels,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == code, p.stdout + p.stderr
        assert "Traceback" not in p.stdout + p.stderr


# ---------------------------------------------------------------- eval


def test_eval_on_a_small_corpus(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "hopper").mkdir(parents=True)
    (corpus / "hopper" / "two_tiles.cu").write_text(GOOD)
    find = "tma::expect_bytes(ready, 2 * size_bytes<smem_tile>);"
    (corpus / "mutations.toml").write_text(
        textwrap.dedent(f"""\
        [[mutation]]
        id = "short-expect"
        kernel = "hopper/two_tiles.cu"
        rules = ["TK301"]
        symptom = "hang"
        description = "one tile's bytes expected, two delivered"
        find = "{find}"
        replace = "tma::expect_bytes(ready, size_bytes<smem_tile>);"

        [[mutation]]
        id = "future-rule"
        kernel = "hopper/two_tiles.cu"
        rules = ["TK999"]
        find = "wait(ready, 0);"
        replace = "wait(ready, 1);"

        [[mutation]]
        id = "stale-spec"
        kernel = "hopper/two_tiles.cu"
        rules = ["TK301"]
        find = "no such text"
        replace = ""
        """)
    )
    r = run(["eval", "corpus", "--no-nvcc", "--json"], tmp_path)
    assert r.exit_code == 1, r.output  # the stale spec makes the run fail
    report = json.loads(r.stdout)
    status = {m["id"]: m["status"] for m in report["mutations"]}
    assert status == {"short-expect": "found", "future-rule": "not-implemented", "stale-spec": "invalid"}
    assert report["clean_kernels"][0]["false_findings"] == []
    rows = {row["rule"]: row for row in report["rules"]}
    assert rows["TK301"]["planted"] == rows["TK301"]["found"] == 1
    assert rows["TK999"]["implemented"] is False
    assert report["total"]["ratio_to_nvcc"] is None
    text = run(["eval", "corpus", "--no-nvcc"], tmp_path).stdout
    assert "| rule | planted | found | missed | false findings on clean kernels" in text
    assert "short-expect" in text and "n/a" in text


def test_eval_missing_corpus_exits_2(tmp_path):
    assert_clean_error(run(["eval", "nowhere"], tmp_path))
