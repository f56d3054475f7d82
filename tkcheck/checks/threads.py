"""Which threads run an op: the guard of every op enumerated over the block.

A guard is a predicate over `tid`; with a known block size the set of threads
that satisfy it is computed exactly by enumeration (at most 1024 threads).
A guard that also depends on loop counters, runtime values or something the
front end could not model gives None: unknown, never a guess.
"""

from __future__ import annotations

from typing import Any

from ..model import expr as E
from ..model import ir
from ..model.threads import threads_satisfying


_ROUND_PERIOD_MAX = 64  # the longest period of a per-iteration thread choice enumerated
_ITERATIONS_MAX = 200_000  # thread-iterations enumerated by `over_iterations`


class ThreadSets:
    def __init__(self, model: ir.KernelModel):
        self.model = model
        self.n = model.num_threads()
        self._cache: dict[int, frozenset[int] | None] = {}
        self._rounds: dict[tuple, Any] = {}  # rounds() pairs and over_iterations() sets, by key

    def satisfying(self, pred: E.Expr) -> frozenset[int] | None:
        if self.n is None:
            return None
        fv = pred.free_vars()
        if any(v.kind != E.THREAD for v in fv):
            return None
        return threads_satisfying(pred, self.n)

    def executing(self, op: ir.Op) -> frozenset[int] | None:
        """Threads that reach `op` (per execution of its enclosing iteration)."""
        key = id(op)
        if key in self._cache:
            return self._cache[key]
        res = None
        if op.guard.exact:
            res = self.satisfying(op.guard.thread)
        self._cache[key] = res
        return res

    def reach_bound(self, op: ir.Op) -> frozenset[int] | None:
        """Threads that may reach `op`: `executing` for an exact guard; for a guard inexact only
        through a `__shared__` flag it tests (`if (am_last && t < 128)`: the flag a value of the
        block's shared memory), the threads its thread guard names -- those that reach it when the
        flag holds, and no other thread ever does. None otherwise."""
        if op.guard.exact:
            return self.executing(op)
        g = op.guard
        if g.blind or not g.opaque:
            return None
        if not all(v.name.startswith("?shared:") for c in g.opaque for v in c.free_vars()):
            return None
        return self.satisfying(g.thread)

    def issuers(self, op: ir.Op) -> frozenset[int] | None:
        """Threads that execute the underlying PTX: for group-scoped ops only the
        elected lane (lane 0 of each group instance) issues."""
        ex = self.executing(op)
        if ex is None:
            return None
        if op.issuers_per_group and op.group_warps > 0:
            size = 32 * op.group_warps
            return frozenset(t for t in ex if t % size == 0)
        return ex

    def per_round(self, op: ir.Op) -> tuple[frozenset[int], frozenset[int]] | None:
        """For an op whose thread guard also tests one loop counter periodically (a warp picked
        by the iteration: `if (warpid() == iter % 4)`): (the threads that issue it in some
        iteration, the issuers of iteration 0), when every iteration has as many issuers as
        iteration 0 -- proved: the guard is periodic in the counter (z3, every counter value
        >= 0 and every thread) and the issuers of each residue are enumerated. None otherwise
        (and for guards that `issuers` already answers)."""
        key = ("per_round", id(op))
        if key in self._rounds:
            return self._rounds[key]
        res = self._per_round(op)
        self._rounds[key] = res
        return res

    def _per_round(self, op: ir.Op) -> tuple[frozenset[int], frozenset[int]] | None:
        from .. import solver

        g = op.guard
        if self.n is None or not g.exact or g.thread.is_opaque():
            return None
        fv = g.thread.free_vars()
        loops = [v for v in fv if v.kind == E.LOOP]
        if len(loops) != 1 or any(v.kind not in (E.LOOP, E.THREAD) for v in fv):
            return None
        k = loops[0]
        if k not in {self.model.loops[i].counter for i in op.loops if i in self.model.loops}:
            return None
        period = 1
        for x in E.subexprs(g.thread):
            if isinstance(x, E.Bin) and x.op == "%" and k in x.a.free_vars():
                m = x.b.eval({}) if isinstance(x.b, E.Const) else None
                if not isinstance(m, int) or isinstance(m, bool) or not 0 < m <= _ROUND_PERIOD_MAX:
                    return None
                from math import gcd

                period = period * m // gcd(period, m)
        if period > _ROUND_PERIOD_MAX:
            return None
        shifted = E.substitute(g.thread, {k.name: E.binop("+", k, E.Const(period))})
        same = E.binop("==", shifted, g.thread)
        if solver.always(same, None, assume=(E.binop("<", E.Var("tid", E.THREAD), E.Const(self.n)),)) is not True:
            return None
        union: set[int] = set()
        first: frozenset[int] | None = None
        size = 32 * op.group_warps if op.issuers_per_group and op.group_warps > 0 else 1
        for j in range(period):
            ts = threads_satisfying(E.substitute(g.thread, {k.name: E.Const(j)}), self.n)
            if ts is None:
                return None
            iss = frozenset(t for t in ts if t % size == 0)
            if first is None:
                first = iss
            elif len(iss) != len(first):
                return None
            union |= iss
        assert first is not None
        return frozenset(union), first

    def over_iterations(self, op: ir.Op) -> frozenset[int] | None:
        """The threads that issue `op` in some iteration of its loops, for a guard over the
        thread and the counters of its own loops whose trip counts are numbers per thread (a
        ragged tail: `if (t == last) arrive_drop(..)` in `for (t = 0; t <= last; t++)`, `last`
        the warp's): every thread's iterations enumerated (at most `_ITERATIONS_MAX` in all).
        None otherwise."""
        key = ("iterations", id(op))
        if key not in self._rounds:
            self._rounds[key] = self._over_iterations(op)
        return self._rounds[key]

    def _over_iterations(self, op: ir.Op) -> frozenset[int] | None:
        g = op.guard
        if self.n is None or not g.exact or g.thread.is_opaque():
            return None
        loops = [self.model.loops[i] for i in op.loops if i in self.model.loops]
        if len(loops) != len(op.loops) or any(lp.trip is None for lp in loops):
            return None
        names = {lp.counter.name for lp in loops}
        if any(v.kind != E.THREAD and v.name not in names for v in g.thread.free_vars()):
            return None
        size = 32 * op.group_warps if op.issuers_per_group and op.group_warps > 0 else 1
        out: set[int] = set()
        budget = _ITERATIONS_MAX
        for t in range(self.n):
            envs: list[dict] = [{"tid": t, "tid_y": 0, "tid_z": 0}]
            for lp in loops:
                nxt = []
                for env in envs:
                    trip = lp.trip.eval(env)  # type: ignore[union-attr]
                    if not isinstance(trip, int) or isinstance(trip, bool):
                        return None
                    budget -= max(trip, 0)
                    if budget < 0:
                        return None
                    nxt.extend(dict(env, **{lp.counter.name: k}) for k in range(trip))
                envs = nxt
            for env in envs:
                v = g.thread.eval(env)
                if v is None:
                    return None
                if v:
                    out.add(t)
                    break
        return frozenset(x for x in out if x % size == 0)

    def all_threads(self) -> frozenset[int] | None:
        return None if self.n is None else frozenset(range(self.n))


