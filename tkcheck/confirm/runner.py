"""Build and run a kernel and its instrumented copies, then label each finding (`Finding.verdict`).

Verdicts (a dict):
  {"status": "CONFIRMED", "evidence": [...], "ran": [...], "other": [...], "device": "..."}
  {"status": "NOT REPRODUCED", "ran": [...], "why": "...", "other": [...]}
  {"status": "UNCONFIRMABLE HERE", "reason": "..."}

What is built and run (every build and run in its own session with a timeout that ends the
whole session, confirm/procs.py; the user's files are never written):

* the plain copy, built with `-lineinfo`: run once, then under the compute-sanitizer tools that fit
  the findings; its SASS is read (confirm/sassmap.py) to put sanitizer records on the user's lines
  and to see whether the binary waits for a wgmma before a release;
* the probe copy (confirm/instrument.py): a watchdog on every wait and block/named barrier, stage
  poisoning with checks after each consumer wait, NaN rows at each store, a phase log;
* one widened copy per race finding (confirm/widen.py: a delay or a poison at that finding's
  sites), run up to WIDENED_TRIES times; the findings of the use-before-init probe share one (its
  probe reports per use site);
* when the plain run fails: one repaired copy per layout finding whose site reads a tile through a
  `reinterpret_cast` view (the view removed: the tile read with its own layout).

Evidence is tied to a finding: a record confirms it only at its site (its lines, or the barrier or
buffer it names) and only when the record's kind fits the finding (a watchdog a hang, a poisoned
read or NaN rows a stale read, an order record a use before init); a sanitizer record only on its
lines (the first frame in the user's file, from the SASS) and of a fitting tool and kind; a widened copy's
failure only the finding it was widened for, and only when the plain run passed (a widening that
makes a failing plain run pass is discarded); a repaired copy that passes where the plain run
failed confirms the finding it repaired. A failure of the plain run alone confirms nothing: it is
shown with the evidence that ties it to the finding. Everything else is listed as "other".

Single-file programs (a `main` in the file or in a header it includes) are built with nvcc; others
use `[tool.tkcheck.confirm]` build/run commands, run in the copy's folder with `{src}` (the copy),
`{bin}` and `{dir}` substituted.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import outcome as O
from . import sanitizer as S
from .instrument import (
    TEMPLATE_FIRST_ID,
    Plan,
    Record,
    Site,
    _code_mask,
    instrument,
    instrument_template_dir,
    parse_records,
    uses_template,
)
from .procs import run_clean
from .widen import rule_confirm
from ..rule import ISSUERS_JOIN, ISSUERS_OWN, WGMMA_OPERAND_RELEASE
from ..findings import Finding
from ..rules import PARSE_ERROR

if TYPE_CHECKING:
    from ..config import ConfirmConfig
    from ..evaluate import Mutation
    from ..sass.parse import RawFunction
    from .device import DeviceInfo
    from .widen import Widening

CONFIRMED = "CONFIRMED"
NOT_REPRODUCED = "NOT REPRODUCED"
UNCONFIRMABLE = "UNCONFIRMABLE HERE"

NVCC_FLAGS = [
    "-std=c++20",
    "-O3",
    "--use_fast_math",
    "--expt-relaxed-constexpr",
    "--expt-extended-lambda",
    "-lineinfo",
    "-DKITTENS_HOPPER",
    "-gencode",
    "arch=compute_90a,code=sm_90a",
]
BUILD_TIMEOUT_S = 600
RUN_TIMEOUT_S = 20.0
SANITIZER_TIMEOUT_S = 60.0
WIDENED_TRIES = 3


class ConfirmError(Exception):
    """A problem with the input or the setup (reported with exit 2)."""


@dataclass
class Run:
    what: str  # "plain", "instrumented", "racecheck", ...
    argv: str
    rc: int | None
    log: str = ""
    seconds: float | None = None
    killed: bool = False  # ended at its timeout
    left_behind: int = 0  # processes of its session still alive after it (killed)
    shell: bool = False

    @property
    def timed_out(self) -> bool:
        return self.killed or self.rc in (124, 137)

    def outcome(self, patterns: O.Patterns | None = None) -> O.Outcome:
        return O.classify(self.rc, self.log, self.timed_out, patterns, shell=self.shell or self.rc in (124, 137))

    def describe(self, patterns: O.Patterns | None = None) -> str:
        return f"{self.what}: {self.outcome(patterns).text()}"


@dataclass
class Copy:
    """An instrumented build made for some findings (a widening, a repair) and its runs."""

    name: str  # "widened copy for <code> at gemm_ring.cu:113"
    kind: str  # "widen" | "repair"
    findings: tuple[str, ...]  # keys (finding_key) of the findings its edits are for
    edits: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    build_error: str | None = None

    @property
    def run(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "findings": list(self.findings),
            "edits": self.edits,
            "build_error": self.build_error,
            "runs": [
                {"what": r.what, "rc": r.rc, "log": r.log, "killed": r.killed, "seconds": r.seconds} for r in self.runs
            ],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Copy":
        c = cls(
            d["name"],
            d["kind"],
            tuple(d.get("findings", ())),
            list(d.get("edits", ())),
            build_error=d.get("build_error"),
        )
        c.runs = [
            Run(r.get("what", c.name), "bin", r.get("rc"), r.get("log", ""), r.get("seconds"), bool(r.get("killed")))
            for r in d.get("runs", ())
        ]
        c.records = parse_records(c.runs[-1].log) if c.runs else []
        return c


@dataclass
class Evidence:
    plain: Run | None = None
    instrumented: Run | None = None  # the probe copy's run
    records: list[Record] = field(default_factory=list)  # ... and its records
    sites: list[Site] | None = None  # the probe copy's sites (None: not known, a recorded run)
    tools: list[S.ToolRun] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    arch: str | None = None  # the GPU's, e.g. "sm_90"
    unconfirmable: str | None = None  # why nothing could be run
    widening: list[str] = field(default_factory=list)  # widening carried by the probe copy (recorded batches)
    build_log: str = ""  # the plain copy's build output (ptxas notes)
    sass: str | None = None  # the plain binary's nvdisasm -gi text
    # compute-sanitizer records (tool, kind, text) that the clean kernel's own run shows too: not
    # evidence (racecheck reports 5 race records on the correct MK interpreter)
    baseline: set | None = None
    patterns: O.Patterns = field(default_factory=O.Patterns)
    device: str | None = None  # "GPU 0 NVIDIA H200 (sm_90), driver ..., nvcc 13.0"
    notes: list[str] = field(default_factory=list)
    _funcs: list[RawFunction] | None = field(default=None, repr=False)

    def funcs(self) -> list[RawFunction]:
        if self._funcs is None:
            from .sassmap import functions

            self._funcs = functions(self.sass)
        return self._funcs

    @property
    def left_behind(self) -> int:
        runs = [self.plain, self.instrumented] + [r for c in self.copies for r in c.runs]
        return sum(r.left_behind for r in runs if r is not None)


# ------------------------------------------------------------------ a finding's sites


def finding_key(f: Finding) -> str:
    return f"{f.code}:{Path(f.location.filename).name}:{f.location.row}"


def _finding_lines(f: Finding) -> set[tuple[str, int]]:
    locs = (
        [f.location]
        + [r.location for r in getattr(f, "related", [])]
        + [s.location for s in getattr(f, "trace", []) if s.location is not None]
    )
    return {(Path(loc.filename).name, loc.row) for loc in locs}


_QUOTED = re.compile(r"[`'\"]([A-Za-z_][\w.]*(?:\s*\[[^\]`'\"]*\])*)[`'\"]")


def _finding_names(f: Finding) -> set[str]:
    """The barriers and buffers a finding names (quoted in its messages, or indexed), as bases."""
    text = (
        f.message
        + " "
        + " ".join(r.message for r in getattr(f, "related", []))
        + " "
        + " ".join(s.text for s in getattr(f, "trace", []))
    )
    names = {re.split(r"\s*\[", m)[0] for m in _QUOTED.findall(text)}
    names |= set(re.findall(r"([A-Za-z_][\w.]*)\s*\[", text))
    names |= set(re.findall(r"\b([a-z_]*(?:full|empty|arrived|finished)\w*)", text))
    return {n for n in names if n and not n[0].isdigit()}


def _base(expr: str) -> str:
    return re.split(r"\s*[\[(]", (expr or "").strip())[0]


def _names_match(expr: str, names: set[str]) -> bool:
    b = _base(expr)
    if not b:
        return False
    return any(b == n or b.endswith("." + n) or n.endswith("." + b) for n in names)


def _at_site(rec: Record, f: Finding, lines: set[tuple[str, int]], names: set[str]) -> bool:
    if rec.file and rec.line and (Path(rec.file).name, rec.line) in lines:
        return True
    if rec.kind == "ORDER":
        return False
    if rec.kind in ("WATCHDOG", "POISON") and _names_match(rec.fields.get("barrier", ""), names):
        return True
    return rec.kind in ("POISON", "NAN") and _names_match(rec.fields.get("buffer", ""), names)


def _symptoms(f: Finding) -> set[str]:
    return {s for s in (f.symptom or "").split("/") if s}


def _record_fits(rec: Record, f: Finding) -> bool:
    syms = _symptoms(f)
    if rec.kind == "ORDER":
        return rule_confirm(f).init_probe
    if rec.kind == "WATCHDOG":
        return "hang" in syms or f.contract in ("deadlock", "completion")
    if rec.kind in ("POISON", "NAN"):
        return bool(syms & {"stripes", "nan", "wrong"}) or f.contract == "completion"
    return False


_LABEL = {"WATCHDOG": "watchdog", "POISON": "stale read", "NAN": "NaN rows", "ORDER": "use before init"}


def _distinct(recs: list[Record]) -> list[Record]:
    seen, out = set(), []
    for r in recs:
        key = (r.kind, r.fields.get("site"), r.fields.get("barrier"), r.fields.get("buffer"))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _sanitizer_fit(f: Finding) -> set[str]:
    if not rule_confirm(f).sanitizer:  # the rule says no compute-sanitizer tool observes it
        return set()
    return {
        "layout": {"memcheck"},
        "scope": {"racecheck", "synccheck"},
        "accumulator": {"racecheck"},
        "completion": {"racecheck", "memcheck"},
        "deadlock": {"racecheck", "synccheck"},
    }.get(f.contract, set())


def tools_for(findings: Sequence[Finding]) -> list[str]:
    """The compute-sanitizer tools that fit the findings' contracts (all three for no findings:
    a clean kernel's baseline; none when no finding has a fitting tool)."""
    if not findings:
        return ["racecheck", "synccheck", "memcheck"]
    return sorted({t for f in findings for t in _sanitizer_fit(f)})


