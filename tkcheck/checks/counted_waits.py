"""Counted waits: a thread waits for a counter in global memory to reach a value (issue 25,
round 13).

The primitive. A counter C (one word for the whole grid) is written only by atomic additions of
positive constants (`atomicAdd(c, 1)`, `cuda::atomic_ref(c).fetch_add(1, order)`), each in the
body of a loop L with a constant trip count (the rounds of a persistent grid). A *count wait* W
in L waits for C: a loop whose condition tests values loaded from C by its thread -- the poll of
a spin (`while (ld(C) < T) {}`) or the carried value the body's last load leaves (`seen = ld(C);
while (seen < T) { c.wait(seen); seen = ld(C); }`, `ir.SpinFacts.carried`). A *gate* S is a spin
in L, after W in program order, on a word F that only W's threads write, each write after W in
the same iteration: the blocks' wait for the round a coordinator opens (`gen.wait(r)` after the
coordinator's `gen.store(r + 1)`).

What is decided (progress, asked by `protocol.spin_waits`): in L's first iteration, no thread
passes W before C reaches the values W waits for. Until some thread passes W(0), F holds its
value before the launch (taken to be 0, the host zeroing it, as for `protocol.SpinNever`): every
write of F comes after a pass of W(0) by its thread. When S's condition holds at F == 0 in
iteration 0 (z3, for every block), no thread passes S(0) before W(0) is passed; every thread
that adds to C runs S (its threads are S's, S unconditional in L), so the adds that can precede
the first pass of W(0) are those of iteration 0 before S in program order: at most B = sum over
those sites of (threads of the site per block) x (blocks of the launch) x (amount). When W's
condition holds for every value of C in [0, B] (z3: each value it tests, at L's counter 0), no
thread ever passes W(0): a wait for a count nobody reaches (`CountHang`), and every thread
behind S waits with it.

Undecided (nothing reported): C written any other way (a write whose address is not known, a
store, an add of an amount not a positive constant, an add outside L or in a loop inside it,
under a guard that is not exact), an unmodelled call in the kernel, L with a `continue` or no
constant trip count, W or S under a condition on L's counter, no gate, the grid size not known
(one integer for every launch of the file).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

_WRITES = (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE, ir.TMA_STORE)


@dataclass
class CountHang:
    """A count wait no thread passes in the first iteration of its loop."""

    spin: ir.Op  # W's SPIN head
    counter: str  # C's kernel pointer
    polls: list[ir.Op]  # the loads of C whose values W's condition tests
    adds: list[ir.Op]  # the additions of C that may precede W's first pass
    bound: int  # the largest value C can hold before W's first pass
    gate: ir.Op  # S's SPIN head
    flag: str  # F's kernel pointer
    flag_writes: list[ir.Op]  # F's writes, each after a pass of W
    grid: int  # blocks of the launch
    tested: tuple[str, ...] = ()  # the names W's condition gives the values of C it tests


def count_hang(an: Analysis, sp: ir.Op) -> CountHang | None:
    """The spin sp as a count wait no thread passes in its loop's first iteration; None when it
    is no such wait or a step is not proved (see the module)."""
    return an.fact("counted_waits.hangs", _hangs).get(id(sp))


def _grid(an: Analysis) -> int | None:
    grid = an.model.grid
    base = an.model.name.split(" [op ")[0].split("<")[0].split("::")[-1]
    sizes = {g.blocks for _i, g in grid.launches_of(base)} if grid is not None else set()
    if len(sizes) != 1 or None in sizes:
        return None
    (n,) = sizes
    return n if isinstance(n, int) and n > 0 else None


def _hangs(an: Analysis) -> dict[int, CountHang]:
    m = an.model
    out: dict[int, CountHang] = {}
    spins = [o for o in m.ops if o.kind == ir.SPIN and o.spin is not None and o.spin.cond is not None]
    if not spins or any(o.kind == ir.CALL for o in m.ops):
        return out
    grid = _grid(an)
    if grid is None:
        return out
    for sp in spins:
        h = _hang(an, sp, spins, grid)
        if h is not None:
            out[id(sp)] = h
    return out


def _outer_loop(an: Analysis, o: ir.Op) -> ir.Loop | None:
    """L: the spin's outermost loop, directly around the spin's own, with a constant trip count,
    no `continue`, and the spin not under a condition on L's counter."""
    if len(o.loops) != 2:
        return None
    lp = an.model.loops.get(o.loops[0])
    if lp is None or lp.parent is not None or lp.continues or not isinstance(lp.counter, E.Var):
        return None
    if not isinstance(lp.trip, E.Const) or not isinstance(lp.trip.value, int) or lp.trip.value < 1:
        return None
    if not o.guard.exact or any(u.depends_on(E.LOOP) or u.is_opaque() for u in o.guard.uniform):
        return None
    if o.guard.thread.depends_on(E.LOOP):
        return None
    return lp


