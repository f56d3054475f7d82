"""Completion-signal accounting: arrivals and transaction bytes per phase.

A phase of an mbarrier completes when its pending arrival count and its
pending tx bytes both reach zero. For every barrier this module collects the
sites that arrive on it, expect bytes on it, and deliver bytes to it (TMA
loads), and computes how much each contributes *per round* — one visit of the
barrier element by the loop that drives it (a ring slot's turn, one iteration
for a scalar barrier, or the one-shot use outside loops).

A contribution = issuing threads x amount per issue x times per round (the
trip counts of inner loops that do not change which element is hit).

Sums are compared only when the structure is recognised: every contributing
site visits the elements in the same pattern, under the same uniform
conditions, with known issuers. Otherwise the barrier is `unknown` and no
finding is made from it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from .analysis import Analysis


@dataclass
class Contribution:
    op: ir.Op
    issuers: frozenset[int]
    amount: E.Expr            # per issue: arrivals, or bytes
    times: E.Expr             # per round
    round_loop: int | None
    pattern: tuple            # how the element index moves with the round counter
    consumed: tuple = ()      # conditions over inner loop counters counted into `times`

    @property
    def total(self) -> E.Expr:
        return E.binop("*", E.binop("*", E.Const(len(self.issuers)), self.amount), self.times)


@dataclass
class BarrierAccount:
    barrier: ir.Barrier
    inits: list[ir.Op] = field(default_factory=list)
    init_count: E.Expr | None = None
    arrivals: dict[str, list[Contribution]] = field(default_factory=dict)   # group -> contributions
    expects: dict[str, list[Contribution]] = field(default_factory=dict)
    loads: dict[str, list[Contribution]] = field(default_factory=dict)
    waits: list[ir.Op] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)   # reasons the account is not usable
    per_thread: bool = False   # some site picks the element by thread: sums per element pattern
    assumptions: list[str] = field(default_factory=list)  # stated with any finding made from it

    def ok(self) -> bool:
        return not self.unknown


def _element_parts(op: ir.Op, issuers: frozenset[int]):
    """[(issuers, index)]: for a barrier index that depends on the thread (`bar[warpid()][s]`,
    a per-warp pipeline) the issuers grouped by the element they hit, with the index for
    them (thread ids substituted); else [(issuers, None)]: one element pattern for all."""
    index = op.barrier.index if op.barrier is not None else ()
    if not any(ix.depends_on(E.THREAD) for ix in index):
        return [(issuers, None)]
    groups: dict[tuple, list] = {}
    for t in sorted(issuers):
        idx = tuple(E.substitute(ix, {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)}) for ix in index)
        if any(ix.depends_on(E.THREAD) for ix in idx):
            return [(issuers, index)]     # _round_of then finds thread variables: unknown
        groups.setdefault(idx, []).append(t)
    return [(frozenset(ts), idx) for idx, ts in groups.items()]


def _split_by_element(acc: "BarrierAccount"):
    """Accounts of a barrier array some of whose sites pick the element by thread (each warp
    its own `bar[w][s]`): contributions are summed per element pattern, each compared with
    the init count on its own. Two patterns that do not differ in some constant index (the
    warp's element) might hit one element in one round: unknown then."""
    for groups in (acc.arrivals, acc.expects, acc.loads):
        regrouped: dict[str, list] = {}
        for key, contribs in groups.items():
            for c in contribs:
                regrouped.setdefault(f"{key} {', '.join(c.pattern)}", []).append(c)
        groups.clear()
        groups.update(regrouped)
    kinds: dict[str, set] = {}
    for g in (acc.arrivals, acc.expects, acc.loads):
        for key, cs in g.items():
            for c in cs:
                kinds.setdefault(key.split(" ")[0], set()).add(tuple(c.pattern))
    for pats in kinds.values():
        pats_l = sorted(pats)
        for i, a in enumerate(pats_l):
            for b in pats_l[i + 1:]:
                if len(a) != len(b) or not any(x != y and x.lstrip("-").isdigit() and y.lstrip("-").isdigit()
                                               for x, y in zip(a, b)):
                    # patterns that might hit one element in one round: the per-element
                    # sums are not the per-phase sums
                    acc.unknown.append(f"sites of '{acc.barrier.name}' visit overlapping elements in "
                                       "different patterns")
                    return


def _round_of(model: ir.KernelModel, op: ir.Op, an: Analysis | None = None, index=None):
    """(round loop id, multiplicity of inner loops, index pattern, conditions over inner
    loop counters that the multiplicity accounts for) or None if unknown."""
    if index is None:
        index = op.barrier.index if op.barrier is not None else ()
    index_vars = set()
    for ix in index:
        index_vars |= {v.name for v in ix.free_vars() if v.kind == E.LOOP}
    round_loop = None
    inner = []
    for lid in reversed(op.loops):
        loop = model.loops.get(lid)
        if loop is None:
            return None
        if loop.counter.name in index_vars:
            round_loop = lid
            break
        inner.append(loop)
    if round_loop is None and not index_vars:
        # scalar barrier (or constant index): which enclosing loop drives its phases
        if op.loops:
            r = _scalar_round(model, op, an)
            if r is _UNKNOWN:
                return None
            round_loop = r
            inner = [model.loops[i] for i in (op.loops[op.loops.index(r) + 1:] if r is not None else op.loops)]
            inner.reverse()
        else:
            inner = []
    elif round_loop is None:
        return None  # index varies with something that is not an enclosing loop
    times = _multiplicity(model, op, inner)
    if times is None:
        return None
    times, consumed = times
    # the index as a function of the round counter (renamed to 'r')
    pattern: tuple = ()
    if round_loop is not None:
        rc = model.loops[round_loop].counter.name
        # loops around the round loop may move the index too (a ring carried across the tasks
        # of a persistent loop): their counters are named by position
        ren = {rc: E.Var("r", E.LOOP)}
        for depth, lid in enumerate(op.loops[:op.loops.index(round_loop)]):
            ren[model.loops[lid].counter.name] = E.Var(f"o{depth}", E.LOOP)
        pattern = tuple(str(E.substitute(ix, ren)) for ix in index)
        if any(v.kind == E.LOOP and v.name not in ren for ix in index for v in ix.free_vars()):
            return None
    else:
        pattern = tuple(str(ix) for ix in index)
    return round_loop, times, pattern, consumed


_UNKNOWN = object()
_PACING_SYNCS = ("block", "named", "group", "cluster")
MAX_ENUMERATED = 1 << 16


def _paces(o: ir.Op) -> bool:
    """An op that separates a thread's successive arrivals into different phases: it waits
    for something (an mbarrier phase, a block/named barrier)."""
    return o.kind == ir.MBAR_WAIT or (o.kind == ir.SYNC and o.detail.get("sync_kind") in _PACING_SYNCS)


def _scalar_round(model: ir.KernelModel, op: ir.Op, an: Analysis | None):
    """The loop whose iterations are the rounds of a scalar barrier at `op` (None: a one-shot
    use outside every loop of op; _UNKNOWN: not recognised).

    An arrival's round is the innermost enclosing loop whose body (at any depth) waits or
    synchronises: arrivals repeated by a loop nested inside it with no wait in between
    (`for (w ...) arrive(bar)`) belong to one phase. Without any such loop, the innermost
    loop. A TMA load delivers its bytes to the phase of the arrival (expect) it is issued
    with: the round of the arrival site that shares most of its loops."""
    name = op.barrier.name
    if op.kind == ir.TMA_LOAD:
        arrivals = [o for o in model.ops if o.barrier is not None and o.barrier.name == name
                    and not o.barrier.index and o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)]
        if not arrivals:
            return op.loops[-1]
        def shared(a):
            n = 0
            for x, y in zip(a.loops, op.loops):
                if x != y:
                    break
                n += 1
            return n
        best = max(shared(a) for a in arrivals)
        rounds = {_arrival_round(model, a, an) for a in arrivals if shared(a) == best}
        if len(rounds) != 1:
            return _UNKNOWN
        r = rounds.pop()
        if r is None:
            # the arrival is a one-shot use: the loads around it are one-shot too when the
            # arrival sits outside every loop
            return None if best == 0 else _UNKNOWN
        return r if r in op.loops else _UNKNOWN
    return _arrival_round(model, op, an)


