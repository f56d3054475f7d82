"""Findings: what a check proved, where, and the evidence (witness or trace).

Everything here is plain data so that renderers, suppression and caches can
work on findings without knowing anything about the model that produced them.
Rows and columns are 1-based everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field, asdict
from typing import Any


@dataclass(frozen=True, order=True)
class Location:
    filename: str
    row: int
    column: int
    end_row: int | None = None
    end_column: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "column": self.column}

    def end_json(self) -> dict[str, Any]:
        return {"row": self.end_row or self.row, "column": self.end_column or self.column}


@dataclass(frozen=True)
class Related:
    """A related site (the init, the loads, the wait) with a short note."""

    location: Location
    message: str


@dataclass(frozen=True)
class TraceStep:
    """One step of a counterexample trace (a deadlock or a stale read)."""

    role: str  # "producer", "consumer wg 1", ...
    text: str  # human text: "wait(full[1], 0) blocks forever"
    location: Location | None = None
    barrier: str | None = None
    phase: int | None = None
    blocked: bool = False
    # the step the finding is about, where it does not block: a wait that passes at the wrong
    # phase (the parity and phase-advance contracts); drawn as the failing step (red), not as a wait that passes
    fault: bool = False


@dataclass(frozen=True)
class Edit:
    """Replace the text from `location` (row, column) up to (end_row, end_column), exclusive, by
    `text`; an empty span is an insertion."""

    location: Location
    text: str


@dataclass(frozen=True)
class Fix:
    """A mechanical fix. `safe`: it keeps the kernel's meaning apart from the defect (`--fix`
    applies only these); the others are suggestions shown with the finding."""

    description: str
    edits: tuple[Edit, ...]
    safe: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "safe": self.safe,
            "edits": [
                {
                    "filename": e.location.filename,
                    "location": e.location.to_json(),
                    "end_location": e.location.end_json(),
                    "text": e.text,
                }
                for e in self.edits
            ],
        }


@dataclass
class Finding:
    code: str
    message: str
    location: Location
    related: list[Related] = field(default_factory=list)
    witness: dict[str, Any] | None = None  # counterexample values (iteration, stage, row, col...)
    trace: list[TraceStep] = field(default_factory=list)
    help: str | None = None
    kernel: str | None = None
    # the instantiations of a template kernel this finding stands for (one finding naming them all)
    instances: list[str] = field(default_factory=list)
    # filled by the engine from the rule catalog
    name: str = ""
    contract: str = ""
    severity: str = "error"
    symptom: str = ""
    # filled by `tkcheck confirm`
    verdict: dict[str, Any] | None = None
    fixes: list[Fix] = field(default_factory=list)
    # filled by the command line: identity that survives line shifts (baseline, SARIF)
    fingerprint: str | None = None

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.location.filename, self.location.row, self.location.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "contract": self.contract,
            "severity": self.severity,
            "symptom": self.symptom,
            "message": self.message,
            "filename": self.location.filename,
            "location": self.location.to_json(),
            "end_location": self.location.end_json(),
            "kernel": self.kernel,
            "related": [
                {"filename": r.location.filename, "location": r.location.to_json(), "message": r.message}
                for r in self.related
            ],
            "witness": self.witness,
            "trace": [
                {k: v for k, v in asdict(s).items() if k != "location" and (k != "fault" or v)}
                | ({"filename": s.location.filename, "location": s.location.to_json()} if s.location else {})
                for s in self.trace
            ],
            "help": self.help,
            "verdict": self.verdict,
            "fixes": [x.to_json() for x in self.fixes],
            "fingerprint": self.fingerprint,
            "url": f"docs/rules.md#{self.code.lower()}",
        }
