"""Shared-memory dependencies whose two ends are in different iterations or at different loop
depths (a ring of shared slots read in iteration k and refilled for iteration k + 1, a slot
stored before a loop and read in its first iteration, a slot read in an inner loop and
overwritten after it in the same iteration), asked at concrete iterations.

`syncscope` asks a write and a read of one element in the same iteration of the same loops (and
a read then the next iteration's write of the same loops). This module asks the pairs it leaves:

- *into*: the write before a loop (or in an outer loop), the read in the first iteration of the
  loops the write is not in;
- *next*: one end at iteration k of the innermost loop around both, the other at k + 1 (a
  write, then the next iteration's read: raw-next; a read, then the next iteration's write: war),
  with one of them in an inner loop of its own;
- *same*: a read, then a write of the same element later in the same iteration (war-same), with
  the read in an inner loop of its own or at the same depth.

Each pair is asked at concrete iterations (every loop counter a number, each loop a known
constant trip count that runs that iteration, the block-uniform guards of both ends and of every
barrier between evaluated there), so each element index is a number per thread: a writer thread
and a different reader thread naming one element, with no barrier both take part in between the
two ends, is a dependency the barriers do not order. A pair with an op between whose order is not
followed (an mbarrier op, a named arrive, a call, an exit, a barrier in a loop that is not around
one end, a guard not evaluated) is not asked: nothing is claimed about it."""

from __future__ import annotations

import itertools

from ..model import expr as E
from ..model import ir
from .analysis import Analysis
from .paths import keys_may_alias

ORDER_UNKNOWN_KINDS = (ir.MBAR_ARRIVE, ir.MBAR_WAIT, ir.MBAR_EXPECT, ir.NAMED_ARRIVE, ir.CALL, ir.EXIT, ir.SPIN, ir.PDL)
MAX_INSTANCES = 12  # concrete iterations asked per pair
MAX_INNER = 4  # iterations of an inner loop enumerated


def _loop_ok(an: Analysis, lid: int) -> int | None:
    """The constant trip count of loop lid when its iterations are numbers (counter from 0)."""
    lp = an.model.loops.get(lid)
    if lp is None or lp.infinite or lp.continues or not lp.uniform or lp.counter is None or lp.trip is None:
        return None
    if getattr(lp, "thread_exit", False) or getattr(lp, "data_cond", False):
        return None
    trip = lp.trip.eval({})
    if not isinstance(trip, int) or isinstance(trip, bool) or trip < 1:
        return None
    return trip


def _common(a: ir.Op, b: ir.Op) -> tuple:
    out: tuple = ()
    for x, y in zip(a.loops, b.loops):
        if x != y:
            break
        out += (x,)
    return out


def _runs(op: ir.Op, env: dict) -> bool | None:
    """op's block-uniform guards at the iteration env: True, False, or None (not evaluated)."""
    for g in op.guard.uniform:
        v = E.substitute(g, env).eval({})
        if not isinstance(v, (bool, int)):
            return None
        if not v:
            return False
    return True


def _key(ref: ir.Ref, t: int, env: dict) -> tuple | None:
    vals = {name: c.value for name, c in env.items()}
    vals.update(tid=t, tid_y=0, tid_z=0)
    out = []
    for ix in ref.index:
        v = ix.eval(vals)
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        out.append(v)
    return tuple(out)


def _envs(an: Analysis, common: tuple, extra_a: tuple, extra_b: tuple, shift: int):
    """Concrete iterations: (env of a, env of b). The loops `common` are shared (b runs `shift`
    iterations of the innermost one after a), `extra_*` are each end's own inner loops. None when
    some loop's iterations are not numbers."""
    trips = {}
    for lid in common + extra_a + extra_b:
        t = _loop_ok(an, lid)
        if t is None:
            return None
        trips[lid] = t
    m = an.model

    def name(lid: int) -> str:
        c = m.loops[lid].counter
        assert isinstance(c, E.Var)
        return c.name

    inner = common[-1:] if shift else ()
    first = [range(0, min(2, trips[inner[0]] - shift))] if inner else []
    if inner and not first[0]:
        return []
    outer = common[:-1] if shift else common
    rng_a = [range(min(trips[lid], MAX_INNER)) for lid in extra_a]
    rng_b = [range(min(trips[lid], MAX_INNER)) for lid in extra_b]
    out = []
    for ks in itertools.product(*first, *rng_a, *rng_b):
        env_a: dict = {name(lid): E.Const(0) for lid in outer}
        env_b = dict(env_a)
        i = 0
        if inner:
            env_a[name(inner[0])] = E.Const(ks[0])
            env_b[name(inner[0])] = E.Const(ks[0] + shift)
            i = 1
        for lid in extra_a:
            env_a[name(lid)] = E.Const(ks[i])
            i += 1
        for lid in extra_b:
            env_b[name(lid)] = E.Const(ks[i])
            i += 1
        out.append((env_a, env_b))
        if len(out) >= MAX_INSTANCES:
            break
    return out


