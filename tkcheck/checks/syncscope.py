"""Sync-scope facts: shared-memory dependencies (writer set -> reader set)
and the barriers and fences between them; named-barrier uses; warpgroup
alignment.

A dependency is a generic-proxy write of a shared buffer (`warpgroup::store`,
`warp::store`, ...) followed in the same loop iteration by a read of the same
buffer (a register load, a TMA store, an MMA operand) by threads of the same
role (the readers are among the writers). Dependencies across roles are
ordered by mbarriers, which the completion checks own; a dependency with an
mbarrier operation or an unmodelled construct between its ends is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis
from .accumulator import smem_operands
from .paths import flow, index_key, keys_may_alias

ORDER_UNKNOWN_KINDS = (ir.MBAR_ARRIVE, ir.MBAR_WAIT, ir.MBAR_EXPECT, ir.NAMED_ARRIVE, ir.CALL)


@dataclass
class Dependency:
    writer: ir.Op
    reader: ir.Op
    reader_threads: frozenset[int]
    uncovered: dict[int, frozenset[int]]  # reader thread -> writer threads not synchronised with it
    narrow: list[ir.Op]  # syncs between that cover too little
    proxy_unfenced: dict[int, frozenset[int]]  # async-proxy reader -> writers with no proxy fence
    kind: str = "raw"  # raw: write then read; war: read, then the next iteration's write
    # from the run over loop steps (`loop_steps`): the loop variables' values at the write and at
    # the read ("k = 64, j = 32"), and whether the write runs under a data condition
    steps: tuple[str, str] | None = None
    conditional: bool = False
    element: str = ""  # the element both name (`key_s[64]`)


def readers_of(op: ir.Op) -> list[tuple[ir.Ref, bool]]:
    """(buffer, async proxy?) read by op."""
    if op.kind == ir.SMEM_ACCESS and op.buffer is not None and op.access_mode == "read":
        if _remote(op):
            return []  # a peer CTA's shared memory: the happens-before engine's DSMEM question
        return [(op.buffer, False)]
    if op.kind == ir.TMA_STORE and op.buffer is not None:
        return [(op.buffer, True)]
    if op.kind == ir.MMA:
        return [(r, True) for r in smem_operands(op)]
    return []


def _remote(op: ir.Op) -> bool:
    """An access of another CTA's shared memory (`cluster.map_shared_rank`)."""
    return op.access is not None and op.access.cta is not None


def _self_fenced(op: ir.Op) -> bool:
    """TK's TMA stores and wgmma (`mma_*` with the default fence) issue
    fence.proxy.async in the issuing threads right before the async read."""
    if op.kind == ir.TMA_STORE:
        return op.transfer is not None and op.transfer.proxy_fence
    if op.kind == ir.MMA:
        # tcgen05 (TMEM accumulator): TK's mma* issue no proxy fence; anything unrecognised: assume fenced
        return not (op.mma is not None and op.mma.kind_of("acc") == "tmem")
    return False


def _nested_done(an: Analysis, w: ir.Op, r: ir.Op) -> bool:
    """The write and the read are in the same loop body, or the write is in inner loops of the
    read's body that run at least once with a constant trip count (the consumers' `for j`
    filling a staging row, then the bulk store of the row): every iteration's write precedes
    the read, and whatever lies between the last write and the read in program order lies
    between each write and the read."""
    if w.loops == r.loops:
        return True
    if len(w.loops) <= len(r.loops) or w.loops[: len(r.loops)] != r.loops:
        return False
    for lid in w.loops[len(r.loops) :]:
        lp = an.model.loops.get(lid)
        trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if lp is None or lp.infinite or not isinstance(trip, int) or isinstance(trip, bool) or trip < 1:
            return False
    return True


def dependencies(an: Analysis) -> list[Dependency]:
    return an.fact("syncscope.dependencies", _dependencies)


