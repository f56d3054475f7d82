"""`tkcheck triage`: start from what the user saw and rank the findings that explain it.

Symptoms: hang | nan | stripes | wrong. A finding's score comes from
* its rule's `symptoms` (first listed = the usual outcome),
* how the rule's contract explains the symptom (hang -> arrival/byte counts, parity, divergent
  barriers, circular waits; nan -> layouts and misalignment; stripes -> parity, phase, stage
  reuse; wrong -> accumulator and scope),
* evidence the user brings: a compute-sanitizer XML (`--xml --save`) or the log of a hung run
  (TKCHECK_WATCHDOG lines from `tkcheck confirm`'s instrumented copy), mapped back to findings by
  file:line, barrier name or kernel.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import Finding
from . import sanitizer as S
from .instrument import Record, parse_records

SYMPTOMS = ("hang", "nan", "stripes", "wrong")

# A rule's own explanations are on its Rule (`explains`: symptom -> weight, why); a symptom the
# rule does not explain falls back to its contract's.
_CONTRACT: dict[str, dict[str, tuple[int, str]]] = {
    "completion": {
        "hang": (4, "a completion contract (arrivals, bytes, parity) is broken"),
        "stripes": (4, "a completion contract is broken: stages are read at the wrong phase"),
    },
    "deadlock": {"hang": (5, "a wait that can never be satisfied")},
    "scope": {
        "wrong": (4, "a scope contract is broken: an op runs on the wrong set of threads"),
        "hang": (3, "a scope contract is broken"),
    },
    "layout": {"nan": (4, "a layout contract is broken"), "wrong": (4, "a layout contract is broken")},
    "accumulator": {"wrong": (5, "an accumulator contract is broken")},
}

_TOOLS = {
    "hang": ("the instrumented run's watchdog", "racecheck --racecheck-deadlock-timeout"),
    "nan": ("memcheck --check-bulk-copy yes", "the NaN-row check before TMA stores"),
    "stripes": ("stage poisoning (stale reads become NaN and are reported)", "racecheck"),
    "wrong": ("racecheck", "synccheck"),
}


@dataclass
class Ranked:
    finding: Finding
    score: float
    why: str
    contract: str
    evidence: list[str] = field(default_factory=list)
    confirm: str = ""

    def to_json(self) -> dict[str, Any]:
        f = self.finding
        return {
            "code": f.code,
            "name": f.name,
            "filename": f.location.filename,
            "row": f.location.row,
            "message": f.message,
            "contract": self.contract,
            "score": round(self.score, 2),
            "why": self.why,
            "evidence": self.evidence,
            "confirm": self.confirm,
            "verdict": f.verdict,
        }


class EvidenceError(ValueError):
    pass


@dataclass
class Observed:
    """What the user brought: records from a hung run's log or a sanitizer XML."""

    records: list[Record] = field(default_factory=list)
    sanitizer: list[S.SanitizerRecord] = field(default_factory=list)
    source: str = ""


def load_evidence(path: str) -> Observed:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise EvidenceError(f"{path}: cannot read: {e.strerror or e}") from None
    text = data.decode("utf-8", errors="replace")
    if "<ComputeSanitizerOutput" in text[:4096] or text.lstrip().startswith("<?xml"):
        try:
            return Observed(sanitizer=S.parse_xml(text), source=p.name)
        except S.SanitizerXMLError as e:
            raise EvidenceError(f"{path}: {e}") from None
    recs = parse_records(text)
    if not recs:
        raise EvidenceError(
            f"{path}: neither a compute-sanitizer XML file nor a log with TKCHECK_WATCHDOG / "
            "TKCHECK_POISON / TKCHECK_NAN lines (run `tkcheck confirm` to get one)"
        )
    return Observed(records=recs, source=p.name)


def _lines(f: Finding) -> set[tuple[str, int]]:
    locs = [f.location] + [r.location for r in f.related] + [s.location for s in f.trace if s.location]
    return {(Path(loc.filename).name, loc.row) for loc in locs}


def _names(f: Finding) -> set[str]:
    text = " ".join([f.message] + [r.message for r in f.related] + [s.text for s in f.trace])
    names = set(re.findall(r"'?([A-Za-z_][\w.]*)\s*\[", text)) | set(re.findall(r"'([A-Za-z_][\w.]*)'", text))
    return {n.split(".")[-1] for n in names}


