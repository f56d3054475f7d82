"""Barriers wider than a block: the grid barrier (cooperative groups' `grid.sync()`) and the
cluster barrier (`barrier.cluster.arrive` + `wait`: `cluster.sync()`, TK's
`everyone::tma::cluster::sync()`, `cluster.barrier_arrive()`).

Each waits until every (non-exited) thread of its thread set -- every thread of every block
of the grid, of every CTA of the cluster -- has arrived, as often as the waiter did: the
number of times a thread reaches the barrier must be the same for all of them. The query
counts, per thread of a block, the sites it reaches (weighted by the trips of their loops),
and for the grid barrier also per block: the sites' block-uniform conditions on the block's
index (`blockIdx`, `grid.block_rank()`) are asked of z3 for two blocks b and b'. A difference
is a proved divergence (a hang); anything the query does not model (an inexact guard, a
thread set not known, a guard on a loop counter, a loop whose trip count is not a number when
the sites are in different loops, a block that may leave early on its index) leaves the
barrier kind undecided: no divergence reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import solver
from ..model import expr as E
from ..model import ir
from .analysis import Analysis

# variables whose value differs from block to block (the same for every thread of a block)
BLOCK_VARS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "grid.block_rank", "cta_rank")


@dataclass
class Divergence:
    """Threads (or blocks) that reach a grid / cluster barrier a different number of times."""

    kind: str  # grid | cluster
    site: ir.Op  # a site some of them skip
    sites: list[ir.Op]
    threads: tuple[int, int] | None  # two threads of one block whose counts differ
    counts: tuple[int, int] | None
    blocks: dict[str, int] | None = None  # a witness: the two blocks' index values (primed: b')


def divergences(an: Analysis) -> list[Divergence]:
    return an.fact("wide_barriers.divergences", _divergences)


def _divergences(an: Analysis) -> list[Divergence]:
    out = []
    for kind, kinds, per_block in (("grid", ("grid",), True), ("cluster", ("cluster", "cluster_arrive"), False)):
        d = _divergence(an, kind, kinds, per_block)
        if d is not None:
            out.append(d)
    return out


def _block_dependent(c: E.Expr) -> bool:
    return any(v.name in BLOCK_VARS for v in c.free_vars())


def _weights(m: ir.KernelModel, sites: list[ir.Op]) -> list[int] | None:
    """Each site's weight: 1 when all sites are in the same loops, else the product of its
    loops' (constant) trip counts; None when that is not known."""
    if len({tuple(o.loops) for o in sites}) == 1:
        return [1] * len(sites)
    out = []
    for o in sites:
        w = 1
        for lid in o.loops:
            lp = m.loops.get(lid)
            t = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
            if not isinstance(t, int) or isinstance(t, bool) or t < 1:
                return None
            w *= t
        out.append(w)
    return out


def _divergence(an: Analysis, kind: str, kinds: tuple[str, ...], per_block: bool) -> Divergence | None:
    m = an.model
    n = an.threads.n
    sites = [o for o in m.ops_of(ir.SYNC) if o.sync_kind in kinds]
    if not sites or n is None:
        return None
    sets = []
    for o in sites:
        ex = an.threads.executing(o)
        if ex is None or not o.guard.exact:
            return None
        conds = (o.guard.thread,) + tuple(o.guard.uniform)
        # a value read per iteration (`n = cnt[cur]`, an `App` of the loop counters) is one value
        # for every block in one iteration, as a launch value is: the counts below are per
        # iteration; a loop counter tested directly is not
        if any(c.is_opaque() or E.loop_outside_data(c) for c in conds):
            return None
        if any(not (m.loops.get(lid) and m.loops[lid].uniform) for lid in o.loops):
            return None
        sets.append(ex)
    weights = _weights(m, sites)
    if weights is None:
        return None
    exited: set[int] = set()
    for e in m.ops_of(ir.EXIT):
        ex = an.threads.executing(e)
        if ex is None or not e.guard.exact:
            return None
        if per_block and any(_block_dependent(c) for c in e.guard.uniform):
            return None  # a block that may leave on its index: whether it then hangs others is not asked here
        exited |= ex
    # the threads of a block by the sites they reach (the sites' own block-uniform conditions aside)
    signatures: dict[tuple[int, ...], int] = {}
    for t in range(n):
        if t in exited:
            continue
        sig = tuple(i for i, ex in enumerate(sets) if t in ex)
        signatures.setdefault(sig, t)
    if not signatures:
        return None
    uniform_only = all(not o.guard.uniform or not any(_block_dependent(c) for c in o.guard.uniform) for o in sites)
    sigs = sorted(signatures.items())
    # one block: the uniform conditions hold or not alike for all its threads
    for i, (s1, t1) in enumerate(sigs):
        for s2, t2 in sigs[i + 1 :]:
            c1 = _count(sites, weights, s1, None)
            c2 = _count(sites, weights, s2, None)
            w = solver.witness(E.binop("!=", c1, c2), an.solver_timeout_ms)
            if w is not None:
                skipped = next(sites[k] for k in sorted(set(s1) ^ set(s2)))
                v1, v2 = c1.eval(w), c2.eval(w)
                return Divergence(
                    kind,
                    skipped,
                    sites,
                    (t1, t2),
                    (v1, v2) if isinstance(v1, int) and isinstance(v2, int) else None,
                )
    if not per_block or uniform_only:
        return None
    used = {v.name for o in sites for c in o.guard.uniform for v in c.free_vars() if v.name in BLOCK_VARS}
    # two blocks b and b' (the block-dependent variables primed for b'), any two threads
    assume = tuple(E.binop(">=", E.Var(v + p, E.PARAM), E.Const(0)) for v in BLOCK_VARS for p in ("", "'"))
    for s1, t1 in sigs:
        for s2, t2 in sigs:
            c1 = _count(sites, weights, s1, None)
            c2 = _count(sites, weights, s2, "'")
            w = solver.witness(E.binop("!=", c1, c2), an.solver_timeout_ms, assume=assume)
            if w is None:
                continue
            skipped = next(
                (o for o in sites if any(_block_dependent(c) for c in o.guard.uniform)),
                sites[0],
            )
            v1, v2 = c1.eval(w), c2.eval(w)
            return Divergence(
                kind,
                skipped,
                sites,
                (t1, t2) if t1 != t2 else None,
                (v1, v2) if isinstance(v1, int) and isinstance(v2, int) else None,
                blocks={k: v for k, v in w.items() if k.rstrip("'") in used},
            )
    return None