def loop_dependencies(an: Analysis, fl, writers: list[ir.Op], readers: list[ir.Op], done: set[int]) -> list:
    """The *into*, *next* and *same* pairs of the module doc, as syncscope Dependencies (one per
    read; `done`: the reads syncscope already found a dependency of)."""
    from .syncscope import Dependency, _covered

    out = []
    body_of: dict[int, list[ir.Op]] = {}
    for r in readers:
        if id(r) in done or r.buffer is None:
            continue
        tr = an.threads.executing(r)
        if not tr:
            continue
        for w in writers:
            if w.buffer is None or r.buffer.name != w.buffer.name:
                continue
            tw = an.threads.executing(w)
            if not tw:
                continue
            common = _common(w, r)
            deeper = len(w.loops) > len(common) or len(r.loops) > len(common)
            cases: list = []
            if w.order < r.order and tuple(w.loops) == common and len(r.loops) > len(common):
                # into: the write, then the read in the first iteration of its own loops
                cases.append(("raw", w, r, 0, [(o, "b") for o in fl.ops if w.order < o.order < r.order]))
            if w.order < r.order and len(w.loops) > len(common) and _array_element(w) and _array_element(r):
                # after: the write in loops of its own (each thread's iterations), the read later
                cases.append(("after", w, r, 0, [(o, "b") for o in fl.ops if w.order < o.order < r.order]))
            if common:
                lid = common[-1]
                body = body_of.setdefault(lid, [o for o in fl.ops if lid in o.loops])
                # next: the write at k, the read at k + 1
                btw = [(o, "a") for o in body if o.order > w.order] + [(o, "b") for o in body if o.order < r.order]
                cases.append(("raw-next", w, r, 1, btw))
                if deeper:
                    # next: the read at k, the write at k + 1 (syncscope asks it for equal loops)
                    btw = [(o, "a") for o in body if o.order > r.order] + [(o, "b") for o in body if o.order < w.order]
                    cases.append(("war", r, w, 1, btw))
            if r.order < w.order:
                cases.append(("war-same", r, w, 0, [(o, "a") for o in fl.ops if r.order < o.order < w.order]))
            if not (_element_level(r) and _element_level(w)):
                # a tile op (`warpgroup::load` of a shared vector) is keyed by the whole tile: who
                # reads which element of it is not modelled, and a group's load and later store of
                # one tile in one layout touch each thread's own part -- a read then a write of it
                # is no dependency this question can tell (the write-then-read ones stay asked,
                # as syncscope asks them of tiles)
                cases = [c for c in cases if c[0] not in ("war", "war-same")]
            dep = None
            for kind, a, b, shift, between in cases:
                if kind == "after":
                    dep = _ask_after(an, w, r, tw, tr, common, between, _covered, Dependency)
                else:
                    dep = _ask(an, kind, w, r, tw, tr, a, b, common, shift, between, _covered, Dependency)
                if dep is not None:
                    break
            if dep is not None:
                out.append(dep)
                break
    return out


MAX_OWN_ITERATIONS = 64  # iterations of an access's own per-thread loops enumerated


