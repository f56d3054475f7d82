"""The shape of a rule: metadata, documentation, examples, and a query over the model.

One file per rule lives in `rules/` (installed as `tkcheck.rules`); each defines
a module-level `RULE = Rule(...)`. The registry (`tkcheck.registry`) discovers
them. A rule's `check` receives an `Analysis` (the KernelModel of one kernel
plus the shared facts the contract checks computed) and yields Findings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .findings import Finding

CONTRACTS = ("tool", "layout", "accumulator", "completion", "scope", "deadlock", "dispatch")
SEVERITIES = ("error", "warning", "note")
PRECISIONS = ("proved", "high", "medium")
SYMPTOMS = ("", "hang", "nan", "stripes", "wrong", "slow")
REQUIRED_DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "Use instead:")


@dataclass
class Rule:
    code: str
    name: str
    contract: str
    severity: str
    precision: str
    symptoms: tuple[str, ...]
    summary: str                      # one line
    doc: str                          # markdown, with REQUIRED_DOC_SECTIONS
    bad_example: str | None = None    # a whole .cu file that must fire exactly this rule
    good_example: str | None = None   # the fixed file: must be clean
    check: Callable[..., Iterable["Finding"]] | None = None
    # rules produced by a pass outside the per-kernel model (parser, suppression, SASS)
    engine_only: bool = False
    arch: tuple[str, ...] = ("sm_90a", "sm_100a")
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def symptom(self) -> str:
        return "/".join(s for s in self.symptoms if s)

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "contract": self.contract,
            "severity": self.severity,
            "precision": self.precision,
            "symptom": self.symptom,
            "summary": self.summary,
            "doc": self.doc,
            "bad_example": self.bad_example,
            "good_example": self.good_example,
        }
