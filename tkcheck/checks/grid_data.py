"""Global data ordered across the blocks of the grid by grid barriers (issue 25, round 14).

The happens-before engine's question for shared memory -- is there a barrier between a write and
a conflicting access of another thread, in this iteration or across the back edge -- asked of
global memory with the block as the extra dimension. It is asked in a kernel whose blocks can be
ordered by nothing but `grid.sync()` (`grid_only_orders`): no gpu-scope fence, no acquire /
release / volatile global access, no cluster barrier or remote mbarrier, no call the model does
not follow. Relaxed atomics synchronise nothing (PTX: no release, no acquire), and a block
barrier orders one block's threads only, so two accesses of one element of global memory by
threads of two different blocks are ordered exactly when a grid barrier lies on the path from one
to the other (`grid.sync()` of every thread once per iteration of their common loops: a
gpu-scope release and acquire of every thread of every block).

For each kernel pointer parameter p, each pair of accesses of p (plain loads and stores
`p[i]`, CUDA atomics `atomicAdd(&p[i], v)` with their element, `GlobalAccessFacts.index` /
`atomic_index`), at least one a write and not both strong (an atomic or a relaxed PTX access
at gpu scope is strong; two strong accesses race with none), with no grid barrier between them
in the same iteration of their common loop, or across its back edge: z3 looks for two threads of
two different blocks (block indices renamed per side, their own loops' counters and every
value the model holds as a data unknown `?...` renamed per side: free data, as the other
engines take it) naming one element. A witness is a race (the global publication rule reads it); no witness is
ordered; a pair whose guards are not exact, whose elements are not expressions over the
threads, blocks and loop counters, in nested common loops, or that the solver does not decide
is undecided (coverage), never a finding. Not asked: thread-private data
(`happens_before.thread_private`), two plain stores of one element (it holds one of the values),
and a kernel that does not tell its blocks apart (no grid barrier, nothing over `blockIdx.x` or
`gridDim.x`: launched with one block, or every block does the same work) or whose launches in
the file have one block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from .analysis import Analysis
from .paths import flow

_WIDE_FENCES = ("membar_cluster", "membar_gl", "membar_sys", "membar_gpu")
_CLUSTER_SYNCS = ("cluster", "cluster_arrive", "cluster_wait")
_MBAR_OPS = (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.MBAR_WAIT, ir.MBAR_INIT)
_GLOBAL = (ir.GLOBAL_LOAD, ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL)
# the names an element may be computed from (besides loop counters and kernel parameters)
_THREAD_NAMES = ("tid", "blockIdx.x")


@dataclass
class GridRace:
    """`first` by thread `first_thread` of block `first_block` and `second` by `second_thread`
    of `second_block` name one element of global memory `base` with no grid barrier between
    them; `later` the iterations `second` runs after `first` (0: the same iteration of their
    common loop, None: no common loop)."""

    first: ir.Op
    second: ir.Op
    base: str
    first_thread: int
    second_thread: int
    first_block: int
    second_block: int
    later: int | None = 0
    element: str = ""
    # an end runs only when its `atomicCAS` claim succeeds (`_claims_only`): the witness takes an
    # input whose claimed element holds the compare value
    claims: bool = False


@dataclass
class GridFacts:
    races: list[GridRace] = field(default_factory=list)
    undecided: list[tuple[ir.Op, ir.Op, str]] = field(default_factory=list)
    asked: set[str] = field(default_factory=set)  # the bases whose pairs were asked


def grid_data(an: Analysis) -> GridFacts:
    return an.fact("grid_data", _grid_data)


def grid_only_orders(an: Analysis) -> bool:
    """Can threads of two different blocks be ordered only by grid barriers? Every other op that
    may synchronise orders one block's threads (a block, named or warp barrier, an mbarrier of
    the block's own) or nothing (a relaxed atomic, a weak or relaxed load, a spin over them)."""
    for o in an.model.ops:
        if o.kind == ir.SYNC and o.sync_kind in _CLUSTER_SYNCS:
            return False
        if o.kind == ir.FENCE and o.fence_kind in _WIDE_FENCES:
            return False
        if o.kind in _GLOBAL:
            ga = o.global_access
            if ga is None or ga.sem not in ("weak", "relaxed"):
                return False
        if o.kind in _MBAR_OPS:
            mb = o.mbar
            if o.barrier is None or o.unmodelled_barrier_use:
                return False
            if mb is not None and (mb.remote or mb.cta is not None or mb.multicast or mb.mask is not None or mb.ncta):
                return False
        if o.kind == ir.SMEM_ACCESS and o.access is not None and o.access.cta is not None:
            return False
        if o.kind in (ir.CALL, ir.PDL):
            return False
    return True


