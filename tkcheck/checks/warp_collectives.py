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

from dataclasses import dataclass, field, replace

from .. import solver
from ..model import expr as E
from ..model import ir
from ..knowledge.ops import ACTIVEMASK
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
    # a site reached for some input only: the condition over a lane's input (a value it loads
    # from memory the kernel never writes) that holds for the reaching lanes and fails for the
    # missing ones, every time they come to it (`_input_mismatch`); None: for every input
    input_cond: E.Expr | None = None
    input_text: str = ""  # input_cond as the source spells its load (`keys[base + i] >= 0`)
    # a site under a test of a block-scope ticket: the execution asked (`thread 0 draws ticket 7
    # of `arrived_s``, checks/tickets.py)
    when: str = ""


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
        return None if op.warp_coll.instr == ACTIVEMASK else op.warp_coll.instr
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
                and (_warp_uniform(an, lp.trip) or _trip_per_warp(an, lp.trip))
            )
        memo[lid] = ok
    return memo[lid]


def _trip_per_warp(an: Analysis, trip: E.Expr) -> bool:
    """A trip count over the thread index and constants only (`for (i = tid; i < 16384; i +=
    256)`: ceil((16384 - tid) / 256)) that is one number for the 32 lanes of every warp of the
    block: evaluated per thread (the block size known)."""
    n = an.threads.n
    if n is None or any(v.name != "tid" for v in trip.free_vars()):
        return False
    for w in range(0, n, WARP):
        vals = {trip.eval({"tid": t, "tid_y": 0, "tid_z": 0}) for t in range(w, min(w + WARP, n))}
        if len(vals) != 1 or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
            return False
    return True


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

    # a class with sites under a test of a block-scope ticket (checks/tickets.py): asked once per
    # arriver that may draw the tested value, its sites then exact instances
    from . import tickets

    work: list[tuple[str, list[ir.Op], int | None]] = []
    back: dict[int, tuple[ir.Op, str]] = {}
    for ins, ops in sorted(by_instr.items()):
        per = tickets.instances(an, ops)
        if per is None:
            work.append((ins, ops, None))
            continue
        for a, row in zip(per.arrivers, per.rows):
            work.append((ins, row, a))
            for o, inst in zip(ops, row):
                if inst is not o:
                    back[id(inst)] = (o, per.when(a))
    for ins, ops, variant in work:
        if variant is not None and (
            any(mm.instr == ins for mm in out.mismatches) or any(u.instr == ins for u in out.undecided)
        ):
            continue  # settled by an earlier arriver's execution
        if all(warp_uniform_full(an, o) or kept_by_its_mask(an, o) for o in ops):
            continue  # every lane of a warp runs each site alike, and each is in the full mask, or
            # its mask is a run-time value naming exactly lanes that come to it: kept
        by_input = _input_mismatch(an, ins, ops, exited, n)
        if by_input is not None:
            out.mismatches.append(by_input)
            continue
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
                        # a lane B that reaches no site of the class: asked per lane A (how
                        # often A runs a site may depend on A: a loop it leaves by a `break`)
                        key = (mask, sa, sb, a if not sb else None)
                        verdict = pairs_done.get(key)
                        if verdict is None:
                            verdict = _compare(an, sites, weights, sa, sb, surely_reached, a)
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
    if back:
        for i, mm in enumerate(out.mismatches):
            if id(mm.site) in back:
                user, when = back[id(mm.site)]
                others = [back[id(o)][0] if id(o) in back else o for o in mm.others]
                out.mismatches[i] = replace(mm, site=user, others=others, when=when)
        for u in out.undecided:
            if id(u.site) in back:
                u.site = back[id(u.site)][0]
    return out


def _compare(
    an: Analysis, sites: list[_Site], weights, sa: frozenset[int], sb: frozenset[int], surely_reached, a: int
) -> str:
    """Lane A (thread `a`) reaching the sites `sa` of one class and mask, lane B `sb`:
    "missing:i" when B reaches fewer (sb within sa, its sites exact, A surely reaching site i
    that B does not), "equal" when their counts are proved equal, "unknown" otherwise. A lane B
    that reaches no site of the class at all (no thread guard of one admits it) misses site i
    that A runs at least once: its guard exact, and A's own iterations of its loops (a loop A
    leaves by a lane-divergent `break` has a trip count per thread) admit one (`_reached_by`)."""
    if sb < sa and all(sites[i].exact for i in sb):
        for i in sorted(sa - sb):
            if surely_reached(sites[i]):
                return f"missing:{i}"
        if not sb:
            for i in sorted(sa):
                if sites[i].op.guard.exact and _reached_by(an, sites[i].op, a):
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


