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
from dataclasses import dataclass, field
from pathlib import Path

from . import sanitizer as S
from .instrument import Record, parse_records

SYMPTOMS = ("hang", "nan", "stripes", "wrong")

# rule code -> (symptom -> (weight, why)); codes not listed fall back to their contract
_WHY: dict[str, dict[str, tuple[int, str]]] = {
    "TK301": {"hang": (5, "bytes expected per phase differ from the bytes delivered: the phase never "
                          "completes (too many expected) or completes early and drifts"),
              "stripes": (4, "a phase that completes before all bytes land lets consumers read a "
                             "half-written stage")},
    "TK302": {"hang": (5, "the barrier's arrival count is never reached (or overshoots into the next phase)"),
              "stripes": (3, "extra arrivals complete a phase early: a slot is refilled while in use"),
              "wrong": (8, "extra arrivals complete a phase early: a stage is released or refilled while "
                           "still read")},
    "TK303": {"hang": (4, "the wait observes a phase that never completes with that parity"),
              "stripes": (5, "the wait passes on an old phase: the stage is read before it is refilled"),
              "wrong": (5, "the wait passes on an old or fresh phase: a stage is read before it is filled")},
    "TK304": {"hang": (4, "the parity never advances: the wait blocks on a phase already passed"),
              "stripes": (5, "the parity never advances: later rounds read stale stages"),
              "wrong": (4, "the parity never advances: later rounds read stale stages")},
    "TK305": {"stripes": (5, "a load completes on another stage's barrier: stage reuse out of order"),
              "hang": (3, "a stage's barrier gets too few bytes")},
    "TK306": {"stripes": (5, "the staging tile is rewritten while the TMA store still reads it")},
    "TK307": {"hang": (4, "barriers used before every thread sees them initialised")},
    "TK403": {"hang": (6, "an issue-once op runs on several threads (or none): arrivals and bytes multiply "
                          "(the count/byte mismatches follow from this)"),
              "wrong": (3, "several threads issue the same store/copy")},
    "TK501": {"hang": (5, "a block/group barrier under a condition not all participants take"),
              "wrong": (8, "a barrier only part of the block reaches orders nothing for the rest (where the "
                           "hardware lets it pass, e.g. after warps exited)")},
    "TK502": {"hang": (5, "roles disagree on the trip count: one side waits for a phase never produced")},
    "TK503": {"hang": (5, "circular wait between roles")},
    "TK504": {"wrong": (3, "the CTA may exit while a bulk store still reads shared memory")},
    "TK101": {"nan": (5, "the tensor core / TMA reads the tile with another swizzle: scrambled or NaN values"),
              "wrong": (4, "the swizzles disagree: elements land in the wrong places")},
    "TK102": {"nan": (5, "misaligned tile base: the swizzle pattern is off by a phase"),
              "wrong": (4, "misaligned tile base")},
    "TK103": {"wrong": (4, "hand-written swizzle math differs from the tile layout"), "nan": (3, "")},
    "TK104": {"wrong": (4, "a reinterpreting view maps elements to other bytes"), "nan": (3, "")},
    "TK201": {"wrong": (5, "the accumulator is read before the asynchronous MMA completed")},
    "TK202": {"wrong": (4, "the accumulator shape disagrees with the MMA")},
    "TK206": {"wrong": (4, "a stage is released while an MMA still reads it"),
              "stripes": (4, "the refill overwrites operands of an in-flight MMA")},
    "TK401": {"wrong": (5, "a narrower barrier than the data flow needs (warp instead of warpgroup)")},
    "TK404": {"hang": (4, "two uses of one named barrier id with different counts"),
              "wrong": (4, "a named barrier id shared by groups that should sync separately")},
}