def _many_blocks(an: Analysis) -> bool:
    """Does the kernel tell its blocks apart (a grid barrier, or an address, a guard or a trip
    count over the block index or the grid size)? A kernel that does not is launched with one
    block, or every block does the same work: its blocks' accesses are not asked."""
    names = ("blockIdx.x", "gridDim.x")
    for o in an.model.ops:
        if o.kind == ir.SYNC and o.sync_kind == "grid":
            return True
        exprs = [o.guard.thread, *o.guard.uniform]
        if (ix := _index(o)) is not None:
            exprs.append(ix)
        if any(v.name in names for x in exprs for v in x.free_vars()):
            return True
    for lp in an.model.loops.values():
        if lp.trip is not None and any(v.name in names for v in lp.trip.free_vars()):
            return True
    return False


def _claims_only(an: Analysis, o: ir.Op) -> bool:
    """Is o's guard inexact only through claims: tests `old == c` of the old value of an
    `atomicCAS(&p[j], c, v)` before o in its loops, where every write of p in the kernel is such a
    CAS with the same compare value c and the element j is data (not an expression over the
    threads: the input chooses it)? An element that holds c (its input value) changes only by the
    first claim on it, which sees c: for an input whose element j of this thread holds c and is
    named by no other thread, the thread's claim succeeds -- the test is a free choice, as the
    engine takes every data value (`?...`) the model does not follow."""
    g = o.guard
    if g.exact or g.blind or not g.opaque:
        return False
    for cond in g.opaque:
        if not (isinstance(cond, E.Bin) and cond.op == "==" and isinstance(cond.b, E.Const)):
            return False
        v = cond.a
        if not (isinstance(v, E.Var) and v.name.startswith("?atomicCAS")):
            return False
        cas = [
            x
            for x in an.model.ops
            if x.kind == ir.GLOBAL_SIGNAL
            and x.global_access is not None
            and x.global_access.atomic == "cas"
            and x.global_access.form == "atomic"
            and x.order < o.order
            and tuple(x.loops) == tuple(o.loops)[: len(x.loops)]
        ]
        if len(cas) != 1:
            return False
        ga = cas[0].global_access
        assert ga is not None
        if ga.base is None or ga.atomic_index is not None or not ga.operands or ga.operands[0] != cond.b:
            return False
        for x in an.model.ops:
            xa = x.global_access
            if x.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL) and (xa is None or xa.base in (None, ga.base)):
                if xa is None or xa.atomic != "cas" or not xa.operands or xa.operands[0] != cond.b:
                    return False
            if x.kind in (ir.TMA_STORE, ir.CALL):
                return False
    return True


def _index(o: ir.Op) -> E.Expr | None:
    ga = o.global_access
    if ga is None:
        return None
    return ga.atomic_index if o.kind == ir.GLOBAL_SIGNAL else ga.index


def _strong(o: ir.Op) -> bool:
    ga = o.global_access
    if ga is None:
        return False
    if o.kind == ir.GLOBAL_SIGNAL:
        return ga.scope in (None, "gpu", "sys")
    return ga.sem == "relaxed" and ga.scope in (None, "gpu", "sys")


def _writes(o: ir.Op) -> bool:
    return o.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL)


def _launch_blocks(an: Analysis) -> int | None:
    """The number of blocks of every launch of this kernel in the file, when one integer."""
    grid = an.model.grid
    base = an.model.name.split(" [op ")[0].split("<")[0].split("::")[-1]
    sizes = {g.blocks for _i, g in grid.launches_of(base)} if grid is not None else set()
    if len(sizes) != 1 or None in sizes:
        return None
    return next(iter(sizes))


def _grid_barrier_at(an: Analysis, o: ir.Op, loops: tuple, n: int) -> bool:
    """A grid barrier every thread runs once per iteration of `loops` (no condition of its own)."""
    if o.kind != ir.SYNC or o.sync_kind != "grid" or tuple(o.loops) != loops:
        return False
    if not o.guard.exact:
        return False
    # a condition of its own only where it is the loops' going on past a `break` (`Loop.continues`):
    # a block that reaches a later iteration (or a later op of this one) has passed it; and a block
    # passes a grid barrier's instance only when every block has arrived at it
    goes_on = {c for lid in loops if (lp := an.model.loops.get(lid)) is not None for c in lp.continues}
    if any(c not in goes_on for c in o.guard.uniform):
        return False
    return an.threads.executing(o) == frozenset(range(n))


