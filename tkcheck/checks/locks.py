"""Global spin locks as primitives (issue 25, round 9): an acquiring spin on a read-modify-write
of a lock word, its release, and the accesses between them.

A lock is read from the events, not from names:

* the **take**: a SPIN whose condition tests the old value of one read-modify-write in its loop
  (a GLOBAL_SIGNAL `cas` or `exch`: `while (atomicCAS(lock, 0, 1) != 0)`,
  `while (atomicExch(lock, 1) != 0)`) on one word of global memory
  (`GlobalAccessFacts.where`), such that the loop goes on exactly while the RMW did not find the
  word free: z3 proves `cond(old) <=> old != free`, `free` the CAS's compare value (for an
  exchange, a constant of the condition), and the value the take writes (`taken`) is not `free`;
* the **releases**: the later writes of the same word by the holding threads, at the top level
  after the spin; the first one ends the **held** region (the ops between the loop and it).

Every other spin on a read-modify-write (a `do {} while` over a carried old value, a
`for (;;) { if (cas == 0) break; }`, a spin inside a loop or under a block-uniform condition, a
lock word written elsewhere or through an address not known) is **undecided** (coverage, with
the user's line), never a silent pass and never a finding.

Three questions are answered here (the rules word them; none is asked of another rule):

* progress (`never_freed`): the word starts free (the host zeroes it before the launch,
  the assumption spin_waits makes too, stated in the finding) and the first holder passes; when
  neither the take nor any release ever writes the free value again (z3, every value of the
  unknowns), the second acquisition -- a second holder thread of the block, or the holder of a
  second block of the grid (stated: a launch of two or more blocks) -- spins forever. A lock whose
  first release is unconditional and proved to write the free value is decided freed.
* lanes (`lanes`): two or more lanes of one warp take the one lock word while its release
  follows the loop: the lane that wins leaves the loop and must reach the release, which the
  compiler puts after the warp's reconvergence point; its warp-mates spin on the lock it holds
  (observed on H100 to hang: corpus/idioms7 `sl-all-lanes-of-warp0`).
* protection (`unprotected`, asked by `happens_before.memory`): global data at one word
  (`p->f`, `*p`) written with plain stores in a kernel whose only cross-block synchronisation is
  its locks. Accesses all inside the held regions of one lock are ordered by the lock's
  release -> acquire chain (whether the fences make that chain a release and an acquire is the
  publication and acquisition queries' question); a store and an access of that word, both run
  by a thread of every block, one of them outside every held region, are unordered between two
  blocks: a data race (stated: a launch of two or more blocks). Any other op that may order
  blocks (another spin, another atomic, an acquiring or volatile load, a grid barrier, an
  unmodelled call), an access inside a loop or under a condition, leaves it undecided.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

RMW_TAKES = ("cas", "exch")


@dataclass
class Lock:
    spin: ir.Op  # the SPIN head of the acquiring loop
    take: ir.Op  # the read-modify-write whose old value the loop tests
    base: str  # the kernel pointer the lock word is in
    where: str  # the word within it (GlobalAccessFacts.where)
    free: E.Expr  # the value the take finds when it succeeds
    taken: E.Expr  # the value the take writes
    releases: list[ir.Op]  # the later writes of the word by the holders, in program order
    held: list[ir.Op]  # the ops between the loop and the first release
    holders: frozenset[int]  # the threads of a block that take it
    # a lock word per block: `locks[i]` with i over the block index (never the thread index, nor
    # a loop counter): the element; None for one word of the grid (`where`)
    index: E.Expr | None = None

    @property
    def word(self) -> str:
        if self.index is not None:
            return f"{self.base}[{self.index}]"
        return f"*{self.base}" if not self.where else f"{self.base}{self.where}"


@dataclass
class NeverFreed:
    lock: Lock
    values: list[tuple[ir.Op, E.Expr]]  # each write of the word after the first pass and its value
    second: str  # who takes it second: "a second thread of the block" / "the holder of a second block"
    grid: str = ""  # why there is a second block (`second_block`), "" when a second thread is


def second_block(an: Analysis) -> str | None:
    """Why a second block runs the kernel: the file's launches of it (`GridLaunch.blocks`, when
    every one is known to have two or more blocks), else the assumption, stated; None when a
    launch of one block is known (then two blocks are not given)."""
    grid = an.model.grid
    base = an.model.name.split(" [op ")[0].split("<")[0].split("::")[-1]
    launches = [g for _i, g in grid.launches_of(base)] if grid is not None else []
    if any(g.blocks is not None and g.blocks < 2 for g in launches):
        return None
    if launches and all(g.blocks is not None for g in launches):
        shown = ", ".join(f"line {g.location.row}: {g.blocks} blocks" for g in launches[:3])
        return f"the launches of this file ({shown})"
    return "assumed: a launch of two or more blocks"


@dataclass
class LaneContention:
    lock: Lock
    warp: int
    lanes: int


@dataclass
class Unprotected:
    """Two accesses of one word of global data, at least one a store, at least one outside every
    held region of the kernel's locks: unordered between two blocks."""

    first: ir.Op  # outside the held regions
    second: ir.Op  # the store (or the other access), possibly inside one
    lock: Lock | None  # the lock the data is (elsewhere) accessed under, or the kernel's lock
    word: str
    grid: str = ""  # why two blocks run it (`second_block`)
    untested: Untested | None = None  # the kernel has no lock, only this take whose result nothing tests


