"""Race widening: per-finding source edits that make a racy interleaving likely at run time.

A race that passes on the GPU is not disproved: the bad interleaving was just unlikely. For the
findings whose class is a race, `widening(findings, text)` chooses a minimal, source-level edit
tied to the sites the finding names (`Finding.location` / `related`), applied only to the
instrumented copy; nothing is reordered.

Which edits a finding gets is its rule's choice (`Rule.confirm`, tkcheck/rule.py): the named
widenings in `WIDENINGS`, and the use-before-init probe. The edits:

* delay (`::tkcheck_delay(cycles)`, an inlined clock64 spin behind compiler barriers) in front
  of a statement:
  - delay-wgmma-issue (an operand refilled while the MMA may read it): the consumer, in front of
    the wgmma issue, so that the producer is already parked on the release barrier;
  - stagger-writers / stagger-writers-before-barrier (a store reads rows other warps write; a
    barrier shared by two groups): the writers, in front of the write, staggered by warp (warp w
    of its warpgroup waits w x ~30 us), so the storing lane (or a barrier completed by the wrong
    warps) goes ahead of late writers;
  - delay-load (a load completes on another stage's barrier): the misrouted load's issue, after
    its stage is poisoned, so the stage's barrier can complete without it;
  - the use-before-init probe (no barrier after mbarrier init): the initialising thread, in front
    of its first init; a wait that starts while the init is held back is reported (TKCHECK_ORDER);
* poison (`::tkcheck_poison(tile)`, written back to front, + `fence.proxy.async`; 0xFF = NaN)
  right after the point where the program lets a tile be rewritten:
  - poison-refill: the refilled tile, right after the producer's wait on the release barrier (the
    refill made immediate);
  - poison-released-stores: every tile stored without a read wait, after the release (or, when
    the finding names none, after the store issue: nothing between them waits for the store);
  - poison-after-store: after the store issue on the exiting path - what the next CTA on the SM
    may write into the freed shared memory;
  - poison-after-read-wait: after each duplicate store's own read wait - the tile rewrite that
    follows.

`plan_for(w)` picks the rest of the instrumentation to go with a widening (see there).
Findings of other classes get no widening. The descriptions are shown in the verdict ("ran").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..findings import Finding, Location
from ..rule import Confirm

if TYPE_CHECKING:
    from .instrument import Plan

DELAY_CYCLES = 8000  # about 4 us at 1.98 GHz
LONG_DELAY_CYCLES = 20000  # about 10 us
# per-warp step for staggered writers: well above what the instrumented copy adds on the racing
# path (an H200 run with 4 us steps passed because the store issue's own checks took longer)
STAGGER_CYCLES = 60000  # about 30 us


@dataclass
class Delay:
    line: int  # the user's line; inserted in front of the statement there
    cycles: str  # C expression (may depend on the warp)
    cond: str = ""  # C condition, empty: every thread that reaches the line
    why: str = ""
    before: str = ""  # C expression run (under `cond`) just before the delay


@dataclass
class ReleasePoison:
    line: int  # the statement after which the tile is poisoned
    tile: str  # C expression of the tile
    after: str = "statement"  # "statement": after the statement holding `anchor` on `line`
    anchor: str = ""  # a callee (suffix) on `line` whose statement ends the insertion point
    why: str = ""
    code: str = ""  # instead of the poison: this C expression after the call
    probe: bool = False  # bookkeeping for a probe, not a widening: not shown in the verdict


@dataclass
class Widening:
    delays: list[Delay] = field(default_factory=list)
    poisons: list[ReleasePoison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    init_probe: bool = False  # the copy reports waits that start before the first init
    init_probe_rows: set[int] = field(default_factory=set)  # ... at these use sites (the findings')
    wgmma_race: bool = False  # a wgmma race: keep calls out of the consumer's wgmma pipeline
    hang: bool = False  # a finding predicts a hang: the watchdog's evidence comes first

    def describe(self) -> list[str]:
        return [d.why for d in self.delays] + [p.why for p in self.poisons if not p.probe]

    def __bool__(self) -> bool:
        return bool(self.delays or self.poisons)


WARP_IN_GROUP = "((threadIdx.x / 32) % 4)"

# callees whose first argument is an accumulator/tile written (a write site of a staging tile)
_STORE_CALL = re.compile(r"(?<![\w.>])(?:kittens::)?(?:warpgroup|warp|group\s*<\s*\d+\s*>)?\s*(?:::)?\s*store\s*\(")
_TMA_STORE = re.compile(r"(?<![\w.>])(?:kittens::)?tma\s*::\s*store_async\s*\(")
_READ_WAIT = re.compile(r"(?<![\w.>])(?:kittens::)?tma\s*::\s*store_async(?:_read)?_wait\s*(?:<[^>]*>)?\s*\(")


def _rows(f: Finding, pattern: str) -> list[int]:
    return [r.location.row for r in getattr(f, "related", []) if re.search(pattern, r.message)]


def _same_file(f: Finding, loc: Location, name: str) -> bool:
    return Path(loc.filename).name == name


def _line(text: str, row: int) -> str:
    lines = text.split("\n")
    return lines[row - 1] if 0 < row <= len(lines) else ""


def _tma_store_tile(text: str, row: int) -> str | None:
    from .instrument import _split_args

    lines = text.split("\n")
    if not 0 < row <= len(lines):
        return None
    off = sum(len(ln) + 1 for ln in lines[: row - 1])
    m = _TMA_STORE.search(lines[row - 1])
    if not m:
        return None
    sp = _split_args(text, off + m.end() - 1)
    if sp is None or len(sp[0]) < 2:
        return None
    return sp[0][1]


_LOAD = re.compile(r"(?<![\w.>])(?:kittens::)?tma\s*::\s*load_async\s*(?:<[^>]*>)?\s*\(")
_WAIT = re.compile(r"(?<![\w.>:])(?:kittens::)?wait\s*\(")


def _load_tile(text: str, row: int) -> str | None:
    """The destination tile of the `tma::load_async` on `row`, as spelled."""
    from .instrument import _split_args

    lines = text.split("\n")
    if not 0 < row <= len(lines):
        return None
    m = _LOAD.search(lines[row - 1])
    if not m:
        return None
    off = sum(len(ln) + 1 for ln in lines[: row - 1])
    sp = _split_args(text, off + m.end() - 1)
    return sp[0][0] if sp and sp[0] else None


def _wait_before(text: str, row: int, within: int = 4) -> int | None:
    """The row of the mbarrier wait just before `row` (the producer's wait on the release)."""
    lines = text.split("\n")
    for r in range(row - 1, max(0, row - 1 - within), -1):
        if _WAIT.search(lines[r - 1].split("//")[0]):
            return r
    return None


def _prev_code_row(text: str, row: int) -> int | None:
    lines = text.split("\n")
    r = row - 1
    while r >= 1:
        s = lines[r - 1].strip()
        if s and not s.startswith("//"):
            return r
        r -= 1
    return None


class _Edits:
    """The widening being built for one copy: its edits, each site edited once."""

    def __init__(self, text: str, name: str) -> None:
        self.text, self.name = text, name
        self.w = Widening()
        self._seen: set[tuple[str, int] | tuple[str, int, str]] = set()

    def delay(self, row: int, cycles: str, cond: str, why: str) -> None:
        if ("d", row) in self._seen:
            return
        self._seen.add(("d", row))
        self.w.delays.append(Delay(row, cycles, cond, why))

    def poison(self, row: int, tile: str, anchor: str, why: str) -> None:
        if ("p", row, tile) in self._seen:
            return
        self._seen.add(("p", row, tile))
        self.w.poisons.append(ReleasePoison(row, tile, anchor=anchor, why=why))


# ------------------------------------------------------------------ the widenings
# Each takes the edits being built and one finding; a rule asks for them by name
# (`Rule.confirm.widen`, tkcheck/rule.py), applied in the order it lists them.


def _delay_wgmma_issue(e: _Edits, f: Finding) -> None:
    """The consumer waits in front of the wgmma issue, so the producer is parked on the release."""
    mma = _rows(f, r"wgmma .*issued here")
    if mma:
        r = min(mma)
        e.delay(
            r,
            str(DELAY_CYCLES),
            "",
            f"widening: the consumer waits ~4us before the wgmma issue at {e.name}:{r} so the "
            f"producer is parked on the release barrier and refills (poisons) the stage at once",
        )


def _poison_refill(e: _Edits, f: Finding) -> None:
    """The refill made immediate: the producer overwrites the refilled tile right after its wait
    on the release barrier, before its other loads."""
    row, name = f.location.row, e.name
    tile = _load_tile(e.text, row)
    wr = _wait_before(e.text, row)
    if tile is not None and wr is not None:
        e.poison(
            wr,
            tile,
            "wait",
            f"widening: {tile} is poisoned right after the producer's wait at {name}:{wr} (the "
            f"refill at {name}:{row}, made immediate)",
        )


def _stagger_writers(e: _Edits, f: Finding) -> None:
    """The writers the finding names, staggered by warp in front of their write."""
    writes = _rows(f, r"write .* here")
    if writes:
        r = min(writes)
        e.delay(
            r,
            f"{WARP_IN_GROUP} * {STAGGER_CYCLES}",
            f"{WARP_IN_GROUP} != 0",
            f"widening: warps 1-3 of each warpgroup wait (w x ~30us) before their write at {e.name}:{r}",
        )


def _stagger_writers_before_barrier(e: _Edits, f: Finding) -> None:
    """The write just in front of the finding's barrier, staggered by warp."""
    row, name, text = f.location.row, e.name, e.text
    r = _prev_code_row(text, row)
    if r is not None and _STORE_CALL.search(_line(text, r)):
        e.delay(
            r,
            f"{WARP_IN_GROUP} * {STAGGER_CYCLES}",
            f"{WARP_IN_GROUP} != 0",
            f"widening: the writers before the shared barrier at {name}:{row} are staggered by warp "
            f"(w x ~30us at {name}:{r}), so the barrier can complete with the other group's warps",
        )
    else:
        e.w.notes.append(f"{f.code} at {name}:{row}: no write in front of the barrier; not widened")


def _delay_load(e: _Edits, f: Finding) -> None:
    """The finding's load issued late (after its stage is poisoned)."""
    row = f.location.row
    e.delay(
        row,
        str(LONG_DELAY_CYCLES),
        "",
        f"widening: the misrouted load at {e.name}:{row} is issued ~10us late (after its stage is "
        f"poisoned), so the stage's barrier completes without it",
    )


def _poison_released_stores(e: _Edits, f: Finding) -> None:
    """The tiles of the stores the finding names, poisoned at their release (or after the store
    issue when the finding names no release)."""
    row, name, text = f.location.row, e.name, e.text
    rel = _rows(f, r"released here")
    stores = _rows(f, r"store_async reads")
    tile = _tma_store_tile(text, min(stores)) if stores else None
    if tile is None:
        e.w.notes.append(f"{f.code} at {name}:{row}: the store's tile is not named; not widened")
    elif rel:
        # every tile stored between the named store and the release (none of them is waited
        # for), the last issued first: the engine reads it last
        tiles = [t for r in range(min(stores), min(rel)) if (t := _tma_store_tile(text, r))] or [tile]
        tiles = list(dict.fromkeys(tiles))  # edits at one point apply inside out: the last tile is poisoned first
        for t in tiles:
            e.poison(
                min(rel),
                t,
                "arrive",
                f"widening: {t} is poisoned right after its release at {name}:{min(rel)} (the next "
                f"writer's overwrite, made immediate)",
            )
    else:
        e.poison(
            min(stores),
            tile,
            "store_async",
            f"widening: {tile} is poisoned right after the store issue at {name}:{min(stores)} "
            f"(nothing waits for the store before it is released)",
        )


def _poison_after_store(e: _Edits, f: Finding) -> None:
    """The tile of the finding's store, poisoned after the store issue on the exiting path."""
    row, name = f.location.row, e.name
    tile = _tma_store_tile(e.text, row)
    if tile is not None:
        e.poison(
            row,
            tile,
            "store_async",
            f"widening: {tile} is poisoned after the store issue at {name}:{row} on the exiting path "
            f"(what the SM's next CTA may write into the freed shared memory)",
        )


def _poison_after_read_wait(e: _Edits, f: Finding) -> None:
    """The tile of the finding's store, poisoned after the store's own read wait."""
    row, name, text = f.location.row, e.name, e.text
    tile = _tma_store_tile(text, row)
    lines = text.split("\n")
    rw = next((r for r in range(row, min(row + 4, len(lines)) + 1) if _READ_WAIT.search(lines[r - 1])), None)
    if tile is not None and rw is not None:
        e.poison(
            rw,
            tile,
            "store_async",
            f"widening: {tile} is poisoned after each duplicate store's ({name}:{row}) own read wait at {name}:{rw} "
            f"(the rewrite that follows, made immediate)",
        )


WIDENINGS = {
    "delay-wgmma-issue": _delay_wgmma_issue,
    "poison-refill": _poison_refill,
    "stagger-writers": _stagger_writers,
    "stagger-writers-before-barrier": _stagger_writers_before_barrier,
    "delay-load": _delay_load,
    "poison-released-stores": _poison_released_stores,
    "poison-after-store": _poison_after_store,
    "poison-after-read-wait": _poison_after_read_wait,
}


def rule_confirm(f: Finding) -> Confirm:
    """What the finding's rule asks of `tkcheck confirm` (nothing for an unknown code)."""
    from .. import registry

    rule = registry.by_code().get(f.code)
    return rule.confirm if rule is not None else Confirm()


def widening(findings: Iterable[Finding], text: str, filename: str) -> Widening:
    """The race-widening edits for `findings` of the user's file `filename` (text `text`)."""
    name = Path(filename).name
    e = _Edits(text, name)
    w = e.w
    init_rows: list[int] = []
    for f in findings:
        if not _same_file(f, f.location, name):
            continue
        c = rule_confirm(f)
        if c.wgmma_race:
            w.wgmma_race = True
        if "hang" in (f.symptom or ""):
            w.hang = True
        for how in c.widen:
            WIDENINGS[how](e, f)
        if c.init_probe:
            init_rows += _rows(f, r"initiali[sz]ed here")
            w.init_probe_rows.add(f.location.row)
    if init_rows:
        # the first init the thread runs (straight-line init code: the smallest line) is held back;
        # the probe's state is 1 from just before the hold until that init ran
        r = min(init_rows)
        w.delays.append(
            Delay(
                r,
                str(LONG_DELAY_CYCLES),
                "",
                before="::tkcheck_init_first()",
                why=f"widening: the initialising thread waits ~10us before the first init at "
                f"{name}:{r}; waits that start meanwhile are reported (use before init)",
            )
        )
        w.poisons.append(
            ReleasePoison(
                r,
                "",
                anchor="init",
                code="::tkcheck_init_mark(2)",
                probe=True,
                why=f"the init at {name}:{r} marks the block initialised",
            )
        )
        w.init_probe = True
    # one delay in front of the first wgmma of the loop body: a delay between two wgmmas of the
    # same stage would let the first finish reading before the release
    mma_rows = sorted(d.line for d in w.delays if "before the wgmma issue" in d.why)
    w.delays = [d for d in w.delays if "before the wgmma issue" not in d.why or d.line == mma_rows[0]]
    return w


def plan_for(w: Widening | None) -> Plan:
    """The instrumentation plan for a copy carrying widening `w`.

    * wgmma races (`Confirm.wgmma_race`): no watchdog, phase log or stage checks - each is a call, and a
      call inside the consumer's wgmma pipeline makes ptxas wait for the wgmma (C7510), which
      removes the very race being confirmed; producer-side poisoning stays (inlined);
    * delays: no NaN-row scan at the store issue - a one-thread scan of the tile takes longer
      than the delays that open the window, so it would close it again;
    * the use-before-init probe needs the watchdog's waits, and so does a variant with a finding that
      predicts a hang (a wgmma race there rides along; the hang is what shows).
    """
    from .instrument import Plan

    if w is None or not w:
        return Plan()
    if w.wgmma_race and not w.init_probe and not w.hang:
        return Plan(watchdog=False, phase_log=False, poison=True, nan_rows=False, widening=w)
    return Plan(
        nan_rows=not w.delays, widening=w, init_probe=w.init_probe, init_probe_rows=tuple(sorted(w.init_probe_rows))
    )