def _record_kind_fits(r: S.SanitizerRecord, f: Finding) -> bool:
    """A misaligned address says something about a layout or an address, not about a count."""
    if "misaligned" in r.text.lower():
        return f.contract == "layout"
    if r.deadlock:
        return "hang" in _symptoms(f) or f.contract in ("deadlock", "completion")
    return True


def _attributable(r: S.SanitizerRecord, lines: set[tuple[str, int]], ev: Evidence) -> bool:
    """Whether a compute-sanitizer error record is at one of `lines` (its user frame, a device
    frame, or either access of a racecheck hazard). A record that names no place is at no site."""
    return bool(r.places() & lines)


def _is_tool(f: Finding) -> bool:
    """A finding of one of the tool's own rules (bad input, suppressions)."""
    from .. import registry

    r = registry.by_code().get(f.code)
    return r is not None and r.contract == "tool"


def _rule_arch(code: str) -> tuple[str, ...]:
    try:
        from .. import registry

        r = registry.by_code().get(code)
        return tuple(r.arch) if r is not None and tuple(r.arch) != ("sm_90a", "sm_100a") else ()
    except Exception:  # noqa: BLE001
        return ()


# ------------------------------------------------------------------ verdicts


def _own_copies(f: Finding, ev: Evidence) -> list[Copy]:
    k = finding_key(f)
    out = [c for c in ev.copies if k in c.findings]
    if ev.widening and ev.instrumented is not None:
        # a recorded batch: the probe copy carried the widening; it is this finding's widened copy
        # only when every widening edit in it is this finding's
        mine = _widening_for(f, ev)
        if mine and len(mine) == len(ev.widening):
            c = Copy("widened copy", "widen", (k,), list(mine), [ev.instrumented], ev.records)
            out.append(c)
    return out


def _widening_for(f: Finding, ev: Evidence) -> list[str]:
    lines = _finding_lines(f)
    out = []
    for w in ev.widening:
        sites = set(re.findall(r"([\w.-]+\.(?:cu|cuh)):(\d+)", w))
        # the edit's site, or a statement just after one of the finding's (a read wait after its store)
        if any((n, int(r) - k) in lines for n, r in sites for k in range(4)):
            out.append(w)
    return out


def _observable(f: Finding, ev: Evidence, copies: list[Copy]) -> bool:
    if copies or rule_confirm(f).init_probe:
        return True
    if any(t.tool in _sanitizer_fit(f) for t in ev.tools):
        return True
    if ev.sites is None:
        return True
    lines, names = _finding_lines(f), _finding_names(f)
    for s in ev.sites:
        if (s.file, s.line) in lines or _names_match(s.barrier, names):
            return True
    return False


