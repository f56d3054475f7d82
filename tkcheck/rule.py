"""The shape of a rule: metadata, documentation, examples, and a query over the model.

One file per rule lives in `rules/` (installed as `tkcheck.rules`); each defines
a module-level `RULE = Rule(...)`. The registry (`tkcheck.registry`) discovers
them. A rule's `check` receives an `Analysis` (the KernelModel of one kernel
plus the shared facts the contract checks computed) and yields Findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .findings import Finding

CONTRACTS = ("tool", "layout", "accumulator", "completion", "scope", "deadlock", "dispatch")
SEVERITIES = ("error", "warning", "note")
PRECISIONS = ("proved", "high", "medium")
SYMPTOMS = ("", "hang", "nan", "stripes", "wrong", "slow")
REQUIRED_DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "Use instead:")


@dataclass(frozen=True)
class Explains:
    """How a finding of the rule explains a symptom the user saw (`tkcheck triage`): its weight
    in the ranking and why (empty: the generic "the rule lists it among its symptoms")."""

    weight: int
    why: str = ""


# the two wgmma races `tkcheck confirm` tells apart when the binary may have removed them
WGMMA_ACCUMULATOR_READ = "accumulator-read"  # registers read before the MMA completed
WGMMA_OPERAND_RELEASE = "operand-release"  # an operand's stage released while the MMA reads it

# how a rule's findings take part in the single-issuer repair (Confirm.issuer_repair)
ISSUERS_OWN = "own"  # its issuer set is the defect: one repaired copy per issuer set
ISSUERS_JOIN = "join"  # rides along in the copy of a finding with the same issuers


@dataclass(frozen=True)
class Confirm:
    """What `tkcheck confirm` does for the rule's findings beyond the plain and probe runs.

    The names refer to tkcheck/confirm: `widen` to `widen.WIDENINGS` (edits that make the race
    likely in a copy of its own), `repairs` to `runner.REPAIRS` (a copy with the defect fixed,
    which passing where the plain run fails confirms the finding)."""

    widen: tuple[str, ...] = ()
    repairs: tuple[str, ...] = ()
    # the use-before-init probe: the copy holds back the first init and reports waits that start
    # meanwhile (ORDER records); all of the rule's findings share that one copy
    init_probe: bool = False
    wgmma_race: str = ""  # WGMMA_ACCUMULATOR_READ / WGMMA_OPERAND_RELEASE, or ""
    # False: no compute-sanitizer tool observes what the rule is about
    sanitizer: bool = True
    # (issuer set as the checks describe it, the line of the issuing statement) of a finding
    issuers: Callable[["Finding"], tuple[str, int] | None] | None = None
    issuer_repair: str = ""  # ISSUERS_OWN / ISSUERS_JOIN, or ""


@dataclass
class Rule:
    code: str
    name: str
    contract: str
    severity: str
    precision: str
    symptoms: tuple[str, ...]
    summary: str  # one line
    doc: str  # markdown, with REQUIRED_DOC_SECTIONS
    bad_example: str | None = None  # a whole .cu file that must fire exactly this rule
    good_example: str | None = None  # the fixed file: must be clean
    check: Callable[..., Iterable["Finding"]] | None = None
    # rules produced by a pass outside the per-kernel model (parser, suppression, SASS)
    engine_only: bool = False
    arch: tuple[str, ...] = ("sm_90a", "sm_100a")
    tags: tuple[str, ...] = field(default_factory=tuple)
    # symptom -> how a finding explains it (`tkcheck triage`); a symptom not listed falls back to
    # the contract's explanation
    explains: Mapping[str, Explains] = field(default_factory=dict)
    confirm: Confirm = field(default_factory=Confirm)

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