@dataclass
class Untested:
    """A read-modify-write that would take a lock word (an exchange or compare-and-swap, a
    libcu++ semaphore's `try_acquire()`) whose old value no op of the kernel reads: the thread goes
    on whether it took the word or not. With the later writes of the word (`writes`: its
    releases), the only ops that may order blocks, two blocks may both pass their takes before
    either releases: nothing orders what they do between."""

    take: ir.Op
    writes: list[ir.Op]  # the other writes of the lock word's memory, all after the take

    @property
    def word(self) -> str:
        ga = self.take.global_access
        assert ga is not None
        return ga.text or f"{ga.base}"


@dataclass
class LockFacts:
    locks: list[Lock] = field(default_factory=list)
    never_freed: list[NeverFreed] = field(default_factory=list)
    freed: list[Lock] = field(default_factory=list)  # progress decided: the first release frees it
    lanes: list[LaneContention] = field(default_factory=list)
    # (op, why): spins on read-modify-writes not read as a lock, lock questions left open
    undecided: list[tuple[ir.Op, str]] = field(default_factory=list)
    untested: list[Untested] = field(default_factory=list)  # only where the kernel has no lock


def locks(an: Analysis) -> LockFacts:
    """The kernel's global spin locks and their progress (see the module's text)."""
    return an.fact("locks.locks", _locks)


def _ga(o: ir.Op) -> ir.GlobalAccessFacts | None:
    return o.global_access


def _writes_global(o: ir.Op) -> bool:
    return o.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE, ir.TMA_STORE)


def _locks(an: Analysis) -> LockFacts:
    out = LockFacts()
    ops = an.model.ops
    for sp in ops:
        if sp.kind != ir.SPIN or not sp.loops:
            continue
        lid = sp.loops[-1]
        body = [o for o in ops if lid in o.loops]
        rmws = [o for o in body if o.kind == ir.GLOBAL_SIGNAL and (ga := _ga(o)) is not None and ga.atomic in RMW_TAKES]
        if not rmws:
            continue  # a poll of a flag (protocol.spin_waits), not a lock
        lock = _read_lock(an, sp, body, rmws, out)
        if lock is not None:
            out.locks.append(lock)
            _progress(an, lock, out)
            _lanes(an, lock, out)
    if not out.locks and not out.undecided:
        out.untested = _untested(an)
    return out


