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
`check()` through `checked()` (or `timed_check()`), so that the budget applies
and unknowns are counted in one place. The limits, the ledger and the solver
time belong to one check (`SolverContext`, set by `session()` for the
duration of the check): two checks with different budgets in one process answer
as two processes would.

The `timeout_ms` argument of `always` / `witness` / `differ_always` is accepted for the callers
that still pass one and ignored: the current check's context decides.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import z3

from .model import expr as E

from .solver_limits import DEFAULT_BUDGET, DEFAULT_SAFETY_NET_MS


@dataclass(frozen=True)
class Inconclusive:
    """One query that ended unknown: why (z3's reason) and the scopes (fact/rule) it ran in."""

    reason: str
    scope: tuple[str, ...]


@dataclass
class SolverContext:
    """Everything of one check the solver keeps: its limits, the ledger of inconclusive proofs,
    the fact/rule scopes open now and the seconds spent in z3. One is made per check
    (`session`); nothing of a check lives in a module global, so that one process (the language
    server, a worker checking many files) runs checks with different budgets one after another
    and each gets the answers a process of its own would."""

    budget: int = DEFAULT_BUDGET
    safety_net_ms: int = DEFAULT_SAFETY_NET_MS
    ledger: list[Inconclusive] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # the decided answers of `always` in this check's z3 context, by (predicate, assumptions,
    # budget): a check asks the same question many times (a branch's guard at each op under it, a
    # phase at each wait). Emptied with the context (`fresh_context`), so that a file's answers
    # never depend on the files checked before.
    answers: dict[tuple, bool] = field(default_factory=dict)
    # the questions of `always` whose budget z3 spent, by the same key: the step budget is
    # deterministic, so asking again spends it again; the answer is counted again (one
    # inconclusive proof per asking, as if asked) without running z3. An unknown of the wall-clock
    # safety net or of any other cause is not kept: it is asked again.
    spent: set[tuple] = field(default_factory=set)
    # the z3 context every z3 object of this check is made in (`fresh_context`, or z3's own
    # `main_ctx()` at the check's first term: see `session`); read it through `z3ctx`
    made_z3ctx: Any = None
    # what the front end and the checks remember during one check (`memo`): by name, a dict
    memos: dict[str, dict] = field(default_factory=dict)

    @property
    def z3ctx(self) -> Any:
        """The z3 context of this check: made on first use when the check has made none yet
        (a check that asks z3 nothing, a kernel with no synchronisation, makes none)."""
        if self.made_z3ctx is None and _CURRENT.get() is self:
            self.made_z3ctx = z3.main_ctx()  # z3's default is None inside a session until used
        return self.made_z3ctx

    @z3ctx.setter
    def z3ctx(self, c: Any) -> None:
        self.made_z3ctx = c


_ALWAYS_MAX = 20_000


# The check running now in this thread (or asyncio task). A ContextVar rather than an argument
# handed down: the limits are read at the few places a z3 solver is made or asked (`limited`,
# `checked`), hundreds of calls below the check's entry, and a ContextVar is per thread and per
# task, so a server thread checking a buffer and another process-wide caller never see each
# other's budget. Outside any session (a test asking `always` directly) a context with the
# default limits is made for the call's thread on first use.
_CURRENT: ContextVar[SolverContext | None] = ContextVar("tkcheck_solver_context", default=None)


def current() -> SolverContext:
    """The solver context of the check running now (a default one outside any `session`)."""
    ctx = _CURRENT.get()
    if ctx is None:
        ctx = SolverContext()
        _CURRENT.set(ctx)
    return ctx


@contextmanager
def session(budget: int | None = None, safety_net_ms: int | None = None) -> Iterator[SolverContext]:
    """One check's solver context: `budget` z3 rlimit steps per query, `safety_net_ms` the
    wall-clock net, and a z3 context of its own (`fresh_context`): every z3 term, solver and
    model the check makes lives in it, so the check's answers do not depend on what this process
    solved before. The outer solver context and z3 context are restored on exit."""
    ctx = SolverContext(
        budget=max(int(budget), 1) if budget is not None else DEFAULT_BUDGET,
        safety_net_ms=max(int(safety_net_ms), 1) if safety_net_ms is not None else DEFAULT_SAFETY_NET_MS,
    )
    outer_z3 = _z3_main_context()
    token = _CURRENT.set(ctx)
    try:
        # z3's default context is None until the check makes its first term or solver, when
        # z3's `main_ctx()` makes a new one for it: a context of the check's own, as
        # `fresh_context` makes, but only when the check uses z3 (making and deleting a context
        # was a tenth of the check of a small kernel that asks z3 nothing)
        _install_z3_context(None)
        yield ctx
    finally:
        _CURRENT.reset(token)
        ctx.answers.clear()
        _install_z3_context(outer_z3)


