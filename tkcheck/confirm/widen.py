"""Race widening: per-finding source edits that make a racy interleaving likely at run time.

A race that passes on the GPU is not disproved: the bad interleaving was just unlikely. For the
findings whose class is a race, `widening(findings, text)` chooses a minimal, source-level edit
tied to the sites the finding names (`Finding.location` / `related`), applied only to the
instrumented copy; nothing is reordered:

* delay (`::tkcheck_delay(cycles)`, an inlined clock64 spin behind compiler barriers) in front
  of a statement:
  - TK206 (operand refilled while the MMA may read it): the consumer, in front of the wgmma
    issue, so that the producer is already parked on the release barrier;
  - TK401 / TK404 (store reads rows other warps write; barrier shared by two groups): the
    writers, in front of the write, staggered by warp (warp w of its warpgroup waits w x ~30 us),
    so the storing lane (or a barrier completed by the wrong warps) goes ahead of late writers;
  - TK305 (load completes on another stage's barrier): the misrouted load's issue, after its
    stage is poisoned, so the stage's barrier can complete without it;
  - TK307 (no barrier after mbarrier init): the initialising thread, in front of its first init,
    with a probe: a wait that starts while the init is held back is reported (TKCHECK_ORDER);
* poison (`::tkcheck_poison(tile)`, written back to front, + `fence.proxy.async`; 0xFF = NaN)
  right after the point where the program lets a tile be rewritten:
  - TK206: the refilled tile, right after the producer's wait on the release barrier (the
    refill made immediate);
  - TK306: every tile stored without a read wait, after the release (or, when the finding names
    none, after the store issue: nothing between them waits for the store);
  - TK504: after the store issue on the exiting path - what the next CTA on the SM may write into
    the freed shared memory;
  - TK403: after each duplicate store's own read wait - the tile rewrite that follows.

`plan_for(w)` picks the rest of the instrumentation to go with a widening (see there).
Findings of other classes get no widening. The descriptions are shown in the verdict ("ran").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

DELAY_CYCLES = 8000            # about 4 us at 1.98 GHz
LONG_DELAY_CYCLES = 20000      # about 10 us
# per-warp step for staggered writers: well above what the instrumented copy adds on the racing
# path (an H200 run with 4 us steps passed because the store issue's own checks took longer)
STAGGER_CYCLES = 60000         # about 30 us


@dataclass
class Delay:
    line: int                   # the user's line; inserted in front of the statement there
    cycles: str                 # C expression (may depend on the warp)
    cond: str = ""              # C condition, empty: every thread that reaches the line
    why: str = ""
    before: str = ""            # C expression run (under `cond`) just before the delay


@dataclass
class ReleasePoison:
    line: int                   # the statement after which the tile is poisoned
    tile: str                   # C expression of the tile
    after: str = "statement"    # "statement": after the statement holding `anchor` on `line`
    anchor: str = ""            # a callee (suffix) on `line` whose statement ends the insertion point
    why: str = ""
    code: str = ""              # instead of the poison: this C expression after the call
    probe: bool = False         # bookkeeping for a probe, not a widening: not shown in the verdict


@dataclass
class Widening:
    delays: list[Delay] = field(default_factory=list)
    poisons: list[ReleasePoison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    init_probe: bool = False     # TK307: the copy reports waits that start before the first init
    init_probe_rows: set[int] = field(default_factory=set)   # ... at these use sites (the findings')
    wgmma_race: bool = False     # TK201/TK206: keep calls out of the consumer's wgmma pipeline
    hang: bool = False           # a finding predicts a hang: the watchdog's evidence comes first

    def describe(self) -> list[str]:
        return [d.why for d in self.delays] + [p.why for p in self.poisons if not p.probe]

    def __bool__(self) -> bool:
        return bool(self.delays or self.poisons)


WARP_IN_GROUP = "((threadIdx.x / 32) % 4)"

# callees whose first argument is an accumulator/tile written (a write site of a staging tile)
_STORE_CALL = re.compile(r"(?<![\w.>])(?:kittens::)?(?:warpgroup|warp|group\s*<\s*\d+\s*>)?\s*(?:::)?\s*store\s*\(")
_TMA_STORE = re.compile(r"(?<![\w.>])(?:kittens::)?tma\s*::\s*store_async\s*\(")
_READ_WAIT = re.compile(r"(?<![\w.>])(?:kittens::)?tma\s*::\s*store_async(?:_read)?_wait\s*(?:<[^>]*>)?\s*\(")


def _rows(f, pattern: str) -> list[int]:
    return [r.location.row for r in getattr(f, "related", []) if re.search(pattern, r.message)]


def _same_file(f, loc, name: str) -> bool:
    return Path(loc.filename).name == name


def _line(text: str, row: int) -> str:
    lines = text.split("\n")
    return lines[row - 1] if 0 < row <= len(lines) else ""


def _tma_store_tile(text: str, row: int) -> str | None:
    from .instrument import _split_args
    lines = text.split("\n")
    if not 0 < row <= len(lines):
        return None
    off = sum(len(ln) + 1 for ln in lines[:row - 1])
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
    off = sum(len(ln) + 1 for ln in lines[:row - 1])
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


def widening(findings, text: str, filename: str) -> Widening:
    """The race-widening edits for `findings` of the user's file `filename` (text `text`)."""
    name = Path(filename).name
    w = Widening()
    seen: set[tuple] = set()

    def delay(row, cycles, cond, why):
        if ("d", row) in seen:
            return
        seen.add(("d", row))
        w.delays.append(Delay(row, cycles, cond, why))

    def poison(row, tile, anchor, why):
        if ("p", row, tile) in seen:
            return
        seen.add(("p", row, tile))
        w.poisons.append(ReleasePoison(row, tile, anchor=anchor, why=why))

    init_rows: list[int] = []
    for f in findings:
        if not _same_file(f, f.location, name):
            continue
        code, row = f.code, f.location.row
        if code in ("TK201", "TK206"):
            w.wgmma_race = True
        if "hang" in (f.symptom or ""):
            w.hang = True
        if code == "TK206":
            mma = _rows(f, r"wgmma .*issued here")
            if mma:
                r = min(mma)
                delay(r, str(DELAY_CYCLES), "",
                      f"widening: the consumer waits ~4us before the wgmma issue at {name}:{r} so the "
                      f"producer is parked on the release barrier and refills (poisons) the stage at once")
            # the refill made immediate: the producer overwrites the refilled tile right after its wait
            # on the release barrier, before its other loads
            tile = _load_tile(text, row)
            wr = _wait_before(text, row)
            if tile is not None and wr is not None:
                poison(wr, tile, "wait",
                       f"widening: {tile} is poisoned right after the producer's wait at {name}:{wr} (the "
                       f"refill at {name}:{row}, made immediate)")
        elif code == "TK401":
            writes = _rows(f, r"write .* here")
            if writes:
                r = min(writes)
                delay(r, f"{WARP_IN_GROUP} * {STAGGER_CYCLES}", f"{WARP_IN_GROUP} != 0",
                      f"widening: warps 1-3 of each warpgroup wait (w x ~30us) before their write at {name}:{r}")
        elif code == "TK404":
            r = _prev_code_row(text, row)
            if r is not None and _STORE_CALL.search(_line(text, r)):
                delay(r, f"{WARP_IN_GROUP} * {STAGGER_CYCLES}", f"{WARP_IN_GROUP} != 0",
                      f"widening: the writers before the shared barrier at {name}:{row} are staggered by warp "
                      f"(w x ~30us at {name}:{r}), so the barrier can complete with the other group's warps")
            else:
                w.notes.append(f"TK404 at {name}:{row}: no write in front of the barrier; not widened")
        elif code == "TK305":
            delay(row, str(LONG_DELAY_CYCLES), "",
                  f"widening: the misrouted load at {name}:{row} is issued ~10us late (after its stage is "
                  f"poisoned), so the stage's barrier completes without it")
        elif code == "TK307":
            init_rows += _rows(f, r"initiali[sz]ed here")
            w.init_probe_rows.add(row)
        elif code == "TK306":
            rel = _rows(f, r"released here")
            stores = _rows(f, r"store_async reads")
            tile = _tma_store_tile(text, min(stores)) if stores else None
            if tile is None:
                w.notes.append(f"TK306 at {name}:{row}: the store's tile is not named; not widened")
            elif rel:
                # every tile stored between the named store and the release (none of them is waited
                # for), the last issued first: the engine reads it last
                tiles = [t for r in range(min(stores), min(rel)) if (t := _tma_store_tile(text, r))] or [tile]
                tiles = list(dict.fromkeys(tiles))   # edits at one point apply inside out: the last tile is poisoned first
                for t in tiles:
                    poison(min(rel), t, "arrive",
                           f"widening: {t} is poisoned right after its release at {name}:{min(rel)} (the next "
                           f"writer's overwrite, made immediate)")
            else:
                poison(min(stores), tile, "store_async",
                       f"widening: {tile} is poisoned right after the store issue at {name}:{min(stores)} "
                       f"(nothing waits for the store before it is released)")
        elif code == "TK504":
            tile = _tma_store_tile(text, row)
            if tile is not None:
                poison(row, tile, "store_async",
                       f"widening: {tile} is poisoned after the store issue at {name}:{row} on the exiting path "
                       f"(what the SM's next CTA may write into the freed shared memory)")
        elif code == "TK403":
            tile = _tma_store_tile(text, row)
            lines = text.split("\n")
            rw = next((r for r in range(row, min(row + 4, len(lines)) + 1) if _READ_WAIT.search(lines[r - 1])), None)
            if tile is not None and rw is not None:
                poison(rw, tile, "store_async",
                       f"widening: {tile} is poisoned after each duplicate store's ({name}:{row}) own read wait at {name}:{rw} "
                       f"(the rewrite that follows, made immediate)")
    if init_rows:
        # the first init the thread runs (straight-line init code: the smallest line) is held back;
        # the probe's state is 1 from just before the hold until that init ran
        r = min(init_rows)
        w.delays.append(Delay(r, str(LONG_DELAY_CYCLES), "", before="::tkcheck_init_first()",
                              why=f"widening: the initialising thread waits ~10us before the first init at "
                                  f"{name}:{r}; waits that start meanwhile are reported (use before init)"))
        w.poisons.append(ReleasePoison(r, "", anchor="init", code="::tkcheck_init_mark(2)", probe=True,
                                       why=f"the init at {name}:{r} marks the block initialised"))
        w.init_probe = True
    # one delay in front of the first wgmma of the loop body: a delay between two wgmmas of the
    # same stage would let the first finish reading before the release
    mma_rows = sorted(d.line for d in w.delays if "before the wgmma issue" in d.why)
    w.delays = [d for d in w.delays if "before the wgmma issue" not in d.why or d.line == mma_rows[0]]
    return w


def plan_for(w: Widening | None):
    """The instrumentation plan for a copy carrying widening `w`.

    * wgmma races (TK201/TK206): no watchdog, phase log or stage checks - each is a call, and a
      call inside the consumer's wgmma pipeline makes ptxas wait for the wgmma (C7510), which
      removes the very race being confirmed; producer-side poisoning stays (inlined);
    * delays: no NaN-row scan at the store issue - a one-thread scan of the tile takes longer
      than the delays that open the window, so it would close it again;
    * the TK307 probe needs the watchdog's waits, and so does a variant with a finding that
      predicts a hang (a wgmma race there rides along; the hang is what shows).
    """
    from .instrument import Plan
    if w is None or not w:
        return Plan()
    if w.wgmma_race and not w.init_probe and not w.hang:
        return Plan(watchdog=False, phase_log=False, poison=True, nan_rows=False, widening=w)
    return Plan(nan_rows=not w.delays, widening=w, init_probe=w.init_probe,
                init_probe_rows=tuple(sorted(w.init_probe_rows)))