def _word(o: ir.Op) -> str | None:
    ga = o.global_access
    return ga.base if ga is not None and ga.where == "" and ga.base else None


def _polls_of(an: Analysis, sp: ir.Op) -> tuple[str, list[ir.Op], dict[str, str]] | None:
    """(C, the loads of C the condition tests, condition name -> load result name) when every
    loaded value W's condition names is a load of one word C in L (any value C held before W's
    first pass is bounded, whoever loads it)."""
    m = an.model
    facts = sp.spin
    assert facts is not None and facts.cond is not None
    names = {v.name for v in facts.cond.free_vars()}
    carried = dict(facts.carried)
    loads = {
        o.global_access.result: o  # type: ignore[union-attr]
        for o in m.ops
        if o.kind == ir.GLOBAL_LOAD and o.global_access is not None and o.global_access.result
    }
    polls, words, named = [], set(), {}
    for n in names:
        res = carried.get(n, n)
        ld = loads.get(res)
        if ld is None:
            continue
        if ld.loops[:1] != sp.loops[:1]:
            return None  # a value loaded in L: before W's test in the same iteration of L
        w = _word(ld)
        if w is None:
            return None
        words.add(w)
        polls.append(ld)
        named[n] = res
    if len(words) != 1:
        return None
    return words.pop(), polls, named


def _count_wait(an: Analysis, sp: ir.Op) -> tuple[ir.Loop, str, list[ir.Op], dict[str, str], frozenset[int]] | None:
    """What `_hang` and `_race` both start from: (L, C, the polls of C, condition name -> load
    result name, W's threads) for a spin with no `break` in a loop L around its own; None when it
    is no count wait."""
    facts = sp.spin
    assert facts is not None and facts.cond is not None
    if facts.breaks:
        return None
    lp = _outer_loop(an, sp)
    if lp is None:
        return None
    assert isinstance(lp.counter, E.Var)
    got = _polls_of(an, sp)
    if got is None:
        return None
    counter, polls, named = got
    waiters = an.threads.executing(sp) or frozenset()
    if not waiters:
        return None
    return lp, counter, polls, named, waiters


