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

from dataclasses import dataclass, field, replace

from ..model import expr as E
from ..model import ir
from ..recurrence import flat_base
from . import visit_groups
from .analysis import Analysis


@dataclass
class Contribution:
    op: ir.Op
    issuers: frozenset[int]
    amount: E.Expr  # per issue: arrivals, or bytes
    times: E.Expr  # per round
    round_loop: int | None
    pattern: tuple  # how the element index moves with the round counter
    consumed: tuple = ()  # conditions over inner loop counters counted into `times`
    exclusive: tuple = ()  # uniform conditions of op left out: it merges exclusive sites
    pattern_exprs: tuple = ()  # `pattern` as expressions (round counter `r`, outer `o0`, ...)

    @property
    def total(self) -> E.Expr:
        return E.binop("*", _issuers_sum(self.amount, self.issuers), self.times)


def _issuers_sum(amount: E.Expr, issuers: frozenset[int]) -> E.Expr:
    """What the issuers give together per issue: the amount times their number, or, for an amount
    that names the issuing thread (`arrive(bar, w == 0 ? 2 : 1)`), each issuer's own amount summed
    (issuers are x thread indices; an amount over `tid_y`/`tid_z` is not known per issuer)."""
    thread_vars = {v.name for v in amount.free_vars() if v.kind == E.THREAD}
    if not thread_vars:
        return E.binop("*", E.Const(len(issuers)), amount)
    if thread_vars != {"tid"}:
        return E.opaque("amount per thread")
    total: E.Expr = E.Const(0)
    for t in sorted(issuers):
        total = E.binop("+", total, E.substitute(amount, {"tid": E.Const(t)}))
    return total


@dataclass
class BarrierAccount:
    barrier: ir.Barrier
    inits: list[ir.Op] = field(default_factory=list)
    init_count: E.Expr | None = None
    arrivals: dict[str, list[Contribution]] = field(default_factory=dict)  # group -> contributions
    expects: dict[str, list[Contribution]] = field(default_factory=dict)
    loads: dict[str, list[Contribution]] = field(default_factory=dict)
    waits: list[ir.Op] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # reasons the account is not usable
    per_thread: bool = False  # some site picks the element by thread: sums per element pattern
    group_init: dict[str, E.Expr] = field(default_factory=dict)  # per-group init counts (MK dynamic semaphores)
    assumptions: list[str] = field(default_factory=list)  # stated with any finding made from it
    # i7model: the arrivals enumerated phase by phase (a barrier with `arrive_drop` or arrivals in
    # a loop whose trip count depends on the thread); its groups above are then empty
    ragged: "RaggedAccount | None" = None

    # r16-expecttx: reasons of `unknown` that are the order of an expect_tx without arrival only
    # (which phase its bytes land in); the arrivals per phase do not depend on it
    tx_unordered: list[str] = field(default_factory=list)
    # r17-b300: groups whose every contribution stands for visits of one phase each
    # (`_one_phase_per_visit`): a round's other waits do not split them
    per_visit: set[str] = field(default_factory=set)

    def ok(self) -> bool:
        return not self.unknown

    def arrivals_ok(self) -> bool:
        """The arrival sums are usable (whatever phase a tx-only expect's bytes land in)."""
        return all(u in self.tx_unordered for u in self.unknown)


@dataclass
class RaggedAccount:
    """Phase p's arrivals (every arriving thread's round p, one round a phase) and the count it
    expects (the init count less the drops of earlier phases); `sites` the arrival ops."""

    arrived: list[int]
    expected: list[int]
    sites: list[ir.Op]
    drops: list[ir.Op]

    def first_mismatch(self) -> int | None:
        return next((p for p, (a, e) in enumerate(zip(self.arrived, self.expected)) if a != e or e <= 0), None)


def instance_loops(model: ir.KernelModel, op: ir.Op) -> dict:
    """A barrier re-initialised for every instruction (an MK op's dynamic semaphores, in the slot
    of the instruction: `semaphores[slot(i)][j]`): the loop of op's role over instructions, whose
    counter only picks the slot, is not a round -- every instruction has fresh semaphores. Its
    counter -> the symbol `inst` (the same for every role: the k-th iteration of each role's
    instruction loop is the same instruction). Empty when the barrier is not of this kind."""
    if op.barrier is None or not reinitialised(model, op.barrier.name):
        return {}
    index = op.barrier.index
    out = {}
    for lid in op.loops:
        loop = model.loops.get(lid)
        if loop is None:
            continue
        t = loop.trip.eval({}) if loop.trip is not None else None
        if isinstance(t, int):
            continue
        name = loop.counter.name
        dims = [i for i, ix in enumerate(index) if name in {v.name for v in ix.free_vars()}]
        if dims == [0]:
            out[name] = E.Var("inst", E.PARAM)
    return out


_ELEMENT_SCAN = 64  # rounds enumerated to find the elements a site visits


def _instance_elements(m: ir.KernelModel, op: ir.Op, round_loop: int | None) -> frozenset | None:
    """The elements (index tuples without the slot) of a per-instruction semaphore array that op
    visits over the rounds of one instruction, by enumeration; None when not enumerable."""
    inst = instance_loops(m, op)
    index = [E.substitute(ix, inst) for ix in op.barrier.index]
    loops = [lid for lid in op.loops if m.loops[lid].counter.name not in inst]
    if len(loops) > 2:
        return None
    ranges = []
    for lid in loops:
        t = m.loops[lid].trip
        tv = t.eval({}) if t is not None else None
        n = tv if isinstance(tv, int) and tv <= _ELEMENT_SCAN else _ELEMENT_SCAN
        ranges.append((m.loops[lid].counter.name, n))
    out = set()

    def rec(i, env):
        if i == len(ranges):
            vals = tuple(ix.eval({**env, "inst": 0}) for ix in index[1:])
            if any(not isinstance(v, int) for v in vals):
                raise ValueError
            out.add(vals)
            return
        name, n = ranges[i]
        for j in range(n):
            rec(i + 1, {**env, name: j})

    try:
        rec(0, {})
    except (ValueError, RecursionError):
        return None
    return frozenset(out) if out else None


def _element_inits(m: ir.KernelModel, acc: "BarrierAccount"):
    """Per-element init counts of a per-instruction semaphore array, and each group's count
    when every element the group visits has the same one."""
    counts: dict[tuple, set] = {}
    for o in acc.inits:
        els = _instance_elements(m, o, None)
        c = o.count.eval({}) if o.count is not None else None
        if els is None or not isinstance(c, int):
            return
        for e in els:
            counts.setdefault(e, set()).add(c)
    for groups in (acc.arrivals,):
        for key, contribs in groups.items():
            els = set()
            for c in contribs:
                e = _instance_elements(m, c.op, c.round_loop)
                if e is None:
                    break
                els |= e
            else:
                vals = {v for e in els for v in counts.get(e, {None})}
                if len(vals) == 1 and None not in vals:
                    acc.group_init[key] = E.Const(vals.pop())


def reinitialised(model: ir.KernelModel, name: str) -> bool:
    """The barrier is (re-)initialised inside a loop whose trip count is not a constant (an
    interpreter re-arms its per-instruction semaphores)."""
    for o in model.ops:
        if o.kind == ir.MBAR_INIT and o.barrier is not None and o.barrier.name == name:
            for lid in o.loops:
                t = model.loops[lid].trip
                if t is None or not isinstance(t.eval({}), int):
                    return True
    return False


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
            return [(issuers, index)]  # _round_of then finds thread variables: unknown
        groups.setdefault(idx, []).append(t)
    return [(frozenset(ts), idx) for idx, ts in groups.items()]


def _disjoint(a: tuple, b: tuple, timeout_ms: int) -> bool:
    """The element patterns a and b (expressions over the round counter `r` and outer
    counters `o0`, ...) never hit one element, for any rounds of either (each pattern's loop
    counters are its own): proved by z3 (two consumers alternating over a ring, one taking
    the even tiles `(2 r) % S`, the other the odd ones `(2 r + 1) % S`)."""
    from .. import solver

    if not a or len(a) != len(b):
        return False

    def own(xs, tag):
        ren = {v.name: E.Var(f"{v.name}@{tag}", E.PARAM) for x in xs for v in x.free_vars() if v.kind == E.LOOP}
        return [E.substitute(x, ren) for x in xs], [E.binop(">=", v, E.Const(0)) for v in ren.values()]

    xa, ca = own(a, "a")
    xb, cb = own(b, "b")
    if any(x.is_opaque() or x.depends_on(E.THREAD) for x in xa + xb):
        return False
    meet = E.conj(*[E.binop("==", x, y) for x, y in zip(xa, xb)])
    return solver.always(E.negate(meet), timeout_ms, assume=tuple(ca + cb)) is True


def _split_by_element(acc: "BarrierAccount", timeout_ms: int = 0):
    """Accounts of a barrier array some of whose sites pick the element by thread (each warp
    its own `bar[w][s]`): contributions are summed per element pattern, each compared with
    the init count on its own. Two patterns that do not differ in some constant index (the
    warp's element) and are not proved disjoint (`_disjoint`) might hit one element in one
    round: unknown then."""
    exprs: dict[tuple, tuple] = {}
    for groups in (acc.arrivals, acc.expects, acc.loads):
        regrouped: dict[str, list] = {}
        for key, contribs in groups.items():
            for c in contribs:
                regrouped.setdefault(f"{key} {', '.join(c.pattern)}", []).append(c)
                exprs.setdefault(tuple(c.pattern), c.pattern_exprs)
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
            for b in pats_l[i + 1 :]:
                if (
                    len(a) != len(b)
                    or not any(x != y and x.lstrip("-").isdigit() and y.lstrip("-").isdigit() for x, y in zip(a, b))
                ) and not _disjoint(exprs.get(a, ()), exprs.get(b, ()), timeout_ms):
                    # patterns that might hit one element in one round: the per-element
                    # sums are not the per-phase sums
                    acc.unknown.append(
                        f"sites of '{acc.barrier.name}' visit overlapping elements in different patterns"
                    )
                    return