def _grid_data(an: Analysis) -> GridFacts:
    out = GridFacts()
    m = an.model
    n = an.threads.n
    if n is None or not grid_only_orders(an):
        return out
    blocks = _launch_blocks(an)
    if blocks is not None and blocks < 2:
        return out
    if blocks is None and not _many_blocks(an):
        return out  # a kernel whose blocks do alike: launched with one block, or redundant work
    from .happens_before import thread_private

    fl = flow(an)
    by_base: dict[str, list[ir.Op]] = {}
    for o in fl.ops:
        ga = o.global_access
        if o.kind in _GLOBAL and ga is not None and ga.base is not None and ga.form in ("plain", "atomic", "ptx"):
            by_base.setdefault(ga.base, []).append(o)
    has_barrier = any(o.kind == ir.SYNC and o.sync_kind == "grid" for o in m.ops)
    for base, accs in sorted(by_base.items()):
        if not any(_writes(o) for o in accs) or thread_private(an, base):
            continue
        found = False
        for i, x in enumerate(accs):
            if found:
                break
            for y in accs[i:]:
                if found:
                    break
                if not (_writes(x) or _writes(y)) or (_strong(x) and _strong(y)):
                    continue
                if x.kind == ir.GLOBAL_STORE and y.kind == ir.GLOBAL_STORE:
                    continue  # two plain stores: the element holds one of the values (not asked)
                ix, iy = _index(x), _index(y)
                if ix is None or iy is None:
                    if has_barrier:
                        out.asked.add(base)
                        out.undecided.append((x, y, "an element not known"))
                    continue
                out.asked.add(base)
                race = _pair(an, fl, x, y, base, n, blocks, out)
                if race is not None:
                    out.races.append(race)
                    found = True  # one race per location
    return out


def _common(x: ir.Op, y: ir.Op) -> tuple:
    c: tuple = ()
    for a, b in zip(x.loops, y.loops):
        if a != b:
            break
        c += (a,)
    return c


def _pair(an: Analysis, fl, x: ir.Op, y: ir.Op, base: str, n: int, blocks: int | None, out: GridFacts):
    """x before y in program order (or x is y)."""
    common = _common(x, y)
    between = fl.same_iteration_between(x, y)
    if any(_grid_barrier_at(an, o, common, n) for o in between):
        same: bool | None = True
    elif any(o.kind == ir.SYNC and o.sync_kind == "grid" for o in between):
        same = None  # a grid barrier in a loop of its own, or under a condition
    else:
        same = False
    if same is None:
        out.undecided.append((x, y, "a grid barrier between them in a loop of its own or under a condition"))
        return None
    if not same:
        w = _meet(an, x, y, base, common, 0 if common else None, n, blocks, out)
        if w is not None:
            return w
    if not common:
        return None
    lid = common[-1]
    body = [o for o in fl.ops if lid in o.loops]
    back = [o for o in body if o.order > y.order] + [o for o in body if o.order < x.order]
    if any(_grid_barrier_at(an, o, common, n) for o in back):
        return None  # y(k) -> x(k + 1) passes a grid barrier, and so every later iteration
    if len(common) > 1 or any(o.kind == ir.SYNC and o.sync_kind == "grid" for o in back):
        out.undecided.append((x, y, "a pair across iterations of nested loops"))
        return None
    whole = any(_grid_barrier_at(an, o, common, n) for o in body)
    # y at iteration k, x at iteration k + d: d = 1 passes `back` only; d >= 2 a whole body
    w = _meet(an, y, x, base, common, 1 if whole else -1, n, blocks, out)
    if w is not None or same:
        return w
    # no grid barrier in the body at all: x at iteration k, y at any later one (the path from
    # x(k) to y(k + d) holds every op of the body)
    return _meet(an, x, y, base, common, -1, n, blocks, out)


