"""Warp collectives and their member masks: does every lane a collective's mask names execute it?

A warp collective (`WARP_COLL`: PTX `shfl.sync`, `vote.sync`, `match.sync`, `redux.sync`,
`elect.sync` and CUDA's `__shfl_*_sync`, `__ballot_sync`, ...; and `__syncwarp(mask)` /
`bar.warp.sync`, a SYNC of kind warp) makes the executing thread wait until every non-exited
lane named in its member mask has executed the same instruction with the same mask (PTX ISA:
"with the same qualifiers and same membermask value"; `bar.warp.sync` pairs any two sites of
one mask on sm_70+), and the executing lane must be in the mask. Otherwise the behaviour is
undefined: a hang, or values from lanes that never took part.

The question is asked per *class* -- the instruction with the qualifiers that must agree
(`shfl.sync.down`, `vote.sync.ballot`, `elect.sync`, `bar.warp.sync`) and the mask's value --
and per warp: two lanes A and B of one warp, both named by mask M, must execute the class's
sites the same number of times. Proved broken (a `Mismatch`):

* an executing lane outside the mask of a site it reaches (`not_in_mask`);
* lane B reaches only sites of the class that lane A reaches too (each of them with an exact
  guard, so A and B run it equally often: its block-uniform conditions and loops are the same
  for both), and A reaches one more that B never does, at least once (its guard exact, its
  uniform conditions satisfiable within its loops' ranges, z3): A waits there for B, which
  never comes (`missing`). Neither lane may leave the kernel early.

Proved kept: every lane named in a mask reaches exactly the sites the executing lanes do, or
their counts are equal for every launch value (z3, sites with exact guards, no condition on a
loop counter, trip counts constant where the sites' loops differ). Anything else -- an unknown
mask (`__activemask()`, a value computed at run time), a guard that is not exact or names a
loop counter, an early exit of unknown threads, counts neither equal nor ordered -- leaves the
class *undecided* (coverage), never a finding and never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import solver
from ..model import expr as E
from ..model import ir
from .analysis import Analysis
from .wide_barriers import _weights

WARP = 32
FULL = 0xFFFFFFFF


@dataclass
class Mismatch:
    """A collective site whose mask names lanes of a warp that do not execute it (or whose
    executing lane is not in its mask)."""

    kind: str  # missing | not_in_mask
    site: ir.Op
    instr: str
    mask: int
    warp: int
    reaching: frozenset[int]  # lanes (0-31) of the warp that execute the site
    missing: frozenset[
        int
    ]  # lanes named by the mask that never execute it (not_in_mask: the executing lanes outside it)
    others: list[ir.Op] = field(default_factory=list)  # the class's sites the missing lanes do reach


@dataclass
class Undecided:
    instr: str
    site: ir.Op
    why: str


@dataclass
class WarpCollectives:
    asked: int = 0  # classes of instruction asked about (one obligation each)
    mismatches: list[Mismatch] = field(default_factory=list)
    undecided: list[Undecided] = field(default_factory=list)


def instr_of(op: ir.Op) -> str | None:
    if op.kind == ir.WARP_COLL and op.warp_coll is not None:
        return op.warp_coll.instr
    if op.kind == ir.SYNC and op.sync_kind == "warp":
        return "bar.warp.sync"
    return None


def collectives(an: Analysis) -> WarpCollectives:
    return an.fact("warp_collectives.collectives", _collectives)


def _mask_expr(op: ir.Op) -> E.Expr | None:
    if op.kind == ir.SYNC:
        return op.sync.mask if op.sync is not None and op.sync.mask is not None else E.Const(FULL)
    return op.warp_coll.mask if op.warp_coll is not None else None


def member_mask(op: ir.Op, t: int) -> int | None:
    """The member mask of a warp collective or `__syncwarp(mask)` as thread t runs it (no mask:
    the full warp), as 32 bits; None: not known (`__activemask()`, a value of run time). The one
    reading of a mask: the race questions (`happens_before.in_warp_mask`) ask it too."""
    mexpr = _mask_expr(op)
    if mexpr is None:
        return None
    v = mexpr.eval({"tid": t, "tid_y": 0, "tid_z": 0})
    return v % (1 << 32) if isinstance(v, int) and not isinstance(v, bool) else None


def describe_lanes(lanes) -> str:
    """`lanes 0-15`, `lane 3`, `lanes 0-7, 16-23`."""
    xs = sorted(lanes)
    if not xs:
        return "no lane"
    runs, start, prev = [], xs[0], xs[0]
    for x in xs[1:]:
        if x != prev + 1:
            runs.append((start, prev))
            start = x
        prev = x
    runs.append((start, prev))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
    return ("lane " if len(xs) == 1 else "lanes ") + text


class _Site:
    """One site of a class: the threads its thread guard admits (a superset of those that run it
    when the guard is not exact), each thread's mask, and whether its count is known."""

    def __init__(self, an: Analysis, op: ir.Op):
        m = an.model
        self.op = op
        self.why: str | None = None
        self.threads = an.threads.satisfying(op.guard.thread)
        self.masks: dict[int, int] = {}
        conds = tuple(op.guard.uniform)
        loops_uniform = all(m.loops.get(lid) is not None and m.loops[lid].uniform for lid in op.loops)
        # exact: every thread of `threads` runs it, under block-uniform conditions the same for all
        self.exact = (
            op.guard.exact
            and self.threads is not None
            and loops_uniform
            and not any(c.is_opaque() or c.depends_on(E.THREAD) for c in conds)
        )
        self.loop_conds = any(c.depends_on(E.LOOP) for c in conds)
        if self.threads is None:
            self.why = "the lanes that execute it are not known (a condition on something besides the thread index)"
            return
        mexpr = _mask_expr(op)
        if mexpr is None:
            self.why = "its member mask is not known (`__activemask()` or a value computed at run time)"
            return
        for t in self.threads:
            v = member_mask(op, t)
            if v is None:
                self.why = f"its member mask `{mexpr}` is not a number the model knows"
                return
            self.masks[t] = v