def _round_of(model: ir.KernelModel, op: ir.Op, an: Analysis | None = None, index=None):
    """(round loop id, multiplicity of inner loops, index pattern, conditions over inner
    loop counters that the multiplicity accounts for) or None if unknown."""
    if index is None:
        index = op.barrier.index if op.barrier is not None else ()
    inst = instance_loops(model, op)
    if inst:
        index = tuple(E.substitute(ix, inst) for ix in index)
    index_vars = set()
    for ix in index:
        index_vars |= {v.name for v in ix.free_vars() if v.kind == E.LOOP}
    round_loop = None
    inner = []
    for lid in reversed(op.loops):
        loop = model.loops.get(lid)
        if loop is None:
            return None
        if loop.counter.name in inst:
            break  # the instruction loop: fresh semaphores every iteration
        if loop.counter.name in index_vars or (_repeat_only(inner) and index_vars & set(model.ring_walk_bases(lid))):
            # (a ring walk's site directly in its task loop, or in small loops of constant trip
            # there that only repeat it: its element moves with the visits of the earlier tasks,
            # B, one round a task; `frontend/ring_walk.py`)
            round_loop = lid
            break
        inner.append(loop)
    if round_loop is None and not index_vars and inst:
        # an MK op's per-instruction semaphore: the innermost loop inside the instruction
        # loop (or the instruction itself) is the round
        if op.loops:
            round_loop = op.loops[-1]
        inner = []
    elif round_loop is None and not index_vars:
        # scalar barrier (or constant index): which enclosing loop drives its phases
        if op.loops:
            r = _scalar_round(model, op, an)
            if r is _UNKNOWN:
                return None
            round_loop = r
            inner = [model.loops[i] for i in (op.loops[op.loops.index(r) + 1 :] if r is not None else op.loops)]
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
        for i, b in enumerate(model.ring_walk_bases(round_loop)):
            ren[b] = E.Var(f"rbase{i}", E.LOOP)
        for depth, lid in enumerate(op.loops[: op.loops.index(round_loop)]):
            ren[model.loops[lid].counter.name] = E.Var(f"o{depth}", E.LOOP)
            # the steps the earlier tasks took (a ring carried across tasks of varying length)
            ren[flat_base(model.loops[lid].counter).name] = E.Var(f"o{depth}base", E.LOOP)
            for i, b in enumerate(model.ring_walk_bases(lid)):
                ren[b] = E.Var(f"o{depth}base{i}", E.LOOP)
        exprs = tuple(E.substitute(ix, ren) for ix in index)
        pattern = tuple(str(x) for x in exprs)
        if any(v.kind == E.LOOP and v.name not in ren for ix in index for v in ix.free_vars()):
            return None
    else:
        exprs = tuple(index)
        pattern = tuple(str(ix) for ix in index)
    return round_loop, times, pattern, consumed, exprs


def _repeat_only(inner: list) -> bool:
    """Loops between a site and its ring walk's task loop that only repeat the site: each of
    constant trip (the issues of one visit, `for (h = 0; h < 2; h++) arrive(freed[slot])`) -- the
    index reads none of their counters (else the round would be theirs), so every issue lands on
    the task's element; `_multiplicity` counts them. No loops at all: the site itself."""
    for loop in inner:
        trip = loop.trip.eval({}) if loop.trip is not None else None
        if not isinstance(trip, int) or isinstance(trip, bool) or trip < 0:
            return False
        if loop.infinite or loop.continues or loop.data_cond or loop.thread_exit:
            return False
    return True


_UNKNOWN = object()
_PACING_SYNCS = ("block", "named", "group", "cluster", "grid")
MAX_ENUMERATED = 1 << 16


def _paces(o: ir.Op) -> bool:
    """An op that separates a thread's successive arrivals into different phases: it waits
    for something (an mbarrier phase, a block/named barrier)."""
    return o.kind == ir.MBAR_WAIT or (o.kind == ir.SYNC and o.sync_kind in _PACING_SYNCS)


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
        arrivals = [
            o
            for o in model.ops
            if o.barrier is not None
            and o.barrier.name == name
            and not o.barrier.index
            and o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)
        ]
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
            # the arrivals the load runs inside the loops of, before it, by its own threads (a
            # prologue's `expect(bar, all tiles); for (m ..) load(.., bar)` beside the loop's
            # refill): the load is issued with those, not with one in a loop it is not in
            mine = an.threads.issuers(op) if an is not None else None
            enclosing = [
                a
                for a in arrivals
                if shared(a) == best == len(a.loops)
                and a.order < op.order
                and mine is not None
                and (theirs := an.threads.issuers(a)) is not None
                and theirs == mine
            ]
            rounds = {_arrival_round(model, a, an) for a in enclosing}
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


# the group of a loop that signals every element of a barrier array at most once, outside any
# other loop (`for (int s = 0; s < STAGES; s++) arrive(empty[s]);`, the pre-arrived tokens of a
# ring): each of its rounds is the first phase of its own element, never a phase that the
# ring's steady sites also contribute to -- a group of its own, summed per round like a steady one
FILL = "one-shot-per-element"


def _separate_fills(m: ir.KernelModel, acc: BarrierAccount) -> None:
    """Move the steady contributions of each loop that only fills elements once (every site of
    this barrier in it: `fill_visits`) into the FILL group of the same destination;
    a loop with one site that does not qualify stays steady as a whole."""
    by_loop: dict[int, list[tuple[dict, str, Contribution]]] = {}
    for groups in (acc.arrivals, acc.expects, acc.loads):
        for key, contribs in groups.items():
            if key.split(" ")[0] != "steady":
                continue
            for c in contribs:
                if c.round_loop is not None:
                    by_loop.setdefault(c.round_loop, []).append((groups, key, c))
    for lid, items in by_loop.items():
        if not all(fill_visits(m, c.op) is not None for _, _, c in items):
            continue
        for groups, key, c in items:
            groups[key].remove(c)
            if not groups[key]:
                del groups[key]
            groups.setdefault(FILL + key[len("steady") :], []).append(c)


def fill_visits(m: ir.KernelModel, op: ir.Op) -> int | None:
    """How many elements `op` signals once each when it runs in a fill loop: one loop, nested in
    none, whose counter is the index of a one-dimensional barrier array and whose constant trip
    is at most the array's length, under no condition over that counter (the pre-arrived tokens
    of a ring, the prefill of its first stages). None when `op` is not in such a loop."""
    b = op.barrier
    decl = m.barriers.get(b.name) if b is not None else None
    if b is None or decl is None or len(decl.dims) != 1 or len(op.loops) != 1 or len(b.index) != 1:
        return None
    loop = m.loops.get(op.loops[0])
    if loop is None or loop.parent is not None or loop.trip is None or loop.continues or not loop.uniform:
        return None
    if instance_loops(m, op):
        return None
    size, trip = decl.dims[0].eval({}), loop.trip.eval({})
    if not isinstance(size, int) or not isinstance(trip, int) or not 0 < trip <= size:
        return None
    counter = loop.counter
    # the index is the counter: spelled so, or equal to it at every iteration (`k % S` of a
    # prologue loop `for (; k < S; ++k)` whose counter the main loop goes on with)
    if b.index[0] != counter and any(b.index[0].eval({counter.name: j}) != j for j in range(trip)):
        return None
    if any(counter in c.free_vars() for c in op.guard.uniform) or counter in op.guard.thread.free_vars():
        return None
    return trip


RUNNING = "<the instruction loop goes on>"
ASSUMPTION = (
    "assuming the roles' loops that end on a data-dependent `break` (an instruction or task "
    "stream) run the same rounds, at least one"
)


def _running(model: ir.KernelModel, op: ir.Op, c: E.Expr) -> bool:
    """c is what lets an iteration of an enclosing data-exit loop go on past its break
    (`!(op == STOP)`): true in every round that runs, which is the round accounted."""
    return any(
        c in model.loops[lid].continues for lid in op.loops if lid in model.loops and model.loops[lid].trip is None
    )


def _pair_commit(op: ir.Op) -> bool:
    """A cta_group::2 tcgen05 commit multicast to both CTAs of the pair (TK's default mask 0b11):
    the copy of the barrier in *each* CTA gets one arrival per commit, whichever CTA issues it,
    so per CTA it counts like a local arrive by its issuers (the rank condition of the issuer
    does not select the receiving CTA)."""
    if not (op.kind == ir.MBAR_ARRIVE and op.mbar is not None and op.mbar.tcgen05_commit and op.mbar.ncta == 2):
        return False
    mask = op.mbar.mask
    return mask is None or (isinstance(mask, E.Expr) and mask.eval({}) == 3)


def _rank_only(c: E.Expr) -> bool:
    return any(v.name == "cta_rank" for v in c.free_vars()) and all(
        v.name == "cta_rank" or v.kind != E.PARAM for v in c.free_vars()
    )


def cluster_size(model: ir.KernelModel) -> int | None:
    v = model.cluster.eval({}) if model.cluster is not None else None
    return v if isinstance(v, int) and not isinstance(v, bool) and 1 < v <= 16 else None


def _ranks_running(op: ir.Op, size: int) -> list[int] | None:
    """The CTA ranks of the cluster in which op runs (its rank-only uniform conditions)."""
    conds = [c for c in op.guard.uniform if _rank_only(c)]
    out = []
    for r in range(size):
        vals = [c.eval({"cta_rank": r}) for c in conds]
        if any(v is None for v in vals):
            return None
        if all(bool(v) for v in vals):
            out.append(r)
    return out


ranks_running = _ranks_running


def destinations(model: ir.KernelModel, op: ir.Op) -> dict[int, int] | None:
    """In a cluster of known size: the CTA whose copy of op's barrier each execution of op
    signals -> how many of the cluster's CTAs run op into it (a remote arrive to CTA c from
    every CTA counts twice on CTA c's copy in a pair; a commit multicast to the pair lands on
    both; a TMA load with `dst_mbar_cta` completes its bytes on that CTA's barrier; a
    multicast load on every masked CTA's, or, given `dst_mbar_cta` in a pair, all on that CTA's;
    a CLC response on every CTA's). None: not known."""
    size = cluster_size(model)
    if size is None:
        return None
    ranks = _ranks_running(op, size)
    if ranks is None:
        return None
    out: dict[int, int] = {}
    for r in ranks:
        got = destinations_at(op, r, size)
        if got is None:
            return None
        for d in got:
            out[d] = out.get(d, 0) + 1
    return out


