"""What an MMA reads through a shared-memory descriptor: the hand-carved stage region its start
address falls in (`descriptor_operands`).

The front end gives a raw `wgmma.mma_async` A/B operand as its descriptor's start address (an
Expr, `model.descriptors`); raw TMA destinations name regions of the dynamic shared memory
(`model.regions`: anchor + offset + stage * stride). The operand reads region R at stage x when
its address is `anchor + x * R.stride + o` with the in-stage offset o inside what the copies
into R write, [R.offset, R.offset + bytes), for every issuing thread and every iteration of the
loops o moves with (enumerated: constant trip counts only). The operand then reads at least the
bytes at its start, which the copies into R(x) overwrite: `Ref(R.name, (x,))`, the same object
as the copies' destination. Any other shape resolves to nothing (the reads stay unfollowed).
"""

from __future__ import annotations

import itertools

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

MAX_POINTS = 4096  # (thread, inner iteration) points enumerated per in-stage offset


def descriptor_operands(an: Analysis) -> dict[int, tuple[ir.Ref, ...]]:
    """id(op) -> the regions (stage refs) an MMA reads through its descriptor operands."""
    return an.fact("descriptors.operands", _descriptor_operands)


def unresolved_descriptors(an: Analysis) -> list[tuple[ir.Op, str]]:
    """(MMA, role) of the descriptor operands of a kernel with hand-carved stage regions that
    resolve to none of them: which stage they read (and so whether a refill may overwrite it in
    flight) is not decided. The asked ones are every descriptor operand of such a kernel."""
    return an.fact("descriptors.unresolved", lambda a: _descriptor_reads(a)[1])


def asked_descriptors(an: Analysis) -> int:
    return an.fact("descriptors.asked", lambda a: _descriptor_reads(a)[2])


def _descriptor_operands(an: Analysis) -> dict[int, tuple[ir.Ref, ...]]:
    return _descriptor_reads(an)[0]


def _descriptor_reads(an: Analysis) -> tuple[dict[int, tuple[ir.Ref, ...]], list[tuple[ir.Op, str]], int]:
    m = an.model
    out: dict[int, tuple[ir.Ref, ...]] = {}
    unresolved: list[tuple[ir.Op, str]] = []
    asked = 0
    if not m.regions:
        return out, unresolved, asked
    extents = _region_extents(m)
    for op in m.ops:
        if op.kind != ir.MMA or op.mma is None:
            continue
        refs = []
        for role in ("a", "b"):
            o = op.mma.operand(role)
            if o is None or o.kind != "descriptor" or o.address is None:
                continue
            asked += 1
            ref = _region_read(an, op, o.address, extents)
            if ref is not None:
                refs.append(ref)
            else:
                unresolved.append((op, role))
        if refs:
            out[id(op)] = tuple(refs)
    return out, unresolved, asked


def _region_extents(m: ir.KernelModel) -> dict[str, int]:
    """Region name -> the bytes every copy into one of its stages writes (all copies agree on a
    constant size; a region with another copy is left out)."""
    sizes: dict[str, set] = {}
    for op in m.ops:
        if op.kind == ir.TMA_LOAD and op.buffer is not None and op.buffer.name in m.regions:
            n = op.bytes.eval({}) if op.bytes is not None else None
            sizes.setdefault(op.buffer.name, set()).add(n if isinstance(n, int) and not isinstance(n, bool) else None)
    return {k: v.pop() for k, v in sizes.items() if len(v) == 1 and None not in v and next(iter(v)) > 0}


def _sum_terms(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == "+":
        return _sum_terms(e.a) + _sum_terms(e.b)
    return [e]


def _region_read(an: Analysis, op: ir.Op, addr: E.Expr, extents: dict[str, int]) -> ir.Ref | None:
    terms = _sum_terms(addr)
    for region in an.model.regions.values():
        extent = extents.get(region.name)
        if extent is None or region.anchor not in terms:
            continue
        rest = list(terms)
        rest.remove(region.anchor)
        for t in rest:
            stage = _stage_of(t, region.stride)
            if stage is None:
                continue
            offset = [x for x in rest if x is not t]
            span = _offset_range(an, op, offset)
            if span is not None and region.offset <= span[0] and span[1] < region.offset + extent:
                return ir.Ref(
                    region.name,
                    (stage,),
                    f"{region.array} + {region.offset} + {ir._bare(str(stage))} * {region.stride}",
                )
    return None


def _stage_of(t: E.Expr, stride: int) -> E.Expr | None:
    """x of a term `x * stride` whose x moves with a loop."""
    if not (isinstance(t, E.Bin) and t.op == "*"):
        return None
    for x, y in ((t.a, t.b), (t.b, t.a)):
        if y.eval({}) == stride and x.depends_on(E.LOOP) and not x.is_opaque():
            return x
    return None


def _offset_range(an: Analysis, op: ir.Op, terms: list[E.Expr]) -> tuple[int, int] | None:
    """(min, max) of the sum of `terms` over the threads that issue `op` and the iterations of
    the loops of `op` its counters name (constant trips); None when another value enters."""
    total: E.Expr = E.Const(0)
    for t in terms:
        total = E.binop("+", total, t)
    threads = an.threads.executing(op)
    if not threads or total.is_opaque():
        return None
    counters: list[tuple[str, int]] = []
    for lid in op.loops:
        loop = an.model.loops.get(lid)
        if loop is None or loop.counter.name not in {v.name for v in total.free_vars()}:
            continue
        trip = loop.trip.eval({}) if loop.trip is not None else None
        if not isinstance(trip, int) or isinstance(trip, bool) or trip <= 0:
            return None
        counters.append((loop.counter.name, trip))
    points = len(threads)
    for _, n in counters:
        points *= n
    if points > MAX_POINTS:
        return None
    lo = hi = None
    for t in sorted(threads):
        base = E.substitute(total, {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)})
        for values in itertools.product(*(range(n) for _, n in counters)):
            v = base.eval({name: k for (name, _), k in zip(counters, values)})
            if not isinstance(v, int) or isinstance(v, bool):
                return None
            lo = v if lo is None else min(lo, v)
            hi = v if hi is None else max(hi, v)
    return (lo, hi) if lo is not None and hi is not None else None
