"""Inline expectations in test kernels (like clang -verify, clang-tidy's CHECK-MESSAGES, mypy test data).

A fixture is a `.cu` file (under fixtures/); comments state what tkcheck must report:

    // tkcheck-test: select=TK301,TK302 arch=sm_90a tk-version=thread-scope
    tma::expect_bytes(bar, 4096);     // expect: TK301 "deliver 16384"
    tma::expect_bytes(bar, 4096);     // expect: TK301 {{deliver 16384}}   (the older spelling)
    // expect@+1: TK303
    wait(bar, toc);
    wait(bar, tic);                   // expect-not: TK303
    arrive(bar);                      // expect-todo: TK302   (a known miss)

An expectation pins its finding to one line: the comment's own line, or the line `@+N` / `@-N`
from it. After the codes may come message fragments, each `"..."` (`\\"` and `\\\\` inside) or
`{{...}}`; a finding matches when every fragment is part of its message. Several expectations
may share a line (`// expect: TK403 // expect: TK302 "32 arrive per phase"`).

`expect` lines must be reported on that row; any other finding is unexpected. `expect-todo`
records a known miss: it is counted, not failed. `expect-not` forbids the code there.
`update_expectations` rewrites the `expect:` comments from actual output, keeping the fragments
that still match.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import registry
from .engine import CheckOptions, FileResult, check_file
from .findings import Finding
from .frontend.parse import ParseOptions

_CODES = r"[A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*"
_FRAGMENT = r'\{\{.*?\}\}|"(?:[^"\\]|\\.)*"'
_EXPECT = re.compile(rf"//\s*(expect(?:-not|-todo)?)(@[+-]\d+)?:\s*({_CODES})((?:\s*(?:{_FRAGMENT}))*)")
_FRAGMENTS = re.compile(rf"{_FRAGMENT}")
_HEADER = re.compile(r"//\s*tkcheck-test:\s*(.*)")
# the comments update_expectations owns: plain `expect:` on the finding's own line
_OWN_EXPECT = re.compile(r"\s*//\s*expect(?!-not|-todo|@):.*$")


@dataclass
class Expectation:
    kind: str  # expect | expect-not | expect-todo
    code: str
    row: int
    texts: tuple[str, ...] = ()  # message fragments, all of which the finding's message contains

    def matches(self, f: Finding) -> bool:
        return f.code == self.code and f.location.row == self.row and all(t in f.message for t in self.texts)

    def spelled(self) -> str:
        """The code and fragments as an `expect:` comment writes them."""
        return self.code + "".join(f" {_quote(t)}" for t in self.texts)

    def describe(self) -> str:
        return f"{self.spelled()} at line {self.row}"


@dataclass
class FixtureResult:
    path: str
    expected: list[Expectation]
    actual: list[Finding] = field(default_factory=list)
    missing: list[Expectation] = field(default_factory=list)
    unexpected: list[Finding] = field(default_factory=list)
    forbidden: list[Finding] = field(default_factory=list)  # hit an expect-not
    todo_missing: list[Expectation] = field(default_factory=list)
    matched: list[Expectation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.forbidden)

    def near_misses(self, e: Expectation) -> list[Finding]:
        """Findings of the expectation's code on its line whose message lacks a fragment."""
        return [f for f in self.actual if f.code == e.code and f.location.row == e.row]


def _unquote(fragment: str) -> str:
    if fragment.startswith("{{"):
        return fragment[2:-2]
    return re.sub(r"\\(.)", r"\1", fragment[1:-1])


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_fixture(text: str) -> tuple[dict[str, str], list[Expectation]]:
    settings: dict[str, str] = {}
    exps: list[Expectation] = []
    for i, line in enumerate(text.splitlines(), start=1):
        h = _HEADER.search(line)
        if h:
            for part in h.group(1).split():
                if "=" in part:
                    k, v = part.split("=", 1)
                    settings[k.strip()] = v.strip()
        for m in _EXPECT.finditer(line):
            kind, offset, codes, fragments = m.group(1), m.group(2), m.group(3), m.group(4)
            row = i + (int(offset[1:]) if offset else 0)
            tx = tuple(_unquote(f) for f in _FRAGMENTS.findall(fragments or ""))
            for code in re.split(r"\s*,\s*", codes):
                exps.append(Expectation(kind, code, row, tx))
    return settings, exps