def warp_uniform_full(an: Analysis, op: ir.Op) -> bool:
    """Does every lane of a warp execute the site alike -- each time one lane runs it, all 32
    do -- with the full member mask? Its guard is exact, its block-uniform conditions the same
    for every thread, its loops run as often by every lane of a warp (block-uniform, or a trip
    count over the warp index: `for (idx = 0; idx < tile + warpgroup::groupid(); idx++)`), and its
    thread guard depends on the thread index only through the warp index
    (`warpgroup::warpid() == iter % 4`)."""
    mexpr = _mask_expr(op)
    if not isinstance(mexpr, E.Const) or not isinstance(mexpr.value, int) or mexpr.value % (1 << 32) != FULL:
        return False
    g = op.guard
    if not g.exact or g.opaque:
        return False
    if not all(_warp_uniform_loop(an, lid) for lid in op.loops):
        return False
    if any(c.is_opaque() or c.depends_on(E.THREAD) for c in g.uniform):
        return False
    return _warp_uniform(an, g.thread)


def _warp_uniform_loop(an: Analysis, lid: int) -> bool:
    """Every lane of a warp runs loop `lid` (and the loops around it) the same number of times."""
    memo = an.fact("warp_collectives.warp_uniform_loops", lambda _an: {})
    if lid not in memo:
        memo[lid] = False  # a cycle of parents: not
        lp = an.model.loops.get(lid)
        ok = lp is not None and (lp.parent is None or _warp_uniform_loop(an, lp.parent))
        if ok and not lp.uniform:
            ok = (
                lp.trip is not None
                and not lp.infinite
                and lp.cond is None
                and not lp.data_cond
                and not lp.continues
                and _warp_uniform(an, lp.trip)
            )
        memo[lid] = ok
    return memo[lid]


def _multiple_of_warp(x: E.Expr) -> bool:
    return isinstance(x, E.Const) and type(x.value) is int and x.value > 0 and x.value % WARP == 0


