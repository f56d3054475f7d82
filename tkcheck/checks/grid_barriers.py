"""Hand-written grid barriers: an arrival counter and a release word in global memory (issue 25,
round 9, branch r9-gridbar).

The primitive, whatever its spelling (a generation counter, a flag raised by the last arriver):
one thread of every block performs an arrival read-modify-write on a counter C
(`atomicAdd(count, 1)`); the block whose old value satisfies the release condition P (the last
arriver: `old == gridDim.x - 1`) may reset C and raises a word F (`atomicAdd(gen, 1)`); every
other block spins on F until it changes (`while (ld_acquire(gen) == g)`, g read before the
arrival). Nothing here names a variable: the roles come from the events (which RMW's old value
the spin's branch tests, which words each branch writes).

What is asked (`barriers(an)`, one fact per kernel):

* progress (`protocol.spin_waits` asks `spin_wait_on_counter`): the instances of the barrier in
  program order (every arrival site, each iteration of constant-trip loops around them, or one
  iteration and an inductive step when the counter's value at the loop head repeats) are
  followed symbolically over the grid size N = gridDim.x (z3, linear integer arithmetic; the
  counter starts at 0, the host zeroes it). In an instance whose counter starts at c the blocks
  read c, c + a, ..., c + (N - 1) a (one arrival of amount a per block, in some order). When no
  value satisfies P for any N, no block raises F in that instance and every block waits forever
  (`CounterHang`, a wait no block satisfies). When exactly the last value does, the instance opens; the counter then
  holds the reset's value, or c + N a without a reset. Anything else (a release before the last
  arrival, values z3 does not decide, writes of C or F elsewhere) is undecided.
* order (`late_resets`, an unpublished write through happens_before.memory): the releaser's reset of C must be
  ordered before its raise of F -- the released blocks' next arrivals on C follow their
  observation of F, and a reset not released before the raise may land after such an arrival and
  erase it (the barrier after it never opens).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

_N = "gridDim.x"


@dataclass
class CounterBarrier:
    """One arrival site of a counter barrier and its two branches."""

    arrive: ir.Op  # the arrival RMW on the counter (add of a constant)
    counter: str  # the counter's kernel pointer
    flag: str  # the word the waiters spin on
    spin: ir.Op  # the waiters' SPIN head
    poll: ir.Op  # the load the spin's condition tests
    # the waiter's read of the flag before its arrival (the value it waits to change); None for a
    # sense flag (the loop goes on while the flag differs from `target`, the block's sense)
    snapshot: ir.Op | None
    release: E.Expr  # P over the arrival's old value (the Var `arrive.global_access.result`)
    resets: list[ir.Op] = field(default_factory=list)  # the release branch's writes of the counter
    raises: list[ir.Op] = field(default_factory=list)  # the release branch's writes of the flag
    target: E.Expr | None = None  # a sense flag: the value the waiter waits for (`while (ld(F) != s)`)


@dataclass
class CounterHang:
    """An instance of a counter barrier whose arrivals no block can satisfy the release with."""

    barrier: CounterBarrier
    iteration: int  # of the loop around the arrival sites (0 outside loops)
    start: E.Expr  # the counter's value when the instance begins, over gridDim.x
    amount: int
    history: list[str]  # how the counter got there (one line per earlier instance)
    # a sense flag raised with a value the waiters do not wait for (the instance opens, but its
    # waiters never leave); None: no block releases
    wrote: E.Expr | None = None
    before: E.Expr | None = None  # the sense flag's value when the instance began


@dataclass
class LateReset:
    """The releaser resets the counter after (or not ordered before) raising the flag."""

    reset: ir.Op
    raise_: ir.Op
    why: str  # "after": raised first in program order; "relaxed": no release between them


@dataclass
class GridBarrierFacts:
    barriers: list[CounterBarrier] = field(default_factory=list)
    hangs: list[CounterHang] = field(default_factory=list)
    late_resets: list[LateReset] = field(default_factory=list)
    proved: set[int] = field(default_factory=set)  # id(spin) proved left by every block
    undecided: dict[int, str] = field(default_factory=dict)  # id(spin) -> why


def barriers(an: Analysis) -> GridBarrierFacts:
    return an.fact("grid_barriers.barriers", _barriers)


def spin_wait_on_global_word(an: Analysis, sp: ir.Op) -> tuple[ir.Op, str, E.Expr] | None:
    """A spin loop on a word in global memory as a wait: (the poll whose loaded value the loop's
    condition tests, the word's kernel pointer, the condition) when the condition reads exactly
    one loaded value of one known word; None otherwise. Shared by every spin question (the
    grid-wide flag of `protocol.spin_waits`, the counter barrier here)."""
    facts = sp.spin
    if facts is None or facts.cond is None or not sp.loops:
        return None
    lid = sp.loops[-1]
    polls = [
        o
        for o in an.model.ops
        if lid in o.loops and o.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL) and o.global_access is not None
    ]
    results = {o.global_access.result: o for o in polls if o.global_access.result}  # type: ignore[union-attr]
    read = [results[n] for n in {v.name for v in facts.cond.free_vars()} if n in results]
    if len(read) != 1:
        return None
    poll = read[0]
    ga = poll.global_access
    assert ga is not None
    if poll.kind != ir.GLOBAL_LOAD or ga.base is None:
        return None
    return poll, ga.base, facts.cond


def _negation(c: E.Expr) -> E.Expr:
    return E.negate(c)  # as the walk negates a branch's condition for its `else`


def _writes(m: ir.KernelModel, base: str) -> list[ir.Op]:
    return [
        o
        for o in m.ops
        if o.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE)
        and o.global_access is not None
        and o.global_access.base == base
        and o.global_access.atomic != "ld"
    ]


def _unknown_writes(m: ir.KernelModel) -> bool:
    return any(
        o.kind == ir.TMA_STORE
        or o.kind == ir.CALL
        or (o.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE) and (o.global_access is None or o.global_access.base is None))
        for o in m.ops
    )


def _recognise(an: Analysis, sp: ir.Op) -> CounterBarrier | str | None:
    """The counter barrier whose wait branch `sp` is, or why not (a string), or None when `sp`
    is no spin on a global word under a branch on a counter's old value."""
    got = spin_wait_on_global_word(an, sp)
    if got is None:
        return None
    poll, flag, cond = got
    m = an.model
    outer = sp.loops[:-1]
    signals = {
        o.global_access.result: o
        for o in m.ops
        if o.kind == ir.GLOBAL_SIGNAL and o.global_access is not None and o.global_access.result
    }
    tests = [(c, signals[v.name]) for c in sp.guard.uniform for v in c.free_vars() if v.name in signals]
    if not tests:
        return None
    if len(tests) != 1:
        return "the wait branch tests several atomics' old values"
    wait_cond, arr = tests[0]
    aga = arr.global_access
    assert aga is not None
    if aga.base is None or aga.base == flag:
        return None
    if aga.atomic != "add" or aga.operand is None or not isinstance(aga.operand.eval({}), int):
        return "the arrival is not an add of a constant"
    if arr.loops != outer or arr.order >= sp.order or not arr.guard.exact or arr.guard.uniform:
        return "the arrival is not made once per block in the spin's iteration"
    ta, ts = an.threads.executing(arr), an.threads.executing(sp)
    if not ta or len(ta) != 1 or ta != ts:
        return "the arrival and the wait are not one thread of each block"
    if [c for c in sp.guard.uniform if c is not wait_cond]:
        return "the wait is under other block-uniform conditions"
    release = _negation(wait_cond)
    # the value the waiter waits to change: a load of the flag by the same thread before its
    # arrival, and the loop goes on while the flag still holds it
    pga = poll.global_access
    assert pga is not None
    v_name = pga.result
    snap = None
    if isinstance(cond, E.Bin) and cond.op == "==" and all(isinstance(x, E.Var) for x in (cond.a, cond.b)):
        names = {cond.a.name, cond.b.name}  # type: ignore[union-attr,attr-defined]
        if v_name in names and len(names) == 2:
            (g_name,) = names - {v_name}
            for o in m.ops:
                oga = o.global_access
                if (
                    o.kind == ir.GLOBAL_LOAD
                    and oga is not None
                    and oga.result == g_name
                    and oga.base == flag
                    and o.loops == outer
                    and o.order < arr.order
                    and not o.guard.uniform
                    and o.guard.exact
                    and an.threads.executing(o) == ta
                ):
                    snap = o
    target = None
    if snap is None:
        # a sense flag: `while (ld(F) != s)` with s a value of the launch (the block's sense,
        # which the walk evaluates per iteration)
        if isinstance(cond, E.Bin) and cond.op == "!=":
            other = cond.b if isinstance(cond.a, E.Var) and cond.a.name == v_name else cond.a
            if other is not cond.a or (isinstance(cond.b, E.Var) and cond.b.name == v_name):
                if not any(
                    x.name == v_name or x.kind in (E.THREAD, E.OPAQUE) or x.name.startswith("?")
                    for x in other.free_vars()
                ):
                    target = other
        if target is None:
            return "the spin waits neither for the flag to change from a value read before the arrival nor for a sense value"
    else:
        sga = snap.global_access
        assert sga is not None
        between = [o for o in m.ops if snap.order < o.order < arr.order and o.loops == outer]
        if not (sga.sem in ("acquire", "acq_rel") or any(o.kind == ir.FENCE for o in between)):
            return "the read of the flag is not ordered before the arrival"
    branch = [o for o in m.ops if o.loops[: len(outer)] == outer and release in o.guard.uniform and o.order > arr.order]
    resets = [
        o
        for o in branch
        if o.global_access is not None
        and o.global_access.base == aga.base
        and o.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE)
    ]
    raises = [
        o
        for o in branch
        if o.global_access is not None
        and o.global_access.base == flag
        and o.kind in (ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE)
    ]
    return CounterBarrier(arr, aga.base, flag, sp, poll, snap, release, resets, raises, target)


