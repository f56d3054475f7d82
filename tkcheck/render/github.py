"""GitHub Actions workflow commands: one `::error ...::message` annotation per finding.

Escaping follows the runner's own rules (actions/toolkit `command.ts`): data
escapes %, CR and LF; property values also escape ':' and ','. Paths are
relative to the repository root, which is what the runner resolves them against.
"""

from __future__ import annotations

import pathlib

from ..findings import Finding
from ._common import end_of, format_verdict, raw_path, sort_findings

_COMMANDS = {"error": "error", "warning": "warning", "note": "notice", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding, root: pathlib.Path | None) -> str:
    end_row, end_col = end_of(f.location)
    props = [
        ("title", f"tkcheck ({f.code})"),
        # the real name (the runner resolves it), its newlines escaped by the command syntax itself
        ("file", raw_path(f.location.filename, root)),
        ("line", str(f.location.row)),
        ("col", str(f.location.column)),
        ("endLine", str(end_row)),
        ("endColumn", str(end_col)),
    ]
    body = f.message if not f.help else f"{f.message}\nhelp: {f.help}"
    if f.verdict:
        body += f"\nconfirm: {format_verdict(f.verdict)}"
    command = _COMMANDS.get(f.severity, "warning")
    joined = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{command} {joined}::{escape_data(body)}"


def render_github(findings: list[Finding], *, root: pathlib.Path | None = None, **_: object) -> str:
    return "".join(annotation(f, root) + "\n" for f in sort_findings(findings))