# ------------------------------------------------------------------ run-time member masks ----
# A member mask computed by a collective is a lane set with a meaning: `__ballot_sync(M, p)`
# names the lanes of M that executed it in that iteration with p true (every one of them gets
# the same value); `__match_any_sync(M, v)` names, for the executing lane, the lanes of M that
# executed it with the same v (it is in its own set, and each of those lanes gets that same
# set). A collective whose mask is such a value, run in the same iteration under the same
# guard (for a ballot, plus its predicate), is executed by exactly the lanes its mask names,
# with that mask: kept. `__activemask()` is an event with a value too (`ACTIVEMASK`), but two
# lanes may read different sets of it, so a collective over it is not kept here (undecided).

_MASK_PRODUCERS = ("vote.sync.ballot", "match.sync.any")


def mask_producer(an: Analysis, op: ir.Op) -> ir.Op | None:
    """The collective (or `__activemask()`) whose value is `op`'s member mask, or None."""
    mexpr = _mask_expr(op)
    if not isinstance(mexpr, E.Var) or mexpr.kind != E.OPAQUE:
        return None

    def table(an_: Analysis) -> dict[str, ir.Op]:
        return {
            o.warp_coll.result: o
            for o in an_.model.ops
            if o.kind == ir.WARP_COLL and o.warp_coll is not None and o.warp_coll.result
        }

    return an.fact("warp_collectives.mask_values", table).get(mexpr.name)


def _truth_forms(e: E.Expr) -> set[E.Expr]:
    """`p`, and `p != 0` (how a branch on an int predicate may read it)."""
    return {e, E.binop("!=", e, E.Const(0))}


def opaque_atoms(g: ir.Guard) -> tuple[E.Expr, ...]:
    """The guard's conditions over unmodelled values, `a && b` split into a and b."""
    out: list[E.Expr] = []

    def walk(c: E.Expr) -> None:
        if isinstance(c, E.Bin) and c.op == "&&":
            walk(c.a)
            walk(c.b)
        else:
            out.append(c)

    for c in g.opaque:
        walk(c)
    return tuple(out)


def kept_by_its_mask(an: Analysis, op: ir.Op, depth: int = 0) -> bool:
    """Is `op`'s member mask a run-time value naming exactly the lanes that execute `op`, each of
    them computing that same value and being in it? Its producer P (a ballot or `match_any`) is
    in the same loops before it, with no early exit between, and `op`'s guard is P's (a ballot:
    plus P's predicate); neither guard hides a condition that is no expression."""
    p = mask_producer(an, op)
    if p is None or p.warp_coll is None or p.warp_coll.instr not in _MASK_PRODUCERS or depth > 8:
        return False
    if p.loops != op.loops or p.order >= op.order or p.guard.blind or op.guard.blind:
        return False
    if p.guard.thread != op.guard.thread or set(p.guard.uniform) != set(op.guard.uniform):
        return False
    if not set(opaque_atoms(p.guard)) <= set(opaque_atoms(op.guard)):
        return False
    extra = set(opaque_atoms(op.guard)) - set(opaque_atoms(p.guard))
    if p.warp_coll.instr == "vote.sync.ballot":
        if not p.warp_coll.operands:
            return False
        pred = p.warp_coll.operands[0]
        if extra - _truth_forms(pred) and extra != set(opaque_atoms(ir.Guard(opaque=(pred,)))):
            return False
        # the executing lane is in the ballot's value: it executed P with p true and is in P's mask
        pm = _mask_expr(p)
        full = isinstance(pm, E.Const) and isinstance(pm.value, int) and pm.value % (1 << 32) == FULL
        if not full and not kept_by_its_mask(an, p, depth + 1):
            return False
    elif extra:
        return False
    m = an.model
    if any(o.kind == ir.EXIT and p.order < o.order < op.order for o in m.ops):
        return False
    return all(m.loops.get(lid) is not None and not m.loops[lid].continues for lid in op.loops)


# ------------------------------------------------------------------ a lane's input ----
# A value a lane loads (`keys[base + i]`) from memory no thread of the kernel writes, at an
# element no other lane of its warp loads in any iteration, is the lane's own input: some launch
# gives every lane of a warp the values it chooses. A guard over it may then hold for one lane
# and fail, every time, for another.