def _warp_index(x: E.Expr) -> E.Expr | None:
    """`tid / c` or `(tid % d) / c` (c, d multiples of 32) as a value the same for a warp's lanes."""
    if isinstance(x, E.Bin) and x.op == "/" and _multiple_of_warp(x.b):
        a = x.a
        if a == E.TID or (isinstance(a, E.Bin) and a.op == "%" and a.a == E.TID and _multiple_of_warp(a.b)):
            return E.Var(f"warp_index:{x}", E.PARAM)
    return None


def _warp_uniform(an: Analysis, e: E.Expr) -> bool:
    """Is `e` the same for the 32 lanes of a warp: over the thread index only through the warp
    index, the rest launch values (block-uniform by the model's kind) and counters of loops every
    lane of a warp runs alike?"""
    counters = {lp.counter.name: lid for lid, lp in an.model.loops.items() if isinstance(lp.counter, E.Var)}
    thread = False
    for v in e.free_vars():
        if v.kind == E.THREAD:
            if v.name != "tid":
                return False
            thread = True
        elif v.kind == E.LOOP:
            if v.name not in counters or not _warp_uniform_loop(an, counters[v.name]):
                return False
        elif v.kind != E.PARAM:
            return False
    if not thread:
        return True
    # every use of tid is `tid / c` or `(tid % d) / c` with c and d multiples of 32 (the 32 lanes
    # of a warp lie in one aligned block of c, and of d); read from the expression, no solver
    # query (a z3 identity over the large trip counts of TK's loops spends the budget)
    return not any(v.kind == E.THREAD for v in E.rewrite(e, _warp_index).free_vars())


def _reached(an: Analysis, op: ir.Op) -> bool:
    """The site runs at least once (for some launch values): its loops' ranges admit an iteration
    in which its block-uniform conditions hold (z3)."""
    m = an.model
    conds = list(op.guard.uniform)
    for lid in op.loops:
        lp = m.loops.get(lid)
        if lp is None:
            return False
        k = lp.counter
        conds.append(E.binop(">=", k, E.Const(0)))
        if lp.trip is not None:
            conds.append(E.binop("<", k, lp.trip))
        elif lp.cond is None and not lp.infinite:
            return False  # how often it runs is not known
    if not conds:
        return True
    return solver.feasible(E.conj(*conds), an.solver_timeout_ms)