def _dependencies(an: Analysis) -> list[Dependency]:
    fl = flow(an)
    out = []
    no_proxy_fence = not any(
        o.kind == ir.CALL or (o.kind == ir.FENCE and o.fence_kind in ("proxy_async", None)) or _self_fenced(o)
        for o in fl.ops
    )
    writers = [
        o
        for o in fl.ops
        if o.kind == ir.SMEM_ACCESS
        and o.buffer is not None
        and o.access_mode == "write"
        and o.guard.exact
        and not _remote(o)
    ]
    for w in writers:
        tw = an.threads.executing(w)
        if not tw:
            continue
        for r in fl.ops:
            if r.order <= w.order or not r.guard.exact or not _nested_done(an, w, r):
                continue
            reads = [(ref, asy) for ref, asy in readers_of(r) if ref.name == w.buffer.name]
            if not reads:
                continue
            tr = an.threads.issuers(r) if r.kind == ir.TMA_STORE else an.threads.executing(r)
            if not tr or not tr <= tw:
                continue
            if set(r.guard.uniform) != set(w.guard.uniform):
                continue
            between = fl.same_iteration_between(w, r)
            if any(not o.guard.exact for o in between if o.kind in (ir.SYNC, ir.FENCE) + ORDER_UNKNOWN_KINDS):
                continue
            # an mbarrier arrive / wait or a call in between may order the writers before the
            # reader another way: only the proxy-fence question stays decidable, and only where no
            # path can carry a proxy fence (none in the kernel) and the barriers in between already
            # order every writer before the reader
            order_unknown = any(o.kind in ORDER_UNKNOWN_KINDS for o in between)
            if order_unknown and not no_proxy_fence:
                continue
            syncs = [o for o in between if o.kind == ir.SYNC]
            sync_sets = [(s, an.threads.executing(s)) for s in syncs]
            if any(ss is None for _, ss in sync_sets):
                continue
            fences = [
                (f, an.threads.executing(f)) for f in between if f.kind == ir.FENCE and f.fence_kind == "proxy_async"
            ]
            if any(fs is None for _, fs in fences):
                continue
            # writer threads grouped by the element of the buffer they write
            wkeys: dict = {}
            for t in tw:
                wkeys.setdefault(index_key(w.buffer, t), set()).add(t)
            uncovered, unfenced = {}, {}
            unknown = False
            for ref, asy in reads:
                for t in sorted(tr):
                    kr = index_key(ref, t)
                    ws = set()
                    for kw, ts in wkeys.items():
                        a = keys_may_alias(kw, kr)
                        if a is None:
                            unknown = True
                        elif a:
                            ws |= ts
                    if unknown:
                        break
                    # other lanes' writes need a barrier too (a `__syncwarp()` within a warp): a
                    # warp's lanes are not in lock step (independent thread scheduling)
                    cross = frozenset(x for x in ws if x != t)
                    bad = frozenset(x for x in cross if not _covered(sync_sets, x, t))
                    if bad:
                        uncovered[t] = bad
                    if asy and not _self_fenced(r):
                        nof = frozenset(x for x in ws if not _fenced(fences, sync_sets, x, t))
                        if nof:
                            unfenced[t] = nof
                if unknown:
                    break
            if unknown:
                continue
            if order_unknown and (uncovered or not unfenced):
                continue
            narrow = [s for s, ss in sync_sets if uncovered and any(t in ss for t in uncovered)]
            if uncovered or unfenced:
                out.append(Dependency(w, r, tr, uncovered, narrow, unfenced))
    out.extend(_war_across_iterations(an, fl, writers))
    out.extend(_async_refills(an, fl))
    # pairs across iterations and loop depths (a ring's slots), asked at concrete iterations
    from .loop_pairs import loop_dependencies

    plain_reads = [
        o
        for o in fl.ops
        if o.kind == ir.SMEM_ACCESS
        and o.buffer is not None
        and o.access_mode == "read"
        and o.guard.exact
        and not _remote(o)
    ]
    out.extend(loop_dependencies(an, fl, writers, plain_reads, {id(d.reader) for d in out}))
    out.extend(_step_dependencies(an, {id(d.reader) for d in out}))
    return out


def _step_dependencies(an: Analysis, done: set[int]) -> list[Dependency]:
    """The dependencies the run over loop steps finds (`loop_steps.simulate`): a write and a
    later read of another thread (raw), or a read and a later write (war), of one element with
    no chain of barriers between, at the loop steps it names; one per reading site."""
    from .loop_steps import shown_at, simulate

    facts = simulate(an)
    if facts is None:
        return []
    out = []
    for race in facts.races:
        a, b = race.first, race.second
        if a.access_mode == "write" and b.access_mode == "read":
            w, r, tw, tr, kind = a, b, race.first_thread, race.second_thread, "raw"
            at_w, at_r = race.first_at, race.second_at
        elif a.access_mode == "read" and b.access_mode == "write":
            w, r, tw, tr, kind = b, a, race.second_thread, race.first_thread, "war"
            at_w, at_r = race.second_at, race.first_at
        else:
            continue
        if id(r) in done:
            continue
        done.add(id(r))
        narrow = [o for o, _ in race.between]
        out.append(
            Dependency(
                w,
                r,
                frozenset([tr]),
                {tr: frozenset([tw])},
                narrow,
                {},
                kind="step-" + kind,
                steps=(shown_at(an, at_w), shown_at(an, at_r)),
                conditional=race.conditional,
                element=f"{race.element[0]}[{']['.join(str(x) for x in race.element[1:])}]",
            )
        )
    return out