def verdict(f: Finding, ev: Evidence) -> dict[str, Any]:
    """The verdict for one finding from what was run (see the module doc)."""
    arch_rule = _rule_arch(f.code)
    if f.contract == "tool" or _is_tool(f):
        return {"status": UNCONFIRMABLE, "reason": "a tool diagnostic, not a run-time contract"}
    if arch_rule and ev.arch and not any(a.startswith(ev.arch) for a in arch_rule):
        on = f" ({ev.device})" if ev.device else ""
        return {
            "status": UNCONFIRMABLE,
            "reason": f"a {'/'.join(arch_rule)} finding on a {ev.arch} GPU{on}: its instructions do not run here",
        }
    if ev.unconfirmable:
        return {"status": UNCONFIRMABLE, "reason": ev.unconfirmable}
    syms = _symptoms(f)
    if syms <= {"slow"} and syms:
        return {"status": UNCONFIRMABLE, "reason": "a performance finding: nothing to observe as a failure"}
    P = ev.patterns
    plain_out = ev.plain.outcome(P) if ev.plain is not None else O.Outcome(O.NOT_RUN, "not run")
    lines, names = _finding_lines(f), _finding_names(f)
    copies = _own_copies(f, ev)
    ran = [r.describe(P) for r in (ev.plain, ev.instrumented) if r is not None] + [t.summary() for t in ev.tools]
    own: list[str] = []
    other: list[str] = []
    notes: list[str] = []
    # widened copies: a failure the plain run does not have is this finding's; a widening that makes
    # a failing plain run pass hid the failure and is discarded
    used: list[Copy] = []
    for c in copies:
        if c.kind != "widen":
            continue
        if c.build_error:
            ran.append(f"{c.name}: did not build ({c.build_error[:100]})")
            continue
        if c.run is None:
            continue
        o = c.run.outcome(P)
        tries = f" ({len(c.runs)} runs)" if len(c.runs) > 1 else ""
        ran.append(f"{c.name}{tries}: {o.text()}")
        if plain_out.failed and not o.failed:
            notes.append(
                f"{c.name} passed where the plain run fails ({plain_out.text()}): the widening hid the "
                f"failure and is discarded for this finding"
            )
            continue
        used.append(c)
        if o.status == O.HANG and "hang" not in syms:
            # a race shows as wrong values; a widened copy that only ran out of time says nothing
            # about it (seen: a busy GPU slowing a run past its timeout)
            notes.append(f"{c.name} ran out of time, which this finding does not predict: not taken as evidence")
        elif o.failed and not plain_out.failed and ev.plain is not None:
            own.append(f"widened copy: {o.text()} (the plain run passes)")
            own.append("under " + "; ".join(e.removeprefix("widening: ") for e in c.edits))
    # records: the probe copy's and those of this finding's own copies, at this finding's site
    recs = list(ev.records) + [r for c in used for r in c.records]
    from_copy = {id(r): c for c in used for r in c.records}
    under: list[str] = []
    for r in _distinct([r for r in recs if r.kind in _LABEL]):
        if not _record_fits(r, f):
            continue
        if _at_site(r, f, lines, names):
            own.append(f"{_LABEL[r.kind]}: {r.raw}")
            rec_copy = from_copy.get(id(r))
            if rec_copy is not None and rec_copy.edits and not any(e.startswith("under ") for e in own):
                under = ["under " + "; ".join(e.removeprefix("widening: ") for e in rec_copy.edits)]
        else:
            other.append(f"{_LABEL[r.kind]}: {r.raw}")
    own_recs = [e for e in own if e.split(":")[0] in _LABEL.values()]
    own = own_recs[:4] + [e for e in own if e not in own_recs] + under
    if any(e.startswith("watchdog") for e in own):
        own += [f"phase log: {r.raw}" for r in [r for r in ev.records if r.kind == "PHASE"][-4:]]
    # compute-sanitizer records of a fitting tool, on this finding's lines
    fit = _sanitizer_fit(f)
    for t in ev.tools:
        errs = [
            r
            for r in t.records
            if r.is_error and not S.known_false_alarm(r) and (t.tool, r.kind, r.text) not in (ev.baseline or ())
        ]
        mine = [r for r in errs if t.tool in fit and _record_kind_fits(r, f) and _attributable(r, lines, ev)]
        if mine:
            kind = "deadlock records" if all(r.deadlock for r in mine) else "records"
            own.append(f"compute-sanitizer {mine[0].short()} ({len(mine)} {kind} at this finding's lines)")
        rest = [r for r in errs if r not in mine]
        if rest:
            other.append(f"compute-sanitizer {rest[0].short()} ({len(rest)} records)")
    # repaired copies
    for c in copies:
        if c.kind != "repair" or c.run is None:
            if c.kind == "repair" and c.build_error:
                ran.append(f"{c.name}: did not build ({c.build_error[:100]})")
            continue
        o = c.run.outcome(P)
        ran.append(f"{c.name}: {o.text()}")
        if plain_out.failed and not o.failed:
            own.append(f"repaired copy passes: {'; '.join(c.edits)} (the plain run: {plain_out.text()})")
        elif plain_out.failed:
            notes.append(f"{c.name} still fails ({o.text()}): the failure is not this site's alone")
    if own and plain_out.failed and not any(e.startswith("repaired copy") for e in own):
        own.append(f"plain run: {plain_out.text()}")
    out: dict[str, Any] = {}
    if any(not e.startswith(("under ", "phase log", "plain run")) for e in own):
        out = {"status": CONFIRMED, "evidence": own, "ran": ran}
    else:
        if not _observable(f, ev, copies):
            return {
                "status": UNCONFIRMABLE,
                "reason": "no run here can observe it: no watchdog, poisoned buffer, widening, repair or "
                "fitting compute-sanitizer tool is at its site",
            }
        out = {"status": NOT_REPRODUCED, "ran": ran}
        why = _why_not(f, ev)
        if why is None and plain_out.failed:
            why = f"the plain run fails ({plain_out.text()}), but no run ties the failure to this finding's site"
        if why:
            out["why"] = why
    if notes:
        out["notes"] = notes
    if other:
        out["other"] = other[:4]
    if ev.device:
        out["device"] = ev.device
    return out


def _why_not(f: Finding, ev: Evidence) -> str | None:
    """What the binary says about a wgmma race: ptxas's wait, where the SASS shows it."""
    race = rule_confirm(f).wgmma_race
    if not race:
        return None
    from .sassmap import ptxas_serial_note, wgmma_order

    note = ptxas_serial_note(ev.build_log)
    if race == WGMMA_OPERAND_RELEASE:
        rel = {r.location.row for r in getattr(f, "related", []) if re.search(r"released here", r.message)}
        order = wgmma_order(ev.funcs(), Path(f.location.filename).name, rel) if (ev.sass and rel) else None
        if order is None:
            if note:
                return (
                    f"ptxas reports {note[0]} ({note[1][:100]}), but the SASS was not read, so where its wait "
                    f"went is not known: not claimed"
                )
            return None
        if order.serialized:
            return f"the binary waits for the wgmma before the release: {order.text} - the race cannot happen in this build"
        return f"{order.text}: the race can happen in this binary, but no run showed it"
    if not note:
        return None
    # an accumulator read: the hazard is a read of the accumulator registers, and C7514/C7515/C7517 is ptxas
    # waiting for the wgmma before exactly such a read
    return (
        f"ptxas {note[0]}: {note[1][:140]} - the compiled code waits for the wgmma before the registers "
        f"are read, so this race cannot happen in this build (it can with another compiler or code shape)"
    )


def apply_verdicts(findings: Iterable[Finding], ev: Evidence) -> None:
    for f in findings:
        f.verdict = verdict(f, ev)


# ------------------------------------------------------------------ finding the program

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_MAIN = re.compile(r"\bint\s+main\s*\(")


def has_main(text: str) -> bool:
    mask = _code_mask(text)
    return any(mask[m.start()] for m in _MAIN.finditer(text))


def find_main(path: str | Path, text: str, include_dirs: Iterable[str] = (), depth: int = 4) -> Path | None:
    """The file holding `main()`: `path` itself or a header it includes with quotes (followed
    `depth` deep: the file's folder, then `include_dirs`). None when none is found."""
    path = Path(path)
    if has_main(text):
        return path
    seen: set[Path] = set()

    def walk(p: Path, t: str, d: int) -> Path | None:
        if d <= 0:
            return None
        for inc in _INCLUDE.findall(t):
            for base in [p.parent, *map(Path, include_dirs)]:
                q: Path = base / inc
                try:
                    q = q.resolve()
                    if q in seen or not q.is_file() or q.stat().st_size > 4 * 1024 * 1024:
                        continue
                    seen.add(q)
                    qt = q.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                if has_main(qt):
                    return q
                found = walk(q, qt, d - 1)
                if found:
                    return found
                break
        return None

    return walk(path.resolve() if path.exists() else path, text, depth)


