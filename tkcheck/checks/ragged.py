"""Loops each thread leaves at an iteration of its own (issue 25, round 10, branch `r10-exits`).

A loop L is *ragged* when its trip count is a number per thread: a trip over the thread index (a
per-thread `break` at `k == last(tid)`, `Loop.trip` over `tid`), or a `while (c)` whose condition
reads a value each thread computes on its own (`Loop.thread_exit`: `more = delta > TOL`, a warp
vote's answer), a symbol N(t) >= 1 per thread. The happens-before question for two accesses in L
is asked of thread A's iteration i and thread B's iteration j, i and j free (each below its own
thread's trip), including the iterations after some threads left.

The synchronisation inside L that orders such a pair, one semantics per kind:

* none (L's body has no synchronising op): nothing orders iteration i of A and iteration j of B.
  Ops before L and after L cannot: every thread passes the block barriers outside L in the same
  sequence (required: each is run by every thread, unconditionally), so a barrier before L is
  passed by both before either access and one after L by neither before its access.
* warp-scoped synchronisation only (`__any_sync`, `__ballot_sync`, `__syncwarp`): it orders the
  lanes of one warp; two threads of different warps are ordered by nothing (`narrow`).
* one split barrier X (an mbarrier, libcu++ `cuda::barrier`): every iteration a thread runs holds
  exactly one arrival on X, a plain arrive followed by a wait on that arrival's phase (parity
  i % 2), or an `arrive_drop` in the thread's last iteration (no wait); X is initialised once,
  outside L, for every thread of the block, and used nowhere else. Then the thread's a-th arrival
  is in phase a, and phase p completes exactly when every thread still on X made its p-th arrival
  (z3 over t and i proves the shape). An op x of A is before A's arrival number arr(x) (the
  arrivals before x in program order: i, plus the ones of iteration i before x) and an op y of B
  after B's waits wt(y) (i plus the waits of iteration j before y); x happens before y iff A makes
  that arrival (arr(x) < trip(A)) and phase arr(x) is one B has waited for (arr(x) < wt(y)).
  Phases complete in order, so chains through other threads add nothing.

Anything else in L (a block barrier, a named barrier, a spin, a call, an atomic, two barriers, a
warp op beside a barrier) and the question is not asked here (the caller keeps its answer).
A race found is proved for every launch that runs the two iterations; for a loop left on data the
finding states that assumption (`RaggedPair.assumption`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis


@dataclass
class RaggedPair:
    """A proved race of two accesses in a ragged loop: the threads and iterations of each."""

    first: ir.Op
    second: ir.Op
    first_thread: int
    second_thread: int
    first_iteration: int
    second_iteration: int
    # the warp-scoped ops in the loop that order the lanes of one warp only (the two threads are
    # of different warps): the sync-scope contract's
    narrow: tuple[ir.Op, ...] = ()
    # the split barrier whose phases were asked (None: no barrier in the loop)
    barrier: str | None = None
    # a loop left on data: the launches the race needs ("thread 1 runs at least 2 iterations")
    assumption: str | None = None
    waited: bool = True  # the loop waits on `barrier` (else it only arrives: its phases order nothing)


UNKNOWN = "unknown"

_WARP_OPS = (ir.WARP_COLL,)


def ragged_loop(an: Analysis, o: ir.Op) -> ir.Loop | None:
    """The ragged loop o is directly in (its only loop), when o runs in every iteration of it
    its thread guard names: None for any other op."""
    if len(o.loops) != 1:
        return None
    lp = an.model.loops.get(o.loops[0])
    if lp is None:
        return None
    if lp.thread_exit:
        if o.guard.exact_but_exits and o.guard.exits == (lp.id,):
            return lp
        return None
    if lp.trip is not None and lp.trip.depends_on(E.THREAD) and not lp.trip.is_opaque() and o.guard.exact:
        return lp
    return None


def _side(lp: ir.Loop, tag: str) -> dict[str, E.Expr]:
    return {
        "tid": E.Var(f"tid.{tag}", E.THREAD),
        "tid_y": E.Const(0),
        "tid_z": E.Const(0),
        lp.counter.name: E.Var(f"k.{tag}", E.LOOP),
    }


def _ind(c: E.Expr) -> E.Expr:
    return E.ite(c, E.Const(1), E.Const(0))


def _outside_ok(an: Analysis, lp: ir.Loop, barrier: str | None) -> bool:
    """Nothing outside L can order two iterations inside it: every synchronising op outside L
    is a block barrier run by every thread unconditionally, or the init of L's barrier."""
    from .happens_before import may_order, polls_other_blocks

    for o in an.model.ops:
        if lp.id in o.loops:
            continue
        if o.kind == ir.SYNC:
            if o.sync_kind != "block" or o.loops or not o.guard.exact or o.guard.uniform:
                return False
            if o.guard.thread != E.TRUE:
                return False
            continue
        if o.kind == ir.MBAR_INIT:
            if o.barrier is not None and o.barrier.name == barrier and o.loops:
                return False
            continue
        if o.kind in (ir.NAMED_ARRIVE, ir.WARP_COLL) or o.kind in (ir.MBAR_ARRIVE, ir.MBAR_WAIT, ir.MBAR_EXPECT):
            return False
        if may_order(o) and not polls_other_blocks(an, o):
            return False
    return True


