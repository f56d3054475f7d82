"""The GitHub Action (action.yml at the repository root), run step by step as the runner would.

The `run:` steps' commands run under bash with GitHub's expressions substituted (`${{ inputs.X }}`,
`${{ github.X }}`, `${{ steps.check.outputs.X }}`), in a temporary kernel repository, with
`python` a fresh virtual environment that sees this interpreter's packages (libclang, z3, click)
and gets tkcheck installed from a copy of this checkout, as the action's own checkout would be;
offline (no index, no dependencies). The `uses:` steps (actions/setup-python, the SARIF upload)
are GitHub's own: their inputs are checked, not run. Skips without virtualenv, bash or git.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

yaml = pytest.importorskip("yaml")

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("virtualenv") is None
    or shutil.which("bash") is None
    or shutil.which("git") is None
    or not (ROOT / ".git").exists(),
    reason="needs virtualenv, bash, git and a git checkout of tkcheck",
)

BAD = (ROOT / "fixtures" / "completion" / "bad_consumer_parity_flipped.cu").read_text()
LIMIT_S = 300
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def _substitute(text: str, context: dict[str, str]) -> str:
    def one(m: re.Match) -> str:
        name = m.group(1)
        assert name in context, f"action.yml uses an expression this test does not know: {name}"
        return context[name]

    return EXPR.sub(one, text)


def _context(inputs: dict[str, str], **github: str) -> dict[str, str]:
    spec = action()["inputs"]
    unknown = set(inputs) - set(spec)
    assert not unknown, unknown
    ctx = {f"inputs.{k}": inputs.get(k, v.get("default", "")) for k, v in spec.items()}
    ctx.update({f"github.{k}": v for k, v in github.items()})
    return ctx


def _action_copy(tmp: Path) -> Path:
    """The action's own checkout: this checkout's files (tracked, and new ones not ignored)."""
    dest = tmp / "action"
    names = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    for name in names:
        src = ROOT / name
        if name and src.is_file() and not name.startswith(("corpus/", "tests/", "docs/", "scripts/")):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def _run_steps(ctx: dict[str, str], cwd: Path, env: dict[str, str], only: set[str] | None = None):
    """Each `run:` step (of the names in `only`) as the runner runs it; the last one's process."""
    out = None
    for step in action()["runs"]["steps"]:
        if "run" not in step or (only is not None and step.get("name") not in only):
            continue
        assert step.get("shell") == "bash"
        step_env = {**env, **{k: _substitute(str(v), ctx) for k, v in step.get("env", {}).items()}}
        script = _substitute(step["run"], ctx)
        # GitHub's bash: `bash --noprofile --norc -eo pipefail {0}`
        out = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=cwd,
            env=step_env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
        )
        if out.returncode != 0:
            return out
    return out


def test_the_action_is_a_composite_action_with_its_inputs():
    a = action()
    assert a["runs"]["using"] == "composite"
    assert set(a["inputs"]) >= {"paths", "args", "output-format", "sarif-file", "upload-sarif"}
    uses = [s["uses"] for s in a["runs"]["steps"] if "uses" in s]
    assert uses[0].startswith("actions/setup-python@") and uses[-1].startswith("github/codeql-action/upload-sarif@")
    upload = a["runs"]["steps"][-1]
    assert "inputs.upload-sarif == 'true'" in upload["if"] and "always()" in upload["if"]
    assert upload["with"]["sarif_file"] == "${{ steps.check.outputs.sarif-file }}"
    # inputs reach the scripts through the environment only (no expression inside a script)
    for step in a["runs"]["steps"]:
        assert "run" not in step or not EXPR.search(step["run"]), step["name"]


