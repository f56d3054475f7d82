"""Renderers: one module per output format, all fed the same sorted findings.

`render()` is the only entry point the CLI needs. Every format is
deterministic: findings are sorted the same way and nothing depends on the
time, the machine, or the order the checks ran in.
"""

from __future__ import annotations

import pathlib
from typing import Callable

from ..findings import Finding
from ..formats import OUTPUT_FORMATS
from ..rule import Rule
from .concise import render_concise
from .full import render_full
from .github import render_github
from .jsonfmt import render_json, render_json_lines
from .junit import render_junit
from .sarif import render_sarif

FORMATS = OUTPUT_FORMATS

_RENDERERS: dict[str, Callable[..., str]] = {
    "full": render_full,
    "concise": render_concise,
    "json": render_json,
    "json-lines": render_json_lines,
    "sarif": render_sarif,
    "github": render_github,
    "junit": render_junit,
}


def render(
    findings: list[Finding],
    fmt: str,
    *,
    rules: dict[str, Rule],
    sources: dict[str, str],
    files_checked: int,
    color: bool = False,
    root: pathlib.Path | None = None,
    notes: list[str] | None = None,
    coverage: dict | None = None,
    run_info: dict | None = None,
) -> str:
    """The whole report as text. Unknown formats raise ValueError (a usage error).
    `coverage`: {"summary": {...}, "line": "...", "kernels": [...]} (tkcheck.coverage), shown by
    the full format's last line and in SARIF's run properties. `run_info`: {"exit_code",
    "errors", "skipped_passes", "baseline": {"file", "hidden", "stale"} | None} of the run, for
    the formats that carry them (SARIF's `invocations`, GitHub annotations)."""
    renderer = _RENDERERS.get(fmt)
    if renderer is None:
        raise ValueError(f"unknown output format '{fmt}'; expected one of: {', '.join(FORMATS)}")
    return renderer(
        list(findings),
        rules=rules,
        sources=sources,
        files_checked=files_checked,
        color=color,
        root=root,
        notes=notes,
        coverage=coverage,
        run_info=run_info,
    )


__all__ = ["FORMATS", "render"]
