"""The README's pre-commit snippet, as written, against a hook repository tagged as the README says.

Release tags are `v<version>` (pyproject.toml's version); the README's `rev:` must name that tag.
The hook repository is a copy of this checkout's files committed and tagged in a temporary git
repository (as tests/test_precommit_hook.py makes it; offline installs); the snippet's `repo:`
placeholder is replaced by its path, nothing else. Skips without pre-commit, git or a git checkout.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT
from test_precommit_hook import BAD, LIMIT_S, _deps_path, _git, _hook_repo, offline_precommit_env, pytestmark  # noqa: F401

yaml = pytest.importorskip("yaml")


def _readme_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"As a pre-commit hook.*?```yaml\n(.*?)```", text, re.S)
    assert m, "README: the pre-commit snippet is missing"
    return m.group(1)


def _version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_readme_names_the_release_tag_of_this_version():
    (entry,) = yaml.safe_load(_readme_snippet())
    assert entry["rev"] == f"v{_version()}"
    assert [h["id"] for h in entry["hooks"]] == ["tkcheck"]
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["tkcheck"]


def _env(tmp_path: Path) -> dict[str, str]:
    return offline_precommit_env(tmp_path)


def test_the_readme_snippet_runs_with_the_tag(tmp_path):
    repo, _ = _hook_repo(tmp_path)
    tag = f"v{_version()}"
    _git("tag", tag, cwd=repo)
    work = tmp_path / "kernels"
    (work / "src").mkdir(parents=True)
    (work / "src" / "bad.cu").write_text(BAD)
    config = "repos:\n" + "".join(f"  {line}\n" for line in _readme_snippet().splitlines())
    config = config.replace("<this repository's URL>", str(repo))
    (work / ".pre-commit-config.yaml").write_text(config)
    _git("init", "-q", cwd=work)
    _git("add", "-A", cwd=work)
    env = _env(tmp_path)
    pc = [sys.executable, "-m", "pre_commit"]
    inst = subprocess.run([*pc, "install-hooks"], cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT_S)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    env["PYTHONPATH"] = _deps_path(tmp_path)
    run = subprocess.run(
        [*pc, "run", "--all-files"], cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT_S
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "src/bad.cu:27:13" in out and "[TK303]" in out, out
    # the same tag through try-repo (what a user runs to try the hook before adding it)
    tried = subprocess.run(
        [*pc, "try-repo", str(repo), "tkcheck", "--ref", tag, "--all-files"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    out = tried.stdout + tried.stderr
    assert tried.returncode == 1 and "[TK303]" in out, out
    # a rev that is not a tag of the repository is refused by pre-commit: the tag is what works
    (work / ".pre-commit-config.yaml").write_text(config.replace(f"rev: {tag}", "rev: v0.0.0-missing"))
    bad = subprocess.run([*pc, "install-hooks"], cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT_S)
    assert bad.returncode != 0