def _see_this_interpreters_packages(venv: Path) -> None:
    """`--system-site-packages` shows the new environment the *base* interpreter's packages,
    which hold libclang, z3 and click only where someone installed them there (a fresh CI
    machine installs them into the venv that runs this test): a `.pth` file in the new
    environment names the folders this interpreter imports them from, after its own
    site-packages (so the tkcheck the action installs there is the one imported)."""
    import click
    import clang
    import z3

    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    ).stdout.strip()
    dirs = sorted({str(Path(m.__file__).resolve().parent.parent) for m in (click, clang, z3)})
    (Path(purelib) / "tkcheck_test_parent_packages.pth").write_text("\n".join(dirs) + "\n")


def test_the_action_installs_tkcheck_and_annotates_and_writes_sarif(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "virtualenv", "-q", "--system-site-packages", str(venv)],
        check=True,
        env={
            **os.environ,
            "VIRTUALENV_NO_DOWNLOAD": "1",
            "VIRTUALENV_SETUPTOOLS": "bundle",
            "VIRTUALENV_WHEEL": "bundle",
        },
        timeout=LIMIT_S,
    )
    _see_this_interpreters_packages(venv)
    work = tmp_path / "kernels"
    (work / "src").mkdir(parents=True)
    (work / "src" / "bad.cu").write_text(BAD)
    (work / "build").mkdir()
    (work / "build" / "gen.cu").write_text("not C++ (\n")  # git-ignored: not checked
    (work / ".gitignore").write_text("build/\n")
    (work / ".git").mkdir()
    gh_output = tmp_path / "github_output"
    gh_output.write_text("")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "TKCHECK_DOCS_URL") and not k.startswith(("GITHUB_", "PIP_"))
    }
    env.update(
        {
            "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "GITHUB_OUTPUT": str(gh_output),
            "PIP_NO_INDEX": "1",
            "PIP_NO_DEPS": "1",
            "PIP_NO_BUILD_ISOLATION": "0",
            "NO_COLOR": "1",
            "PYTHONSAFEPATH": "1",
        }
    )
    github = {
        "action_path": str(_action_copy(tmp_path)),
        "server_url": "https://github.com",
        "action_repository": "OWNER/tkcheck",
        "action_ref": "v0.1.0",
    }
    inputs = {"upload-sarif": "true", "args": "--no-cache --select 'TK3' --extend-exclude '$(touch pwned)'"}
    done = _run_steps(_context(inputs, **github), work, env)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out  # findings: the step fails
    assert re.search(r"^::error title=tkcheck \(TK303\),file=src/bad.cu,line=27,", done.stdout, re.M), out
    assert "gen.cu" not in out and "Traceback" not in out
    assert not (work / "pwned").exists()  # inputs are words, never evaluated
    assert "sarif-file=tkcheck.sarif" in gh_output.read_text().splitlines()
    log = json.loads((work / "tkcheck.sarif").read_text())
    run_ = log["runs"][0]
    driver = run_["tool"]["driver"]
    assert driver["informationUri"] == "https://github.com/OWNER/tkcheck/blob/v0.1.0/README.md"
    rule = next(d for d in driver["rules"] if d["id"] == "TK303")
    assert rule["helpUri"] == "https://github.com/OWNER/tkcheck/blob/v0.1.0/docs/rules.md#tk303"
    assert [r["ruleId"] for r in run_["results"]] == ["TK303"]
    assert run_["invocations"][0]["executionSuccessful"] is True
    # tkcheck was installed with its byte code compiled (pip's default; no byte code is written
    # into the package while it runs)
    site = next((venv / "lib").glob("python3*/site-packages/tkcheck"))
    assert list((site / "rules" / "__pycache__").glob("*.pyc")) and list((site / "__pycache__").glob("*.pyc"))

    # a clean tree: the step passes, no SARIF asked for
    (work / "src" / "bad.cu").unlink()
    (work / "src" / "ok.cu").write_text("__global__ void k(float *o) { o[threadIdx.x] = 1.0f; }\n")
    gh_output.write_text("")
    done = _run_steps(_context({"paths": "src", "args": "--no-cache"}, **github), work, env, only={"Run tkcheck"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sarif-file=" in gh_output.read_text().splitlines()