def lane_input(an: Analysis, v: E.Var) -> ir.Op | None:
    """The plain load whose value `v` is, when it is a lane's input (see above); None otherwise."""
    m = an.model
    loads = [
        o for o in m.ops if o.kind == ir.GLOBAL_LOAD and o.global_access is not None and o.global_access.value == v.name
    ]
    if len(loads) != 1:
        return None
    ld = loads[0]
    ga = ld.global_access
    assert ga is not None
    if ga.base is None or ga.index is None or ga.sem != "weak" or ld.guard.blind or not ld.guard.exact:
        return None
    for o in m.ops:
        if o.kind in (ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL):
            if o.global_access is None or o.global_access.base is None or o.global_access.base == ga.base:
                return None  # written by the kernel (or by a store whose memory is not known)
    memo = an.fact("warp_collectives.lane_inputs", lambda _an: {})
    if id(ld) not in memo:
        memo[id(ld)] = _private_per_lane(an, ld)
    return ld if memo[id(ld)] else None


def _private_per_lane(an: Analysis, ld: ir.Op) -> bool:
    """No two lanes of one warp load the same element of `ld`, in any iterations of its loops
    (z3 over two lanes' thread indices and loop counters)."""
    ga = ld.global_access
    n = an.threads.n
    if ga is None or ga.index is None or n is None:
        return False
    m = an.model
    a_map: dict[str, E.Expr] = {"tid": E.Var("tid@a", E.PARAM)}
    b_map: dict[str, E.Expr] = {"tid": E.Var("tid@b", E.PARAM)}
    ranges: list[E.Expr] = []
    for lid in ld.loops:
        lp = m.loops.get(lid)
        if lp is None or not isinstance(lp.counter, E.Var):
            return False
        a_map[lp.counter.name] = E.Var(f"{lp.counter.name}@a", E.PARAM)
        b_map[lp.counter.name] = E.Var(f"{lp.counter.name}@b", E.PARAM)
    known = {"tid", *(n_ for n_ in a_map)}
    if any(v.kind in (E.THREAD, E.LOOP, E.OPAQUE) and v.name not in known for v in ga.index.free_vars()):
        return False
    for lid in ld.loops:
        lp = m.loops[lid]
        for mp in (a_map, b_map):
            k = mp[lp.counter.name]  # type: ignore[union-attr]
            ranges.append(E.binop(">=", k, E.Const(0)))
            if lp.trip is not None:
                ranges.append(E.binop("<", k, E.substitute(lp.trip, mp)))
    ta, tb = a_map["tid"], b_map["tid"]
    same_warp = E.conj(
        E.binop("==", E.binop("/", ta, E.Const(WARP)), E.binop("/", tb, E.Const(WARP))),
        E.binop("!=", ta, tb),
        E.binop(">=", ta, E.Const(0)),
        E.binop("<", ta, E.Const(n)),
        E.binop(">=", tb, E.Const(0)),
        E.binop("<", tb, E.Const(n)),
    )
    differ = E.binop("!=", E.substitute(ga.index, a_map), E.substitute(ga.index, b_map))
    return solver.always(differ, an.solver_timeout_ms, assume=(same_warp, *ranges)) is True


def _reached_by(an: Analysis, op: ir.Op, t: int) -> bool:
    """Thread t runs `op` at least once for some launch values, its opaque conditions aside: its
    thread guard holds for t, and its loops' ranges (at t) admit an iteration in which its
    block-uniform conditions hold (z3)."""
    at = {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)}
    if op.guard.thread.eval({"tid": t, "tid_y": 0, "tid_z": 0}) is not True:
        return False
    m = an.model
    conds = [E.substitute(c, at) for c in op.guard.uniform]
    for lid in op.loops:
        lp = m.loops.get(lid)
        if lp is None or lp.trip is None or lp.infinite or lp.cond is not None or lp.data_cond:
            return False
        conds.append(E.binop(">=", lp.counter, E.Const(0)))
        conds.append(E.binop("<", lp.counter, E.substitute(lp.trip, at)))
    if any(c.depends_on(E.THREAD) or c.is_opaque() for c in conds):
        return False
    return not conds or solver.feasible(E.conj(*conds), an.solver_timeout_ms)


