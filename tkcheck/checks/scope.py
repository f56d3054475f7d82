"""Sync-scope facts: which operations must have a single issuer, and what each
issuing thread issues (to tell duplicate copies from per-thread work)."""
from __future__ import annotations

from ..model import expr as E
from ..model import ir

# Operations whose PTX must be issued by one thread per intended copy.
SINGLE_ISSUE_KINDS = (ir.TMA_LOAD, ir.TMA_STORE, ir.MBAR_EXPECT, ir.MBAR_INIT)


def conjuncts(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == "&&":
        return conjuncts(e.a) + conjuncts(e.b)
    return [e]


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
    for ix in op.detail.get("coord", ()):
        v = E.substitute(ix, sub)
        if v.is_opaque():
            return None
        parts.append(str(v))
    for v in (op.bytes, op.count):
        if isinstance(v, E.Expr):
            parts.append(str(E.substitute(v, sub)))
    return "|".join(parts)
