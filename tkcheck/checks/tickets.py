"""Block-scope tickets: an atomic read-modify-write on a `__shared__` counter whose old value a
branch tests (the "last one out" idiom inside one block; issue 25, round 12).

The primitive. A `__shared__` counter C is zeroed by one plain store, a block barrier of every
thread orders the zeroing before the arrivals, and then each thread of a known set A (the
*arrivers*: each warp's lane 0, one thread per warpgroup) runs one atomic read-modify-write on C
that adds one (`atomicAdd(&C, 1)`, `atomicAdd_block`, `atomicInc(&C, lim)` with lim >= |A| - 1,
`cuda::atomic_ref<T, thread_scope_block>(C).fetch_add(1, order)`), once per launch (no loop). The
old values the arrivers draw are then a permutation of 0 .. |A| - 1, in the order of C's
modification order (any order the schedule picks: nothing between orders the arrivers). The
value is a *ticket*: an op under `ticket == K` runs, in the execution where arriver a draws K,
for the threads whose test reads a's ticket -- a itself, or (a value passed with `__shfl_sync(M,
v, src)` from lane src, every lane running the shuffle) every lane of a's warp. A lane whose
value is not a ticket (`ticket = 0` where lane 0 took it) compares a constant.

The ticket as a synchronisation event (the global ticket's semantics of round 11, at block
scope): a write by thread w is ordered before a read by thread r under `ticket == K` (in the
execution where arriver a draws K) when some arriver b *releases* the write -- w is b, or a
barrier both take part in orders w before b, and a fence of block scope or wider
(`__threadfence_block()`, PTX `membar` / `fence.sc|acq_rel` at cta scope or wider) comes between
the write (or that barrier) and b's atomic, or the atomic is itself a release -- and r *acquires*
it: b's atomic precedes a's in C's order in every execution (b is a, or K = |A| - 1: every other
arriver came first), and r is a with a fence after its atomic (or an acquiring atomic), or a
lane that received a's ticket by the shuffle and runs a fence after it (`__threadfence_block()`
is `fence.sc.cta`: the shuffle makes a's fence precede the lane's in the fence-SC order, which
synchronises them). Anything else is unordered: the write's arriver may come after a (a test
against a ticket that is not the last), the write comes after every release, or no fence
acquires. Where an op between may order the pair another way (an mbarrier, a call, a spin, a
barrier under a condition not decided), nothing is claimed (undecided).

Progress side (`instances`): an op under a ticket test is, per arriver a, an op with an exact
guard (the threads above); a warp collective there is asked once per such choice
(`warp_collectives`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

WARP = 32
# fences that order at block scope or wider (`__threadfence_block()` and up)
BLOCK_FENCES = ("membar_cta", "membar_cluster", "membar_gl", "membar_gpu", "membar_sys")
RELEASE = ("release", "acq_rel")
ACQUIRE = ("acquire", "acq_rel")
MAX_ARRIVERS = 64  # arrivers asked one by one
MAX_ITERATIONS = 64  # iterations of a reader's own loops asked one by one
# ops between the two ends that may order them in a way this query does not follow
_OTHER_ORDER = (
    ir.MBAR_ARRIVE,
    ir.MBAR_WAIT,
    ir.MBAR_EXPECT,
    ir.CALL,
    ir.EXIT,
    ir.SPIN,
    ir.GLOBAL_SIGNAL,
    ir.TMA_LOAD,
    ir.CP_ASYNC,
)


@dataclass(frozen=True)
class Broadcast:
    """`v = __shfl_sync(FULL, x, src)` run by every thread: v is, for each lane, x of lane src."""

    var: str
    op: ir.Op
    src: int
    operand: E.Expr


@dataclass(frozen=True)
class Ticket:
    counter: str  # the `__shared__` counter
    arrival: ir.Op  # the atomic that draws the ticket
    arrivers: tuple[int, ...]
    reset: ir.Op  # the store of 0 before it
    old: str  # the Var of the old value
    broadcasts: tuple[Broadcast, ...] = ()


@dataclass
class Guarded:
    """An op under `ticket == k`: `by[t]` is the arriver whose ticket thread t tests (t runs the
    op when that arriver draws k); threads absent never run it."""

    ticket: Ticket
    k: int
    by: dict[int, int] = field(default_factory=dict)

    @property
    def drawn(self) -> bool:
        return 0 <= self.k < len(self.ticket.arrivers)

    def threads(self, a: int) -> frozenset[int]:
        if not self.drawn:
            return frozenset()
        return frozenset(t for t, x in self.by.items() if x == a)


@dataclass
class TicketRace:
    """A write and a read of one shared element that the ticket does not order."""

    write: ir.Op
    read: ir.Op
    writer: int
    reader: int
    arriver: int  # the arriver that draws `k` in the witness execution
    k: int
    ticket: Ticket
    why: str  # release | gather | after | count | acquire
    element: str = ""
    late: int | None = None  # why == count: the writer's arriver, which draws a ticket after k


def tickets(an: Analysis) -> list[Ticket]:
    return an.fact("tickets.tickets", _tickets)


def _increment_ok(o: ir.Op, n_arrivers: int) -> bool:
    a = o.access
    assert a is not None
    v = a.operand.eval({}) if a.operand is not None else None
    if not isinstance(v, int) or isinstance(v, bool):
        return False
    if a.atomic == "add":
        return v == 1
    if a.atomic == "inc":  # atomicInc(&c, lim): old >= lim ? 0 : old + 1
        return v >= n_arrivers - 1
    return False


def _tickets(an: Analysis) -> list[Ticket]:
    n = an.threads.n
    m = an.model
    if n is None:
        return []
    by: dict[str, list[ir.Op]] = {}
    for o in m.ops:
        a = o.access
        if o.kind == ir.SMEM_ACCESS and o.buffer is not None and a is not None and a.via == "scalar" and a.cta is None:
            by.setdefault(o.buffer.name, []).append(o)
    out: list[Ticket] = []
    for name, ops in sorted(by.items()):
        rmw = [o for o in ops if o.access is not None and o.access.atomic and o.access.old]
        if len(rmw) != 1:
            continue
        (x,) = rmw
        writes = [o for o in ops if o is not x and o.access_mode == "write"]
        if len(writes) != 1:
            continue
        (reset,) = writes
        ra = reset.access
        assert ra is not None and x.access is not None
        if ra.atomic or not isinstance(ra.value, E.Const) or ra.value.value != 0:
            continue
        if x.loops or reset.loops or not x.guard.exact or not reset.guard.exact or x.guard.uniform:
            continue
        if reset.guard.uniform or reset.order > x.order:
            continue
        if any(o.kind == ir.EXIT and o.order < x.order for o in m.ops):
            continue
        arr = an.threads.executing(x)
        if not arr or len(arr) > MAX_ARRIVERS or not _increment_ok(x, len(arr)):
            continue
        # a block barrier of every thread between the zeroing and the arrivals
        if not any(
            s.kind == ir.SYNC
            and s.sync_kind == "block"
            and not s.loops
            and s.guard.exact
            and not s.guard.uniform
            and an.threads.executing(s) == frozenset(range(n))
            and reset.order < s.order < x.order
            for s in m.ops
        ):
            continue
        old = x.access.old
        assert old is not None
        out.append(Ticket(name, x, tuple(sorted(arr)), reset, old, _broadcasts(an, x, old)))
    return out


def _broadcasts(an: Analysis, x: ir.Op, old: str) -> tuple[Broadcast, ...]:
    n = an.threads.n
    out = []
    for o in an.model.ops:
        wc = o.warp_coll
        if o.kind != ir.WARP_COLL or wc is None or wc.instr != "shfl.sync.idx" or not wc.result:
            continue
        if o.order < x.order or o.loops or not o.guard.exact or o.guard.uniform or len(wc.operands) < 2:
            continue
        if an.threads.executing(o) != frozenset(range(n or 0)) or (n or 0) % WARP:
            continue
        mask = wc.mask.eval({}) if wc.mask is not None else None
        src = wc.operands[1].eval({})
        if not isinstance(mask, int) or mask % (1 << 32) != 0xFFFFFFFF or not isinstance(src, int):
            continue
        if not 0 <= src < WARP or old not in {v.name for v in wc.operands[0].free_vars()}:
            continue
        out.append(Broadcast(wc.result, o, src, wc.operands[0]))
    return tuple(out)


def _fold(e: E.Expr) -> E.Expr:
    if not e.free_vars():
        v = e.eval({})
        return E.Const(v) if v is not None else e
    if isinstance(e, E.Bin):
        return E.binop(e.op, _fold(e.a), _fold(e.b))
    if isinstance(e, E.Ite):
        return E.ite(_fold(e.c), _fold(e.t), _fold(e.e))
    return e


def _tag(t: int) -> str:
    return f"ticket@{t}"


def _atom_at(tk: Ticket, c: E.Expr, t: int) -> tuple | None:
    """Condition c as thread t evaluates it: ("const", bool), ("test", arriver, k), or None."""
    at = {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)}
    mp: dict[str, E.Expr] = dict(at)
    bc = {b.var: b for b in tk.broadcasts}
    for v in c.free_vars():
        if v.kind == E.THREAD:
            continue
        if v.name == tk.old:
            mp[v.name] = E.Var(_tag(t), E.PARAM)
        elif v.name in bc:
            b = bc[v.name]
            s = t // WARP * WARP + b.src
            sub = {"tid": E.Const(s), "tid_y": E.Const(0), "tid_z": E.Const(0), tk.old: E.Var(_tag(s), E.PARAM)}
            if any(u.name not in sub for u in b.operand.free_vars()):
                return None
            mp[v.name] = E.substitute(b.operand, sub)
        else:
            return None
    e = _fold(E.substitute(c, mp))
    if isinstance(e, E.Const):
        return ("const", bool(e.value))
    if isinstance(e, E.Bin) and e.op == "==":
        for x, k in ((e.a, e.b), (e.b, e.a)):
            if isinstance(x, E.Var) and x.name.startswith("ticket@") and isinstance(k, E.Const):
                kv = k.value
                if isinstance(kv, int) and not isinstance(kv, bool):
                    return ("test", int(x.name.split("@")[1]), kv)
    return None


def guarded(an: Analysis, o: ir.Op) -> Guarded | None:
    """o's guard, inexact only through tests of one ticket against one value, resolved per thread;
    None when it is not of that form."""
    memo = an.fact("tickets.guarded", lambda _an: {})
    if id(o) not in memo:
        memo[id(o)] = (o, _guarded(an, o))
    return memo[id(o)][1]


def _guarded(an: Analysis, o: ir.Op) -> Guarded | None:
    g = o.guard
    if g.exact or g.blind or not g.opaque or g.exits:
        return None
    if any(c.depends_on(E.THREAD) or c.is_opaque() for c in g.uniform):
        return None
    names = {v.name for c in g.opaque for v in c.free_vars()}
    for tk in tickets(an):
        if not names & ({tk.old} | {b.var for b in tk.broadcasts}):
            continue
        if o.order < tk.arrival.order:
            return None
        ts = an.threads.satisfying(g.thread)
        if ts is None:
            return None
        arr = set(tk.arrivers)
        k: int | None = None
        by: dict[int, int] = {}
        for t in sorted(ts):
            whose: int | None = None
            runs = True
            for c in g.opaque:
                at = _atom_at(tk, c, t)
                if at is None:
                    return None
                if at[0] == "const":
                    runs = runs and at[1]
                    continue
                _, x, kv = at
                if x not in arr or (k is not None and kv != k) or (whose is not None and whose != x):
                    return None
                k, whose = kv, x
            if not runs:
                continue
            if whose is None:
                return None  # runs whatever the tickets: not a ticket guard
            by[t] = whose
        if k is None:
            return Guarded(tk, -1, {})  # no thread's test can hold
        return Guarded(tk, k, by)
    return None


def _selector(threads: frozenset[int]) -> E.Expr:
    """A thread predicate that holds for `threads` only (a whole warp as one test)."""
    e: E.Expr = E.FALSE
    for w in sorted({t // WARP for t in threads}):
        lanes = [t for t in threads if t // WARP == w]
        if len(lanes) == WARP:
            e = E.binop("||", e, E.binop("==", E.binop("/", E.TID, E.Const(WARP)), E.Const(w)))
            continue
        for t in sorted(lanes):
            e = E.binop("||", e, E.binop("==", E.TID, E.Const(t)))
    return e


@dataclass
class Instances:
    ticket: Ticket
    k: int
    arrivers: list[int]
    rows: list[list[ir.Op]]

    def when(self, a: int) -> str:
        return f"when thread {a} draws ticket {self.k} of `{self.ticket.counter}`"


def instances(an: Analysis, ops: list[ir.Op]) -> Instances | None:
    """`ops` under each choice of the arriver that draws the tested ticket: per choice, the list
    with every ticket-guarded op replaced by an instance with an exact guard (its threads in that
    execution). None: no op is ticket-guarded, or one is guarded otherwise (not exact)."""
    gs = {id(o): guarded(an, o) for o in ops if not o.guard.exact}
    if not gs or any(g is None for g in gs.values()):
        return None
    tks = {(id(g.ticket.arrival), g.k) for g in gs.values() if g is not None}
    if len(tks) != 1:
        return None
    g0 = next(g for g in gs.values() if g is not None)
    keep = an.fact("tickets.instances", lambda _an: [])
    out = []
    for a in g0.ticket.arrivers:
        row = []
        for o in ops:
            g = gs.get(id(o))
            if g is None:
                row.append(o)
                continue
            inst = replace(o, guard=ir.Guard(_selector(g.threads(a)), o.guard.uniform, True, ()))
            keep.append(inst)  # (the thread cache is keyed by id: keep each instance alive)
            row.append(inst)
        out.append(row)
    return Instances(g0.ticket, g0.k, list(g0.ticket.arrivers), out)


# ------------------------------------------------------------------ happens-before ----


def _runs(an: Analysis, o: ir.Op, t: int, a: int) -> bool | None:
    """Does thread t run o (outside loops) in the execution where arriver a draws the ticket?"""
    if o.loops:
        return None
    if o.guard.exact:
        ex = an.threads.executing(o)
        return None if ex is None else t in ex
    g = guarded(an, o)
    return None if g is None else t in g.threads(a)


def _fences(ops: list[ir.Op]) -> list[ir.Op]:
    return [o for o in ops if o.kind == ir.FENCE and o.fence_kind in BLOCK_FENCES]


def _iterations(an: Analysis, r: ir.Op) -> list[dict[str, int]] | None:
    envs: list[dict[str, int]] = [{}]
    for lid in r.loops:
        lp = an.model.loops.get(lid)
        trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if lp is None or not isinstance(trip, int) or lp.cond is not None or lp.data_cond or lp.infinite:
            return None
        envs = [{**e, lp.counter.name: k} for e in envs for k in range(trip)]
        if len(envs) > MAX_ITERATIONS:
            return None
    return envs


def _key(o: ir.Op, env: dict) -> tuple | None:
    assert o.buffer is not None
    out = []
    for ix in o.buffer.index:
        v = ix.eval({**env, "tid_y": 0, "tid_z": 0})
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        out.append(v)
    return tuple(out)


def pair(an: Analysis, fl, w: ir.Op, r: ir.Op):
    """A write `w` (exact guard, before the ticket) and a read `r` under a ticket test, of one
    shared scalar or element: "ordered", a TicketRace, or None (not this question, or not
    decided)."""
    from .happens_before import _ordered_by_barrier

    if not w.guard.exact or r.guard.exact or w.loops or w.guard.uniform or r.guard.uniform:
        return None
    g = guarded(an, r)
    if g is None or w.order >= r.order:
        return None
    tk = g.ticket
    x = tk.arrival
    if r.order < x.order:
        return None
    if not g.drawn:
        return "ordered"  # no thread runs the read: no ticket has that value
    inner = [o for o in fl.ops if set(o.loops) & set(r.loops)]
    if any(o.kind in (ir.SYNC, ir.NAMED_ARRIVE) or o.kind in _OTHER_ORDER for o in inner):
        return None
    envs = _iterations(an, r)
    tw_all = an.threads.executing(w)
    if envs is None or not tw_all:
        return None
    between = fl.same_iteration_between(w, r)
    if any(o.kind in _OTHER_ORDER for o in between):
        return None
    syncs = [o for o in between if o.kind in (ir.SYNC, ir.NAMED_ARRIVE)]
    if any(not o.guard.exact or o.loops or an.threads.executing(o) is None for o in syncs):
        return None
    writers: dict[tuple, list[int]] = {}
    for t in sorted(tw_all):
        key = _key(w, {"tid": t})
        if key is None:
            return None
        writers.setdefault(key, []).append(t)
    for a in tk.arrivers:
        for tr in sorted(g.threads(a)):
            for env in envs:
                key = _key(r, {**env, "tid": tr})
                if key is None:
                    return None
                for tw in writers.get(key, ()):
                    if tw == tr:
                        continue
                    by_barrier = _ordered_by_barrier(an, between, tw, tr)
                    if by_barrier is None:
                        return None
                    if by_barrier:
                        continue
                    why = _unordered(an, fl, tk, g, w, r, tw, tr, a)
                    if why is None:
                        return None
                    if why == "":
                        continue
                    elem = r.buffer.name + "".join(f"[{v}]" for v in key) if r.buffer is not None else ""
                    late = None
                    if why == "count":
                        late = next((b for b in _releasers(an, fl, tk, w, tw) or () if b != a), None)
                    return TicketRace(w, r, tw, tr, a, g.k, tk, why, elem, late)
    return "ordered"


def _releasers(an: Analysis, fl, tk: Ticket, w: ir.Op, tw: int) -> list[int] | None:
    """The arrivers whose arrival releases tw's write w (a fence of block scope or wider after
    the write -- or after a barrier that orders tw before the arriver -- and before its atomic,
    or a releasing atomic). None: not decided."""
    from .happens_before import _ordered_by_barrier

    x = tk.arrival
    assert x.access is not None
    out: list[int] = []
    if w.order > x.order:
        return out
    upto = fl.same_iteration_between(w, x)
    fences = _fences(upto)
    for b in tk.arrivers:
        ok = False
        for i, f in enumerate(upto + [x]):
            if f is x:
                if x.access.order not in RELEASE:
                    continue
            elif f in fences:
                ran = _runs(an, f, b, b)
                if ran is None:
                    return None
                if not ran:
                    continue
            else:
                continue
            if tw == b:
                ok = True
                break
            by = _ordered_by_barrier(an, upto[:i], tw, b)
            if by is None:
                return None
            if by:
                ok = True
                break
        if ok:
            out.append(b)
    return out


def _unordered(an, fl, tk: Ticket, g: Guarded, w, r, tw: int, tr: int, a: int) -> str | None:
    """Why the ticket does not order tw's write before tr's read when arriver a draws g.k: "" when
    it does; "release" / "gather" / "after" / "count" / "acquire"; None when not decided."""
    x = tk.arrival
    assert x.access is not None
    n = len(tk.arrivers)
    rel = _releasers(an, fl, tk, w, tw)
    if rel is None:
        return None
    if not rel:
        if w.order > x.order:
            return "after"
        return "release" if tw in tk.arrivers else "gather"
    shfl = next((b.op for b in tk.broadcasts), None)
    if tr != a and (shfl is None or not x.order < shfl.order < r.order):
        return None  # a reader that is not the arriver: only a lane the shuffle gave a's ticket

    def lane_fence() -> bool | None:
        """tr (a lane that received a's ticket) runs a fence after the shuffle, before the read."""
        assert shfl is not None
        acq = False
        for f in _fences(fl.same_iteration_between(shfl, r)):
            ran = _runs(an, f, tr, a)
            if ran is None:
                return None
            acq = acq or ran
        return acq

    reason = "release"
    if a in rel:
        if tr == a:
            return ""  # program order after a's own release
        # a's fence before its ticket and the lane's fence after the shuffle: fence-SC order
        mine = False
        for f in _fences(fl.same_iteration_between(w, x)):
            ran = _runs(an, f, a, a)
            if ran is None:
                return None
            mine = mine or ran
        lf = lane_fence()
        if lf is None:
            return None
        if mine and lf:
            return ""
        reason = "acquire" if mine else "release"
    others = [b for b in rel if b != a]
    if not others:
        return reason
    if g.k < n - 1 and len(others) <= n - 1 - g.k:
        return "count"  # every arriver that releases the write may draw a ticket after k
    # some arriver that releases the write arrives before a: does the reader acquire?
    if tr == a:
        acq = x.access.order in ACQUIRE
        for f in _fences(fl.same_iteration_between(x, r)):
            ran = _runs(an, f, a, a)
            if ran is None:
                return None
            acq = acq or ran
    else:
        lf = lane_fence()
        if lf is None:
            return None
        acq = lf
    return "" if acq else "acquire"
