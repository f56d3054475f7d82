"""Sync-scope facts: who issues single-thread operations, which barriers are
reached by only part of the threads that must reach them."""
from __future__ import annotations

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

# Operations whose PTX must be issued by one thread per intended copy.
SINGLE_ISSUE_KINDS = (ir.TMA_LOAD, ir.TMA_STORE, ir.MBAR_EXPECT, ir.MBAR_INIT)


def conjuncts(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.Bin) and e.op == "&&":
        return conjuncts(e.a) + conjuncts(e.b)
    return [e]


def depends_on_thread(op: ir.Op) -> bool:
    """True if the op's operands differ between the threads that run it
    (e.g. `tiles[laneid()]`): then several issuers do different work."""
    refs = [r for r in (op.barrier, op.buffer) if r is not None] + list(op.operands)
    for r in refs:
        if any(ix.depends_on(E.THREAD) or ix.is_opaque() for ix in r.index):
            return True
    for key in ("mask", "cta"):
        v = op.detail.get(key)
        if isinstance(v, E.Expr) and v.depends_on(E.THREAD):
            return True
    for v in (op.bytes, op.count):
        if isinstance(v, E.Expr) and v.depends_on(E.THREAD):
            return True
    return False


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


def group_instances(threads: frozenset[int], size: int) -> dict[int, frozenset[int]]:
    out: dict[int, set[int]] = {}
    for t in threads:
        out.setdefault(t // size, set()).add(t)
    return {g: frozenset(s) for g, s in out.items()}


def partial_groups(an: Analysis, op: ir.Op, size: int) -> list[tuple[int, frozenset[int]]] | None:
    """Group instances (of `size` threads) that reach `op` only partly."""
    ex = an.threads.executing(op)
    n = an.threads.n
    if ex is None or n is None:
        return None
    out = []
    for g, ts in sorted(group_instances(ex, size).items()):
        full = frozenset(t for t in range(g * size, min((g + 1) * size, n)))
        if ts != full:
            out.append((g, ts))
    return out
