"""model/ground.py: the value of an expression's z3 translation at a ground assignment.

`_never` (frontend walk) skips the solver when a candidate assignment satisfies the negated
question, so `ground.value` must agree with z3 wherever it answers; these tests hold it to z3's
own evaluation of `Expr.to_z3` over random expressions (negative operands, shifts of 64 and
more, low masks, booleans mixed with integers), and check the search itself on the shift
closed forms that motivated it.
"""

from __future__ import annotations

import random

import z3

from tkcheck.model import expr as E
from tkcheck.model.ground import satisfied_somewhere, value

K0 = E.Var("k0", E.LOOP)
K1 = E.Var("k1", E.LOOP)
OPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "==", "!=", "<", "<=", ">", ">=", "&&", "||"]


def _random_expr(rng: random.Random, depth: int) -> E.Expr:
    if depth == 0 or rng.random() < 0.25:
        pick = rng.random()
        if pick < 0.3:
            return K0
        if pick < 0.5:
            return E.TID
        if pick < 0.55:
            return E.Const(rng.choice([True, False]))
        return E.Const(rng.choice([0, 1, 2, 3, 7, 31, 63, 64, 65, -1, -5, 1 << 40, 1023]))
    kind = rng.random()
    if kind < 0.7:
        return E.Bin(rng.choice(OPS), _random_expr(rng, depth - 1), _random_expr(rng, depth - 1))
    if kind < 0.85:
        return E.Un(rng.choice(["!", "-", "~"]), _random_expr(rng, depth - 1))
    return E.Ite(_random_expr(rng, depth - 1), _random_expr(rng, depth - 1), _random_expr(rng, depth - 1))


def _z3_value(e: E.Expr, env: dict[str, int]):
    zv = E.Z3Vars()
    try:
        term = e.to_z3(zv)
    except (z3.Z3Exception, TypeError):
        return "untranslatable"
    subs = [(z, z3.IntVal(env[name])) for name, z in zv.items() if not name.startswith("?")]
    got = z3.simplify(z3.substitute(term, *subs) if subs else term)
    if z3.is_true(got):
        return True
    if z3.is_false(got):
        return False
    if z3.is_int_value(got):
        return got.as_long()
    return "not ground"


def test_value_agrees_with_z3_on_random_expressions():
    rng = random.Random(2026)
    compared = 0
    for _ in range(800):
        e = _random_expr(rng, 4)
        env = {"k0": rng.choice([0, 1, 3, 5, 16, 63, 64, 70]), "tid": rng.choice([0, 1, 31, 32, 127, 511])}
        mine = value(e, env)
        if mine is None:
            continue  # undefined here (a non-positive divisor): the search never uses it
        theirs = _z3_value(e, env)
        if theirs == "untranslatable":
            continue
        assert theirs == mine and isinstance(theirs, bool) == isinstance(mine, bool), (str(e), env, mine, theirs)
        compared += 1
    assert compared > 300


def _shift_form(k: E.Expr, j: E.Expr) -> E.Expr:
    """The bitonic network's stride `((2 << k) >> 1) >> j` (k, j the two loops' iterations)."""
    return E.Bin(">>", E.Bin(">>", E.Bin("<<", E.Const(2), k), E.Const(1)), j)


def test_search_finds_an_iteration_of_shift_closed_forms():
    stride = _shift_form(K0, K1)
    assert satisfied_somewhere(E.Bin("<=", stride, E.Const(32)), 512)
    assert satisfied_somewhere(E.Bin(">", stride, E.Const(32)), 512)  # needs k0 >= 6
    # a power of two (or zero) is never 3: nothing found, and nothing claimed
    assert not satisfied_somewhere(E.Bin("==", stride, E.Const(3)), 512)


def test_search_keeps_thread_ids_inside_the_block():
    # tid == 600 has no thread in a block of 512: no candidate may claim one
    assert not satisfied_somewhere(E.Bin("==", E.TID, E.Const(600)), 512)
    assert satisfied_somewhere(E.Bin("==", E.TID, E.Const(511)), 512)
    assert not satisfied_somewhere(E.Bin("==", E.TID, E.Const(0)), None)  # block size unknown: no search


def test_search_declines_values_it_does_not_model():
    param = E.Var("n", E.PARAM)
    assert not satisfied_somewhere(E.Bin(">=", param, E.Const(0)), 128)
    assert not satisfied_somewhere(E.Var("flag", E.LOOP, is_bool=True), 128)
