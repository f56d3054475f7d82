"""Program-path queries the checks and the rules share: which ops a thread passes, from one
op to another, and whether two references name the same shared or register element.

Paths (`flow(an)`, a `Flow`):
  * `Flow.succ(i)`: program-order successors, with the back edge of every loop that may run
    twice; `Flow.runs(op, t)`: does thread t certainly run op (True / False / None);
    `Flow.same_iteration_between(a, b)`: the ops between two ops of one iteration.
  * `search(fl, start, t, is_target, blocks, step)`: the targets thread t reaches after
    `start` without passing a blocking op, each with whether a back edge was used.
  * `in_flight_hits(an, mma, t, is_target)`: the targets thread t reaches while a wgmma may
    still be in flight (no `mma_async_wait<N>` retiring its commit group in between);
    `in_flight_distances`: the same for one target, by iterations of a loop (this one, the next).
  * `representatives(an, op, relevant)`: one thread per class of threads that run the same
    relevant ops (enough to cover every distinct path); `uniform_feasible(a, b, back_edge)`:
    the two ops' uniform conditions can hold together.
Aliasing (each a named variant; they differ on purpose):
  * `refs_may_alias(a, b, ta, tb)`: True / False / None for one thread of each side, indices
    of equal length (the accumulator and operand checks).
  * `index_key(ref, t)` + `keys_may_alias(kw, kr)`: per-thread keys compared over their common
    prefix, a shorter key naming a whole tile (the sync-scope dependencies).
  * `same_element_proved`, `elements_overlap`, `same_element_next_iteration`, `slot_prefix`,
    `per_thread_indices`: proofs over thread sets, within one iteration or across a loop's
    next iterations (a buffer reused while a TMA store may still read it).
Issue signatures:
  * `issue_signature(op, t)`: what thread t issues at op, so that two issuers of the same copy
    are told from per-thread work.

A path is a *witness* only when it is certain: an op that may or may not run for the thread
(inexact guard, unknown thread set, a uniform condition that is not the same as the
endpoints') is treated, conservatively, as running when it would protect (a wait, a barrier)
and as irrelevant otherwise. Every loop is assumed to run at least once (a zero-trip loop
would only hide ops, never create a path).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from .. import solver
from ..model import expr as E
from ..model import ir
from .analysis import Analysis

MAX_GROUPS = 16


# --------------------------------------------------------------- paths ----


class Flow:
    """Program-order successor structure over the model's ops."""

    def __init__(self, an: Analysis):
        self.an = an
        self.model = an.model
        self.ops = sorted(an.model.ops, key=lambda o: o.order)
        self.index = {id(o): i for i, o in enumerate(self.ops)}
        self._instances: list[ir.Op] = []
        self.first: dict[int, int] = {}
        for i, o in enumerate(self.ops):
            for lid in o.loops:
                self.first.setdefault(lid, i)

    def may_repeat(self, lid: int) -> bool:
        loop = self.model.loops.get(lid)
        if loop is None:
            return True
        if loop.trip is None:
            return True
        v = loop.trip.eval({})
        return not (isinstance(v, int) and v <= 1)

    def succ(self, i: int) -> list[tuple[int, bool]]:
        """(next index, via a back edge). len(ops) means the end of the kernel."""
        return [(j, lid is not None) for j, lid in self.succ_edges(i)]

    def succ_edges(self, i: int) -> list[tuple[int, int | None]]:
        """`succ` with the loop each back edge repeats (None: program order)."""
        out: list[tuple[int, int | None]] = []
        cur = self.ops[i].loops
        nxt = self.ops[i + 1].loops if i + 1 < len(self.ops) else ()
        # loops left between i and i+1, innermost first
        for lid in reversed(cur):
            if lid in nxt:
                break
            if self.may_repeat(lid):
                out.append((self.first[lid], lid))
        out.append((i + 1, None))
        return out

    # -- who runs an op ---------------------------------------------------
    def runs(self, op: ir.Op, t: int, ctx_uniform: tuple = ()) -> bool | None:
        """True: thread t certainly runs op (given the endpoints' uniform
        conditions); False: certainly not; None: unknown."""
        ex = self.an.threads.executing(op)
        if ex is None:
            return None
        if t not in ex:
            return False if op.guard.exact else None
        if not op.guard.exact:
            return None
        if op.guard.uniform and not all(u in ctx_uniform for u in op.guard.uniform):
            return None
        return True

    def alias(self, instance: ir.Op, original: ir.Op) -> None:
        """`instance` (an op rewritten for one input: `warp_collectives.instances`) stands where
        `original` is in program order."""
        if instance is not original:
            self._instances.append(instance)  # kept alive: its id names its place
            self.index[id(instance)] = self.index[id(original)]

    def same_iteration_between(self, a: ir.Op, b: ir.Op) -> list[ir.Op]:
        """Ops strictly between a and b in program order (no back edge)."""
        i, j = self.index[id(a)], self.index[id(b)]
        return self.ops[i + 1 : j] if i < j else []