def _hang(an: Analysis, sp: ir.Op, spins: list[ir.Op], grid: int) -> CountHang | None:
    from .. import solver
    from .grid_barriers import spin_wait_on_global_word

    m = an.model
    facts = sp.spin
    assert facts is not None and facts.cond is not None
    cw = _count_wait(an, sp)
    if cw is None:
        return None
    lp, counter, polls, named, waiters = cw
    writes = [o for o in m.ops if o.kind in _WRITES]
    if any(o.global_access is None or o.global_access.base is None for o in writes):
        return None  # a write whose address is not known may be C's or F's
    adds = [o for o in writes if o.global_access.base == counter]  # type: ignore[union-attr]
    amounts = []
    for a in adds:
        ga = a.global_access
        assert ga is not None
        if a.kind != ir.GLOBAL_SIGNAL or ga.atomic != "add" or ga.where != "" or a.loops != (lp.id,):
            return None
        if not isinstance(ga.operand, E.Const) or not isinstance(ga.operand.value, int) or ga.operand.value < 1:
            return None
        if not a.guard.exact or not an.threads.executing(a):
            return None
        amounts.append(ga.operand.value)
    if not adds:
        return None
    zero = {lp.counter.name: E.Const(0)}
    for gate in spins:
        if gate is sp or gate.order < sp.order or gate.spin is None or gate.spin.breaks:
            continue
        if _outer_loop(an, gate) is not lp or gate.guard.uniform:
            continue
        gw = spin_wait_on_global_word(an, gate)
        if gw is None:
            continue
        poll, flag, gcond = gw
        if poll.global_access is None or poll.global_access.where != "" or flag == counter:
            continue
        gthreads = an.threads.executing(gate) or frozenset()
        if any(not (an.threads.executing(a) or frozenset()) <= gthreads for a in adds):
            continue
        fw = [o for o in writes if o.global_access.base == flag]  # type: ignore[union-attr]
        if not fw or not all(_after_wait(an, w, sp, lp) for w in fw):
            continue
        # S blocks at iteration 0 while F holds its value before the launch (0)
        held = E.substitute(E.substitute(gcond, zero), {poll.global_access.result: E.Const(0)})
        if solver.always(held, assume=tuple(E.substitute(u, zero) for u in gate.guard.uniform)) is not True:
            continue
        before = [(a, n) for a, n in zip(adds, amounts) if a.order < gate.order]
        bound = sum(len(an.threads.executing(a) or ()) * grid * n for a, n in before)
        # W's condition holds for every value of C up to the bound, at L's counter 0, in a block
        # that reaches it
        bid = E.Var("blockIdx.x", E.PARAM)
        reach = [E.substitute(u, zero) for u in sp.guard.uniform]
        reach += [E.binop(">=", bid, E.Const(0)), E.binop("<", bid, E.Const(grid))]
        if not solver.feasible(E.conj(*reach)):
            continue
        tested = [v for v in facts.cond.free_vars() if v.name in named]
        vals = tuple(c for v in tested for c in (E.binop(">=", v, E.Const(0)), E.binop("<=", v, E.Const(bound))))
        cond = E.substitute(facts.cond, zero)
        if solver.always(cond, assume=(*vals, *reach)) is not True:
            continue
        before_adds = [a for a, _ in before]
        return CountHang(sp, counter, polls, before_adds, bound, gate, flag, fw, grid, tuple(named))
    return None


def _after_wait(an: Analysis, w: ir.Op, sp: ir.Op, lp: ir.Loop) -> bool:
    """w comes after a pass of W(0) in every thread that runs it: in L's body after W, by W's
    threads (of W's blocks: its block-uniform conditions include W's)."""
    if w.loops != (lp.id,) or w.order < sp.order or not w.guard.exact:
        return False
    if not set(sp.guard.uniform) <= set(w.guard.uniform):
        return False
    mine = an.threads.executing(w) or frozenset()
    return bool(mine) and mine <= (an.threads.executing(sp) or frozenset())


@dataclass
class CountRace:
    """A count wait that can be passed in round 0 while a block has not run at all: its read of
    global data after the wait and that block's write of the element before it counts itself in
    are ordered in neither direction."""

    spin: ir.Op  # W's SPIN head
    counter: str
    adds: list[ir.Op]  # the additions every block makes before W's first pass can be asked
    reached: int  # the value of C at which W is passed without the late block
    write: ir.Op  # the late block's store of the data
    read: ir.Op  # the waiter's load of it after W
    late: int  # the late block
    waiter: int  # the waiter's block
    grid: int
    tested: tuple[str, ...] = ()


def count_races(an: Analysis) -> list[CountRace]:
    """The reads after a count wait that a block's write may follow (see `_race`)."""
    return an.fact("counted_waits.races", _races)


def _races(an: Analysis) -> list[CountRace]:
    m = an.model
    out: list[CountRace] = []
    spins = [o for o in m.ops if o.kind == ir.SPIN and o.spin is not None and o.spin.cond is not None]
    if not spins or any(o.kind == ir.CALL for o in m.ops):
        return out
    grid = _grid(an)
    if grid is None or grid < 2:
        return out
    for sp in spins:
        r = _race(an, sp, grid)
        if r is not None:
            out.append(r)
    return out