def destinations_at(op: ir.Op, r: int, size: int, env: dict | None = None) -> list[int] | None:
    """One execution of op by a thread of the CTA of rank r, in a cluster of `size` CTAs: the
    CTAs whose copy of op's barrier it signals, once per delivery (a CTA twice when it gets two:
    a pair multicast whose bytes all complete on one `dst_mbar_cta`). The one reading of where
    an mbarrier op lands, for the counting engine (`destinations`) and the progress search's
    cluster exploration (`protocol`, which gives the walk's values in `env`). None: not known."""
    b = op.mbar if op.mbar is not None else ir.BarrierFacts()
    env = dict(env or {}, cta_rank=r)
    out: list[int] = []

    def add(d):
        if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d < size:
            raise ValueError
        out.append(d)

    try:
        if b.clc:
            for d in range(size):
                add(d)
        elif _pair_commit(op):
            for d in range(min(size, 2)):
                add(d)
        elif b.mbar_cta is not None:
            n = 1
            if op.kind == ir.TMA_LOAD and b.multicast:
                # cta_group::2 multicast with the barrier of one CTA of the pair
                # (`load_async(..., mask, dst_mbar_cta)`): every destination's bytes complete
                # on that barrier, so a 0b11 mask delivers twice the tile to it
                mask = b.mask
                mv = mask.eval(env) if isinstance(mask, E.Expr) else None
                if not isinstance(mv, int) or isinstance(mv, bool):
                    return None
                n = bin(mv & ((1 << size) - 1)).count("1")
                if size != 2 and n > 1:
                    return None
            for _ in range(n):
                add(b.mbar_cta.eval(env))
        elif op.kind == ir.TMA_LOAD and b.multicast:
            mask = b.mask
            mv = mask.eval(env) if isinstance(mask, E.Expr) else None
            if not isinstance(mv, int):
                return None
            for d in range(size):
                if mv >> d & 1:
                    add(d)
        elif b.cta is not None:
            c = b.cta
            add(c.eval(env) if isinstance(c, E.Expr) else None)
        elif b.remote or b.multicast:
            return None
        else:
            add(r)
    except ValueError:
        return None
    return out


def destination_parts(
    model: ir.KernelModel, op: ir.Op, issuers: frozenset[int], round_loop: int | None
) -> list[tuple[int, frozenset[int], int, bool]] | None:
    """r15-remote: where an mbarrier op whose target CTA is a term over the thread and the
    counters of loops inside its round (`mapa(full, tid / 64)`, `for (p ..) arrive(mapa(full,
    p))`) lands, summed over the cluster: [(CTA d, the issuing threads of every CTA that signal
    d's copy, deliveries to d per thread and round, whether that number replaces the round's
    multiplicity (the inner loops enumerated) or multiplies it)]. Every CTA rank that runs op,
    every issuing thread and every iteration of the inner loops (constant trips, their uniform
    conditions counted) is enumerated through `destinations_at`, the one reading of where an op
    lands. None: not known (cluster size, a trip, a value of the term)."""
    size = cluster_size(model)
    b = op.mbar
    if size is None or b is None or b.cta is None or b.mbar_cta is not None or b.multicast or b.clc:
        return None
    ranks = _ranks_running(op, size)
    if ranks is None or (
        op.barrier is not None and any(v.name == "cta_rank" for ix in op.barrier.index for v in ix.free_vars())
    ):
        return None  # (an element picked by the sender's rank: one pattern per sender, not summed)
    term_vars = b.cta.free_vars()
    if any(v.kind not in (E.THREAD, E.LOOP) and v.name != "cta_rank" for v in term_vars):
        return None
    start = op.loops.index(round_loop) + 1 if round_loop is not None and round_loop in op.loops else 0
    inner = [model.loops.get(lid) for lid in op.loops[start:]]
    if any(lp is None for lp in inner):
        return None
    loop_names = {v.name for v in term_vars if v.kind == E.LOOP}
    if not loop_names <= {lp.counter.name for lp in inner if lp is not None}:
        return None  # moves with the round (or an outer loop): not one target per round
    combos: list[dict] = [{}]
    if loop_names:
        import itertools

        trips = []
        for lp in inner:
            t = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
            if not isinstance(t, int) or isinstance(t, bool) or t > 64:
                return None
            trips.append(max(t, 0))
        names = [lp.counter.name for lp in inner if lp is not None]
        conds = [c for c in op.guard.uniform if any(v.name in names for v in c.free_vars())]
        combos = []
        for vals in itertools.product(*(range(t) for t in trips)):
            env = dict(zip(names, vals))
            ok = [c.eval(env) for c in conds]
            if any(v is None for v in ok):
                return None
            if all(ok):
                combos.append(env)
    by_thread = any(v.kind == E.THREAD for v in term_vars)
    threads = sorted(issuers) if by_thread else [None]
    if len(threads) * len(ranks) * len(combos) > MAX_ENUMERATED:
        return None
    groups: dict[tuple[int, int], set] = {}
    for t in threads:
        hits: dict[int, int] = {}
        tenv = {} if t is None else {"tid": t, "tid_y": 0, "tid_z": 0}
        for r in ranks:
            for env in combos:
                got = destinations_at(op, r, size, {**env, **tenv})
                if got is None:
                    return None
                for d in got:
                    hits[d] = hits.get(d, 0) + 1
        for d, n in hits.items():
            groups.setdefault((d, n), set()).update(issuers if t is None else {t})
    return [(d, frozenset(ts), n, bool(loop_names)) for (d, n), ts in sorted(groups.items())]


def _uniform_sig(
    op: ir.Op,
    model: ir.KernelModel | None = None,
    consumed: tuple = (),
    round_loop: int | None = None,
    leave: tuple = (),
) -> tuple | None:
    """The uniform conditions of a contribution, as text. A condition over the round counter
    (`if (k + 1 < n)`: no prefetch in the last round) is kept with the counter renamed, so
    that sites under the same condition compare equal; other loop-dependent or opaque
    conditions make it None (unknown)."""
    sig = []
    ren = {}
    if model is not None and round_loop is not None and round_loop in op.loops:
        ren[model.loops[round_loop].counter.name] = E.Var("r", E.LOOP)
        for depth, lid in enumerate(op.loops[: op.loops.index(round_loop)]):
            ren[model.loops[lid].counter.name] = E.Var(f"o{depth}", E.LOOP)
            # the steps the earlier tasks took (a ring carried across tasks of varying length)
            ren[flat_base(model.loops[lid].counter).name] = E.Var(f"o{depth}base", E.LOOP)
    for c in op.guard.uniform:
        if c in consumed or c in leave:
            continue
        if (_pair_commit(op) or (model is not None and cluster_size(model) is not None)) and _rank_only(c):
            continue  # which CTAs run it: the destination accounting's part
        if model is not None and _running(model, op, c):
            sig.append(RUNNING)
            continue
        if model is not None and any(model.loops[lid].cond == c for lid in op.loops if lid in model.loops):
            sig.append(RUNNING)  # the enclosing loop's own condition: every round that runs
            continue
        if c.is_opaque():
            return None
        if c.depends_on(E.LOOP):
            c = E.substitute(c, ren)
            if any(
                v.kind == E.LOOP and v.name not in ("r",) and not v.name.startswith("o") for v in c.free_vars()
            ) or any(
                v.kind == E.LOOP and v.name.startswith("o") and v.name not in {x.name for x in ren.values()}
                for v in c.free_vars()
            ):
                return None
        sig.append(str(c))
    return tuple(sorted(sig))


def blind_ops(m: ir.KernelModel) -> list[ir.Op]:
    """The mbarrier operations the front end could not attribute to a barrier (raw PTX, an
    unresolved barrier argument, a `mapa` address it does not follow): each may arrive on, or
    complete bytes of, any barrier of the kernel (in its own CTA or, remotely, in a peer's)."""
    return [
        o
        for o in m.ops
        if o.barrier_unknown is not None
        or (
            o.kind == ir.CALL
            and o.asm is not None
            and o.asm.mbarrier
            # an unmodelled instruction on a barrier it names: that barrier's account alone
            and not (o.unmodelled_barrier_use and o.barrier is not None)
        )
    ]


def accounts(an: Analysis) -> dict[str, BarrierAccount]:
    return an.fact("barrier_accounts", _compute)