def _repeats(an: Analysis, lid: int, guards) -> bool:
    """Proved: some launch runs at least two iterations of loop lid (its trip count and the
    uniform conditions of the ops in it hold for iterations 0 and 1). An infinite loop left only
    by `if (c) break;` on block-uniform values (`Loop.continues`: `for (;;) { ...; if (c >= N)
    break; ... }`, c a value the block read): iteration 0 goes on past every break (round 17: such
    a loop answered "not proved" and the pairs around its back edge were never asked)."""
    from .. import solver

    loop = an.model.loops.get(lid)
    if loop is None or not loop.uniform:
        return False
    conds = []
    for k in (0, 1):
        env = {loop.counter.name: E.Const(k)}
        if loop.trip is not None:
            conds.append(E.binop("<", E.Const(k), loop.trip))
        conds += [E.substitute(c, env) for c in guards]
    goes_on = loop.trip is None and loop.infinite and bool(loop.continues)
    if goes_on:
        conds += [E.substitute(c, {loop.counter.name: E.Const(0)}) for c in loop.continues]
    if loop.trip is None and not guards and not goes_on:
        return False
    if any(c.is_opaque() or c.depends_on(E.LOOP) for c in conds):
        return False
    return solver.feasible(E.conj(*conds), an.solver_timeout_ms)


def _war_across_iterations(an: Analysis, fl, writers) -> list[Dependency]:
    """A generic read in iteration k, then a write of the same element by another thread (of
    another warp, or another lane of the reader's warp: lanes are not in lock step) in iteration
    k + 1 of the same loop, with no barrier covering both in between (around the back edge): the
    writer may overwrite the value before the reader has read it."""
    out = []
    for w in writers:
        if not w.loops:
            continue
        lid = w.loops[-1]
        tw = an.threads.executing(w)
        if not tw:
            continue
        for r in fl.ops:
            if (
                r.loops != w.loops
                or not r.guard.exact
                or r.kind != ir.SMEM_ACCESS
                or r.buffer is None
                or r.access_mode != "read"
                or r.buffer.name != w.buffer.name
                or _remote(r)
            ):
                continue
            if set(r.guard.uniform) != set(w.guard.uniform):
                continue
            tr = an.threads.executing(r)
            if not tr or not tr <= tw:
                continue
            body = [o for o in fl.ops if lid in o.loops]
            between = [o for o in body if o.order > r.order] + [o for o in body if o.order < w.order]
            if any(o.loops != w.loops for o in between if o.kind in (ir.SYNC, ir.FENCE, ir.EXIT) + ORDER_UNKNOWN_KINDS):
                continue
            if any(
                o.kind in ORDER_UNKNOWN_KINDS or o.kind == ir.EXIT or not o.guard.exact
                for o in between
                if o.kind in (ir.SYNC, ir.FENCE, ir.EXIT) + ORDER_UNKNOWN_KINDS
            ):
                continue
            sync_sets = [(s, an.threads.executing(s)) for s in between if s.kind == ir.SYNC]
            if any(ss is None for _, ss in sync_sets):
                continue
            wkeys: dict = {}
            for t in tw:
                wkeys.setdefault(index_key(w.buffer, t), set()).add(t)
            uncovered, unknown = {}, False
            for t in sorted(tr):
                kr = index_key(r.buffer, t)
                ws = set()
                for kw, ts in wkeys.items():
                    a = keys_may_alias(kw, kr)
                    if a is None:
                        unknown = True
                        break
                    if a:
                        ws |= ts
                if unknown:
                    break
                # another lane of the reader's own warp is another thread too (no lock step)
                bad = frozenset(x for x in ws if x != t and not _covered(sync_sets, x, t))
                if bad:
                    uncovered[t] = bad
            if unknown or not uncovered or not _repeats(an, lid, w.guard.uniform):
                continue
            narrow = [s for s, ss in sync_sets if any(t in ss for t in uncovered)]
            out.append(Dependency(w, r, tr, uncovered, narrow, {}, kind="war"))
            break
    return out