def flow(an: Analysis) -> Flow:
    return an.fact("flow", Flow)


@dataclass
class PathHit:
    target: ir.Op
    back_edge: bool
    groups: int


def search(
    fl: Flow, start: ir.Op, t: int, is_target, blocks, step=None, uniform: tuple = (), state0: int = 0
) -> list[PathHit]:
    """Targets reachable from just after `start` on thread t's paths without
    passing an op for which `blocks(op, runs, state)` is True. `step(op, runs,
    state)` updates an integer state (e.g. commit groups since start)."""
    n = len(fl.ops)
    i0 = fl.index[id(start)]
    seen = set()
    hits: dict[int, PathHit] = {}
    q = deque()
    for j, back in fl.succ(i0):
        q.append((j, state0, back))
    while q:
        j, st, back = q.popleft()
        if j >= n:
            continue
        key = (j, st, back)
        if key in seen:
            continue
        seen.add(key)
        op = fl.ops[j]
        r = fl.runs(op, t, uniform)
        if r is not False and is_target(op) and r is True:
            if id(op) not in hits:
                hits[id(op)] = PathHit(op, back, st)
        if blocks(op, r, st):
            continue
        if op.kind == ir.EXIT and r is True:
            continue
        if step is not None and r is not False:
            st = step(op, r, st)
        for k, b2 in fl.succ(j):
            q.append((k, st, back or b2))
    return list(hits.values())


# ------------------------------------------------------------ in flight ----


def is_wgmma(op: ir.Op) -> bool:
    """A Hopper wgmma: warpgroup scope, register accumulator (tcgen05 MMAs accumulate in TMEM)."""
    return op.kind == ir.MMA and op.scope == "warpgroup" and op.mma is not None and op.mma.kind_of("acc") == "regtile"


def wait_retires(op: ir.Op, groups_after: int) -> bool | None:
    """Does this mma_async_wait<N> retire an MMA followed by `groups_after`
    commit groups? (wgmma.wait_group N: at most N most recent groups pending)."""
    n = op.count.eval({}) if op.count is not None else 0
    if not isinstance(n, int):
        return None
    return groups_after >= n


def commits(op: ir.Op) -> bool:
    """TK's mma_* commit one wgmma group each; mma_commit_group commits one (a raw
    `wgmma.mma_async` commits none: the next `wgmma.commit_group` closes its group)."""
    return (is_wgmma(op) and op.mma is not None and op.mma.self_commit) or op.kind == ir.MMA_COMMIT


def in_flight_hits(an: Analysis, mma: ir.Op, t: int, is_target) -> list[PathHit]:
    """Targets thread t reaches after `mma` while the MMA may be in flight."""
    fl = flow(an)

    def blocks(op, r, st):
        if r is True and is_target(op):
            return True  # report the first access on each path only
        if op.kind == ir.MMA_WAIT and r is not False:
            w = wait_retires(op, st)
            return w is not False  # retired, or unknown: not a witness
        return False

    def step(op, r, st):
        return min(st + 1, MAX_GROUPS) if commits(op) else st

    # groups committed after the MMA's own group; a raw `wgmma.mma_async` starts outside any
    # committed group (-1): the first commit after it closes its group, no wait retires it before
    start = 0 if mma.mma is None or mma.mma.self_commit else -1
    return search(fl, mma, t, is_target, blocks, step, mma.guard.uniform, state0=start)


