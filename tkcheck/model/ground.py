"""The value z3 gives an expression's translation (`Expr.to_z3`) at one ground assignment.

`value(e, env)` is what `e.to_z3(zv)` equals once every variable is bound to the integer `env`
gives it, computed in Python with z3's semantics rather than C's (`Expr.eval`): unbounded
integers for `+ - *` and comparisons, the translation's `/` and `%` (None for a divisor that is
not positive: the translation makes a zero divisor a fresh unknown, and the walk never needs the
negative case), a low mask `x & (2^m - 1)` as `x mod 2^m`, the other bitwise operators through
64-bit vectors (`Int2BV`, `bvshl` / `bvlshr` giving 0 for a shift of 64 or more, `BV2Int`
signed), booleans as z3's `as_bool` / `as_int` convert them. None when a variable is unbound or
a value is undefined.

What it is for: a ground assignment that satisfies a formula proves the formula satisfiable, so
a question "does `p` hold for every value?" whose negation a candidate assignment satisfies is
answered "no" without a solver -- the solver could only have said "no" or "unknown" (frontend
walk, `_never`, where both mean the same).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from .expr import Bin, Const, Expr, Ite, Un, Var, _low_mask

_MOD64 = 1 << 64


def _as_bool(x: int | bool) -> bool:
    return x if isinstance(x, bool) else x != 0


def _as_int(x: int | bool) -> int:
    return int(x)


def _signed64(r: int) -> int:
    return r - _MOD64 if r >= 1 << 63 else r


def _div(a: int, b: int, mod: bool) -> int | None:
    """The translation's `If(a >= 0, a / b, -((-a) / b))` (and `%` alike) for b > 0."""
    if b <= 0:
        return None
    q, r = divmod(abs(a), b)
    v = r if mod else q
    return v if a >= 0 else -v


def value(e: Expr, env: Mapping[str, int]) -> int | bool | None:
    if isinstance(e, Const):
        v = e.value
        return v if isinstance(v, (bool, int)) else None
    if isinstance(e, Var):
        if e.is_bool:
            return None
        return env.get(e.name)
    if isinstance(e, Bin):
        x, y = value(e.a, env), value(e.b, env)
        if x is None or y is None:
            return None
        op = e.op
        if op == "&&":
            return _as_bool(x) and _as_bool(y)
        if op == "||":
            return _as_bool(x) or _as_bool(y)
        a, b = _as_int(x), _as_int(y)
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        if op == ">=":
            return a >= b
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return _div(a, b, False)
        if op == "%":
            return _div(a, b, True)
        if op == "&" and isinstance(e.b, Const) and _low_mask(e.b.value):
            return a % (b + 1)
        ua, ub = a % _MOD64, b % _MOD64
        if op == "&":
            return _signed64(ua & ub)
        if op == "|":
            return _signed64(ua | ub)
        if op == "^":
            return _signed64(ua ^ ub)
        if op == "<<":
            return _signed64((ua << ub) % _MOD64) if ub < 64 else 0
        if op == ">>":
            return _signed64(ua >> ub) if ub < 64 else 0
        return None
    if isinstance(e, Un):
        x = value(e.a, env)
        if x is None:
            return None
        if e.op == "!":
            return not _as_bool(x)
        if e.op == "-":
            return -_as_int(x)
        if e.op == "~":
            return -_as_int(x) - 1
        return None
    if isinstance(e, Ite):
        c, t, f = value(e.c, env), value(e.t, env), value(e.e, env)
        if c is None or t is None or f is None:
            return None
        if isinstance(t, bool) != isinstance(f, bool):
            t, f = _as_int(t), _as_int(f)
        return t if _as_bool(c) else f
    return None


# the candidates `satisfied_somewhere` tries: loop iterations from 0, thread ids at the ends of
# warps and warpgroups; at most _MAX_TRIES assignments (a miss costs a few milliseconds at most)
_MAX_TRIES = 512
_LOOP_VALUES = tuple(range(17))


def satisfied_somewhere(e: Expr, threads: int | None) -> bool:
    """True when some assignment the solver's kernel-value constraints allow (solver.py
    `_constraints`: loop counters >= 0, thread ids >= 0, `tid < threads` when the block size is
    known) makes `e`'s translation true; False when none of the candidates tried does (which
    proves nothing). Only expressions over loop counters (`k<n>`) and thread ids are tried."""
    names: list[str] = []
    choices: list[tuple[int, ...]] = []
    for v in sorted(e.free_vars(), key=lambda v: v.name):
        if v.is_bool:
            return False
        if v.kind == "loop" and v.name.startswith("k") and v.name[1:].isdigit():
            names.append(v.name)
            choices.append(_LOOP_VALUES)
        elif v.kind == "thread" and v.name == "tid":
            if threads is None or threads < 1:
                return False
            tids = {0, 1, 31, 32, threads - 1} | set(range(0, threads, 128))
            names.append(v.name)
            choices.append(tuple(sorted(t for t in tids if 0 <= t < threads)))
        elif v.kind == "thread" and v.name in ("tid_y", "tid_z"):
            names.append(v.name)
            choices.append((0, 1))
        else:
            return False
    if len(set(names)) != len(names):
        return False  # one name of two kinds: the translation keeps the first, not modelled here
    # narrow the loop counters' ranges until the product fits the tries
    while _product(choices) > _MAX_TRIES:
        widest = max(range(len(choices)), key=lambda i: len(choices[i]))
        if len(choices[widest]) <= 2:
            return False
        choices[widest] = choices[widest][: (len(choices[widest]) + 1) // 2]
    for values in itertools.product(*choices):
        got = value(e, dict(zip(names, values)))
        if got is not None and _as_bool(got):
            return True
    return False


def _product(choices: list[tuple[int, ...]]) -> int:
    n = 1
    for c in choices:
        n *= len(c)
    return n
