"""Closed forms of loop-carried variables that depend on *other* carried variables.

`walk_util.solve_recurrence` solves a variable whose end-of-body value depends
only on its own start value (`tic ^= 1`, `s = (s + 1) % N`). Phase variables
often depend on the ring index instead:

* `if (++stage == STAGES) { stage = 0; phase ^= 1; }`  -> ite(stage@start+1 == S, phase ^ 1, phase)
* `tic ^= 1; if (tic == 0) phase ^= 1;`                 -> ite((tic@start ^ 1) == 0, phase ^ 1, phase)
* `phase ^= (stage == STAGES - 1);`                      -> phase ^ (stage@start == S-1)
* TK's phase bitfield: `update_phasebit<n>(bits, ring)` -> bits ^ (1 << (ring@start + 16n))

Once the ring index has a closed form ring(j), the flip condition C(j) is a
function of the iteration j alone. When C is periodic with a period P that z3
proves (C(j + P) == C(j) for every j), the number of flips before iteration k
is a sum of floor divisions, and the phase has an exact closed form. Anything
else stays an unknown (never a guess).
"""
from __future__ import annotations

from typing import Callable

from ..model import expr as E
from ..model.expr import Expr

J = E.Var("j@iter", E.LOOP)
MAX_PERIOD = 64

# closed forms of phase bitfields: expr -> (initial value, {bit position: flips before k})
_BITFIELDS: dict[Expr, tuple[Expr, dict[int, Expr]]] = {}


def _is_opaque_form(fn: Callable) -> bool:
    v = fn(E.Var("k@probe", E.LOOP))
    return isinstance(v, E.Var) and v.kind == E.OPAQUE


def _period(cond: Expr) -> int | None:
    """Smallest P with cond(j + P) == cond(j) for every j >= 0, proved by z3."""
    from ..checks import solver
    vals = []
    for j in range(2 * MAX_PERIOD):
        v = cond.eval({J.name: j})
        if v is None:
            return None
        vals.append(int(v))
    for p in range(1, MAX_PERIOD + 1):
        if all(vals[j] == vals[j + p] for j in range(MAX_PERIOD)):
            if _only_mod(cond, p):
                return p        # J occurs only under `% m` with m dividing p: periodic by construction
            shifted = E.substitute(cond, {J.name: E.binop("+", J, E.Const(p))})
            if solver.always(E.binop("==", _as_int(cond), _as_int(shifted)), timeout_ms=2000) is True:
                return p
            return None
    return None


def _is_shift(e: Expr) -> bool:
    return isinstance(e, E.Bin) and e.op == "<<"


def _only_mod(e: Expr, p: int) -> bool:
    """Every occurrence of J is inside a `(... J ...) % m` with constant m dividing p,
    where the dividend is J plus constants (so shifting J by p changes nothing)."""
    if e == J:
        return False
    if isinstance(e, E.Bin) and e.op == "%" and isinstance(e.b, E.Const) and isinstance(e.b.value, int) \
            and e.b.value > 0 and p % e.b.value == 0 and _affine_unit(e.a):
        return True
    if isinstance(e, E.Bin):
        return _only_mod(e.a, p) and _only_mod(e.b, p)
    if isinstance(e, E.Un):
        return _only_mod(e.a, p)
    if isinstance(e, E.Ite):
        return _only_mod(e.c, p) and _only_mod(e.t, p) and _only_mod(e.e, p)
    return True


def _affine_unit(e: Expr) -> bool:
    """J + const (any nesting of + with constants)."""
    if e == J:
        return True
    if isinstance(e, E.Bin) and e.op == "+":
        return (_affine_unit(e.a) and not e.b.free_vars()) or (_affine_unit(e.b) and not e.a.free_vars())
    return False


def _as_int(e: Expr) -> Expr:
    return E.ite(e, E.Const(1), E.Const(0)) if _is_bool(e) else e


