"""Flag hand-offs between the CTAs of a cluster (issue 25, round 9): one CTA's loop writes data
into another CTA's shared memory (`st.shared::cluster` through `mapa`, `map_shared_rank`) and
raises a flag there with a cluster-scope release store; the other CTA's loop polls the flag with
a cluster-scope acquire load, then reads the data, and hands the slot back the same way. The
cluster-scope version of checks/shared_handoff.py (a hand-off between two warps of one CTA), and
the same pairing of iterations (z3); no name of a ring or a flag is read.

The primitives, as the model represents them:

* a **role**: a loop at the top level whose ops all run under the same block-uniform conditions,
  conditions on the CTA's rank in its cluster (`cta_rank`) only, that select exactly one rank of
  the (constant) cluster size: the loop runs in that CTA, all its iterations (a counted loop);
* a **flag**: a `__shared__` array of scalars (or a scalar) every access of which after the
  cluster barrier that starts the work is ordered (`AccessFacts.order`: a PTX `ld.acquire` /
  `st.release` / `.relaxed`, local or through `mapa`) at cluster scope or wider, with one store
  after that barrier -- made by one thread of one role's CTA in its loop, into the shared memory
  of a CTA the store names (`AccessFacts.cta`, its own when None), at an element and with a value
  that are expressions over the loop's counter -- and, before the barrier, the same constant
  stored into every element a poll reads (its initial value);
* a **poll**: a spin (`SPIN`) in a role's loop whose condition reads one element of a flag of
  its own CTA (an expression over the loop's counter) and the counter, and nothing else; the flag's
  store must target the polling CTA;
* **release** at the flag store: a release store (or a fence of the storing thread) after the
  data, with a barrier joining a data thread to the storing thread before it (`__syncthreads()`
  of the whole CTA, or a `__syncwarp` of their warp): the barrier's synchronisation and the
  release are cumulative, so another thread's remote store before the barrier is released too;
  **acquire** at the poll: an acquire load (or a fence of the polling thread after its spin),
  then a barrier joining the poller to the reader. A write after the poll needs no fence (a
  control dependency, as in shared_handoff).

Pairing (shared_handoff's formula, per element): the poll of iteration b reads element h(b) and
leaves only on a value v with `not cond(v, b)`, v the initial value or f(kp) for a store
iteration kp with g(kp) = h(b) (same element); data access a of the storing side at iteration ka
is ordered before access b at kb when every such kp satisfies ka + d <= kp. Two conflicting
accesses (one a write; in the two CTAs' loops, of one element of one CTA's shared memory) are
ordered when one direction holds for every pair of iterations and threads that name the same
element; a pair where neither holds is a race, its cause named by asking again with one
ingredient supplied (shared_handoff's `_CAUSES`).

Not modelled (None: the pair stays undecided): a cluster size or a trip count that is not a
constant, a role whose rank is not one CTA, a loop with any other synchronisation (a cluster
barrier, an mbarrier, an unmodelled call, a spin that is no poll), a flag with two stores or
stored by several threads, a poll that the last value stored into its element does not let pass,
a flag some element of which a poll reads is not initialised.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis
from .shared_handoff import _CAUSES, ORDER_FENCES, HandoffRace, Unordered, first_unordered, observed_before_release

RANK = "cta_rank"
WIDE = ("cluster", "gpu", "sys")
MAX_TRIP = 4096  # iterations of a loop enumerated (the flags' initial elements, `_passable`)


@dataclass(frozen=True)
class Flag:
    name: str
    store: ir.Op
    loop: int
    thread: int
    rank: int  # the CTA that stores it
    target: int  # the CTA whose shared memory holds it
    elem: tuple[E.Expr, ...]  # over the loop's counter
    value: E.Expr  # over the loop's counter
    initial: E.Expr


@dataclass(frozen=True)
class Poll:
    flag: Flag
    spin: ir.Op
    read: ir.Op
    loop: int
    rank: int
    elem: tuple[E.Expr, ...]
    cond: E.Expr
    var: str


@dataclass
class Handoffs:
    flags: dict[str, Flag]
    polls: list[Poll]
    roles: dict[int, int]  # loop -> the rank of the CTA that runs it
    loops: dict[int, list[ir.Op]]


def handoffs(an: Analysis) -> Handoffs:
    return an.fact("cluster_handoff", _handoffs)


def _cluster(an: Analysis) -> int | None:
    c = an.model.cluster
    v = c.eval({}) if isinstance(c, E.Expr) else c
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _rank_of(an: Analysis, o: ir.Op) -> int | None:
    """The one rank whose CTA runs o (its block-uniform conditions over `cta_rank` only); None:
    several, none, or conditions on anything else."""
    size = _cluster(an)
    if size is None:
        return None
    if any(v.name != RANK for c in o.guard.uniform for v in c.free_vars()):
        return None
    ranks = []
    for r in range(size):
        vals = [c.eval({RANK: r}) for c in o.guard.uniform]
        if any(not isinstance(v, (bool, int)) for v in vals):
            return None
        if all(vals):
            ranks.append(r)
    return ranks[0] if len(ranks) == 1 else None


def _start(an: Analysis) -> ir.Op | None:
    """The first barrier of the whole cluster at the top level (`barrier.cluster.arrive` with
    release + `barrier.cluster.wait`, or one cluster SYNC), every thread of the block taking part:
    its wait (what comes after it is ordered after everything before its arrive)."""
    n = an.threads.n
    arrived = False
    for o in sorted(an.model.ops, key=lambda o: o.order):
        if o.kind != ir.SYNC or o.sync_kind not in ("cluster", "cluster_arrive", "cluster_wait", "block", "warp"):
            continue
        if o.loops or not o.guard.exact or o.guard.uniform or an.threads.executing(o) != frozenset(range(n or 0)):
            if o.sync_kind.startswith("cluster"):
                return None
            continue
        if o.sync_kind == "cluster":
            return o
        if o.sync_kind == "cluster_arrive":
            if o.sync is not None and o.sync.relaxed:
                return None
            arrived = True
        elif o.sync_kind == "cluster_wait":
            return o if arrived else None
    return None


def _target(o: ir.Op, rank: int) -> int | None:
    a = o.access
    if a is None:
        return None
    if a.cta is None:
        return rank
    v = a.cta.eval({RANK: rank}) if isinstance(a.cta, E.Expr) else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _counted(an: Analysis, lid: int) -> ir.Loop | None:
    lp = an.model.loops.get(lid)
    if lp is None or lp.trip is None or lp.parent is not None:
        return None
    t = lp.trip.eval({})
    return lp if isinstance(t, int) and not isinstance(t, bool) and 0 < t <= MAX_TRIP else None


def _ordered_access(o: ir.Op) -> bool:
    a = o.access
    return a is not None and a.order in ("relaxed", "acquire", "release") and a.scope in WIDE


def _handoffs(an: Analysis) -> Handoffs:
    out = Handoffs({}, [], {}, {})
    m = an.model
    n = an.threads.n
    start = _start(an)
    if start is None or n is None or _cluster(an) is None:
        return out
    acc = [o for o in m.ops if o.kind == ir.SMEM_ACCESS and o.access is not None and o.buffer is not None]
    names = sorted({o.buffer.name for o in acc if o.order > start.order and _ordered_access(o)})
    for name in names:
        ops = [o for o in acc if o.buffer.name == name]
        before = [o for o in ops if o.order < start.order]
        after = [o for o in ops if o.order > start.order]
        if not all(_ordered_access(o) for o in after):
            continue
        stores = [o for o in after if o.access_mode == "write"]
        if len(stores) != 1 or any(o.access_mode != "write" for o in before):
            continue
        st = stores[0]
        a = st.access
        assert a is not None and st.buffer is not None
        if len(st.loops) != 1 or not st.guard.exact or a.value is None or _counted(an, st.loops[0]) is None:
            continue
        ex = an.threads.executing(st)
        rank = _rank_of(an, st)
        if ex is None or len(ex) != 1 or rank is None:
            continue
        target = _target(st, rank)
        lp = an.model.loops[st.loops[0]]
        free = set(a.value.free_vars()) | {v for i in st.buffer.index for v in i.free_vars()}
        if target is None or any(v.name != lp.counter.name for v in free):
            continue
        # the initial value: constant stores of the CTA's own copy before the barrier, by every
        # CTA (no block-uniform condition), the elements each names
        init: E.Expr | None = None
        elems: set[tuple] = set()
        ok = True
        for o in before:
            v = o.access.value if o.access is not None else None
            tex = an.threads.executing(o)
            if (
                not isinstance(v, E.Const)
                or (init is not None and init != v)
                or o.loops
                or o.guard.uniform
                or not o.guard.exact
                or o.access.cta is not None
                or tex is None
            ):
                ok = False
                break
            init = v
            for t in tex:
                idx = tuple(i.eval({"tid": t}) for i in o.buffer.index)
                if any(not isinstance(x, int) for x in idx):
                    ok = False
                elems.add(idx)
        if not ok or init is None:
            continue
        flag = Flag(name, st, st.loops[0], next(iter(ex)), rank, target, tuple(st.buffer.index), a.value, init)
        out.flags[name] = flag
        out.roles[flag.loop] = rank
        for sp in m.ops:
            p = _poll(an, sp, flag, elems)
            if p is not None:
                out.polls.append(p)
                out.roles[p.loop] = p.rank
    for lid in out.roles:
        out.loops[lid] = sorted((o for o in m.ops if o.loops and o.loops[0] == lid), key=lambda o: o.order)
    return out


def _poll(an: Analysis, sp: ir.Op, flag: Flag, elems: set[tuple]) -> Poll | None:
    if sp.kind != ir.SPIN or sp.spin is None or sp.spin.cond is None or sp.spin.breaks or len(sp.loops) != 2:
        return None
    outer, own = sp.loops
    lp = _counted(an, outer)
    if lp is None or not sp.guard.exact or outer == flag.loop:
        return None
    inside = [o for o in an.model.ops if own in o.loops and o is not sp]
    if len(inside) != 1:
        return None
    rd = inside[0]
    a = rd.access
    if rd.kind != ir.SMEM_ACCESS or a is None or a.result is None or rd.buffer is None or rd.buffer.name != flag.name:
        return None
    rank = _rank_of(an, sp)
    if rank is None or _target(rd, rank) != flag.target or a.cta is not None or not _ordered_access(rd):
        return None
    cond = sp.spin.cond
    if any(v.name not in (a.result, lp.counter.name) for v in cond.free_vars()):
        return None
    if any(v.name != lp.counter.name for i in rd.buffer.index for v in i.free_vars()):
        return None
    # every element the poll reads holds the initial value before the loops
    trip = lp.trip.eval({})
    for b in range(trip):
        idx = tuple(i.eval({lp.counter.name: b}) for i in rd.buffer.index)
        if idx not in elems:
            return None
    p = Poll(flag, sp, rd, outer, rank, tuple(rd.buffer.index), cond, a.result)
    return p if _passable(an, p) else None


def _passable(an: Analysis, p: Poll) -> bool:
    """Does the last value stored into the element the poll reads let it pass, in every
    iteration of its loop? (A witness of `order` then needs no run that hangs.)"""
    la, lb = an.model.loops[p.flag.loop], an.model.loops[p.loop]
    ta, tb = la.trip.eval({}), lb.trip.eval({})
    last: dict[tuple, int] = {}
    for k in range(ta):
        idx = tuple(i.eval({la.counter.name: k}) for i in p.flag.elem)
        last[idx] = k
    for b in range(tb):
        idx = tuple(i.eval({lb.counter.name: b}) for i in p.elem)
        if idx not in last:
            return False
        v = p.flag.value.eval({la.counter.name: last[idx]})
        goes_on = p.cond.eval({p.var: v, lb.counter.name: b})
        if not isinstance(goes_on, (bool, int)) or goes_on:
            return False
    return True


# ------------------------------------------------------------ the pairing ----


def _block_barrier(an: Analysis, o: ir.Op) -> bool:
    return (
        o.kind == ir.SYNC
        and o.sync_kind == "block"
        and o.sync is not None
        and o.sync.syncthreads
        and o.guard.exact
        and an.threads.executing(o) == frozenset(range(an.threads.n or 0))
    )


def _eligible(an: Analysis, h: Handoffs, lid: int) -> bool:
    """A role's loop whose only synchronisation is its flags' stores and polls, fences,
    `__syncthreads()` of the whole CTA and `__syncwarp`s."""
    polls = {id(p.spin) for p in h.polls if p.loop == lid}
    reads = {id(p.read) for p in h.polls if p.loop == lid}
    rank = h.roles[lid]
    for o in h.loops.get(lid, []):
        if not o.guard.exact or _rank_of(an, o) != rank or an.threads.executing(o) is None:
            return False
        if o.kind == ir.SPIN:
            if id(o) not in polls:
                return False
        elif o.kind == ir.SMEM_ACCESS:
            if o.access is None or o.buffer is None:
                return False
            if o.access.atomic or o.access.order:
                if o.buffer.name not in h.flags:
                    return False
                if len(o.loops) > 1 and id(o) not in reads:
                    return False
            elif len(o.loops) > 1 and any(_counted_inner(an, x) is None for x in o.loops[1:]):
                return False
        elif o.kind == ir.SYNC:
            if o.sync_kind != "warp" and not _block_barrier(an, o):
                return False
            if len(o.loops) > 1:
                return False
        elif o.kind == ir.GLOBAL_LOAD:
            if o.global_access is None or o.global_access.sem != "weak":
                return False
        elif o.kind in (ir.REG_ACCESS, ir.GLOBAL_STORE):
            pass
        elif o.kind == ir.FENCE:
            if len(o.loops) > 1:
                return False
        else:
            return False
    return True


def _counted_inner(an: Analysis, lid: int) -> ir.Loop | None:
    lp = an.model.loops.get(lid)
    if lp is None or lp.trip is None:
        return None
    t = lp.trip.eval({})
    return lp if isinstance(t, int) and not isinstance(t, bool) and t > 0 else None


def _runs(an: Analysis, o: ir.Op, t: int) -> bool:
    ex = an.threads.executing(o)
    return ex is not None and t in ex


def _joins(an: Analysis, o: ir.Op, t1: int, t2: int) -> bool:
    """Does o order threads t1 and t2 of one CTA: a `__syncthreads()` of the whole CTA, or a
    `__syncwarp` of their warp that both take part in?"""
    from .happens_before import _warp_sync_orders

    if _block_barrier(an, o):
        return True
    return (
        o.kind == ir.SYNC
        and o.sync_kind == "warp"
        and t1 // 32 == t2 // 32
        and _warp_sync_orders(an, o, t1, t2) is True
    )


def _fence(o: ir.Op) -> bool:
    return o.kind == ir.FENCE and o.fence_kind in ("membar_cluster", "membar_gl", "membar_gpu", "membar_sys")


def _released(an, path, t_data, t_store, ideal) -> bool:
    pos = -1
    if t_data != t_store:
        pos = next((i for i, o in enumerate(path) if _joins(an, o, t_data, t_store)), None)
        if pos is None:
            if not ideal & {"sync", "sync_store"}:
                return False
            pos = -1
    return bool(ideal & {"fence", "fence_store"}) or any(_fence(o) and _runs(an, o, t_store) for o in path[pos + 1 :])


def _acquired(an, path, t_poll, t_acc, ideal) -> bool:
    f = next((i for i, o in enumerate(path) if _fence(o) and _runs(an, o, t_poll)), None)
    if f is None:
        if not ideal & {"fence", "fence_poll"}:
            return False
        f = -1
    if t_poll == t_acc or ideal & {"sync", "sync_poll"}:
        return True
    return any(_joins(an, o, t_poll, t_acc) for o in path[f + 1 :])


def _body(h: Handoffs, lid: int) -> list[ir.Op]:
    return [o for o in h.loops[lid] if len(o.loops) == 1]


def _store_offset(an, h, acc: ir.Op, t: int, fl: Flag, ideal) -> int | None:
    st = fl.store.access
    if st is not None and st.order == "release":
        ideal = ideal | {"fence_store"}
    body = _body(h, fl.loop)
    if acc.order < fl.store.order or "order" in ideal:
        between = [o for o in body if acc.order < o.order < fl.store.order]
        if "order" in ideal and acc.order > fl.store.order:
            between = [o for o in body if o.order > acc.order] + [o for o in body if o.order < fl.store.order]
        if _released(an, between, t, fl.thread, ideal):
            return 0
    around = [o for o in body if o.order > acc.order] + [o for o in body if o.order < fl.store.order]
    return 1 if _released(an, around, t, fl.thread, ideal) else None


def _poll_offset(an, h, acc: ir.Op, t: int, p: Poll, ideal) -> int | None:
    ex = an.threads.executing(p.spin) or frozenset()
    if not ex:
        return None
    tp = t if t in ex else min(ex)
    rd = p.read.access
    if rd is not None and rd.order == "acquire":
        ideal = ideal | {"fence_poll"}
    if acc.access_mode == "write":
        ideal = ideal | {"fence"}  # a control dependency orders the poller's later stores
    body = _body(h, p.loop)
    if p.spin.order < acc.order:
        if _acquired(an, [o for o in body if p.spin.order < o.order < acc.order], tp, t, ideal):
            return 0
    around = [o for o in body if o.order > p.spin.order] + [o for o in body if o.order < acc.order]
    return 1 if _acquired(an, around, tp, t, ideal) else None


def _not_ordered(an, h, a_op, ta, ka, b_op, tb, kb, fl: Flag, p: Poll, ideal) -> E.Expr:
    d = _store_offset(an, h, a_op, ta, fl, ideal)
    e = _poll_offset(an, h, b_op, tb, p, ideal)
    if d is None or e is None:
        return E.TRUE
    la, lb = an.model.loops[fl.loop].counter.name, an.model.loops[p.loop].counter.name

    def same(kp, bb):  # the store and the poll name one element of the flag array
        return [E.binop("==", E.substitute(g, {la: kp}), E.substitute(hh, {lb: bb})) for g, hh in zip(fl.elem, p.elem)]

    return observed_before_release(an, d, e, fl.loop, p.loop, fl.value, fl.initial, p.cond, p.var, ka, kb, same)


def _classes(an: Analysis, h: Handoffs, op: ir.Op, lid: int) -> list[frozenset[int]]:
    """The threads running op, split by the synchronising ops of its loop they run (and by warp
    where a `__syncwarp` there may tell them apart)."""
    ex = sorted(an.threads.executing(op) or ())
    marks = [o for o in h.loops[lid] if o.kind in (ir.SYNC, ir.FENCE, ir.SPIN) or o is op or _is_flag_store(h, o)]
    warps = any(o.kind == ir.SYNC and o.sync_kind == "warp" for o in h.loops[lid])
    by: dict[tuple, set[int]] = {}
    for t in ex:
        by.setdefault((t // 32 if warps else 0, tuple(_runs(an, o, t) for o in marks)), set()).add(t)
    return [frozenset(v) for _, v in sorted(by.items())]


def _is_flag_store(h: Handoffs, o: ir.Op) -> bool:
    return any(f.store is o for f in h.flags.values())


# shared_handoff's causes, the barrier that joins a data thread to the flag's thread asked of
# each side apart (the storing CTA's before its release, the polling CTA's after its poll)
_CAUSES_CLUSTER = (
    *(c for c in _CAUSES if c[0] != "lanes"),
    ("lanes", frozenset({"fence", "sync_store"})),
    ("lanes_poll", frozenset({"fence", "sync_poll"})),
    ("lanes", frozenset({"fence", "sync"})),
    ("order", frozenset({"fence", "sync", "order"})),
)


def order(an: Analysis, w: ir.Op, r: ir.Op) -> str | HandoffRace | None:
    """Two accesses of one shared element (one a write), in the loops of two different CTAs of
    the cluster: "ordered" when the flags between the loops order every pair that names the same
    element of the same CTA's shared memory, a HandoffRace when some pair is not, None when this
    is no hand-off the model pairs (undecided)."""
    memo = an.facts.setdefault("cluster_handoff.order", {})
    key = (id(w), id(r))
    if key not in memo:
        memo[key] = _order(an, w, r)
    return memo[key]


def _order(an: Analysis, w: ir.Op, r: ir.Op) -> str | HandoffRace | None:
    h = handoffs(an)
    if not w.loops or not r.loops or w.loops[0] == r.loops[0]:
        return None
    lw, lr = w.loops[0], r.loops[0]
    if lw not in h.loops or lr not in h.loops or h.roles[lw] == h.roles[lr]:
        return None
    if not _eligible(an, h, lw) or not _eligible(an, h, lr):
        return None
    if w.buffer is None or r.buffer is None or len(w.buffer.index) != len(r.buffer.index):
        return None
    if w.buffer.name in h.flags:
        return None  # a flag's own accesses: ordered accesses race with none
    cw_t, cr_t = _target(w, h.roles[lw]), _target(r, h.roles[lr])
    if cw_t is None or cr_t is None:
        return None
    if cw_t != cr_t:
        return "ordered"  # the shared memory of two different CTAs: they never meet
    pairs_wr = [(p.flag, p) for p in h.polls if p.flag.loop == lw and p.loop == lr]
    pairs_rw = [(p.flag, p) for p in h.polls if p.flag.loop == lr and p.loop == lw]
    if not pairs_wr and not pairs_rw:
        return None
    klw, klr = an.model.loops[lw].counter, an.model.loops[lr].counter
    tw_v, tr_v = E.Var("t_w", E.PARAM), E.Var("t_r", E.PARAM)
    inner: list[E.Expr] = []
    for o, tag in ((w, "w"), (r, "r")):
        for lid in o.loops[1:]:
            lp = _counted_inner(an, lid)
            if lp is None:
                return None
            inner += [E.binop(">=", lp.counter, E.Const(0)), E.binop("<", lp.counter, lp.trip)]

    def index_of(op: ir.Op, t: E.Expr) -> tuple:
        assert op.buffer is not None
        return tuple(E.substitute(i, {"tid": t}) for i in op.buffer.index)

    def formula(cw, cr, ideal_wr, ideal_rw):
        tw0, tr0 = min(cw), min(cr)
        parts = [
            E.binop(">=", klw, E.Const(0)),
            E.binop(">=", klr, E.Const(0)),
            E.binop("<", klw, an.model.loops[lw].trip),
            E.binop("<", klr, an.model.loops[lr].trip),
            E.disj(*(E.binop("==", tw_v, E.Const(t)) for t in sorted(cw))),
            E.disj(*(E.binop("==", tr_v, E.Const(t)) for t in sorted(cr))),
            *inner,
        ]
        parts += [E.binop("==", a, b) for a, b in zip(index_of(w, tw_v), index_of(r, tr_v))]
        parts += [_not_ordered(an, h, w, tw0, klw, r, tr0, klr, f, p, ideal_wr) for f, p in pairs_wr]
        parts += [_not_ordered(an, h, r, tr0, klr, w, tw0, klw, f, p, ideal_rw) for f, p in pairs_rw]
        return E.conj(*parts)

    found = first_unordered(_classes(an, h, w, lw), _classes(an, h, r, lr), formula, _CAUSES_CLUSTER)
    if not isinstance(found, Unordered):
        return found
    flags = tuple(sorted({fl.name for fl, _ in pairs_wr}))
    race = found.race(w, r, klw.name, klr.name, flags, tuple(sorted({p.flag.name for _, p in pairs_wr})))
    tw, tr = race.first_thread, race.second_thread
    if found.cause is not None:
        name, towards_r = found.cause
        if name == "order":
            name = "fill" if towards_r else "after_release"
        race.cause = name
        fixed = pairs_wr if towards_r else pairs_rw
        if name in ("acquire", "lanes_poll"):
            towards_r = not towards_r  # point at the access after the poll
            name = "lanes" if name == "lanes_poll" else name
            race.cause = name
        if not towards_r:
            race.first, race.second = r, w
            race.first_thread, race.second_thread = tr, tw
            race.first_iteration, race.second_iteration = race.second_iteration, race.first_iteration
        race.indices = tuple(sorted({fl.name for fl, _ in fixed}))
        race.polls = tuple(sorted({p.flag.name for _, p in fixed}))
    elif not pairs_rw:
        race.indices, race.polls = (), ()
    race.indices = race.indices or tuple(
        sorted({fl.name for fl in h.flags.values() if fl.loop == race.second.loops[0]})
    )
    race.ranks = (h.roles[race.first.loops[0]], h.roles[race.second.loops[0]])
    return race


__all__ = ["ORDER_FENCES", "Flag", "Handoffs", "Poll", "handoffs", "order"]