# ------------------------------------------------------------------ running


def gpu_arch() -> str | None:
    """sm_XY of GPU 0, or None when no GPU/driver is visible."""
    from .device import probe

    return probe(toolkit=False).arch


def _run(
    what: str,
    argv: list[str] | str,
    timeout: float,
    cwd: Path,
    env: dict[str, str] | None = None,
    interrupt: int | None = None,
    slot: tuple[str, int] | None = None,
) -> Run:
    shell = isinstance(argv, str)
    if slot is not None:
        from .procs import gpu_slot

        with gpu_slot(*slot):
            p = run_clean(argv, timeout, cwd=cwd, env=env, interrupt=interrupt)
    else:
        p = run_clean(argv, timeout, cwd=cwd, env=env, interrupt=interrupt)
    log = p.log if not p.error else p.error
    rc = p.rc if not p.error else 127
    return Run(
        what,
        argv if isinstance(argv, str) else shlex.join(argv),
        rc,
        log,
        p.seconds,
        killed=p.timed_out,
        left_behind=p.left_behind,
        shell=shell,
    )


def _subst(cmd: str | Sequence[str], mapping: dict[str, str]) -> str | list[str]:
    if isinstance(cmd, (list, tuple)):
        return [c.format(**mapping) for c in cmd]
    return str(cmd).format(**{k: shlex.quote(v) for k, v in mapping.items()})


_LINK_NO_MAIN = re.compile(r"undefined reference to [`']main'|in function [`']_start'", re.I)


@dataclass
class _Job:
    path: str
    text: str
    name: str
    findings: list[Finding]
    work: Path
    tk_root: str | None
    include_dirs: tuple[str, ...]
    timeout: float
    tools: tuple[str, ...]
    cfg: ConfirmConfig | None
    env: dict[str, str] | None
    build_cmd: str | tuple[str, ...] | None
    run_cmd: str | tuple[str, ...] | None
    sanitizer_timeout: float = SANITIZER_TIMEOUT_S
    gpu_key: str = "gpu"
    gpu_slots: int = 2

    def run_slot(self) -> tuple[str, int]:
        return (f"{self.gpu_key}-run", self.gpu_slots)

    def tool_slot(self) -> tuple[str, int]:
        return (f"{self.gpu_key}-sanitizer", self.gpu_slots)


def confirm_file(
    path: str,
    text: str,
    findings: Sequence[Finding],
    *,
    confirm_cfg: ConfirmConfig | None = None,
    tk_root: str | None = None,
    include_dirs: tuple[str, ...] = (),
    timeout: float | None = None,
    tools: tuple[str, ...] = ("racecheck", "memcheck"),
    keep: str | None = None,
    arch: str | None = "auto",
    device: DeviceInfo | None = None,
    gpu: int | None = None,
    sanitizer_timeout: float | None = None,
    gpu_slots: int = 2,
    source_arch: str | None = None,
) -> Evidence:
    """Instrument copies of `path`, build, run, and set `verdict` on each finding.

    arch: "auto" asks the driver (confirm/device.py; or `device`, a DeviceInfo already probed);
    None means no GPU; a value such as "sm_90" is taken as given. gpu: the GPU (an index of the
    probe) this file runs on: its runs see only that GPU (CUDA_VISIBLE_DEVICES). source_arch: the
    arch the file was analysed for (sm_100a for Blackwell code): a kernel for another GPU
    generation is not built here, every finding of it stays UNCONFIRMABLE HERE."""
    ev = Evidence()
    cfg = confirm_cfg
    try:
        ev.patterns = O.Patterns.from_config(cfg)
    except O.PatternError as e:
        raise ConfirmError(str(e)) from None
    if arch == "auto":
        if device is None:
            from .device import probe

            device = probe()
        g = device.gpu(gpu) if gpu is not None else (device.gpus[0] if device.gpus else None)
        ev.arch = g.arch if g else None
        ev.device = device.describe(g.index) if g else None
        no_gpu = device.error or "no GPU here"
    else:
        ev.arch = arch
        no_gpu = "no GPU here"
        if device is not None:
            ev.device = device.describe(gpu)
    tk_root = str(Path(tk_root).resolve()) if tk_root else None  # nvcc runs in the copy's folder
    timeout = timeout or (cfg.timeout if cfg is not None and cfg.timeout else RUN_TIMEOUT_S)
    build_cmd = cfg.build if cfg is not None else None
    run_cmd = cfg.run if cfg is not None else None
    if ev.arch is None:
        ev.unconfirmable = no_gpu
    elif source_arch and source_arch.startswith("sm_100") and not ev.arch.startswith("sm_10"):
        ev.unconfirmable = (
            f"the kernel is {source_arch} code (tcgen05, TMEM, CLC) and this GPU is {ev.arch}: "
            "its instructions do not run here"
        )
    elif bool(build_cmd) != bool(run_cmd):
        ev.unconfirmable = "[tool.tkcheck.confirm] sets only one of build and run: set both, or neither"
    elif not build_cmd and not shutil.which("nvcc"):
        ev.unconfirmable = "nvcc not found (set build and run in [tool.tkcheck.confirm] to build another way)"
    if ev.unconfirmable:
        apply_verdicts(findings, ev)
        return ev
    env = None
    if gpu is not None:
        from .device import visible_id

        env = dict(os.environ, CUDA_VISIBLE_DEVICES=visible_id(gpu))
    # absolute: builds and runs happen with the copy's folder as the working directory
    work = Path(keep).resolve() if keep else Path(tempfile.mkdtemp(prefix="tkcheck-confirm-"))
    work.mkdir(parents=True, exist_ok=True)
    job = _Job(
        path,
        text,
        Path(path).name,
        list(findings),
        work,
        tk_root,
        tuple(include_dirs),
        timeout,
        tuple(tools),
        cfg,
        env,
        build_cmd,
        run_cmd,
        sanitizer_timeout or max(SANITIZER_TIMEOUT_S, 3 * timeout),
        gpu_key=f"gpu{_visible(gpu)}",
        gpu_slots=gpu_slots,
    )
    try:
        _build_and_run(job, ev)
        write_evidence(ev, work)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    apply_verdicts(findings, ev)
    return ev


def _visible(gpu: int | None) -> str:
    from .device import visible_id

    return visible_id(gpu if gpu is not None else 0)


def _build(job: _Job, d: Path, which: str, proto: Path | None, extra: tuple[str, ...] = ()) -> Run:
    binary = d / "kernel.bin"
    src = d / job.name
    if job.build_cmd:
        cmd = _subst(job.build_cmd, {"src": str(src), "bin": str(binary), "dir": str(d)})
    else:
        inc = []
        if job.tk_root:
            inc += [
                "-I",
                str(Path(job.tk_root) / "include"),
                "-I",
                str(proto if proto is not None else Path(job.tk_root) / "prototype"),
            ]
        for i in job.include_dirs:
            inc += ["-I", str(Path(i).resolve())]
        inc += ["-I", str(Path(job.path).resolve().parent)]
        cmd = ["nvcc", *NVCC_FLAGS, *extra, *inc, str(src), "-o", str(binary), "-lcuda"]
    return _run(f"build ({which})", cmd, BUILD_TIMEOUT_S, d)