def _barriers(an: Analysis) -> GridBarrierFacts:
    from .. import solver

    out = GridBarrierFacts()
    m = an.model
    found: list[CounterBarrier] = []
    for sp in m.ops:
        if sp.kind != ir.SPIN:
            continue
        b = _recognise(an, sp)
        if isinstance(b, str):
            out.undecided[id(sp)] = b
        elif b is not None:
            found.append(b)
    if not found:
        return out
    out.barriers = found

    def undecide(why: str, bs=None) -> None:
        for b in bs or found:
            out.undecided.setdefault(id(b.spin), why)

    if _unknown_writes(m):
        undecide("a write whose address is not known (or an unmodelled call) may touch the counter or the flag")
        return out
    if any(o.kind == ir.EXIT for o in m.ops):
        undecide("a block may leave the kernel before it arrives")
        return out
    by_counter: dict[str, list[CounterBarrier]] = {}
    for b in found:
        by_counter.setdefault(b.counter, []).append(b)
    for counter, bs in by_counter.items():
        bs.sort(key=lambda b: b.arrive.order)
        flags = {b.flag for b in bs}
        if len(flags) != 1:
            undecide("one counter, several flags", bs)
            continue
        flag = next(iter(flags))
        sites = {id(b.arrive) for b in bs} | {id(r) for b in bs for r in b.resets}
        if any(id(w) not in sites for w in _writes(m, counter)):
            undecide("the counter is written outside the barrier's arrivals and resets", bs)
            continue
        raised = {id(r) for b in bs for r in b.raises}
        if any(id(w) not in raised for w in _writes(m, flag)):
            undecide("the flag is written outside the barrier's release branches", bs)
            continue
        # the order of the releaser's reset and raise (the next instance's arrivals follow the raise)
        for b in bs:
            for r in b.resets:
                for f in b.raises:
                    if f.order < r.order:
                        out.late_resets.append(LateReset(r, f, "after"))
                        continue
                    between = [o for o in m.ops if r.order < o.order < f.order]
                    if not _release_before(f, between):
                        out.late_resets.append(LateReset(r, f, "relaxed"))
        _progress(an, bs, out, solver)
    return out


