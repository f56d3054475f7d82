"""Bulk (TMA) stores as asynchronous readers of shared memory: the bulk-group semantics.

Each `tma::store_async` (and TK's reduce-stores) is a bulk copy that reads its shared source
after the call returns, and commits one bulk group of the issuing thread.
`store_async_read_wait<N>` returns once every bulk group of the thread but the N most recent
has finished reading its source (`store_async_wait` once every group has completed). Two
queries over these events, one fact each per kernel (no rule names here):

* `reuses(an)`: for each store, the first later write into the same shared element by the
  same role's path (program order after the store, then around the loop's back edge), and
  whether a read wait of the storing thread covers the store before it: the wait's N against
  the bulk groups the thread committed after this store on that path (`Reuse.status`:
  "unwaited", "unordered-writers" -- waited in the storing lane, but no barrier orders the other
  writing threads after it --, "ordered", or "undecided" with its reason).
* `exits(an)`: for each store, whether its thread reaches the end of the kernel (or a `return`)
  with no read wait after it (`InFlight.status`: "in-flight", "waited", "undecided").

Undecided answers are coverage (`coverage.add_bulk_store_undecided`), never findings.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import solver
from ..model import expr as E
from ..model import ir
from . import paths
from .analysis import Analysis
from .single_issue import conjuncts

MAX_UNROLL = 16
MAX_DISTANCE = 4  # iterations on which a write into a store's staging row is looked for


@dataclass
class Reuse:
    store: ir.Op
    write: ir.Op | None  # the overwriting op (None when undecided before one was reached)
    status: str  # "unwaited" | "unordered-writers" | "ordered" | "undecided"
    issuers: frozenset[int]
    writers: frozenset[int] = frozenset()
    wrapped: bool = False  # the write runs in a later iteration of the store's loop
    # a read wait<N> on the path that does not cover the store: (the wait, groups after the store)
    partial: tuple[ir.Op, int] | None = None
    wait: ir.Op | None = None  # the covering wait ("unordered-writers")
    why: str = ""
    distance: int = 1  # wrapped: the write runs this many iterations after the store


@dataclass
class InFlight:
    store: ir.Op
    status: str  # "in-flight" | "waited" | "undecided"
    issuers: frozenset[int] = frozenset()
    why: str = ""


def writes(o: ir.Op) -> bool:
    if o.kind == ir.TMA_LOAD:
        return True
    return o.kind == ir.SMEM_ACCESS and o.access_mode == "write"


def store_sites(m: ir.KernelModel) -> list[ir.Op]:
    """The TMA stores; a store in a short inner loop of constant trip that only walks the
    tiles of a staging array (`for (w < 4) store_async(g.Y, o_s[j % 2][w], ...)`) also as one
    store per value of that loop's counter, placed in the enclosing loop body, so that its
    reuse by the enclosing loop's next iterations is seen."""
    out = []
    for st in m.ops_of(ir.TMA_STORE):
        out.append(st)
        if st.buffer is None or len(st.loops) < 2:
            continue
        lp = m.loops.get(st.loops[-1])
        trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if not isinstance(trip, int) or not 0 < trip <= MAX_UNROLL:
            continue
        k = lp.counter.name
        if any(k in {v.name for v in c.free_vars()} for c in st.guard.uniform) or k in {
            v.name for v in st.guard.thread.free_vars()
        }:
            continue
        if not any(k in {v.name for v in ix.free_vars()} for ix in st.buffer.index):
            continue
        for v in range(trip):
            idx = tuple(E.substitute(ix, {k: E.Const(v)}) for ix in st.buffer.index)
            out.append(replace(st, buffer=ir.Ref(st.buffer.name, idx), loops=st.loops[:-1]))
    return out


def reuses(an: Analysis) -> list[Reuse]:
    return an.fact("bulk_stores.reuses", _reuses)


def exits(an: Analysis) -> list[InFlight]:
    return an.fact("bulk_stores.exits", _exits)


def _same_condition(a: ir.Op, b: ir.Op) -> bool:
    return tuple(map(str, a.guard.uniform)) == tuple(map(str, b.guard.uniform))


