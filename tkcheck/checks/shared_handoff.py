"""Hand-offs through indices in shared memory (issue 25, round 9): a queue of slots between two
warps whose loops are different loops, ordered only by a `__shared__` index one thread stores
(`tail = i + 1`) and the other side's threads poll (`while (tail <= i) { }`).

The primitives, as the model represents them (no name of a queue is read):

* an **index**: a `__shared__` scalar every access of which after the block barrier that starts
  the kernel's work is volatile (`AccessFacts.volatile`) or a libcu++ atomic load / store at block
  scope or wider (`cuda::atomic_ref<T, cuda::thread_scope_block>`, `AccessFacts.order` / `scope`),
  written with constant values before that barrier (its initial value) and after it by exactly one store, made by one thread in a loop with a constant
  trip count, whose value is an expression over that loop's counter (`Index.value`, f(k));
* a **poll**: a spin loop (`SPIN`) whose condition reads one index (the read's Var,
  `AccessFacts.result`) and the counter of the loop around the spin, and that reads nothing else;
* **release** at the store: the storing thread's fence at block scope or wider
  (`__threadfence_block()`, `fence.acq_rel.cta`, ...) after the data, with a `__syncwarp` that
  joins a data thread of the same warp to the storing thread before that fence, or a release
  store itself (PTX: a fence followed by a relaxed store is a release pattern; `bar.warp.sync` orders memory among its
  threads); **acquire** at the poll: a fence of the polling thread after its spin, and a
  `__syncwarp` to the reader when the reader is not the poller (an acquiring load needs no
  fence). A *write* after the poll needs no
  fence: the spin's exit is a control dependency on the loaded value, and a store is never
  performed before the load it depends on returns (the refill of a slot handed back, the
  write-after-read direction; the clean corpus kernel `idioms7/smem_spsc_queue.cu` relies on it).

Pairing the two loops' iterations (z3, as the phase proofs do): the poll of iteration b leaves
only on a value v with `not cond(v, b)`; v is the initial value or f(kp) for some store iteration
kp. So iteration b (after its acquire) happens after the store side's iteration a (up to its
release) for every run exactly when the initial value keeps the poll waiting and every kp whose
value lets the poll go satisfies a + d <= kp (d: 0 when iteration a's own store releases the
access, 1 when it is the next iteration's). Two conflicting accesses of one shared element, one
in each loop, are **ordered** when for every pair of iterations (and threads) that name the same
element one direction holds; a pair of iterations where neither does is a **race**: the store
side's thread can run its access while the other runs its own, with the values that let every
poll pass (both sides' other waits are these polls; the loops hold nothing else that orders
threads). The cause is named by asking the same question again with one ingredient supplied
(`_CAUSES`): a fence (release / acquire missing), a `__syncwarp` (a lane of the warp not
ordered by the storing lane's fence), the access's place before the store (a slot filled
after its index was stored; read after it was handed back); none of these: the other
side never waits for the index that would order it.

Not modelled (the pair stays undecided, coverage): an index written by two stores or by several
threads, an element of an array used as an index (a ring of flags), a poll that `break`s or reads
more than its index, loops with any other synchronisation (a block barrier, an mbarrier, an
unmodelled call, another spin), loops under a block-uniform condition, a poll that the index's
last value does not let pass in every iteration (`_passable`), loops of one warp,
`cuda::atomic_ref` orders on shared indices.

The **hoisted poll** (progress): a spin whose condition reads a plain (not volatile, not
atomic) shared scalar and whose loop does nothing else: the compiler may load the value once and
spin on a register (a data race and a loop without side effects; C++ [intro.progress]); asked of
loops whose body is empty (`SpinFacts.empty`: `while (c) { }`, nothing a call could reload). When the
spinning thread reaches the spin's first iteration with no wait since the block barrier after the
initial stores, no other thread's store is ordered before its first look, and the condition holds
at the initial value, that look can see the initial value: it spins forever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import solver
from ..model import expr as E
from ..model import ir
from .analysis import Analysis

# fences that order a thread's memory operations at block scope or wider
ORDER_FENCES = ("membar_cta", "membar_cluster", "membar_gl", "membar_gpu", "membar_sys")


@dataclass(frozen=True)
class Index:
    """A volatile `__shared__` scalar stored once per iteration of one loop by one thread."""

    name: str
    store: ir.Op
    loop: int
    thread: int
    value: E.Expr  # over the loop's counter
    initial: E.Expr  # its value before the loops (a constant)
    # an index array (one lap counter per ring slot, `freed[k % D] = k / D + 1`): the element the
    # store of iteration k writes, over the loop's counter; None for a scalar
    element: E.Expr | None = None
    extent: E.Expr | None = None  # an index array's initial stores cover the elements 0 .. extent - 1


@dataclass(frozen=True)
class Poll:
    """A spin on an index in the iteration of a loop around it."""

    index: Index
    spin: ir.Op
    read: ir.Op
    loop: int
    cond: E.Expr  # the spin goes on while this holds: over `var` and the loop's counter
    var: str  # the Var of the loaded value in `cond`
    element: E.Expr | None = None  # the element of an index array it reads, over its loop's counter


@dataclass
class HandoffRace:
    """Two accesses of one shared element in the iterations of two loops that no index orders."""

    first: ir.Op  # where the finding points (the side whose index should have ordered it)
    second: ir.Op
    first_thread: int
    second_thread: int
    first_iteration: int  # the values of the loops' counters (iterations from 0)
    second_iteration: int
    # release (a fence missing at a store) | acquire (a fence missing after a poll: `first` is the
    # access after it) | lanes (a `__syncwarp` missing between
    # a lane and the storing or polling lane) | fill (written after the store that announces it) |
    # after_release (accessed after the store that hands it back) | unwaited (the other side polls
    # no index that orders it)
    cause: str
    indices: tuple[str, ...] = ()  # the indices stored by `first`'s side towards `second`'s
    polls: tuple[str, ...] = ()  # the indices `second`'s side polls
    # a hand-off between two CTAs of a cluster (checks/cluster_handoff.py): the ranks of the CTAs
    # of `first`'s and `second`'s threads; None: two warps of one CTA
    ranks: tuple[int, int] | None = None


@dataclass
class Handoffs:
    indices: dict[str, Index]
    polls: list[Poll]
    loops: dict[int, list[ir.Op]]  # the loops that take part, with their ops (program order)


def handoffs(an: Analysis) -> Handoffs:
    return an.fact("shared_handoff.handoffs", _handoffs)


def _scalar_ops(an: Analysis, name: str) -> list[ir.Op]:
    return [
        o
        for o in an.model.ops
        if o.kind == ir.SMEM_ACCESS
        and o.access is not None
        and o.access.via == "scalar"
        and o.buffer is not None
        and o.buffer.name == name
        and not o.buffer.index
    ]


def _start_barrier(an: Analysis) -> ir.Op | None:
    """The first `__syncthreads()` at the top level that every thread reaches."""
    for o in sorted(an.model.ops, key=lambda o: o.order):
        if o.kind == ir.SYNC and o.sync_kind == "block" and not o.loops and o.guard.exact:
            ex = an.threads.executing(o)
            if ex is not None and an.threads.n is not None and len(ex) == an.threads.n:
                return o
            return None
    return None


def _counted_loop(an: Analysis, lid: int) -> ir.Loop | None:
    lp = an.model.loops.get(lid)
    if lp is None or lp.trip is None or not isinstance(lp.trip.eval({}), int):
        return None
    return lp


def _initial(an: Analysis, name: str, start: ir.Op | None) -> tuple[E.Expr | None, list[ir.Op]]:
    """The one constant the scalar holds before `start` (its stores before it), and the stores
    after it."""
    init: E.Expr | None = None
    later = []
    for o in _scalar_ops(an, name):
        if o.access_mode != "write":
            continue
        if start is not None and o.order < start.order and not o.loops:
            v = o.access.value if o.access is not None else None
            if not isinstance(v, E.Const) or (init is not None and init != v):
                return None, []
            init = v
        else:
            later.append(o)
    return init, later


def _handoffs(an: Analysis) -> Handoffs:
    out = Handoffs({}, [], {})
    m = an.model
    start = _start_barrier(an)
    if start is None or an.threads.n is None:
        return out
    names = sorted(
        {
            o.buffer.name
            for o in m.ops
            if o.kind == ir.SMEM_ACCESS and o.access is not None and o.access.via == "scalar" and o.buffer is not None
        }
    )
    for name in names:
        ops = [o for o in _scalar_ops(an, name) if o.loops or o.order > start.order]
        if not ops or not all(_strong(o) for o in ops):
            continue  # (its stores before the block barrier may be plain: the barrier orders them)
        init, later = _initial(an, name, start)
        if init is None or len(later) != 1:
            continue
        st = later[0]
        if len(st.loops) != 1 or not st.guard.exact or st.access is None or st.access.value is None:
            continue
        lp = _counted_loop(an, st.loops[0])
        ex = an.threads.executing(st)
        if lp is None or lp.parent is not None or ex is None or len(ex) != 1:
            continue
        if any(v.name != lp.counter.name for v in st.access.value.free_vars()):
            continue
        out.indices[name] = Index(name, st, st.loops[0], next(iter(ex)), st.access.value, init)
    for name in sorted({o.buffer.name for o in m.ops if o.kind == ir.SMEM_ACCESS and o.buffer is not None}):
        if name not in out.indices:
            arr = _array_index(an, name, start)
            if arr is not None:
                out.indices[name] = arr
    for sp in m.ops:
        p = _poll(an, sp, out.indices)
        if p is not None:
            out.polls.append(p)
    for lid in {i.loop for i in out.indices.values()} | {p.loop for p in out.polls}:
        out.loops[lid] = sorted((o for o in m.ops if lid in o.loops), key=lambda o: o.order)
    return out


def _array_index(an: Analysis, name: str, start: ir.Op) -> Index | None:
    """An index array: a one-dimensional `__shared__` array whose elements are set to one constant
    before the start barrier by a top-level loop over them (`for (s = 0; s < D; s++) f[s] = 0;`,
    which covers the elements 0 .. D-1), and stored after it by exactly one strong store, by one
    thread, in a top-level counted loop, of an element e(k) and a value f(k) over its counter
    (one lap counter per ring slot: `freed[k % D] = k / D + 1`); every other access after the
    barrier is strong."""
    ops = [
        o
        for o in an.model.ops
        if o.kind == ir.SMEM_ACCESS and o.access is not None and o.buffer is not None and o.buffer.name == name
    ]
    if not ops or any(len(o.buffer.index) != 1 for o in ops if o.buffer is not None):
        return None
    before = [o for o in ops if o.order < start.order]
    after = [o for o in ops if o.order > start.order]
    if len(before) != 1 or not after or not all(_strong(o) for o in after):
        return None
    init = before[0]
    if init.access_mode != "write" or len(init.loops) != 1 or not init.guard.exact or init.guard.uniform:
        return None
    ilp = _counted_loop(an, init.loops[0])
    value = init.access.value if init.access is not None else None
    if ilp is None or ilp.parent is not None or not isinstance(value, E.Const) or init.buffer is None:
        return None
    ix = init.buffer.index[0]
    if not isinstance(ix, E.Var) or ix.name != ilp.counter.name or ilp.trip is None:
        return None
    stores = [o for o in after if o.access_mode == "write"]
    if len(stores) != 1:
        return None
    st = stores[0]
    if len(st.loops) != 1 or not st.guard.exact or st.access is None or st.access.value is None:
        return None
    lp = _counted_loop(an, st.loops[0])
    ex = an.threads.executing(st)
    if lp is None or lp.parent is not None or ex is None or len(ex) != 1 or st.buffer is None:
        return None
    element = st.buffer.index[0]
    if any(v.name != lp.counter.name for e in (st.access.value, element) for v in e.free_vars()):
        return None
    return Index(name, st, st.loops[0], next(iter(ex)), st.access.value, value, element, ilp.trip)


def _strong(o: ir.Op) -> bool:
    """A volatile access, or a libcu++ atomic load / store at block scope or wider."""
    a = o.access
    if a is None:
        return False
    if a.atomic is None:
        return a.volatile
    return a.atomic in ("load", "st") and a.scope in ("cta", "cluster", "gpu", "sys")


def _poll(an: Analysis, sp: ir.Op, indices: dict[str, Index]) -> Poll | None:
    if sp.kind != ir.SPIN or sp.spin is None or sp.spin.cond is None or sp.spin.breaks or len(sp.loops) != 2:
        return None
    outer, own = sp.loops
    lp = _counted_loop(an, outer)
    if lp is None or lp.parent is not None or not sp.guard.exact:
        return None
    inside = [o for o in an.model.ops if own in o.loops and o is not sp]
    if len(inside) != 1:
        return None
    rd = inside[0]
    if rd.kind != ir.SMEM_ACCESS or rd.access is None or rd.access.result is None or rd.buffer is None:
        return None
    idx = indices.get(rd.buffer.name)
    if idx is None or idx.loop == outer:
        return None
    cond = sp.spin.cond
    if any(v.name not in (rd.access.result, lp.counter.name) for v in cond.free_vars()):
        return None
    if idx.element is None:
        return None if rd.buffer.index else Poll(idx, sp, rd, outer, cond, rd.access.result)
    if len(rd.buffer.index) != 1 or idx.extent is None:
        return None
    element = rd.buffer.index[0]
    if any(v.name != lp.counter.name for v in element.free_vars()):
        return None
    inside_extent = E.conj(E.binop(">=", element, E.Const(0)), E.binop("<", element, idx.extent))
    assume = (E.binop(">=", lp.counter, E.Const(0)), E.binop("<", lp.counter, lp.trip))
    if solver.always(inside_extent, an.solver_timeout_ms, assume=assume) is not True:
        return None  # an element whose initial value is not known
    return Poll(idx, sp, rd, outer, cond, rd.access.result, element)


# ------------------------------------------------------------ the pairing ----

_ALLOWED = (ir.SMEM_ACCESS, ir.REG_ACCESS, ir.FENCE, ir.SPIN, ir.GLOBAL_STORE)


def _eligible(an: Analysis, h: Handoffs, lid: int) -> bool:
    """A loop whose only synchronisation is its indices' stores and polls, its fences and
    `__syncwarp`s: nothing else may order the two sides."""
    polls = {id(p.spin) for p in h.polls if p.loop == lid}
    reads = {id(p.read) for p in h.polls if p.loop == lid}
    for o in h.loops.get(lid, []):
        if not o.guard.exact or o.guard.uniform or an.threads.executing(o) is None:
            return False  # (a loop under a block-uniform condition may not run at all)
        if o.kind == ir.SPIN:
            if id(o) not in polls:
                return False
        elif o.kind == ir.SMEM_ACCESS:
            if o.access is None or o.access.cta is not None:
                return False
            if o.access.atomic and (o.buffer is None or o.buffer.name not in h.indices):
                return False
            if len(o.loops) > 1 and id(o) not in reads:
                return False
        elif o.kind == ir.SYNC:
            if o.sync_kind != "warp":
                return False
        elif o.kind == ir.GLOBAL_LOAD:
            if o.global_access is None or o.global_access.sem != "weak":
                return False
        elif o.kind not in _ALLOWED:
            return False
        elif len(o.loops) > 1:
            return False
    return True


def _warps(an: Analysis, ops: list[ir.Op]) -> set[int]:
    out: set[int] = set()
    for o in ops:
        out |= {t // 32 for t in an.threads.executing(o) or ()}
    return out


def _joins(an: Analysis, o: ir.Op, t1: int, t2: int) -> bool:
    """Does `__syncwarp` o order lanes t1 and t2 (both run it, both in its mask)?"""
    from .happens_before import _warp_sync_orders

    return (
        o.kind == ir.SYNC
        and o.sync_kind == "warp"
        and t1 // 32 == t2 // 32
        and _warp_sync_orders(an, o, t1, t2) is True
    )


def _runs(an: Analysis, o: ir.Op, t: int) -> bool:
    ex = an.threads.executing(o)
    return ex is not None and t in ex


def _fence(o: ir.Op) -> bool:
    return o.kind == ir.FENCE and o.fence_kind in ORDER_FENCES


def _released(an: Analysis, path: list[ir.Op], t_data: int, t_store: int, ideal: frozenset[str]) -> bool:
    """Along `path` (program order), is thread t_data's access ordered before thread t_store's
    store by a release: (a `__syncwarp` joining them, then) a fence of t_store."""
    pos = -1
    if t_data != t_store:
        pos = next((i for i, o in enumerate(path) if _joins(an, o, t_data, t_store)), None)
        if pos is None:
            if "sync" not in ideal:
                return False
            pos = -1
    return bool(ideal & {"fence", "fence_store"}) or any(_fence(o) and _runs(an, o, t_store) for o in path[pos + 1 :])


def _acquired(an: Analysis, path: list[ir.Op], t_poll: int, t_acc: int, ideal: frozenset[str]) -> bool:
    """Along `path`, is thread t_acc's access ordered after thread t_poll's observation by an
    acquire: a fence of t_poll (then a `__syncwarp` joining them)."""
    f = next((i for i, o in enumerate(path) if _fence(o) and _runs(an, o, t_poll)), None)
    if f is None:
        if not ideal & {"fence", "fence_poll"}:
            return False
        f = -1
    if t_poll == t_acc or "sync" in ideal:
        return True
    return any(_joins(an, o, t_poll, t_acc) for o in path[f + 1 :])


def _store_offset(an: Analysis, h: Handoffs, acc: ir.Op, t: int, idx: Index, ideal: frozenset[str]) -> int | None:
    """0 when the store of the access's own iteration releases it, 1 when the next iteration's
    does, None when none does."""
    st = idx.store.access
    if st is not None and st.order in ("release", "acq_rel"):
        ideal = ideal | {"fence_store"}  # a release store orders what happens before it itself
    body = [o for o in h.loops[idx.loop] if len(o.loops) == 1]
    if acc.order < idx.store.order or "order" in ideal:
        between = [o for o in body if acc.order < o.order < idx.store.order]
        if "order" in ideal and acc.order > idx.store.order:
            between = [o for o in body if o.order > acc.order] + [o for o in body if o.order < idx.store.order]
        if _released(an, between, t, idx.thread, ideal):
            return 0
    around = [o for o in body if o.order > acc.order] + [o for o in body if o.order < idx.store.order]
    return 1 if _released(an, around, t, idx.thread, ideal) else None


def _poll_offset(an: Analysis, h: Handoffs, acc: ir.Op, t: int, p: Poll, ideal: frozenset[str]) -> int | None:
    """0 when the poll of the access's own iteration acquires for it, 1 when the previous
    iteration's does, None when none does (no polling thread of the access's warp)."""
    ex = an.threads.executing(p.spin) or frozenset()
    pollers = [t] if t in ex else sorted(x for x in ex if x // 32 == t // 32)
    if not pollers:
        return None
    tp = pollers[0]
    rd = p.read.access
    if rd is not None and rd.order in ("acquire", "acq_rel"):
        ideal = ideal | {"fence_poll"}  # an acquiring load orders what comes after it itself
    if acc.access_mode == "write":
        # a store is not performed before the load its execution depends on returns (the spin's
        # exit is a control dependency: stores are never speculated), so the poll's observation
        # orders the poller's later writes without a fence; another lane's through a __syncwarp
        ideal = ideal | {"fence"}
    body = [o for o in h.loops[p.loop] if len(o.loops) == 1]
    if p.spin.order < acc.order:
        if _acquired(an, [o for o in body if p.spin.order < o.order < acc.order], tp, t, ideal):
            return 0
    around = [o for o in body if o.order > p.spin.order] + [o for o in body if o.order < acc.order]
    return 1 if _acquired(an, around, tp, t, ideal) else None


def observed_before_release(
    an: Analysis,
    d: int,
    e: int,
    store_loop: int,
    poll_loop: int,
    value: E.Expr,
    initial: E.Expr,
    cond: E.Expr,
    var: str,
    ka: E.Expr,
    kb: E.Expr,
    same: Callable[[E.Expr, E.Expr], list[E.Expr]] = lambda kp, bb: [],
) -> E.Expr:
    """Holds for the iterations ka (of the storing side's loop) and kb (of the polling side's)
    that a scalar hand-off does not order: the poll `cond` (over `var` and its loop's counter)
    passes at iteration kb - e on the initial value or on a value stored (`value`, over the
    storing loop's counter) before iteration ka + d -- the release the access waits for.
    `same(kp, bb)`: conditions that the store kp and the poll bb name one element (a flag array)."""
    lb = an.model.loops[poll_loop]
    la = an.model.loops[store_loop]
    bb = E.binop("-", kb, E.Const(e))
    # a fresh name per formula, numbered per analysis (never a process-wide counter)
    n = an.facts["handoff.fresh"] = an.facts.get("handoff.fresh", 0) + 1
    kp = E.Var(f"k_obs{n}", E.PARAM)

    def passes(v):
        return E.substitute(cond, {var: v, lb.counter.name: bb})

    observe = E.conj(
        E.binop(">=", kp, E.Const(0)),
        E.binop("<", kp, la.trip),
        *same(kp, bb),
        E.negate(passes(E.substitute(value, {la.counter.name: kp}))),
        E.binop("<", kp, E.binop("+", ka, E.Const(d))),
    )
    return E.disj(E.binop("<", bb, E.Const(0)), E.negate(passes(initial)), observe)


def _not_ordered(an, h, a_op, ta, ka, b_op, tb, kb, idx: Index, p: Poll, ideal) -> E.Expr:
    """Holds for the iterations ka (of a_op's loop) and kb (of b_op's loop) that the index does
    not order: some run lets b_op's poll pass before a_op's release."""
    d = _store_offset(an, h, a_op, ta, idx, ideal)
    e = _poll_offset(an, h, b_op, tb, p, ideal)
    if d is None or e is None:
        return E.TRUE
    same = None
    if idx.element is not None and p.element is not None:
        ca, cb = an.model.loops[idx.loop].counter.name, an.model.loops[p.loop].counter.name
        st_el, p_el = idx.element, p.element

        def same(kp, bb):  # the store of iteration kp writes the element the poll of bb reads
            return [E.binop("==", E.substitute(st_el, {ca: kp}), E.substitute(p_el, {cb: bb}))]

    return observed_before_release(
        an, d, e, idx.loop, p.loop, idx.value, idx.initial, p.cond, p.var, ka, kb, *(() if same is None else (same,))
    )


def _index_of(op: ir.Op, t: E.Expr) -> tuple:
    assert op.buffer is not None
    return tuple(E.substitute(i, {"tid": t}) for i in op.buffer.index)


def _classes(an: Analysis, h: Handoffs, op: ir.Op, lid: int) -> list[frozenset[int]]:
    """The threads running op, split by the synchronising ops of its loop they run."""
    ex = sorted(an.threads.executing(op) or ())
    marks = [
        o
        for o in h.loops[lid]
        if o.kind in (ir.SYNC, ir.FENCE, ir.SPIN)
        or (o.kind == ir.SMEM_ACCESS and o.access_mode == "write" and o.access is not None and o.access.volatile)
    ]
    by: dict[tuple, set[int]] = {}
    for t in ex:
        by.setdefault((t // 32, tuple(_runs(an, o, t) for o in marks)), set()).add(t)
    return [frozenset(v) for _, v in sorted(by.items())]


_CAUSES = (
    ("release", frozenset({"fence_store"})),
    ("acquire", frozenset({"fence_poll"})),
    ("release", frozenset({"fence"})),
    ("lanes", frozenset({"fence", "sync"})),
)


@dataclass
class Unordered:
    """The first pair of thread classes (a writer's, a reader's) that the hand-off does not order,
    with z3's witness and the missing ingredient: (cause, towards_r) -- the first `causes` entry
    whose ideal, supplied in one direction (towards the reader when towards_r), orders the pair;
    None when no single ingredient does."""

    cw: frozenset[int]
    cr: frozenset[int]
    witness: dict
    cause: tuple[str, bool] | None

    def race(self, w: ir.Op, r: ir.Op, kw: str, kr: str, indices: tuple, polls: tuple) -> "HandoffRace":
        """The witness as a race of `w` (thread of class cw, iteration of counter `kw`) against
        `r`, cause "unwaited" until the caller names the missing ingredient."""
        wit = self.witness
        tw, tr = int(wit.get("t_w", min(self.cw))), int(wit.get("t_r", min(self.cr)))
        return HandoffRace(w, r, tw, tr, int(wit.get(kw, 0)), int(wit.get(kr, 0)), "unwaited", indices, polls)


Formula = Callable[[frozenset[int], frozenset[int], frozenset[str], frozenset[str]], E.Expr]


def first_unordered(
    classes_w: list[frozenset[int]],
    classes_r: list[frozenset[int]],
    formula: Formula,
    causes: tuple[tuple[str, frozenset[str]], ...],
) -> str | Unordered | None:
    """The search both hand-off engines (shared indices, cluster flags) run over their own pairing
    formula: `formula(cw, cr, ideal_wr, ideal_rw)` holds when a writer of class cw and a reader of
    class cr touch one element unordered, the ingredients named in ideal_* assumed present in that
    direction. "ordered" when no pair of classes is unordered; None when z3 cannot tell."""
    none: frozenset[str] = frozenset()
    for cw in classes_w:
        for cr in classes_r:
            f = formula(cw, cr, none, none)
            ok = solver.always(E.negate(f))
            if ok is None:
                return None
            if ok:
                continue
            wit = solver.witness(f)
            if wit is None:
                return None
            for name, ideal in causes:
                for towards_r in (True, False):
                    fi = formula(cw, cr, ideal if towards_r else none, none if towards_r else ideal)
                    if solver.always(E.negate(fi)) is True:
                        return Unordered(cw, cr, wit, (name, towards_r))
            return Unordered(cw, cr, wit, None)
    return "ordered"


def order(an: Analysis, w: ir.Op, r: ir.Op) -> str | HandoffRace | None:
    """Two accesses of one shared element (one a write) in two different loops: "ordered" when
    the indices between the loops order every pair that names the same element, a HandoffRace
    when some pair is not, None when this is not a hand-off the model pairs (undecided)."""
    memo = an.facts.setdefault("shared_handoff.order", {})
    key = (id(w), id(r))
    if key not in memo:
        memo[key] = _order(an, w, r)
    return memo[key]


def _order(an: Analysis, w: ir.Op, r: ir.Op) -> str | HandoffRace | None:
    h = handoffs(an)
    if len(w.loops) != 1 or len(r.loops) != 1 or w.loops == r.loops:
        return None
    lw, lr = w.loops[0], r.loops[0]
    pairs_wr = [(i, p) for i in h.indices.values() for p in h.polls if i.loop == lw and p.loop == lr and p.index is i]
    pairs_rw = [(i, p) for i in h.indices.values() for p in h.polls if i.loop == lr and p.loop == lw and p.index is i]
    if not pairs_wr and not pairs_rw:
        return None
    if lw not in h.loops or lr not in h.loops or not _eligible(an, h, lw) or not _eligible(an, h, lr):
        return None
    if _warps(an, h.loops[lw]) & _warps(an, h.loops[lr]):
        return None  # the loops share a warp: its lanes' order is the lane queries'
    if not all(_passable(an, p) for p in h.polls if p.loop in (lw, lr)):
        return None  # a poll that the last value stored may not let pass: a hang, not this question
    if w.buffer is None or r.buffer is None or len(w.buffer.index) != len(r.buffer.index):
        return None
    klw, klr = an.model.loops[lw].counter, an.model.loops[lr].counter
    tw_v, tr_v = E.Var("t_w", E.PARAM), E.Var("t_r", E.PARAM)

    def formula(cw, cr, ideal_wr, ideal_rw):
        tw0, tr0 = min(cw), min(cr)  # the class's threads behave alike at its ops
        parts = [
            E.binop("<", klw, an.model.loops[lw].trip),
            E.binop("<", klr, an.model.loops[lr].trip),
            E.disj(*(E.binop("==", tw_v, E.Const(t)) for t in sorted(cw))),
            E.disj(*(E.binop("==", tr_v, E.Const(t)) for t in sorted(cr))),
        ]
        parts += [E.binop("==", a, b) for a, b in zip(_index_of(w, tw_v), _index_of(r, tr_v))]
        parts += [_not_ordered(an, h, w, tw0, klw, r, tr0, klr, i, p, ideal_wr) for i, p in pairs_wr]
        parts += [_not_ordered(an, h, r, tr0, klr, w, tw0, klw, i, p, ideal_rw) for i, p in pairs_rw]
        return E.conj(*parts)

    found = first_unordered(
        _classes(an, h, w, lw),
        _classes(an, h, r, lr),
        formula,
        _CAUSES + (("order", frozenset({"fence", "sync", "order"})),),
    )
    if not isinstance(found, Unordered):
        return found
    race = found.race(
        w, r, klw.name, klr.name, tuple(i.name for i, _ in pairs_wr), tuple(p.index.name for _, p in pairs_wr)
    )
    tw, tr = race.first_thread, race.second_thread
    if found.cause is not None:
        name, towards_r = found.cause
        if name == "order":
            name = "fill" if towards_r else "after_release"
        race.cause = name
        fixed = pairs_wr if towards_r else pairs_rw  # the direction the ingredient orders
        if name == "acquire":
            towards_r = not towards_r  # point at the access after the poll
        if not towards_r:
            race.first, race.second = r, w
            race.first_thread, race.second_thread = tr, tw
            race.first_iteration, race.second_iteration = race.second_iteration, race.first_iteration
        race.indices = tuple(i.name for i, _ in fixed)
        race.polls = tuple(p.index.name for _, p in fixed)
    else:
        # no one ingredient orders it (one direction has no index at all, or its poll waits for
        # too early a value): name the indices the other side stores, which this side should wait for
        race.indices, race.polls = (), ()
    race.indices = race.indices or tuple(sorted({i.name for i in h.indices.values() if i.loop == race.second.loops[0]}))
    return race


def _passable(an: Analysis, p: Poll) -> bool:
    """Does the index's last value (f at the storing loop's last iteration) let the poll pass in
    every iteration of its loop? (Every poll can end once the storing side is done; a witness
    of `order` then needs no run that hangs.)"""
    la, lb = an.model.loops[p.index.loop], an.model.loops[p.loop]
    if p.index.element is not None:
        return _passable_element(p, la, lb)
    last = E.substitute(p.index.value, {la.counter.name: E.binop("-", la.trip, E.Const(1))})
    goes_on = E.substitute(p.cond, {p.var: last})
    return solver.always(E.negate(goes_on), assume=(E.binop("<", lb.counter, lb.trip),)) is True


# the most iterations of either loop `_passable_element` runs through, one by one
MAX_ELEMENT_ITERATIONS = 4096


def _int_at(e: E.Expr, counter: str, k: int) -> int | None:
    v = E.substitute(e, {counter: E.Const(k)}).eval({})
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _passable_element(p: Poll, la: ir.Loop, lb: ir.Loop) -> bool:
    """`_passable` for an index array: the last value stored into each element (the storing
    loop's last iteration that writes it; the initial value for one it never writes) lets the poll
    of every iteration that reads that element pass. Both loops' constant trips are run through."""
    ta, tb = la.trip.eval({}) if la.trip else None, lb.trip.eval({}) if lb.trip else None
    idx = p.index
    if not isinstance(ta, int) or not isinstance(tb, int) or max(ta, tb) > MAX_ELEMENT_ITERATIONS:
        return False
    assert idx.element is not None and p.element is not None
    last: dict[int, E.Expr] = {}
    for k in range(ta):
        el = _int_at(idx.element, la.counter.name, k)
        if el is None:
            return False
        last[el] = E.substitute(idx.value, {la.counter.name: E.Const(k)})
    for b in range(tb):
        el = _int_at(p.element, lb.counter.name, b)
        if el is None:
            return False
        v = last.get(el, idx.initial)
        goes_on = E.substitute(p.cond, {p.var: v, lb.counter.name: E.Const(b)}).eval({})
        if not isinstance(goes_on, bool) or goes_on:
            return False
    return True


# --------------------------------------------------------- hoisted polls ----


@dataclass
class HoistedSpin:
    """A spin on a plain shared scalar that the compiler may read once: its first look can see
    the initial value, which keeps it spinning."""

    spin: ir.Op
    read: ir.Op
    name: str
    initial: E.Expr
    thread: int
    writes: list[ir.Op]


def hoisted_spins(an: Analysis) -> list[HoistedSpin]:
    return an.fact("shared_handoff.hoisted", _hoisted)


def _hoisted(an: Analysis) -> list[HoistedSpin]:
    out: list[HoistedSpin] = []
    m = an.model
    start = _start_barrier(an)
    if start is None:
        return out
    ordered = sorted(m.ops, key=lambda o: o.order)
    for sp in ordered:
        if sp.kind != ir.SPIN or sp.spin is None or sp.spin.cond is None or sp.spin.breaks or not sp.guard.exact:
            continue
        if not sp.spin.empty:
            continue  # a body may call what reloads it (an opaque function, `__nanosleep`)
        own = sp.loops[-1] if sp.loops else None
        if own is None or len(sp.loops) > 2:
            continue
        inside = [o for o in m.ops if own in o.loops and o is not sp]
        if len(inside) != 1:
            continue
        rd = inside[0]
        a = rd.access
        if rd.kind != ir.SMEM_ACCESS or a is None or a.via != "scalar" or a.result is None or a.volatile or a.atomic:
            continue
        if _unmodelled_in(an, own):
            continue  # something in the loop the walk did not model (a call, `__nanosleep`): it may reload
        if rd.buffer is None:
            continue
        name = rd.buffer.name
        if any(o.access is not None and (o.access.volatile or o.access.atomic) for o in _scalar_ops(an, name)):
            continue
        init, later = _initial(an, name, start)
        spinners = an.threads.executing(sp)
        if init is None or not later or not spinners:
            continue
        if any(
            not o.guard.exact or (an.threads.executing(o) or frozenset()) & spinners or an.threads.executing(o) is None
            for o in later
        ):
            continue  # a spinning thread stores it itself, or the storing threads are not known
        outer = sp.loops[0] if len(sp.loops) == 2 else None
        sub: dict[str, E.Expr] = {a.result: init}
        if outer is not None:
            lp = _counted_loop(an, outer)
            if lp is None or lp.parent is not None or not isinstance(lp.trip.eval({}), int) or lp.trip.eval({}) < 1:
                continue
            sub[lp.counter.name] = E.Const(0)
        c0 = E.substitute(sp.spin.cond, sub)
        if c0.free_vars() or solver.always(c0) is not True:
            continue
        # the spinner's way from the block barrier to its first look: no wait on another thread
        t = min(spinners)
        before = [
            o
            for o in ordered
            if start.order < o.order < sp.order and (outer is None or not o.loops or o.loops[0] == outer)
        ]
        if any(_waits(an, o, t) for o in before):
            continue
        out.append(HoistedSpin(sp, rd, name, init, t, later))
    return out


def _unmodelled_in(an: Analysis, lid: int) -> bool:
    """Did the walk note anything it did not model inside the loop's source range?"""
    loc = an.model.loops[lid].location
    if loc is None:
        return True
    for where, _ in an.model.unmodelled:
        if getattr(where, "filename", None) != loc.filename:
            continue
        if (loc.row, loc.column) <= (where.row, where.column) <= (loc.end_row or loc.row, loc.end_column or 10**9):
            return True
    return False


def _waits(an: Analysis, o: ir.Op, t: int) -> bool:
    """Might op make thread t wait for another thread (or is it not known)?"""
    if o.kind in (ir.SMEM_ACCESS, ir.REG_ACCESS, ir.FENCE, ir.GLOBAL_STORE):
        return False
    if o.kind == ir.GLOBAL_LOAD:
        return o.global_access is None or o.global_access.sem != "weak"
    if o.kind == ir.SYNC and o.sync_kind == "warp":
        return False
    ex = an.threads.executing(o)
    return ex is None or t in ex or not o.guard.exact
