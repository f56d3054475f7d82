"""The shipped pre-commit hook, run by the real `pre-commit` over a small kernel repository.

Offline: the hook repository is a local git repository made from this checkout's
tracked files, its environment is installed without an index (`PIP_NO_INDEX`,
no dependencies, no build isolation), and the hook finds libclang, z3 and click
through PYTHONPATH (links to the packages this test runs with). Skips when
pre-commit or git is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pre_commit") is None or shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="needs the pre-commit package, git and a git checkout of tkcheck",
)

BAD = (ROOT / "fixtures" / "completion" / "bad_consumer_parity_flipped.cu").read_text()
GOOD_HEADER = '#pragma once\n#include "kittens.cuh"\nusing namespace kittens;\n'
HOST = "#include <torch/extension.h>\n#include <pybind11/pybind11.h>\nint entry() { return 1; }\n"
LIMIT_S = 300


def _git(*args, cwd):
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def _hook_repo(tmp: Path) -> tuple[Path, str]:
    """A git repository holding this checkout's tracked files as they are now."""
    repo = tmp / "hookrepo"
    repo.mkdir()
    files = _git("ls-files", "-z", cwd=ROOT).split("\0")
    for name in files:
        src = ROOT / name
        if name and src.is_file() and not name.startswith(("corpus/", "tests/", "docs/", "scripts/")):
            dst = repo / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "hook", cwd=repo)
    return repo, _git("rev-parse", "HEAD", cwd=repo).strip()


def _deps_path(tmp: Path) -> str:
    """A folder with links to the runtime dependencies (not to tkcheck itself)."""
    deps = tmp / "deps"
    deps.mkdir()
    for mod in ("clang", "z3", "click"):
        spec = importlib.util.find_spec(mod)
        os.symlink(Path(spec.origin).parent, deps / mod)
    return str(deps)


def offline_precommit_env(tmp_path: Path) -> dict[str, str]:
    """The environment pre-commit runs in here: its home under tmp_path, pip and virtualenv
    offline (the hook installs from the local checkout), the installed tkcheck, no colour."""
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "home"),
        "PIP_NO_INDEX": "1",
        "PIP_NO_DEPS": "1",
        "PIP_NO_BUILD_ISOLATION": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "VIRTUALENV_NO_DOWNLOAD": "1",
        "VIRTUALENV_SETUPTOOLS": "bundle",
        "NO_COLOR": "1",
        "PYTHONSAFEPATH": "1",
    }
    env.pop("PYTHONPATH", None)
    return env


def test_pre_commit_runs_the_hook_on_cuda_sources_and_headers_only(tmp_path):
    repo, rev = _hook_repo(tmp_path)
    work = tmp_path / "kernels"
    (work / "src").mkdir(parents=True)
    (work / "src" / "bad.cu").write_text(BAD)
    (work / "src" / "tiles.cuh").write_text(GOOD_HEADER)
    (work / "src" / "binding.cpp").write_text(HOST)  # host code: not the hook's business
    (work / "src" / "helpers.h").write_text(HOST)
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: tkcheck\n        args: [--no-cache, --output-format, full]\n"
    )
    _git("init", "-q", cwd=work)
    _git("add", "-A", cwd=work)
    env = offline_precommit_env(tmp_path)
    pc = [sys.executable, "-m", "pre_commit"]
    inst = subprocess.run([*pc, "install-hooks"], cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT_S)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    env["PYTHONPATH"] = _deps_path(tmp_path)
    run = subprocess.run(
        [*pc, "run", "--all-files", "--verbose"], cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT_S
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "src/bad.cu:27:13" in out and "[TK303]" in out, out
    assert "binding.cpp" not in out and "helpers.h" not in out and "torch" not in out, out
    # the hook was given the two CUDA files only (not the host .cpp and .h next to them)
    assert "Found 1 finding in 2 files." in out, out
    assert "Traceback" not in out
    # the clean header alone passes
    (work / "src" / "bad.cu").unlink()
    _git("add", "-A", cwd=work)
    run = subprocess.run(
        [*pc, "run", "--all-files"], cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT_S
    )
    assert run.returncode == 0, run.stdout + run.stderr