def _input_mismatch(an: Analysis, ins: str, ops: list[ir.Op], exited: set[int], n: int) -> Mismatch | None:
    """A site S of the class with a constant mask, reached under a condition C over one lane
    input x (and thread / block-uniform conditions that are expressions): for the input where
    C(x) holds for lane A every time and fails for every other lane every time, A reaches S at
    least once and the other lanes named by the mask reach no site of the class (each of those
    that they may reach has C in its guard too), never leaving the kernel: A waits for lanes that
    never come. C must hold for some value and fail for another (z3)."""
    for s in ops:
        mexpr = _mask_expr(s)
        g = s.guard
        if not isinstance(mexpr, E.Const) or g.blind or not g.opaque or g.exact:
            continue
        # a lane's value read anew each iteration (`E.per_iteration`) is one value in the
        # iteration the load and the collective share (`ld.loops == s.loops` below)
        here = [E.within_iteration(c) for c in g.opaque]
        inputs = {v for c in here for v in c.free_vars() if v.kind == E.OPAQUE}
        if len(inputs) != 1 or any(v.kind in (E.LOOP,) for c in here for v in c.free_vars()):
            continue
        (x,) = inputs
        if any(v.kind != E.OPAQUE for c in here for v in c.free_vars()):
            continue  # over the thread or a counter too: not one lane's choice
        ld = lane_input(an, x)
        if ld is None or ld.loops != s.loops or ld.order > s.order:
            continue
        cond = E.conj(*here)
        if not solver.feasible(cond, an.solver_timeout_ms) or not solver.feasible(E.negate(cond), an.solver_timeout_ms):
            continue
        others_gated = all(
            o is s or (not o.guard.blind and set(opaque_atoms(g)) <= set(opaque_atoms(o.guard))) for o in ops
        )
        if not others_gated:
            continue
        threads = an.threads.satisfying(g.thread)
        if not threads:
            continue
        mask = mexpr.value % (1 << 32) if isinstance(mexpr.value, int) else None
        if mask is None:
            continue
        for a in sorted(threads):
            w = a // WARP
            if a in exited or w * WARP + WARP > n or not mask >> (a % WARP) & 1:
                continue
            named = [t for t in range(w * WARP, w * WARP + WARP) if mask >> (t % WARP) & 1 and t != a]
            missing = [t for t in named if t not in exited]
            if not missing or any(t in exited for t in named):
                continue
            if not _reached_by(an, s, a):
                continue
            return Mismatch(
                "missing",
                s,
                ins,
                mask,
                w,
                frozenset({a % WARP}),
                frozenset(t % WARP for t in missing),
                input_cond=cond,
                input_text=str(E.substitute(cond, {x.name: E.Var(ld.global_access.text or "input", E.PARAM)})),  # type: ignore[union-attr]
            )
    return None


# ------------------------------------------------------------------ leaders and chosen inputs ----
# An access guarded by conditions over lanes' inputs and by a leader test (`lane == __ffs(peers)
# - 1`, peers a run-time mask) is run by threads the input picks. For the race questions one
# input is enough: every lane of every warp loads one value x0 (each condition over x holds for
# it), so every lane that reaches the mask's producer is in one group, and its leader is the
# lowest such lane of each warp. Under that input the access is run by known threads, every
# iteration, at a known element: an *instance* with an exact guard, asked like any other access.


@dataclass
class Instance:
    op: ir.Op  # the access under the chosen input: an exact guard, its index with x0 substituted
    original: ir.Op
    input_text: str  # the input, as a user reads it (`every lane loads keys[base + i] = 0`)


def _leader_atom(an: Analysis, c: E.Expr) -> str | None:
    """`tid % 32 == __ffs(m) - 1` (either side): the Var name of m; None when c is no such test."""
    if not isinstance(c, E.Bin) or c.op != "==":
        return None
    for lane, other in ((c.a, c.b), (c.b, c.a)):
        if lane != E.binop("%", E.TID, E.Const(WARP)):
            continue
        if isinstance(other, E.Bin) and other.op == "-" and other.b == E.Const(1) and isinstance(other.a, E.Var):
            m = an.model.lowest_lane_of.get(other.a.name)
            if m is not None:
                return m
    return None


def _producer_of(an: Analysis, name: str) -> ir.Op | None:
    for o in an.model.ops:
        if o.kind == ir.WARP_COLL and o.warp_coll is not None and o.warp_coll.result == name:
            return o
    return None


