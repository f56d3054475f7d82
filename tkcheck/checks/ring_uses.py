"""Uses of a ring's elements that a single period does not count: a ring restarted in every task
of a persistent loop, and element sequences that visit an element more than once a period.

`phases` counts the completions an element had before a wait's use as `use = k / p`, p the
proved period in which every element is visited once (a stage `k % S`). Two shapes fall outside:

* **A ring restarted per task.** In a (task, k) nest whose inner trip count T is a constant, a
  wait whose index and parity read the inner counter k alone (`s = c % S` with `c` reset at every
  task) visits at the flat step F = T task + k the element its first task visited at step
  F % T: k = F % T exactly, since 0 <= k < T. Its uses are then one sequence over F
  (`restarted_flat`), like those of a ring carried across tasks.
* **Uneven visits.** Over F, such a ring's element sequence has period T but, when S does not
  divide T (8 chunks a task over 3 stages: 0 1 2 0 1 2 0 1 | 0 1 2 ...), elements come back
  within a period and the counts per period differ (3, 3, 2). The uses of the element visited at
  step v before v are then (v / p) U[e] + B[v % p], U[e] the visits of e in a period and B[r]
  the visits of the same element at the steps before r of the period, tabulated from the
  period's p concrete elements (`counted_uses`). One visit per period (U = 1, B = 0) is
  `v / p` again.

Both are exact rewritings of the wait's own use count; the proof over it is `phases`' as before."""

from __future__ import annotations

from ..model import expr as E
from ..model import ir

# the longest period tabulated (the steps of one task of a restarted ring)
MAX_TABULATED = 64


def restarted_flat(O: ir.Loop, I: ir.Loop, F: E.Var, index, parity) -> tuple[tuple[E.Expr, ...], E.Expr] | None:
    """(index, parity) over the flat step F of a wait in the (O, I) nest whose index and parity
    read I's counter alone, I's trip count a constant T >= 1: the values at k = F % T. None for
    any other wait (O's counter or an unknown read, a trip count that is not a constant)."""
    T = I.trip.eval({}) if I.trip is not None else None
    if not isinstance(T, int) or isinstance(T, bool) or not 1 <= T <= MAX_TABULATED:
        return None
    loop_vars = {v for x in tuple(index) + (parity,) for v in x.free_vars() if v.kind == E.LOOP}
    if loop_vars != {I.counter} or any(x.is_opaque() for x in tuple(index) + (parity,)):
        return None
    at = {I.counter.name: E.binop("%", F, E.Const(T))}
    return tuple(E.substitute(ix, at) for ix in index), E.substitute(parity, at)


def counted_uses(
    index: tuple[E.Expr, ...], k: E.Var, timeout: int, assume: tuple[E.Expr, ...] = ()
) -> tuple[E.Expr, E.Expr] | None:
    """(the uses of step k's element before step k, the period p) for an element sequence that
    is a function of k alone with a constant period p <= MAX_TABULATED (z3: the index at k + p is
    the index at k, for every k >= 0), tabulated over one period. None otherwise."""
    from .. import solver

    if not index or any(v != k for ix in index for v in ix.free_vars()):
        return None
    moduli: list[int] = []
    for ix in index:
        for x in E.subexprs(ix):
            if isinstance(x, E.Bin) and x.op == "%" and isinstance(x.b, E.Const):
                n = x.b.value
                if isinstance(n, int) and not isinstance(n, bool) and 1 < n <= MAX_TABULATED and n not in moduli:
                    moduli.append(n)
    if not moduli:
        return None
    lcm = 1
    for n in moduli:
        lcm = lcm * n // _gcd(lcm, n)
    candidates = sorted(set(moduli) | ({lcm} if lcm <= MAX_TABULATED else set()))
    nonneg = (E.binop(">=", k, E.Const(0)),) + tuple(assume)
    for p in candidates:
        shifted = {k.name: E.binop("+", k, E.Const(p))}
        same = E.conj(*[E.binop("==", E.substitute(ix, shifted), ix) for ix in index])
        if solver.always(same, timeout, assume=nonneg) is not True:
            continue
        elems = [tuple(ix.eval({k.name: r}) for ix in index) for r in range(p)]
        if any(not isinstance(x, int) or isinstance(x, bool) for e in elems for x in e):
            return None
        visits = {e: elems.count(e) for e in elems}
        before = [elems[:r].count(elems[r]) for r in range(p)]
        rnd = E.binop("/", k, E.Const(p))
        pos = E.binop("%", k, E.Const(p))
        use: E.Expr = E.binop("+", E.binop("*", rnd, E.Const(visits[elems[p - 1]])), E.Const(before[p - 1]))
        for r in range(p - 2, -1, -1):
            here = E.binop("+", E.binop("*", rnd, E.Const(visits[elems[r]])), E.Const(before[r]))
            use = E.ite(E.binop("==", pos, E.Const(r)), here, use)
        return use, E.Const(p)
    return None


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