def in_flight_distances(an: Analysis, mma: ir.Op, t: int, target: ir.Op, loop: int, uniform: tuple) -> set[int]:
    """The distances d in {0, 1} such that thread t reaches `target` at iteration k + d of
    `loop` (a loop of both ops) while the wgmma `mma` of iteration k may still be in flight (no
    `wgmma.wait_group` retiring its group on the way). Inner loops' back edges keep d; a path
    leaving `loop` (its counter would restart) or repeating it twice is not followed.
    `uniform`: conditions taken to hold (the endpoints' block-uniform guards)."""
    fl = flow(an)
    n = len(fl.ops)
    i0 = fl.index[id(mma)]
    start = 0 if mma.mma is None or mma.mma.self_commit else -1
    found: set[int] = set()
    seen: set[tuple[int, int, int]] = set()
    q: deque[tuple[int, int, int]] = deque()

    def push(j: int, st: int, d: int, lid: int | None) -> None:
        if j >= n or loop not in fl.ops[j].loops:
            return  # `loop` is left
        loops = fl.ops[j].loops
        if lid == loop:
            d += 1
        elif lid is not None and lid not in loops[loops.index(loop) + 1 :]:
            return  # an enclosing loop repeats: `loop` starts over
        if d <= 1:
            q.append((j, st, d))

    for j, lid in fl.succ_edges(i0):
        push(j, start, 0, lid)
    while q:
        j, st, d = q.popleft()
        if (j, st, d) in seen:
            continue
        seen.add((j, st, d))
        op = fl.ops[j]
        r = fl.runs(op, t, uniform)
        if op is target and r is True:
            found.add(d)  # and on: the same op may be reached again an iteration later
        if op.kind == ir.MMA_WAIT and r is not False and wait_retires(op, st) is not False:
            continue  # retired, or unknown: not a witness
        if op.kind == ir.EXIT and r is True:
            continue
        if r is not False and commits(op):
            st = min(st + 1, MAX_GROUPS)
        for k, lid in fl.succ_edges(j):
            push(k, st, d, lid)
    return found


def representatives(an: Analysis, op: ir.Op, relevant: list[ir.Op]) -> list[int]:
    """One thread per class of threads (running `op`) that run the same subset
    of `relevant` ops: enough to cover every distinct path."""
    ex = an.threads.executing(op)
    if ex is None:
        return []
    sets = [an.threads.executing(o) for o in relevant]
    classes: dict[tuple, int] = {}
    for t in sorted(ex):
        sig = tuple((s is None) or (t in s) for s in sets)
        classes.setdefault(sig, t)
    return sorted(classes.values())


def uniform_feasible(a: ir.Op, b: ir.Op, back_edge: bool, timeout_ms: int = 1000) -> bool:
    """The two ops' uniform conditions can hold together (and do not refer to
    loop counters across a back edge)."""
    conds = tuple(a.guard.uniform) + tuple(c for c in b.guard.uniform if c not in a.guard.uniform)
    if not conds:
        return True
    if back_edge and any(c.depends_on(E.LOOP) for c in conds):
        return False
    if any(c.is_opaque() for c in conds):
        return False
    return solver.feasible(E.conj(*conds), timeout_ms)


# ------------------------------------------------------------- aliasing ----


def refs_may_alias(
    a: ir.Ref, b: ir.Ref, ta: int | None = None, tb: int | None = None, timeout_ms: int = 500
) -> bool | None:
    """True: certainly the same object; False: certainly different; None: unknown.
    Indices may depend on the thread (evaluated at ta / tb)."""
    if a.name != b.name:
        return False
    if not a.index and not b.index:
        return True
    if len(a.index) != len(b.index):
        return None
    verdict = True
    for x, y in zip(a.index, b.index):
        if ta is not None:
            x = E.substitute(x, {"tid": E.Const(ta)})
        if tb is not None:
            y = E.substitute(y, {"tid": E.Const(tb)})
        if x == y:
            continue
        cx, cy = x.eval({}), y.eval({})
        if cx is not None and cy is not None:
            if cx != cy:
                return False
            continue
        verdict = None
    return verdict


def index_key(ref: ir.Ref, t: int):
    """The index of `ref` as thread t sees it: a tuple of ints / folded Exprs."""
    out = []
    for ix in ref.index:
        v = E.substitute(ix, {"tid": E.Const(t)})
        c = v.eval({})
        out.append(c if c is not None else v)
    return tuple(out)


def keys_may_alias(kw, kr) -> bool | None:
    """Do two `index_key`s name the same element? True / False / None (unknown). A shorter
    key names a whole tile (or array) containing the longer key's elements, so the keys are
    compared over their common prefix (unlike `refs_may_alias`, which wants equal lengths)."""
    for a, b in zip(kw, kr):
        if isinstance(a, (int, bool)) and isinstance(b, (int, bool)):
            if a != b:
                return False
        elif a != b:
            return None
    return True


