"""One visit of a barrier made by a signal inside small loops of constant trip.

A role releases (or fills) one element of a barrier per visit of its walk. A visit need not be
one op: the B300 MMA warp releases a K stage with one commit per query tile
(`for (qid = 0; qid < 2; qid++) mm2_ABt(..., kv_finished[k_slot])`, 2 arrivals a phase), a
reader lane releases a stage once per half it read. Such a signal s, in loops L1..Ln of
constant trip (nested in none of its role's loops of unknown trip), is one visit when

* the threads that issue it do not depend on the counters of L1..Ln, and its element is known
  in every iteration: one element for all of them (an index that reads none of their counters,
  whatever its value: a walk's stage), or one per iteration of an element loop
  (`for (qid ..) commit(scores_arrived[qid])`) that visits every element of the array;
* the conditions on those counters in its guard (`if (q == 3)`) are decided for every
  iteration (the counters enumerated, at most `MAX_ITERATIONS` combinations);
* on each element it lands on, its executions there times its issuing threads times its arrival
  count equal the barrier's initial count: together they complete exactly one phase of it.

Anything else (a trip, an element or a count not known, a condition not evaluable): not one
visit (`False`), never assumed.
"""

from __future__ import annotations

import itertools

from ..model import expr as E
from ..model import ir

MAX_ITERATIONS = 64


def one_phase_visit(m: ir.KernelModel, s: ir.Op, iss: frozenset[int] | None) -> bool:
    """s (an arrive on an mbarrier, in loops of constant trip) completes, over all the
    iterations of its loops, exactly one phase of one element, or of each element of its array.
    `iss`: the threads that issue it (None: not known)."""
    if s.kind != ir.MBAR_ARRIVE or s.barrier is None or not s.loops or not s.guard.exact:
        return False
    counters: list[tuple[str, int]] = []
    for lid in s.loops:
        lp = m.loops[lid]
        trip = lp.trip.eval({}) if lp.trip is not None else None
        if lp.infinite or lp.continues or lp.data_cond or lp.thread_exit or not isinstance(trip, int) or trip < 0:
            return False
        counters.append((lp.counter.name, trip))
    total = 1
    for _, t in counters:
        total *= t
    if total > MAX_ITERATIONS:
        return False
    names = {c for c, _ in counters}

    def free(e: E.Expr) -> set[str]:
        return {v.name for v in e.free_vars()}

    if any(ix.is_opaque() for ix in s.barrier.index):
        return False
    if s.guard.thread is not None and free(s.guard.thread) & names:
        return False  # the issuing threads change from iteration to iteration: `iss` is no count
    per = s.count.eval({}) if s.count is not None else None
    if not iss or not isinstance(per, int):
        return False
    conds = [c for c in s.guard.uniform if free(c) & names]
    # an index that reads none of the loops' counters is one element in every iteration, known
    # or not (a walk's stage after the k loop, `kv_finished[v_slot]`)
    one_element = not any(free(ix) & names for ix in s.barrier.index)
    runs: dict[tuple, int] = {}  # element -> executions of s that land on it
    for values in itertools.product(*(range(t) for _, t in counters)):
        env = {c: E.Const(v) for (c, _), v in zip(counters, values)}
        taken = True
        for c in conds:
            v = E.substitute(c, env).eval({})
            if not isinstance(v, (bool, int)):
                return False
            taken = taken and bool(v)
        if not taken:
            continue
        if one_element:
            elem: tuple = ()
        else:
            elem = tuple(E.substitute(ix, env).eval({}) for ix in s.barrier.index)
            if not all(isinstance(v, int) for v in elem):
                return False
        runs[elem] = runs.get(elem, 0) + 1
    init = [o for o in m.ops if o.kind == ir.MBAR_INIT and o.barrier is not None and o.barrier.name == s.barrier.name]
    counts = {o.count.eval({}) if o.count is not None else None for o in init}
    if len(counts) != 1:
        return False
    cnt = counts.pop()
    if not isinstance(cnt, int) or cnt <= 0 or not runs:
        return False
    if any(r * len(iss) * per != cnt for r in runs.values()):
        return False
    if len(runs) == 1:
        return True
    # an element loop (`for (qid ..) commit(scores_arrived[qid])`): one phase on each element,
    # and every element of the barrier array visited
    decl = m.barriers.get(s.barrier.name)
    size = 1
    for d in decl.dims if decl is not None else ():
        v = d.eval({})
        if not isinstance(v, int):
            return False
        size *= v
    if decl is None or len(decl.dims) != len(s.barrier.index):
        return False
    return len(runs) == size
