"""Mechanical fixes: built by rules where the repair is one edit, shown as a diff in the full
output and as SARIF `fixes`, applied by `--fix` when marked safe.

Columns follow the findings' convention (clang's: 1-based, counted in bytes of
the UTF-8 line), so an edit and the finding it repairs point at the same text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable

from .findings import Edit, Finding, Fix, Location


def _line(filename: str, row: int) -> str | None:
    from .frontend.walk_env import _text_for

    src = _text_for(filename)
    if src is None:
        return None
    from .render._common import split_lines

    lines = split_lines(src.data.decode("utf-8", errors="replace"))
    return lines[row - 1] if 0 < row <= len(lines) else None


def launch_bounds_fix(kernel_location: Location, threads: int) -> Fix | None:
    """`__global__ void k(...)` -> `__global__ __launch_bounds__(N, 1) void k(...)` (safe: it only
    states the block size the kernel is launched with, which lets ptxas honour setmaxnreg).

    `kernel_location` is the start of the kernel's declaration; the `__global__` is looked for
    from there up to the parameter list."""
    for row in range(kernel_location.row, kernel_location.row + 6):
        line = _line(kernel_location.filename, row)
        if line is None:
            return None
        start = kernel_location.column - 1 if row == kernel_location.row else 0
        text = line.encode()[start:].decode("utf-8", errors="replace")
        m = re.search(r"\b__global__\b", text)
        head = text[: m.start()] if m else text
        if "__launch_bounds__" in head or "(" in head or "{" in head:
            return None  # already bounded, or past the declaration's name
        if m is not None:
            if "__launch_bounds__" in text:
                return None
            col = start + len(text[: m.end()].encode()) + 1
            return Fix(
                f"declare the block size at entry: `__launch_bounds__({threads}, 1)`",
                (Edit(Location(kernel_location.filename, row, col, row, col), f" __launch_bounds__({threads}, 1)"),),
                safe=True,
            )
    return None


def lane_guard_fix(call: Location, guard: str = "laneid() == 0") -> Fix | None:
    """`tma::expect(...);` -> `if (laneid() == 0) tma::expect(...);` for a statement that is one
    call on one line (a suggestion: whether one lane is meant is the author's call)."""
    line = _line(call.filename, call.row)
    if line is None:
        return None
    raw = line.encode()
    before = raw[: call.column - 1].decode("utf-8", errors="replace")
    after = raw[call.column - 1 :].decode("utf-8", errors="replace")
    if before.strip() and not re.search(r"[{};)]\s*$", before) and not re.search(r"\belse\s*$", before):
        return None  # part of a larger expression
    m = re.match(r"[A-Za-z_][\w:<>, ]*\s*\(", after)
    if m is None or ";" not in after:
        return None
    return Fix(
        f"issue it from one lane: `if ({guard}) ...`",
        (Edit(Location(call.filename, call.row, call.column, call.row, call.column), f"if ({guard}) "),),
        safe=False,
    )


# ---------------------------------------------------------------- showing and applying


def _apply_to_text(text: str, edits: Iterable[Edit]) -> str | None:
    """The text with the edits applied, or None when two edits overlap."""
    from .render._common import split_lines

    ends = re.findall(r"\r\n|\n|\r", text)
    lines = [l.encode() for l in split_lines(text)]
    spans = []
    for e in edits:
        loc = e.location
        end_row, end_col = loc.end_row or loc.row, loc.end_column or loc.column
        spans.append(((loc.row, loc.column), (end_row, end_col), e.text))
    spans.sort(reverse=True)
    last_start = None
    for start, end, new in spans:
        if last_start is not None and end > last_start:
            return None
        last_start = start
        (r0, c0), (r1, c1) = start, end
        if not (0 < r0 <= len(lines) and 0 < r1 <= len(lines)):
            return None
        head, tail = lines[r0 - 1][: c0 - 1], lines[r1 - 1][c1 - 1 :]
        lines[r0 - 1 : r1] = [head + new.encode() + tail]
        del ends[r0 - 1 : r1 - 1]  # the line ends inside the replaced span
    out = []
    for i, l in enumerate(lines):
        out.append(l.decode("utf-8", errors="replace"))
        if i < len(ends):
            out.append(ends[i])
    return "".join(out)


def diff(fix: Fix, sources: dict[str, str], shown_name: Callable[[str], str]) -> str:
    """A unified diff of the fix (for the full output)."""
    out: list[str] = []
    by_file: dict[str, list[Edit]] = {}
    for e in fix.edits:
        by_file.setdefault(e.location.filename, []).append(e)
    for name, edits in sorted(by_file.items()):
        text = sources.get(name)
        if text is None:
            return ""
        new = _apply_to_text(text, edits)
        if new is None:
            return ""
        shown = shown_name(name)
        out += difflib.unified_diff(
            text.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{shown}", f"b/{shown}", n=0
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def apply_safe_fixes(findings: list[Finding], sources: dict[str, str]) -> tuple[list[Finding], list[str]]:
    """Apply every safe fix to its file (in place). Returns (the findings fixed, the files changed).
    Files are rewritten only when all of a file's edits apply without overlapping."""
    by_file: dict[str, list[tuple[Finding, Fix]]] = {}
    for f in findings:
        for x in f.fixes:
            if x.safe and len({e.location.filename for e in x.edits}) == 1:
                by_file.setdefault(x.edits[0].location.filename, []).append((f, x))
                break
    fixed, changed = [], []
    for name, pairs in sorted(by_file.items()):
        from .safe_io import read_regular

        try:  # the bytes on disk (line ends as they are), not the text as it was analysed
            text = read_regular(name, 8_000_000).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if sources.get(name) is not None and text.replace("\r\n", "\n").replace("\r", "\n") != sources[name].replace(
            "\r\n", "\n"
        ):
            continue  # changed since it was checked
        edits = [e for _, x in pairs for e in x.edits]
        new = _apply_to_text(text, edits)
        if new is None or new == text:
            continue
        with open(name, "w", encoding="utf-8", newline="") as fh:
            fh.write(new)
        changed.append(name)
        fixed += [f for f, _ in pairs]
    return fixed, changed


__all__ = ["launch_bounds_fix", "lane_guard_fix", "diff", "apply_safe_fixes"]