def _arrival_round(model: ir.KernelModel, op: ir.Op, an: Analysis | None):
    if not op.loops:
        return None
    mine = an.threads.executing(op) if an is not None else None

    def overlaps(o):
        if mine is None:
            return True
        theirs = an.threads.executing(o)
        return theirs is None or bool(theirs & mine)
    for lid in reversed(op.loops):
        if any(lid in o.loops and _paces(o) and overlaps(o) for o in model.ops):
            return lid
    return op.loops[-1]


def _multiplicity(model: ir.KernelModel, op: ir.Op, inner: list) -> tuple[E.Expr, tuple] | None:
    """How many times op issues per round: the product of the inner loops' trip counts, or,
    when some of op's uniform conditions test inner loop counters (`if (p == skip) continue;`),
    the number of inner iterations that satisfy them (counted when the trips are constants)."""
    if not inner:
        return E.Const(1), ()
    names = {l.counter.name for l in inner}
    conds = tuple(c for c in op.guard.uniform if any(v.name in names for v in c.free_vars()))
    if op.guard.thread.free_vars() & {l.counter for l in inner}:
        return None
    for loop in inner:
        if loop.trip is None or loop.trip.depends_on(E.THREAD) or loop.trip.is_opaque():
            return None
    if not conds:
        times: E.Expr = E.Const(1)
        for loop in inner:
            times = E.binop("*", times, loop.trip)
        return times, ()
    # count the satisfying iterations: constant trips, conditions over inner counters only
    trips = []
    for loop in inner:
        t = loop.trip.eval({})
        if not isinstance(t, int) or isinstance(t, bool):
            return None
        trips.append(max(t, 0))
    if any(v.name not in names or v.kind != E.LOOP for c in conds for v in c.free_vars()):
        return None
    total = 1
    for t in trips:
        total *= t
    if total > MAX_ENUMERATED:
        return None
    import itertools
    count = 0
    for combo in itertools.product(*(range(t) for t in trips)):
        env = {l.counter.name: v for l, v in zip(inner, combo)}
        vals = [c.eval(env) for c in conds]
        if any(v is None for v in vals):
            return None
        if all(vals):
            count += 1
    return E.Const(count), conds