def own_iterations(an: Analysis, op: ir.Op, depth: int) -> list[tuple[dict[str, int], frozenset[int]]] | None:
    """The iterations of op's own loops past `depth` when each loop's trip count is over the
    thread index and constants (a block-strided loop `for (c = tid; c < COLS; c += T)`: thread t
    runs ceil((COLS - t) / T) iterations): [(counter values, the threads that run that
    iteration)], every thread's trip count evaluated; which threads touch which elements is then
    the index at each iteration over the threads that run it. None when a loop is not of that
    kind, or past MAX_OWN_ITERATIONS iterations in all."""
    n = an.threads.n
    if not n:
        return None
    envs: list[dict[str, int]] = [{}]
    trips: list[tuple[str, list]] = []
    for lid in op.loops[depth:]:
        lp = an.model.loops.get(lid)
        if (
            lp is None
            or lp.trip is None
            or not isinstance(lp.counter, E.Var)
            or lp.infinite
            or lp.cond is not None
            or lp.data_cond
            or lp.continues
            or getattr(lp, "thread_exit", False)
            or any(v.name != "tid" for v in lp.trip.free_vars())
        ):
            return None
        per = [lp.trip.eval({"tid": t, "tid_y": 0, "tid_z": 0}) for t in range(n)]
        if any(not isinstance(v, int) or isinstance(v, bool) for v in per):
            return None
        name = lp.counter.name
        trips.append((name, per))
        envs = [dict(e, **{name: k}) for e in envs for k in range(max(0, max(per)))]
        if len(envs) > MAX_OWN_ITERATIONS:
            return None
    return [(e, frozenset(t for t in range(n) if all(e[name] < per[t] for name, per in trips))) for e in envs]


def _ask_after(an, w, r, tw, tr, common, between, covered, Dependency):
    """*after*: the write in loops of its own (`own_iterations`: a block-strided staging loop),
    the read after them, in the first iteration of its own loops (`for (i ..) s[i * 128 + t]`):
    each writer thread's elements are its iterations' indices; a reader thread naming one another
    thread wrote, with no barrier both take part in between, is a dependency. Barriers between
    must be at the common level or in the read's loops before it, none in the write's own loops."""
    own_w = tuple(w.loops)[len(common) :]
    its = own_iterations(an, w, len(common))
    if not its:
        return None
    relevant = [(o, tag) for o, tag in between if _relevant(o)]
    if any(o.kind in ORDER_UNKNOWN_KINDS or not o.guard.exact for o, _ in relevant):
        return None
    for o, _ in relevant:
        lo = tuple(o.loops)
        if lo != tuple(r.loops)[: len(lo)]:
            return None
    if any(_relevant(o) and set(o.loops) & set(own_w) for o in an.model.ops):
        return None
    extra_b = tuple(r.loops)[len(common) :]
    envs = _envs(an, common, (), extra_b, 0)
    if not envs:
        return None
    envs = [(ea, eb) for ea, eb in envs if all(eb[n].eval({}) == 0 for n in _names(an, extra_b))]
    sets = [(s, an.threads.executing(s)) for s, _ in relevant if s.kind == ir.SYNC]
    if any(ss is None for _, ss in sets):
        return None
    if any(o.guard.thread.depends_on(E.LOOP) for o in [w, r] + [s for s, _ in sets]):
        return None
    if not (tr <= tw or tw <= tr) and any(not (tr | tw) <= ss for _, ss in sets):
        return None
    for env_a, env_b in envs:
        if _runs(w, env_a) is not True or _runs(r, env_b) is not True:
            continue
        live = []
        for s, ss in sets:
            g = _runs(s, env_b)
            if g is None:
                return None
            if g:
                live.append((s, ss))
        wkeys: dict = {}
        for own_env, who in its:
            env_k = dict(env_a, **{name: E.Const(k) for name, k in own_env.items()})
            for t in tw & who:
                k = _key(w.buffer, t, env_k)
                if k is None:
                    return None
                wkeys.setdefault(k, set()).add(t)
        uncovered: dict[int, frozenset[int]] = {}
        for t in sorted(tr):
            kr = _key(r.buffer, t, env_b)
            if kr is None or len(kr) != len(w.buffer.index):
                return None
            bad = frozenset(x for x in wkeys.get(kr, set()) if x != t and not covered(live, x, t))
            if bad:
                uncovered[t] = bad
        if uncovered:
            narrow = [s for s, ss in live if any(t in ss for t in uncovered)]
            return Dependency(w, r, tr, uncovered, narrow, {}, kind="raw")
    return None


def _element_level(o: ir.Op) -> bool:
    """An access keyed by the element it touches (a scalar of a shared array, a `__shared__`
    scalar, an `ldmatrix` / vector row), not by the whole tile a TK op moves."""
    return o.access is not None and o.access.via in ("element", "scalar")