def same_element_proved(a: ir.Ref, b: ir.Ref, threads_a, threads_b) -> bool:
    """Proved: some thread of b names the element some thread of a names, in the same loop
    iteration. Unlike `refs_may_alias`, a proof over thread sets or nothing: equal indices
    suffice only when they do not depend on the thread; otherwise each index is evaluated per
    thread, and one that mentions a loop counter or an unmodelled value gives False."""
    if a.name != b.name or len(a.index) != len(b.index):
        return False
    if a.index == b.index and not any(ix.depends_on(E.THREAD) or ix.is_opaque() for ix in a.index):
        return True
    if threads_a is None or threads_b is None:
        return False
    return elements_overlap(a, b, 0, threads_a, threads_b)


def per_thread_indices(index: tuple, threads) -> list[tuple]:
    """The distinct index tuples the given threads name (tid substituted)."""
    seen, out = set(), []
    for t in sorted(threads or ()):
        sub = {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)}
        ix = tuple(E.substitute(x, sub) for x in index)
        key = tuple(map(str, ix))
        if key not in seen:
            seen.add(key)
            out.append(ix)
    return out


def same_element_next_iteration(m, store: ir.Op, write: ir.Op, timeout_ms: int, ts, tw, later: bool = False) -> bool:
    """Proved: `write`'s buffer at iteration k+1 (`later`: at some iteration k+d, d >= 1) is the
    element `store`'s buffer names at iteration k, for some k with k+d inside the trip count of
    the store's innermost loop (z3); ts / tw: the threads of each side, for thread-dependent
    indices."""
    a, b = store.buffer, write.buffer
    if a.name != b.name or len(a.index) != len(b.index) or not store.loops:
        return False
    ixs = a.index + b.index
    if any(ix.is_opaque() for ix in ixs):
        return False
    if any(ix.depends_on(E.THREAD) for ix in ixs):
        pairs = [(x, y) for x in per_thread_indices(a.index, ts) for y in per_thread_indices(b.index, tw)]
        if len(pairs) > 64:
            return False
        return any(
            same_element_next_iteration(
                m,
                replace(store, buffer=ir.Ref(a.name, x)),
                replace(write, buffer=ir.Ref(b.name, y)),
                timeout_ms,
                ts,
                tw,
                later,
            )
            for x, y in pairs
        )
    loop = m.loops.get(store.loops[-1])
    if loop is None or (loop.trip is not None and loop.trip.is_opaque()):
        return False
    k = loop.counter
    d = E.Var("d@later", E.PARAM) if later else E.Const(1)
    nxt = {k.name: E.binop("+", k, d)}
    same: E.Expr = E.TRUE
    for ia, ib in zip(a.index, b.index):
        same = E.binop("&&", same, E.binop("==", ia, E.substitute(ib, nxt)))
    if later:
        same = E.binop("&&", same, E.binop(">=", d, E.Const(1)))
    # a loop without a trip count (a persistent task loop ending on a
    # data-dependent break) may run a second iteration: the finding says so
    bound = E.TRUE if loop.trip is None else E.binop("<", E.binop("+", k, d), loop.trip)
    # the store runs at iteration k and the write at k+d: their block-uniform conditions hold
    # there (a task loop whose later tasks leave at its `break` never writes again)
    for c in store.guard.uniform:
        if not c.is_opaque():
            bound = E.binop("&&", bound, c)
    for c in write.guard.uniform:
        if not c.is_opaque():
            bound = E.binop("&&", bound, E.substitute(c, nxt))
    bound = E.binop("&&", bound, E.binop(">=", k, E.Const(0)))
    return solver.feasible(E.binop("&&", same, bound), timeout_ms)


