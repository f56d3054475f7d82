"""model/fast_eval.py: `evaluator(e)(env)` is `e.eval(env)`, value for value.

The race search and the step simulation evaluate an access's index at every lane through the
compiled form; these tests hold it to `Expr.eval` over random expressions with unknown values
(a variable the environment lacks), booleans mixed with integers, negative operands of `/` and
`%`, shifts out of range and short-circuits around unknowns.
"""

from __future__ import annotations

import random

from tkcheck.model import expr as E
from tkcheck.model.fast_eval import evaluator

OPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "==", "!=", "<", "<=", ">", ">=", "&&", "||"]
VARS = [E.TID, E.Var("k0", E.LOOP), E.Var("n"), E.Var("missing")]


def _random_expr(rng: random.Random, depth: int) -> E.Expr:
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.5:
            return rng.choice(VARS)
        return E.Const(rng.choice([0, 1, 2, 3, -1, -7, 31, 32, 63, 64, True, False]))
    kind = rng.random()
    if kind < 0.7:
        return E.Bin(rng.choice(OPS), _random_expr(rng, depth - 1), _random_expr(rng, depth - 1))
    if kind < 0.85:
        return E.Un(rng.choice(["!", "-", "~"]), _random_expr(rng, depth - 1))
    return E.Ite(_random_expr(rng, depth - 1), _random_expr(rng, depth - 1), _random_expr(rng, depth - 1))


def _outcome(f, env):
    try:
        v = f(env)
    except Exception as e:  # noqa: BLE001 - the same exception counts as the same answer
        return ("raises", type(e).__name__)
    return (type(v).__name__, v)


def test_evaluator_is_eval():
    rng = random.Random(13)
    defined = 0
    for _ in range(4000):
        e = _random_expr(rng, 5)
        f = evaluator(e)
        for _ in range(3):
            env = {
                "tid": rng.choice([0, 1, 31, 32, 200]),
                "k0": rng.choice([0, 1, 5, -3]),
                "n": rng.choice([0, 4, 128]),
            }
            want = _outcome(e.eval, env)
            assert _outcome(f, env) == want, (str(e), env)
            defined += want[1] is not None
    assert defined > 3000


def test_evaluator_reads_the_environment_at_each_call():
    f = evaluator(E.Bin("+", E.Bin("*", E.TID, E.Const(4)), E.Var("k0", E.LOOP)))
    env = {"tid": 3, "k0": 1}
    assert f(env) == 13
    env["tid"] = 5
    assert f(env) == 21
    assert f({"tid": 5}) is None