def _reuses(an: Analysis) -> list[Reuse]:
    m = an.model
    ops = m.ops
    out: list[Reuse] = []
    for st in store_sites(m):
        if st.buffer is None:
            continue
        iss = an.threads.issuers(st) if st.guard.exact else None
        # program order after the store in the same loop body, then (when the store is in a
        # loop) around the back edge into the next iteration, up to the store itself
        body = st.loops
        after = [o for o in ops if o.order > st.order and o.loops[: len(body)] == body]
        wrap = [o for o in ops if o.order < st.order and o.loops[: len(body)] == body] if body else []
        path = after + wrap
        if not iss:
            if iss is None and any(
                writes(o) and o.buffer is not None and o.buffer.name == st.buffer.name and o.loops[: len(body)] == body
                for o in path
            ):
                # a write of the store's buffer on its path: who stores decides whether it is
                # covered (with no such write, as with known threads, there is nothing to ask)
                out.append(Reuse(st, None, "undecided", frozenset(), why="the storing threads are not known"))
            continue
        real = any(st is x for x in ops)  # not one of an unrolled store loop's sites
        waited = any(x.kind == ir.TMA_STORE_WAIT for x in path)
        for pos, o in enumerate(path):
            # a write in an inner loop of the store's loop body (`for (j) out_s[b][ct + 128 * j] = ...`)
            # is asked around the back edge only, of the row the store reads (`row_written_at_distance`)
            deeper = len(o.loops) > len(body) and o.loops[: len(body)] == body and pos >= len(after)
            if (o.loops != st.loops and not deeper) or not writes(o) or o.buffer is None:
                continue
            if o.buffer.name != st.buffer.name:
                continue
            if not o.guard.exact or not _same_condition(o, st):
                out.append(
                    Reuse(st, o, "undecided", iss, why="a write of the buffer under another condition than the store's")
                )
                break
            wt = an.threads.executing(o) if o.kind == ir.SMEM_ACCESS else an.threads.issuers(o)
            if not wt:
                continue
            wrapped = pos >= len(after)  # the write runs in the next iteration
            distance = 1
            if wrapped:
                # no read wait anywhere in the loop body: a write any number of iterations
                # later (double-buffered staging reused two tiles on) is unprotected too
                unwaited = not waited
                to = an.solver_timeout_ms
                if deeper or not (
                    paths.same_element_next_iteration(m, st, o, to, iss, wt)
                    or (unwaited and paths.same_element_next_iteration(m, st, o, to, iss, wt, later=True))
                ):
                    # the first iteration d on whose write lands in what the store reads (a ring of
                    # staging rows reused d iterations on, a read wait<N> between)
                    reach = range(1, MAX_DISTANCE + 1) if deeper else range(2, MAX_DISTANCE + 1)
                    hit = next((d for d in reach if paths.row_written_at_distance(m, st, o, d, to, wt)), None)
                    if hit is None:
                        continue
                    distance = hit
            elif not paths.same_element_proved(st.buffer, o.buffer, iss, wt):
                continue
            # the path from the store to the write d iterations on: the rest of the store's
            # iteration, d - 1 whole iterations, the write's iteration up to it
            between = (
                path[:pos] if distance == 1 else after + (wrap + [st] + after) * (distance - 1) + path[len(after) : pos]
            )
            ru = _covered(an, st, o, between, iss, wt, wrapped, real)
            ru.distance = distance
            if (distance > 1 or deeper) and ru.status == "undecided":
                # a write only the row / distance search reaches, on a path whose groups are not
                # counted (TK's group stores in loops of their own): not asked, as before that
                # search (no obligation, no finding)
                continue
            out.append(ru)
            break
    return out