def _match(f: Finding, obs: Observed) -> list[str]:
    out: list[str] = []
    lines, names = _lines(f), _names(f)
    for r in obs.records:
        if r.kind == "PHASE":
            continue
        bar = r.fields.get("barrier", "") or r.fields.get("buffer", "")
        base = re.split(r"[\[(]", bar)[0].split(".")[-1]
        if r.file and r.line and (Path(r.file).name, r.line) in lines:
            out.append(f"{r.kind.lower()} record at a site of this finding: {r.raw}")
        elif base and base in names:
            out.append(f"{r.kind.lower()} record on '{base}': {r.raw}")
    for s in obs.sanitizer:
        if not s.is_error or S.known_false_alarm(s):
            continue
        if s.file and s.line and (Path(s.file).name, s.line) in lines:
            out.append(f"compute-sanitizer at a site of this finding: {s.short()}")
        elif s.deadlock and f.contract in ("completion", "deadlock"):
            out.append(f"compute-sanitizer deadlock in {s.func or 'the kernel'}: {s.short()}")
        elif f.kernel and s.func and s.func == f.kernel and not s.deadlock:
            out.append(f"compute-sanitizer in kernel {f.kernel}: {s.short()}")
    # a deadlock record without a line names the kernel only: keep one per finding
    seen: set[tuple[str, str]] = set()
    uniq: list[str] = []
    for e in out:
        k = e.split(":")[0]
        if (k, e) not in seen and sum(1 for u in uniq if u.split(":")[0] == k) < 2:
            seen.add((k, e))
            uniq.append(e)
    return uniq


def rank(findings: Iterable[Finding], symptom: str, observed: Observed | None = None, path: str = "") -> list[Ranked]:
    if symptom not in SYMPTOMS:
        raise ValueError(f"unknown symptom {symptom!r}: one of {', '.join(SYMPTOMS)}")
    from .. import registry

    rules = registry.by_code()
    out: list[Ranked] = []
    for f in findings:
        rule = rules.get(f.code)
        if f.contract == "tool" or (rule is not None and rule.contract == "tool"):
            continue
        syms = tuple(rule.symptoms) if rule else tuple(s for s in (f.symptom or "").split("/") if s)
        score, why = 0.0, ""
        explains = rule.explains.get(symptom) if rule else None
        if explains is not None:
            score, why = explains.weight, explains.why
        elif f.contract in _CONTRACT and symptom in _CONTRACT[f.contract]:
            score, why = _CONTRACT[f.contract][symptom]
        if symptom in syms:
            score += 2 if syms and syms[0] == symptom else 1
        elif score:
            score -= 1
        ev = _match(f, observed) if observed else []
        score += 6 * min(len(ev), 1)
        if score <= 0:
            continue
        why = why or f"the rule lists '{symptom}' among its symptoms"
        tools = _TOOLS[symptom]
        confirm = f"tkcheck confirm {path or f.location.filename} --select {f.code}  (uses {tools[0]}; {tools[1]})"
        out.append(Ranked(f, score, why, f.contract or (rule.contract if rule else ""), ev, confirm))
    out.sort(key=lambda r: (-r.score, r.finding.location.row, r.finding.code))
    return out


def format_ranked(ranked: list[Ranked], symptom: str, observed: Observed | None = None) -> str:
    if not ranked:
        return (
            f"no finding explains '{symptom}' (tkcheck proves only what it can; try `tkcheck confirm` "
            "for a run with the watchdog and stage poisoning)\n"
        )
    lines = [
        f"findings that explain '{symptom}', most likely first"
        + (f" (with evidence from {observed.source})" if observed and observed.source else "")
        + ":"
    ]
    for i, r in enumerate(ranked, 1):
        f = r.finding
        lines.append(
            f"{i}. {f.location.filename}:{f.location.row}:{f.location.column}: {f.code} {f.name} "
            f"[{r.contract} contract broken] score {r.score:g}"
        )
        lines.append(f"   {f.message}")
        lines.append(f"   why: {r.why}")
        for e in r.evidence:
            lines.append(f"   observed: {e}")
        lines.append(f"   confirm: {r.confirm}")
    return "\n".join(lines) + "\n"
