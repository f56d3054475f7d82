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
"""

from __future__ import annotations

from dataclasses import dataclass

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
    for t in ops:
        tf = t.transfer
        if t.kind not in (ir.TMA_LOAD, ir.TMA_STORE) or tf is None or not tf.map_unordered or tf.map_addr is None:
            continue
        if tf.map_addr.is_opaque() or not t.guard.exact or not an.threads.executing(t):
            continue
        for p in releases:
            assert p.fence is not None
            if p.order < t.order and p.fence.address == tf.map_addr and set(p.guard.uniform) <= set(t.guard.uniform):
                out.append(UnacquiredMapRead(t, p))
                break
    return out