def _race(an: Analysis, sp: ir.Op, grid: int) -> CountRace | None:
    """Round 0 of L, in the execution where one block b (not the waiter's) has not started: every
    other block runs to its additions of C (nothing before them waits for another block: no spin,
    grid barrier or exit before the read), so C can hold any value up to n = (the additions every
    block makes before W, amount 1) x (G - 1); when W's condition at its first test lets it go at
    some value <= n (z3, each tested value that value; the condition reads nothing else), the
    waiter passes W and reaches its plain load R of global data D after W, while b's plain store
    of D before its additions has not run: when R and that store name one element (z3, b != the
    waiter's block) they are ordered in neither direction (a read of the value before b's write).
    The value W tests is at least the waiter's own additions before it (they precede its load).
    None when any step is not proved."""
    from .. import solver

    m = an.model
    facts = sp.spin
    assert facts is not None and facts.cond is not None
    cw = _count_wait(an, sp)
    if cw is None:
        return None
    lp, counter, _polls, named, waiters = cw
    wl = sp.loops[-1]
    own_loop = m.loops.get(wl)
    if own_loop is None:
        return None
    # what W's loop runs: loads of C and waits on it (nested spins and their polls)
    if any(
        wl in o.loops and o.kind != ir.SPIN and not (o.kind == ir.GLOBAL_LOAD and _word(o) == counter) for o in m.ops
    ):
        return None
    adds = [o for o in m.ops if o.kind in _WRITES and o.global_access is not None and o.global_access.base == counter]
    early = []
    for a in adds:
        ga = a.global_access
        assert ga is not None
        if a.kind != ir.GLOBAL_SIGNAL or ga.atomic != "add" or ga.where != "":
            return None
        if not isinstance(ga.operand, E.Const) or not isinstance(ga.operand.value, int) or ga.operand.value < 1:
            return None
        if (
            a.loops == (lp.id,)
            and a.order < sp.order
            and a.guard.exact
            and not a.guard.uniform
            and ga.operand.value == 1
            and an.threads.executing(a)
        ):
            early.append(a)
    if not early:
        return None
    n_other = sum(len(an.threads.executing(a) or ()) for a in early) * (grid - 1)
    # the waiter's own additions come before its first load: C is at least that many there
    own = max(sum(1 for a in early if t in (an.threads.executing(a) or ())) for t in waiters)
    zero = {lp.counter.name: E.Const(0), own_loop.counter.name: E.Const(0)}
    cond = E.substitute(facts.cond, zero)
    v = E.Var("?count", E.OPAQUE)
    cond = E.substitute(cond, {n: v for n in named})
    bid = E.Var("blockIdx.x", E.PARAM)
    if any(x.name not in ("?count", "blockIdx.x") for x in cond.free_vars()):
        return None
    reach = [E.substitute(u, zero) for u in sp.guard.uniform]
    if any(x.name != "blockIdx.x" for u in reach for x in u.free_vars()):
        return None
    goes = E.conj(
        E.negate(cond),
        E.binop(">=", v, E.Const(own)),
        E.binop("<=", v, E.Const(n_other)),
        E.binop(">=", bid, E.Const(0)),
        E.binop("<", bid, E.Const(grid)),
        *reach,
    )
    seen = solver.witness(goes, an.solver_timeout_ms)
    if seen is None:
        return None
    for rd in m.ops:
        if not _plain_read(rd) or rd.order < sp.order or wl in rd.loops or rd.loops[:1] != (lp.id,):
            continue
        if not _in_waiter(an, rd, sp):
            continue
        # nothing before the read waits for another block, but W and its nested waits
        if any(
            o.order < rd.order
            and (
                (o.kind == ir.SPIN and wl not in o.loops)
                or o.kind in (ir.EXIT, ir.MBAR_WAIT)
                or (o.kind == ir.SYNC and o.sync_kind in ("grid", "cluster"))
            )
            for o in m.ops
        ):
            return None
        for wr in m.ops:
            if not _plain_write(wr) or wr.global_access.base != rd.global_access.base:  # type: ignore[union-attr]
                continue
            if wr.loops[:1] != (lp.id,) or not any(wr.order < a.order for a in early):
                continue
            hit = _meet(an, wr, rd, sp, lp, grid)
            if hit is not None:
                late, waiter = hit
                at = seen.get("?count")
                reached = at if isinstance(at, int) and not isinstance(at, bool) else n_other
                return CountRace(sp, counter, early, reached, wr, rd, late, waiter, grid, tuple(named))
    return None