def _untested(an: Analysis) -> list[Untested]:
    """The kernel's takes whose old value the source throws away (`Untested`,
    `GlobalAccessFacts.discarded`): an exchange or CAS outside loops, on one base that nothing but
    it and later atomic writes of that base write."""
    ops = an.model.ops
    out = []
    for tk in ops:
        ga = _ga(tk)
        if tk.kind != ir.GLOBAL_SIGNAL or ga is None or ga.atomic not in RMW_TAKES or not ga.discarded or tk.loops:
            continue
        if ga.base is None or any(o.kind in (ir.CALL, ir.TMA_STORE) for o in ops):
            continue
        writes = [
            o for o in ops if o is not tk and _writes_global(o) and (_ga(o) is None or _ga(o).base in (None, ga.base))
        ]  # type: ignore[union-attr]
        if any(
            o.order < tk.order or _ga(o) is None or _ga(o).base is None or o.kind != ir.GLOBAL_SIGNAL for o in writes
        ):  # type: ignore[union-attr]
            continue
        out.append(Untested(tk, writes))
    return out


def _read_lock(an: Analysis, sp: ir.Op, body: list[ir.Op], rmws: list[ir.Op], out: LockFacts) -> Lock | None:
    from .. import solver

    def undecided(why: str) -> None:
        out.undecided.append((sp, f"spin on a read-modify-write (a lock?): {why}"))

    facts = sp.spin
    cond = facts.cond if facts is not None else None
    if facts is not None and cond is None and facts.breaks and facts.goes_on is not None:
        # `for (;;) { if (atomicCAS(l, 0, 1) == 0) break; backoff; }`: left by its one break
        cond = facts.goes_on
    elif facts is not None and facts.breaks:
        cond = None
    if cond is None or facts is None:
        undecided("a loop shape the lock model does not read (a `break`, or a condition over a carried value)")
        return None
    names = {v.name for v in cond.free_vars()}
    read = [o for o in rmws if _ga(o).result and _ga(o).result in names]  # type: ignore[union-attr]
    polls = [
        o
        for o in body
        if o.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL) and _ga(o) is not None and _ga(o).result in names
    ]  # type: ignore[union-attr]
    if len(read) != 1 or len(polls) != 1:
        undecided("the condition does not test the old value of exactly one read-modify-write")
        return None
    take = read[0]
    ga = _ga(take)
    assert ga is not None and ga.result is not None
    index = _block_index(ga)
    if ga.base is None or (ga.where is None and index is None):
        undecided("the lock word is not one known address, nor an element per block")
        return None
    old = next(v for v in cond.free_vars() if v.name == ga.result)
    ops_ = ga.operands
    if ga.atomic == "cas":
        cands = [ops_[0]] if len(ops_) == 2 and ops_[0] is not None else []
        taken = ops_[1] if len(ops_) == 2 else None
    else:
        cands = [c for c in E.subexprs(cond) if isinstance(c, E.Const) and isinstance(c.value, int)]
        taken = ops_[0] if ops_ else None
    if taken is None or not cands:
        undecided("the values the read-modify-write compares or writes are not known")
        return None
    free = None
    for c in cands:
        # the loop goes on exactly while the take did not find the word free
        if (
            solver.always(E.negate(E.substitute(cond, {ga.result: c}))) is True
            and solver.always(E.disj(E.binop("==", old, c), cond)) is True
        ):
            free = c
            break
    if free is None:
        undecided("the loop's condition is not `old != free` of the read-modify-write")
        return None
    if ga.atomic == "cas" and solver.always(E.binop("!=", taken, free)) is not True:
        undecided("the take is not proved to write a value other than the free one")
        return None
    if len(sp.loops) != 1 or sp.guard.uniform or not sp.guard.exact:
        undecided("a lock taken inside a loop or under a block-uniform condition")
        return None
    if any(o.kind in (ir.EXIT, ir.CALL) for o in body):
        undecided("the loop can end otherwise (a return or an unmodelled call)")
        return None
    holders = an.threads.executing(sp)
    if not holders:
        undecided("the threads that take the lock are not known")
        return None
    end = max(o.order for o in body)
    releases, others = [], []
    for w in an.model.ops:
        if w is take or not _writes_global(w):
            continue
        wga = _ga(w)
        if w.kind == ir.TMA_STORE or wga is None or wga.base is None:
            undecided(f"a write whose address is not known (line {w.location.row}) may be the lock word's")
            return None
        if wga.base != ga.base:
            continue
        if w.order > end and not w.loops and wga.where == ga.where and wga.index == ga.index:
            releases.append(w)
        else:
            others.append(w)
    if others:
        undecided(f"the lock word's memory is written elsewhere (line {others[0].location.row})")
        return None
    if any(o.kind == ir.CALL for o in an.model.ops):
        undecided("an unmodelled call may write the lock word")
        return None
    for r in releases:
        tr = an.threads.executing(r)
        if tr is None or not tr <= holders:
            undecided(f"the lock is written (line {r.location.row}) by threads that may not hold it")
            return None
    first = releases[0].order if releases else None
    lid = sp.loops[-1]
    held = [o for o in an.model.ops if o.order > end and (first is None or o.order < first) and lid not in o.loops]
    return Lock(sp, take, ga.base, ga.where or "", free, taken, releases, held, holders, index)