def _covered(sync_sets, w: int, r: int) -> bool:
    """A barrier both threads take part in: a block / named barrier both run, or a
    `__syncwarp(mask)` both lanes of one warp run with both in its member mask (PTX
    `bar.warp.sync` orders memory among the threads participating in it; a lane outside the
    mask that runs it is undefined behaviour and waits for no one). A mask not evaluated covers
    (as before: never a finding from a mask not read)."""
    from .happens_before import in_warp_mask

    for s, ss in sync_sets:
        if w in ss and r in ss:
            kind = s.sync_kind
            if kind == "warp":
                if w // 32 == r // 32 and in_warp_mask(s, w) is not False and in_warp_mask(s, r) is not False:
                    return True
                continue
            return True
    return False


MAX_REFILL_QUERIES = 256  # z3 alias questions per (copy, read) pair of `_async_refills`


def _async_refills(an: Analysis, fl) -> list[Dependency]:
    """A bulk copy (TMA_LOAD: `cp.async.bulk`, a tensor-map load) that refills shared memory a
    generic read of another thread read earlier -- in the same iteration, or in the previous
    iteration of the copy's innermost loop (around its back edge) -- with no barrier between
    the read and the copy's issue that both the reader and the issuing thread take part in:
    the async proxy may overwrite the element before the read has read it (WAR). Two lanes of
    one warp are two threads (independent thread scheduling): an elected lane that refills a
    stage its own warp's lanes read needs a `__syncwarp()` before the issue. An mbarrier wait,
    a call or anything else between that may order the reader before the copy another way
    (the producer's wait on an `empty` barrier) leaves the pair alone, as the generic
    dependencies. A race needs the element proved shared (z3, the reader's thread and the
    loop counters free)."""
    from .. import solver

    m = an.model
    out: list[Dependency] = []
    copies = [
        o
        for o in fl.ops
        if o.kind == ir.TMA_LOAD
        and o.buffer is not None
        and o.guard.exact
        and o.loops
        # a st.async writes a peer CTA's element: its SMEM_ACCESS (with the CTA) is the
        # happens-before engine's DSMEM question (round 10), no refill of this CTA's memory
        and not (o.mbar is not None and o.mbar.remote_store)
    ]
    if not copies:
        return out
    reads = [
        o
        for o in fl.ops
        if o.kind == ir.SMEM_ACCESS
        and o.access_mode == "read"
        and o.buffer is not None
        and o.guard.exact
        and not _remote(o)
        and o.access is not None
    ]
    for c in copies:
        lid = c.loops[-1]
        tw = an.threads.issuers(c)
        if not tw:
            continue
        body = [o for o in fl.ops if lid in o.loops]
        for r in reads:
            if r.buffer.name != c.buffer.name or r.loops[: len(c.loops)] != c.loops:
                continue
            if not _nested_runs(an, r, c):
                continue
            tr = an.threads.executing(r)
            if not tr:
                continue
            if r.order < c.order:
                cases = [(0, [o for o in body if r.order < o.order < c.order])]
            else:
                cases = [(1, [o for o in body if o.order > r.order] + [o for o in body if o.order < c.order])]
                if not _repeats(an, lid, c.guard.uniform):
                    continue
            for d, between in cases:
                dep = _refill_pair(an, m, c, r, tw, tr, d, between, solver)
                if dep is not None:
                    out.append(dep)
                    break
    return out


def _nested_runs(an: Analysis, r: ir.Op, c: ir.Op) -> bool:
    """r is in c's loops plus inner loops of constant trip counts that run at least once."""
    for lid in r.loops[len(c.loops) :]:
        lp = an.model.loops.get(lid)
        trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
        if lp is None or lp.infinite or lp.continues or not isinstance(trip, int) or isinstance(trip, bool) or trip < 1:
            return False
    return True