def _is_bool(e: Expr) -> bool:
    return (isinstance(e, E.Bin) and e.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||")) or \
        (isinstance(e, E.Un) and e.op == "!") or (isinstance(e, E.Const) and isinstance(e.value, bool))


def _count_before(k: Expr, offsets: list[int], p: int) -> Expr:
    """#{j < k : j % p in offsets} for k >= 0."""
    total: Expr = E.Const(0)
    for c in offsets:
        total = E.binop("+", total, E.binop("/", E.binop("+", k, E.Const(p - 1 - c)), E.Const(p)))
    return total


def _flip_condition(end: Expr, start: E.Var) -> Expr | None:
    """C when end == start ^ C (C boolean or 0/1), or ite(C, start ^ 1, start)."""
    if isinstance(end, E.Bin) and end.op == "^" and end.a == start and start not in end.b.free_vars():
        return end.b
    if isinstance(end, E.Ite) and start not in end.c.free_vars():
        flip = (E.Bin("^", start, E.Const(1)), E.Bin("-", E.Const(1), start))
        if end.t in flip and end.e == start:
            return end.c
        if end.e in flip and end.t == start:
            return E.negate(end.c)
    return None


def solve_dependent(name: str, start: E.Var, end, v0: Expr, solved: dict[str, Callable],
                    starts: dict[str, E.Var]) -> Callable | None:
    """Closed form (function of the counter) of `name`, or None."""
    if not isinstance(end, Expr) or not isinstance(v0, Expr) or v0.free_vars():
        return None
    # the other carried variables, at iteration j
    mapping = {}
    for other, fn in solved.items():
        if other != name:
            mapping[starts[other].name] = fn(J)
    body = E.substitute(end, mapping)
    if body.free_vars() - {start, J}:
        return None
    cond = _flip_condition(body, start)
    if cond is not None and start not in cond.free_vars() and not _is_shift(cond):
        p = _period(cond)
        if p is None:
            return None
        if any(cond.eval({J.name: c}) not in (0, 1, True, False) for c in range(p)):
            return None         # not a phase bit flip (x ^= v with v outside {0, 1})
        offsets = [c for c in range(p) if cond.eval({J.name: c})]
        return lambda k: E.binop("^", v0, E.binop("%", _count_before(k, offsets, p), E.Const(2)))
    # bitfield: bits ^ (1 << pos(j))
    if isinstance(body, E.Bin) and body.op == "^" and body.a == start and isinstance(body.b, E.Bin) \
            and body.b.op == "<<" and body.b.a == E.Const(1) and start not in body.b.b.free_vars():
        pos = body.b.b
        p = _period(pos)
        if p is None:
            return None
        positions: dict[int, list[int]] = {}
        for c in range(p):
            v = pos.eval({J.name: c})
            if not isinstance(v, int) or not 0 <= v < 63:
                return None
            positions.setdefault(v, []).append(c)
        init = v0

        def closed(k, positions=positions, p=p, init=init):
            counts = {bit: _count_before(k, offs, p) for bit, offs in positions.items()}
            value: Expr = init
            for bit, cnt in sorted(counts.items()):
                value = E.binop("^", value, E.binop("*", E.binop("%", cnt, E.Const(2)), E.Const(1 << bit)))
            _BITFIELDS[value] = (init, counts)
            return value
        return closed
    return None


def phase_bit(bits: Expr, position: Expr) -> Expr | None:
    """Bit `position` of a bitfield with a registered closed form, as a cheap term."""
    info = _BITFIELDS.get(bits)
    if info is None:
        return None
    init, counts = info
    iv = init.eval({})
    if not isinstance(iv, int):
        return None
    out: Expr = E.binop("&", E.binop(">>", init, position), E.Const(1))
    for bit, cnt in sorted(counts.items(), reverse=True):
        flipped = E.binop("^", E.Const((iv >> bit) & 1), E.binop("%", cnt, E.Const(2)))
        out = E.ite(E.binop("==", position, E.Const(bit)), flipped, out)
    return out