def describe(threads: frozenset[int] | None, n: int | None = None) -> str:
    """'thread 256', 'warp 8 (32 threads)', 'warpgroup 2 (threads 256-383)', ..."""
    if threads is None:
        return "unknown threads"
    if not threads:
        return "no thread"
    ts = sorted(threads)
    if len(ts) == 1:
        return f"thread {ts[0]} (warp {ts[0] // 32}, lane {ts[0] % 32})"
    lo, hi = ts[0], ts[-1]
    contiguous = hi - lo + 1 == len(ts)
    if n is not None and len(ts) == n:
        return f"all {n} threads of the block"
    if contiguous and lo % 32 == 0 and len(ts) % 32 == 0:
        if len(ts) == 32:
            return f"warp {lo // 32} (32 threads)"
        if lo % 128 == 0 and len(ts) % 128 == 0:
            g = lo // 128
            if len(ts) == 128:
                return f"warpgroup {g} (threads {lo}-{hi})"
            return f"warpgroups {g}-{hi // 128} (threads {lo}-{hi})"
        return f"warps {lo // 32}-{hi // 32} (threads {lo}-{hi})"
    if all(t % 32 == ts[0] % 32 for t in ts):
        warps = sorted({t // 32 for t in ts})
        return f"lane {ts[0] % 32} of warps {_ranges(warps)} ({len(ts)} threads)"
    if contiguous:
        return f"threads {lo}-{hi}"
    return f"{len(ts)} threads ({_ranges(ts)})"


def _ranges(xs: list[int]) -> str:
    out, start, prev = [], None, None
    for x in xs:
        if start is None:
            start = prev = x
        elif x == prev + 1:
            prev = x
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = x
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    s = ", ".join(out)
    return s if len(s) < 60 else s[:57] + "..."
