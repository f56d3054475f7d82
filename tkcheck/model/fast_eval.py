"""`Expr.eval` compiled once into nested closures, for the loops that evaluate one expression
at every thread of a block and every step of a loop (the race search's element per lane, the
step simulation's element per thread).

`evaluator(e)(env)` is `e.eval(env)`: the same value, the same None where a value is unknown,
and the same operations in the same order (so the same exception, should one arise); it only
skips the per-node dispatch `eval` does on the operator's name each time. An expression type
this module does not know is evaluated by its own `eval`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .expr import _ARITH, _CMP, Bin, Const, Expr, Ite, Un, Var, _cdiv, _cmod, _truth

Fn = Callable[[Mapping[str, Any]], Any]


def evaluator(e: Expr) -> Fn:
    """A function of an environment that returns what `e.eval(env)` returns."""
    t = type(e)
    if t is Const:
        value = e.value  # type: ignore[attr-defined]
        return lambda env: value
    if t is Var:
        name = e.name  # type: ignore[attr-defined]
        return lambda env: env.get(name)
    if t is Bin:
        return _bin(e)  # type: ignore[arg-type]
    if t is Un:
        return _un(e)  # type: ignore[arg-type]
    if t is Ite:
        return _ite(e)  # type: ignore[arg-type]
    return e.eval


def _bin(e: Bin) -> Fn:
    fa, fb, op = evaluator(e.a), evaluator(e.b), e.op
    if op == "&&":

        def conj(env):
            x = fa(env)
            if x is None:
                y = fb(env)
                return False if y is False or y == 0 else None
            return bool(x) and _truth(fb(env))

        return conj
    if op == "||":

        def disj(env):
            x = fa(env)
            if x is None:
                y = fb(env)
                return True if (y is not None and bool(y)) else None
            return True if x else _truth(fb(env))

        return disj
    if op in _CMP:
        cmp = _CMP[op]

        def compare(env):
            x = fa(env)
            y = fb(env)
            if x is None or y is None:
                return None
            return cmp(x, y)

        return compare
    if op == "/":

        def divide(env):
            x = fa(env)
            y = fb(env)
            if x is None or y is None:
                return None
            x, y = int(x), int(y)
            # the non-negative case of `_cdiv` (truncation is the floor there)
            return x // y if x >= 0 and y > 0 else _cdiv(x, y)

        return divide
    if op == "%":

        def modulo(env):
            x = fa(env)
            y = fb(env)
            if x is None or y is None:
                return None
            x, y = int(x), int(y)
            return x % y if x >= 0 and y > 0 else _cmod(x, y)

        return modulo
    if op == "+":

        def add(env):
            x = fa(env)
            y = fb(env)
            if x is None or y is None:
                return None
            return int(x) + int(y)

        return add
    if op == "*":

        def mul(env):
            x = fa(env)
            y = fb(env)
            if x is None or y is None:
                return None
            return int(x) * int(y)

        return mul

    def arith(env):
        x = fa(env)
        y = fb(env)
        if x is None or y is None:
            return None
        x, y = int(x), int(y)
        return _ARITH[op](x, y)

    return arith


def _un(e: Un) -> Fn:
    fa, op = evaluator(e.a), e.op
    if op == "!":

        def not_(env):
            x = fa(env)
            return None if x is None else not x

        return not_
    if op == "-":

        def neg(env):
            x = fa(env)
            return None if x is None else -int(x)

        return neg

    def inv(env):
        x = fa(env)
        return None if x is None else ~int(x)

    return inv


def _ite(e: Ite) -> Fn:
    fc, ft, fe = evaluator(e.c), evaluator(e.t), evaluator(e.e)

    def choose(env):
        c = fc(env)
        if c is None:
            a, b = ft(env), fe(env)
            return a if a is not None and a == b else None
        return ft(env) if c else fe(env)

    return choose