def _block_index(ga: ir.GlobalAccessFacts) -> E.Expr | None:
    """The element of a lock word that is one per block (`sems[blockIdx.x % 8]`): its index
    when it is known and reads no thread index, loop counter or unknown; None otherwise."""
    ix = ga.index
    if ga.where is not None or ix is None or ix.is_opaque():
        return None
    if ix.depends_on(E.THREAD) or ix.depends_on(E.LOOP):
        return None
    return ix


def _value(w: ir.Op) -> E.Expr | None:
    """The value a release writes to the lock word: an exchange's operand, a plain store's
    value (`*(volatile int *)lock = 0`); None when not known (an add, a store of `+=`)."""
    ga = _ga(w)
    if ga is None or not ga.operands or ga.operands[0] is None:
        return None
    if (w.kind == ir.GLOBAL_SIGNAL and ga.atomic in ("exch", "st")) or w.kind == ir.GLOBAL_STORE:
        return ga.operands[0]
    return None


def _progress(an: Analysis, lock: Lock, out: LockFacts) -> None:
    from .. import solver

    sp = lock.spin
    if lock.releases:
        first = lock.releases[0]
        v = _value(first)
        if (
            v is not None
            and first.guard.exact
            and not first.guard.uniform
            and an.threads.executing(first) == lock.holders
            and solver.always(E.binop("==", v, lock.free)) is True
        ):
            out.freed.append(lock)
            return
    if lock.index is not None:
        # which blocks share one element is not asked of the progress question
        out.undecided.append((sp, "lock progress: a lock word per block, not freed by its first release"))
        return
    # the word starts free (taken to be 0 before the launch) and the first holder passes
    if solver.always(E.binop("==", lock.free, E.Const(0))) is not True:
        out.undecided.append((sp, "lock progress: the free value is not the word's initial 0"))
        return
    values = []
    for w in lock.releases:
        v = _value(w)
        if v is None:
            out.undecided.append((sp, f"lock progress: the value written at line {w.location.row} is not known"))
            return
        values.append((w, v))
    for _w, v in values + [(lock.take, lock.taken)]:
        if solver.always(E.binop("!=", v, lock.free)) is not True:
            out.undecided.append((sp, "lock progress: a release may write the free value only on some paths"))
            return
    if len(lock.holders) > 1:
        out.never_freed.append(NeverFreed(lock, values, "a second thread of the block"))
        return
    grid = second_block(an)
    if grid is None:
        out.undecided.append((sp, "lock progress: a launch of one block (one holder) is in the file"))
        return
    out.never_freed.append(NeverFreed(lock, values, "the holder of a second block", grid))


