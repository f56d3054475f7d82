"""scripts/new_rule.py, run in a temporary copy of the catalog (never in the real rules/)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tkcheck.expectations import parse_fixture

from conftest import ROOT


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A checkout the script can write into: rules/, the two scripts, docs/rules.md; the package
    itself is linked (tkcheck/__init__ maps the copy's rules/ in beside it)."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "rules", root / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "scripts").mkdir()
    for s in ("new_rule.py", "gen_rule_docs.py"):
        shutil.copy(ROOT / "scripts" / s, root / "scripts" / s)
    (root / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "rules.md", root / "docs" / "rules.md")
    for f in ("pyproject.toml", "cli.py"):
        shutil.copy(ROOT / f, root / f)
    (root / "tkcheck").symlink_to(ROOT / "tkcheck")
    return root


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "new_rule.py"), *args, "--root", str(root)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _catalog(root: Path, code: str) -> dict:
    """The copy's registry, asked in a fresh interpreter: the rule, and what its examples report."""
    probe = f"""
import json, tempfile
from pathlib import Path
from tkcheck import registry
from tkcheck.engine import CheckOptions, check_file
r = registry.get({code!r})
out = {{"codes": [x.code for x in registry.all_rules()]}}
if r is not None:
    found = {{}}
    with tempfile.TemporaryDirectory() as d:
        for kind, src in (("bad", r.bad_example), ("good", r.good_example)):
            p = Path(d) / (kind + ".cu"); p.write_text(src)
            found[kind] = [f.code for f in check_file(str(p), CheckOptions(enabled=frozenset([r.code]))).findings]
    out.update(name=r.name, contract=r.contract, severity=r.severity, symptoms=list(r.symptoms), doc=r.doc,
               found=found, has_check=r.check is not None)
print(json.dumps(out))
"""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.run([sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_new_rule_writes_a_registered_rule_its_fixtures_and_docs(copy):
    r = _run(copy, "TK399", "stage-read-twice", "--contract", "completion", "--symptom", "hang")
    assert r.returncode == 0, r.stderr
    rule = copy / "rules" / "tk399_stage_read_twice.py"
    bad = copy / "fixtures" / "completion" / "tk399_stage_read_twice_bad.cu"
    good = copy / "fixtures" / "completion" / "tk399_stage_read_twice_good.cu"
    assert all(p.is_file() for p in (rule, bad, good)), r.stdout
    got = _catalog(copy, "TK399")
    assert "TK399" in got["codes"] and got["name"] == "stage-read-twice" and got["contract"] == "completion"
    assert got["symptoms"] == ["hang"] and got["has_check"]
    for section in ("## What it does", "## Why is this bad?", "## Example", "Use instead:"):
        assert section in got["doc"]
    # the template reports nothing until its query is written: its bad example is the failing test
    assert got["found"] == {"bad": [], "good": []}
    _, exps = parse_fixture(bad.read_text())
    assert [(e.kind, e.code) for e in exps] == [("expect", "TK399")] and exps[0].texts
    _, exps = parse_fixture(good.read_text())
    assert [(e.kind, e.code) for e in exps] == [("expect-not", "TK399")]
    assert "## TK399" in (copy / "docs" / "rules.md").read_text()
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if Path(ruff).exists():  # the generated file passes the repository's lint and layout checks
        for check in (["check"], ["format", "--check"]):
            p = subprocess.run(
                [ruff, *check, "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(rule)],
                capture_output=True,
                text=True,
            )
            assert p.returncode == 0, f"ruff {' '.join(check)}: {p.stdout}"
    # removed again, the catalog is what it was
    for p in (rule, bad, good):
        p.unlink()
    assert _catalog(copy, "TK399")["codes"] == _catalog(copy, "TK301")["codes"]
    assert "TK399" not in _catalog(copy, "TK301")["codes"]


@pytest.mark.parametrize(
    "args,says",
    [
        (["TK301", "some-new-name"], "TK301 exists already: rules/tk301_"),
        (["TK398", "expect-tx-mismatch"], "the name 'expect-tx-mismatch' exists already: rules/tk301_"),
        (["TK3010", "x"], "a code is TK and three digits"),
        (["TK398", "Not_Kebab"], "lower-case words joined by '-'"),
    ],
)
def test_new_rule_refuses_what_the_catalog_has(copy, args, says):
    before = sorted(p.name for p in (copy / "rules").iterdir())
    r = _run(copy, *args, "--contract", "completion")
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert sorted(p.name for p in (copy / "rules").iterdir()) == before
    assert not (copy / "fixtures").exists()