def _compute(an: Analysis) -> dict[str, BarrierAccount]:
    m = an.model
    out: dict[str, BarrierAccount] = {name: BarrierAccount(b) for name, b in m.barriers.items()}
    ragged = _ragged_barriers(an)
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
        if op.barrier.name in ragged:
            continue  # enumerated phase by phase below (`_ragged_account`)
        pair_commit = _pair_commit(op)
        dests = destinations(m, op)
        b = op.mbar if op.mbar is not None else ir.BarrierFacts()
        crossing = (
            (b.remote or b.multicast or b.cta is not None or b.mbar_cta is not None)
            and not pair_commit
            and dests is None
        )
        if crossing and (b.cta is None or b.mbar_cta is not None or b.multicast):
            acc.unknown.append(f"{op.api} at line {op.location.row} crosses CTAs")
            continue
        issuers = an.threads.issuers(op)
        if issuers is None and not any(ix.depends_on(E.THREAD) for ix in op.barrier.index):
            # a warp picked by the iteration (`if (warpid() == iter % 4)`): as many issuers in
            # every round, so the per-round sum counts those of iteration 0
            pr = an.threads.per_round(op)
            issuers = pr[1] if pr is not None else None
        if issuers is None:
            acc.unknown.append(f"threads of {op.api} at line {op.location.row} unknown")
            continue
        elems_of = None
        if instance_loops(m, op):
            elems_of = _instance_elements(m, op, None)
            if elems_of is None:
                acc.unknown.append(
                    f"elements of '{acc.barrier.name}' hit by {op.api} at line {op.location.row} not enumerated"
                )
                continue
        for part_issuers, index in _element_parts(op, issuers):
            r = _round_of(m, op, an, index)
            if r is None:
                acc.unknown.append(f"rounds of {op.api} at line {op.location.row} not recognised")
                break
            round_loop, times, pattern, consumed, exprs = r
            if index is not None:
                acc.per_thread = True
            c_args = (round_loop, pattern, consumed)
            c_kw = {"pattern_exprs": exprs}
            targets: list[tuple[int | None, frozenset[int], E.Expr]]
            if crossing:
                # a target CTA that is a term over the thread / inner loop counters: the issuers
                # and deliveries of every CTA summed per target (r15-remote)
                parts = destination_parts(m, op, part_issuers, round_loop)
                if parts is None:
                    acc.unknown.append(f"{op.api} at line {op.location.row} crosses CTAs")
                    break
                targets = [(d, ts, E.Const(n) if enum else E.binop("*", times, E.Const(n))) for d, ts, n, enum in parts]
            elif dests is not None:
                targets = [
                    (d, part_issuers, times if k == 1 else E.binop("*", times, E.Const(k)))
                    for d, k in sorted(dests.items())
                ]
            else:
                targets = [(None, part_issuers, times)]
            for cta, who, times_c in targets:
                key = _group_key(round_loop)
                if elems_of is not None:
                    key += f" elements {sorted(elems_of)}"
                if cta is not None:
                    key += f" in CTA {cta}"
                if op.kind == ir.MBAR_ARRIVE:
                    amount = op.count if op.count is not None else E.opaque("count")
                    acc.arrivals.setdefault(key, []).append(Contribution(op, who, amount, times_c, *c_args, **c_kw))
                elif op.kind == ir.MBAR_EXPECT:
                    if op.expect_arrivals:
                        acc.arrivals.setdefault(key, []).append(
                            Contribution(op, who, E.Const(op.expect_arrivals), times_c, *c_args, **c_kw)
                        )
                    acc.expects.setdefault(key, []).append(
                        Contribution(
                            op,
                            who,
                            op.bytes if op.bytes is not None else E.opaque("bytes"),
                            times_c,
                            *c_args,
                            **c_kw,
                        )
                    )
                else:
                    acc.loads.setdefault(key, []).append(
                        Contribution(
                            op,
                            who,
                            op.bytes if op.bytes is not None else E.opaque("bytes"),
                            times_c,
                            *c_args,
                            **c_kw,
                        )
                    )
    # mbarrier operations the front end could not attribute (raw PTX, an
    # unresolved barrier argument) may arrive on any barrier: no sums then
    blind = blind_ops(m)
    # a call tkcheck does not model received the barrier: its account is unknown
    for o in m.ops:
        if o.unmodelled_barrier_use and o.barrier is not None and o.barrier.name in out:
            out[o.barrier.name].unknown.append(f"passed to {o.api} at line {o.location.row}, which is not modelled")
    if blind:
        for acc in out.values():
            acc.unknown.append(f"unattributed mbarrier operation at line {blind[0].location.row}")
    for name, acc in out.items():
        why = _tx_only_unordered(an, name)
        if why is not None:
            acc.unknown.append(why)
            acc.tx_unordered.append(why)
    for name in ragged:
        acc = out[name]
        r = _ragged_account(an, acc)
        if isinstance(r, str):
            acc.unknown.append(r)
        else:
            acc.ragged = r
    size = cluster_size(m)
    if size is not None:
        # a barrier copy no thread of that CTA waits on does not gate anything: its groups go
        for acc in out.values():
            ranks: set[int] = set()
            for w in acc.waits:
                r = _ranks_running(w, size)
                if r is None:
                    ranks = set(range(size))
                    break
                ranks |= set(r)
            for groups in (acc.arrivals, acc.expects, acc.loads):
                for key in list(groups):
                    if " in CTA " in key and cta_of(key) not in ranks:
                        del groups[key]
    for acc in out.values():
        if acc.per_thread:
            _split_by_element(acc, an.solver_timeout_ms)
        _separate_fills(m, acc)
        _merge_arm_ahead(m, acc, an.solver_timeout_ms)
    for acc in out.values():
        counts = {str(o.count) for o in acc.inits if o.count is not None}
        if (
            len(acc.inits) >= 1
            and len(counts) == 1
            and all(
                o.count is not None and not o.count.depends_on(E.LOOP) and not o.count.is_opaque() for o in acc.inits
            )
        ):
            acc.init_count = acc.inits[0].count
        if acc.inits and any(instance_loops(m, o) for o in acc.inits):
            # an MK op's dynamic semaphores: one array, elements with counts of their own
            _element_inits(m, acc)
        # the same visiting pattern and uniform conditions across a group
        alts: list[tuple[dict, str, list[Contribution]]] = []
        for groups in (acc.arrivals, acc.expects, acc.loads):
            for key, contribs in list(groups.items()):
                _merge_exclusive(contribs, an.solver_timeout_ms)
                _merge_continued(m, contribs, an.solver_timeout_ms)
                _merge_peeled(m, contribs, an.solver_timeout_ms)
                _merge_steps(m, contribs, an.solver_timeout_ms)
                alt = _merge_lookahead(m, contribs, an.solver_timeout_ms)
                if alt is not None:
                    alts.append((groups, key + FIRST_FILL, alt))
        for groups, key, alt in alts:
            groups[key] = alt
        _pair_first_fills(acc)
        for key, contribs in list(acc.arrivals.items()):
            if _nested_rounds(contribs) or _one_shot_visits(key, contribs):
                one = _one_phase_per_visit(m, acc, contribs)
                if one is not None:
                    if any(c.op.kind == ir.MBAR_EXPECT for c in contribs):
                        # the expects of those visits: one a phase, their bytes against the
                        # loads' per element and round (`_bytes_per_visit`)
                        if key not in acc.expects or not _nested_rounds(acc.expects[key]):
                            continue
                        pair = _bytes_per_visit(m, contribs, acc.expects[key], acc.loads.get(key, []))
                        if pair is None:
                            continue
                        acc.expects[key], acc.loads[key] = pair
                    acc.arrivals[key] = one
                    acc.per_visit.add(key)
        for groups in (acc.arrivals, acc.expects, acc.loads):
            for key, contribs in groups.items():
                pats = {c.pattern for c in contribs}
                sigs = {_uniform_sig(c.op, m, c.consumed, c.round_loop, c.exclusive) for c in contribs}
                if _nested_rounds(contribs):
                    acc.unknown.append(
                        f"{key} sites of '{acc.barrier.name}' are at different loop depths of one "
                        "role: they need not share a phase"
                    )
                elif key not in acc.per_visit and _several_waits_per_round(an, acc, contribs):
                    # `wait(b, p); p ^= 1; ... arrive(b); wait(b, p); p ^= 1;` in one iteration: one
                    # round completes more than one phase, so a round's sum is no phase's count
                    acc.unknown.append(
                        f"{key} sites of '{acc.barrier.name}': the barrier is waited at several sites "
                        "in one round (more than one phase per round)"
                    )
                elif len(pats) > 1 or None in sigs or len(sigs) > 1:
                    acc.unknown.append(
                        f"{key} sites of '{acc.barrier.name}' visit it in different patterns "
                        "or under different conditions"
                    )
                elif any(RUNNING in s for s in sigs) and ASSUMPTION not in acc.assumptions:
                    acc.assumptions.append(ASSUMPTION)
    return out


def _several_waits_per_round(an: Analysis, acc: BarrierAccount, contribs: list[Contribution]) -> bool:
    """Two wait sites on the barrier inside the round loop of a group's contributions that a
    thread may both run (threads not known: may): that thread sees more than one phase a round.
    (Two roles waiting at a site each see one phase a round.)"""
    from .. import solver

    to = an.solver_timeout_ms
    loops = {c.round_loop for c in contribs if c.round_loop is not None}
    for rl in loops:
        ws = [w for w in acc.waits if rl in w.loops]
        for i, a in enumerate(ws):
            for b in ws[i + 1 :]:
                ea, eb = an.threads.executing(a), an.threads.executing(b)
                if ea is not None and eb is not None and not ea & eb:
                    continue
                ia, ib = a.barrier.index if a.barrier else (), b.barrier.index if b.barrier else ()
                same = E.conj(*[E.binop("==", x, y) for x, y in zip(ia, ib)]) if len(ia) == len(ib) else E.Const(True)
                if solver.always(E.negate(same), to) is True:
                    continue  # two elements (a ring's two slots): one phase of each
                if (
                    a.parity is not None
                    and b.parity is not None
                    and solver.always(E.binop("==", a.parity, b.parity), to, assume=(same,)) is True
                ):
                    continue  # the same parity again: the same phase seen twice
                return True
    return False


def _merge_exclusive(contribs: list[Contribution], timeout_ms: int) -> None:
    """Two sites of one role that differ only in one uniform condition, c and its negation
    (`if (k == 0) mm2_AB(acc, a, b, sem); else mma2_AB(acc, a, b, sem);`), with the same
    threads, amount, multiplicity and pattern: exactly one of them runs in every round, so
    they count once, as one site without that condition (in place). Sites merged so are
    merged again by the same rule over the conditions they keep, when both left out the same
    ones: the leaves of a tree of if/else on uniform conditions (`if (a) { if (b) load(x) else
    load(y) } else { if (b) load(z) else load(w) }`) count as one site."""
    from .. import solver

    changed = True
    while changed:
        changed = False
        for i, a in enumerate(contribs):
            for b in contribs[i + 1 :]:
                if (
                    a.issuers != b.issuers
                    or a.pattern != b.pattern
                    or a.round_loop != b.round_loop
                    or str(a.amount) != str(b.amount)
                    or str(a.times) != str(b.times)
                    or a.op.guard.thread != b.op.guard.thread
                    or set(map(str, a.exclusive)) != set(map(str, b.exclusive))
                ):
                    continue
                ua = [c for c in a.op.guard.uniform if c not in a.exclusive]
                ub = [c for c in b.op.guard.uniform if c not in b.exclusive]
                if a.exclusive and (
                    len(ua) != len(a.op.guard.uniform) - len(a.exclusive)
                    or len(ub) != len(b.op.guard.uniform) - len(b.exclusive)
                ):
                    continue  # a left-out condition that is not one of the site's own conjuncts
                da = [c for c in ua if c not in ub]
                db = [c for c in ub if c not in ua]
                if len(da) != 1 or len(db) != 1:
                    continue
                if (
                    solver.always(
                        E.binop("==", E.ite(da[0], E.Const(1), E.Const(0)), E.ite(db[0], E.Const(0), E.Const(1))),
                        timeout_ms,
                    )
                    is not True
                ):
                    continue
                a.exclusive = (*a.exclusive, da[0])
                contribs.remove(b)
                changed = True
                break
            if changed:
                break


