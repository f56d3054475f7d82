"""z3 with a timeout: `prove` answers True (proved), False (refuted, with a
model) or None (unknown / timeout). Unknown is never turned into a finding."""
from __future__ import annotations

import z3

from ..model import expr as E


_LAUNCH_DIMS = {f"{b}.{f}" for b in ("gridDim", "blockDim", "clusterDim") for f in "xyz"}


def _constraints(zv: E.Z3Vars, extra=()):
    cs = list(extra)
    names = dict(zv.items())
    for name, v in names.items():
        if name.startswith("k") and name[1:].isdigit():
            cs.append(v >= 0)           # loop iteration counters
        elif name in _LAUNCH_DIMS and z3.is_int(v):
            cs.append(v >= 1)           # launch dimensions are at least 1
        elif not name.startswith("?"):
            cs.append(v >= 0)           # sizes, counts and indices kernels use are non-negative
    for f in "xyz":                     # blockIdx.x < gridDim.x
        i, n = names.get(f"blockIdx.{f}"), names.get(f"gridDim.{f}")
        if i is not None and n is not None and z3.is_int(i) and z3.is_int(n):
            cs.append(i < n)
    return cs


def _solver(pred: E.Expr, timeout_ms: int, assume: tuple, negate: bool):
    """A solver holding the kernel-value constraints, the assumptions and `pred`
    (or its negation); None when the expression cannot be translated."""
    zv = E.Z3Vars()
    try:
        zp = E.as_bool(pred.to_z3(zv))
        za = [E.as_bool(a.to_z3(zv)) for a in assume]
    except (z3.Z3Exception, TypeError):
        return None, zv
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*_constraints(zv, za))
    s.add(z3.Not(zp) if negate else zp)
    return s, zv


def always(pred: E.Expr, timeout_ms: int = 2000, assume: tuple = ()) -> bool | None:
    """True if `pred` holds for every value of its free variables."""
    if isinstance(pred, E.Const):
        return bool(pred.value)
    s, _ = _solver(pred, timeout_ms, assume, negate=True)
    if s is None:
        return None
    r = s.check()
    if r == z3.unsat:
        return True
    if r == z3.sat:
        return False
    return None


def witness(pred: E.Expr, timeout_ms: int = 2000, assume: tuple = ()) -> dict[str, int] | None:
    """Values of the free variables making `pred` true, or None."""
    s, zv = _solver(pred, timeout_ms, assume, negate=False)
    if s is None or s.check() != z3.sat:
        return None
    m = s.model()
    out = {}
    for name, v in zv.items():
        val = m.eval(v, model_completion=True)
        try:
            out[name] = val.as_long() if z3.is_int_value(val) else bool(z3.is_true(val))
        except AttributeError:
            pass
    return out


def differ_always(a: E.Expr, b: E.Expr, timeout_ms: int = 2000) -> bool | None:
    """True if a != b for every value of the free variables (a proved mismatch)."""
    ca, cb = a.eval({}), b.eval({})
    if ca is not None and cb is not None:
        return ca != cb
    if a.is_opaque() or b.is_opaque():
        return None
    return always(E.binop("!=", a, b), timeout_ms)
