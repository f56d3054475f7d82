"""Concise: one `path:row:col: severity: message [CODE]` line per finding.

The shape of gcc/clang diagnostics, so editors and GitHub's gcc problem matcher
pick the lines up without configuration. One line each, always: a message with
a line break would split a finding in two for those tools.
"""

from __future__ import annotations

import pathlib

from ..findings import Finding
from ._common import format_verdict, position, sort_findings


def one_line(message: str) -> str:
    return " ".join(message.split()) if "\n" in message or "\r" in message else message


def header_line(f: Finding, root: pathlib.Path | None) -> str:
    line = f"{position(f.location, root)}: {f.severity}: {one_line(f.message)} [{f.code}]"
    if f.verdict:
        line += f" [{one_line(format_verdict(f.verdict, full=False))}]"
    return line


def render_concise(findings: list[Finding], *, root: pathlib.Path | None = None, **_: object) -> str:
    lines = [header_line(f, root) for f in sort_findings(findings)]
    return "".join(line + "\n" for line in lines)
