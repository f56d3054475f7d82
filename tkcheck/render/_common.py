"""Helpers every renderer shares: ordering, paths, source lines, value text.

Kept here so that the formats agree on what "the same finding" looks like:
the same order, the same path spelling, the same counterexample text.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from typing import Any, Iterable

from ..findings import Finding, Location

# Clang counts "\r\n", "\n" and a lone "\r" as line ends; str.splitlines() would
# also split on form feeds and U+2028 and so disagree with clang's row numbers.
_LINE_END = re.compile(r"\r\n|\n|\r")


def split_lines(text: str) -> list[str]:
    return _LINE_END.split(text)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Deterministic order: file, position, code, message, then the span end.

    Renderers never rely on the order the checks produced findings in, so that
    `-j N` and caches give byte-identical output.
    """

    def key(f: Finding) -> tuple[str, int, int, str, str, int, int]:
        loc = f.location
        return (*f.sort_key(), loc.end_row or loc.row, loc.end_column or loc.column)

    return sorted(findings, key=key)


def raw_path(filename: str, root: pathlib.Path | None) -> str:
    """Relative to `root` when under it, with '/', control characters as they are."""
    rel = relative_to_root(filename, root)
    if rel is None:
        rel = filename.replace(os.sep, "/") if os.sep != "/" else filename
    return rel


def display_path(filename: str, root: pathlib.Path | None) -> str:
    """The path to print: relative to `root` when the file lies under it, with '/', and with
    control characters escaped (`a\\nb.cu`), so one finding stays one line."""
    return escape_controls(raw_path(filename, root))


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def escape_controls(text: str) -> str:
    """`\n`, `\r`, `\t` and other control characters as visible escapes."""
    if not _CONTROL.search(text):
        return text
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return _CONTROL.sub(
        lambda m: named.get(
            m.group(), f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}"
        ),
        text,
    )


def relative_to_root(filename: str, root: pathlib.Path | None) -> str | None:
    """`filename` relative to `root` (forward slashes), or None when outside it.

    Pure path arithmetic (no resolve()): a symlinked checkout must not turn a
    repository path into a path somewhere else on the disk.
    """
    if root is None:
        return None
    path = pathlib.Path(filename)
    if not path.is_absolute():
        path = pathlib.Path.cwd() / path
    base = pathlib.Path(os.path.normpath(pathlib.Path(root).absolute()))
    try:
        rel = pathlib.Path(os.path.normpath(path)).relative_to(base)
    except ValueError:
        return None
    return rel.as_posix()


def end_of(loc: Location) -> tuple[int, int]:
    """(end_row, end_column) with the end column exclusive and the span non-empty.

    A finding with no end, or an end not after its start, marks one character.
    """
    end_row = loc.end_row or loc.row
    end_col = loc.end_column or 0
    if end_row < loc.row or (end_row == loc.row and end_col <= loc.column):
        return loc.row, loc.column + 1
    return end_row, end_col


def format_value(value: Any) -> str:
    """One witness value as the text users type in C++ (true, 3, full[1])."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) or value is None:
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, default=str)


def format_witness(witness: dict[str, Any] | None) -> str:
    """`iteration=3, stage=1`: the checks' order is kept (it reads as a story)."""
    if not witness:
        return ""
    return ", ".join(f"{k}={format_value(v)}" for k, v in witness.items())


def format_verdict(verdict: dict[str, Any] | None, full: bool = True) -> str:
    """`tkcheck confirm`'s verdict: "CONFIRMED: <evidence>", "NOT REPRODUCED (ran: ...)", ...;
    in full, also the other evidence (not at the finding's site) and the GPU it ran on."""
    if not verdict:
        return ""
    status = str(verdict.get("status", ""))
    dev = verdict.get("device")
    gpu = ""
    if dev:
        gpu = f" [on {dev}]" if full else f" [{str(dev).split(' (')[0]}]"
    other = ""
    if full and verdict.get("other"):
        other = "; other evidence (not at this finding's site): " + "; ".join(verdict["other"])
    notes = "; " + "; ".join(verdict["notes"]) if full and verdict.get("notes") else ""
    if verdict.get("evidence"):
        ev = list(verdict["evidence"])
        return f"{status}: " + ("; ".join(ev) if full else ev[0]) + notes + other + gpu
    if verdict.get("reason"):
        return f"{status}: {verdict['reason']}" + gpu
    if verdict.get("ran"):
        why = f"; why: {verdict['why']}" if verdict.get("why") else ""
        if not full:
            return f"{status}" + (f" ({verdict['why']})" if verdict.get("why") else "") + gpu
        return f"{status} (ran: " + "; ".join(verdict["ran"]) + ")" + why + notes + other + gpu
    return status + gpu


def position(loc: Location, root: pathlib.Path | None) -> str:
    return f"{display_path(loc.filename, root)}:{loc.row}:{loc.column}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
