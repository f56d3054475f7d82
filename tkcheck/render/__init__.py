"""Renderers: one module per output format, all fed the same sorted findings.

`render()` is the only entry point the CLI needs. Every format is
deterministic: findings are sorted the same way and nothing depends on the
time, the machine, or the order the checks ran in.
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Callable

from ..formats import OUTPUT_FORMATS

if TYPE_CHECKING:
    from ..findings import Finding
    from ..rule import Rule

FORMATS = OUTPUT_FORMATS

# format -> (module, function): a renderer is imported when its format is asked for (start-up
# stays lean: SARIF's fingerprints need hashlib, JUnit's XML needs xml.etree)
_RENDERERS: dict[str, tuple[str, str]] = {
    "full": ("full", "render_full"),
    "concise": ("concise", "render_concise"),
    "json": ("jsonfmt", "render_json"),
    "json-lines": ("jsonfmt", "render_json_lines"),
    "sarif": ("sarif", "render_sarif"),
    "github": ("github", "render_github"),
    "junit": ("junit", "render_junit"),
}


def renderer(fmt: str) -> Callable[..., str] | None:
    """The render function of one format, imported on first use; None for an unknown format."""
    where = _RENDERERS.get(fmt)
    if where is None:
        return None
    import sys

    name = f"{__name__}.{where[0]}"
    __import__(name)  # (not importlib.import_module: `-X importtime` sees this one)
    module = sys.modules[name]
    fn: Callable[..., str] = getattr(module, where[1])
    return fn


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
    fn = renderer(fmt)
    if fn is None:
        raise ValueError(f"unknown output format '{fmt}'; expected one of: {', '.join(FORMATS)}")
    return fn(
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
