"""Which files a folder argument contributes: `exclude`, `extend-exclude` and `.gitignore`.

ruff's conventions, which kernel authors already know:
- `exclude` replaces the default exclusions, `extend-exclude` adds to them. A pattern without a
  `/` (`build`, `*_gen.cu`) matches a file or folder of that name at any depth; a pattern with a
  `/` (`third_party/ThunderKittens`, `kernels/*.cuh`) is anchored at the folder of the config
  file that sets it (the current folder for a `--config` override or the command line). `**`
  crosses folders, `*` and `?` do not.
- `respect-gitignore` (on by default): `.gitignore` files, and the repository's
  `.git/info/exclude`, are honoured inside a git repository (a folder holding `.git`), as git
  reads them. tkcheck reads these files itself and runs no program (static mode never does):
  git's global excludes file (`core.excludesFile`) is not read.
- Both apply while walking folders. A file named on the command line is always checked, as ruff
  does without `--force-exclude`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# Folders skipped unless `exclude` says otherwise: hidden folders (`.git`, `.venv`, ...) and
# installed or generated trees.
# (a trailing `/`: folders only; a hidden file named on its own, `.scratch.cu`, is still checked)
DEFAULT_EXCLUDE: tuple[str, ...] = (".*/", "node_modules/", "__pycache__/", "site-packages/")
MAX_IGNORE_FILE_BYTES = 1 << 20


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regular expression over a `/`-separated path: `**` any folders, `*` and `?`
    within one name, `[...]` a class (`[!...]` negated), `\\x` a literal."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                before_ok = i == 0 or pattern[i - 1] == "/"
                after = i + 2
                if before_ok and (after == n or pattern[after] == "/"):
                    out.append("(?:.*/)?" if after < n else ".*")
                    i = after + (1 if after < n else 0)
                    continue
                out.append("[^/]*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.S)


@dataclass(frozen=True)
class Pattern:
    """One exclusion pattern, anchored at `base` when it holds a `/` (not only at its end)."""

    text: str
    base: str  # absolute, normalised folder the pattern is relative to
    negated: bool = False  # `!pattern` (gitignore): re-include
    dir_only: bool = False  # `pattern/`: folders only
    source: str = ""  # where it came from (a config file, a .gitignore), for --show-settings

    @property
    def anchored(self) -> bool:
        return "/" in self.text

    def matches(self, path: str, is_dir: bool) -> bool:
        """`path`: absolute and normalised."""
        if self.dir_only and not is_dir:
            return False
        if self.anchored:
            rel = _relative(path, self.base)
            return rel is not None and _glob_regex(self.text.lstrip("/")).match(rel) is not None
        return _glob_regex(self.text).match(os.path.basename(path)) is not None


def _relative(path: str, base: str) -> str | None:
    if path == base:
        return None
    prefix = base.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].replace(os.sep, "/")


def config_patterns(patterns: tuple[str, ...], base: Path, source: str) -> tuple[Pattern, ...]:
    """`exclude` / `extend-exclude` entries as Patterns anchored at `base`."""
    out = []
    for text in patterns:
        dir_only = text.endswith("/") and len(text) > 1
        body = text.rstrip("/") if dir_only else text
        if body.startswith("./"):
            body = body[2:]
        out.append(Pattern(body, os.path.normpath(os.path.abspath(base)), dir_only=dir_only, source=source))
    return tuple(out)


def parse_gitignore(text: str, base: str, source: str) -> list[Pattern]:
    """The patterns of one .gitignore file (git's syntax: `#` comments, `!` negation, a trailing
    `/` for folders only, a `/` at the start or in the middle anchors at the file's folder)."""
    out = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        # trailing spaces are ignored unless escaped
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\#") or line.startswith("\\!"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = line.lstrip("/") if anchored else line
        # an anchored pattern keeps a `/` so that Pattern.anchored holds
        out.append(
            Pattern(
                ("/" + body) if anchored and "/" not in body else body,
                base,
                negated=negated,
                dir_only=dir_only,
                source=source,
            )
        )
    return out


def _read_small(path: str) -> str:
    try:
        if not os.path.isfile(path) or os.path.islink(path):
            return ""
        with open(path, "rb") as fh:
            return fh.read(MAX_IGNORE_FILE_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def git_root(folder: str) -> str | None:
    """The closest folder at or above `folder` holding `.git` (a folder, or a file for a
    worktree or submodule)."""
    here = os.path.abspath(folder)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


@dataclass
class GitIgnores:
    """The .gitignore patterns that apply in each folder, read once per folder."""

    _by_folder: dict[str, list[Pattern]] = field(default_factory=dict)

    def patterns_for(self, folder: str) -> list[Pattern]:
        """Patterns in force inside `folder` (absolute): every .gitignore from the repository's
        root down to `folder`, in that order (deeper files win), after `.git/info/exclude`."""
        folder = os.path.normpath(os.path.abspath(folder))
        if folder in self._by_folder:
            return self._by_folder[folder]
        root = git_root(folder)
        if root is None:
            pats: list[Pattern] = []
        elif folder == root:
            pats = parse_gitignore(
                _read_small(os.path.join(root, ".git", "info", "exclude")), root, ".git/info/exclude"
            )
            pats += parse_gitignore(_read_small(os.path.join(root, ".gitignore")), root, ".gitignore")
        else:
            pats = list(self.patterns_for(os.path.dirname(folder)))
            own = os.path.join(folder, ".gitignore")
            pats += parse_gitignore(_read_small(own), folder, own)
        self._by_folder[folder] = pats
        return pats

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether git ignores `path` (absolute) by the patterns of the folders above it."""
        path = os.path.normpath(os.path.abspath(path))
        verdict = False
        for p in self.patterns_for(os.path.dirname(path)):
            if p.matches(path, is_dir):
                verdict = not p.negated
        return verdict


@dataclass(frozen=True)
class Exclusions:
    """What one folder's settings exclude while walking."""

    patterns: tuple[Pattern, ...]
    respect_gitignore: bool = True

    def excluded(self, path: str, is_dir: bool) -> bool:
        path = os.path.normpath(os.path.abspath(path))
        return any(p.matches(path, is_dir) for p in self.patterns)


__all__ = ["DEFAULT_EXCLUDE", "Exclusions", "GitIgnores", "Pattern", "config_patterns", "git_root", "parse_gitignore"]