def _group_key(round_loop) -> str:
    return "one-shot" if round_loop is None else "steady"


RUNNING = "<the instruction loop goes on>"
ASSUMPTION = ("assuming the roles' loops that end on a data-dependent `break` (an instruction or task "
              "stream) run the same rounds, at least one")


def _running(model: ir.KernelModel, op: ir.Op, c: E.Expr) -> bool:
    """c is what lets an iteration of an enclosing data-exit loop go on past its break
    (`!(op == STOP)`): true in every round that runs, which is the round accounted."""
    return any(c in model.loops[lid].continues for lid in op.loops
               if lid in model.loops and model.loops[lid].trip is None)


def _uniform_sig(op: ir.Op, model: ir.KernelModel | None = None, consumed: tuple = (),
                 round_loop: int | None = None) -> tuple | None:
    """The uniform conditions of a contribution, as text. A condition over the round counter
    (`if (k + 1 < n)`: no prefetch in the last round) is kept with the counter renamed, so
    that sites under the same condition compare equal; other loop-dependent or opaque
    conditions make it None (unknown)."""
    sig = []
    ren = {}
    if model is not None and round_loop is not None and round_loop in op.loops:
        ren[model.loops[round_loop].counter.name] = E.Var("r", E.LOOP)
        for depth, lid in enumerate(op.loops[:op.loops.index(round_loop)]):
            ren[model.loops[lid].counter.name] = E.Var(f"o{depth}", E.LOOP)
    for c in op.guard.uniform:
        if c in consumed:
            continue
        if model is not None and _running(model, op, c):
            sig.append(RUNNING)
            continue
        if c.is_opaque():
            return None
        if c.depends_on(E.LOOP):
            c = E.substitute(c, ren)
            if any(v.kind == E.LOOP and v.name not in ("r",) and not v.name.startswith("o") for v in c.free_vars()) \
                    or any(v.kind == E.LOOP and v.name.startswith("o") and v.name not in {x.name for x in ren.values()}
                           for v in c.free_vars()):
                return None
        sig.append(str(c))
    return tuple(sorted(sig))