def row_written_at_distance(m, store: ir.Op, write: ir.Op, d: int, timeout_ms: int, tw) -> bool:
    """Proved: the store reads a whole row (`out_s[it & 1]`, a prefix of the write's indices: a
    bulk copy from the row's start) or the element the write names, and `write`, d iterations of the store's innermost loop
    later, writes that row's first element for some writing thread and some iteration of the
    write's own inner loops (constant trips): an element every non-empty copy of the row reads.
    The row's indices may not depend on the thread."""
    a, b = store.buffer, write.buffer
    if a is None or b is None or a.name != b.name or not store.loops or len(a.index) > len(b.index):
        return False
    if write.loops[: len(store.loops)] != store.loops or not tw:
        return False
    if any(ix.is_opaque() for ix in a.index + b.index):
        return False
    if any(ix.depends_on(E.THREAD) for ix in a.index + b.index[: len(a.index)]):
        return False
    loop = m.loops.get(store.loops[-1])
    if loop is None or (loop.trip is not None and loop.trip.is_opaque()):
        return False
    k = loop.counter
    nxt = {k.name: E.binop("+", k, E.Const(d))}
    cond: E.Expr = E.binop(">=", k, E.Const(0))
    if loop.trip is not None:
        cond = E.binop("&&", cond, E.binop("<", E.binop("+", k, E.Const(d)), loop.trip))
    for c in store.guard.uniform:
        if c.is_opaque():
            return False
        cond = E.binop("&&", cond, c)
    for c in write.guard.uniform:
        if c.is_opaque():
            return False
        cond = E.binop("&&", cond, E.substitute(c, nxt))
    for lid in write.loops[len(store.loops) :]:
        inner = m.loops.get(lid)
        trip = inner.trip.eval({}) if inner is not None and inner.trip is not None else None
        if inner is None or not isinstance(trip, int) or isinstance(trip, bool) or trip <= 0:
            return False
        j = inner.counter
        cond = E.binop("&&", cond, E.binop("&&", E.binop(">=", j, E.Const(0)), E.binop("<", j, E.Const(trip))))
    for ia, ib in zip(a.index, b.index):
        cond = E.binop("&&", cond, E.binop("==", ia, E.substitute(ib, nxt)))
    first: E.Expr = E.TRUE
    for ix in b.index[len(a.index) :]:
        first = E.binop("&&", first, E.binop("==", E.substitute(ix, nxt), E.Const(0)))
    some_thread: E.Expr = E.FALSE
    for t in sorted(tw):
        some_thread = E.binop("||", some_thread, E.binop("==", E.TID, E.Const(t)))
    q = E.binop("&&", E.binop("&&", cond, first), some_thread)
    return solver.feasible(q, timeout_ms)


def slot_prefix(index: tuple, ref: ir.Ref) -> bool:
    """The barrier element guards the buffer slot: its index is a prefix of the buffer's (a
    scalar barrier guards the whole staging array)."""
    return (
        len(index) <= len(ref.index)
        and tuple(ref.index[: len(index)]) == tuple(index)
        and not any(ix.is_opaque() or ix.depends_on(E.THREAD) for ix in index)
    )


def elements_overlap(a: ir.Ref, b: ir.Ref, n: int, ta, tb) -> bool:
    """Proved: past the first n indices (a slot prefix), some thread of tb names an element
    some thread of ta names (indices without loop counters, evaluated per thread)."""
    ra, rb = a.index[n:], b.index[n:]
    if any(ix.is_opaque() or ix.depends_on(E.LOOP) for ix in ra + rb) or len(ra) != len(rb):
        return False
    ea = {tuple(ix.eval({"tid": t}) for ix in ra) for t in ta}
    eb = {tuple(ix.eval({"tid": t}) for ix in rb) for t in tb}
    return any(None not in e for e in ea & eb)


# ----------------------------------------------------- issue signatures ----


def issue_signature(op: ir.Op, t: int) -> str | None:
    """What thread `t` issues at `op`: its operands with `tid` replaced by t.
    Two issuers with the same signature issue the same copy twice. None when
    an operand is not modelled."""
    sub = {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)}
    parts = []
    refs = [r for r in (op.barrier, op.buffer) if r is not None] + list(op.operands)
    for r in refs:
        idx = [E.substitute(ix, sub) for ix in r.index]
        if any(ix.is_opaque() for ix in idx):
            return None
        parts.append(f"{r.name}[{','.join(map(str, idx))}]")
    for ix in op.transfer.coord if op.transfer is not None else ():
        v = E.substitute(ix, sub)
        if v.is_opaque():
            return None
        parts.append(str(v))
    for v in (op.bytes, op.count):
        if isinstance(v, E.Expr):
            parts.append(str(E.substitute(v, sub)))
    if op.mbar is not None and op.mbar.cta is not None:
        # the CTA of the cluster whose barrier (and, for st.async / red.async, whose shared memory)
        # the copy names (`mapa`): the same element of two CTAs is two copies
        v = E.substitute(op.mbar.cta, sub)
        if v.is_opaque():
            return None
        parts.append(f"cta={v}")
    return "|".join(parts)
