"""Fingerprints and baselines: adopting tkcheck in a kernel repository that already has findings.

A finding's fingerprint names it independently of where lines moved: the
rule, the file (relative to the repository root: the closest folder above it
with `.git`, else the current folder), the kernel, the text of the finding's
source line with its spacing normalised, and the occurrence of that same
(rule, file, kernel, text) in file order. Inserting or deleting lines above a
finding, or re-indenting it, keeps its fingerprint; editing the flagged line
gives a new one. SARIF carries the same value in `partialFingerprints`.

`tkcheck --write-baseline FILE` records today's findings; `--baseline FILE`
(or the config key `baseline`) then reports only findings whose fingerprint is
not recorded. Parse errors (input and tool errors) are never baselined.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from .findings import Finding
from .rules import PARSE_ERROR
from .safe_io import NotReadable, read_regular

FINGERPRINT_KEY = "tkcheck/v1"
BASELINE_FORMAT = 1
MAX_BASELINE_BYTES = 64 * 1024 * 1024
NOT_BASELINED = (PARSE_ERROR.code,)


class BaselineError(Exception):
    """A baseline file that cannot be read or written; the message says which and why."""


_ROOTS: dict[str, Path] = {}


def project_root(path: str) -> Path:
    """The closest folder above `path` holding `.git` (a repository or worktree), else the cwd."""
    folder = os.path.dirname(os.path.abspath(path))
    if folder in _ROOTS:
        return _ROOTS[folder]
    here = Path(folder)
    root = next((p for p in (here, *here.parents) if os.path.lexists(p / ".git")), Path.cwd())
    _ROOTS[folder] = root
    return root


def _line_text(filename: str, row: int, sources: dict[str, str], cache: dict[str, list[str]]) -> str:
    if filename not in cache:
        text = sources.get(filename)
        if text is None:
            try:
                text = read_regular(filename, 8_000_000).decode("utf-8", errors="replace")
            except OSError:
                text = ""
        from .render._common import split_lines

        cache[filename] = split_lines(text)
    lines = cache[filename]
    return " ".join(lines[row - 1].split()) if 0 < row <= len(lines) else ""


def _relpath(filename: str) -> str:
    root = project_root(filename)
    try:
        return Path(os.path.abspath(filename)).relative_to(root).as_posix()
    except ValueError:
        return Path(os.path.abspath(filename)).as_posix()


def assign_fingerprints(findings: Iterable[Finding], sources: dict[str, str]) -> None:
    """Set `fingerprint` on every finding (in place); deterministic for the same code and findings."""
    cache: dict[str, list[str]] = {}
    seen: dict[tuple[str, str, str, str], int] = {}
    ordered = sorted(
        findings, key=lambda f: (f.location.filename, f.location.row, f.location.column, f.code, f.message)
    )
    for f in ordered:
        ident = (
            f.code,
            _relpath(f.location.filename),
            f.kernel or "",
            _line_text(f.location.filename, f.location.row, sources, cache),
        )
        n = seen.get(ident, 0)
        seen[ident] = n + 1
        h = hashlib.sha256("\0".join([*ident, str(n)]).encode("utf-8", errors="replace")).hexdigest()
        f.fingerprint = h[:32]


# ---------------------------------------------------------------- the baseline file


def write_baseline(path: str, findings: Iterable[Finding]) -> int:
    """Record the findings' fingerprints in `path`; returns how many were recorded."""
    recs = sorted(
        (
            {
                "fingerprint": f.fingerprint,
                "code": f.code,
                "file": _relpath(f.location.filename),
                "kernel": f.kernel,
                "message": f.message,
            }
            for f in findings
            if f.code not in NOT_BASELINED and f.fingerprint
        ),
        key=lambda r: (r["file"], r["code"], r["fingerprint"]),
    )
    data = {"tool": "tkcheck", "format": BASELINE_FORMAT, "fingerprint": FINGERPRINT_KEY, "findings": recs}
    try:
        Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as e:
        raise BaselineError(f"baseline {path}: cannot write: {e.strerror or e}") from None
    return len(recs)


def read_baseline(path: str) -> set[str]:
    try:
        data = json.loads(read_regular(path, MAX_BASELINE_BYTES).decode("utf-8"))
    except NotReadable as e:
        raise BaselineError(f"baseline {path}: cannot read: {e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BaselineError(f"baseline {path}: not a tkcheck baseline (invalid JSON: {e})") from None
    if not isinstance(data, dict) or data.get("tool") != "tkcheck" or not isinstance(data.get("findings"), list):
        raise BaselineError(f"baseline {path}: not a tkcheck baseline (write one with --write-baseline)")
    if data.get("format") != BASELINE_FORMAT or data.get("fingerprint") != FINGERPRINT_KEY:
        raise BaselineError(
            f"baseline {path}: written by another tkcheck (format {data.get('format')!r}); "
            "write it again with --write-baseline"
        )
    out: set[str] = set()
    for r in data["findings"]:
        if not isinstance(r, dict) or not isinstance(r.get("fingerprint"), str):
            raise BaselineError(f"baseline {path}: an entry without a fingerprint")
        out.add(r["fingerprint"])
    return out


def apply_baseline(findings: list[Finding], known: set[str]) -> tuple[list[Finding], int, int]:
    """(findings not in the baseline, how many were, how many baseline entries matched nothing)."""
    kept: list[Finding] = []
    matched: set[str | None] = set()
    for f in findings:
        if f.code not in NOT_BASELINED and f.fingerprint in known:
            matched.add(f.fingerprint)
        else:
            kept.append(f)
    return kept, len(findings) - len(kept), len(known - matched)


__all__ = [
    "assign_fingerprints",
    "write_baseline",
    "read_baseline",
    "apply_baseline",
    "project_root",
    "BaselineError",
    "FINGERPRINT_KEY",
]