def accounts(an: Analysis) -> dict[str, BarrierAccount]:
    return an.fact("barrier_accounts", _compute)


def _compute(an: Analysis) -> dict[str, BarrierAccount]:
    m = an.model
    out: dict[str, BarrierAccount] = {name: BarrierAccount(b) for name, b in m.barriers.items()}
    for op in m.ops:
        if op.barrier is None or op.barrier.name not in out:
            continue
        acc = out[op.barrier.name]
        if op.kind == ir.MBAR_INIT:
            acc.inits.append(op)
            continue
        if op.kind == ir.MBAR_WAIT:
            acc.waits.append(op)
            continue
        if op.kind not in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD):
            continue
        if op.detail.get("remote") or op.detail.get("multicast") or op.detail.get("cta") is not None:
            acc.unknown.append(f"{op.api} at line {op.location.row} crosses CTAs")
            continue
        issuers = an.threads.issuers(op)
        if issuers is None:
            acc.unknown.append(f"threads of {op.api} at line {op.location.row} unknown")
            continue
        for part_issuers, index in _element_parts(op, issuers):
            r = _round_of(m, op, an, index)
            if r is None:
                acc.unknown.append(f"rounds of {op.api} at line {op.location.row} not recognised")
                break
            round_loop, times, pattern, consumed = r
            key = _group_key(round_loop)
            if index is not None:
                acc.per_thread = True
            c_args = (round_loop, pattern, consumed)
            if op.kind == ir.MBAR_ARRIVE:
                amount = op.count if op.count is not None else E.opaque("count")
                acc.arrivals.setdefault(key, []).append(Contribution(op, part_issuers, amount, times, *c_args))
            elif op.kind == ir.MBAR_EXPECT:
                acc.arrivals.setdefault(key, []).append(
                    Contribution(op, part_issuers, E.Const(op.detail.get("arrives", 1)), times, *c_args))
                acc.expects.setdefault(key, []).append(
                    Contribution(op, part_issuers, op.bytes if op.bytes is not None else E.opaque("bytes"), times,
                                 *c_args))
            else:
                acc.loads.setdefault(key, []).append(
                    Contribution(op, part_issuers, op.bytes if op.bytes is not None else E.opaque("bytes"), times,
                                 *c_args))
    # mbarrier operations the front end could not attribute (raw PTX, an
    # unresolved barrier argument) may arrive on any barrier: no sums then
    blind = [o for o in m.ops if o.detail.get("barrier_unknown") is not None
             or (o.kind == ir.CALL and "mbarrier" in str(o.detail.get("ptx", "")))]
    # a call tkcheck does not model received the barrier: its account is unknown
    for o in m.ops:
        if o.detail.get("unmodelled_barrier_use") and o.barrier is not None and o.barrier.name in out:
            out[o.barrier.name].unknown.append(f"passed to {o.api} at line {o.location.row}, which is not modelled")
    if blind:
        for acc in out.values():
            acc.unknown.append(f"unattributed mbarrier operation at line {blind[0].location.row}")
    for acc in out.values():
        if acc.per_thread:
            _split_by_element(acc)
    for acc in out.values():
        counts = {str(o.count) for o in acc.inits if o.count is not None}
        if len(acc.inits) >= 1 and len(counts) == 1 and all(
                o.count is not None and not o.count.depends_on(E.LOOP) and not o.count.is_opaque()
                for o in acc.inits):
            acc.init_count = acc.inits[0].count
        # the same visiting pattern and uniform conditions across a group
        for groups in (acc.arrivals, acc.expects, acc.loads):
            for key, contribs in groups.items():
                pats = {c.pattern for c in contribs}
                sigs = {_uniform_sig(c.op, m, c.consumed, c.round_loop) for c in contribs}
                if len(pats) > 1 or None in sigs or len(sigs) > 1:
                    acc.unknown.append(f"{key} sites of '{acc.barrier.name}' visit it in different patterns "
                                       "or under different conditions")
                elif any(RUNNING in s for s in sigs) and ASSUMPTION not in acc.assumptions:
                    acc.assumptions.append(ASSUMPTION)
    return out


def total(contribs: list[Contribution]) -> E.Expr:
    t: E.Expr = E.Const(0)
    for c in contribs:
        t = E.binop("+", t, c.total)
    return t