def _covered(an: Analysis, st: ir.Op, o: ir.Op, between: list[ir.Op], iss, wt, wrapped: bool, real: bool) -> Reuse:
    """Is the store `st` covered by a read wait of its thread among `between`, before `o`?"""
    wait_at = None
    unknown = ""
    # bulk groups the storing threads committed after this store (each store_async is one): a
    # store_async_read_wait<N> covers this store once N or more came after it
    # a raw-PTX `cp.async.bulk` store commits no group: the next `cp.async.bulk.commit_group`
    # closes the store's own group (later = -1 until then), each further commit one more
    ptx = st.asm is not None
    later: int | None = (-1 if ptx else 0) if real else None
    partial: tuple[ir.Op, int] | None = None  # a read wait<N> that still lets this store read
    for i, x in enumerate(between):
        if later is not None and (
            (x.kind == ir.TMA_STORE and x.asm is None) or (x.kind == ir.TMA_STORE_COMMIT and x.asm is not None)
        ):
            later = _groups_after(an, st, x, iss, later)
        if x.kind == ir.TMA_STORE_WAIT:
            ex = an.threads.executing(x)
            n = x.count.eval({}) if x.count is not None else 0
            if ex is None or not isinstance(n, int):
                unknown = unknown or f"`{x.api}` whose threads or count are not known"
            elif iss <= ex and x.loops == st.loops and (n == 0 and not ptx or (later is not None and later >= n)):
                wait_at = i if wait_at is None else wait_at
            elif n and iss <= ex and x.loops == st.loops and later is not None and x.guard.exact:
                partial = (x, later)  # the last one before the overwrite
            elif n:
                unknown = unknown or f"`{x.api}`<{n}> with the bulk stores before it not counted"
        if x.kind == ir.CALL and x.asm is not None:
            unknown = unknown or "inline PTX between (a bulk wait in assembly is not read)"
        if x.kind == ir.EXIT:
            unknown = unknown or "a `return` between"
    if unknown:
        return Reuse(st, o, "undecided", iss, wt, wrapped, why=unknown)
    if wait_at is not None:
        # the read wait runs in the storing lane; other lanes that overwrite the tile must be
        # ordered after it by a barrier (`__syncwarp()` within the warp)
        others = wt - iss
        if others and not _ordered_after(an, between[wait_at + 1 :], iss, others):
            return Reuse(st, o, "unordered-writers", iss, frozenset(others), wrapped, wait=between[wait_at])
        return Reuse(st, o, "ordered", iss, wt, wrapped, wait=between[wait_at])
    return Reuse(st, o, "unwaited", iss, wt, wrapped, partial=partial)


def _groups_after(an: Analysis, st: ir.Op, x: ir.Op, iss, later: int) -> int | None:
    """`later` plus the bulk groups store `x` commits in every storing thread of `st` (one per
    store_async), or None when that is not certain: a store of other threads or part of them,
    under another condition, or in a loop of its own."""
    ex = an.threads.issuers(x)
    if not x.guard.exact or ex is None or not iss & ex:
        return later if x.guard.exact and ex is not None else None
    if not iss <= ex or x.loops != st.loops or not _same_condition(x, st):
        return None
    return later + 1