_CONTRACT: dict[str, dict[str, tuple[int, str]]] = {
    "completion": {"hang": (4, "a completion contract (arrivals, bytes, parity) is broken"),
                   "stripes": (4, "a completion contract is broken: stages are read at the wrong phase")},
    "deadlock": {"hang": (5, "a wait that can never be satisfied")},
    "scope": {"wrong": (4, "a scope contract is broken: an op runs on the wrong set of threads"),
              "hang": (3, "a scope contract is broken")},
    "layout": {"nan": (4, "a layout contract is broken"), "wrong": (4, "a layout contract is broken")},
    "accumulator": {"wrong": (5, "an accumulator contract is broken")},
}

_TOOLS = {"hang": ("the instrumented run's watchdog", "racecheck --racecheck-deadlock-timeout"),
          "nan": ("memcheck --check-bulk-copy yes", "the NaN-row check before TMA stores"),
          "stripes": ("stage poisoning (stale reads become NaN and are reported)", "racecheck"),
          "wrong": ("racecheck", "synccheck")}


@dataclass
class Ranked:
    finding: object
    score: float
    why: str
    contract: str
    evidence: list[str] = field(default_factory=list)
    confirm: str = ""

    def to_json(self) -> dict:
        f = self.finding
        return {"code": f.code, "name": f.name, "filename": f.location.filename, "row": f.location.row,
                "message": f.message, "contract": self.contract, "score": round(self.score, 2), "why": self.why,
                "evidence": self.evidence, "confirm": self.confirm, "verdict": f.verdict}


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
        raise EvidenceError(f"{path}: neither a compute-sanitizer XML file nor a log with TKCHECK_WATCHDOG / "
                            "TKCHECK_POISON / TKCHECK_NAN lines (run `tkcheck confirm` to get one)")
    return Observed(records=recs, source=p.name)


def _lines(f) -> set[tuple[str, int]]:
    locs = [f.location] + [r.location for r in f.related] + [s.location for s in f.trace if s.location]
    return {(Path(loc.filename).name, loc.row) for loc in locs}


def _names(f) -> set[str]:
    text = " ".join([f.message] + [r.message for r in f.related] + [s.text for s in f.trace])
    names = set(re.findall(r"'?([A-Za-z_][\w.]*)\s*\[", text)) | set(re.findall(r"'([A-Za-z_][\w.]*)'", text))
    return {n.split(".")[-1] for n in names}


def _match(f, obs: Observed) -> list[str]:
    out = []
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
    seen, uniq = set(), []
    for e in out:
        k = e.split(":")[0]
        if (k, e) not in seen and sum(1 for u in uniq if u.split(":")[0] == k) < 2:
            seen.add((k, e))
            uniq.append(e)
    return uniq


def rank(findings, symptom: str, observed: Observed | None = None, path: str = "") -> list[Ranked]:
    if symptom not in SYMPTOMS:
        raise ValueError(f"unknown symptom {symptom!r}: one of {', '.join(SYMPTOMS)}")
    from .. import registry
    rules = registry.by_code()
    out = []
    for f in findings:
        if f.code.startswith("TK0") or f.contract == "tool":
            continue
        rule = rules.get(f.code)
        syms = tuple(rule.symptoms) if rule else tuple(s for s in (f.symptom or "").split("/") if s)
        score, why = 0.0, ""
        if f.code in _WHY and symptom in _WHY[f.code]:
            score, why = _WHY[f.code][symptom]
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
        return (f"no finding explains '{symptom}' (tkcheck proves only what it can; try `tkcheck confirm` "
                "for a run with the watchdog and stage poisoning)\n")
    lines = [f"findings that explain '{symptom}', most likely first"
             + (f" (with evidence from {observed.source})" if observed and observed.source else "") + ":"]
    for i, r in enumerate(ranked, 1):
        f = r.finding
        lines.append(f"{i}. {f.location.filename}:{f.location.row}:{f.location.column}: {f.code} {f.name} "
                     f"[{r.contract} contract broken] score {r.score:g}")
        lines.append(f"   {f.message}")
        lines.append(f"   why: {r.why}")
        for e in r.evidence:
            lines.append(f"   observed: {e}")
        lines.append(f"   confirm: {r.confirm}")
    return "\n".join(lines) + "\n"
