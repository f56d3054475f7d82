"""Accumulator facts: the operands of MMAs (accumulator, A, B), the shapes TK's
wgmma accepts, and which refills of a wgmma's shared operands can happen while the
MMA may still be in flight (`operand_races`).

The path queries these facts use (program-order flow, in-flight hits, aliasing)
live in `paths`, shared with the sync-scope facts and the rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import expr as E
from .. import solver
from ..model import ir
from .analysis import Analysis
from .descriptors import descriptor_operands
from .paths import Flow, flow, in_flight_distances, in_flight_hits, is_wgmma, refs_may_alias, uniform_feasible


# ------------------------------------------------------- MMA specifics ----


def acc_ref(op: ir.Op) -> ir.Ref | None:
    if op.kind == ir.MMA and op.operands and op.mma is not None and op.mma.kind_of("acc") == "regtile":
        return op.operands[0]
    return None


def reg_access_touches(access: ir.Ref, acc: ir.Ref) -> bool | None:
    """Does a register access (REG_ACCESS's buffer) touch the accumulator `acc`? True / False /
    None (unknown). An element of a local register array (`acc0[i]`, `d[m][j][k]`) touches the
    accumulator a raw wgmma names by the index prefix its operands share (`acc0`, `d[m]`)."""
    if access.name != acc.name:
        return False
    if len(access.index) > len(acc.index):
        access = ir.Ref(access.name, access.index[: len(acc.index)])
    return refs_may_alias(access, acc)


def _operand_refs(op: ir.Op) -> list[tuple[str, str, ir.Ref]]:
    """(role, kind, ref) of an MMA's known operands (`op.operands` holds them in role order)."""
    if op.mma is None:
        return []
    # a descriptor operand has no Ref of its own (`descriptors.descriptor_operands` resolves it)
    known = [(r, k) for r in ("acc", "a", "b") if (k := op.mma.kind_of(r)) not in (None, "descriptor")]
    return [(r, k, ref) for (r, k), ref in zip(known, op.operands)]


def smem_operands(op: ir.Op) -> list[ir.Ref]:
    """The shared-memory operands (a and/or b) of an MMA."""
    return [ref for role, kind, ref in _operand_refs(op) if role in ("a", "b") and kind == "buffer"]


def reg_a_operand(op: ir.Op) -> ir.Ref | None:
    return next((ref for role, kind, ref in _operand_refs(op) if role == "a" and kind == "regtile"), None)


# ------------------------------------------------------------ shapes ----


def _dims(t: ir.TileType | None):
    if t is None or t.rows is None or t.cols is None:
        return None
    r, c = t.rows.eval({}), t.cols.eval({})
    if not isinstance(r, int) or not isinstance(c, int):
        return None
    return r, c


def mma_shape_problems(op: ir.Op) -> list[str] | None:
    """What TK's static_asserts on warpgroup::mma_* would reject, in element
    terms (16-bit A/B types only). None: not decidable."""
    # a name without its transposition (none of TK's wgmma names) reads as `AB`
    at = bool(op.mma and op.mma.transpose_a)
    bt = bool(op.mma and op.mma.transpose_b)
    if op.mma is None or op.mma.acc is None or op.mma.a is None or op.mma.b is None:
        return None
    d_t, a_t, b_t = op.mma.acc.type, op.mma.a.type, op.mma.b.type
    D, A, B = _dims(d_t), _dims(a_t), _dims(b_t)
    if D is None or A is None or B is None or a_t.dtype_bytes != 2 or b_t.dtype_bytes != 2 or d_t.kind != "rt":
        return None
    out = []
    a_reg = op.mma.a.kind == "regtile"
    # B: N and K
    if not bt:
        b_k, n = B
    else:
        n, b_k = B
    if a_reg:
        m_rows, a_k = A  # per-warp rows
        want_d_rows = m_rows
    else:
        if not at:
            m_rows, a_k = A
        else:
            a_k, m_rows = A
        if m_rows != 64:
            out.append(f"the shared A tile gives M = {m_rows} rows, a warpgroup wgmma needs 64")
        want_d_rows = m_rows // 4
    if D[0] != want_d_rows:
        out.append(f"the accumulator has {D[0]} rows per warp, the MMA produces {want_d_rows}")
    if D[1] != n:
        out.append(f"the accumulator has {D[1]} columns, the MMA produces N = {n}")
    if a_k != b_k:
        out.append(f"A has K = {a_k}, B has K = {b_k}")
    if a_t.dtype and b_t.dtype and a_t.dtype != b_t.dtype:
        out.append(f"A is {a_t.dtype}, B is {b_t.dtype} (they must match)")
    if d_t.dtype and d_t.dtype not in ("float", "half"):
        out.append(f"the accumulator is {d_t.dtype}; wgmma accumulates in float or half")
    return out


# ------------------------------------------------- operands in flight ----

REFILL_KINDS = (ir.TMA_LOAD, ir.SMEM_ACCESS, ir.CP_ASYNC)


def is_refill(op: ir.Op) -> bool:
    if op.buffer is None:
        return False
    if op.kind == ir.TMA_LOAD:
        return True
    return op.kind == ir.SMEM_ACCESS and op.access_mode == "write"


@dataclass
class OperandRace:
    mma: ir.Op
    refill: ir.Op
    operand: ir.Ref
    warp: int  # an issuing warp whose wait is not ordered before the refill
    release: ir.Op | None = None  # the arrive that lets the refill go (cross-role case)
    barrier: str | None = None
    init_count: int | None = None
    early_arrivals: int | None = None


def _first_index(r: ir.Ref):
    return r.index[0] if r.index else None


def _waits_before(fl: Flow, mma: ir.Op, target: ir.Op, t: int) -> bool | None:
    """On every path of thread t from mma to target (same iteration or later),
    a wait retires mma? True / False (a path without) / None (unknown)."""
    hits = in_flight_hits(fl.an, mma, t, lambda o: o is target)
    return False if hits else True


def operand_races(an: Analysis) -> list[OperandRace]:
    return an.fact("accumulator.operand_races", _operand_races)


def _operand_races(an: Analysis) -> list[OperandRace]:
    fl = flow(an)
    out: list[OperandRace] = []
    inits: dict[str, list[ir.Op]] = {}
    for o in fl.ops:
        if o.kind == ir.MBAR_INIT and o.barrier is not None:
            inits.setdefault(o.barrier.name, []).append(o)
    for mma in fl.ops:
        if not is_wgmma(mma) or not mma.guard.exact:
            continue
        ex = an.threads.executing(mma)
        if not ex:
            continue
        warps = sorted({t // 32 for t in ex})
        for opnd in smem_operands(mma) + list(descriptor_operands(an).get(id(mma), ())):
            refills = [o for o in fl.ops if is_refill(o) and o.buffer.name == opnd.name]
            if not refills:
                continue
            # (1) the issuing threads themselves refill the operand with no wait in between
            for w in warps:
                for t in (32 * w,):
                    hits = in_flight_hits(
                        an,
                        mma,
                        t,
                        lambda o: (
                            is_refill(o) and o.buffer.name == opnd.name and refs_may_alias(o.buffer, opnd, t, t) is True
                        ),
                    )
                    for h in hits:
                        if uniform_feasible(mma, h.target, h.back_edge):
                            out.append(OperandRace(mma, h.target, opnd, w))
            # (2) another role refills after waiting on a barrier the issuing warps arrive on
            out.extend(_release_races(an, fl, mma, opnd, refills, warps, ex, inits))
    # one race per (refill, mma)
    seen, uniq = set(), []
    for r in out:
        k = id(r.refill)
        if k not in seen:
            seen.add(k)
            uniq.append(r)
    return uniq


def _release_races(
    an: Analysis, fl: Flow, mma: ir.Op, opnd: ir.Ref, refills: list[ir.Op], warps: list[int], ex, inits
) -> list[OperandRace]:
    """Refills of `opnd` by another role, gated by a wait on a barrier whose phase the issuing
    warps complete while some warp's share of `mma` may be in flight.

    The release of the stage the wgmma of iteration k read is an arrival at iteration k + d of
    the loop L both share (d = 0: after the wgmma; d = 1: the next iteration, a wgmma kept in
    flight across the back edge by `wait_group<N>`), on the barrier element whose index at k + d
    is the operand's stage index at k (z3, with the arrival's block-uniform guard at k + d). For
    warp w, the arrivals not ordered after w's retiring wait are counted: w's own when a path
    reaches them with w's wgmma in flight, another warp's unless a barrier both pass follows w's
    wait. When they reach the barrier's init count, the phase the refill waits for can complete
    under the wgmma."""
    out: list[OperandRace] = []
    stage = _first_index(opnd)  # None: one buffer, released by a barrier without stages
    if stage is not None and stage.is_opaque():
        return out
    candidates: list[tuple[OperandRace, ir.Op]] = []
    safe_barriers: set[str] = set()
    by_barrier: dict[str, list[ir.Op]] = {}
    for o in fl.ops:
        if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT) and o.barrier is not None:
            by_barrier.setdefault(o.barrier.name, []).append(o)
    for bname, arrivals in by_barrier.items():
        cnts = {o.count.eval({}) if o.count is not None else None for o in inits.get(bname, [])}
        if len(cnts) != 1:
            continue
        init_count = cnts.pop()
        if not isinstance(init_count, int) or init_count <= 0:
            continue
        loop = _shared_loop(mma, [o for o in arrivals if (an.threads.executing(o) or frozenset()) & ex])
        if loop is None:
            continue
        # the arrivals on the element the operand's stage names that complete the phase after the
        # wgmma: each site's first such visit (this iteration after the wgmma, else the next)
        pairs = []
        for o in arrivals:
            d = next((d for d in (0, 1) if loop in o.loops and _releases(an, mma, stage, o, d, loop)), None)
            if d is not None:
                pairs.append((o, d))
        if not pairs:
            continue
        per = []
        for o, d in pairs:
            s = an.threads.issuers(o)
            c = o.count.eval({}) if (o.kind == ir.MBAR_ARRIVE and o.count is not None) else 1
            if s is None or not o.guard.exact or not isinstance(c, int) or any(u.is_opaque() for u in o.guard.uniform):
                per = []
                break
            per.append((o, d, s, c))
        if not per:
            continue
        gated = _gated_refills(an, fl, refills, bname)
        if not gated:
            continue
        releases_early = False
        for w in warps:
            tw = 32 * w
            early = 0
            first: tuple[ir.Op, int] | None = None
            for o, d, s, c in per:
                for t in s:
                    if _arrival_ordered(an, fl, mma, o, d, loop, tw, t):
                        continue
                    early += c
                    first = first or (o, d)
            if early < init_count or first is None:
                continue
            releases_early = True
            for r in gated:
                threads_r = an.threads.issuers(r) or an.threads.executing(r)
                if not threads_r or _tails_differ(opnd, r.buffer, tw, min(threads_r)):
                    continue
                race = OperandRace(mma, r, opnd, w, first[0], bname, init_count, early)
                candidates.append((race, r))
            break
        if not releases_early:
            safe_barriers.add(bname)
    # a refill that also waits on a barrier every issuing warp releases only after its own
    # retiring wait (a later handshake of the same iteration) is ordered after the wgmma
    for race, r in candidates:
        r_threads = an.threads.issuers(r) or an.threads.executing(r)
        if any(
            o.kind == ir.MBAR_WAIT
            and o.barrier is not None
            and o.barrier.name in safe_barriers
            and o.loops == r.loops
            and o.order < r.order
            and r_threads
            and (an.threads.executing(o) or frozenset()) >= r_threads
            for o in fl.ops
        ):
            continue
        out.append(race)
    return out


def _shared_loop(mma: ir.Op, arrivals: list[ir.Op]) -> int | None:
    """The deepest loop of the wgmma that holds every arrival on the barrier by threads of the
    wgmma (None: one of them lies outside the wgmma's loops: not decided here)."""
    if not arrivals:
        return None
    depth = len(mma.loops)
    for o in arrivals:
        n = 0
        while n < min(depth, len(o.loops)) and o.loops[n] == mma.loops[n]:
            n += 1
        depth = min(depth, n)
    return mma.loops[depth - 1] if depth > 0 else None


def _releases(an: Analysis, mma: ir.Op, stage: E.Expr | None, arrive: ir.Op, d: int, loop: int) -> bool:
    """Proved: for some iteration k of `loop` (k + d inside its trip), `arrive` at k + d (after the
    wgmma in program order when d = 0) names the barrier element `stage` names at k (no stage:
    a barrier without elements), its and the wgmma's block-uniform guards holding."""
    assert arrive.barrier is not None
    if d == 0 and arrive.order < mma.order:
        return False
    index = _first_index(arrive.barrier)
    if stage is None:
        if arrive.barrier.index:
            return False
        index = stage = E.Const(0)
    elif index is None or index.is_opaque() or len(arrive.barrier.index) != 1:
        return False
    lp = an.model.loops.get(loop)
    if lp is None or (lp.trip is not None and lp.trip.is_opaque()):
        return False
    # counters of loops inside `loop` would stand for two iterations at once: not decided here
    inner = {an.model.loops[i].counter.name for i in mma.loops[mma.loops.index(loop) + 1 :] if i in an.model.loops}
    inner |= {
        an.model.loops[i].counter.name for i in arrive.loops[arrive.loops.index(loop) + 1 :] if i in an.model.loops
    }
    if {v.name for v in (index.free_vars() | stage.free_vars())} & inner:
        return False
    k = lp.counter
    later = {k.name: E.binop("+", k, E.Const(d))}
    if d == 0 and index == stage and not arrive.guard.uniform:
        return True
    cond = E.binop("==", E.substitute(index, later), stage)
    cond = E.binop("&&", cond, E.binop(">=", k, E.Const(0)))
    if lp.trip is not None:
        cond = E.binop("&&", cond, E.binop("<", E.binop("+", k, E.Const(d)), lp.trip))
    for c in mma.guard.uniform:
        if c.is_opaque():
            return False
        cond = E.binop("&&", cond, c)
    for c in arrive.guard.uniform:
        cond = E.binop("&&", cond, E.substitute(c, later))
    if cond.depends_on(E.THREAD):
        return False
    return solver.feasible(cond, 1000)


def _gated_refills(an: Analysis, fl: Flow, refills: list[ir.Op], bname: str) -> list[ir.Op]:
    """The refills preceded (same loops, same stage index) by a wait of the refilling threads
    themselves on `bname` (another role's wait gates nothing here)."""
    gated = []
    for r in refills:
        if not r.loops:
            continue
        r_threads = an.threads.issuers(r) or an.threads.executing(r)
        waits = [
            o
            for o in fl.ops
            if o.kind == ir.MBAR_WAIT
            and o.barrier is not None
            and o.barrier.name == bname
            and o.loops == r.loops
            and o.order < r.order
            and r_threads
            and (an.threads.executing(o) or frozenset()) >= r_threads
        ]
        if not waits:
            continue
        wt = waits[-1]
        assert wt.barrier is not None and r.buffer is not None
        if _first_index(wt.barrier) is None and _first_index(r.buffer) is not None:
            continue
        if _first_index(wt.barrier) != _first_index(r.buffer):
            continue
        gated.append(r)
    return gated


def _tails_differ(opnd: ir.Ref, buf: ir.Ref | None, tw: int, tr: int) -> bool:
    """The operand's and the refill's indices past the stage are not shown to be the same."""
    if buf is None:
        return True
    for x, y in zip(opnd.index[1:], buf.index[1:]):
        xv = E.substitute(x, {"tid": E.Const(tw)}).eval({})
        yv = E.substitute(y, {"tid": E.Const(tr)}).eval({})
        if xv is None or yv is None:
            if x != y:
                return True
        elif xv != yv:
            return True
    return False


def _arrival_ordered(an: Analysis, fl: Flow, mma: ir.Op, arrive: ir.Op, d: int, loop: int, tw: int, t: int) -> bool:
    """Is thread t's arrival at `arrive` (iteration k + d of `loop`) ordered after warp(tw)'s
    retiring wait of the wgmma of iteration k?"""
    uniform = tuple(mma.guard.uniform) + tuple(u for u in arrive.guard.uniform if u not in mma.guard.uniform)
    if t // 32 == tw // 32:
        return d not in in_flight_distances(an, mma, t, arrive, loop, uniform)
    # a barrier both threads pass between tw's retiring wait and t's arrival
    if d == 0:
        between = fl.same_iteration_between(mma, arrive)
    else:
        first = fl.first[loop]
        i, j = fl.index[id(mma)], fl.index[id(arrive)]
        between = [o for o in fl.ops[i + 1 :] if loop in o.loops] + fl.ops[first:j]
    for s in between:
        if s.kind != ir.SYNC or s.sync_kind in ("warp", None):
            continue
        ex = an.threads.executing(s)
        if ex is None or tw not in ex or t not in ex or not s.guard.exact:
            continue
        if not in_flight_hits(an, mma, tw, lambda o: o is s):
            return True
    return False