def options_for(settings: dict[str, str]) -> CheckOptions:
    codes = {r.code for r in registry.all_rules()}
    if "select" in settings:
        sel: set[str] = set()
        for s in settings["select"].split(","):
            sel |= registry.expand(s)
        codes = sel
    parse = ParseOptions(arch=settings.get("arch", "sm_90a"), tk_version=settings.get("tk-version", "auto"))
    return CheckOptions(parse=parse, enabled=frozenset(codes))


def run_fixture(path: str | Path, check: Callable[[str, CheckOptions, str], FileResult] | None = None) -> FixtureResult:
    """The fixture checked with its settings and held to its expectations. `check(path, options,
    text)` makes the check (`check_file` when None; the tests pass their session-wide memo)."""
    path = str(path)
    text = Path(path).read_text(errors="replace")
    settings, exps = parse_fixture(text)
    res = (check or _check)(path, options_for(settings), text)
    out = FixtureResult(path, exps, list(res.findings), notes=list(res.notes))
    used: set[int] = set()
    for e in exps:
        hits = [j for j, f in enumerate(res.findings) if e.matches(f)]
        if e.kind == "expect":
            if hits:
                used.update(hits)
                out.matched.append(e)
            else:
                out.missing.append(e)
        elif e.kind == "expect-todo":
            if hits:
                used.update(hits)
                out.matched.append(e)
            else:
                out.todo_missing.append(e)
        else:  # expect-not
            for j in hits:
                out.forbidden.append(res.findings[j])
                used.add(j)
    for j, f in enumerate(res.findings):
        if j not in used:
            out.unexpected.append(f)
    return out


def _check(path: str, opts: CheckOptions, text: str) -> FileResult:
    return check_file(path, opts, text=text)


def table(results: list[FixtureResult]) -> str:
    """Per-rule TP / FP / FN (and known misses)."""
    stats: dict[str, list[int]] = {}
    for r in results:
        for e in r.matched:
            stats.setdefault(e.code, [0, 0, 0, 0])[0] += 1
        for f in r.unexpected + r.forbidden:
            stats.setdefault(f.code, [0, 0, 0, 0])[1] += 1
        for e in r.missing:
            stats.setdefault(e.code, [0, 0, 0, 0])[2] += 1
        for e in r.todo_missing:
            stats.setdefault(e.code, [0, 0, 0, 0])[3] += 1
    lines = [f"{'rule':7} {'TP':>4} {'FP':>4} {'FN':>4} {'todo':>5}"]
    for code in sorted(stats):
        tp, fp, fn, todo = stats[code]
        lines.append(f"{code:7} {tp:>4} {fp:>4} {fn:>4} {todo:>5}")
    return "\n".join(lines)


def _expect_comment(row: int, findings: list[Finding], old: list[Expectation]) -> str:
    """`// expect:` for one line: the codes found there, each with the old fragments it still matches."""
    parts = []
    for code in sorted({f.code for f in findings}):
        kept = [
            e
            for e in old
            if e.kind == "expect"
            and e.code == code
            and e.row == row
            and e.texts
            and any(e.matches(f) for f in findings)
        ]
        parts += [f"// expect: {e.spelled()}" for e in kept] or [f"// expect: {code}"]
    return " ".join(parts)


def update_expectations(path: str | Path) -> bool:
    """Rewrite trailing `// expect:` comments from actual findings. Returns True if changed."""
    path = Path(path)
    text = path.read_text()
    settings, old = parse_fixture(text)
    res = check_file(str(path), options_for(settings), text=text)
    by_row: dict[int, list[Finding]] = {}
    for f in res.findings:
        by_row.setdefault(f.location.row, []).append(f)
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        base = _OWN_EXPECT.sub("", line)
        if i in by_row:
            base = f"{base}  {_expect_comment(i, by_row[i], old)}"
        out.append(base)
    new = "\n".join(out) + ("\n" if text.endswith("\n") else "")
    if new != text:
        path.write_text(new)
        return True
    return False
