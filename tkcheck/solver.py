"""z3 with a deterministic budget: `always`, `witness` and `differ_always` answer True/False (or a
model) when proved, None when unknown. Unknown is never turned into a finding.

The budget is z3's resource limit (`rlimit`): a count of the solver's own
steps, so a query gets the same answer on every machine and under any load.
Each query may use `budget` steps (`--solver-budget`); a wall-clock limit
(`--solver-timeout`) stays only as a safety net far above it. A query that
ends `unknown` (budget spent, safety net, or an incomplete theory) is an
*inconclusive proof*: it is counted in the ledger (`inconclusive_count`,
`inconclusive_since`), which the engine reports per kernel (coverage,
`--statistics`, `--show-unknown`) and which keeps the file's result out of the
cache.

Every z3 Solver/Optimize a check creates goes through `limited()` and its
`check()` through `checked()`, so that the budget applies and unknowns are
counted in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import z3

from .model import expr as E

from .solver_limits import DEFAULT_BUDGET, DEFAULT_SAFETY_NET_MS


@dataclass
class Limits:
    budget: int = DEFAULT_BUDGET
    safety_net_ms: int = DEFAULT_SAFETY_NET_MS


LIMITS = Limits()


@dataclass(frozen=True)
class Inconclusive:
    """One query that ended unknown: why (z3's reason) and the scopes (fact/rule) it ran in."""

    reason: str
    scope: tuple[str, ...]


_LEDGER: list[Inconclusive] = []
_SCOPE: list[str] = []
# the decided answers of `always` in the current z3 context, by (predicate, assumptions, budget):
# a check asks the same question many times (a branch's guard at each op under it, a phase at
# each wait); an unknown answer is not kept (it is asked, and counted, again). Emptied with the
# context (`fresh_context`), so that a file's answers never depend on the files checked before.
_ALWAYS: dict[tuple, bool] = {}
_ALWAYS_MAX = 20_000


def configure(budget: int | None = None, safety_net_ms: int | None = None) -> None:
    """Set the per-query budget (z3 rlimit steps) and the wall-clock safety net (ms)."""
    if budget is not None:
        LIMITS.budget = max(int(budget), 1)
    if safety_net_ms is not None:
        LIMITS.safety_net_ms = max(int(safety_net_ms), 1)


def fresh_context() -> None:
    """Start z3's main context afresh, so that a file's queries do not depend on the queries
    of files checked before it in the same process (z3's heuristics follow term ids)."""
    z3.main_ctx()  # make sure one exists before it is replaced
    z3._main_ctx = None  # noqa: SLF001 - z3 creates a new one at the next main_ctx()
    _ALWAYS.clear()


@contextmanager
def scope(label: str) -> Iterator[None]:
    """Attribute the inconclusive queries run inside to `label` (a fact or a rule)."""
    _SCOPE.append(label)
    try:
        yield
    finally:
        _SCOPE.pop()


def inconclusive_count() -> int:
    return len(_LEDGER)


def inconclusive_since(mark: int) -> list[Inconclusive]:
    return list(_LEDGER[mark:])


def reset_ledger() -> None:
    _LEDGER.clear()


# z3 has no type information: its solvers, answers and terms are `Any` here


def limited(s: Any) -> Any:
    """A z3 Solver or Optimize with the budget and the safety net applied."""
    s.set("rlimit", LIMITS.budget)
    s.set("timeout", LIMITS.safety_net_ms)
    return s


def checked(s: Any, *assumptions: Any) -> Any:
    """`s.check()`, with an unknown answer recorded as an inconclusive proof."""
    r = s.check(*assumptions)
    if r == z3.unknown:
        try:
            reason = s.reason_unknown() or "unknown"
        except z3.Z3Exception:
            reason = "unknown"
        _LEDGER.append(Inconclusive(_reason_text(reason), tuple(_SCOPE)))
    return r


def _reason_text(reason: str) -> str:
    if "resource limit" in reason or reason == "canceled":
        return f"solver budget of {LIMITS.budget} steps spent"
    if "timeout" in reason:
        return f"wall-clock safety net of {LIMITS.safety_net_ms} ms reached"
    return f"solver answered unknown ({reason})"


_LAUNCH_DIMS = {f"{b}.{f}" for b in ("gridDim", "blockDim", "clusterDim") for f in "xyz"}


def _constraints(zv: E.Z3Vars, extra: Iterable[Any] = ()) -> list[Any]:
    cs = list(extra)
    names = dict(zv.items())
    for name, v in names.items():
        if name.startswith("k") and name[1:].isdigit():
            cs.append(v >= 0)  # loop iteration counters
        elif name in _LAUNCH_DIMS and z3.is_int(v):
            cs.append(v >= 1)  # launch dimensions are at least 1
        elif not name.startswith("?"):
            cs.append(v >= 0)  # sizes, counts and indices kernels use are non-negative
    for f in "xyz":  # blockIdx.x < gridDim.x
        i, n = names.get(f"blockIdx.{f}"), names.get(f"gridDim.{f}")
        if i is not None and n is not None and z3.is_int(i) and z3.is_int(n):
            cs.append(i < n)
    return cs


def _solver(pred: E.Expr, assume: tuple[E.Expr, ...], negate: bool) -> tuple[Any, E.Z3Vars]:
    """A solver holding the kernel-value constraints, the assumptions and `pred`
    (or its negation); None when the expression cannot be translated."""
    zv = E.Z3Vars()
    try:
        zp = E.as_bool(pred.to_z3(zv))
        za = [E.as_bool(a.to_z3(zv)) for a in assume]
    except (z3.Z3Exception, TypeError):
        return None, zv
    s = limited(z3.Solver())
    s.add(*_constraints(zv, za))
    s.add(z3.Not(zp) if negate else zp)
    return s, zv


def always(pred: E.Expr, timeout_ms: int | None = None, assume: tuple = ()) -> bool | None:
    """True if `pred` holds for every value of its free variables; None when unknown.

    `timeout_ms` is accepted for compatibility and ignored: the budget decides."""
    if isinstance(pred, E.Const):
        return bool(pred.value)
    key = (pred, tuple(assume), LIMITS.budget)
    got = _ALWAYS.get(key)
    if got is not None:
        return got
    s, _ = _solver(pred, assume, negate=True)
    if s is None:
        return None
    r = checked(s)
    answer = True if r == z3.unsat else False if r == z3.sat else None
    if answer is not None:
        if len(_ALWAYS) >= _ALWAYS_MAX:
            _ALWAYS.clear()
        _ALWAYS[key] = answer
    return answer


def witness(pred: E.Expr, timeout_ms: int | None = None, assume: tuple = ()) -> dict[str, int] | None:
    """Values of the free variables making `pred` true, or None (none exists, or unknown)."""
    s, zv = _solver(pred, assume, negate=False)
    if s is None or checked(s) != z3.sat:
        return None
    m = s.model()
    out: dict[str, int] = {}
    for name, v in zv.items():
        val = m.eval(v, model_completion=True)
        try:
            out[name] = val.as_long() if z3.is_int_value(val) else bool(z3.is_true(val))
        except AttributeError:
            pass
    return out


def differ_always(a: E.Expr, b: E.Expr, timeout_ms: int | None = None) -> bool | None:
    """True if a != b for every value of the free variables (a proved mismatch)."""
    ca, cb = a.eval({}), b.eval({})
    if ca is not None and cb is not None:
        return ca != cb
    if a.is_opaque() or b.is_opaque():
        return None
    return always(E.binop("!=", a, b))