def _collectives(an: Analysis) -> WarpCollectives:
    out = WarpCollectives()
    m = an.model
    by_instr: dict[str, list[ir.Op]] = {}
    for op in m.ops:
        ins = instr_of(op)
        if ins is not None:
            by_instr.setdefault(ins, []).append(op)
    if not by_instr:
        return out
    out.asked = len(by_instr)
    n = an.threads.n

    def undecided(ins: str, op: ir.Op, why: str) -> None:
        out.undecided.append(Undecided(ins, op, why))

    if n is None:
        for ins, ops in sorted(by_instr.items()):
            undecided(ins, ops[0], "the block size is not known")
        return out
    exited: set[int] = set()
    for e in m.ops_of(ir.EXIT):
        ex = an.threads.satisfying(e.guard.thread)
        if ex is None:
            for ins, ops in sorted(by_instr.items()):
                undecided(ins, ops[0], "threads that leave the kernel early are not known")
            return out
        exited |= ex
    reached: dict[int, bool] = {}

    def surely_reached(s: _Site) -> bool:
        if id(s.op) not in reached:
            reached[id(s.op)] = s.exact and _reached(an, s.op)
        return reached[id(s.op)]

    for ins, ops in sorted(by_instr.items()):
        if all(warp_uniform_full(an, o) for o in ops):
            continue  # every lane of a warp runs each site alike, and each is in the full mask: kept
        sites = [_Site(an, o) for o in ops]
        bad = next((s for s in sites if s.why is not None), None)
        if bad is not None:
            undecided(ins, bad.op, f"`{bad.op.api}`: {bad.why}")
            continue
        found_before = len(out.mismatches)
        unknown: tuple[_Site, str] | None = None
        # not in its own mask
        for s in sites:
            outside: dict[int, set[int]] = {}
            for t in s.threads:
                if t in exited or t // WARP * WARP + WARP > n:
                    continue
                if not s.masks[t] >> (t % WARP) & 1:
                    outside.setdefault(t // WARP, set()).add(t % WARP)
            if outside and surely_reached(s):
                w = min(outside)
                out.mismatches.append(
                    Mismatch(
                        "not_in_mask",
                        s.op,
                        ins,
                        s.masks[w * WARP + min(outside[w])],
                        w,
                        frozenset(t % WARP for t in s.threads if t // WARP == w),
                        frozenset(outside[w]),
                    )
                )
        # the lanes named by each mask, warp by warp
        weights = _weights(m, ops)
        pairs_done: dict[tuple, str] = {}
        for w in range((n + WARP - 1) // WARP):
            lanes = [t for t in range(w * WARP, min(w * WARP + WARP, n))]
            if len(lanes) < WARP:
                unknown = unknown or (sites[0], "a partial warp")
                continue
            per_mask: dict[int, dict[int, set[int]]] = {}  # mask -> lane -> site indices
            for i, s in enumerate(sites):
                for t in lanes:
                    if t in s.threads:
                        per_mask.setdefault(s.masks[t], {}).setdefault(t, set()).add(i)
            for mask, sig in sorted(per_mask.items()):
                named = [t for t in lanes if mask >> (t % WARP) & 1 and t not in exited]
                sigs = {t: frozenset(sig.get(t, ())) for t in named}
                for a in named:
                    sa = sigs[a]
                    if not sa:
                        continue
                    for b in named:
                        sb = sigs[b]
                        if b == a or sb == sa and all(sites[i].exact for i in sa):
                            continue
                        key = (mask, sa, sb)
                        verdict = pairs_done.get(key)
                        if verdict is None:
                            verdict = _compare(an, sites, weights, sa, sb, surely_reached)
                            pairs_done[key] = verdict
                        if verdict == "unknown" and unknown is None:
                            unknown = (
                                sites[min(sa ^ sb or sa)],
                                "lanes named by one mask reach its sites a number of times not proved equal",
                            )
                        if verdict.startswith("missing:"):
                            i = int(verdict.split(":")[1])
                            site = sites[i]
                            if any(mm.site is site.op and mm.mask == mask for mm in out.mismatches):
                                continue
                            reaching = frozenset(t % WARP for t in lanes if i in sigs.get(t, ()))
                            missing = frozenset(t % WARP for t in named if i not in sigs[t] and sigs[t] <= sa)
                            out.mismatches.append(
                                Mismatch(
                                    "missing",
                                    site.op,
                                    ins,
                                    mask,
                                    w,
                                    reaching,
                                    missing,
                                    [sites[j].op for j in sorted(sb)],
                                )
                            )
        if unknown is not None and len(out.mismatches) == found_before:
            undecided(ins, unknown[0].op, f"`{unknown[0].op.api}`: {unknown[1]}")
    return out


def _compare(an: Analysis, sites: list[_Site], weights, sa: frozenset[int], sb: frozenset[int], surely_reached) -> str:
    """Lane A reaching the sites `sa` of one class and mask, lane B `sb`: "missing:i" when B
    reaches fewer (sb within sa, its sites exact, A surely reaching site i that B does not),
    "equal" when their counts are proved equal, "unknown" otherwise."""
    if sb < sa and all(sites[i].exact for i in sb):
        for i in sorted(sa - sb):
            if surely_reached(sites[i]):
                return f"missing:{i}"
    involved = sa | sb
    if sa == sb and all(sites[i].exact for i in involved):
        return "equal"
    if weights is None or any(not sites[i].exact or sites[i].loop_conds for i in involved):
        return "unknown"

    def count(sig):
        total: E.Expr = E.Const(0)
        for i in sorted(sig):
            o = sites[i].op
            cond = E.conj(*o.guard.uniform) if o.guard.uniform else E.TRUE
            total = E.binop("+", total, E.ite(cond, E.Const(weights[i]), E.Const(0)))
        return total

    same = solver.always(E.binop("==", count(sa), count(sb)), an.solver_timeout_ms)
    return "equal" if same else "unknown"