def _z3_main_context() -> Any:
    """z3's default context now (the one `z3.Int(...)` etc. use when given none), or None."""
    return z3.z3._main_ctx  # noqa: SLF001 - z3's module global; see fresh_context


def _install_z3_context(c: Any) -> None:
    z3.z3._main_ctx = c  # noqa: SLF001


def fresh_context() -> None:
    """Give the current check a new z3 context, made the default one, so that its queries do not
    depend on the queries of checks before it in the same process (z3's heuristics, and so its
    models and counterexamples, follow the term ids and the caches of the context a term is made
    in). Every z3 object of tkcheck is made without an explicit context (`z3.BitVec(...)`,
    `z3.Solver()`), which z3 puts in its default context: the module global `z3.z3._main_ctx`
    (not the package's attribute `z3._main_ctx`, which z3's `main_ctx()` never reads: until round 8
    this function set that one, and every check of a process shared one z3 context). Checks in one
    process run one at a time (libclang and z3 are not thread-safe), each in its own context; the
    decided answers kept for the old context go with it."""
    c = z3.Context()
    current().z3ctx = c
    _install_z3_context(c)
    current().answers.clear()
    current().spent.clear()


def memo(name: str) -> dict:
    """A dict that lives as long as the current check (`session`): what a module remembers while
    it checks one file (answers already proved, closed forms already derived, names read from a
    translation unit). Not a module global: what one check remembered must not change what a
    later check of the same process asks z3 or answers (a worker or the language server checks
    many files one after the other, each as a process of its own would)."""
    memos = current().memos
    d = memos.get(name)
    if d is None:
        d = memos[name] = {}
    return d


@contextmanager
def scope(label: str) -> Iterator[None]:
    """Attribute the inconclusive queries run inside to `label` (a fact or a rule)."""
    scopes = current().scopes
    scopes.append(label)
    try:
        yield
    finally:
        scopes.pop()


def inconclusive_count() -> int:
    return len(current().ledger)


def inconclusive_since(mark: int) -> list[Inconclusive]:
    return list(current().ledger[mark:])


# z3 has no type information: its solvers, answers and terms are `Any` here


def limited(s: Any) -> Any:
    """A z3 Solver or Optimize with the current check's budget and safety net applied."""
    ctx = current()
    s.set("rlimit", ctx.budget)
    s.set("timeout", ctx.safety_net_ms)
    return s


def timed_check(s: Any, *assumptions: Any) -> Any:
    """`s.check()`, its seconds added to the current check's (`--timing`); nothing recorded."""
    ctx = current()
    t0 = time.perf_counter()
    try:
        return s.check(*assumptions)
    finally:
        ctx.seconds += time.perf_counter() - t0


def checked(s: Any, *assumptions: Any) -> Any:
    """`s.check()`, with an unknown answer recorded as an inconclusive proof."""
    r = timed_check(s, *assumptions)
    if r == z3.unknown:
        try:
            reason = s.reason_unknown() or "unknown"
        except z3.Z3Exception:
            reason = "unknown"
        ctx = current()
        ctx.ledger.append(Inconclusive(_reason_text(reason, ctx), tuple(ctx.scopes)))
    return r


def _reason_text(reason: str, ctx: SolverContext) -> str:
    if "resource limit" in reason or reason == "canceled":
        return f"solver budget of {ctx.budget} steps spent"
    if "timeout" in reason:
        return f"wall-clock safety net of {ctx.safety_net_ms} ms reached"
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
    ctx = current()
    key = (pred, tuple(assume), ctx.budget)
    got = ctx.answers.get(key)
    if got is not None:
        return got
    if key in ctx.spent:
        ctx.ledger.append(Inconclusive(_reason_text("max. resource limit exceeded", ctx), tuple(ctx.scopes)))
        return None
    s, _ = _solver(pred, assume, negate=True)
    if s is None:
        return None
    r = checked(s)
    answer = True if r == z3.unsat else False if r == z3.sat else None
    if answer is not None:
        if len(ctx.answers) >= _ALWAYS_MAX:
            ctx.answers.clear()
        ctx.answers[key] = answer
    elif _budget_spent(s):
        if len(ctx.spent) >= _ALWAYS_MAX:
            ctx.spent.clear()
        ctx.spent.add(key)
    return answer


