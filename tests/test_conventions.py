"""What users of ruff, clang-tidy and mypy expect (issue 28, item 4): exclusions and .gitignore while
walking folders, --show-files and --show-settings, a bare `tkcheck` checking `.`, a skipped pass
visible in every format and failing --require-coverage, SARIF's informationUri / helpUri /
invocations, the count a baseline hides, an empty `select` refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ROOT
from tkcheck.cli.cli import main
from tkcheck.file_selection import GitIgnores, parse_gitignore

BAD = (ROOT / "fixtures" / "completion" / "bad_consumer_parity_flipped.cu").read_text()
# a kernel that includes ThunderKittens: the SASS pass needs the real headers, so without
# --tk-include it is skipped (the stand-in headers cannot be compiled)
TK_KERNEL = '#include "kittens.cuh"\nusing namespace kittens;\n__global__ void k(float *o) { o[threadIdx.x] = 1.0f; }\n'
NOT_CUDA = "this is not C++ (\n"


def run(args, cwd: Path, env: dict | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner(env=env).invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _shown(r) -> list[str]:
    return r.stdout.splitlines()


# ---------------------------------------------------------------- file selection


def test_gitignore_is_respected_inside_a_repository_and_can_be_turned_off(tmp_path):
    _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            ".git/info/exclude": "scratch.cu\n",
            ".gitignore": "build/\n*.gen.cu\n!keep.gen.cu\n/top_only.cu\n",
            "src/a.cu": BAD,
            "src/top_only.cu": BAD,  # `/top_only.cu` is anchored at the root: this one stays
            "top_only.cu": NOT_CUDA,
            "build/out.cu": NOT_CUDA,
            "src/x.gen.cu": NOT_CUDA,
            "src/keep.gen.cu": BAD,
            "scratch.cu": NOT_CUDA,
            "src/sub/.gitignore": "local.cu\n",
            "src/sub/local.cu": NOT_CUDA,
            "src/sub/other.cu": BAD,
        },
    )
    r = run(["--show-files"], tmp_path)
    assert r.exit_code == 0, r.output
    assert _shown(r) == ["src/a.cu", "src/keep.gen.cu", "src/top_only.cu", "src/sub/other.cu"]
    r = run(["--show-files", "--no-respect-gitignore"], tmp_path)
    assert "build/out.cu" in _shown(r) and "src/sub/local.cu" in _shown(r) and "scratch.cu" in _shown(r)
    # a file named on the command line is checked even when ignored (as ruff without --force-exclude)
    r = run(["--show-files", "build/out.cu"], tmp_path)
    assert _shown(r) == ["build/out.cu"]


def test_gitignore_outside_a_repository_is_not_read(tmp_path):
    _tree(tmp_path, {".gitignore": "*.cu\n", "a.cu": BAD})
    assert _shown(run(["--show-files"], tmp_path)) == ["a.cu"]


def test_exclude_and_extend_exclude_follow_ruff(tmp_path):
    _tree(
        tmp_path,
        {
            "pyproject.toml": '[tool.tkcheck]\nextend-exclude = ["third_party/ThunderKittens", "*_ref.cu"]\n',
            "kernels/a.cu": BAD,
            "kernels/a_ref.cu": NOT_CUDA,
            "third_party/ThunderKittens/kernels/x.cu": NOT_CUDA,
            "kernels/third_party/ThunderKittens/y.cu": BAD,  # the anchored glob is relative to the config
            "node_modules/z.cu": NOT_CUDA,  # a default exclusion, kept by extend-exclude
        },
    )
    r = run(["--show-files"], tmp_path)
    assert _shown(r) == ["kernels/a.cu", "kernels/third_party/ThunderKittens/y.cu"], r.output
    # run from a subfolder: the config's globs still mean the same folders
    r = run(["--show-files", ".."], tmp_path / "kernels")
    assert sorted(_shown(r)) == ["../kernels/a.cu", "../kernels/third_party/ThunderKittens/y.cu"], r.output
    # `exclude` replaces the defaults: node_modules comes back, kernels/ goes
    r = run(["--show-files", "--exclude", "kernels"], tmp_path)
    assert "node_modules/z.cu" in _shown(r) and not any(f.startswith("kernels/") for f in _shown(r))
    r = run(["--show-files", "--extend-exclude", "kernels/third_party"], tmp_path)
    assert _shown(r) == ["kernels/a.cu"]
    # an excluded file fails nothing: the run checks the one good file only
    r = run(["--no-cache", "--output-format", "concise"], tmp_path)
    assert r.exit_code == 1 and "[TK303]" in r.stdout and "a_ref.cu" not in r.output


def test_gitignore_patterns_as_git_reads_them(tmp_path):
    base = str(tmp_path)
    pats = parse_gitignore("# c\n\\#hash.cu\n**/gen/**\ndocs/*.cu\nbuild/\n", base, ".gitignore")
    assert [p.text for p in pats] == ["#hash.cu", "**/gen/**", "docs/*.cu", "build"]
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("**/gen/**\ndocs/*.cu\nbuild/\n")
    g = GitIgnores()
    assert g.ignored(str(tmp_path / "a" / "gen" / "b.cu"), False)
    assert g.ignored(str(tmp_path / "docs" / "x.cu"), False)
    assert not g.ignored(str(tmp_path / "docs" / "sub" / "x.cu"), False)  # `*` stays in one folder
    assert g.ignored(str(tmp_path / "build"), True) and not g.ignored(str(tmp_path / "build"), False)


def test_bare_tkcheck_checks_the_current_folder(tmp_path):
    _tree(tmp_path, {"k/bad.cu": BAD})
    r = run(["--no-cache", "--output-format", "concise"], tmp_path)
    assert r.exit_code == 1 and "k/bad.cu:" in r.stdout and "[TK303]" in r.stdout, r.output
    r = run([], tmp_path)  # not a usage error any more
    assert r.exit_code == 1, r.output


# ---------------------------------------------------------------- --show-settings


def test_show_settings_names_where_each_setting_comes_from(tmp_path):
    _tree(
        tmp_path,
        {"tkcheck.toml": 'ignore = ["TK5"]\nextend-exclude = ["gen"]\ndefines = ["STAGES=3"]\n', "k/a.cu": BAD},
    )
    r = run(["--show-settings", "k/a.cu", "--arch", "sm_100a", "--config", "tk-version=thread-scope"], tmp_path)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    cfg = str(tmp_path / "tkcheck.toml")
    assert f'ignore = ["TK5"]  # {cfg}' in lines
    assert f'extend-exclude = ["gen"]  # {cfg}' in lines
    assert 'arch = "sm_100a"  # command line' in lines
    assert 'tk-version = "thread-scope"  # --config' in lines
    assert 'select = ["ALL"]  # default' in lines
    rules = json.loads(next(line for line in lines if line.startswith("rules = ")).split(" = ", 1)[1])
    assert "TK303" in rules and not any(c.startswith("TK5") for c in rules)
    assert 'defines = ["STAGES=3"]' in lines
    assert not (tmp_path / ".tkcheck_cache").exists()  # showing settings writes nothing


# ---------------------------------------------------------------- refused settings


@pytest.mark.parametrize(
    "args",
    [["--select", ""], ["--config", "select=[]"], ["--config", "select="]],
)
def test_an_empty_select_is_refused(tmp_path, args):
    _tree(tmp_path, {"a.cu": BAD})
    r = run([*args, "a.cu"], tmp_path)
    assert r.exit_code == 2 and "is empty: no rule would run" in r.stderr, r.output
    (tmp_path / "tkcheck.toml").write_text("select = []\n")
    r = run(["a.cu"], tmp_path)
    assert r.exit_code == 2 and "tkcheck.toml: 'select' is empty" in r.stderr, r.output


# ---------------------------------------------------------------- a skipped pass


@pytest.mark.parametrize("fmt", ["concise", "json", "json-lines", "junit", "full"])
def test_a_skipped_sass_pass_is_told_in_every_format_and_fails_require_coverage(tmp_path, fmt):
    _tree(tmp_path, {"k.cu": TK_KERNEL})
    r = run(["--no-cache", "--sass", "--output-format", fmt, "k.cu"], tmp_path)
    assert r.exit_code == 0, r.output
    assert "SASS pass skipped" in r.output
    r = run(["--no-cache", "--sass", "--output-format", fmt, "--require-coverage", "0", "k.cu"], tmp_path)
    assert r.exit_code == 2 and "a requested pass did not run: SASS pass skipped" in r.stderr, r.output


def test_a_skipped_pass_in_github_annotations_and_sarif(tmp_path):
    _tree(tmp_path, {"k.cu": TK_KERNEL})
    r = run(["--no-cache", "--sass", "--output-format", "github", "k.cu"], tmp_path)
    assert "::warning title=tkcheck (pass skipped)::SASS pass skipped" in r.stdout
    r = run(["--no-cache", "--sass", "--output-format", "sarif", "k.cu"], tmp_path)
    (inv,) = json.loads(r.stdout)["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is True and inv["exitCode"] == 0
    (note,) = inv["toolExecutionNotifications"]
    assert note["level"] == "warning" and note["message"]["text"].startswith("SASS pass skipped")


# ---------------------------------------------------------------- SARIF


def test_sarif_invocation_of_a_failed_run_is_not_successful(tmp_path):
    _tree(tmp_path, {"bad.cu": BAD, "broken.cu": NOT_CUDA})
    r = run(["--no-cache", "--output-format", "sarif", "bad.cu"], tmp_path)
    (inv,) = json.loads(r.stdout)["runs"][0]["invocations"]
    assert r.exit_code == 1 and inv == {"executionSuccessful": True, "exitCode": 1}
    r = run(["--no-cache", "--output-format", "sarif", "bad.cu", "broken.cu"], tmp_path)
    (inv,) = json.loads(r.stdout)["runs"][0]["invocations"]
    assert r.exit_code == 2 and inv["executionSuccessful"] is False and inv["exitCode"] == 2


def test_sarif_information_and_help_uris_from_the_documented_pattern(tmp_path):
    _tree(tmp_path, {"bad.cu": BAD})
    docs = "https://example.invalid/o/tkcheck/blob/v0.1.0/docs"
    r = run(["--no-cache", "--output-format", "sarif", "bad.cu"], tmp_path, env={"TKCHECK_DOCS_URL": docs})
    driver = json.loads(r.stdout)["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://example.invalid/o/tkcheck/blob/v0.1.0/README.md"
    by_id = {d["id"]: d for d in driver["rules"]}
    assert by_id["TK303"]["helpUri"] == docs + "/rules.md#tk303"
    # the anchor is the rule's heading in docs/rules.md (GitHub lowercases a heading into its anchor)
    assert "\n## TK303\n" in (ROOT / "docs" / "rules.md").read_text()
    # not an http(s) URL: no URI rather than a machine's path in an uploaded report
    r = run(["--no-cache", "--output-format", "sarif", "bad.cu"], tmp_path, env={"TKCHECK_DOCS_URL": "/srv/docs"})
    driver = json.loads(r.stdout)["runs"][0]["tool"]["driver"]
    assert "informationUri" not in driver and not any("helpUri" in d for d in driver["rules"])


def test_sarif_with_invocations_validates_against_the_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from test_render import _sarif_schema

    _tree(tmp_path, {"k.cu": TK_KERNEL, "broken.cu": NOT_CUDA})
    docs = "https://example.invalid/o/tkcheck/blob/v0.1.0/docs"
    r = run(["--no-cache", "--sass", "--output-format", "sarif", "."], tmp_path, env={"TKCHECK_DOCS_URL": docs})
    assert r.exit_code == 2
    log = json.loads(r.stdout)
    schema = _sarif_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


# ---------------------------------------------------------------- baseline


@pytest.mark.parametrize("fmt", ["concise", "json", "sarif", "github", "full"])
def test_the_count_a_baseline_hides_is_told_in_every_format(tmp_path, fmt):
    _tree(tmp_path, {"bad.cu": BAD})
    w = run(["--no-cache", "--write-baseline", "base.json", "bad.cu"], tmp_path)
    assert w.exit_code == 0, w.output
    r = run(["--no-cache", "--baseline", "base.json", "--output-format", fmt, "bad.cu"], tmp_path)
    assert r.exit_code == 0, r.output
    assert "baseline base.json: 1 recorded finding(s) not shown" in r.output
    if fmt == "sarif":
        (inv,) = json.loads(r.stdout)["runs"][0]["invocations"]
        assert inv["properties"]["baseline"] == {"file": "base.json", "hidden": 1, "stale": 0}
    if fmt == "github":
        assert "::notice title=tkcheck (baseline)::baseline base.json: 1 recorded finding(s) not shown" in r.stdout


# ---------------------------------------------------------------- counterexamples in the user's words


def _finding_at(path: Path, code: str, row: int):
    from tkcheck.engine import CheckOptions, check_file
    from tkcheck.registry import by_code

    res = check_file(str(path), CheckOptions(enabled=frozenset(by_code())))
    return next(f for f in res.findings if f.code == code and f.location.row == row)


def test_a_counterexample_names_the_barrier_as_the_user_wrote_it():
    # the producer's loop starts at STAGES: the model counts k from 3 (`(3 + (k - 3)) % 3`), the
    # user wrote `empty[k % STAGES]`
    f = _finding_at(ROOT / "fixtures" / "completion" / "prefill_ring.cu", "TK303", 57)
    assert f.witness["barrier"] == "empty[k % STAGES]"
    from tkcheck.render._common import format_witness

    assert "barrier=empty[k % STAGES]" in format_witness(f.witness)


def test_spelled_keeps_the_parentheses_precedence_needs():
    from tkcheck.frontend.cexpr import parse_expression, spelled

    for text in [
        "k % STAGES",
        "(k + 1) % STAGES",
        "a - (b - c)",
        "a - b - c",
        "full[w][(i + 1) % STAGES]",
        "((k / STAGES) % 2) ^ 1",
        "x ? a : b",
        "-(a + b)",
        "s.bar[i]",
        "f(a, b + 1)",
    ]:
        assert spelled(parse_expression(_tokens(text))) == text, text
    # precedence alone would drop the parentheses of a mixed chain; they are kept for the reader
    assert spelled(parse_expression(_tokens("k / STAGES % 2"))) == "(k / STAGES) % 2"
    assert spelled(parse_expression(_tokens("(a + b) * c ^ 1"))) == "((a + b) * c) ^ 1"


def _tokens(text: str) -> list[str]:
    import re

    return re.findall(r"[A-Za-z_]\w*|\d+|->|[-+*/%^()\[\]?:,.<>]", text)


def test_the_trace_picture_colours_the_wrong_wait_and_not_as_a_passing_wait():
    from tkcheck.render.trace_svg import COLORS, trace_svg

    f = _finding_at(ROOT / "fixtures" / "completion" / "prefill_ring.cu", "TK303", 57)
    faults = [s for s in f.trace if s.fault]
    assert faults and all(not s.blocked for s in faults)
    assert any(s.text.startswith("wait(") for s in faults)  # the wrong wait itself
    svg = trace_svg(f)
    assert 'class="fault"' in svg and "wrong phase (the finding)" in svg
    # the wait step's text is drawn red, never in the green of a wait that passes
    wait_step = next(s for s in faults if s.text.startswith("wait("))
    line = next(x for x in svg.splitlines() if f"<title>{wait_step.text}" in x.replace("&#x27;", "'"))
    assert f'fill="{COLORS["fault"]}"' in line and COLORS["wait"] not in line


# ---------------------------------------------------------------- imported on first use


def _modules_after(code: str) -> set[str]:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def _rule_modules(mods: set[str]) -> set[str]:
    return {
        m
        for m in mods
        if m.startswith("tkcheck.rules.tk")
        and m not in ("tkcheck.rules.tk000_parse_error", "tkcheck.rules.tk001_unused_suppression")
    }


def test_the_rule_catalog_is_current():
    # written by scripts/gen_rule_docs.py (and so by scripts/new_rule.py) from the rules themselves
    from tkcheck import registry

    text = (ROOT / "rules" / registry.CATALOG_FILE).read_text()
    assert json.loads(text) == registry.catalog_json(), "run scripts/gen_rule_docs.py"


def test_selecting_rules_and_a_file_without_kernels_import_no_rule():
    mods = _modules_after(
        "from tkcheck.selection import RuleSelector\n"
        "from pathlib import Path\n"
        "s = RuleSelector(select=('TK3',), ignore=('TK301',), extend_select=(), per_file_ignores=(), root=Path('.'))\n"
        "assert 'TK303' in s.enabled_codes('k.cu') and 'TK301' not in s.enabled_codes('k.cu')\n"
        "from tkcheck.engine import CheckOptions, check_file\n"
        "from tkcheck import registry\n"
        "r = check_file('k.cu', CheckOptions(enabled=frozenset(registry.catalog())), text='int host_only() { return 1; }\\n')\n"
        "assert not r.findings, r.findings\n"
    )
    assert "tkcheck.registry" in mods and not _rule_modules(mods), sorted(_rule_modules(mods))


def test_a_checked_kernel_imports_the_rules_that_run_only():
    src = (ROOT / "fixtures" / "completion" / "bad_consumer_parity_flipped.cu").as_posix()
    mods = _modules_after(
        "from tkcheck.engine import CheckOptions, check_file\n"
        f"r = check_file({src!r}, CheckOptions(enabled=frozenset({{'TK303'}})))\n"
        "assert [f.code for f in r.findings] == ['TK303'], r.findings\n"
    )
    assert _rule_modules(mods) == {"tkcheck.rules.tk303_wait_parity_mismatch"}, sorted(_rule_modules(mods))


def test_a_stale_catalog_is_not_used(monkeypatch):
    from tkcheck import registry

    real = registry._rule_modules()
    monkeypatch.setattr(registry, "_rule_modules", lambda: [*real, "tk999_new_rule"])
    assert registry._read_catalog() is None  # a module the catalog does not list: import them all
    monkeypatch.setattr(registry, "_rule_modules", lambda: real)
    assert registry._read_catalog() == registry._imported()


def test_renderers_are_imported_when_their_format_is_used():
    mods = _modules_after(
        "from tkcheck.render import render\nrender([], 'concise', rules={}, sources={}, files_checked=0)\n"
    )
    assert "tkcheck.render.concise" in mods
    assert not {"tkcheck.render.sarif", "tkcheck.render.junit", "tkcheck.render.full", "xml.etree.ElementTree"} & mods


def test_a_cached_result_imports_no_rule_and_no_model_builder(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(BAD)
    code = (
        "from tkcheck.engine import CheckOptions, check_file\n"
        "from tkcheck import registry\n"
        f"r = check_file({str(src)!r}, CheckOptions(enabled=frozenset(registry.catalog()), cache_dir={str(tmp_path / 'cache')!r}))\n"
        "assert [f.code for f in r.findings] == ['TK303'], r.findings\n"
        "print('CACHED', r.cached)\n"
    )
    first = _modules_after(code)
    assert "CACHED" in first and "False" in first and "z3" in first
    again = _modules_after(code)
    assert "True" in again, "the second check is a cache hit"
    # (z3 still comes in with the model's expressions, which the coverage records are built of)
    assert not _rule_modules(again) and "tkcheck.frontend.builder" not in again
    assert not {m for m in again if m.startswith("tkcheck.checks.")}


def test_the_default_exclusions_are_folders(tmp_path):
    _tree(tmp_path, {".venv/lib/x.cu": NOT_CUDA, "node_modules/y.cu": NOT_CUDA, ".scratch.cu": BAD, "k.cu": BAD})
    assert sorted(_shown(run(["--show-files"], tmp_path))) == [".scratch.cu", "k.cu"]