@dataclass
class _Body:
    """L's synchronisation: warp-scoped ops, or one split barrier's arrivals and waits."""

    warp: tuple[ir.Op, ...] = ()
    barrier: str | None = None
    arrivals: tuple[ir.Op, ...] = ()  # plain arrives and drops, in program order
    waits: tuple[ir.Op, ...] = ()


def _body(an: Analysis, lp: ir.Loop) -> _Body | None:
    """L's synchronising ops, when they are of one kind this module pairs; None otherwise."""
    from .happens_before import _is_shared_scalar_access, may_order

    body = [o for o in an.model.ops if lp.id in o.loops]
    if lp.thread_exit:
        # a `while` / `do` loop: its head is a SPIN (a `for` with such a condition has its loads
        # unwalked), left only through its condition (a `break` would end a thread's iterations
        # where its guard does not say)
        heads = [o for o in body if o.kind == ir.SPIN and o.location == lp.location]
        if len(heads) != 1 or heads[0].spin is None or heads[0].spin.breaks:
            return None
    warp: list[ir.Op] = []
    mb: list[ir.Op] = []
    for o in body:
        if len(o.loops) != 1:
            if o.kind in (ir.SYNC, ir.NAMED_ARRIVE, ir.WARP_COLL) or may_order(o):
                return None
            continue
        if o.kind == ir.SMEM_ACCESS:
            a = o.access
            if not _is_shared_scalar_access(an, o) or a is None or a.atomic or a.volatile:
                return None
            continue
        if o.kind == ir.SPIN:
            # L's own head: its condition loads nothing (no event of the body runs under the
            # head's guard: the condition's loads would) -- it is each thread's own exit test
            if not lp.thread_exit or o.location != lp.location:
                return None
            if any(q is not o and q.guard.exact and not q.guard.exits for q in body):
                return None
            continue
        if o.kind in _WARP_OPS or (o.kind == ir.SYNC and o.sync_kind == "warp"):
            warp.append(o)
            continue
        if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_WAIT):
            mb.append(o)
            continue
        if o.kind in (ir.SYNC, ir.NAMED_ARRIVE, ir.MBAR_EXPECT, ir.MBAR_INIT) or may_order(o):
            return None
    if warp and mb:
        return None  # a chain through a lane of the warp and the barrier: not paired here
    if not mb:
        return _Body(warp=tuple(warp))
    names = {o.barrier.name if o.barrier is not None else None for o in mb}
    if len(names) != 1 or None in names:
        return None
    name = names.pop()
    if any(o.barrier is not None and o.barrier.index for o in mb):
        return None  # one scalar barrier (an element of an array of barriers: not asked here)
    arrivals = tuple(o for o in mb if o.kind == ir.MBAR_ARRIVE)
    waits = tuple(o for o in mb if o.kind == ir.MBAR_WAIT)
    return _Body(barrier=name, arrivals=arrivals, waits=waits)


