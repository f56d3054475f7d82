"""`--trace-svg DIR`: each finding's trace drawn as lanes (one column per warp role), time downwards.

Every step is a row: a marker in its role's column (green: a wait that passes,
blue: a signal, red square: a wait that blocks forever, red diamond: the step
the finding is about where it does not block (a wait at the wrong phase, marked
`fault` by the rule), grey: anything else) and its
full text next to it, wrapped to the column, never cut; the barrier element and
phase follow in grey. Rows never share vertical space, text never leaves its
column, so no two labels overlap; the picture's width is bounded (columns
narrow when there are many roles, text wraps instead). Plain SVG, no
dependencies, deterministic output (same findings -> same bytes).

Text is monospace at fixed sizes, and the layout measures it with the metrics
below (an advance of 0.62 em per character, a little over that of common monospace
fonts), which is also what `text_boxes` uses to recover each label's box from
the SVG.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Iterable
from html import escape

from ..findings import Finding

FONT = 11
TITLE_FONT = 14
CHAR_EM = 0.62  # advance of one monospace character, in em (DejaVu Sans Mono: 0.602)
LINE_EM = 1.3  # line height, in em
MAX_WIDTH = 1200
PAD = 12
STEP_COL = 36  # the step numbers
COL_MAX = 340
MARKER_DX = 10
TEXT_DX = 24
ROW_GAP = 8
COLORS = {"blocked": "#d62728", "fault": "#d62728", "wait": "#2ca02c", "signal": "#1f77b4", "other": "#7f7f7f"}


def char_width(size: float) -> float:
    return size * CHAR_EM


def line_height(size: float) -> float:
    return size * LINE_EM


def _kind(text: str, blocked: bool, fault: bool = False) -> str:
    if blocked:
        return "blocked"
    if fault:
        return "fault"
    if text.startswith("wait(") or "passes" in text:
        return "wait"
    if text.startswith(("arrive", "expect", "load")):
        return "signal"
    return "other"


def _wrap(text: str, width_px: float, size: float) -> list[str]:
    """Lines of at most width_px, long words broken (never cut off): a narrow column (a trace of
    many roles) gets short lines rather than text running past its column and the picture."""
    chars = max(int(width_px // char_width(size)), 1)
    lines = []
    for para in text.split("\n"):
        lines += textwrap.wrap(para, chars, break_long_words=True, break_on_hyphens=False) or [""]
    return lines


class _Canvas:
    def __init__(self) -> None:
        self.items: list[str] = []

    def text(
        self,
        x: float,
        y_top: float,
        lines: list[str],
        size: float = FONT,
        fill: str = "#000000",
        bold: bool = False,
        title: str | None = None,
        colors: list[str] | None = None,
    ) -> float:
        """Left-aligned lines whose box starts at (x, y_top); returns the box's bottom."""
        lh = line_height(size)
        weight = ' font-weight="bold"' if bold else ""
        spans = []
        for i, line in enumerate(lines):
            color = f' fill="{colors[i]}"' if colors and colors[i] != fill else ""
            spans.append(f'<tspan x="{x:.1f}" y="{y_top + size + i * lh:.1f}"{color}>{escape(line)}</tspan>')
        tip = f"<title>{escape(title)}</title>" if title else ""
        self.items.append(
            f'<text x="{x:.1f}" y="{y_top + size:.1f}" font-size="{size}" fill="{fill}"{weight} '
            f'xml:space="preserve">{tip}{"".join(spans)}</text>'
        )
        return y_top + len(lines) * lh

    def raw(self, s: str) -> None:
        self.items.append(s)