def _refill_pair(an, m, c: ir.Op, r: ir.Op, tw, tr, d: int, between: list[ir.Op], solver) -> Dependency | None:
    """The readers of r not ordered before copy c (d: c runs d iterations of its innermost loop
    after r's iteration) whose element c overwrites: a Dependency (kind war), else None."""
    if any(o.loops[: len(c.loops)] != c.loops for o in between if o.kind in (ir.SYNC, ir.EXIT) + ORDER_UNKNOWN_KINDS):
        return None
    # an mbarrier arrive (arrive.expect_tx) only releases: it orders the reader's read before the
    # copy only through a wait of the issuing thread (or a barrier chain) between, so with no
    # wait, call, named arrive nor barrier between, it orders nothing here
    releases_only = (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)
    if any(
        (o.kind in ORDER_UNKNOWN_KINDS and o.kind not in releases_only)
        or o.kind in (ir.EXIT, ir.SPIN, ir.PDL)
        or (o.kind == ir.SYNC and not o.guard.exact)
        or (o.kind in releases_only and (not o.guard.exact or any(q.kind == ir.SYNC for q in between)))
        for o in between
    ):
        return None
    if any(o.kind == ir.SYNC and o.loops != c.loops for o in between):
        return None  # a barrier in a loop of its own between: it may run any number of times
    # the generic syncscope question skips ops that may wait another way: the same here (an
    # mbarrier wait of the issuing thread, the producer's `empty` handshake, is ORDER_UNKNOWN)
    sync_sets = [(s, an.threads.executing(s)) for s in between if s.kind == ir.SYNC]
    if any(ss is None for _, ss in sync_sets):
        return None
    esize = r.access.tile_type.dtype_bytes if r.access.tile_type is not None else None
    nbytes = c.bytes.eval({}) if c.bytes is not None else None
    ci, ri = c.buffer.index, r.buffer.index
    if len(ci) > len(ri) or any(x.is_opaque() for x in ci + ri):
        return None
    extra: list = []
    if len(ci) == len(ri):
        # a copy into an element: it covers nbytes / esize elements along the last index
        if not ci or not isinstance(nbytes, int) or not esize:
            return None
        ci, last = ci[:-1], ci[-1]
        extra.append(("range", last, ri[-1], nbytes // esize))
    elif len(ri) == len(ci) + 1 and isinstance(nbytes, int) and esize:
        extra.append(("row", None, ri[-1], nbytes // esize))
    elif len(ri) != len(ci):
        return None
    loop = m.loops.get(c.loops[-1])
    if loop is None or loop.counter is None or (loop.trip is not None and loop.trip.is_opaque()):
        return None
    k = loop.counter
    nxt = {k.name: E.binop("+", k, E.Const(d))} if d else {}
    rtid = E.Var("tid@reader", E.PARAM)
    bound = [E.binop(">=", k, E.Const(0))]
    if loop.trip is not None:
        bound.append(E.binop("<", E.binop("+", k, E.Const(d)), loop.trip))
    for g in r.guard.uniform:
        if not g.is_opaque():
            bound.append(g)
    for g in c.guard.uniform:
        if not g.is_opaque():
            bound.append(E.substitute(g, nxt))
    for lid in r.loops[len(c.loops) :]:
        lp = m.loops[lid]
        bound += [E.binop(">=", lp.counter, E.Const(0)), E.binop("<", lp.counter, lp.trip)]
    asked = 0
    for t_w in sorted(tw):
        wsub = {"tid": E.Const(t_w), "tid_y": E.Const(0), "tid_z": E.Const(0), **nxt}
        rsub = {"tid": rtid, "tid_y": E.Const(0), "tid_z": E.Const(0)}
        by_warp: dict[int, list[int]] = {}
        for t in sorted(tr):
            if t != t_w and not _covered(sync_sets, t_w, t):
                by_warp.setdefault(t // 32, []).append(t)
        for w, ts in sorted(by_warp.items(), key=lambda kv: (kv[0] != t_w // 32, kv[0])):
            asked += 1
            if asked > MAX_REFILL_QUERIES:
                return None
            same = [E.binop("==", E.substitute(a, rsub), E.substitute(b, wsub)) for a, b in zip(ri, ci)]
            for kind, last, rl, cnt in extra:
                rv = E.substitute(rl, rsub)
                if kind == "range":
                    lo = E.substitute(last, wsub)
                    same += [E.binop(">=", rv, lo), E.binop("<", rv, E.binop("+", lo, E.Const(cnt)))]
                else:
                    same += [E.binop(">=", rv, E.Const(0)), E.binop("<", rv, E.Const(cnt))]
            who = E.disj(*[E.binop("==", rtid, E.Const(t)) for t in ts])
            pred = E.conj(*same, *[E.substitute(b, rsub) for b in bound], who)
            wit = solver.witness(pred, an.solver_timeout_ms)
            if wit is None:
                continue
            t_r = wit.get("tid@reader")
            if not isinstance(t_r, int) or t_r not in ts:
                continue
            narrow = [s for s, ss in sync_sets if t_r in ss or t_w in ss]
            return Dependency(c, r, tr, {t_r: frozenset([t_w])}, narrow, {}, kind="war" if d else "war-same")
    return None


def _fenced(fences, sync_sets, w: int, r: int) -> bool:
    """A fence.proxy.async in the writer (any point after the write) or in the
    reader after a barrier that orders the writer before it."""
    for f, fs in fences:
        if w in fs:
            return True
        if r in fs and any(w in ss and r in ss and s.order < f.order for s, ss in sync_sets):
            return True
    return False


# ------------------------------------------------------ named barriers ----


@dataclass
class BarrierUse:
    bar_id: int
    op: ir.Op
    threads: frozenset[int]
    count: int | None


def named_barrier_uses(an: Analysis) -> list[BarrierUse] | None:
    return an.fact("syncscope.named_uses", _named_uses)


def _named_uses(an: Analysis):
    out = []
    n = an.threads.n
    if n is None:
        return None
    for op in an.model.ops_of(ir.SYNC, ir.NAMED_ARRIVE):
        # inline `bar.sync` / `bar.arrive` too: the walk evaluates their operands at the asm
        # statement (an operand it could not evaluate leaves the use out, as any other)
        kind = op.sync_kind
        ex = an.threads.executing(op)
        if ex is None or not op.guard.exact:
            continue
        if kind == "block" and op.sync is not None and op.sync.syncthreads:
            out.append(BarrierUse(0, op, ex, n))
            continue
        if kind not in ("named", "block") and op.kind != ir.NAMED_ARRIVE:
            continue
        cnt = op.count.eval({}) if op.count is not None else None
        if op.sync_id is None:
            continue
        envs = _iteration_envs(an.model, op)
        if envs is None:
            continue
        by_id: dict[int, set[int]] | None = {}
        for env in envs:
            for t in ex:
                v = op.sync_id.eval(dict(env, tid=t, tid_y=0, tid_z=0))
                if not isinstance(v, int) or isinstance(v, bool):
                    by_id = None
                    break
                by_id.setdefault(v, set()).add(t)
            if by_id is None:
                break
        if by_id is None:
            continue
        for bid, ts in by_id.items():
            out.append(BarrierUse(bid, op, frozenset(ts), cnt if isinstance(cnt, int) else None))
    return out


# ----------------------------------------------------------- alignment ----

WARPGROUP_KINDS = (ir.MMA, ir.MMA_WAIT, ir.MMA_COMMIT, ir.MMA_FENCE)


def misaligned_groups(an: Analysis, op: ir.Op, size: int = 128):
    """Warpgroup instances (aligned, `size` threads) that run op only partly;
    None if unknown."""
    ex = an.threads.executing(op)
    n = an.threads.n
    if ex is None or n is None or not op.guard.exact:
        return None
    out = []
    for g in sorted({t // size for t in ex}):
        full = frozenset(range(g * size, (g + 1) * size))
        got = frozenset(t for t in ex if t // size == g)
        if got != full:
            out.append((g, got, full - got))
    return out


MAX_ID_ITERATIONS = 16


def _iteration_envs(m: ir.KernelModel, op: ir.Op) -> list[dict] | None:
    """The values of the loop counters an op's barrier id depends on (`FULL0 + i % 2` in a loop
    of a known trip count: every iteration up to MAX_ID_ITERATIONS, each one executed); [{}] when
    the id depends on no loop, None when such a loop's trip count is not a known constant."""
    if op.sync_id is None:
        return [{}]
    names = {v.name for v in op.sync_id.free_vars() if v.kind == E.LOOP}
    if not names:
        return [{}]
    envs: list[dict] = [{}]
    for lid in op.loops:
        lp = m.loops[lid]
        if lp.counter is None or lp.counter.name not in names:
            continue
        trip = lp.trip.eval({}) if lp.trip is not None else None
        if not isinstance(trip, int) or isinstance(trip, bool) or trip <= 0:
            return None
        envs = [dict(e, **{lp.counter.name: k}) for e in envs for k in range(min(trip, MAX_ID_ITERATIONS))]
        names.discard(lp.counter.name)
    return envs if not names else None