def _release_before(f: ir.Op, between: list[ir.Op]) -> bool:
    from .happens_before import releases

    return releases(f) or any(releases(o) for o in between)


def _progress(an: Analysis, bs: list[CounterBarrier], out: GridBarrierFacts, solver) -> None:
    """Follow the counter through the instances of the barrier (see the module's text)."""
    m = an.model
    loops = {b.arrive.loops for b in bs}
    if len(loops) != 1:
        for b in bs:
            out.undecided.setdefault(id(b.spin), "the arrivals are in different loops")
        return
    (lps,) = loops
    trips = []
    for lid in lps:
        lp = m.loops.get(lid)
        if (
            lp is None
            or lp.trip is None
            or any(
                v.kind in (E.THREAD, E.OPAQUE) or v.name.startswith(("?", "blockIdx", "cta_rank", "grid.block_rank"))
                for v in lp.trip.free_vars()
            )
        ):
            for b in bs:  # a trip count some block may not share: not followed
                out.undecided.setdefault(id(b.spin), "the loop around the arrivals may run a different count per block")
            return
        t = lp.trip.eval({})
        trips.append(t if isinstance(t, int) and t >= 0 else None)
    if len(lps) > 1:
        for b in bs:
            out.undecided.setdefault(id(b.spin), "arrivals in nested loops")
        return
    trip = trips[0] if trips else 1
    n = E.Var(_N, E.PARAM)
    i = E.Var("gb.i", E.PARAM)
    c: E.Expr = E.Const(0)
    fval: E.Expr = E.Const(0)  # the flag's value (sense flags), zeroed before the launch
    history: list[str] = []
    bad: CounterBarrier | None = None
    rounds = trip if trip is not None else 2
    if trip is not None and trip > 64:
        rounds = 2  # by induction below
    start_of_round: list[E.Expr] = []
    for k in range(rounds):
        start_of_round.append(c)
        for b in bs:
            aga = b.arrive.global_access
            assert aga is not None
            a = int(aga.operand.eval({}))  # type: ignore[union-attr, arg-type]
            res = aga.result
            assert res is not None
            p = b.release
            free = {v.name for v in p.free_vars()} - {res, _N}
            if free:
                out.undecided.setdefault(
                    id(b.spin), "the release condition reads other values than the count and the grid size"
                )
                return
            at = lambda x, p=p, res=res: E.substitute(p, {res: x})  # noqa: E731
            vals = E.binop("+", c, E.binop("*", i, E.Const(a)))
            dom = (E.binop(">=", i, E.Const(0)), E.binop("<", i, n))
            anyone = solver.witness(E.conj(*dom, at(vals)))
            if anyone is None:
                nobody = solver.always(E.negate(E.conj(*dom, at(vals))))
                if nobody is True and b.target is not None and solver.always(E.binop("!=", fval, b.target)) is not True:
                    out.undecided.setdefault(
                        id(b.spin), "no block releases, but the sense flag may already hold the sense"
                    )
                    return
                if nobody is True:
                    out.hangs.append(CounterHang(b, k, c, a, list(history)))
                    bad = b
                    break
                out.undecided.setdefault(id(b.spin), "whether a block's arrival releases the barrier is not decided")
                return
            last = E.substitute(vals, {"gb.i": E.binop("-", n, E.Const(1))})
            opens = solver.always(at(last))
            early = E.conj(E.binop(">=", i, E.Const(0)), E.binop("<", i, E.binop("-", n, E.Const(1))), at(vals))
            if opens is not True or solver.always(E.negate(early)) is not True:
                out.undecided.setdefault(
                    id(b.spin), "the barrier may open before every block arrived (or not at the last arrival)"
                )
                return
            if not b.raises:
                out.hangs.append(CounterHang(b, k, c, a, list(history)))
                bad = b
                break
            # the raise lets the waiters go: a generation moved by a non-zero add, or a sense flag
            # given the value the waiters wait for
            rs = b.raises[-1]
            fga = rs.global_access
            assert fga is not None
            wval = fga.operand if fga.atomic in ("exch", "st") else None
            if len(b.raises) != 1 or (
                b.target is None and (fga.atomic != "add" or fga.operand is None or fga.operand.eval({}) in (0, None))
            ):
                out.undecided.setdefault(id(b.spin), "the raise of the flag is not an add of a non-zero constant")
                return
            if b.target is not None:
                if wval is None or any(v.kind != E.PARAM or v.name.startswith("?") for v in wval.free_vars()):
                    out.undecided.setdefault(id(b.spin), "the sense flag's raise is not a store of a known value")
                    return
                lets_go = solver.always(E.binop("==", wval, b.target))
                if lets_go is not True:
                    stuck = solver.always(E.conj(E.binop("!=", wval, b.target), E.binop("!=", fval, b.target)))
                    if stuck is True:
                        h = CounterHang(b, k, c, a, list(history))
                        h.wrote, h.before = wval, fval
                        out.hangs.append(h)
                        bad = b
                        break
                    out.undecided.setdefault(id(b.spin), "whether the raised sense lets the waiters go is not decided")
                    return
                fval = wval
            # what the counter holds for the next instance
            late = any(lr.reset in b.resets for lr in out.late_resets)
            if late:
                out.undecided.setdefault(id(b.spin), "the reset may erase a later arrival")
                return
            if b.resets:
                r = b.resets[-1]
                rga = r.global_access
                if len(b.resets) != 1 or rga is None or rga.atomic not in ("exch", "st", None) or rga.operand is None:
                    out.undecided.setdefault(id(b.spin), "the counter's reset is not a store of a known value")
                    return
                if any(v.kind != E.PARAM or v.name.startswith("?") for v in rga.operand.free_vars()):
                    out.undecided.setdefault(id(b.spin), "the counter's reset is not a store of a known value")
                    return
                c = rga.operand
                history.append(
                    f"line {b.arrive.location.row}: the last of the N blocks reads {_show(last)} and resets the count to {c}"
                )
            else:
                c = E.binop("+", c, E.binop("*", n, E.Const(a)))
                history.append(
                    f"line {b.arrive.location.row}: the last of the N blocks reads {_show(last)}; no reset: the count is {_show(c)}"
                )
        if bad is not None:
            break
    if bad is not None:
        for b in bs:
            if b is bad:
                continue
            out.undecided.setdefault(id(b.spin), "an earlier instance of the barrier never opens")
        return
    if trip is None or rounds < (trip or 0):
        # an inductive step: the count at the loop head repeats
        if len(start_of_round) < 2 or solver.always(E.binop("==", start_of_round[0], start_of_round[1])) is not True:
            for b in bs:
                out.undecided.setdefault(id(b.spin), "the count at the loop head does not repeat (no inductive step)")
            return
    for b in bs:
        if id(b.spin) not in out.undecided:
            out.proved.add(id(b.spin))


def _show(e: E.Expr) -> str:
    return str(e).replace(_N, "N")