def trace_svg(finding: Finding) -> str:
    steps = list(finding.trace)
    roles: list[str] = []
    for s in steps:
        if s.role not in roles:
            roles.append(s.role)
    ncol = max(len(roles), 1)
    col_w = min(COL_MAX, (MAX_WIDTH - 2 * PAD - STEP_COL) / ncol)
    width = 2 * PAD + STEP_COL + col_w * ncol
    inner = width - 2 * PAD
    c = _Canvas()
    y: float = PAD
    title = (
        f"{finding.code} {finding.name or ''} — {os.path.basename(finding.location.filename)}:{finding.location.row}"
    )
    y = c.text(PAD, y, _wrap(title, inner, TITLE_FONT), TITLE_FONT, bold=True) + 4
    y = c.text(PAD, y, _wrap(finding.message, inner, FONT)) + 8
    legend = [
        ("wait passes", COLORS["wait"]),
        ("arrive / expect / load", COLORS["signal"]),
        ("blocks forever", COLORS["blocked"]),
        *([("wrong phase (the finding)", COLORS["fault"])] if any(s.fault for s in steps) else []),
        ("time runs downwards; one column per warp role", "#555555"),
    ]
    lx: float = PAD
    ly = y
    for label, color in legend:
        w = TEXT_DX - 8 + len(label) * char_width(FONT)
        if lx + w > width - PAD:
            lx, ly = PAD, ly + line_height(FONT) + 2
        if color != "#555555":
            c.raw(f'<circle cx="{lx + 6:.1f}" cy="{ly + line_height(FONT) / 2:.1f}" r="5" fill="{color}"/>')
            c.text(lx + 16, ly, [label])
            lx += w + 24
        else:
            c.text(lx, ly, [label], fill=color)
            lx += len(label) * char_width(FONT) + 24
    y = ly + line_height(FONT) + 12
    # role headers
    x0 = PAD + STEP_COL
    head_bottom = y
    for i, r in enumerate(roles):
        head_bottom = max(head_bottom, c.text(x0 + i * col_w + 4, y, _wrap(r, col_w - 24, FONT), bold=True))
    y = head_bottom + 6
    lanes_top = y
    rows = []
    for j, s in enumerate(steps):
        i = roles.index(s.role)
        k = _kind(s.text, s.blocked, s.fault)
        lines = _wrap(s.text, col_w - TEXT_DX - 8, FONT)
        colors = [COLORS[k] if k != "other" else "#000000"] * len(lines)
        if s.barrier is not None and s.phase is not None:
            extra = _wrap(f"{s.barrier} phase {s.phase}", col_w - TEXT_DX - 8, FONT)
            lines += extra
            colors += ["#555555"] * len(extra)
        rows.append((j, i, k, lines, colors, y))
        y += max(len(lines) * line_height(FONT), 18) + ROW_GAP
    bottom = y
    for i in range(len(roles)):
        lx = x0 + i * col_w + MARKER_DX
        c.raw(
            f'<line x1="{lx:.1f}" y1="{lanes_top:.1f}" x2="{lx:.1f}" y2="{bottom:.1f}" stroke="#cccccc" '
            f'stroke-width="2"/>'
        )
    for j, i, k, lines, colors, top in rows:
        mx, my = x0 + i * col_w + MARKER_DX, top + FONT * 0.6
        color = COLORS[k]
        c.text(PAD, top, [str(j + 1)], fill="#999999")
        if k == "fault":
            c.raw(
                f'<polygon points="{mx:.1f},{my - 8:.1f} {mx + 8:.1f},{my:.1f} {mx:.1f},{my + 8:.1f} '
                f'{mx - 8:.1f},{my:.1f}" fill="{color}" class="fault"/>'
            )
        elif k == "blocked":
            c.raw(f'<rect x="{mx - 7:.1f}" y="{my - 7:.1f}" width="14" height="14" fill="{color}"/>')
            c.raw(
                f'<line x1="{mx:.1f}" y1="{my + 7:.1f}" x2="{mx:.1f}" y2="{bottom:.1f}" stroke="{color}" '
                f'stroke-width="3" stroke-dasharray="6,4"/>'
            )
        else:
            c.raw(f'<circle cx="{mx:.1f}" cy="{my:.1f}" r="6" fill="{color}"/>')
        c.text(x0 + i * col_w + TEXT_DX, top, lines, fill=colors[0], colors=colors, title=steps[j].text)
    height = bottom + PAD
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans Mono, monospace" font-size="{FONT}">'
    )
    return (
        "\n".join([head, f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>', *c.items, "</svg>"]) + "\n"
    )


# ---------------------------------------------------------------- measuring (tests, and anyone curious)

_TEXT = re.compile(r'<text x="([\d.]+)" y="([\d.]+)" font-size="([\d.]+)"[^>]*>(.*?)</text>', re.S)
_TSPAN = re.compile(r'<tspan x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</tspan>', re.S)
_TITLE = re.compile(r"<title>.*?</title>", re.S)


def text_boxes(svg: str) -> list[tuple[float, float, float, float, str]]:
    """(left, top, right, bottom, text) of every text element, by the metrics the layout uses."""
    from html import unescape

    out = []
    for m in _TEXT.finditer(svg):
        size = float(m.group(3))
        body = _TITLE.sub("", m.group(4))
        spans = _TSPAN.findall(body)
        if not spans:
            continue
        xs = [float(x) for x, _, _ in spans]
        ys = [float(yy) for _, yy, _ in spans]
        texts = [unescape(t) for _, _, t in spans]
        left = min(xs)
        right = max(x + len(t) * char_width(size) for x, t in zip(xs, texts))
        top = min(ys) - size
        bottom = max(ys) - size + line_height(size)
        out.append((left, top, right, bottom, "\n".join(texts)))
    return out


def write_trace_svgs(findings: Iterable[Finding], directory: str) -> list[str]:
    """Write one SVG per finding that has a trace; returns the paths written (sorted)."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    counts: dict[str, int] = {}
    for f in sorted((f for f in findings if f.trace), key=lambda f: f.sort_key()):
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(f.location.filename))
        stem = f"{base}-{f.location.row}-{f.code}"
        counts[stem] = counts.get(stem, 0) + 1
        if counts[stem] > 1:
            stem += f"-{counts[stem]}"
        p = os.path.join(directory, stem + ".svg")
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(trace_svg(f))
        paths.append(p)
    return paths