def continues(m: ir.KernelModel, a: ir.Op, b: ir.Op, timeout_ms: int) -> bool:
    """b, in a loop D that goes on with the values a previous loop P advanced
    (`Loop.carried_from`), is a's site continued: a runs in every iteration of P, b in every
    iteration of D, nested in nothing else, and b's barrier element at D's iteration j is a's at
    P's iteration P.trip + j (proved for the iterations that run). Their rounds are then one
    sequence: P's rounds followed by D's."""
    from .. import solver

    if len(a.loops) != 1 or len(b.loops) != 1 or a.barrier is None or b.barrier is None:
        return False
    P, D = m.loops.get(a.loops[0]), m.loops.get(b.loops[0])
    if P is None or D is None or D.carried_from != P.id or P.trip is None or D.trip is None:
        return False
    if a.barrier.name != b.barrier.name or len(a.barrier.index) != len(b.barrier.index):
        return False
    for o in (a, b):
        g = o.guard
        if not g.exact or g.thread.depends_on(E.LOOP) or any(c.depends_on(E.LOOP) or c.is_opaque() for c in g.uniform):
            return False
    if set(a.guard.uniform) != set(b.guard.uniform) or a.guard.thread != b.guard.thread:
        return False
    k = P.counter
    back = {D.counter.name: E.binop("-", k, P.trip)}
    same = E.conj(*[E.binop("==", E.substitute(y, back), x) for x, y in zip(a.barrier.index, b.barrier.index)])
    lo, hi = E.binop(">=", k, P.trip), E.binop("<", k, E.binop("+", P.trip, D.trip))
    return solver.always(same, timeout_ms, assume=(lo, hi, *a.guard.uniform)) is True


def _merge_continued(m: ir.KernelModel, contribs: list[Contribution], timeout_ms: int) -> None:
    """A site in a loop that continues a previous loop's sequence (see `continues`) with the
    same threads and amounts as that loop's site contributes to the rounds after that loop's,
    the same per round: one contribution stands for both (in place)."""
    for b in list(contribs):
        for a in contribs:
            if (
                a is not b
                and a.issuers == b.issuers
                and str(a.amount) == str(b.amount)
                and str(a.times) == str(b.times)
                and a.op.kind == b.op.kind
                and not a.consumed
                and not b.consumed
                and continues(m, a.op, b.op, timeout_ms)
            ):
                contribs.remove(b)
                break


def peeled(m: ir.KernelModel, a: ir.Op, b: ir.Op, timeout_ms: int) -> bool:
    """a is the first iteration of b's loop, peeled out before it (`wait(bar[ring]); ...;
    ring = advance(ring); for (k = 1; k < K; k++) { wait(bar[ring]); ... }` in a task loop):
    b's loop I sits directly in a's innermost loop O, a comes before I's body, both under the
    same guards, on a one-dimensional array of S elements, and the elements a, b(0), b(1), ...
    walk the ring with one step s: b(0) == (a + s) % S and b(k + 1) == (b(k) + s) % S for every
    k >= 0 (proved by z3 for any a in [0, S), so also for a ring position carried across the
    tasks that the model does not follow). a's visit is then the round before I's first: the
    rounds of a and b are one sequence, one visit each."""
    from .. import solver

    if a.barrier is None or b.barrier is None or a.barrier.name != b.barrier.name:
        return False
    decl = m.barriers.get(a.barrier.name)
    if decl is None or len(decl.dims) != 1 or len(a.barrier.index) != 1 or len(b.barrier.index) != 1:
        return False
    size = decl.dims[0].eval({})
    if not isinstance(size, int) or isinstance(size, bool) or not 1 < size <= 64:
        return False
    if not a.loops or b.loops[:-1] != a.loops:
        return False
    I = m.loops.get(b.loops[-1])
    if I is None or I.parent != a.loops[-1] or I.continues or not I.uniform:
        return False
    first = min((o.order for o in m.ops if I.id in o.loops), default=b.order)
    if a.order > first:
        return False
    k = I.counter
    for o in (a, b):
        # the same conditions (over the task loop's counter too: a task's `if (done) break;`),
        # none over I's counter
        g = o.guard
        if not g.exact or g.thread.depends_on(E.LOOP) or any(k in c.free_vars() or c.is_opaque() for c in g.uniform):
            return False
    if set(a.guard.uniform) != set(b.guard.uniform) or a.guard.thread != b.guard.thread:
        return False
    xa, xb = a.barrier.index[0], b.barrier.index[0]
    if k not in xb.free_vars() or k in xa.free_vars():
        return False
    S = E.Const(size)
    assume = (E.binop(">=", xa, E.Const(0)), E.binop("<", xa, S), *a.guard.uniform)
    b0 = E.substitute(xb, {k.name: E.Const(0)})
    b1 = E.substitute(xb, {k.name: E.binop("+", k, E.Const(1))})
    for step in range(1, size):
        st = E.Const(step)
        first_ok = E.binop("==", b0, E.binop("%", E.binop("+", xa, st), S))
        if solver.always(first_ok, timeout_ms, assume=assume) is not True:
            continue
        walk = E.binop("==", b1, E.binop("%", E.binop("+", xb, st), S))
        if solver.always(walk, timeout_ms, assume=assume) is not True:
            return False
        return _next_task_continues(m, a, I, xa, st, S, E.Const(1), assume, timeout_ms)
    return False


def _next_task_continues(m, a: ir.Op, I: ir.Loop, xa, st, S, extra, assume, timeout_ms: int) -> bool:
    """Where a's element moves with the task loop O around I (a ring carried across tasks in
    closed form): the next task's first visit is the step after this task's last, (xa + (T +
    extra) s) % S with T I's trip count -- else a prefetch of the next task's first stage in
    the last k iteration and that task's own first fill would visit one element twice. An
    element the model does not follow from task to task is taken as it comes (any a)."""
    from .. import solver

    O = m.loops.get(a.loops[-1])
    if O is None or O.counter not in xa.free_vars():
        return True
    T = I.trip
    if T is None or T.depends_on(E.LOOP) or T.is_opaque():
        return False
    nxt = E.substitute(xa, {O.counter.name: E.binop("+", O.counter, E.Const(1))})
    steps = E.binop("+", T, extra) if extra != E.Const(0) else T
    cont = E.binop("==", nxt, E.binop("%", E.binop("+", xa, E.binop("*", steps, st)), S))
    return solver.always(cont, timeout_ms, assume=assume) is True


def _merge_peeled(m: ir.KernelModel, contribs: list[Contribution], timeout_ms: int) -> None:
    """A peeled first iteration (see `peeled`) with the same threads, amount, kind and
    multiplicity as its loop's site contributes to one round of the same sequence, the same
    per round: the loop's contribution stands for both (in place)."""
    for a in list(contribs):
        for b in contribs:
            if (
                a is not b
                and a.issuers == b.issuers
                and str(a.amount) == str(b.amount)
                and str(a.times) == str(b.times)
                and a.op.kind == b.op.kind
                and not a.consumed
                and not b.consumed
                and peeled(m, a.op, b.op, timeout_ms)
            ):
                contribs.remove(a)
                break


def ring_steps(m: ir.KernelModel, ops: list[ir.Op], round_loop: int, timeout_ms: int) -> bool:
    """ops (two or more, in program order) are the steps of one ring an iteration of their
    round loop R (`use(bar[s]); if (++s == S) { s = 0; ...; } use(bar[s]); ...` twice or more
    in R's body): each runs once in every iteration of R, directly in R, under the same
    guards (none over R's counter), on a one-dimensional array of S elements, and the elements
    x_0(k), ..., x_{P-1}(k), x_0(k + 1), ... walk the ring with one step s: x_{j+1}(k) ==
    (x_j(k) + s) % S and x_0(k + 1) == (x_{P-1}(k) + s) % S, proved by z3 for any x_0(k) in
    [0, S) (so also for a ring position carried across tasks). Every visit of an element is
    then one step of one sequence, as a single site's visits are in its rounds."""
    from .. import solver

    if len(ops) < 2:
        return False
    a = ops[0]
    if a.barrier is None:
        return False
    decl = m.barriers.get(a.barrier.name)
    if decl is None or len(decl.dims) != 1:
        return False
    size = decl.dims[0].eval({})
    if not isinstance(size, int) or isinstance(size, bool) or not 1 < size <= 64 or len(ops) > size:
        return False
    R = m.loops.get(round_loop)
    if R is None or R.continues or not R.uniform:
        return False
    k = R.counter
    # the first step may skip the first iteration (`if (k > 0) release(bar[(2k - 1) % S])`, the
    # release of the previous iteration's last stage, lagging one step): the walk then starts
    # at the next step, as a single site's does at its first round
    base = _lagged_first(a, k, timeout_ms)
    for o in ops:
        g = o.guard
        uniform = tuple(c for c in g.uniform if o is not a or c != base)
        if o.barrier is None or o.barrier.name != a.barrier.name or len(o.barrier.index) != 1:
            return False
        if not o.loops or o.loops[-1] != round_loop or o.loops != a.loops:
            return False
        if not g.exact or g.thread.depends_on(E.LOOP) or any(k in c.free_vars() or c.is_opaque() for c in uniform):
            return False
        if set(uniform) != {c for c in a.guard.uniform if c != base} or g.thread != a.guard.thread:
            return False
        if o.barrier.index[0].is_opaque():
            return False
    xs = [o.barrier.index[0] for o in ops]
    S = E.Const(size)
    assume = (
        E.binop(">=", xs[0], E.Const(0)),
        E.binop("<", xs[0], S),
        *(c for c in a.guard.uniform if c != base),
    )
    nxt = E.substitute(xs[0], {k.name: E.binop("+", k, E.Const(1))})
    for step in range(1, size):
        st = E.Const(step)
        if (
            solver.always(E.binop("==", xs[1], E.binop("%", E.binop("+", xs[0], st), S)), timeout_ms, assume=assume)
            is not True
        ):
            continue
        walk = [E.binop("==", y, E.binop("%", E.binop("+", x, st), S)) for x, y in zip(xs[1:], xs[2:] + [nxt])]
        return solver.always(E.conj(*walk), timeout_ms, assume=assume) is True
    return False