def _ordered_after(an: Analysis, ops: list[ir.Op], issuers, writers) -> bool:
    """Some barrier in `ops` orders every writer after the storing thread of its warp (a
    `__syncwarp()` when they share a warp), or a wider barrier includes both."""
    for x in ops:
        if x.kind != ir.SYNC or not x.guard.exact:
            continue
        ss = an.threads.executing(x)
        if ss is None:
            continue
        kind = x.sync_kind
        ok = True
        for w in writers:
            mates = [i for i in issuers if kind != "warp" or i // 32 == w // 32]
            if w not in ss or not mates or not all(i in ss for i in mates):
                ok = False
                break
        if ok:
            return True
    return False


def _compatible(store_conds, exit_conds) -> bool | None:
    """Can one launch satisfy the store's block-uniform conditions and the exit's? True:
    proved (some launch does); False: proved exclusive; None: not known."""
    have = {str(c) for c in store_conds}
    rest = [c for c in exit_conds if str(c) not in have]
    if not rest:
        return True
    excl = solver.always(E.negate(E.conj(*store_conds, *rest)))
    return None if excl is None else not excl


def _issue_pred(an: Analysis, st: ir.Op) -> E.Expr:
    """The threads that issue `st` in one execution of its iteration, as a predicate over `tid`
    (and the loop counters its guard names: `warpid() == iter % 4`)."""
    pred = st.guard.thread
    if st.issuers_per_group and st.group_warps > 0:
        pred = E.conj(pred, E.binop("==", E.binop("%", E.TID, E.Const(32 * st.group_warps)), E.Const(0)))
    return pred


def _thread_facts(an: Analysis, *ops: ir.Op) -> tuple:
    """What the solver may assume of the thread index and the loop counters the ops' guards name."""
    facts = [E.binop(">=", E.TID, E.Const(0))]
    if an.threads.n is not None:
        facts.append(E.binop("<", E.TID, E.Const(an.threads.n)))
    for o in ops:
        for v in o.guard.thread.free_vars():
            if v.kind == E.LOOP:
                facts.append(E.binop(">=", v, E.Const(0)))
    return tuple(facts)


def _symbolic_guard(o: ir.Op) -> bool:
    """A guard over the thread index, loop counters and block-uniform values (taken for any
    value), every part of it modelled."""
    g = o.guard
    return (
        g.exact
        and not g.thread.is_opaque()
        and all(v.kind in (E.THREAD, E.LOOP, E.PARAM) for v in g.thread.free_vars())
    )


def _no_stricter(sg: ir.Guard, og: ir.Guard) -> bool:
    """Every condition of the guard `og` is one of the guard `sg`'s: its thread conditions, its
    block-uniform ones, and the unmodelled ones it names (`if (src >= 0)` over a loaded value: the
    same test of the same value). `og` may be blind only by loops each thread leaves at its own
    iteration (`Guard.exits`) that `sg` is in as well: a thread leaves such a loop at its head, so
    one that ran the first op in an iteration runs the second, later in that iteration, too. A
    thread that runs an op of guard `sg` then meets `og` (within one iteration of the loops both
    are in; a `break` or `return` between would add its negated test to `og`)."""
    if og.blind and (og.exits is None or sg.exits is None or not set(og.exits) <= set(sg.exits)):
        return False
    if not {str(c) for c in og.opaque} <= {str(c) for c in sg.opaque}:
        return False
    if not {str(c) for c in og.uniform} <= {str(c) for c in sg.uniform}:
        return False
    have = {str(c) for c in conjuncts(sg.thread)}
    return all(str(c) in have or c == E.TRUE for c in conjuncts(og.thread))


def _runs_in_every_issuer(an: Analysis, st: ir.Op, o: ir.Op) -> bool:
    """Proved: every thread that issues `st` in an iteration runs `o` in that iteration (o's
    thread guard holds wherever st's does, for every value of the loop counters they share)."""
    if _no_stricter(st.guard, o.guard):
        return True
    if not (_symbolic_guard(st) and _symbolic_guard(o)):
        return False
    if not {str(c) for c in o.guard.uniform} <= {str(c) for c in st.guard.uniform}:
        return False  # o may be in blocks (or under block-uniform branches) the store's are not
    have = {str(c) for c in conjuncts(st.guard.thread)}
    if all(str(c) in have or c == E.TRUE for c in conjuncts(o.guard.thread)):
        return True  # each of o's conditions is one of the store's (no solver on long index terms)
    imp = E.disj(E.negate(_issue_pred(an, st)), o.guard.thread)
    return solver.always(imp, an.solver_timeout_ms, assume=_thread_facts(an, st, o)) is True


def _no_issuer_runs(an: Analysis, st: ir.Op, o: ir.Op) -> bool:
    """Proved: no thread that issues `st` in some iteration runs `o` in any iteration (their
    thread guards exclude each other whatever the loop counters, each of o's taken afresh: a
    wait by warp `(k + 1) % 4` of the store of warp `k % 4` is the next store's wait, and still
    one of this thread three iterations on), or o's block-uniform conditions exclude the store's."""
    if o.guard.exact and _compatible(st.guard.uniform, o.guard.uniform) is False:
        return True
    if not (_symbolic_guard(st) and _symbolic_guard(o)):
        return False
    fresh = {v.name: E.Var(f"{v.name}'", E.LOOP) for v in o.guard.thread.free_vars() if v.kind == E.LOOP}
    other = replace(o, guard=replace(o.guard, thread=E.substitute(o.guard.thread, fresh)))
    both = E.conj(_issue_pred(an, st), other.guard.thread)
    return solver.always(E.negate(both), an.solver_timeout_ms, assume=_thread_facts(an, st, other)) is True


def _encloses(o: ir.Op, st: ir.Op) -> bool:
    """o runs in the store's iteration of every loop o is in: its loops are a prefix of the
    store's (the same loop body, or one around the store's inner loop, or none)."""
    return tuple(st.loops[: len(o.loops)]) == tuple(o.loops)


def _exit_symbolic(an: Analysis, st: ir.Op) -> InFlight:
    """A store whose threads are picked per iteration (`if (warpid() == iter % 4) store_async(...)`)
    or not enumerable: waited when a later wait in the same iteration (its loops enclosing the
    store's) is proved run by every issuing thread; a wait or `return` proved never run by them
    is passed over; anything else leaves it undecided (never a finding from here)."""
    why = "the storing threads are not known"
    partial: ir.Op | None = None  # a wait that may be run by some of them (a later one may still cover all)
    for o in an.model.ops:
        if o.order <= st.order:
            continue
        if o.kind == ir.CALL and o.asm is not None:
            return InFlight(st, "undecided", why="inline PTX after the store (a bulk wait in assembly is not read)")
        if o.kind == ir.TMA_STORE_WAIT:
            if _encloses(o, st) and _runs_in_every_issuer(an, st, o):
                return InFlight(st, "waited")
            if not _no_issuer_runs(an, st, o):
                partial = partial or o
            continue
        if o.kind == ir.EXIT and not _no_issuer_runs(an, st, o):
            return InFlight(st, "undecided", why=f"{why}: a `return` at line {o.location.row} before a wait")
    if partial is not None:
        return InFlight(
            st, "undecided", why=f"{why}: `{partial.api}` at line {partial.location.row} may wait for part of them"
        )
    # no later wait any issuing thread runs, in any iteration: the threads of the store's first
    # iteration (those of a periodic per-iteration choice, `checks.threads.per_round`) end with it
    # in flight, as a store of known threads in a loop does
    rounds = an.threads.per_round(st)
    if rounds is not None and rounds[1] and len(st.guard.thread.free_vars()) > 0:
        return InFlight(st, "in-flight", rounds[1])
    # a store under tests of values the model does not follow (`if (src >= 0)` on a loaded index)
    # and nothing else it does not follow: the threads of its thread guard that pass those tests
    # end with it in flight (no wait of any thread follows it), as a store under a block-uniform
    # condition does -- the finding names the tests (`Guard.opaque`)
    g = st.guard
    if not g.blind and g.opaque and an.threads.n is not None and g.thread.free_vars() <= {E.TID}:
        from .threads import threads_satisfying

        may = threads_satisfying(g.thread, an.threads.n)
        if may:
            return InFlight(st, "in-flight", may)
    return InFlight(st, "undecided", why=why)


def _exits(an: Analysis) -> list[InFlight]:
    """Per store: does its thread reach the kernel's end, or a `return`, with no read wait of
    its own after the store? A wait under any condition counts (not proved skipped); an exit
    under a block-uniform condition the store's may exclude is not taken as reached."""
    m = an.model
    out: list[InFlight] = []
    for st in m.ops_of(ir.TMA_STORE):
        iss = an.threads.issuers(st) if st.guard.exact else None
        if not iss:
            if iss is None:
                out.append(_exit_symbolic(an, st))
            continue
        later = [o for o in m.ops if o.order > st.order]
        asm = next((o for o in later if o.kind == ir.CALL and o.asm is not None), None)
        if asm is not None:
            out.append(
                InFlight(st, "undecided", iss, "inline PTX after the store (a bulk wait in assembly is not read)")
            )
            continue
        res = InFlight(st, "in-flight", iss)
        # a wait that may not cover the store (in a loop of its own, of threads not known): a
        # later wait may still cover it; without one the store is undecided, never in flight
        pending: ir.Op | None = None
        for o in later:
            if o.kind == ir.TMA_STORE_WAIT:
                if o.guard.exact and _compatible(st.guard.uniform, o.guard.uniform) is False:
                    continue  # in blocks the store's do not run (another role of the grid)
                ex = an.threads.executing(o)
                if ex is None and _encloses(o, st) and _runs_in_every_issuer(an, st, o):
                    res = InFlight(st, "waited", iss)  # a wait of threads picked per iteration, proved to include them
                    break
                if ex is None or not o.guard.exact or not _encloses(o, st):
                    pending = pending or o
                    continue
                if iss <= ex:
                    res = InFlight(st, "waited", iss)
                    break
            if o.kind == ir.EXIT and o.guard.exact:
                ex = an.threads.executing(o)
                if ex is None:
                    res = InFlight(st, "undecided", iss, "a `return` of threads not known")
                    break
                if iss & ex:
                    # an exit under a block-uniform condition that excludes the store's
                    # (`if (owner) store ...; if (!owner) return;`) is not taken by the storing
                    # blocks; one whose condition is not known to meet the store's is not
                    # proved reached
                    both = _compatible(st.guard.uniform, o.guard.uniform)
                    if both is False:
                        continue
                    if both is None:
                        res = InFlight(st, "undecided", iss, "a `return` under a condition the store's may exclude")
                    break
        if res.status == "in-flight" and pending is not None:
            res = InFlight(st, "undecided", iss, f"`{pending.api}` in another loop or of threads not known")
        out.append(res)
    return out