def instances(an: Analysis, ops: list[ir.Op], target: tuple[ir.Op, int] | None = None) -> list[Instance] | None:
    """`ops` (each with an exact guard, or one inexact only through conditions over one lane
    input x and leader tests) under one chosen input: x0 the same for every lane and iteration,
    every condition over x true, and -- when `target` (an exact access and one of its threads)
    is given -- the first inexact access's element the one that thread names. None: no such
    input is proved to exist, or an access is not of that form."""
    inputs: set[E.Var] = set()
    conds: list[E.Expr] = []
    leaders: dict[int, list[ir.Op]] = {}
    for o in ops:
        g = o.guard
        if g.exact:
            continue
        if g.blind or not g.opaque or an.threads.satisfying(g.thread) is None:
            return None
        for c in opaque_atoms(g):
            m = _leader_atom(an, c)
            if m is not None:
                p = _producer_of(an, m)
                if p is None or not _leader_producer_ok(an, p, o):
                    return None
                leaders.setdefault(id(o), []).append(p)
                continue
            conds.append(c)
        for ix in o.buffer.index if o.buffer is not None else ():
            inputs |= {v for v in ix.free_vars() if v.kind == E.OPAQUE}
    for c in conds:
        inputs |= {v for v in c.free_vars() if v.kind == E.OPAQUE}
    for ps in leaders.values():
        for p in ps:
            assert p.warp_coll is not None
            for e in p.warp_coll.operands[:1]:
                inputs |= {v for v in e.free_vars() if v.kind == E.OPAQUE}
            if p.warp_coll.instr == "vote.sync.ballot" and p.warp_coll.operands:
                conds.append(p.warp_coll.operands[0])
    if len(inputs) != 1:
        return None
    (x,) = inputs
    ld = lane_input(an, x)
    if ld is None:
        return None
    if any(c.depends_on(E.THREAD) or c.depends_on(E.LOOP) for c in conds):
        return None
    goal = list(conds)
    if target is not None:
        other, t = target
        first = next((o for o in ops if not o.guard.exact), None)
        if first is None or first.buffer is None or other.buffer is None:
            return None
        at = {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)}
        for a, b in zip(first.buffer.index, other.buffer.index):
            goal.append(E.binop("==", a, E.substitute(b, at)))
    got = solver.witness(E.conj(*goal) if goal else E.TRUE, an.solver_timeout_ms)
    if got is None or not isinstance(got.get(x.name), int) or isinstance(got.get(x.name), bool):
        return None
    x0 = E.Const(got[x.name])
    n = an.threads.n
    assert n is not None
    out: list[Instance] = []
    ga = ld.global_access
    text = f"every lane loads `{ga.text if ga is not None else x.name}` = {x0.value}"
    for o in ops:
        g = o.guard
        if g.exact:
            continue
        thread = g.thread
        for p in leaders.get(id(o), []):
            lead = _lowest_lanes(an, p, o, n)
            if lead is None:
                return None
            thread = E.binop("&&", thread, lead)
            text += "; the lowest lane of each warp that runs `" + p.api + "` leads its group"
        idx = tuple(E.substitute(ix, {x.name: x0}) for ix in (o.buffer.index if o.buffer is not None else ()))
        buf = replace(o.buffer, index=idx) if o.buffer is not None else None
        inst = replace(o, guard=ir.Guard(thread, g.uniform, True, ()), buffer=buf)
        out.append(Instance(inst, o, text))
    return out


def _leader_producer_ok(an: Analysis, p: ir.Op, o: ir.Op) -> bool:
    """The mask producer p of a leader test in o's guard: a ballot or `match_any` in o's loops
    before it, whose own guard is o's less the leader tests (no condition that is no expression),
    whose member mask names every lane that runs it (the full warp, or a run-time mask kept)."""
    if p.warp_coll is None or p.warp_coll.instr not in _MASK_PRODUCERS:
        return False
    if p.loops != o.loops or p.order >= o.order or p.guard.blind:
        return False
    if p.guard.thread != o.guard.thread or set(p.guard.uniform) != set(o.guard.uniform):
        return False
    if not set(opaque_atoms(p.guard)) <= set(opaque_atoms(o.guard)):
        return False
    pm = _mask_expr(p)
    full = isinstance(pm, E.Const) and isinstance(pm.value, int) and pm.value % (1 << 32) == FULL
    if full:
        # the full mask: every warp its thread guard admits must be whole (else p is a broken
        # collective, and its value names no group)
        ts = an.threads.satisfying(p.guard.thread)
        return ts is not None and all(all(w * WARP + i in ts for i in range(WARP)) for w in {t // WARP for t in ts})
    return kept_by_its_mask(an, p)


def _lowest_lanes(an: Analysis, p: ir.Op, o: ir.Op, n: int) -> E.Expr | None:
    """The lowest lane of each warp among the threads that run p (its thread guard), as a thread
    condition; None when that is not one lane index for every warp."""
    ts = an.threads.satisfying(p.guard.thread)
    if not ts:
        return None
    lows = {min(t for t in ts if t // WARP == w) % WARP for w in {t // WARP for t in ts}}
    if len(lows) != 1:
        return None
    (low,) = lows
    return E.binop("==", E.binop("%", E.TID, E.Const(WARP)), E.Const(low))