def _lagged_first(op: ir.Op, k: E.Var, timeout_ms: int) -> E.Expr | None:
    """The one uniform condition of op over the round counter k that holds exactly in the
    iterations k >= 1 (`kt > 0` of `kt = 2 * k`); None: no such condition."""
    from .. import solver

    over_k = [c for c in op.guard.uniform if k in c.free_vars()]
    if len(over_k) != 1 or over_k[0].is_opaque():
        return None
    c = over_k[0]
    same = E.binop(
        "==",
        E.ite(c, E.Const(1), E.Const(0)),
        E.ite(E.binop(">=", k, E.Const(1)), E.Const(1), E.Const(0)),
    )
    if solver.always(same, timeout_ms, assume=(E.binop(">=", k, E.Const(0)),)) is not True:
        return None
    return c


def _merge_steps(m: ir.KernelModel, contribs: list[Contribution], timeout_ms: int) -> None:
    """Sites of one round loop with the same threads, amount, kind and multiplicity that are
    the steps of one ring (see `ring_steps`): each visit of an element gets one site's
    contribution, as a single site's would; the first site stands for all (in place), or the
    first that runs in every iteration where the first lags one step (`_lagged_first`)."""
    groups: dict[tuple, list[Contribution]] = {}
    for c in contribs:
        if c.round_loop is None or c.consumed or c.exclusive:
            continue
        key = (c.round_loop, c.issuers, str(c.amount), str(c.times), c.op.kind)
        groups.setdefault(key, []).append(c)
    for key, cs in groups.items():
        if len(cs) < 2 or len({c.pattern for c in cs}) < 2:
            continue
        cs = sorted(cs, key=lambda c: c.op.order)
        if ring_steps(m, [c.op for c in cs], key[0], timeout_ms):
            keep = cs[1] if _lagged_first(cs[0].op, m.loops[key[0]].counter, timeout_ms) is not None else cs[0]
            for c in cs:
                if c is not keep:
                    contribs.remove(c)


def lookahead(m: ir.KernelModel, a: ir.Op, b: ir.Op, timeout_ms: int) -> bool:
    """a fills a ring's first stage of a task before the k loop I, b prefetches the next stage
    in I's iterations but the last (`fill(bar[s]); for (k = 0; k < T; k++) { wait(bar[s]);
    ...; advance(s); if (k + 1 < T) fill(bar[s]); }` in a task loop O): a directly in O
    before I, b directly in I, the same guards but for b's one condition over I's counter,
    which holds exactly for k + 1 < T; on a one-dimensional array of S elements, with one
    step s: b(k) == (a + (k + 1) s) % S, the next task's a == (a + T s) % S and T >= 1
    (proved by z3 for any a in [0, S)). The elements the two visit are then one walk of the
    ring, a visit a step, as a single site's are in its rounds."""
    from .. import solver

    if a.barrier is None or b.barrier is None or a.barrier.name != b.barrier.name:
        return False
    decl = m.barriers.get(a.barrier.name)
    if decl is None or len(decl.dims) != 1 or len(a.barrier.index) != 1 or len(b.barrier.index) != 1:
        return False
    size = decl.dims[0].eval({})
    if not isinstance(size, int) or isinstance(size, bool) or not 1 < size <= 64:
        return False
    if not a.loops or b.loops[:-1] != a.loops:
        return False
    O, I = m.loops.get(a.loops[-1]), m.loops.get(b.loops[-1])
    if O is None or I is None or I.parent != O.id or I.continues or not I.uniform or I.trip is None:
        return False
    if I.trip.depends_on(E.LOOP) or I.trip.is_opaque() or O.continues:
        return False
    first = min((o.order for o in m.ops if I.id in o.loops), default=b.order)
    if a.order > first:
        return False
    k, kO, T = I.counter, O.counter, I.trip
    for o in (a, b):
        g = o.guard
        if not g.exact or g.thread.depends_on(E.LOOP) or any(c.is_opaque() for c in g.uniform):
            return False
    if a.guard.thread != b.guard.thread or any(k in c.free_vars() for c in a.guard.uniform):
        return False
    extra = [c for c in b.guard.uniform if c not in a.guard.uniform]
    if not set(a.guard.uniform) <= set(b.guard.uniform) or len(extra) != 1 or k not in extra[0].free_vars():
        return False
    xa, xb = a.barrier.index[0], b.barrier.index[0]
    if k not in xb.free_vars() or k in xa.free_vars() or any(v.kind == E.OPAQUE for v in xa.free_vars()):
        return False
    if kO not in xa.free_vars():
        return False  # the walk from task to task must be shown (`_next_task_continues`)
    S = E.Const(size)
    in_loop = (E.binop(">=", k, E.Const(0)), E.binop("<", k, T))
    assume = (E.binop(">=", xa, E.Const(0)), E.binop("<", xa, S), *a.guard.uniform)
    # b runs exactly in the iterations k + 1 < T
    last = E.binop(
        "==",
        E.ite(extra[0], E.Const(1), E.Const(0)),
        E.ite(E.binop("<", E.binop("+", k, E.Const(1)), T), E.Const(1), E.Const(0)),
    )
    if solver.always(last, timeout_ms, assume=assume + in_loop) is not True:
        return False
    if solver.always(E.binop(">=", T, E.Const(1)), timeout_ms, assume=tuple(a.guard.uniform)) is not True:
        return False
    for step in range(1, size):
        st = E.Const(step)
        at = E.binop("%", E.binop("+", xa, E.binop("*", E.binop("+", k, E.Const(1)), st)), S)
        if solver.always(E.binop("==", xb, at), timeout_ms, assume=assume + in_loop) is not True:
            continue
        return _next_task_continues(m, a, I, xa, st, S, E.Const(0), assume, timeout_ms)
    return False


def _ragged_barriers(an: Analysis) -> set[str]:
    """i7model: the barriers whose arrivals are enumerated phase by phase: one with an
    `arrive_drop` (its expected count changes from phase to phase), and a scalar barrier with an
    arrival in a loop whose trip count is not the same number for all its arriving threads (a
    ragged tail: warps leave after different rounds). The per-round sums count every issuer in
    every round, which such a loop does not do: they would prove a count no phase has."""
    m = an.model
    out = set()
    for o in m.ops:
        if o.kind != ir.MBAR_ARRIVE or o.barrier is None:
            continue
        if o.mbar is not None and o.mbar.drop:
            out.add(o.barrier.name)
            continue
        if o.barrier.index:
            continue  # an array's elements: each its own issuers (open: threads of unequal trips on one element)
        for lid in o.loops:
            L = m.loops.get(lid)
            if L is None or L.uniform or L.trip is None:
                continue
            ex = an.threads.executing(replace_guard_loopfree(o))
            trips = {L.trip.eval({"tid": t, "tid_y": 0, "tid_z": 0}) for t in ex} if ex is not None else {None}
            if len(trips) != 1 or not isinstance(next(iter(trips)), int):
                out.add(o.barrier.name)
                break
    return out


MAX_RAGGED_PHASES = 4096


def _tx_only_unordered(an: Analysis, name: str) -> str | None:
    """r16-expecttx: an expect_tx without an arrival (`Op.tx_only`) adds its bytes to the phase
    in progress when it runs; made after the arrival that completes the phase it means (tx count
    0), it lands in the next one. The sums per round hold only when each such expect is ordered
    before an arrival its phase needs, in the same round: an arrival of the same barrier element
    in the same loop body after it by each of its own threads (program order), or after a
    `__syncwarp` / block barrier between them that both the expecting and the arriving threads
    run. Why not, or None when every tx-only expect of `name` is so ordered."""
    m, th = an.model, an.threads
    sites = [o for o in m.ops if o.barrier is not None and o.barrier.name == name]
    for x in sites:
        if not x.tx_only:
            continue
        xs = th.issuers(x)
        why = f"expect_tx at line {x.location.row} (no arrival) not shown to come before the arrival that completes its phase"
        if xs is None:
            return why
        arrivals = [
            a
            for a in sites
            if a.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)
            and a.expect_arrivals + (a.kind == ir.MBAR_ARRIVE)
            and a.loops == x.loops
            and a.order > x.order
            and a.barrier.index == x.barrier.index
            and a.guard.exact
        ]
        ok = False
        for a in arrivals:
            at = th.issuers(a)
            if at is None or not at:
                continue
            if xs <= at:
                ok = True  # each expecting thread arrives after it (an arrival the phase needs)
                break
            between = [
                o
                for o in m.ops
                if o.kind == ir.SYNC and o.loops == x.loops and x.order < o.order < a.order and o.guard.exact
            ]
            for sy in between:
                ex = th.executing(sy)
                if ex is None or not (xs | at) <= ex:
                    continue
                if sy.sync_kind == "block" or (sy.sync_kind == "warp" and _warp_sync_covers(sy, xs | at)):
                    ok = True
                    break
            if ok:
                break
        if not ok:
            return why
    return None