def _barrier_shape(an: Analysis, lp: ir.Loop, b: _Body) -> bool:
    """The split barrier's shape (module doc), proved by z3 over a thread t < n and an iteration
    i it runs: one arrival an iteration, a wait iff a plain arrive, after it, on phase i's
    parity, a drop only in the thread's last iteration; one init of count n, outside L."""
    from .. import solver

    n = an.threads.n
    m = an.model
    inits = [o for o in m.ops if o.kind == ir.MBAR_INIT and o.barrier is not None and o.barrier.name == b.barrier]
    if len(inits) != 1 or inits[0].loops or inits[0].count is None:
        return False
    if inits[0].count.eval({}) != n:
        return False
    others = [
        o
        for o in m.ops
        if o.barrier is not None and o.barrier.name == b.barrier and o.kind != ir.MBAR_INIT and lp.id not in o.loops
    ]
    if others:
        return False
    for a in b.arrivals:
        c = a.count.eval({}) if a.count is not None else 1
        if c != 1 or a.issuers_per_group or (a.mbar is not None and (a.mbar.remote or a.mbar.multicast)):
            return False
    plain = [a for a in b.arrivals if not (a.mbar is not None and a.mbar.drop)]
    drops = [a for a in b.arrivals if a.mbar is not None and a.mbar.drop]
    if drops and lp.thread_exit:
        return False  # a drop in a loop left on data: its last iteration is not known
    if plain and b.waits and max(a.order for a in plain) > min(w.order for w in b.waits):
        return False
    mp = _side(lp, "a")
    t, k = mp["tid"], mp[lp.counter.name]
    assume = [E.binop("<", t, E.Const(n)), E.binop(">=", k, E.Const(0))]
    trip = None if lp.thread_exit else E.substitute(lp.trip, mp)  # type: ignore[arg-type]
    if trip is not None:
        assume.append(E.binop("<", k, trip))

    def g(o: ir.Op) -> E.Expr:
        return E.substitute(o.guard.thread, mp)

    def total(ops) -> E.Expr:
        s: E.Expr = E.Const(0)
        for o in ops:
            s = E.binop("+", s, _ind(g(o)))
        return s

    claims = [
        E.binop("==", total(b.arrivals), E.Const(1)),
        E.binop("==", total(b.waits), total(plain)),
    ]
    for d in drops:
        assert trip is not None
        claims.append(E.binop("||", E.negate(g(d)), E.binop("==", k, E.binop("-", trip, E.Const(1)))))
    for w in b.waits:
        if w.parity is None:
            return False
        p = E.substitute(w.parity, mp)
        claims.append(
            E.binop("||", E.negate(g(w)), E.binop("==", E.binop("%", p, E.Const(2)), E.binop("%", k, E.Const(2))))
        )
    for claim in claims:
        if solver.always(claim, an.solver_timeout_ms, assume=tuple(assume)) is not True:
            return False
    return True


def _loop_facts(an: Analysis, lp: ir.Loop) -> tuple[_Body, bool] | None:
    """L's synchronisation and whether its split barrier (if it waits on one) has the shape the
    phase pairing needs; None: L is not asked here. Once per loop (`Analysis.fact`)."""
    b = _body(an, lp)
    if b is None or not _outside_ok(an, lp, b.barrier):
        return None
    return b, not (b.barrier is not None and b.waits and not _barrier_shape(an, lp, b))