def _count(sites: list[ir.Op], weights: list[int], sig: tuple[int, ...], prime: str | None) -> E.Expr:
    """How many times a thread reaching the sites `sig` passes the barrier, as an Expr over the
    block-uniform conditions (the block-dependent variables primed with `prime`)."""
    total: E.Expr = E.Const(0)
    for i in sig:
        o = sites[i]
        cond = E.conj(*o.guard.uniform) if o.guard.uniform else E.TRUE
        if prime is not None:
            cond = E.substitute(cond, {v: E.Var(v + prime, E.PARAM) for v in BLOCK_VARS})
        total = E.binop("+", total, E.ite(cond, E.Const(weights[i]), E.Const(0)))
    return total


def data_undecided(an: Analysis) -> list[tuple[ir.Op, ir.Op, str]]:
    """Grid barriers whose block-uniform conditions (a `break` before the barrier, a branch around
    it) read global data that the per-block counts above take alike for every block, where that
    is not established: a load of the value that the grid-barrier query of global data
    (`checks/grid_data.py`) leaves unordered with another block's write (undecided or racing).
    Each block may then read another value and leave while the others wait: not a proved
    divergence (which value each block reads is not asked), never a silent pass (issue 25, round
    14). (site, load, why) per such barrier."""
    return an.fact("wide_barriers.data_undecided", _data_undecided)


def _data_undecided(an: Analysis) -> list[tuple[ir.Op, ir.Op, str]]:
    from .grid_data import grid_data

    sites = [o for o in an.model.ops_of(ir.SYNC) if o.sync_kind == "grid"]
    if not sites:
        return []
    facts = grid_data(an)
    unordered: dict[int, ir.Op] = {}
    for a, b, _why in facts.undecided:
        unordered.setdefault(id(a), b)
        unordered.setdefault(id(b), a)
    for r in facts.races:
        unordered.setdefault(id(r.first), r.second)
        unordered.setdefault(id(r.second), r.first)
    loads = [o for o in an.model.ops if o.kind == ir.GLOBAL_LOAD and id(o) in unordered and o.global_access is not None]
    out = []
    for o in sites:
        texts = {v.name[1:].rsplit("#", 1)[0] for c in o.guard.uniform for v in c.free_vars() if v.name.startswith("?")}
        # a value read per iteration (`moved[it % 3]`, an `E.App`) names its read by its function
        texts |= {a.fn[1:].rsplit("#", 1)[0] for c in o.guard.uniform for a in E.apps(c) if a.fn.startswith("?")}
        for ld in loads:
            ga = ld.global_access
            assert ga is not None
            if ld.order < o.order and ga.text in texts and tuple(ld.loops) == tuple(o.loops)[: len(ld.loops)]:
                other = unordered[id(ld)]
                out.append(
                    (
                        o,
                        ld,
                        f"its condition reads `{ga.text}` (line {ld.location.row}), which another block may write "
                        f"at the same time (line {other.location.row}): each block may read another value",
                    )
                )
                break
    return out
