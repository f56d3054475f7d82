"""`--trace-svg DIR`: each finding's trace drawn as lanes (one per role) on a time axis.

Every step is a marker in its role's lane at its position in the interleaving;
waits that pass are green, signals blue, a wait that blocks forever red, with
the barrier element and phase written next to it. Plain SVG, no dependencies,
deterministic output (same findings -> same bytes).
"""
from __future__ import annotations

import os
import re
from html import escape

LANE_H = 64
STEP_W = 150
LEFT = 230
TOP = 70


def _kind(text: str, blocked: bool) -> str:
    if blocked:
        return "blocked"
    if text.startswith("wait(") or "passes" in text:
        return "wait"
    if text.startswith(("arrive", "expect", "load")):
        return "signal"
    return "other"


COLORS = {"blocked": "#d62728", "wait": "#2ca02c", "signal": "#1f77b4", "other": "#7f7f7f"}


def trace_svg(finding) -> str:
    steps = list(finding.trace)
    roles: list[str] = []
    for s in steps:
        if s.role not in roles:
            roles.append(s.role)
    width = LEFT + STEP_W * max(len(steps), 1) + 40
    height = TOP + LANE_H * max(len(roles), 1) + 90
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="12" y="22" font-size="14" font-weight="bold">{escape(finding.code)} {escape(finding.name or "")}'
           f' — {escape(os.path.basename(finding.location.filename))}:{finding.location.row}</text>',
           f'<text x="12" y="42" font-size="11">{escape(_clip(finding.message, 180))}</text>']
    for i, r in enumerate(roles):
        y = TOP + i * LANE_H + LANE_H // 2
        out.append(f'<line x1="{LEFT - 10}" y1="{y}" x2="{width - 20}" y2="{y}" stroke="#cccccc" stroke-width="2"/>')
        out.append(f'<text x="12" y="{y + 4}" font-weight="bold">{escape(_clip(r, 30))}</text>')
    for j, s in enumerate(steps):
        x = LEFT + j * STEP_W + STEP_W // 2
        i = roles.index(s.role)
        y = TOP + i * LANE_H + LANE_H // 2
        k = _kind(s.text, s.blocked)
        c = COLORS[k]
        out.append(f'<text x="{x}" y="{TOP - 8}" text-anchor="middle" fill="#999999">{j + 1}</text>')
        if k == "blocked":
            out.append(f'<rect x="{x - 9}" y="{y - 9}" width="18" height="18" fill="{c}"/>')
            out.append(f'<line x1="{x + 9}" y1="{y}" x2="{width - 20}" y2="{y}" stroke="{c}" stroke-width="3" '
                       f'stroke-dasharray="6,4"/>')
        else:
            out.append(f'<circle cx="{x}" cy="{y}" r="7" fill="{c}"/>')
        label = _short(s.text)
        out.append(f'<text x="{x}" y="{y - 13}" text-anchor="middle" fill="{c}">{escape(label)}</text>')
        if s.barrier is not None and s.phase is not None:
            out.append(f'<text x="{x}" y="{y + 22}" text-anchor="middle" fill="#555555">'
                       f'{escape(s.barrier)} phase {s.phase}</text>')
        out.append(f'<title>{escape(s.text)}</title>')
    ly = TOP + LANE_H * max(len(roles), 1) + 30
    for n, (k, c) in enumerate((("wait passes", COLORS["wait"]), ("arrive / expect / load", COLORS["signal"]),
                                ("blocks forever", COLORS["blocked"]))):
        x = 12 + n * 200
        out.append(f'<circle cx="{x + 6}" cy="{ly}" r="6" fill="{c}"/><text x="{x + 18}" y="{ly + 4}">{k}</text>')
    out.append(f'<text x="12" y="{ly + 30}" fill="#555555">time runs left to right; one lane per warp role</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _short(text: str) -> str:
    t = re.sub(r"\s*\[.*?\]\s*$", "", text)
    t = t.split(":")[0]
    return _clip(t, 24)


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def write_trace_svgs(findings, directory: str) -> list[str]:
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