def _array_element(o: ir.Op) -> bool:
    """An access of one element of a shared array. A `__shared__` scalar written in a loop of its
    own is one word every iteration rewrites: its pairs are the shared-scalar race search's
    (`happens_before._ask_pair`), not the *after* case's element sets."""
    return o.access is not None and o.access.via == "element"


def _relevant(o: ir.Op) -> bool:
    return o.kind in (ir.SYNC, ir.FENCE) + ORDER_UNKNOWN_KINDS


def _ask(an, kind, w, r, tw, tr, a, b, common, shift, between, covered, Dependency):
    relevant = [(o, tag) for o, tag in between if _relevant(o)]
    if any(o.kind in ORDER_UNKNOWN_KINDS or not o.guard.exact for o, _ in relevant):
        return None
    extra_a = tuple(a.loops)[len(common) :]
    extra_b = tuple(b.loops)[len(common) :]
    if kind == "raw" and extra_a:
        return None
    # a barrier between must run a known number of times at the iteration asked: in the loops
    # around both ends, or, for the *into* pair, in the read's own loops before it (their first
    # iteration asked). Elsewhere (the ends' own inner loops, whose later iterations run the
    # ops before an end too; a sibling loop) the pair is not asked.
    for o, _ in relevant:
        lo = tuple(o.loops)
        if kind == "raw":
            if lo != tuple(b.loops)[: len(lo)]:
                return None
        elif lo != common:
            return None
    own = set(extra_a) | (set() if kind == "raw" else set(extra_b))
    if own and any(_relevant(o) and set(o.loops) & own for o in an.model.ops):
        return None
    envs = _envs(an, common, extra_a, extra_b, shift)
    if not envs:
        return None
    if kind == "raw":
        envs = [(ea, eb) for ea, eb in envs if all(eb[n].eval({}) == 0 for n in _names(an, extra_b))]
    sets = [(s, tag, an.threads.executing(s)) for s, tag in relevant if s.kind == ir.SYNC]
    if any(ss is None for _, _, ss in sets):
        return None
    # who runs an op is asked once for all iterations: a thread condition over a loop counter
    # (`if (t < s)` in a halving loop) names other threads at each iteration: not asked
    if any(o.guard.thread.depends_on(E.LOOP) for o in [a, b] + [s for s, _, _ in sets]):
        return None
    # one side's threads among the other's: both follow the same control flow, and program order
    # between the two ends is each thread's order. Otherwise (two roles of a branch) only where
    # every barrier between is run by all of them: a barrier one role reaches at another site
    # (`bar.sync id` in each branch) would pair with it, which this question does not follow.
    if not (tr <= tw or tw <= tr) and any(not (tr | tw) <= ss for _, _, ss in sets):
        return None
    for env_a, env_b in envs:
        if _runs(a, env_a) is not True or _runs(b, env_b) is not True:
            continue
        live = []
        unknown = False
        for s, tag, ss in sets:
            g = _runs(s, env_a if tag == "a" else env_b)
            if g is None:
                unknown = True
                break
            if g:
                live.append((s, ss))
        if unknown:
            continue
        env_w, env_r = (env_a, env_b) if a is w else (env_b, env_a)
        wkeys: dict = {}
        for t in tw:
            k = _key(w.buffer, t, env_w)
            if k is None:
                return None
            wkeys.setdefault(k, set()).add(t)
        uncovered: dict[int, frozenset[int]] = {}
        for t in sorted(tr):
            kr = _key(r.buffer, t, env_r)
            if kr is None:
                return None
            ws: set[int] = set()
            if len(kr) == len(w.buffer.index):
                ws = wkeys.get(kr, set())
            else:
                for kw, ts in wkeys.items():
                    if keys_may_alias(kw, kr):
                        ws |= ts
            bad = frozenset(x for x in ws if x != t and not covered(live, x, t))
            if bad:
                uncovered[t] = bad
        if uncovered:
            narrow = [s for s, ss in live if any(t in ss for t in uncovered)]
            return Dependency(w, r, tr, uncovered, narrow, {}, kind=kind)
    return None


def _names(an: Analysis, lids: tuple) -> list[str]:
    out = []
    for lid in lids:
        c = an.model.loops[lid].counter
        assert isinstance(c, E.Var)
        out.append(c.name)
    return out