def _budget_spent(s: Any) -> bool:
    """Did z3 answer unknown because the step budget (rlimit) ran out -- a deterministic cause?

    z3 names a spent rlimit "max. resource limit exceeded" in some of its procedures and
    "canceled" in others (its arithmetic over `%` and bit-vector `^`, `(it % 2) != ((it % 2) ^ 1)`:
    "canceled" at budget 3000); the wall-clock limit is "timeout". Both rlimit answers are kept in
    `spent`, as `_reason_text` already counts both as the budget spent (issue 29: the "canceled"
    one was asked again at every class pair of the race search, thousands of identical z3 runs on
    corpus/idioms12/dsmem_halo_split.cu that did not finish in 400 s)."""
    try:
        reason = s.reason_unknown() or ""
    except z3.Z3Exception:
        return False
    return "resource limit" in reason or reason == "canceled"


def smallest_model(assertions: Iterable[Any], zv: E.Z3Vars, first: Iterable[Any] = ()) -> Any | None:
    """The model of `assertions` that is lexicographically smallest in `first` (z3 terms, in order)
    and then in every variable of `zv` (in the order the query named them): a non-negative
    variable by its value, a Boolean false before true, an unconstrained unknown (`?...`) by its
    magnitude, then non-negative first. Any model z3 gives is a function of z3's whole process
    history (a fresh z3 context per check is not enough: the same query in a fresh context
    after other contexts were used gives another model), so a value shown to the user or steering
    what is checked next is taken from this one, which is unique. None when z3 cannot tell the
    optimum within the check's budget; the caller then keeps the model it has. Not counted as an
    inconclusive proof: the question (is there a model) is already decided."""
    first = list(first)
    if not first and not any(z3.is_bool(v) or z3.is_int(v) for _, v in zv.items()):
        return None  # no value to choose: z3's model is the only one
    opt = limited(z3.Optimize())
    opt.add(*assertions)
    for t in first:
        opt.minimize(t)
    for name, v in zv.items():
        if z3.is_bool(v):
            opt.minimize(z3.If(v, 1, 0))
        elif z3.is_int(v) and name.startswith("?"):
            opt.minimize(z3.If(v >= 0, v, -v))
            opt.minimize(z3.If(v >= 0, 0, 1))
        elif z3.is_int(v):
            opt.minimize(v)
    try:
        if timed_check(opt) != z3.sat:
            return None
        return opt.model()
    except z3.Z3Exception:
        return None


def witness(pred: E.Expr, timeout_ms: int | None = None, assume: tuple = ()) -> dict[str, int] | None:
    """Values of the free variables making `pred` true, or None (none exists, or unknown): the
    smallest such values (`smallest_model`) where z3 finds them within the budget. A caller that
    needs only whether values exist asks `feasible`."""
    s, zv = _solver(pred, assume, negate=False)
    if s is None or checked(s) != z3.sat:
        return None
    m = smallest_model(s.assertions(), zv) or s.model()
    out: dict[str, int] = {}
    for name, v in zv.items():
        val = m.eval(v, model_completion=True)
        try:
            out[name] = val.as_long() if z3.is_int_value(val) else bool(z3.is_true(val))
        except AttributeError:
            pass
    return out


def feasible(pred: E.Expr, timeout_ms: int | None = None, assume: tuple = ()) -> bool:
    """Some values of the free variables make `pred` true (`witness(...) is not None`, without
    the values): False when none exists or z3 cannot tell (counted as inconclusive)."""
    s, _ = _solver(pred, assume, negate=False)
    return s is not None and checked(s) == z3.sat


def differ_always(a: E.Expr, b: E.Expr, timeout_ms: int | None = None) -> bool | None:
    """True if a != b for every value of the free variables (a proved mismatch)."""
    ca, cb = a.eval({}), b.eval({})
    if ca is not None and cb is not None:
        return ca != cb
    if a.is_opaque() or b.is_opaque():
        return None
    return always(E.binop("!=", a, b))