_NO_RESOURCES = "too many resources requested for launch"
# an instrumented copy needs more registers than the plain one; where the launch then fails
# ("too many resources requested for launch": a block without __launch_bounds__), the copy is
# rebuilt with fewer registers per thread (spills are fine for a probe run)
REG_LADDER = (168, 128, 80, 64)


def _run_copy(job: _Job, d: Path, what: str, proto: Path | None, ev: Evidence) -> Run:
    r = _run(what, _run_argv(job, d), job.timeout, d, job.env, slot=job.run_slot())
    if job.build_cmd or _NO_RESOURCES not in r.log:
        return r
    for regs in REG_LADDER:
        b = _build(job, d, f"{what}, -maxrregcount={regs}", proto, (f"-maxrregcount={regs}",))
        if b.rc != 0:
            break
        r = _run(what, _run_argv(job, d), job.timeout, d, job.env, slot=job.run_slot())
        if _NO_RESOURCES not in r.log:
            ev.notes.append(
                f"{what}: the launch needed fewer registers than the instrumented code takes; "
                f"rebuilt with -maxrregcount={regs}"
            )
            break
    return r


def _run_argv(job: _Job, d: Path) -> str | list[str]:
    if job.run_cmd:
        return _subst(job.run_cmd, {"bin": str(d / "kernel.bin"), "dir": str(d), "src": str(d / job.name)})
    return [str(d / "kernel.bin")]


def _write_copy(job: _Job, d: Path, plan: Plan) -> tuple[list[Site], Path | None]:
    proto = None
    tsites: list[Site] = []
    if job.tk_root and uses_template(job.text) and (Path(job.tk_root) / "prototype").is_dir() and plan.watchdog:
        proto = d / "proto"
        tsites = instrument_template_dir(Path(job.tk_root) / "prototype", proto, TEMPLATE_FIRST_ID)
    inst = instrument(job.text, job.name, plan, template_sites=tsites)
    inst.write(d, job.name)
    return inst.sites, proto


def _widen_groups(findings: Sequence[Finding], text: str, name: str) -> list[tuple[list[Finding], Widening]]:
    """(findings, widening) per race finding; the findings of the use-before-init probe share one
    copy (its probe reports per use site)."""
    from .widen import widening

    groups: list[tuple[list[Finding], Widening]] = []
    probed = [f for f in findings if rule_confirm(f).init_probe]
    for f in findings:
        if rule_confirm(f).init_probe:
            continue
        w = widening([f], text, name)
        if w:
            groups.append(([f], w))
    if probed:
        w = widening(probed, text, name)
        if w:
            groups.append((probed, w))
    # identical edits: one copy for all of them
    merged: list[tuple[list[Finding], Widening]] = []
    for fs, w in groups:
        same = next((g for g in merged if g[1].describe() == w.describe()), None)
        if same:
            same[0].extend(fs)
        else:
            merged.append((list(fs), w))
    return merged


_VIEW = re.compile(r"reinterpret_cast\s*<[^<>;]*(?:<[^<>;]*>[^<>;]*)*>\s*\(")
_INIT = re.compile(r"(?<![\w.>])(?:kittens\s*::\s*)?init_semaphore\s*\(")


def _line_offset(text: str, row: int) -> int:
    return sum(len(ln) + 1 for ln in text.split("\n")[: row - 1])


def repair_edit(text: str, f: Finding) -> tuple[str, str] | None:
    """(repaired text, description) for a layout finding whose line reads a tile through a
    `reinterpret_cast<...>(tile)` view: the view removed, so the tile is read with its own layout."""
    if f.contract != "layout":
        return None
    from .instrument import _split_args

    lines = text.split("\n")
    rows = [f.location.row] + [
        r.location.row
        for r in getattr(f, "related", [])
        if Path(r.location.filename).name == Path(f.location.filename).name
    ]
    for row in rows:
        if not 0 < row <= len(lines):
            continue
        off = _line_offset(text, row)
        ms = list(_VIEW.finditer(lines[row - 1]))
        if len(ms) != 1:
            continue
        m = ms[0]
        sp = _split_args(text, off + m.end() - 1)
        if sp is None or len(sp[0]) != 1:
            continue
        inner = sp[0][0]
        new = text[: off + m.start()] + f"({inner})" + text[sp[1] :]
        view = re.sub(r"\s+", " ", text[off + m.start() : sp[1]])
        return new, f"the view `{view}` at {Path(f.location.filename).name}:{row} replaced by `{inner}`"
    return None


def count_repair(text: str, f: Finding) -> tuple[str, str] | None:
    """The "count" repair (a barrier's arrival count differs from the arrivals per phase): the
    barrier initialised for the arrivals that do come (`init_semaphore(bar, N - tx, tx)` at its
    init line; the finding's witness holds `arrivals_per_phase`)."""
    if "count" not in rule_confirm(f).repairs or not f.witness:
        return None
    from .instrument import _split_args

    try:
        arrivals = int(str(f.witness.get("arrivals_per_phase")))
    except (TypeError, ValueError):
        return None
    name = Path(f.location.filename).name
    for r in getattr(f, "related", []):
        if "initialised" not in r.message or Path(r.location.filename).name != name:
            continue
        row = r.location.row
        lines = text.split("\n")
        if not 0 < row <= len(lines):
            continue
        off = _line_offset(text, row)
        ms = list(_INIT.finditer(lines[row - 1]))
        if len(ms) != 1:
            continue
        sp = _split_args(text, off + ms[0].end() - 1)
        if sp is None or len(sp[0]) not in (2, 3):
            continue
        args = sp[0]
        tx = args[2] if len(args) == 3 else "0"
        call = ms[0].group(0)
        new_call = f"{call}{args[0]}, ({arrivals}) - ({tx}), {tx})"
        new = text[: off + ms[0].start()] + new_call + text[sp[1] :]
        was = re.sub(r"\s+", " ", text[off + ms[0].start() : sp[1]])
        return new, (
            f"`{args[0]}` initialised for the {arrivals} arrivals per phase that come "
            f"({name}:{row}: `{was}` -> `{new_call}`)"
        )
    return None


def _first_issuer(desc: str) -> int | None:
    """The lowest thread id of an issuer set as the checks describe it ("warpgroup 0 (threads 0-127)",
    "lane 0 of warps 8-11 (4 threads)", "thread 5")."""
    m = re.search(r"lane (\d+) of warps? (\d+)", desc)
    if m:
        return 32 * int(m.group(2)) + int(m.group(1))
    m = re.search(r"threads (\d+)-\d+", desc) or re.search(r"\bthreads? (\d+)\b", desc)
    return int(m.group(1)) if m else None


def _issuers(f: Finding) -> tuple[str, int] | None:
    """(issuer set, the issuing statement's line) as the finding's rule reads them off it."""
    c = rule_confirm(f)
    return c.issuers(f) if c.issuers is not None else None


def _issuers_of(f: Finding) -> str | None:
    got = _issuers(f)
    return got[0] if got else None


def _site_row(f: Finding) -> int:
    got = _issuers(f)
    return got[1] if got else f.location.row