def pair(an: Analysis, w: ir.Op, r: ir.Op) -> RaggedPair | bool | str | None:
    """Two accesses of one shared location, both directly in one ragged loop: a RaggedPair (a
    race, proved), True (ordered in every pair of iterations), UNKNOWN (asked, not decided), or
    None (not a pair this module asks)."""
    from .. import solver

    lp = ragged_loop(an, w)
    if lp is None or ragged_loop(an, r) is not lp:
        return None
    n = an.threads.n
    if n is None or w.buffer is None or r.buffer is None or len(w.buffer.index) != len(r.buffer.index):
        return None
    if set(w.guard.uniform) != set(r.guard.uniform):
        return None
    got_loop = an.fact(f"ragged.loop:{lp.id}", lambda an_: _loop_facts(an_, lp))
    if got_loop is None:
        return None
    b, shaped = got_loop
    if not shaped:
        return UNKNOWN
    ma, mb = _side(lp, "a"), _side(lp, "b")
    ta, tb = ma["tid"], mb["tid"]
    ka, kb = ma[lp.counter.name], mb[lp.counter.name]
    conds: list[E.Expr] = [
        E.binop("<", ta, E.Const(n)),
        E.binop("<", tb, E.Const(n)),
        E.binop("!=", ta, tb),
        E.substitute(w.guard.thread, ma),
        E.substitute(r.guard.thread, mb),
    ]
    conds += [E.substitute(c, ma) for c in w.guard.uniform]
    conds += [E.substitute(c, mb) for c in r.guard.uniform]
    trip_a = trip_b = None
    if not lp.thread_exit:
        assert lp.trip is not None
        trip_a, trip_b = E.substitute(lp.trip, ma), E.substitute(lp.trip, mb)
        conds += [E.binop("<", ka, trip_a), E.binop("<", kb, trip_b)]
    for x, y in zip(w.buffer.index, r.buffer.index):
        conds.append(E.binop("==", E.substitute(x, ma), E.substitute(y, mb)))
    if b.warp:
        conds.append(E.binop("!=", E.binop("/", ta, E.Const(32)), E.binop("/", tb, E.Const(32))))
    if b.barrier is not None and b.waits:
        assert trip_a is not None and trip_b is not None

        def before(sites: list[ir.Op], o: ir.Op, mp: dict, k: E.Expr) -> E.Expr:
            # k plus the sites of the iteration before o that the thread of `mp` runs
            s: E.Expr = k
            for a in sites:
                if a.order < o.order:
                    s = E.binop("+", s, _ind(E.substitute(a.guard.thread, mp)))
            return s

        def arr(o: ir.Op, mp: dict, k: E.Expr) -> E.Expr:
            return before(b.arrivals, o, mp, k)

        def wt(o: ir.Op, mp: dict, k: E.Expr) -> E.Expr:
            return before(b.waits, o, mp, k)

        def hb(x: ir.Op, mx: dict, kx: E.Expr, tx_trip: E.Expr, y: ir.Op, my: dict, ky: E.Expr) -> E.Expr:
            ax = arr(x, mx, kx)
            return E.conj(E.binop("<", ax, tx_trip), E.binop("<", ax, wt(y, my, ky)))

        conds.append(E.negate(hb(w, ma, ka, trip_a, r, mb, kb)))
        conds.append(E.negate(hb(r, mb, kb, trip_b, w, ma, ka)))
    mark = solver.inconclusive_count()
    query = E.conj(*conds)
    # whether a pair exists first (cheap), then the smallest one for the witness
    got = solver.witness(query, an.solver_timeout_ms) if solver.feasible(query, an.solver_timeout_ms) else None
    if got is None:
        return UNKNOWN if solver.inconclusive_count() > mark else True
    xa, xb = got.get("tid.a", 0), got.get("tid.b", 0)
    ia, ib = got.get("k.a", 0), got.get("k.b", 0)
    first_w = (ia, w.order) <= (ib, r.order)
    assumption = None
    if lp.thread_exit:
        late_t, late_k = (xb, ib) if ia <= ib else (xa, ia)
        assumption = (
            f"when thread {late_t} runs at least {late_k + 1} iteration{'s' if late_k else ''} of the loop, "
            "which each thread leaves on its own data"
        )
    waited = bool(b.waits)
    if first_w:
        return RaggedPair(w, r, int(xa), int(xb), int(ia), int(ib), tuple(b.warp), b.barrier, assumption, waited)
    return RaggedPair(r, w, int(xb), int(xa), int(ib), int(ia), tuple(b.warp), b.barrier, assumption, waited)


def ordered_into_loop(an: Analysis, a: ir.Op, b: ir.Op) -> bool:
    """Proved ordered: one of the two is in no loop with an exact guard and comes before a ragged
    loop the other is directly in, and a block barrier every thread runs unconditionally (exact
    guard `true`, no condition, in no loop) lies between it and the loop's first op: both threads
    pass that barrier, the first after its access, the second before every iteration it runs."""
    for x, y in ((a, b), (b, a)):
        if x.loops or not x.guard.exact:
            continue
        lp = ragged_loop(an, y)
        if lp is None:
            continue
        start = min(o.order for o in an.model.ops if lp.id in o.loops)
        if x.order >= start:
            continue
        for o in an.model.ops:
            if (
                x.order < o.order < start
                and o.kind == ir.SYNC
                and o.sync_kind == "block"
                and not o.loops
                and o.guard.exact
                and not o.guard.uniform
                and o.guard.thread == E.TRUE
            ):
                return True
    return False


def iteration_text(an: Analysis, o: ir.Op, i: int) -> str:
    """`k = 3` for a loop with a named counter, else `iteration 3 of the loop at line L`."""
    lp = an.model.loops.get(o.loops[0]) if o.loops else None
    if lp is None:
        return f"iteration {i}"
    if lp.var is not None and lp.init is not None and lp.step is not None:
        v = E.binop("+", lp.init, E.binop("*", lp.step, E.Const(i))).eval({})
        if isinstance(v, int):
            return f"`{lp.var} = {v}`"
    return f"iteration {i} of the loop at line {lp.location.row}"


def order_text(rp: RaggedPair) -> str:
    """Why nothing orders the pair, in the loop's own terms."""
    if rp.barrier is not None and not rp.waited:
        return f"the loop arrives on `{rp.barrier}` but never waits on it: its phases order nothing"
    if rp.barrier is not None:
        return (
            f"no phase of `{rp.barrier}` orders them (the first thread's arrival after its access is in no "
            "phase the second thread waited for before its own access, nor the other way round)"
        )
    if rp.narrow:
        return f"the only synchronisation in the loop, `{rp.narrow[0].api}`, orders the lanes of one warp only"
    return "no barrier in the loop orders two threads' iterations (each thread leaves it at its own iteration)"