def _meet(
    an: Analysis, a: ir.Op, b: ir.Op, base: str, common: tuple, later: int | None, n: int, blocks, out: GridFacts
):
    """Threads of two different blocks, a's and b's, naming one element, b running `later`
    iterations of the innermost common loop after a (0 the same iteration, -1 any d >= 1, None:
    no common loop). A GridRace, or None (never, or undecided: recorded)."""
    from .. import solver

    m = an.model
    if a.guard.blind or b.guard.blind:
        out.undecided.append((a, b, "the threads that run one of them are not known"))
        return None
    # a guard made inexact by tests of values the model does not follow (`Guard.opaque`, an
    # atomic's old value): the rest of it (`thread && uniform`) is asked without them, a
    # relaxation -- no meeting there is none at all; a witness there is no race (undecided)
    inexact = not all(o.guard.exact or _claims_only(an, o) for o in (a, b))
    ia, ib = _index(a), _index(b)
    assert ia is not None and ib is not None
    shift = E.Var("grid.d", E.LOOP)
    loop_names = {m.loops[lid].counter.name for o in (a, b) for lid in o.loops if lid in m.loops}
    for x in (ia, ib):
        for v in x.free_vars():
            if v.kind == E.OPAQUE or v.name.startswith("?"):
                out.undecided.append((a, b, "an element computed from data"))
                return None
            if v.kind == E.THREAD and v.name not in _THREAD_NAMES:
                out.undecided.append((a, b, f"an element over `{v.name}`"))
                return None
            if v.name.startswith("blockIdx") and v.name != "blockIdx.x":
                out.undecided.append((a, b, f"an element over `{v.name}`"))
                return None
            if v.kind == E.LOOP and v.name not in loop_names:
                out.undecided.append((a, b, "an element over a loop the access is not in"))
                return None

    def side(o: ir.Op, tag: str) -> tuple[dict[str, E.Expr], list[E.Expr], list[E.Expr]]:
        mp: dict[str, E.Expr] = {"tid": E.Var(f"tid.{tag}", E.PARAM), "blockIdx.x": E.Var(f"blockIdx.x.{tag}", E.PARAM)}
        for x in (_index(o), o.guard.thread, *o.guard.uniform):
            assert x is not None
            for v in x.free_vars():
                if v.name.startswith("?") or v.kind == E.OPAQUE:
                    mp[v.name] = E.Var(f"{v.name}.{tag}", E.PARAM)  # a data value of this side's own
        for lid in o.loops:
            lp = m.loops.get(lid)
            if lp is None:
                continue
            c = lp.counter.name
            if lid in common:
                mp[c] = E.Var(c, E.LOOP)
                if later not in (0, None) and o is b and lid == common[-1]:
                    mp[c] = E.binop("+", E.Var(c, E.LOOP), shift)
            else:
                mp[c] = E.Var(f"{c}.{tag}", E.LOOP)
        conds: list[E.Expr] = [E.substitute(o.guard.thread, mp)]
        conds += [E.substitute(c, mp) for c in o.guard.uniform]
        t, blk = mp["tid"], mp["blockIdx.x"]
        conds += [E.binop(">=", t, E.Const(0)), E.binop("<", t, E.Const(n))]
        conds += [E.binop(">=", blk, E.Const(0)), E.binop("<", blk, E.Var("gridDim.x", E.PARAM))]
        trips: list[E.Expr] = []
        for lid in o.loops:
            lp = m.loops.get(lid)
            if lp is None:
                continue
            ctr = E.substitute(lp.counter, mp)
            conds.append(E.binop(">=", ctr, E.Const(0)))
            if lp.trip is not None and not lp.trip.is_opaque():
                trips.append(E.binop("<", ctr, E.substitute(lp.trip, mp)))
        return mp, conds, trips

    ma, ca, ta = side(a, "a")
    mb, cb, tb = side(b, "b")
    conds = ca + cb
    conds.append(E.binop("!=", ma["blockIdx.x"], mb["blockIdx.x"]))
    conds.append(E.binop("==", E.substitute(ia, ma), E.substitute(ib, mb)))
    if blocks is not None:
        conds.append(E.binop("==", E.Var("gridDim.x", E.PARAM), E.Const(blocks)))
    if later == 1:
        conds.append(E.binop("==", shift, E.Const(1)))
    elif later == -1:
        conds.append(E.binop(">=", shift, E.Const(1)))
    # without the trip counts first (a relaxation: no meeting there is none at all), then with
    # them for a witness; an unknown answer is undecided, never "they never meet"
    mark = solver.inconclusive_count()
    w = solver.witness(E.conj(*conds), an.solver_timeout_ms)
    if w is not None and (ta or tb):
        w = solver.witness(E.conj(*conds, *ta, *tb), an.solver_timeout_ms)
        if w is None:
            out.undecided.append((a, b, "the solver did not decide whether they meet within the loops' trip counts"))
            return None
    if w is None:
        if solver.inconclusive_count() > mark:
            out.undecided.append((a, b, "the solver did not decide whether they meet"))
        return None
    if inexact:
        out.undecided.append((a, b, "the threads that run one of them are not known"))
        return None

    def num(name: str) -> int:
        v = w.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    env: dict[str, E.Expr] = {k: E.Const(num(v.name)) for k, v in ma.items() if isinstance(v, E.Var)}
    env["gridDim.x"] = E.Const(num("gridDim.x"))
    elem = E.substitute(ia, env)
    shown = f"{base}[{elem}]" if isinstance(elem, E.Const) else ""
    claims = not a.guard.exact or not b.guard.exact
    return GridRace(
        a, b, base, num("tid.a"), num("tid.b"), num("blockIdx.x.a"), num("blockIdx.x.b"), later, shown, claims
    )
