"""Happens-before over the steps of loops whose iterations are numbers: every iteration of every
loop of the kernel run in order, each `__syncthreads()` / `__syncwarp(mask)` at each step joining
the threads it covers (vector clocks), each element of a `__shared__` array of scalars checked at
each access against the earlier accesses of other threads that no barrier chain orders before it.

This is the semantics of a sorting or reduction network in shared memory: nested loops with
geometric counters (`for (k = 2; k <= N; k <<= 1) for (j = k >> 1; j > 0; j >>= 1)`, whose closed
forms and trip counts the front end gives: `walk_statements._geometric_trip`), partners named by
the step (`2 j (t / j) + t % j`, `t ^ j`), and a barrier whose kind is chosen per step by a
block-uniform test of the counters (`__syncwarp()` while the distance stays within a warp,
`__syncthreads()` otherwise). Each step's guards are evaluated at its counters, so who runs each
access and each barrier, and which element each thread names, are numbers: a write and another
thread's read (or a read and another thread's later write) of one element with no chain of
barriers between them is a dependency the barriers do not order, with the step of each end.

Scope (anything else: `simulate` answers None and nothing is claimed):
- every loop of the kernel has a trip count that evaluates to a number at each iteration of the
  loops around it (a constant, or a form of their counters), and no other exit (`break`,
  `continue` conditions the model keeps, a per-thread exit, a loop condition of its own);
- the ops are shared accesses of scalars or array elements (not atomic, not volatile, not a peer
  CTA's), global loads and stores, `__syncthreads()` and `__syncwarp(mask)` (mask evaluated, each
  running lane in it), with every guard evaluated at each step; no mbarrier, named barrier, fence,
  atomic, spin, call or exit anywhere in the kernel;
- an access under a condition on data the model does not follow (an opaque value: the outcome of
  `a > b` over loaded values) is one that runs *for some input* (the values are free): a write
  under it can race; it is never taken to overwrite (so it orders nothing away).
The run stops (None) past `MAX_STEPS` op instances or `MAX_THREADS` threads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from ..model.fast_eval import evaluator
from .analysis import Analysis

MAX_STEPS = 20000  # op instances run
MAX_THREADS = 1024


@dataclass
class StepRace:
    """`first` (at the loop counters `first_at`) by thread `first_thread`, then `second` (at
    `second_at`) by `second_thread`: one element, one a write, no barrier chain between."""

    first: ir.Op
    second: ir.Op
    first_thread: int
    second_thread: int
    first_at: tuple[tuple[str, int], ...]
    second_at: tuple[tuple[str, int], ...]
    element: tuple
    # the barriers run between the two (op, counters), the last of each site
    between: list[tuple[ir.Op, tuple[tuple[str, int], ...]]] = field(default_factory=list)
    conditional: bool = False  # the write runs under a data condition (for some input)


@dataclass
class Divergence:
    """A `__syncthreads()` at the step `at` that only `reaching` reach when every thread's data
    test takes the value `value` (the rest skip it: a `continue` or a branch on data)."""

    op: ir.Op
    at: tuple[tuple[str, int], ...]
    reaching: frozenset[int]
    missing: frozenset[int]
    value: int


@dataclass
class StepFacts:
    races: list[StepRace]
    buffers: set[str]  # the shared buffers whose every access pair was decided
    # the first block barrier some threads skip on data (the run stops there: a hang)
    divergence: Divergence | None = None


def simulate(an: Analysis) -> StepFacts | None:
    return an.fact("loop_steps.simulate", _simulate)


_ALLOWED = (ir.SMEM_ACCESS, ir.SYNC, ir.GLOBAL_LOAD, ir.GLOBAL_STORE)


def _simulate(an: Analysis) -> StepFacts | None:
    from .paths import flow

    m = an.model
    n = an.threads.n
    if n is None or n < 2 or n > MAX_THREADS:
        return None
    ops = sorted(flow(an).ops, key=lambda o: o.order)
    if not any(o.loops for o in ops if o.kind == ir.SMEM_ACCESS):
        return None  # nothing a step decides (syncscope asks straight-line code)
    for o in ops:
        if o.kind not in _ALLOWED:
            return None
        if o.kind == ir.SMEM_ACCESS:
            a = o.access
            if a is None or o.buffer is None or a.via not in ("element", "scalar") or a.atomic or a.volatile:
                return None
            if a.cta is not None or a.order is not None:
                return None
        if o.kind == ir.SYNC:
            s = o.sync
            if s is None or not ((s.kind == "block" and s.syncthreads) or s.kind == "warp"):
                return None
        if o.guard.blind or (not o.guard.exact and not _data_guard(o.guard)):
            return None
    for lid in {lid for o in ops for lid in o.loops}:
        lp = m.loops.get(lid)
        if lp is None or lp.counter is None or lp.trip is None or lp.infinite or lp.continues:
            return None
        if lp.thread_exit or lp.data_cond or lp.cond is not None or not lp.uniform:
            return None
    seq = _unroll(an, ops)
    if seq is None:
        return None
    # vector clocks: vc[t, u] = the latest tick of thread u that thread t is ordered after
    vc: list[list[int]] = [[0] * n for _ in range(n)]
    tick = [0] * n
    # element -> [(thread, tick, op, at, conditional)] writes / reads not yet ordered away
    writes: dict[tuple, list] = {}
    reads: dict[tuple, list] = {}
    barriers: list[tuple[int, ir.Op, tuple]] = []  # (sequence index, op, at)
    seen: dict = {}
    blind = False  # past a warp barrier some lanes skip on data
    buffers: set[str] = set()
    compiled: dict[int, tuple] = {}  # `_element_at`'s index evaluators, per reference
    for idx, (o, env, ts, cond) in enumerate(seq):
        at = tuple(sorted((k, v) for k, v in env.items()))
        if o.kind == ir.SYNC:
            assert o.sync is not None
            groups: list[list[int]] = []
            if o.sync.kind == "warp" and cond:
                # lanes that skip a `__syncwarp()` on data: which later one they meet is not
                # followed, so no race is claimed past it; a block barrier skipped on data later
                # is still shown divergent
                blind = True
                continue
            if o.sync.kind == "block" and cond:
                if len(ts) != n:
                    return None
                div = _divergence(o, env, at, n)
                if div is None:
                    return None  # not shown divergent: undecided
                return StepFacts(list(seen.values()), set() if blind else buffers, div)
            if o.sync.kind == "block":
                if len(ts) != n:
                    return None  # not every thread reaches it: the progress engine's question
                groups = [sorted(ts)]
            else:
                from .happens_before import in_warp_mask

                byw: dict[int, list[int]] = {}
                for t in ts:
                    inm = in_warp_mask(o, t)
                    if inm is not True:
                        return None  # a running lane outside the mask, or a mask not read
                    byw.setdefault(t // 32, []).append(t)
                groups = list(byw.values())
            for g in groups:
                for t in g:
                    tick[t] += 1
                    vc[t][t] = tick[t]
                # every thread of the group is ordered after what any of them was ordered after
                joined = list(map(max, *(vc[t] for t in g))) if len(g) > 1 else vc[g[0]][:]
                for t in g:
                    vc[t] = joined.copy()
            barriers.append((idx, o, at))
            continue
        if o.kind != ir.SMEM_ACCESS:
            continue
        assert o.buffer is not None and o.access is not None
        buffers.add(o.buffer.name)
        write = o.access.mode == "write"
        element = _element_at(o.buffer, env, compiled)
        for t in sorted(ts):
            key = element(t)
            if key is None:
                return None
            tick[t] += 1
            vc[t][t] = tick[t]
            mine = (t, tick[t], o, at, cond, idx)
            # earlier accesses this one conflicts with: every write, and for a write every read
            for lst, other_write in ((writes.get(key, []), True), (reads.get(key, []) if write else [], False)):
                for u, tk, po, pat, pcond, pidx in reversed(lst):  # the latest first
                    if u == t or vc[t][u] >= tk:
                        continue
                    if blind:
                        continue
                    sig = (id(po), id(o), write, other_write)
                    # one race per pair of sites: the first met, or a later one of two warps
                    # where the first was two lanes of one warp
                    if sig in seen and (
                        seen[sig].first_thread // 32 != seen[sig].second_thread // 32 or u // 32 == t // 32
                    ):
                        continue
                    between = [(b, bat) for bi, b, bat in barriers if pidx < bi < idx]
                    seen[sig] = StepRace(po, o, u, t, pat, at, key, _last_of_each(between), pcond or cond)
            if write:
                if not cond:
                    # an unconditional write: the accesses ordered before it are ordered before
                    # whatever is ordered after it
                    writes[key] = [x for x in writes.get(key, []) if not vc[t][x[0]] >= x[1]]
                    reads[key] = [x for x in reads.get(key, []) if not vc[t][x[0]] >= x[1]]
                writes.setdefault(key, []).append(mine)
            else:
                lst = reads.setdefault(key, [])
                lst[:] = [x for x in lst if x[0] != t]  # a thread's later read stands for its earlier ones
                lst.append(mine)
    if blind:
        return None
    return StepFacts(list(seen.values()), buffers)


def _divergence(o: ir.Op, env: dict, at: tuple, n: int) -> Divergence | None:
    """The block barrier o under a data test, at the step env: with every thread's unfollowed
    values equal (0, then 1: an input where every thread's test sees the same outcome), the
    threads whose test holds; a Divergence when they are some but not all threads."""
    # at one step a value read anew every iteration (`E.per_iteration`: a key copied out of
    # shared memory) is one value: its unknown
    tests = [E.within_iteration(c) for c in o.guard.opaque]
    free = sorted({v.name for c in tests for v in c.free_vars() if v.kind == E.OPAQUE})
    for value in (0, 1):
        reach = set()
        for t in range(n):
            vals = {**env, "tid": t, "tid_y": 0, "tid_z": 0, **{name: value for name in free}}
            ok = True
            for c in tests:
                v = c.eval(vals)
                if not isinstance(v, (bool, int)):
                    return None
                ok = ok and bool(v)
            if ok:
                reach.add(t)
        if 0 < len(reach) < n:
            return Divergence(o, at, frozenset(reach), frozenset(range(n)) - frozenset(reach), value)
    return None


def _last_of_each(between: list) -> list:
    out: dict[int, tuple] = {}
    for b, at in between:
        out[id(b)] = (b, at)
    return list(out.values())


def _data_guard(g: ir.Guard) -> bool:
    """Inexact only through conditions on values the model does not follow and leaves free
    (no `__shared__` flag the kernel sets, no per-thread loop exit)."""
    if g.blind or not g.opaque or g.exits:
        return False
    for c in g.opaque:
        vs = [v for v in E.within_iteration(c).free_vars() if v.kind == E.OPAQUE]
        if not vs or any(v.name.startswith("?shared:") or _LITERAL.match(v.name) for v in vs):
            return False
    return True


# an opaque value that stands for a constant the walk did not evaluate (`0.0f`: `?float#5`), not
# for data: a test against it is not free
_LITERAL = re.compile(r"^\?(float|double|half|__half|bf16|__nv_bfloat16|bool|char|short|int|unsigned|long)\b")


def _unroll(an: Analysis, ops: list[ir.Op]):
    """[(op, counters, threads, conditional)] in program order over every iteration, or None."""
    m = an.model
    out: list = []
    cache: dict = {}

    def counter(lid: int) -> str:
        c = m.loops[lid].counter
        assert isinstance(c, E.Var)
        return c.name

    def run(block: list[ir.Op], depth: int, env: dict) -> bool:
        i = 0
        while i < len(block):
            o = block[i]
            if len(o.loops) > depth:
                lid = o.loops[depth]
                j = i
                while j < len(block) and len(block[j].loops) > depth and block[j].loops[depth] == lid:
                    j += 1
                trip = m.loops[lid].trip
                assert trip is not None
                tv = trip.eval(env)
                if type(tv) is not int or tv < 0:
                    return False
                for k in range(tv):
                    if not run(block[i:j], depth + 1, {**env, counter(lid): k}):
                        return False
                i = j
                continue
            if len(out) >= MAX_STEPS:
                return False
            runs = True
            for g in o.guard.uniform:
                v = g.eval(env)
                if not isinstance(v, (bool, int)):
                    return False
                runs = runs and bool(v)
            if runs:
                key = (id(o), tuple(sorted(env.items())))
                ts = cache.get(key)
                if ts is None:
                    th = E.substitute(o.guard.thread, {k: E.Const(v) for k, v in env.items()})
                    ts = an.threads.satisfying(th)
                    if ts is None:
                        return False
                    cache[key] = ts
                if ts:
                    out.append((o, env, ts, not o.guard.exact))
            i += 1
        return True

    if not run(ops, 0, {}):
        return None
    return out


def _element_at(ref: ir.Ref, env: dict, compiled: dict[int, tuple]):
    """The element thread t names through `ref` at the step `env` (a function of t): the
    buffer's name and the index values, None when one is not an int. The indices are compiled
    once per reference (model/fast_eval.py: the values `eval` gives) into `compiled`, and one
    environment serves every thread, its `tid` set per call (eval reads it, never writes it)."""
    got = compiled.get(id(ref))
    if got is None or got[0] is not ref:
        got = compiled[id(ref)] = (ref, tuple(evaluator(ix) for ix in ref.index))
    fs = got[1]
    vals = dict(env)
    vals.update(tid=0, tid_y=0, tid_z=0)
    name = ref.name

    def at(t: int) -> tuple | None:
        vals["tid"] = t
        out: list = [name]
        for f in fs:
            v = f(vals)
            if type(v) is not int:
                return None
            out.append(v)
        return tuple(out)

    return at


def shown_at(an: Analysis, at: tuple[tuple[str, int], ...]) -> str:
    """`k = 64, j = 32` (the induction variables' values at the counters `at`), else the counters."""
    m = an.model
    parts = []
    by_counter = {lp.counter.name: lp for lp in m.loops.values() if isinstance(lp.counter, E.Var)}
    for name, k in at:
        lp = by_counter.get(name)
        if lp is None:
            continue
        value = None
        if lp.var is not None:
            form = _form(lp)
            if form is not None:
                value = form.eval(dict(at))
        label = lp.var or name
        parts.append(f"{label} = {value}" if type(value) is int else f"iteration {k} of the `{label}` loop")
    return ", ".join(parts)


def _form(lp: ir.Loop) -> E.Expr | None:
    """The induction variable's value at the counter (its closed form), when the model keeps it."""
    if lp.form is not None:
        return lp.form
    if lp.init is not None and lp.step is not None:
        return E.binop("+", lp.init, E.binop("*", lp.step, lp.counter))
    return None
