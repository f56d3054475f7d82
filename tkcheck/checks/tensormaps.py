"""The tensor-map proxy (issue 25, round 9): a raw tensor copy whose descriptor operand is a map
in global memory (`TransferFacts.map_unordered`) that this kernel publishes
(`tensormap.cp_fenceproxy ... release`, a FENCE of kind tensormap_release at that address) reads
the map through the tensormap proxy: PTX requires a `fence.proxy.tensormap::generic.acquire` of
the map in the issuing thread between the publication and the copy, else the copy may read the
stale map.

`unacquired(an)` proves the acquire missing only in the plainest shape: the publication runs
unconditionally before the copy (program order, no loop, an exact guard whose block-uniform
conditions the copy's guard has too, some thread reaches it), its address and the copy's map
operand are the same expression (neither opaque), and the kernel has NO tensormap acquire fence
anywhere and no call or asm statement the model does not know (either could hold one). Anything
else is no finding: the copy's site stays unmodelled in the coverage (walk_asm).

`unreleased(an)` (round 10): a raw tensor copy through a map in global memory that this kernel
writes with generic-proxy stores (a `GLOBAL_STORE` whose `pointer` is the copy's map operand,
structurally, and whose element is 0 for some thread that runs it: the map's first bytes; or a
`tensormap.replace ... .global` of it), the store before the copy in program order, in no loop,
with an exact guard whose block-uniform conditions the copy's guard has too -- in a kernel with
NO release into the tensormap proxy at all (no `tensormap.cp_fenceproxy ... release`, no
`fence.proxy.tensormap::generic.release`) and no call or asm statement the model does not know.
PTX orders a generic-proxy write of a map before a tensormap-proxy read of it only by such a
release in the writer paired with an acquire in the reader: without any release the copy may
read the stale map (idioms8 `tm-plain-publish`). Pointer arithmetic is compared as the model
evaluates it (in the pointer's own elements), as the publication's address is in `unacquired`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis


@dataclass(frozen=True)
class UnacquiredMapRead:
    copy: ir.Op  # the tensor copy through the published map
    release: ir.Op  # the publication (tensormap.cp_fenceproxy) of that map


def unacquired(an: Analysis) -> list[UnacquiredMapRead]:
    return an.fact("tensormaps.unacquired", _unacquired)


def _unacquired(an: Analysis) -> list[UnacquiredMapRead]:
    ops = an.model.ops
    if any(o.kind == ir.CALL or (o.kind == ir.FENCE and o.fence_kind == "tensormap_acquire") for o in ops):
        return []
    releases = [
        o
        for o in ops
        if o.kind == ir.FENCE
        and o.fence_kind == "tensormap_release"
        and o.fence is not None
        and o.fence.address is not None
        and not o.fence.address.is_opaque()
        and not o.loops
        and o.guard.exact
        and an.threads.executing(o)
    ]
    out = []
    for t, tf in _copies_through_known_maps(an, ops):
        for p in releases:
            assert p.fence is not None
            if p.order < t.order and p.fence.address == tf.map_addr and set(p.guard.uniform) <= set(t.guard.uniform):
                out.append(UnacquiredMapRead(t, p))
                break
    return out


@dataclass(frozen=True)
class UnreleasedMapWrite:
    copy: ir.Op  # the tensor copy through the map
    write: ir.Op  # a generic-proxy store of that map, released into the tensormap proxy by nothing


def unreleased(an: Analysis) -> list[UnreleasedMapWrite]:
    return an.fact("tensormaps.unreleased", _unreleased)


def _writes_map(an: Analysis, s: ir.Op, addr: E.Expr) -> bool:
    """Does the plain store `s` write the first bytes of the map at `addr` for some thread?"""
    ga = s.global_access
    if ga is None or ga.pointer is None or ga.element is None or ga.pointer != addr:
        return False
    if ga.element.is_opaque() or not s.guard.exact:
        return False
    ts = an.threads.satisfying(E.binop("&&", s.guard.thread, E.binop("==", ga.element, E.Const(0))))
    return bool(ts)


def _unreleased(an: Analysis) -> list[UnreleasedMapWrite]:
    ops = an.model.ops
    if any(o.kind == ir.CALL or (o.kind == ir.FENCE and o.fence_kind == "tensormap_release") for o in ops):
        return []
    stores = [o for o in ops if o.kind == ir.GLOBAL_STORE and not o.loops]
    out = []
    for t, tf in _copies_through_known_maps(an, ops):
        for s in stores:
            if s.order < t.order and set(s.guard.uniform) <= set(t.guard.uniform) and _writes_map(an, s, tf.map_addr):
                out.append(UnreleasedMapWrite(t, s))
                break
    return out


def _copies_through_known_maps(an: Analysis, ops: list[ir.Op]) -> list[tuple[ir.Op, ir.TransferFacts]]:
    """The TMA loads and stores whose map is a global one the kernel names at a known address
    (`map_unordered`: no acquire pairs with its patch yet), run by known threads."""
    out = []
    for t in ops:
        tf = t.transfer
        if t.kind not in (ir.TMA_LOAD, ir.TMA_STORE) or tf is None or not tf.map_unordered or tf.map_addr is None:
            continue
        if tf.map_addr.is_opaque() or not t.guard.exact or not an.threads.executing(t):
            continue
        out.append((t, tf))
    return out
