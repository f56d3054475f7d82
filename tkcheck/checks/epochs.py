"""Epoch flags: point-to-point synchronisation of blocks through per-block flags in global memory.

A *raise* is the one write of a flag array F in a loop L (`st_release(&flag[b], base + it + 1)`,
`*(volatile unsigned *)&flag[b] = e`, `atomicExch(&flag[b], e)`): one element per block (its
index names the block's own element: `flag[blockIdx.x]`), a value that grows strictly with L's
iteration (the *epoch*). A *wait* is a spin in L whose condition tests a value polled from an
element of F (`while (ld_acquire(&flag[b - 1]) < base + it + 1)`) and goes on for every value
below some bound (downward closed, z3): it passes at the first raise of its iteration's *minimal
epoch*, the raise of the smallest writer iteration whose value leaves the loop. Since the values
grow, a wait that passes has seen that raise or a later one: it synchronises with that writer
iteration, no earlier, and nothing guarantees a later one.

What this engine decides, on an instance of the launch (the grid size of the file's launches, L's
constant trip count, every launch value in the epochs taken at 0, each flag holding before the
launch the value its raise formula gives iteration -1: the epochs go on from launch to launch, 0
for `base` = 0), with each block taken as one sequential program of raises and waits (the block
barriers around the polling thread are the other queries' question, `happens_before.memory`):

* **progress**: every block is run as far as it can go (a wait passes once the raise of its
  minimal epoch has run); progress is monotone, so the greedy run reaches the one final state.
  A block left at a wait is a *hang* of that instance, with the chain of blocks that wait
  on one another. A run that ends is no proof for other grids or trip counts (coverage).
* **happens-before of global data across iterations**: vector clocks over the run (each raise
  and wait of each block, the raise a wait synchronises with joined in): a store of global data
  by one block and a load or store of the same element by another block in L's body (the element
  evaluated per block and iteration) are ordered when one's position comes before a raise of its
  block that the other's block has synchronised with before the other access. A pair ordered in
  neither direction is a race (a read of an older iteration's data: a wait one epoch short; a
  write of the next iteration's data while a neighbour still reads this one: a single buffer where
  a parity double buffer is needed), reported in the first iterations of the instance.

Undecided (coverage, never a finding): the grid size or the trip count not known, an epoch or an
index that does not evaluate, a flag written elsewhere or more than once per iteration, other
grid-wide synchronisation in the kernel (another spin, a grid barrier, an atomic, an unmodelled
call), an instance too large to run.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

# the largest instance run: blocks x iterations
MAX_BLOCK_ITERATIONS = 40_000
# the iterations whose global data accesses are paired (the races reported are the first ones)
RACE_ITERATIONS = 8


@dataclass(frozen=True)
class Raise:
    op: ir.Op
    flag: str  # the kernel pointer parameter
    loop: int  # the loop L it is raised once per iteration of
    value: E.Expr  # over L's counter, the block index, launch values
    index: E.Expr  # the element, over the block index (and the inner loops' counters)
    # the loops inside L around the raise (rounds of a dissemination barrier: one element per
    # round, each raised once per iteration of L), innermost last; () when raised in L's body
    inner: tuple[int, ...] = ()


@dataclass(frozen=True)
class Wait:
    spin: ir.Op
    poll: ir.Op
    raise_: Raise
    cond: E.Expr  # the loop goes on while this holds (over `result`)
    result: str  # the polled value's Var name


@dataclass
class Step:
    """One step of a block in the instance: a raise or a wait at an iteration."""

    block: int
    iteration: int
    op: ir.Op
    text: str


@dataclass
class EpochHang:
    wait: Wait
    block: int  # a block left at the wait
    iteration: int
    owner: int  # the block whose flag it waits on
    condition: str  # the spin's condition, at that iteration, over the flag's value
    last: str  # the last value the owner raises in the instance ("" none)
    grid: int
    trip: int
    chain: list[Step] = field(default_factory=list)  # where each block of the wait chain stopped
    # the owner's iteration whose raise would end the wait (None: no raise of the instance does)
    needed: int | None = None
    element: int | None = None  # the flag element polled (the owner's index when raised in L's body)


@dataclass
class EpochRace:
    first: ir.Op  # the access that should come first (the write of a read-after-write)
    second: ir.Op
    first_at: tuple[int, int]  # (block, iteration)
    second_at: tuple[int, int]
    element: int
    war: bool  # `second` is a write the reader's read of `first` should precede
    wait: Wait | None  # the last wait of the second access's block on the first's flag before it
    synced: int | None  # the writer iteration that wait synchronises with (None: none)
    grid: int
    trip: int


@dataclass
class EpochFacts:
    raises: list[Raise] = field(default_factory=list)
    waits: list[Wait] = field(default_factory=list)
    hangs: list[EpochHang] = field(default_factory=list)
    races: list[EpochRace] = field(default_factory=list)
    # the instance run to its end with no hang: (spin, what was run), coverage
    explored: list[tuple[ir.Op, str]] = field(default_factory=list)
    undecided: list[tuple[ir.Op, str]] = field(default_factory=list)
    assumption: str = ""


def epochs(an: Analysis) -> EpochFacts:
    return an.fact("epochs.epochs", _epochs)


def is_wait(an: Analysis, sp: ir.Op) -> bool:
    return any(w.spin is sp for w in epochs(an).waits)


def raised_flags(an: Analysis) -> set[str]:
    """The flags some spin of the kernel polls and some thread writes: a write of one is a signal
    (with the memory order it is written with: a plain or volatile store is relaxed)."""
    m = an.model
    polled = set()
    for sp in (o for o in m.ops if o.kind == ir.SPIN and o.loops and o.spin is not None and o.spin.cond is not None):
        names = {v.name for v in sp.spin.cond.free_vars()}  # type: ignore[union-attr]
        for o in m.ops:
            ga = o.global_access
            if (
                o.kind == ir.GLOBAL_LOAD
                and ga is not None
                and ga.result in names
                and ga.base
                and sp.loops[-1] in o.loops
            ):
                polled.add(ga.base)
    return polled


def signal_stores(an: Analysis) -> frozenset[int]:
    """id() of the plain and volatile stores that are signals: a store of global memory that a
    spin of the kernel polls (its loop's condition tests the loaded value), of a value that makes
    that loop end for some values of the other unknowns (z3). Such a store is a relaxed signal
    event (no release: it orders nothing before it without a gpu-scope fence), like a relaxed
    atomic store (`checks/happens_before.py` asks what it publishes)."""
    return an.fact("epochs.signal_stores", _signal_stores)


def _signal_stores(an: Analysis) -> frozenset[int]:
    from .. import solver

    m = an.model
    out = set()
    spins = [o for o in m.ops if o.kind == ir.SPIN and o.loops and o.spin is not None and o.spin.cond is not None]
    for sp in spins:
        cond = sp.spin.cond  # type: ignore[union-attr]
        assert cond is not None
        names = {v.name for v in cond.free_vars()}
        polls = [
            o
            for o in m.ops
            if o.kind == ir.GLOBAL_LOAD
            and sp.loops[-1] in o.loops
            and (ga := _ga(o)) is not None
            and ga.result in names
        ]
        for poll in polls:
            pga = _ga(poll)
            assert pga is not None and pga.result is not None
            for st in m.ops:
                sga = _ga(st)
                if st.kind != ir.GLOBAL_STORE or sga is None or sga.base is None or sga.base != pga.base:
                    continue
                value = _value_of(st)
                if value is None or id(st) in out:
                    continue
                # the store's unknowns (its loop counters, the block index) are its own
                own = {v.name: E.Var(f"?store.{v.name}", v.kind) for v in value.free_vars() if v.kind != E.PARAM}
                own |= {"blockIdx.x": E.Var("?store.blockIdx.x", E.PARAM)}
                ends = E.negate(E.substitute(cond, {pga.result: E.substitute(value, own)}))
                if solver.feasible(ends):
                    out.add(id(st))
    return frozenset(out)


def _ga(o: ir.Op) -> ir.GlobalAccessFacts | None:
    return o.global_access


def _grid(an: Analysis) -> int | None:
    grid = an.model.grid
    base = an.model.name.split(" [op ")[0].split("<")[0].split("::")[-1]
    launches = [g for _i, g in grid.launches_of(base)] if grid is not None else []
    sizes = {g.blocks for g in launches}
    if len(sizes) != 1 or None in sizes:
        return None
    (n,) = sizes
    return n


def _counter_of(m: ir.KernelModel, lid: int) -> E.Var | None:
    lp = m.loops.get(lid)
    return lp.counter if lp is not None else None


def _value_of(o: ir.Op) -> E.Expr | None:
    ga = _ga(o)
    if ga is None:
        return None
    if ga.operand is not None:
        return ga.operand
    if o.kind == ir.GLOBAL_STORE and len(ga.operands) == 1 and isinstance(ga.operands[0], E.Expr):
        return ga.operands[0]
    return None


def _epochs(an: Analysis) -> EpochFacts:
    from .. import solver

    out = EpochFacts()
    m = an.model
    ops = m.ops
    spins = [o for o in ops if o.kind == ir.SPIN and len(o.loops) >= 2 and o.spin is not None]
    if not spins:
        return out
    # the raises: the one write of a polled flag, in a loop, with a growing value
    for flag in sorted(raised_flags(an)):
        writes = [
            o
            for o in ops
            if o.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL, ir.TMA_STORE) and (_ga(o) is None or _ga(o).base == flag)  # type: ignore[union-attr]
        ]
        writes = [o for o in writes if _ga(o) is not None]
        if len(writes) != 1:
            continue
        (w,) = writes
        ga = _ga(w)
        assert ga is not None
        value = _value_of(w)
        if (
            not w.loops
            or value is None
            or ga.index is None
            or not w.guard.exact
            or (ga.atomic not in (None, "st", "exch"))
        ):
            continue
        # L: the innermost loop around the write whose counter the value names; the loops inside
        # it (rounds) may name the element, not the value
        at = next((i for i in range(len(w.loops) - 1, -1, -1) if _counter_of(m, w.loops[i]) in value.free_vars()), None)
        if at is None:
            continue
        lp = m.loops.get(w.loops[at])
        inner = tuple(w.loops[at + 1 :])
        if lp is None or any(m.loops.get(i) is None for i in inner):
            continue
        k = lp.counter
        if k in ga.index.free_vars() or ga.index.depends_on(E.THREAD):
            continue
        if any(m.loops[i].counter in value.free_vars() for i in inner):
            continue
        grows = solver.always(E.binop(">", E.substitute(value, {k.name: E.binop("+", k, E.Const(1))}), value))
        if grows is not True:
            out.undecided.append((w, "the flag's value is not proved to grow with the iteration"))
            continue
        out.raises.append(Raise(w, flag, lp.id, value, ga.index, inner))
    by_flag = {r.flag: r for r in out.raises}
    for sp in spins:
        facts = sp.spin
        assert facts is not None
        if facts.cond is None or facts.breaks:
            continue
        lid = sp.loops[-1]
        names = {v.name for v in facts.cond.free_vars()}
        polls = [
            o
            for o in ops
            if o.kind == ir.GLOBAL_LOAD and lid in o.loops and (ga := _ga(o)) is not None and ga.result in names
        ]
        if len(polls) != 1:
            continue
        poll = polls[0]
        pga = _ga(poll)
        assert pga is not None and pga.result is not None
        r = by_flag.get(pga.base or "")
        if r is None or sp.loops[:-1] != r.op.loops or pga.index is None:
            continue
        v = E.Var("?epoch.v", E.PARAM)
        u = E.Var("?epoch.u", E.PARAM)
        cond_v = E.substitute(facts.cond, {pga.result: v})
        cond_u = E.substitute(facts.cond, {pga.result: u})
        down = solver.always(E.binop("||", E.negate(E.conj(E.binop("<", u, v), cond_v)), cond_u))
        if down is not True:
            out.undecided.append((sp, "the spin's condition is not proved to go on below a bound (an epoch test)"))
            continue
        out.waits.append(Wait(sp, poll, r, facts.cond, pga.result))
    if not out.waits:
        return out
    _instance(an, out)
    return out


def _others(an: Analysis, out: EpochFacts) -> str | None:
    """Why the instance would not be the kernel's (another synchronisation across blocks)."""
    m = an.model
    waits = {id(w.spin) for w in out.waits}
    polls = {id(w.poll) for w in out.waits}
    raises = {id(r.op) for r in out.raises}
    loops = {r.loop for r in out.raises}
    if len(loops) != 1 or len({r.op.loops for r in out.raises}) != 1:
        return "flags raised in different loops"
    # each block is run as one program of raises and waits: they must be one thread's (a raise by
    # one thread and a wait by another may run in either order)
    who = {an.threads.executing(o) for o in [r.op for r in out.raises] + [w.spin for w in out.waits]}
    if len(who) != 1 or None in who or frozenset() in who:
        return "raises and waits made by different threads"
    if not all(w.spin.guard.exact for w in out.waits):
        return "a wait under a condition not followed"
    (lid,) = loops
    for o in m.ops:
        if lid in o.loops and o.kind in (ir.MBAR_WAIT, ir.NAMED_ARRIVE, ir.MMA_WAIT):
            return "another wait inside the loop"
        if lid in o.loops and o.kind == ir.SYNC and o.sync_kind not in ("block", "warp"):
            return "a barrier other than the block's inside the loop"
    for o in m.ops:
        if o.kind == ir.SPIN and id(o) not in waits:
            return "another spin loop"
        if o.kind == ir.GLOBAL_SIGNAL and id(o) not in raises:
            return "another atomic or ordered global access"
        if o.kind == ir.GLOBAL_LOAD and (ga := _ga(o)) is not None and ga.sem != "weak" and id(o) not in polls:
            if ga.base not in {r.flag for r in out.raises}:
                return "another ordered global load"
        if o.kind == ir.SYNC and o.sync_kind in ("grid", "cluster"):
            return "a grid or cluster barrier"
        if o.kind in (ir.CALL, ir.PDL):
            return "an unmodelled call"
        if o.kind == ir.EXIT and any(lp in o.loops for lp in loops):
            return "an exit inside the loop"
    return None


def _launch_values(out: EpochFacts) -> dict[str, int]:
    """The launch values the raises and waits name (`base`), each taken at 0."""
    exprs: list[E.Expr] = []
    for r in out.raises:
        exprs += [r.value, r.index, *r.op.guard.uniform]
    for w in out.waits:
        exprs += [w.cond, *w.spin.guard.uniform]
        if w.poll.global_access is not None and w.poll.global_access.index is not None:
            exprs.append(w.poll.global_access.index)
    return {
        v.name: 0
        for e in exprs
        for v in e.free_vars()
        if v.kind == E.PARAM and not v.name.startswith("?") and v.name not in ("blockIdx.x", "gridDim.x")
    }


def _instance(an: Analysis, out: EpochFacts) -> None:
    m = an.model
    lid = out.raises[0].loop if out.raises else None
    lp = m.loops.get(lid) if lid is not None else None

    def undecided(why: str) -> None:
        for w in out.waits:
            out.undecided.append((w.spin, why))

    why = _others(an, out)
    if why is not None:
        undecided(f"epoch flags: {why} in the kernel")
        return
    grid = _grid(an)
    trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
    if lp is None or grid is None:
        undecided("epoch flags: the grid size of the launch is not known")
        return
    if not isinstance(trip, int) or lp.infinite or lp.continues or lp.data_cond:
        undecided("epoch flags: the loop's trip count is not a constant")
        return
    if not isinstance(lp.init, E.Const) or lp.init.value != 0 or not isinstance(lp.step, E.Const) or lp.step.value != 1:
        undecided("epoch flags: the loop's counter does not run 0, 1, 2, ...")
        return
    # the loops inside L around the raises and waits (rounds): each run through every iteration
    # of a constant trip count, in program order, within each iteration of L
    inner = out.raises[0].inner
    inner_names: list[str] = []
    inner_trips: list[int] = []
    for i in inner:
        ilp = m.loops[i]
        itrip = ilp.trip.eval({}) if ilp.trip is not None else None
        if not isinstance(itrip, int) or isinstance(itrip, bool) or ilp.infinite or ilp.continues or ilp.data_cond:
            undecided("epoch flags: the trip count of a loop inside the epoch loop is not a constant")
            return
        inner_names.append(ilp.counter.name)
        inner_trips.append(max(itrip, 0))
    rounds = list(itertools.product(*(range(t) for t in inner_trips)))
    if grid * trip * max(len(rounds), 1) > MAX_BLOCK_ITERATIONS:
        undecided(
            f"epoch flags: an instance of {grid} blocks x {trip} iterations"
            + (f" x {len(rounds)} rounds" if inner else "")
            + " is too large to run"
        )
        return
    k = lp.counter.name
    out.assumption = (
        f"an instance of {grid} blocks x {trip} iterations"
        + (f" x {len(rounds)} rounds" if inner else "")
        + ", launch values in the epochs taken at 0, "
        "each flag holding before the launch the value its raise gives iteration -1"
    )

    launch = _launch_values(out)

    def ev(e: E.Expr, b: int, it: int, extra: dict | None = None):
        vals = dict(launch)
        vals["blockIdx.x"], vals["gridDim.x"], vals[k] = b, grid, it
        if extra:
            vals.update(extra)
        r = e.eval(vals)
        return int(r) if isinstance(r, (int, bool)) else None

    def runs(o: ir.Op, b: int, it: int, extra: dict | None = None) -> bool | None:
        for c in o.guard.uniform:
            r = ev(c, b, it, extra)
            if r is None:
                return None
            if not r:
                return False
        return True

    # each block's steps: the raises and waits of L's body, in program order
    body = sorted([r.op for r in out.raises] + [w.spin for w in out.waits], key=lambda o: o.order)
    of = {id(r.op): r for r in out.raises} | {id(w.spin): w for w in out.waits}
    span0 = 1 + max((o.order for o in m.ops), default=0)
    # (flag, element) -> the block raising it, and the round it raises it in
    owner: dict[tuple[str, int], int] = {}
    raised_in: dict[tuple[str, int], tuple[int, ...]] = {}
    for r in out.raises:
        for b in range(grid):
            for rd in rounds:
                rv = dict(zip(inner_names, rd))
                if runs(r.op, b, 0, rv) is not True:
                    continue
                x = ev(r.index, b, 0, rv)
                if x is None:
                    undecided("epoch flags: a flag's element does not evaluate")
                    return
                if owner.setdefault((r.flag, x), b) != b or raised_in.setdefault((r.flag, x), rd) != rd:
                    undecided("epoch flags: two blocks (or two rounds) raise one flag element")
                    return
    # per block: (iteration, position in the iteration, Raise | (Wait, owner, jmin, element)); the
    # position of an op of round number q is q * span0 + its order
    steps: list[list[tuple[int, int, object]]] = []
    # per block: (flag, element, iteration) -> the index of its raise in the block's steps
    raised_idx: list[dict[tuple[str, int, int], int]] = []
    for b in range(grid):
        seq: list[tuple[int, int, object]] = []
        idx: dict[tuple[str, int, int], int] = {}
        guesses: dict[tuple[int, int], tuple[int, int]] = {}  # per wait and element: its jmin at the last iteration
        for it, (q, rd) in itertools.product(range(trip), enumerate(rounds)):
            rv = dict(zip(inner_names, rd))
            for o in body:
                ok = runs(o, b, it, rv)
                if ok is None:
                    undecided("epoch flags: a condition of a raise or a wait does not evaluate")
                    return
                if not ok:
                    continue
                x = of[id(o)]
                if isinstance(x, Raise):
                    xe = ev(x.index, b, it, rv)
                    if xe is not None:
                        idx[(x.flag, xe, it)] = len(seq)
                    seq.append((it, q * span0 + o.order, x))
                    continue
                assert isinstance(x, Wait)
                e = ev(x.poll.global_access.index, b, it, rv)  # type: ignore[union-attr]
                ob = owner.get((x.raise_.flag, e)) if e is not None else None
                if ob is None:
                    undecided("epoch flags: a wait polls an element no block raises")
                    return
                # the values grow with j and the condition goes on below a bound: the writer
                # iterations that leave the loop are a suffix [jmin, trip); its start found by
                # a search that begins at the last wait's (an epoch a fixed distance ahead or
                # behind is found in two looks), bisection otherwise
                memo: dict[int, bool | None] = {}

                def leaves(j: int, x=x, ob=ob, b=b, it=it, memo=memo) -> bool | None:
                    if j not in memo:
                        val = ev(x.raise_.value, ob, j)
                        g = ev(x.cond, b, it, {x.result: val}) if val is not None else None
                        memo[j] = None if g is None else not g
                    return memo[j]

                guess = guesses.get((id(o), e), (-1, 0))
                g0 = min(max(guess[0] + 1, -1), trip)  # the last jmin moved one iteration on
                lo, hi = -1, trip  # the first j in [lo, hi) that leaves, hi: none
                if g0 < trip:
                    a = leaves(g0)
                    if a is None:
                        undecided("epoch flags: an epoch does not evaluate")
                        return
                    if a:
                        hi = g0
                    else:
                        lo = g0 + 1
                if lo < hi and g0 - 1 >= lo:
                    a = leaves(g0 - 1)
                    if a is None:
                        undecided("epoch flags: an epoch does not evaluate")
                        return
                    if a:
                        hi = g0 - 1
                    else:
                        lo = g0
                while lo < hi:
                    j = (lo + hi) // 2
                    a = leaves(j)
                    if a is None:
                        undecided("epoch flags: an epoch does not evaluate")
                        return
                    if a:
                        hi = j
                    else:
                        lo = j + 1
                jmin = lo if lo < trip else None
                guesses[(id(o), e)] = (jmin if jmin is not None else trip, 0)
                seq.append((it, q * span0 + o.order, (x, ob, jmin, e)))
        steps.append(seq)
        raised_idx.append(idx)
    _run(an, out, grid, trip, steps, raised_idx, span0 * max(len(rounds), 1))


def _run(an: Analysis, out: EpochFacts, grid: int, trip: int, steps, raised_idx, span: int) -> None:
    """The greedy run of the instance, with vector clocks (per block: the latest position
    (iteration, position in the iteration) of each block's raise that happens before the step)."""
    # a position (iteration, position in it) as one integer: before every step of the instance is 0
    NONE = 0
    done = [0] * grid  # steps run per block
    clocks: list[list[list[int]]] = [[] for _ in range(grid)]  # per block, per step run: positions
    progress = True
    while progress:
        progress = False
        for b in range(grid):
            seq = steps[b]
            while done[b] < len(seq):
                it, order, x = seq[done[b]]
                prev = clocks[b][-1] if clocks[b] else [NONE] * grid
                if isinstance(x, Raise):
                    vc = list(prev)
                    vc[b] = (it + 1) * span + order
                else:
                    w, ob, jmin, elem = x
                    if jmin is not None and jmin >= 0:
                        si = raised_idx[ob].get((w.raise_.flag, elem, jmin))
                        if si is None or si >= done[ob]:
                            break  # the raise it needs has not run yet (or never runs)
                        other = clocks[ob][si]
                        vc = [max(a, c) for a, c in zip(prev, other)]
                    elif jmin is None:
                        break  # no raise of the instance leaves the loop
                    else:
                        vc = list(prev)  # the value before the launch leaves it: no order
                clocks[b].append(vc)
                done[b] += 1
                progress = True
    stuck = [b for b in range(grid) if done[b] < len(steps[b])]
    if stuck:
        _hang(an, out, grid, trip, steps, done, stuck, raised_idx)
        return
    for w in out.waits:
        out.explored.append((w.spin, f"{out.assumption}: every block leaves every wait (not proved for other grids)"))
    _races(an, out, grid, trip, steps, clocks, span)


def _hang(an: Analysis, out: EpochFacts, grid, trip, steps, done, stuck, raised_idx) -> None:
    # the first stuck block (by block index) at a wait that no raise of the instance satisfies,
    # else the first stuck one; then the chain of owners it waits on
    def at(b):
        return steps[b][done[b]]

    pick = next((b for b in stuck if at(b)[2][2] is None), stuck[0])
    it, _order, (w, ob, jmin, elem) = at(pick)
    chain: list[Step] = []
    seen = set()
    b = pick
    while b not in seen and done[b] < len(steps[b]):
        seen.add(b)
        s_it, _o, s = steps[b][done[b]]
        sw, sob, sj, se = s
        need = f"iteration {sj}'s raise of block {sob}" if sj is not None else "a value no raise of the instance writes"
        chain.append(Step(b, s_it, sw.spin, f"waits on block {sob}'s flag `{sw.raise_.flag}[{se}]` for {need}"))
        b = sob
    if b not in seen:
        tail = steps[b][-1][2] if steps[b] else None
        chain.append(Step(b, trip - 1, tail.op if isinstance(tail, Raise) else w.spin, "has left its loop"))
    # the owner's last raise of the polled element
    last_it = max((i for (f, e, i) in raised_idx[ob] if f == w.raise_.flag and e == elem), default=None)
    last = ""
    if last_it is not None:
        r = w.raise_
        vals = {"blockIdx.x": ob, "gridDim.x": grid, an.model.loops[r.loop].counter.name: last_it}
        for v in r.value.free_vars():
            vals.setdefault(v.name, 0)
        got = r.value.eval(vals)
        last = f"{got} (its iteration {last_it})" if got is not None else ""
    vals = {"blockIdx.x": pick, "gridDim.x": grid, an.model.loops[w.raise_.loop].counter.name: it}
    shown_flag = f"{w.raise_.flag}[{elem}]"
    shown = E.substitute(w.cond, {w.result: E.Var(shown_flag, E.PARAM)})
    cvals = {v.name: 0 for v in shown.free_vars() if v.name not in vals and v.name != shown_flag}
    cvals.update(vals)
    shown = E.substitute(shown, {n: E.Const(x) for n, x in cvals.items()})
    out.hangs.append(EpochHang(w, pick, it, ob, str(shown), last, grid, trip, chain, jmin, elem))


def _races(an: Analysis, out: EpochFacts, grid, trip, steps, clocks, iteration_span: int) -> None:
    from .happens_before import _is_data_read

    m = an.model
    r0 = out.raises[0]
    lid = r0.loop
    k = m.loops[lid].counter.name
    flags = {r.flag for r in out.raises}
    # the data accesses of L's body and of the rounds' loops around the raises (each round q at
    # the position q * span0 + order); one of L's body after the rounds comes past the last round
    level = r0.op.loops[: len(r0.op.loops) - len(r0.inner)]
    span0 = 1 + max((o.order for o in m.ops), default=0)
    in_rounds = [o.order for o in m.ops if r0.inner and r0.inner[0] in o.loops]
    first_round = min(in_rounds, default=0)
    inner_names = [m.loops[i].counter.name for i in r0.inner]
    rounds = list(itertools.product(*(range(int(m.loops[i].trip.eval({}))) for i in r0.inner)))  # type: ignore[union-attr,arg-type]
    last_q = max(len(rounds), 1) - 1

    def placements(o: ir.Op) -> list[tuple[int, dict]]:
        """(position in the iteration, the rounds' counters) of each run of o in an iteration."""
        if r0.inner and o.loops == r0.op.loops:
            return [(q * span0 + o.order, dict(zip(inner_names, rd))) for q, rd in enumerate(rounds)]
        return [(o.order if not r0.inner or o.order < first_round else last_q * span0 + o.order, {})]

    data = []
    for o in m.ops:
        ga = _ga(o)
        if ga is None or ga.base is None or ga.base in flags or ga.index is None:
            continue
        if o.loops != level and not (r0.inner and o.loops == r0.op.loops):
            continue
        if ga.index.depends_on(E.THREAD) or not o.guard.exact:
            continue
        if not an.threads.executing(o):
            continue  # no thread runs it (or not known which)
        if o.kind == ir.GLOBAL_STORE or _is_data_read(o):
            data.append(o)
    writes = [o for o in data if o.kind == ir.GLOBAL_STORE]
    if not writes:
        return
    span = min(trip, RACE_ITERATIONS)

    launch = {
        v.name: 0
        for o in data
        for e in (_ga(o).index, *o.guard.uniform)  # type: ignore[union-attr]
        for v in e.free_vars()
        if v.kind == E.PARAM and not v.name.startswith("?") and v.name not in ("blockIdx.x", "gridDim.x")
    }

    def ev(e, b, it, rv=None):
        vals = dict(launch)
        vals["blockIdx.x"], vals["gridDim.x"], vals[k] = b, grid, it
        if rv:
            vals.update(rv)
        r = e.eval(vals)
        return int(r) if isinstance(r, (int, bool)) else None

    def runs(o, b, it, rv=None):
        return all(ev(c, b, it, rv) for c in o.guard.uniform)

    # the clock of block b before position (it, position): the last step before it
    pos = [[(s[0], s[1]) for s in steps[b][: len(clocks[b])]] for b in range(grid)]
    span1 = iteration_span

    def clock_before(b, it, order):
        import bisect

        i = bisect.bisect_left(pos[b], (it, order))
        return clocks[b][i - 1] if i > 0 else None

    def ordered(a_b, a_pos, c_b, c_pos) -> bool:
        vc = clock_before(c_b, *c_pos)
        return vc is not None and (a_pos[0] + 1) * span1 + a_pos[1] < vc[a_b]

    inst: dict[tuple[str, int], list[tuple[ir.Op, int, int, int]]] = {}
    for o in data:
        for b in range(grid):
            for it in range(span):
                for p, rv in placements(o):
                    if not runs(o, b, it, rv):
                        continue
                    x = ev(_ga(o).index, b, it, rv)  # type: ignore[union-attr]
                    if x is None:
                        return
                    inst.setdefault((_ga(o).base, x), []).append((o, b, it, p))  # type: ignore[arg-type,union-attr]
    reported: set[tuple[int, int]] = set()
    for (base, x), accs in sorted(inst.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        for wo, wb, wit, wp in accs:
            if wo.kind != ir.GLOBAL_STORE:
                continue
            for ro, rb, rit, rp in accs:
                if rb == wb or (ro.kind == ir.GLOBAL_STORE and rp < wp):
                    continue
                key = (id(wo), id(ro)) if wit <= rit else (id(ro), id(wo))
                if key in reported:
                    continue
                wpos, rpos = (wit, wp), (rit, rp)
                if ordered(wb, wpos, rb, rpos) or ordered(rb, rpos, wb, wpos):
                    continue
                # a write after the read in the instance's order (across iterations, or a later
                # round of one iteration)
                war = wit > rit or (bool(r0.inner) and wit == rit and wp > rp)
                first, second = (
                    ((ro, rb, rit, rp), (wo, wb, wit, wp)) if war else ((wo, wb, wit, wp), (ro, rb, rit, rp))
                )
                # the last wait of the second access's block on the first's flag before it
                last = None
                for i in range(len(steps[second[1]]) - 1, -1, -1):
                    s_it, s_o, s = steps[second[1]][i]
                    if (s_it, s_o) < (second[2], second[3]) and not isinstance(s, Raise) and s[1] == first[1]:
                        last = s
                        break
                reported.add(key)
                out.races.append(
                    EpochRace(
                        first[0],
                        second[0],
                        (first[1], first[2]),
                        (second[1], second[2]),
                        x,
                        war,
                        last[0] if last else None,
                        last[2] if last else None,
                        grid,
                        trip,
                    )
                )
