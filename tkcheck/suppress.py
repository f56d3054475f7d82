"""Inline suppressions: `// tkcheck: ignore[CODE]` and friends.

    x = f();  // tkcheck: ignore[CODE]           this line
    // tkcheck: ignore[CODE,CODE2] // reason     the next code line
    // tkcheck: disable[PREFIX] ... // tkcheck: enable[PREFIX]   the lines between
    // tkcheck: file-ignore[CODE]                the whole file

Selectors are codes, prefixes or rule names, as on the command line. A
suppression must name what it suppresses: a bare `ignore` (or `ALL`) would also
hide every future finding on the line, so it is rejected with a parse-error
problem, as are unknown directives and malformed lists. A suppression that
suppressed nothing is reported as unused-suppression, but only for selectors
whose rules actually ran: an `ignore[CODE]` is not "unused" in a run that did
not check CODE.

Directives live in `//` comments and in `/* */` comments (`/* tkcheck:
ignore[CODE] */`), at the start of the comment or of a `//`-separated part of
it (`// note // tkcheck: ignore[CODE]`); a `tkcheck:` inside a string literal
is text. Anything in a comment that looks like a directive (`tkcheck
ignore[...]`, `tkcheck: ignore(...)`, a directive in the middle of a sentence)
but does not parse as one is a parse-error problem: it never silently
suppresses nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .findings import Finding, Location
from .rules import EXAMPLE_CODE, PARSE_ERROR, UNUSED_SUPPRESSION

KINDS = ("ignore", "disable", "enable", "file-ignore")
TOOL_CONTRACT = "tool"
_EOF = 1 << 30  # "to the end of the file" for ranges

_LINE_END = re.compile(r"\r\n|\n|\r")  # clang's line ends, so rows agree with findings
# String and char literals (an unterminated one runs to the end of the line), comments.
_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"?|\'(?:\\.|[^\'\\])*\'?|//|/\*')
_DIRECTIVE = re.compile(
    r"^\s*tkcheck\s*:\s*(?P<kind>[A-Za-z_-]*)\s*(?:\[(?P<codes>[^\]]*)\])?\s*(?P<rest>.*?)\s*$", re.I | re.S
)
_SELECTOR = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass
class Entry:
    """One selector of one directive, with the rows it covers."""

    selector: str
    first: int
    last: int
    used: bool = False


@dataclass
class Directive:
    kind: str
    location: Location  # the comment
    entries: list[Entry]
    reason: str | None = None
    target: int | None = None  # ignore: the row it applies to


@dataclass
class Suppressions:
    filename: str
    directives: list[Directive] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)  # parse errors: malformed directives


# ---------------------------------------------------------------- reading


def _scan_line(line: str, in_block: bool) -> tuple[bool, list[tuple[int, str, str]], bool]:
    """(has code, the comments on the line as (column index, kind `//` or `/*`, text), still inside
    /* */ after the line). A block comment spanning lines gives its part on each line."""
    pos, has_code, n = 0, False, len(line)
    comments: list[tuple[int, str, str]] = []
    while pos < n:
        if in_block:
            end = line.find("*/", pos)
            if end < 0:
                comments.append((pos, "/*", line[pos:]))
                return has_code, comments, True
            comments.append((pos, "/*", line[pos:end]))
            pos, in_block = end + 2, False
            continue
        m = _TOKEN.search(line, pos)
        stop = m.start() if m else n
        if line[pos:stop].strip():
            has_code = True
        if m is None:
            break
        token = m.group()
        if token == "//":
            comments.append((m.start(), "//", line[m.end() :]))
            return has_code, comments, False
        if token == "/*":
            in_block, pos = True, m.end()
            # the text of the comment starts after `/*`; its column is the `/*`
            end = line.find("*/", pos)
            comments.append((m.start(), "/*", line[pos:end] if end >= 0 else line[pos:]))
            if end < 0:
                return has_code, comments, True
            pos, in_block = end + 2, False
            continue
        has_code = True
        if token[0] == "'" and m.start() > 0 and line[m.start() - 1].isalnum():
            pos = m.start() + 1  # a digit separator (1'000) or a u8'' prefix: not a literal start
        else:
            pos = m.end()
    return has_code, comments, in_block


# `tkcheck` near a directive word, or `tkcheck:` followed by something like one: meant as a
# directive; when it does not parse as one it is a parse error, not silently nothing
_LOOKALIKE = re.compile(
    r"\btkcheck\b\s*[:=]?\s*(?:ignore|disable|enable|file-ignore|noqa|suppress)\b"
    r"|\btkcheck\s*:\s*(?:[A-Za-z_-]+\s*)?\[",
    re.I,
)


def _segments(kind: str, text: str) -> list[tuple[int, str]]:
    """(offset in `text`, segment) of a comment's `//`-separated parts: `// note // tkcheck: ...`
    holds a directive in its second part; in a block comment a leading `*` is decoration."""
    out, start = [], 0
    for part in text.split("//"):
        out.append((start, part))
        start += len(part) + 2
    return out


def _problem(filename: str, row: int, col: int, end_col: int, message: str) -> Finding:
    return Finding(
        code=PARSE_ERROR.code,
        message=message,
        location=Location(filename, row, col, row, end_col),
        contract=TOOL_CONTRACT,
        severity="error",
        help=f"write `// tkcheck: ignore[{EXAMPLE_CODE}]`, optionally followed by `// reason`",
    )


def _parse_selectors(codes: str | None) -> tuple[list[str], str | None]:
    """The selectors in `[...]`, or an error text."""
    if codes is None or not codes.strip():
        return [], "needs the codes it suppresses"
    selectors = [c.strip() for c in codes.split(",") if c.strip()]
    bad = [s for s in selectors if not _SELECTOR.match(s)]
    if bad:
        return [], f"has a malformed rule selector '{bad[0]}'"
    if any(s.upper() == "ALL" for s in selectors):
        return [], "may not use ALL: name the codes it suppresses"
    return selectors, None


def parse_suppressions(filename: str, text: str) -> Suppressions:
    """Every `// tkcheck:` directive of one file, with the rows each one covers."""
    result = Suppressions(filename)
    if "tkcheck" not in text.lower():  # the common case: no lexing at all
        return result
    lines = _LINE_END.split(text)
    scanned = []
    in_block = False
    for line in lines:
        has_code, comments, in_block = _scan_line(line, in_block)
        scanned.append((has_code, comments))

    def next_code_row(row: int) -> int | None:
        for r in range(row + 1, len(lines) + 1):
            has_code, _ = scanned[r - 1]
            # `#pragma unroll` annotates the next statement, as the comment does.
            if has_code and not lines[r - 1].lstrip().startswith("#pragma"):
                return r
        return None

    open_ranges: dict[str, list[Entry]] = {}  # disable selector (upper) -> open entries
    found = []  # (row, col, end_col, has_code, match, following segments)
    for row, (line, (has_code, comments)) in enumerate(zip(lines, scanned), 1):
        for col0, kind, ctext in comments:
            segs = _segments(kind, ctext)
            for i, (off, seg) in enumerate(segs):
                body = seg.lstrip(" \t").lstrip("/!*" if kind == "/*" else "/!")
                m = _DIRECTIVE.match(body)
                end_col = len(line.rstrip()) + 1
                if m is None:
                    if _LOOKALIKE.search(seg):
                        result.problems.append(
                            _problem(
                                filename,
                                row,
                                col0 + 1,
                                end_col,
                                "this looks like a tkcheck directive but is not one: write "
                                f"`// tkcheck: ignore[{EXAMPLE_CODE}]` at the start of a comment (or after `//`)",
                            )
                        )
                    continue
                reason_parts = [p.strip() for _, p in segs[i + 1 :] if p.strip()]
                found.append((row, col0 + 1, end_col, has_code, m, reason_parts, kind))
                break
    for row, col, end_col, has_code, m, reason_parts, ckind in found:
        loc = Location(filename, row, col, row, end_col)
        kind = m.group("kind").lower()
        if kind not in KINDS:
            result.problems.append(
                _problem(
                    filename,
                    row,
                    col,
                    end_col,
                    f"unknown tkcheck directive '{m.group('kind')}': expected one of {', '.join(KINDS)}",
                )
            )
            continue
        rest = m.group("rest").strip()
        if rest:
            result.problems.append(
                _problem(
                    filename,
                    row,
                    col,
                    end_col,
                    f"unexpected text after `tkcheck: {kind}[...]`: put a reason after a second `//`",
                )
            )
            continue
        reason = " // ".join(reason_parts) or None
        selectors, error = _parse_selectors(m.group("codes"))
        if error:
            result.problems.append(
                _problem(
                    filename, row, col, end_col, f"`tkcheck: {kind}` {error}, e.g. `// tkcheck: {kind}[{EXAMPLE_CODE}]`"
                )
            )
            continue

        if kind == "enable":
            for s in selectors:
                stack = open_ranges.get(s.upper())
                if not stack:
                    result.problems.append(
                        _problem(
                            filename,
                            row,
                            col,
                            end_col,
                            f"`tkcheck: enable[{s}]` has no open `tkcheck: disable[{s}]` before it",
                        )
                    )
                    continue
                stack.pop().last = row
            continue
        if kind == "ignore":
            target = row if has_code else next_code_row(row)
            first = last = target if target is not None else 0
            directive = Directive(kind, loc, [Entry(s, first, last) for s in selectors], reason, target)
        elif kind == "disable":
            directive = Directive(kind, loc, [Entry(s, row, _EOF) for s in selectors], reason)
            for entry in directive.entries:
                open_ranges.setdefault(entry.selector.upper(), []).append(entry)
        else:  # file-ignore
            directive = Directive(kind, loc, [Entry(s, 1, _EOF) for s in selectors], reason)
        result.directives.append(directive)
    result.problems.sort(key=lambda p: (p.location.row, p.location.column))
    return result


# ---------------------------------------------------------------- applying


class _Matcher:
    """Does a selector cover a code? By the resolver when given, else by prefix or name."""

    def __init__(self, resolver: Callable[[str], set[str]] | None):
        self.resolver = resolver
        self.cache: dict[str, set[str] | None] = {}

    def codes(self, selector: str) -> set[str] | None:
        """The codes of `selector`; None without a resolver; empty when unknown."""
        if self.resolver is None:
            return None
        if selector not in self.cache:
            try:
                self.cache[selector] = set(self.resolver(selector))
            except (KeyError, LookupError, ValueError):
                self.cache[selector] = set()
        return self.cache[selector]

    def covers(self, selector: str, code: str, name: str = "") -> bool:
        codes = self.codes(selector)
        if codes is not None:
            return code in codes
        return code.upper().startswith(selector.upper()) or (bool(name) and name == selector)

    def live(self, selector: str, enabled_codes: set[str]) -> bool:
        """Did any rule this selector names run? Only then can it be called unused."""
        return any(self.covers(selector, code) for code in enabled_codes)


def _covering(sup: Suppressions, f: Finding, matcher: _Matcher) -> list[Entry]:
    row = f.location.row
    return [
        entry
        for d in sup.directives
        for entry in d.entries
        if entry.first <= row <= entry.last and matcher.covers(entry.selector, f.code, f.name)
    ]


def _unused_message(d: Directive, unused: list[str]) -> str:
    codes = ", ".join(unused)
    if d.kind == "ignore":
        where = f"on line {d.target}" if d.target else "after it (nothing follows the comment)"
        return f"unused suppression: no {codes} finding {where}"
    if d.kind == "disable":
        last = max(e.last for e in d.entries)
        span = "to the end of the file" if last >= _EOF else f"up to line {last}"
        return f"unused suppression: no {codes} finding from line {d.location.row} {span}"
    return f"unused suppression: no {codes} finding in this file"


def apply_suppressions(
    findings: Iterable[Finding],
    by_file: dict[str, Suppressions],
    enabled_codes: set[str],
    *,
    resolver: Callable[[str], set[str]] | None = None,
) -> tuple[list[Finding], list[Finding]]:
    """(findings kept, new findings): the new ones are the parse-error problems of the
    directives and unused-suppression findings, each only when its code is enabled.

    `resolver` maps a selector to codes (the CLI passes `registry.expand`);
    without it selectors match by code prefix or by the finding's rule name.
    """
    matcher = _Matcher(resolver)
    for sup in by_file.values():  # a second call on the same Suppressions starts afresh
        for d in sup.directives:
            for entry in d.entries:
                entry.used = False
    kept: list[Finding] = []
    for f in findings:
        file_sup = by_file.get(f.location.filename)
        entries = _covering(file_sup, f, matcher) if file_sup is not None else []
        for entry in entries:
            entry.used = True
        if not entries:
            kept.append(f)

    new: list[Finding] = []
    for filename in sorted(by_file):
        sup = by_file[filename]
        if PARSE_ERROR.code in enabled_codes:
            new += sup.problems
        if resolver is not None:
            new += _unknown_selectors(sup, matcher, PARSE_ERROR.code in enabled_codes)
        if UNUSED_SUPPRESSION.code not in enabled_codes:
            continue
        unused_findings = []
        for d in sup.directives:
            unused = [
                e.selector
                for e in d.entries
                if not e.used
                and matcher.live(e.selector, enabled_codes)
                # an ignore of unused-suppression only guards against this very report; never "unused".
                and not matcher.covers(e.selector, UNUSED_SUPPRESSION.code, "")
            ]
            if unused:
                unused_findings.append(
                    Finding(
                        code=UNUSED_SUPPRESSION.code,
                        message=_unused_message(d, unused),
                        location=d.location,
                        contract=TOOL_CONTRACT,
                        severity="warning",
                        help="remove the stale codes (or the whole comment): what it suppressed is gone",
                    )
                )
        # An unused-suppression finding can itself be suppressed (a file-ignore of its code).
        new += [f for f in unused_findings if not _covering(sup, f, matcher)]
    new.sort(key=Finding.sort_key)
    return kept, new


def _unknown_selectors(sup: Suppressions, matcher: _Matcher, report: bool) -> list[Finding]:
    if not report:
        return []
    out = []
    for d in sup.directives:
        for e in d.entries:
            if not matcher.codes(e.selector):
                loc = d.location
                out.append(
                    _problem(
                        sup.filename,
                        loc.row,
                        loc.column,
                        loc.end_column or loc.column + 1,
                        f"unknown rule selector '{e.selector}' in `tkcheck: {d.kind}`",
                    )
                )
    return out


__all__ = ["Suppressions", "Directive", "Entry", "parse_suppressions", "apply_suppressions"]
