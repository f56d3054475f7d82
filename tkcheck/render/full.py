"""Full: the default on a terminal. Header, snippet with carets, notes, evidence.

kernels/gemm.cu:42:9: error: expect_tx of 16384 bytes ... [<code>]
   |
42 |     tma::expect_bytes(bar, 16384);
   |     ^^^^^^^^^^^^^^^^^
kernels/gemm.cu:30:5: note: the loads on 'bar'
counterexample: iteration=3, stage=1
trace:
  1. producer: wait(empty[0], 1) passes (kernels/gemm.cu:50:9)
  2. consumer: wait(full[1], 0) blocks forever  <-- blocked
help: expect the bytes of every load that completes on 'bar'

Found 1 finding in 3 files.
"""

from __future__ import annotations

import pathlib

from ..findings import Finding, Location
from ._common import display_path, end_of, format_verdict, format_witness, plural, position, sort_findings, split_lines
from .concise import one_line

TAB_WIDTH = 8  # clang's default tab stop, so our carets line up with its own

_RESET = "\x1b[0m"
_STYLE = {
    "error": "\x1b[1;31m",
    "warning": "\x1b[1;33m",
    "note": "\x1b[1;36m",
    "bold": "\x1b[1m",
    "gutter": "\x1b[34m",
    "caret": "\x1b[1;32m",
    "dim": "\x1b[2m",
}


class _Painter:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, style: str, text: str) -> str:
        if not self.enabled or not text:
            return text
        return f"{_STYLE.get(style, _STYLE['bold'])}{text}{_RESET}"


def _snippet(loc: Location, sources: dict[str, str], paint: _Painter) -> list[str]:
    """The finding's first line with carets under the span (to its end on that line)."""
    text = sources.get(loc.filename)
    if text is None:
        return []
    lines = split_lines(text)
    if not 1 <= loc.row <= len(lines):
        return []
    line = lines[loc.row - 1]
    start = min(max(loc.column, 1), len(line) + 1)
    end_row, end_col = end_of(loc)
    stop = end_col if end_row == loc.row else len(line) + 1
    stop = max(min(stop, len(line) + 1), start + 1)
    # Widths after tab expansion, so the carets sit under the characters they mean.
    pad = len(line[: start - 1].expandtabs(TAB_WIDTH))
    width = max(len(line[: stop - 1].expandtabs(TAB_WIDTH)) - pad, 1)
    gutter = " " * len(str(loc.row))
    return [
        paint("gutter", f"{gutter} |"),
        paint("gutter", f"{loc.row} |") + " " + line.expandtabs(TAB_WIDTH).rstrip(),
        paint("gutter", f"{gutter} |") + " " + " " * pad + paint("caret", "^" * width),
    ]


def _finding_lines(f: Finding, sources: dict[str, str], root: pathlib.Path | None, paint: _Painter) -> list[str]:
    where = position(f.location, root)
    rest = f"{one_line(f.message)} [{f.code}]"
    # Same text as the concise line (editors parse either), painted piecewise.
    out = [f"{paint('bold', where)}: {paint(f.severity, f.severity + ':')} {paint('bold', rest)}"]
    out += _snippet(f.location, sources, paint)
    for rel in f.related:
        out.append(f"{position(rel.location, root)}: {paint('note', 'note:')} {rel.message}")
    if f.witness:
        out.append(f"{paint('bold', 'counterexample:')} {format_witness(f.witness)}")
    if f.trace:
        out.append(paint("bold", "trace:"))
        for i, step in enumerate(f.trace, 1):
            who = f"{step.role}: " if step.role else ""
            line = f"  {i}. {who}{step.text}"
            if step.location is not None:
                line += paint("dim", f" ({position(step.location, root)})")
            if step.blocked:
                line += "  " + paint("error", "<-- blocked")
            elif step.fault:
                line += "  " + paint("error", "<-- wrong phase")
            out.append(line)
    if f.help:
        out.append(f"{paint('note', 'help:')} {f.help}")
    for x in f.fixes:
        from ..fixes import diff

        text = diff(x, sources, lambda name: display_path(name, root))
        if not text:
            continue
        how = "safe, `--fix` applies it" if x.safe else "suggested, review before applying"
        out.append(f"{paint('note', 'fix:')} {x.description} ({how})")
        for d in text.rstrip("\n").split("\n"):
            style = (
                "caret"
                if d.startswith("+") and not d.startswith("+++")
                else ("error" if d.startswith("-") and not d.startswith("---") else "dim")
            )
            out.append("    " + paint(style, d))
    if f.verdict:
        out.append(f"{paint('bold', 'confirm:')} {format_verdict(f.verdict)}")
    return out


def render_full(
    findings: list[Finding],
    *,
    sources: dict[str, str],
    files_checked: int,
    root: pathlib.Path | None = None,
    color: bool = False,
    notes: list[str] | None = None,
    coverage: dict | None = None,
    **_: object,
) -> str:
    paint = _Painter(color)
    blocks: list[list[str]] = []
    if notes:
        blocks.append([f"{paint('note', 'note:')} {n}" for n in notes])
    ordered = sort_findings(findings)
    blocks += [_finding_lines(f, sources, root, paint) for f in ordered]
    files = plural(files_checked, "file")
    if ordered:
        footer = f"Found {plural(len(ordered), 'finding')} in {files}."
    else:
        footer = f"No findings in {files}."
    last = [paint("bold", footer)]
    if coverage and coverage.get("line"):
        last.append(coverage["line"])  # what was modelled: "no findings" means only this much
    blocks.append(last)
    return "\n\n".join("\n".join(b) for b in blocks) + "\n"
