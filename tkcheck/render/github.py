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


def run_annotations(run_info: dict | None) -> list[str]:
    """The run's own messages, without a file: a pass that was asked for and skipped (a
    warning), findings a baseline hid (a notice)."""
    if not run_info:
        return []
    out = [f"::warning title=tkcheck (pass skipped)::{escape_data(m)}" for m in run_info.get("skipped_passes", [])]
    base = run_info.get("baseline")
    if base and (base.get("hidden") or base.get("stale")):
        text = f"baseline {base['file']}: {base['hidden']} recorded finding(s) not shown"
        if base.get("stale"):
            text += f"; {base['stale']} recorded finding(s) are gone"
        out.append(f"::notice title=tkcheck (baseline)::{escape_data(text)}")
    return out


def render_github(
    findings: list[Finding], *, root: pathlib.Path | None = None, run_info: dict | None = None, **_: object
) -> str:
    lines = [annotation(f, root) for f in sort_findings(findings)] + run_annotations(run_info)
    return "".join(line + "\n" for line in lines)