def _warp_sync_covers(sy: ir.Op, threads: frozenset[int]) -> bool:
    """A `__syncwarp(mask)` that every one of `threads` (all of one warp) takes part in."""
    if len({t // 32 for t in threads}) != 1:
        return False
    mask = sy.sync.mask if sy.sync is not None else None
    v = mask.eval({}) if mask is not None else 0xFFFFFFFF
    return isinstance(v, int) and not isinstance(v, bool) and all((v >> (t % 32)) & 1 for t in threads)


def _ragged_account(an: Analysis, acc: BarrierAccount) -> "RaggedAccount | str":
    """The arrivals of each phase of a scalar barrier of one CTA whose arrival sites (plain
    arrives and arrive_drops, count given) all sit in one loop L directly, each thread's round
    k of L one phase (L's body paces the thread: it waits there, as `_arrival_round` asks of a
    round), L's trip count and every site's guard a number for each thread and round. Phase p
    expects the init count less every drop of phases before p (PTX ISA: arrive_drop lowers the
    expected count of the current and the later phases; its own arrival counts in its phase).
    A reason (str) when any of that is not so: the account is then unknown, never a finding."""
    m = an.model
    name = acc.barrier.name
    sites = [
        o
        for o in m.ops
        if o.barrier is not None and o.barrier.name == name and o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)
    ]
    why = f"arrivals of '{name}' (arrive_drop / a ragged loop) not enumerated: "
    if any(o.kind != ir.MBAR_ARRIVE for o in sites):
        return why + "expects or byte deliveries on it"
    if acc.barrier.dims or any(o.barrier.index for o in sites):
        return why + "a barrier array"
    if cluster_size(m) is not None and any(
        o.mbar is not None and (o.mbar.remote or o.mbar.cta is not None or o.mbar.multicast) for o in sites
    ):
        return why + "an arrival on another CTA's copy"
    inits = [o for o in m.ops if o.kind == ir.MBAR_INIT and o.barrier is not None and o.barrier.name == name]
    if len(inits) != 1 or inits[0].loops or inits[0].count is None:
        return why + "not initialised once"
    init = inits[0].count.eval({})
    if not isinstance(init, int) or isinstance(init, bool) or init <= 0:
        return why + "init count not a number"
    loops = {o.loops for o in sites}
    if len(loops) != 1 or len(next(iter(loops))) != 1:
        return why + "arrival sites not all directly in one loop"
    lid = next(iter(loops))[0]
    L = m.loops.get(lid)
    if L is None or L.trip is None or L.continues or L.parent is not None and L.parent in m.loops:
        return why + "the loop's trip count not known (or the loop nested)"
    k = L.counter.name
    mine: set[int] = set()
    for o in sites:
        ex = an.threads.executing(replace_guard_loopfree(o))
        if ex is None:
            return why + f"threads of {o.api} at line {o.location.row} not known"
        mine |= ex
    # one round a phase: each arriving thread waits in the loop's body (`_arrival_round`)
    pacers = [o for o in m.ops if lid in o.loops and _paces(o)]
    # per thread and round (below) where no pacing op runs for every thread in every round
    per_round = not any((an.threads.executing(o) or frozenset()) & mine for o in pacers)
    if per_round and not pacers:
        return why + "the loop does not wait: a thread's arrivals need not be a phase apart"
    arrived: dict[int, int] = {}
    drops: dict[int, int] = {}
    for t in sorted(mine):
        env: dict = {"tid": t, "tid_y": 0, "tid_z": 0}
        trip = L.trip.eval(env)
        if not isinstance(trip, int) or isinstance(trip, bool) or trip > MAX_RAGGED_PHASES:
            return why + f"the trip count of thread {t} not a number"
        unpaced = False  # the thread arrived in a round it did not wait in (per_round only)
        for r in range(max(trip, 0)):
            env[k] = r
            paced = not per_round
            if per_round:
                # one round a phase: a thread that arrives in a later round waited in each earlier
                # round it arrived in (a pacing op whose exact guard holds for it there)
                for o in pacers:
                    g = o.guard
                    runs = [c.eval(env) for c in (g.thread, *g.uniform)]
                    if not g.exact or any(not isinstance(v, (bool, int)) for v in runs):
                        return why + f"the guard of {o.api} at line {o.location.row} not a number for thread {t}"
                    paced = paced or all(runs)
            for o in sites:
                g = o.guard
                if not g.exact:
                    return why + f"the guard of {o.api} at line {o.location.row} not exact"
                runs = [c.eval(env) for c in (g.thread, *g.uniform)]
                if any(not isinstance(v, (bool, int)) for v in runs):
                    return why + f"the guard of {o.api} at line {o.location.row} not a number for thread {t}"
                if not all(runs):
                    continue
                n = o.count.eval(env) if o.count is not None else None
                if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
                    return why + f"the count of {o.api} at line {o.location.row} not a number"
                if unpaced:
                    return why + f"thread {t} arrives in round {r} not having waited since its last arrival"
                arrived[r] = arrived.get(r, 0) + n
                unpaced = unpaced or not paced
                if o.mbar is not None and o.mbar.drop:
                    drops[r] = drops.get(r, 0) + n
    phases = max(arrived, default=-1) + 1
    exp, dropped = [], 0
    for p in range(phases):
        exp.append(init - dropped)
        dropped += drops.get(p, 0)
    return RaggedAccount(
        [arrived.get(p, 0) for p in range(phases)],
        exp,
        [o for o in sites if not (o.mbar is not None and o.mbar.drop)],
        [o for o in sites if o.mbar is not None and o.mbar.drop],
    )


def replace_guard_loopfree(o: ir.Op) -> ir.Op:
    """op with its thread guard's conjuncts over loop counters left out (who may run it at
    all, in some round): `lane == 0 && t == last(warp)` -> `lane == 0`."""
    from dataclasses import replace as _replace

    def parts(e: E.Expr) -> list[E.Expr]:
        if isinstance(e, E.Bin) and e.op == "&&":
            return parts(e.a) + parts(e.b)
        return [e]

    keep = [c for c in parts(o.guard.thread) if not c.depends_on(E.LOOP)]
    g = E.Const(True)
    for c in keep:
        g = c if g == E.Const(True) else E.binop("&&", g, c)
    return _replace(o, guard=_replace(o.guard, thread=g))


def arm_ahead(m: ir.KernelModel, a: ir.Op, b: ir.Op, timeout_ms: int) -> E.Expr | str | None:
    """a arms a scalar barrier once directly before a loop I, b re-arms it in I's iterations but
    the last (`arm(bar); for (k = 0; k < T; k++) { ...; wait(bar, k & 1); if (k + 1 < T)
    arm(bar); }`): the same threads and guards but for b's one condition over I's counter, which
    holds exactly for k + 1 < T, and T >= 1 (proved by z3). Round k's phase is then armed once:
    by a for k = 0, by b of round k - 1 after -- together one contribution a round, as b's
    would be without its condition. b's condition (to count as consumed), None when the shape is
    not there or is refuted, ARM_AHEAD_UNDECIDED when a proof was not decided."""
    from .. import solver

    if a.barrier is None or b.barrier is None or a.barrier != b.barrier or a.barrier.index:
        return None
    if not b.loops or b.loops[:-1] != a.loops:
        return None
    I = m.loops.get(b.loops[-1])
    if I is None or I.continues or not I.uniform or I.trip is None:
        return None
    if I.trip.depends_on(E.LOOP) or I.trip.is_opaque():
        return None
    first = min((o.order for o in m.ops if I.id in o.loops), default=b.order)
    if a.order > first:
        return None
    k, T = I.counter, I.trip
    for o in (a, b):
        g = o.guard
        if not g.exact or g.thread.depends_on(E.LOOP) or any(c.is_opaque() for c in g.uniform):
            return None
    if a.guard.thread != b.guard.thread or any(k in c.free_vars() for c in a.guard.uniform):
        return None
    extra = [c for c in b.guard.uniform if c not in a.guard.uniform]
    if not set(a.guard.uniform) <= set(b.guard.uniform) or len(extra) != 1 or k not in extra[0].free_vars():
        return None
    in_loop = (E.binop(">=", k, E.Const(0)), E.binop("<", k, T), *a.guard.uniform)
    last = E.binop(
        "==",
        E.ite(extra[0], E.Const(1), E.Const(0)),
        E.ite(E.binop("<", E.binop("+", k, E.Const(1)), T), E.Const(1), E.Const(0)),
    )
    for pred, assume in ((last, in_loop), (E.binop(">=", T, E.Const(1)), tuple(a.guard.uniform))):
        got = solver.always(pred, timeout_ms, assume=assume)
        if got is None:  # the shape is there, the proof was not decided: the account cannot be read
            return ARM_AHEAD_UNDECIDED
        if got is not True:
            return None
    return extra[0]


# `arm_ahead`'s answer when the shape matched and a proof was not decided (a spent solver budget):
# read without the merge, the account would count the loop's first round armed twice or not at all
ARM_AHEAD_UNDECIDED = "whether the loop's re-arm covers each next round was not decided (solver)"


def _merge_arm_ahead(m: ir.KernelModel, acc: BarrierAccount, timeout_ms: int) -> None:
    """i7model: a one-shot contribution that arms the first round of a loop whose steady
    contribution re-arms the next round (`arm_ahead`), with the same threads, kind, amount and
    multiplicity and the same destination: one contribution a round of the loop -- the one-shot
    one leaves its group and the steady one's condition counts as consumed (every round)."""
    for groups in (acc.arrivals, acc.expects, acc.loads):
        for key in [k for k in groups if k.split(" ")[0] == "one-shot"]:
            skey = "steady" + key[len("one-shot") :]
            for a in list(groups.get(key, [])):
                for i, b in enumerate(groups.get(skey, [])):
                    if not (
                        a.issuers == b.issuers
                        and str(a.times) == str(b.times)
                        and a.op.kind == b.op.kind
                        and not a.consumed
                    ):
                        continue
                    cond = arm_ahead(m, a.op, b.op, timeout_ms)
                    if cond is None:
                        continue
                    if isinstance(cond, str):
                        acc.unknown.append(f"{cond}, line {b.op.location.row}")
                        return
                    groups[key].remove(a)
                    if not groups[key]:
                        del groups[key]
                    merged = Contribution(
                        b.op,
                        b.issuers,
                        b.amount,
                        b.times,
                        b.round_loop,
                        b.pattern,
                        b.consumed + (cond,),
                        b.exclusive,
                        b.pattern_exprs,
                    )
                    if str(a.amount) != str(b.amount):
                        # the first round's phase armed with another amount: counted apart, as a
                        # task's first fill is (`_merge_lookahead`; `_pair_first_fills` pairs it)
                        groups[skey + FIRST_FILL] = [a if c is b else c for c in groups[skey]]
                    groups[skey][i] = merged
                    break


FIRST_FILL = " (phases a task's first fill completes)"


def _merge_lookahead(m: ir.KernelModel, contribs: list[Contribution], timeout_ms: int) -> list[Contribution] | None:
    """A task's first fill and the k loop's prefetches of the stages after it (see
    `lookahead`) with the same threads, kind and multiplicity: one visit each of one ring
    walk, so every phase of the ring gets exactly one of the two contributions. With the same
    amount the prefetch's contribution stands for both (in place, None returned). With
    different amounts (a prefetch that expects other bytes than the first fill) the phases
    the two complete are counted apart: the group keeps the prefetch and the contributions
    returned -- the group with the first fill in the prefetch's place -- are the phases the
    first fill completes (the caller adds them as a group of their own, `FIRST_FILL`)."""
    for a in list(contribs):
        for b in contribs:
            if (
                a is not b
                and a.issuers == b.issuers
                and str(a.times) == str(b.times)
                and a.op.kind == b.op.kind
                and not a.consumed
                and not b.consumed
                and lookahead(m, a.op, b.op, timeout_ms)
            ):
                contribs.remove(a)
                if str(a.amount) != str(b.amount):
                    return [a if c is b else c for c in contribs]
                break
    return None


def _pair_first_fills(acc: BarrierAccount) -> None:
    """The bytes of a phase are its expects' against its loads' of one group: where one kind
    counts a task's first fill apart (`_merge_lookahead`, different amounts) and the other
    merged it (equal amounts), the other's merged group stands for the first fill's phases too."""
    for mine, other in ((acc.expects, acc.loads), (acc.loads, acc.expects)):
        for key in list(mine):
            if key.endswith(FIRST_FILL):
                base = key[: -len(FIRST_FILL)]
                if key not in other and base in other:
                    other[key] = list(other[base])


def _one_phase_per_visit(m: ir.KernelModel, acc: BarrierAccount, contribs: list[Contribution]) -> list | None:
    """Arrival sites of one barrier at different loop depths (a commit before the k loop, one in
    each iteration, one after it) whose every visit brings a phase's whole count: each visit
    completes one phase by itself, so no two sites need to share a phase, whatever the trip
    counts and conditions. The sites' visits are one sequence of phases when they are run by the
    same threads (one role, in program order) and each visit is one issue, or the issues of loops
    no other site of the group runs in, on one element (`_contiguous_visit`), of a known number of
    arrivals. As for one site in a loop, the threads of a visit are taken to arrive in the same
    round (a lane of one warp that runs two visits ahead of another warp is not modelled).
    Returns the group that stands for them all: one site, whose total is the count (decided), or
    a site whose one visit brings more than the count, under no block-uniform condition (a warp's
    32 arrivals on a barrier of count 1: every phase it lands in overflows, an arrival mismatch
    with that site as evidence). None: not this shape (the group stays "at different loop
    depths"). Arrives, and expects that are one arrival (r17-b300): an expect's bytes pair with
    another role's loads phase by phase, which one site's visit does not decide -- the caller
    takes such a group only where `_bytes_per_visit` pairs them."""
    if acc.init_count is None or acc.group_init:
        return None
    count = acc.init_count.eval({})
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    totals = []
    for c in contribs:
        if c.op.kind not in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT) or not c.issuers:
            return None
        if c.op.kind == ir.MBAR_EXPECT and not (c.times.eval({}) == 1 or _contiguous_visit(c, contribs)):
            return None  # an expect's visit: one issue (its bytes are `_bytes_per_visit`'s)
        if _visit_loop(m, c, contribs):
            # a visit made of the iterations of small loops of constant trip (its round loop
            # one of them): one phase by itself (`visit_groups`)
            totals.append(count)
            continue
        if c.times.eval({}) != 1 and not _contiguous_visit(c, contribs):
            return None
        t = c.total.eval({})
        if not isinstance(t, int) or isinstance(t, bool):
            return None
        totals.append(t)
    for c, t in zip(contribs, totals):
        # one visit alone is more than any phase can take: refuted wherever it runs
        if t > count and not c.exclusive and c.op.guard.exact and not c.op.guard.uniform and not c.op.guard.opaque:
            return [c]
    if all(t == count for t in totals) and len({c.issuers for c in contribs}) == 1:
        whole = [c for c in contribs if c.total.eval({}) == count]
        if whole:
            return [whole[0]]
        # every site a visit loop: the first one, its rounds counted as one visit
        c = contribs[0]
        per = c.amount.eval({})
        if not isinstance(per, int) or per <= 0 or count % (len(c.issuers) * per):
            return None
        return [replace(c, times=E.Const(count // (len(c.issuers) * per)))]
    return None


def _const(e: E.Expr) -> int | None:
    v = e.eval({})
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _bytes_per_visit(
    m: ir.KernelModel, arrivals: list[Contribution], expects: list[Contribution], loads: list[Contribution]
) -> tuple[list[Contribution], list[Contribution]] | None:
    """The bytes of expects at different loop depths of one role whose every visit is one phase
    (`_one_phase_per_visit` took their arrivals: a software-pipelined consumer that arms each
    stage before it waits, its first before the k loop, the next ones in it, the last after it).
    Each phase then holds one expect visit: E bytes, when every site's visit expects the same
    constant. The loads, of one round loop (a producer's loads of two stages per iteration),
    are split by element: sites of one element pattern are summed (a stage filled by several
    copies), patterns proved apart in every round (`_apart_in_round`) are the phases of
    different elements; each must deliver the same constant L. Returns one expect visit and one
    element's loads (their totals E and L, which `violations.byte_mismatches` compares), or None
    (the group stays "at different loop depths")."""
    if not loads or sorted(id(c.op) for c in arrivals) != sorted(id(c.op) for c in expects):
        return None
    per_visit = [_const(c.total) for c in expects]
    if None in per_visit:
        return None
    if len({c.round_loop for c in loads}) != 1 or loads[0].round_loop is None:
        return None
    classes: dict[tuple, list[Contribution]] = {}
    for c in loads:
        if not c.pattern_exprs:
            return None
        classes.setdefault(c.pattern, []).append(c)
    reps = [cs[0] for cs in classes.values()]
    for i, a in enumerate(reps):
        for b in reps[i + 1 :]:
            if not _apart_in_round(a, b):
                return None
    delivered = {_const(total(cs)) for cs in classes.values()}
    if len(delivered) != 1 or None in delivered:
        return None
    got = delivered.pop()
    one = list(next(iter(classes.values())))
    for c, e in zip(expects, per_visit, strict=True):
        # a visit that expects other than every phase receives: wrong wherever it runs
        if e != got and not c.exclusive and c.op.guard.exact and not c.op.guard.uniform and not c.op.guard.opaque:
            return [c], one
    if len(set(per_visit)) != 1:
        return None
    return [expects[0]], one


def _visit_loop(m: ir.KernelModel, c: Contribution, contribs: list[Contribution]) -> bool:
    """c's round loop is one of the constant-trip loops of a visit that completes one phase
    (`visit_groups.one_phase_visit`: a lane's release of a stage once per half it read, before
    its loop of unknown trip), and no other site of the group runs inside those loops."""
    if c.round_loop is None or c.round_loop not in c.op.loops:
        return False
    if any(o is not c and set(o.op.loops) & set(c.op.loops) for o in contribs):
        return False
    return visit_groups.one_phase_visit(m, c.op, c.issuers)


def _one_shot_visits(key: str, contribs: list[Contribution]) -> bool:
    """Several one-shot sites of one role on the barrier (an arrive before its loop and another
    after it, outside every loop: the head and tail visits of a body walk): they run one after
    the other, so each may complete a phase of its own -- their sum is no phase's count unless
    no one of them completes a phase alone (`_one_phase_per_visit` decides)."""
    return (
        key.startswith("one-shot")
        and len(contribs) > 1
        and len({c.issuers for c in contribs}) == 1
        and all(c.round_loop is None for c in contribs)
    )


def _contiguous_visit(c: Contribution, contribs: list[Contribution]) -> bool:
    """c's issues of one round (several: the loops inside its round loop, an element loop over
    the softmax groups) are one visit: they all land on one element (its index reads none of those
    loops' counters) and no other site of the group runs inside those loops, so nothing of the
    group comes between them."""
    loops = c.op.loops
    inner = loops[loops.index(c.round_loop) + 1 :] if c.round_loop in loops else loops
    if not inner or c.op.barrier is None:
        return False
    names = {f"k{lid}" for lid in inner}
    if any(v.kind == E.LOOP and v.name in names for ix in c.op.barrier.index for v in ix.free_vars()):
        return False
    return not any(o is not c and set(o.op.loops) & set(inner) and not _apart_in_round(c, o) for o in contribs)


def _apart_in_round(a: Contribution, b: Contribution, timeout_ms: int = 0) -> bool:
    """b's issues inside a's visit loops never land on a's element: both sites have one round
    loop, and in every round their elements differ (z3, the round counter and the walk's visit
    bases shared: the same round; a software-pipelined release of two stages per iteration,
    `for (h ..) { arrive(freed[b]); arrive(freed[c]); }` with c the stage after b)."""
    from .. import solver

    xa, xb = a.pattern_exprs, b.pattern_exprs
    if a.round_loop is None or a.round_loop != b.round_loop or not xa or len(xa) != len(xb):
        return False
    if any(x.is_opaque() or x.depends_on(E.THREAD) for x in xa + xb):
        return False
    free = {v for x in xa + xb for v in x.free_vars() if v.kind == E.LOOP}
    meet = E.conj(*[E.binop("==", x, y) for x, y in zip(xa, xb, strict=True)])
    nonneg = tuple(E.binop(">=", v, E.Const(0)) for v in free)
    return solver.always(E.negate(meet), timeout_ms, assume=nonneg) is True


def _nested_rounds(contribs: list[Contribution]) -> bool:
    """Two sites in different loops that the same threads run one after the other (an arrive in
    the k-loop and another after it in the task loop; two loops in sequence): each may complete
    phases of its own, so their sum is no phase's count."""
    for a in contribs:
        for b in contribs:
            if a.round_loop != b.round_loop and (
                (a.round_loop is not None and a.round_loop in b.op.loops)
                or (b.round_loop is not None and b.round_loop in a.op.loops)
                or (a.issuers & b.issuers)
            ):
                return True
    return False


def cta_of(key: str) -> int | None:
    """The destination CTA of an account group ("steady in CTA 1 ..."), or None."""
    import re

    m = re.search(r" in CTA (\d+)", key)
    return int(m.group(1)) if m else None


def total(contribs: list[Contribution]) -> E.Expr:
    t: E.Expr = E.Const(0)
    for c in contribs:
        t = E.binop("+", t, c.total)
    return t