def _lanes(an: Analysis, lock: Lock, out: LockFacts) -> None:
    per_warp: dict[int, int] = {}
    for t in lock.holders:
        per_warp[t // 32] = per_warp.get(t // 32, 0) + 1
    crowded = sorted((w, n) for w, n in per_warp.items() if n > 1)
    if crowded and lock.releases:
        w, n = crowded[0]
        out.lanes.append(LaneContention(lock, w, n))


# ------------------------------------------------------------------ protection ----


def _may_order_blocks(o: ir.Op, lock_ops: set[int]) -> bool:
    """An op other than the locks' own that may order threads of different blocks."""
    if id(o) in lock_ops:
        return False
    if o.kind in (ir.SPIN, ir.CALL, ir.GLOBAL_SIGNAL, ir.PDL):
        return True
    if o.kind == ir.GLOBAL_LOAD and _ga(o) is not None and _ga(o).sem != "weak":  # type: ignore[union-attr]
        return True
    if o.kind == ir.SYNC and o.sync_kind in ("grid", "cluster"):
        return True
    return False


def unprotected(an: Analysis) -> tuple[list[Unprotected], set[tuple], list[tuple[ir.Op, str]]]:
    """The protection question (see the module's text): (races, the words asked, undecided)."""
    lf = locks(an)
    races: list[Unprotected] = []
    asked: set[tuple] = set()
    undecided: list[tuple[ir.Op, str]] = []
    if not lf.locks and not lf.untested:
        return races, asked, undecided
    ops = an.model.ops
    lock_bases = {lk.base for lk in lf.locks} | {_ga(u.take).base for u in lf.untested}  # type: ignore[union-attr]
    lock_ops = {id(lk.take) for lk in lf.locks} | {id(lk.spin) for lk in lf.locks}
    lock_ops |= {id(r) for lk in lf.locks for r in lk.releases}
    lock_ops |= {id(u.take) for u in lf.untested} | {id(w) for u in lf.untested for w in u.writes}
    words: dict[tuple[str, str], list[ir.Op]] = {}
    for o in ops:
        ga = _ga(o)
        if o.kind not in (ir.GLOBAL_LOAD, ir.GLOBAL_STORE) or ga is None or ga.base is None or ga.where is None:
            continue
        if ga.base in lock_bases or ga.sem != "weak":
            continue
        words.setdefault((ga.base, ga.where), []).append(o)
    blockers = [o for o in ops if _may_order_blocks(o, lock_ops)]
    if not lf.locks:
        words = {}  # an untested take: asked of data indexed per block (`_elements`) only
    for (base, where), acc in sorted(words.items()):
        stores = [o for o in acc if o.kind == ir.GLOBAL_STORE]
        if not stores:
            continue
        word = f"{base}{where}" if where else f"*{base}"
        asked.add(("lock", base, where))
        under = _under(an, lf, acc)
        if under is None:
            undecided.append((acc[0], f"`{word}`: whether a lock's barriers order its accesses is not known"))
            continue
        common = set.intersection(*(under.get(id(o), set()) for o in acc))
        if common:
            continue  # every access under one lock: ordered by its release -> acquire chain
        outside = [o for o in acc if not under.get(id(o))]
        lk = next((lk for lk in lf.locks if any(id(lk) in under.get(id(o), set()) for o in acc)), lf.locks[0])
        if not outside:
            undecided.append((acc[0], f"`{word}` is accessed under different locks"))
            continue
        if blockers:
            b = blockers[0]
            undecided.append(
                (
                    outside[0],
                    f"`{word}` is accessed outside the lock; `{b.api}` (line {b.location.row}) may order the blocks",
                )
            )
            continue
        x = next((o for o in outside if o.kind == ir.GLOBAL_STORE), outside[0])
        y = stores[0] if x.kind != ir.GLOBAL_STORE else x

        def every_block(o: ir.Op) -> bool:
            return not o.loops and o.guard.exact and not o.guard.uniform and bool(an.threads.executing(o))

        if not (every_block(x) and every_block(y)):
            undecided.append((x, f"`{word}` is accessed outside the lock by threads not known to run in every block"))
            continue
        grid = second_block(an)
        if grid is None:
            undecided.append((x, f"`{word}` is accessed outside the lock, but a launch of one block is in the file"))
            continue
        races.append(Unprotected(x, y, lk, word, grid))
    _elements(an, lf, lock_ops, blockers, races, asked, undecided)
    return races, asked, undecided


def _under(an: Analysis, lf: LockFacts, acc: list[ir.Op]) -> dict[int, set[int]] | None:
    """id(access) -> the ids of the locks that hold it (`holds`); None: not known for one."""
    under: dict[int, set[int]] = {}
    for lk in lf.locks:
        for o in acc:
            h = holds(an, lk, o)
            if h is None:
                return None
            if h:
                under.setdefault(id(o), set()).add(id(lk))
    return under


def holds(an: Analysis, lk: Lock, o: ir.Op) -> bool | None:
    """Does lock lk hold access o: is o, for every thread that may run it, after the take of every
    holder and before its first release? Program order for a holder's own access (o between the
    loop and the release); for another thread's (`if (t == 0) acquire(); __syncthreads(); every
    thread updates; __syncthreads(); if (t == 0) release();`), a block barrier between the take
    and o that both take part in, and one between o and the release (the barrier queries,
    `happens_before._ordered_by_barrier`). None: a barrier whose threads are not known, or an
    access or barrier inside a loop there."""
    if id(o) not in {id(x) for x in lk.held}:
        return False
    # the threads that may run it (its thread condition: a superset when the guard also tests
    # data, `if (bm > a->max) a->max = bm;`)
    tr = an.threads.satisfying(o.guard.thread)
    if tr is None:
        return None
    if tr <= lk.holders:
        return True
    if not lk.releases or o.loops or not o.guard.exact:
        return None
    from .happens_before import _ordered_by_barrier

    end, first = max(x.order for x in an.model.ops if lk.spin.loops[-1] in x.loops), lk.releases[0].order
    before = [x for x in an.model.ops if end < x.order < o.order]
    after = [x for x in an.model.ops if o.order < x.order < first]
    if any(x.loops for x in before + after if x.kind in (ir.SYNC, ir.NAMED_ARRIVE)):
        return None
    for h in sorted(lk.holders):
        for t in sorted(tr - {h}):
            a, b = _ordered_by_barrier(an, before, h, t), _ordered_by_barrier(an, after, t, h)
            if a is None or b is None:
                return None
            if not (a and b):
                return False
    return True


def _grid_blocks(an: Analysis) -> int | None:
    """The fewest blocks of the file's launches of this kernel, when every one is known."""
    grid = an.model.grid
    base = an.model.name.split(" [op ")[0].split("<")[0].split("::")[-1]
    launches = [g for _i, g in grid.launches_of(base)] if grid is not None else []
    if not launches or any(g.blocks is None for g in launches):
        return None
    return min(g.blocks for g in launches if g.blocks is not None)


_BLOCK_VARS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


def _in_block(e: E.Expr, k: int, t: E.Expr) -> E.Expr:
    """e as block k's thread t evaluates it (block index and thread index renamed)."""
    m: dict[str, E.Expr] = {v: E.Var(f"{v}#b{k}", E.PARAM) for v in _BLOCK_VARS}
    m[E.TID.name] = t
    return E.substitute(e, m)


def _elements(
    an: Analysis,
    lf: LockFacts,
    lock_ops: set[int],
    blockers: list[ir.Op],
    races: list[Unprotected],
    asked: set[tuple],
    undecided: list[tuple[ir.Op, str]],
) -> None:
    """The protection question for global data indexed per block and thread (`acc[b % 8 * T +
    t]`) in a kernel with locks: two blocks' accesses of one element, one a store, are ordered
    when a lock holds both and, whenever they name one element, both blocks take the same lock
    word (z3 over two block indices and two threads); a store and an access of one element by two
    blocks, one of them held by no lock, are a race (z3's smallest such blocks and threads, within
    the file's launches, stated). Anything else of such data is undecided."""
    from .. import solver

    n = an.threads.n
    if n is None:
        return
    lock_bases = {lk.base for lk in lf.locks}
    bases: dict[str, list[ir.Op]] = {}
    for o in an.model.ops:
        ga = _ga(o)
        if o.kind not in (ir.GLOBAL_LOAD, ir.GLOBAL_STORE) or ga is None or ga.base is None or ga.where is not None:
            continue
        if ga.base in lock_bases or ga.sem != "weak":
            continue
        bases.setdefault(ga.base, []).append(o)
    blocks = _grid_blocks(an)
    for base, acc in sorted(bases.items()):
        stores = [o for o in acc if o.kind == ir.GLOBAL_STORE]
        if not stores:
            continue
        asked.add(("lock", base, None))  # the key coverage reads (`where` None: an element)
        if any(_ga(o).index is None or _ga(o).index.is_opaque() or o.loops for o in acc):  # type: ignore[union-attr]
            undecided.append((acc[0], f"`{base}` is indexed where the element is not known (or in a loop)"))
            continue
        under = _under(an, lf, acc)
        if under is None:
            undecided.append((acc[0], f"`{base}`: whether a lock's barriers order its accesses is not known"))
            continue
        locks_by_id = {id(lk): lk for lk in lf.locks}
        t1, t2 = E.Var("t#1", E.PARAM), E.Var("t#2", E.PARAM)
        found = False
        for y in stores:
            for x in acc:
                if found:
                    break
                bx, by = E.Var("blockIdx.x#b1", E.PARAM), E.Var("blockIdx.x#b2", E.PARAM)
                same = E.conj(
                    E.binop("==", _in_block(_ga(x).index, 1, t1), _in_block(_ga(y).index, 2, t2)),  # type: ignore[arg-type, union-attr]
                    E.binop("!=", bx, by),
                    E.binop("<", t1, E.Const(n)),
                    E.binop("<", t2, E.Const(n)),
                    _in_block(x.guard.thread, 1, t1),
                    _in_block(y.guard.thread, 2, t2),
                    *([E.binop("<", bx, E.Const(blocks)), E.binop("<", by, E.Const(blocks))] if blocks else []),
                )
                apart = solver.always(E.negate(same))
                if apart is True:
                    continue  # two blocks never name one element
                if apart is None:
                    undecided.append((x, f"`{base}`: whether two blocks name one element is not known"))
                    found = True
                    break
                if lf.untested:
                    first = (
                        min(w.order for u in lf.untested for w in u.writes)
                        if any(u.writes for u in lf.untested)
                        else None
                    )
                    if first is not None and max(x.order, y.order) > first:
                        undecided.append((x, f"`{base}` is accessed after a write of the lock word"))
                        found = True
                        break
                common = under.get(id(x), set()) & under.get(id(y), set())
                ordered = False
                for lid in common:
                    lk = locks_by_id[lid]
                    li = lk.index if lk.index is not None else E.Const(0)
                    one = E.binop("==", _in_block(li, 1, t1), _in_block(li, 2, t2))
                    if solver.always(E.disj(E.negate(same), one)) is True:
                        ordered = True
                        break
                if ordered:
                    continue
                if under.get(id(x)) and under.get(id(y)):
                    undecided.append((x, f"`{base}`: two blocks may name one element under different lock words"))
                    found = True
                    break
                if blockers:
                    b = blockers[0]
                    undecided.append(
                        (
                            x,
                            f"`{base}` is accessed outside the lock; `{b.api}` (line {b.location.row}) may order the blocks",
                        )
                    )
                    found = True
                    break

                def every_block(o: ir.Op) -> bool:
                    return not o.loops and o.guard.exact and not o.guard.uniform and bool(an.threads.executing(o))

                if not (every_block(x) and every_block(y)):
                    undecided.append(
                        (x, f"`{base}` is accessed outside the lock by threads not known to run in every block")
                    )
                    found = True
                    break
                w = solver.witness(same)
                if w is None:
                    undecided.append((x, f"`{base}`: no two blocks naming one element were found within the budget"))
                    found = True
                    break
                b1, b2 = w.get("blockIdx.x#b1", 0), w.get("blockIdx.x#b2", 0)
                tt1, tt2 = w.get("t#1", 0), w.get("t#2", 0)
                launches = (
                    f"the launches of this file have {blocks} blocks or more"
                    if blocks
                    else f"assumed: a launch of {max(b1, b2) + 1} blocks or more"
                )
                grid = f"block {b1} thread {tt1} and block {b2} thread {tt2} name one element; {launches}"
                outside = x if not under.get(id(x)) else y
                other = y if outside is x else x
                lk = next(
                    (locks_by_id[i] for o in (x, y) for i in sorted(under.get(id(o), set()))),
                    lf.locks[0] if lf.locks else None,
                )
                races.append(
                    Unprotected(
                        outside,
                        other,
                        lk,
                        _ga(y).text or base,  # type: ignore[union-attr]
                        grid,
                        untested=lf.untested[0] if lk is None and lf.untested else None,
                    )
                )
                found = True
            if found:
                break