def _plain_read(o: ir.Op) -> bool:
    ga = o.global_access
    return o.kind == ir.GLOBAL_LOAD and ga is not None and ga.atomic is None and ga.sem == "weak" and bool(ga.base)


def _plain_write(o: ir.Op) -> bool:
    ga = o.global_access
    return o.kind == ir.GLOBAL_STORE and ga is not None and ga.atomic is None and bool(ga.base)


def _in_waiter(an: Analysis, rd: ir.Op, sp: ir.Op) -> bool:
    """rd runs on W's threads only, in W's blocks, after W in the same iteration of L."""
    if not rd.guard.exact or not set(sp.guard.uniform) <= set(rd.guard.uniform):
        return False
    mine = an.threads.executing(rd) or frozenset()
    return bool(mine) and mine <= (an.threads.executing(sp) or frozenset())


def _meet(an: Analysis, wr: ir.Op, rd: ir.Op, sp: ir.Op, lp: ir.Loop, grid: int) -> tuple[int, int] | None:
    """(b, c): block b's store wr in round 0 and the waiter's (block c != b) load rd name one
    element (z3 over each side's thread, block and inner loop counters), or None."""
    from .. import solver

    m = an.model
    gw, gr = wr.global_access, rd.global_access
    assert gw is not None and gr is not None
    if gw.index is None or gr.index is None or gw.index.is_opaque() or gr.index.is_opaque():
        return None
    if wr.guard.blind or rd.guard.blind or not wr.guard.exact:
        return None
    assert isinstance(lp.counter, E.Var)

    def side(o: ir.Op, tag: str) -> tuple[dict, list]:
        ren: dict = {lp.counter.name: E.Const(0)}
        conds: list = []
        for lid in o.loops[1:]:
            il = m.loops.get(lid)
            if il is None or not isinstance(il.counter, E.Var) or il.trip is None or il.trip.depends_on(E.LOOP):
                return {}, []
            k = E.Var(f"{il.counter.name}#{tag}", E.LOOP)
            ren[il.counter.name] = k
            conds += [E.binop(">=", k, E.Const(0)), E.binop("<", k, il.trip)]
        return ren, conds

    rw, cw = side(wr, "w")
    rr, cr = side(rd, "r")
    if not rw or not rr:
        return None
    n = an.threads.n
    vals: dict = {}
    for tag, ren in (("w", rw), ("r", rr)):
        ren["blockIdx.x"] = E.Var(f"blockIdx.x#{tag}", E.PARAM)
        for t in ("tid", "threadIdx.x"):
            ren[t] = E.Var(f"tid#{tag}", E.THREAD)
        vals[tag] = ren
    b, c = vals["w"]["blockIdx.x"], vals["r"]["blockIdx.x"]
    tw, tr = vals["w"]["tid"], vals["r"]["tid"]
    conds = [
        E.substitute(gw.index, rw),
        E.substitute(gr.index, rr),
    ]
    allc = [
        E.binop("==", conds[0], conds[1]),
        E.binop("!=", b, c),
        E.binop(">=", b, E.Const(0)),
        E.binop("<", b, E.Const(grid)),
        E.binop(">=", c, E.Const(0)),
        E.binop("<", c, E.Const(grid)),
        E.binop(">=", tw, E.Const(0)),
        E.binop(">=", tr, E.Const(0)),
        E.substitute(wr.guard.thread, rw),
        E.substitute(rd.guard.thread, rr),
        *[E.substitute(u, rw) for u in wr.guard.uniform],
        *[E.substitute(u, rr) for u in rd.guard.uniform],
        *cw,
        *cr,
    ]
    if isinstance(n, int):
        allc += [E.binop("<", tw, E.Const(n)), E.binop("<", tr, E.Const(n))]
    else:
        return None
    every = E.conj(*allc)
    if any(x.is_opaque() for x in allc) or any("#" not in x.name for x in every.free_vars()):
        return None  # a value not renamed per side (another thread index, a launch value)
    w = solver.witness(every, an.solver_timeout_ms)
    if w is None:
        return None
    bv, cv = w.get(b.name), w.get(c.name)
    if not isinstance(bv, int) or not isinstance(cv, int):
        return None
    return bv, cv