def issuer_repairs(text: str, findings: Sequence[Finding]) -> list[tuple[list[Finding], str, str]]:
    """The single-issuer repair: the findings of an issue-once op run by several threads
    (`ISSUERS_OWN`), with the findings whose arrivals come from the same issuers (`ISSUERS_JOIN`,
    count findings): each site's statement restricted to the first issuing thread, one copy per
    issuer set (the sites share the one defect, e.g. a dropped lane guard)."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        if rule_confirm(f).issuer_repair == ISSUERS_OWN and (issuers := _issuers_of(f)):
            groups.setdefault(issuers, []).append(f)
    for f in findings:
        desc = _issuers_of(f)
        if rule_confirm(f).issuer_repair == ISSUERS_JOIN and desc in groups:
            groups[desc].append(f)
    out: list[tuple[list[Finding], str, str]] = []
    lines = text.split("\n")
    for desc, fs in groups.items():
        t0 = _first_issuer(desc)
        if t0 is None:
            continue
        rows = sorted(
            {_site_row(f) for f in fs if Path(f.location.filename).name == Path(fs[0].location.filename).name}
        )
        new_lines = list(lines)
        ok = True
        for row in rows:
            if not 0 < row <= len(lines):
                ok = False
                break
            ln = lines[row - 1]
            col = len(ln) - len(ln.lstrip())
            if not re.match(
                r"(?:kittens::)?(?:tma::|warp::|warpgroup::)?\w+\s*(?:<[^;]*>)?\s*\(", ln[col:]
            ) or re.match(r"(if|for|while|return|switch)\b", ln[col:]):
                ok = False
                break
            new_lines[row - 1] = ln[:col] + f"if ((int)threadIdx.x == {t0}) " + ln[col:]
        if ok and rows:
            name = Path(fs[0].location.filename).name
            out.append(
                (
                    fs,
                    "\n".join(new_lines),
                    f"the statements at {name}:{', '.join(map(str, rows))} run by thread {t0} only "
                    f"(they were issued by {desc})",
                )
            )
    return out


_STORE = re.compile(r"(?<![\w.>])(?:kittens\s*::\s*)?tma\s*::\s*store_async\s*(?:<[^;]*?>)?\s*\(")


def _after_statement(text: str, off: int) -> int | None:
    """The offset just after the `;` that ends the statement containing `off` (code only)."""
    mask = _code_mask(text)
    depth = 0
    for i in range(off, len(text)):
        if not mask[i]:
            continue
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif c == ";" and depth == 0:
            return i + 1
    return None


def read_wait_repair(text: str, f: Finding) -> tuple[str, str] | None:
    """The "read-wait-after-store" / "read-wait-after-named-stores" repairs (a TMA store's shared
    tile rewritten or left while the store may still read it): a `tma::store_async_read_wait()`
    right after the store (the finding's own line, or the stores its notes name), in the thread
    that issued it (with no store in flight it returns at once)."""
    asked = rule_confirm(f).repairs
    named = "read-wait-after-named-stores" in asked
    if not named and "read-wait-after-store" not in asked:
        return None
    name = Path(f.location.filename).name
    rows = (
        [
            r.location.row
            for r in getattr(f, "related", [])
            if "store_async" in r.message and Path(r.location.filename).name == name
        ]
        if named
        else [f.location.row]
    )
    lines = text.split("\n")
    for row in rows:
        if not 0 < row <= len(lines):
            continue
        ms = list(_STORE.finditer(lines[row - 1]))
        if len(ms) != 1:
            continue
        end = _after_statement(text, _line_offset(text, row) + ms[0].start())
        if end is None:
            continue
        new = text[:end] + " ::kittens::tma::store_async_read_wait();" + text[end:]
        return new, f"a `tma::store_async_read_wait()` after the store at {name}:{row}"
    return None


def _function_body_blocks(text: str, off: int) -> list[int] | None:
    """The offsets of the `{` of the blocks enclosing `off`, from the function body inward."""
    mask = _code_mask(text)
    stack: list[int] = []
    for i in range(off):
        if not mask[i]:
            continue
        if text[i] == "{":
            stack.append(i)
        elif text[i] == "}" and stack:
            stack.pop()
    for k, b in enumerate(stack):
        before = text[:b].rstrip()
        before = re.sub(r"(\bconst|\bnoexcept|__attribute__\s*\(\(.*?\)\))\s*$", "", before).rstrip()
        if before.endswith(")"):
            return stack[k:]
    return None


def _matching(text: str, open_at: int) -> int | None:
    mask = _code_mask(text)
    depth = 0
    for i in range(open_at, len(text)):
        if not mask[i]:
            continue
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def sync_repair(text: str, f: Finding) -> tuple[str, str] | None:
    """The "sync-after-init" repair (barriers used before every thread sees them initialised): a
    `__syncthreads()` after the kernel-level statement that holds the first init (the init block
    every thread then waits for)."""
    if "sync-after-init" not in rule_confirm(f).repairs:
        return None
    name = Path(f.location.filename).name
    rows = sorted(
        r.location.row
        for r in getattr(f, "related", [])
        if "initiali" in r.message and Path(r.location.filename).name == name
    )
    if not rows:
        return None
    off = _line_offset(text, rows[0])
    blocks = _function_body_blocks(text, off)
    if not blocks:
        return None
    if len(blocks) == 1:
        end = _after_statement(text, off)
    else:
        close = _matching(text, blocks[1])
        end = close + 1 if close is not None else None
    if end is None:
        return None
    row = text.count("\n", 0, end) + 1
    return text[:end] + " __syncthreads();" + text[
        end:
    ], f"a `__syncthreads()` after the init block ending at {name}:{row}"


# the repairs a rule can ask for by name (`Rule.confirm.repairs`); the layout view repair
# (`repair_edit`) applies to every layout finding, the single-issuer one through
# `Rule.confirm.issuer_repair`
REPAIRS = {
    "count": count_repair,
    "read-wait-after-store": read_wait_repair,
    "read-wait-after-named-stores": read_wait_repair,
    "sync-after-init": sync_repair,
}


def _repairs(text: str, findings: Sequence[Finding]) -> list[tuple[list[Finding], str, str]]:
    out: list[tuple[list[Finding], str, str]] = []
    seen: set[str] = set()
    for f in findings:
        for make in (repair_edit, count_repair, read_wait_repair, sync_repair):
            r = make(text, f)
            if r is None:
                continue
            if r[0] in seen:  # the same edit for another finding (two uses of one init)
                next(g for g in out if g[1] == r[0])[0].append(f)
                continue
            seen.add(r[0])
            out.append(([f], r[0], r[1]))
    return out + issuer_repairs(text, findings)


def _build_and_run(job: _Job, ev: Evidence) -> None:
    from .widen import plan_for

    work, name = job.work, job.name
    plain_dir = work / "plain"
    plain_dir.mkdir(exist_ok=True)
    (plain_dir / name).write_text(job.text, encoding="utf-8")
    inst_dir = work / "instr"
    sites, proto = _write_copy(job, inst_dir, Plan())
    ev.sites = sites
    copies: list[tuple[Copy, Path, Path | None]] = []
    for k, (fs, w) in enumerate(_widen_groups(job.findings, job.text, name)):
        d = work / f"widen-{k}"
        _, cproto = _write_copy(job, d, plan_for(w))
        keys = tuple(finding_key(f) for f in fs)
        label = ", ".join(f"{f.code} at {name}:{f.location.row}" for f in fs)
        copies.append((Copy(f"widened copy for {label}", "widen", keys, w.describe()), d, cproto))
    b = _build(job, plain_dir, "plain", None)
    ev.build_log = b.log
    if b.rc != 0:
        if _LINK_NO_MAIN.search(b.log):
            ev.unconfirmable = (
                f"no run command: {name} has no main() and does not link into a program (no main in "
                f"it or in the files it includes); set build and run in [tool.tkcheck.confirm]"
            )
        elif b.timed_out:
            ev.unconfirmable = f"the plain copy did not build within {BUILD_TIMEOUT_S} s"
        else:
            ev.unconfirmable = "the plain copy did not build: " + _last(b.log)
        return
    bi = _build(job, inst_dir, "instrumented", proto)
    if bi.rc != 0:
        ev.notes.append("the probe copy did not build (no watchdog, poison or NaN records): " + _last(bi.log))
    for c, d, cproto in copies:
        bc = _build(job, d, c.name, cproto)
        if bc.rc != 0:
            c.build_error = _last(bc.log)
    ev.plain = _run("plain", _run_argv(job, plain_dir), job.timeout, plain_dir, job.env, slot=job.run_slot())
    if bi.rc == 0:
        ev.instrumented = _run_copy(job, inst_dir, "instrumented", proto, ev)
        ev.records = parse_records(ev.instrumented.log)
    for c, d, cproto in copies:
        if c.build_error:
            continue
        for attempt in range(WIDENED_TRIES):
            r = _run_copy(job, d, c.name if attempt == 0 else f"{c.name} (try {attempt + 1})", cproto, ev)
            c.runs.append(r)
            c.records = parse_records(r.log)
            if any(x.kind != "PHASE" for x in c.records) or r.outcome(ev.patterns).failed:
                break
        ev.copies.append(c)
    # compute-sanitizer on the plain binary; a hung program only under racecheck (it reports the
    # stuck barrier waits as deadlocks; the other tools would only time out)
    tools = list(job.tools)
    if ev.plain.timed_out:
        tools = ["racecheck"] if tools else []
    extra = tuple(job.cfg.sanitizer_args) if job.cfg is not None else ()
    for tool in tools:
        xml = work / f"{tool}.xml"
        base = _run_argv(job, plain_dir)
        if isinstance(base, str):
            argv: str | list[str] = " ".join(shlex.quote(a) for a in S.command(tool, [], str(xml), extra)) + " " + base
        else:
            argv = S.command(tool, base, str(xml), extra)
        r = _run(tool, argv, job.sanitizer_timeout, plain_dir, job.env, interrupt=signal.SIGINT, slot=job.tool_slot())
        try:
            recs = S.parse_file(xml, tool) if xml.exists() else []
        except S.SanitizerXMLError:
            recs = []
        t = S.ToolRun(tool, 124 if r.killed else r.rc, recs)
        t.log = r.log
        ev.tools.append(t)
    # the plain binary's SASS: sanitizer records on the user's lines, the wgmma/release order
    from .sassmap import disassemble

    ev.sass, note = disassemble(plain_dir / "kernel.bin")
    if note:
        ev.notes.append(note)
    map_records(ev, name)
    # repairs, for a failing plain run: the fix each finding names, applied at its site alone
    if ev.plain.outcome(ev.patterns).failed:
        for k, (fs, rtext, what) in enumerate(_repairs(job.text, job.findings)):
            d = work / f"repair-{k}"
            d.mkdir(exist_ok=True)
            (d / name).write_text(rtext, encoding="utf-8")
            label = ", ".join(f"{f.code} at {name}:{f.location.row}" for f in fs)
            c = Copy(f"repaired copy for {label}", "repair", tuple(finding_key(f) for f in fs), [what])
            br = _build(job, d, c.name, None)
            if br.rc != 0:
                c.build_error = _last(br.log)
            else:
                c.runs.append(_run(c.name, _run_argv(job, d), job.timeout, d, job.env, slot=job.run_slot()))
            ev.copies.append(c)


def map_records(ev: Evidence, user_file: str) -> None:
    """Put each sanitizer record (and each racecheck access) on its frame in the user's file."""
    from .sassmap import user_frame

    funcs = ev.funcs() if ev.sass else []
    for t in ev.tools:
        for r in t.records:
            if r.user is None:
                # the XML's own device stack (inlined frames, innermost first), else the SASS at the pc
                mine = [fr for fr in r.frames if fr[1] and Path(fr[1]).name == Path(user_file).name and fr[2]]
                if mine:
                    r.user = (Path(mine[0][1]).name, mine[0][2])
                elif r.pc:
                    r.user = user_frame(funcs, r.pc, r.file, r.line, user_file)
            acc = r.extra.get("accesses")
            if acc:
                r.extra["accesses"] = [
                    a[:5] + (user_frame(funcs, a[4], a[2], a[3], user_file) if a[4] else None,) if len(a) >= 5 else a
                    for a in acc
                ]


def _last(log: str) -> str:
    lines = [ln for ln in log.splitlines() if "error" in ln.lower()] or log.splitlines() or [""]
    return lines[0].strip()[:200]


# ------------------------------------------------------------------ the evidence folder


def write_evidence(ev: Evidence, d: Path) -> None:
    """The run's record in `d` (kept with --keep; read back by evidence_from_dir)."""
    d = Path(d)
    files = {
        "build_plain.log": ev.build_log,
        "build_plain.rc": "0\n" if not ev.unconfirmable else "1\n",
        "widening.txt": "".join(w + "\n" for w in ev.widening),
        "copies.json": json.dumps([c.to_json() for c in ev.copies], indent=1),
        "notes.txt": "".join(n + "\n" for n in ev.notes),
    }
    if ev.unconfirmable:
        files["unconfirmable.txt"] = ev.unconfirmable + "\n"
    if ev.device:
        files["device.txt"] = ev.device + "\n"
    if ev.plain is not None:
        files.update(
            {"plain.log": ev.plain.log, "plain.rc": f"{ev.plain.rc}\n", "plain.killed": f"{int(ev.plain.killed)}\n"}
        )
    if ev.instrumented is not None:
        files.update(
            {
                "instr.log": ev.instrumented.log,
                "instr.rc": f"{ev.instrumented.rc}\n",
                "instr.killed": f"{int(ev.instrumented.killed)}\n",
            }
        )
    if ev.sites is not None:
        files["sites.json"] = json.dumps([s.__dict__ for s in ev.sites], indent=1)
    if ev.sass:
        files["sass.txt"] = ev.sass
    for t in ev.tools:
        files[f"{t.tool}.rc"] = f"{t.rc}\n"
        if getattr(t, "log", None):
            files[f"{t.tool}.log"] = t.log
    for fname, body in files.items():
        (d / fname).write_text(body, encoding="utf-8")


def evidence_from_dir(d: Path, arch: str = "sm_90", patterns: O.Patterns | None = None) -> Evidence:
    """Evidence from a folder of a recorded run: plain.{rc,log}, instr.{rc,log}, <tool>.{rc,xml},
    copies.json, sites.json, sass.txt (a gpu_batch result folder or a `confirm --keep` folder)."""
    d = Path(d)

    def rd(name: str) -> str | None:
        p = d / name
        return p.read_text(encoding="utf-8", errors="replace") if p.exists() else None

    ev = Evidence(arch=arch)
    if patterns is not None:
        ev.patterns = patterns
    ev.build_log = rd("build_plain.log") or ""
    if widening := rd("widening.txt"):
        ev.widening = [ln for ln in widening.splitlines() if ln.strip()]
    if device := rd("device.txt"):
        ev.device = device.strip()
    if unconfirmable := rd("unconfirmable.txt"):
        ev.unconfirmable = unconfirmable.strip()
        return ev
    if (build_rc := rd("build_plain.rc")) is not None and build_rc.strip() != "0":
        ev.unconfirmable = "does not build (nvcc rejects it)"
        return ev

    def rc(name: str) -> int | None:
        v = rd(name)
        return int(v.strip()) if v and v.strip().lstrip("-").isdigit() else None

    if rd("plain.rc") is not None:
        ev.plain = Run("plain", "bin", rc("plain.rc"), rd("plain.log") or "", killed=rc("plain.killed") == 1)
    if rd("instr.rc") is not None:
        ev.instrumented = Run(
            "instrumented", "bin", rc("instr.rc"), rd("instr.log") or "", killed=rc("instr.killed") == 1
        )
        ev.records = parse_records(ev.instrumented.log)
    if sites := rd("sites.json"):
        ev.sites = [Site(**s) for s in json.loads(sites)]
    if copies := rd("copies.json"):
        ev.copies = [Copy.from_json(c) for c in json.loads(copies)]
    ev.sass = rd("sass.txt")
    for tool in S.TOOLS:
        if rd(f"{tool}.rc") is None:
            continue
        recs = []
        if (d / f"{tool}.xml").exists():
            try:
                recs = S.parse_file(d / f"{tool}.xml", tool)
            except S.SanitizerXMLError:
                recs = []
        ev.tools.append(S.ToolRun(tool, rc(f"{tool}.rc"), recs))
    if notes := rd("notes.txt"):
        ev.notes = [ln for ln in notes.splitlines() if ln.strip()]
    return ev


# ------------------------------------------------------------------ recorded batches (docs/BENCHMARKS.md)


def collect_batch(results: Path, corpus: Path) -> list[dict[str, Any]]:
    from ..evaluate import check_clean, check_mutation, load_mutations
    from .gpu_batch import RUNNABLE, _clean_id

    muts = {m.id: m for m in load_mutations(corpus)}
    rows: list[dict[str, Any]] = []

    def baseline(kernel: str) -> set[tuple[str, str, str]] | None:
        d = Path(results) / _clean_id(kernel)
        if not d.is_dir():
            return None
        return {(t.tool, r.kind, r.text) for t in evidence_from_dir(d).tools for r in t.records if r.is_error}

    with tempfile.TemporaryDirectory() as td:
        for d in sorted(p for p in Path(results).iterdir() if p.is_dir()):
            vid = d.name
            m: Mutation | None
            if vid.startswith("clean-"):
                k = next(
                    (
                        p
                        for folder in RUNNABLE
                        for p in sorted((Path(corpus) / folder).glob("*.cu"))
                        if _clean_id(f"{folder}/{p.name}") == vid
                    ),
                    None,
                )
                if k is None:
                    continue
                res = check_clean(k)
                m = None
                name = k.name
            elif vid in muts:
                m = muts[vid]
                res = check_mutation(corpus, m, Path(td))
                name = Path(m.kernel).name
            else:
                continue
            ev = evidence_from_dir(d)
            map_records(ev, name)
            if m is not None:
                ev.baseline = baseline(m.kernel)
            findings = [f for f in res.findings if f.code != PARSE_ERROR.code]
            apply_verdicts(findings, ev)
            for f in findings:
                v = f.verdict
                assert v is not None  # apply_verdicts gave each finding one
                if m is not None and m.unobservable and f.code in m.rules and v["status"] == NOT_REPRODUCED:
                    v.setdefault("why", m.unobservable)
            rows.append(batch_row(vid, m.symptom if m else "", list(m.rules) if m else [], ev, findings))
    return rows


def batch_row(vid: str, symptom: str, rules: list[str], ev: Evidence, findings: Iterable[Finding]) -> dict[str, Any]:
    return {
        "id": vid,
        "symptom": symptom,
        "rules": list(rules),
        "plain": _plain_result(ev),
        "sanitizer": _sanitizer_result(ev),
        "findings": [
            {"code": f.code, "line": f.location.row, "symptom": f.symptom, "verdict": f.verdict} for f in findings
        ],
        "records": {k: sum(1 for r in ev.records if r.kind == k) for k in ("WATCHDOG", "POISON", "NAN")},
        "unconfirmable": ev.unconfirmable,
    }


def _plain_result(ev: Evidence) -> str:
    if ev.unconfirmable:
        return ev.unconfirmable
    if ev.plain is None:
        return "not run"
    o = ev.plain.outcome(ev.patterns)
    if o.status == O.PASS:
        return "PASS"
    if o.status == O.HANG:
        return "hang (killed at the timeout)"
    if o.status == O.FAIL and o.why.startswith("the program's own check"):
        return "FAIL (wrong output" + (f": {o.line[:60]}" if o.line else "") + ")"
    if o.status == O.CRASH and o.line:
        m = re.search(r"(?:CUDA error|cudaError\w*|failed)[:\s]*(.*?)(?: at \S+:\d+)?$", o.line)
        msg = (m.group(1) if m and m.group(1) else o.line)[:80]
        return f"crash: {msg}" + (f" ({o.why.split('then ')[1].rstrip(')')})" if "then " in o.why else "")
    return o.why


def _sanitizer_result(ev: Evidence) -> str:
    return "; ".join(t.summary() for t in ev.tools) or "not run"


def batch_table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| planted bug | symptom | plain run | compute-sanitizer alone | tkcheck finding: verdict (evidence) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        cells = []
        order: dict[str | None, int] = {CONFIRMED: 0, UNCONFIRMABLE: 1, NOT_REPRODUCED: 2}
        for f in sorted(
            r["findings"], key=lambda f: (f["code"] not in r["rules"], order.get((f["verdict"] or {}).get("status"), 3))
        ):
            v = f["verdict"] or {}
            st = v.get("status", "")
            ev = (v.get("evidence") or [v.get("reason", "")])[0] if st != NOT_REPRODUCED else v.get("why", "")
            ev = re.sub(r"\s+", " ", ev)[:130].replace("|", "/")
            cells.append(f"{f['code']}:{f['line']} **{st}**" + (f" ({ev})" if ev else ""))
        if len(cells) > 2:
            rest = len(cells) - 2
            cells = cells[:2] + [f"(+{rest} more)"]
        if not cells:
            cells = [
                "no finding" + (f" (rules {', '.join(r['rules'])} not implemented or missed)" if r["rules"] else "")
            ]
        out.append(
            f"| `{r['id']}` | {r['symptom'] or '-'} | {r['plain']} | {r['sanitizer'].replace('|', '/')} | "
            + "<br>".join(cells)
            + " |"
        )
    return "\n".join(out) + "\n"


def summary(rows: list[dict[str, Any]]) -> dict[str, int]:
    s = {"variants": len(rows)}
    for key in (CONFIRMED, NOT_REPRODUCED, UNCONFIRMABLE):
        s[key] = sum(1 for r in rows for f in r["findings"] if (f["verdict"] or {}).get("status") == key)
    return s


def dump(rows: list[dict[str, Any]], path: str | Path) -> None:
    Path(path).write_text(json.dumps(rows, indent=1), encoding="utf-8")
