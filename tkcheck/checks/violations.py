"""The completion and phase engines' verdicts: which barrier accounts are proved broken.

Queries on `completion.accounts` (arrivals and bytes per phase) and on the ring pairing of TMA
loads with their stage's barrier, each a list of records: what the engine proved, with the
evidence a message needs. The completion-contract rules word them (the expect-tx contract
`byte_mismatches`, the arrival-count contract `arrival_mismatches`, the wrong-barrier contract
`wrong_barrier_loads`; the parity and phase-advance contracts read `phases`); the deadlock rules
ask them (and `phases`) whether a broken account already explains a hang, without running those
rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import solver
from ..model import expr as E
from ..model import ir
from . import completion, phases
from .analysis import Analysis


# -------------------------------------------------------------------- bytes --


@dataclass
class ByteMismatch:
    """Barrier `name`'s round `group`: the bytes its expects announce differ, always, from the
    bytes its TMA loads deliver."""

    name: str
    acc: completion.BarrierAccount
    group: str
    exps: list
    loads: list
    expected: E.Expr
    delivered: E.Expr
    # a mismatch in one case the data picks (`_data_case`): the `?:` / `min` and the side
    # taken, None when the accounts differ for every value
    case: tuple[E.Ite, bool] | None = None
    short: bool | None = None  # fewer bytes than expected (None: not known)


def byte_mismatches(an: Analysis) -> list[ByteMismatch]:
    return an.fact("violations.bytes", _byte_mismatches)


def _byte_mismatches(an: Analysis) -> list[ByteMismatch]:
    out = []
    for name, acc in sorted(completion.accounts(an).items()):
        if not acc.ok():
            continue
        reported = set()  # per-thread elements: one record per round kind
        seen_ctas: set = set()
        for group in sorted(set(acc.expects) | set(acc.loads)):
            if acc.per_thread and group.split(" ")[0] in reported:
                continue
            exps = acc.expects.get(group, [])
            loads = acc.loads.get(group, [])
            if not exps and not loads:
                continue
            expected = completion.total(exps)
            delivered = completion.total(loads)
            case = None
            if (
                expected.is_opaque()
                or delivered.is_opaque()
                or (solver.differ_always(expected, delivered, an.solver_timeout_ms) is not True)
            ):
                case = _data_case(expected, delivered, exps + loads, an.model.loops)
                if case is None:
                    continue
            if _same_in_other_cta(seen_ctas, group, expected, delivered):
                continue
            reported.add(group.split(" ")[0])
            assume = (_case_pred(case[0].c, case[1]),) if case else ()
            short = solver.always(E.binop(">", expected, delivered), assume=assume + _guards(exps + loads))
            out.append(ByteMismatch(name, acc, group, exps, loads, expected, delivered, case, short))
    return out


def _same_in_other_cta(seen: set, group: str, a: E.Expr, b: E.Expr) -> bool:
    """r15-remote: the copies of one barrier in several CTAs of the cluster (groups "... in CTA
    d") whose accounts differ by the same sums: one record, not one a CTA."""
    if " in CTA " not in group:
        return False
    key = (re.sub(r" in CTA \d+", "", group), str(a), str(b))
    if key in seen:
        return True
    seen.add(key)
    return False


def _is_data(c: E.Expr) -> bool:
    """A condition the data decides: over kernel arguments, loaded values or unmodelled ones
    (and perhaps loop counters: the tail iteration of `n - off < CH`), not over the thread."""
    vs = c.free_vars()
    return any(v.kind in (E.PARAM, E.OPAQUE) for v in vs) and all(v.kind in (E.PARAM, E.OPAQUE, E.LOOP) for v in vs)


def _runs(c: E.Expr, loops) -> tuple | None:
    """Each loop counter of `c` below its loop's trip count (the iterations that run), or None
    when a trip count is not known."""
    by_counter = {lp.counter.name: lp for lp in loops.values()}
    out = []
    for v in c.free_vars():
        if v.kind != E.LOOP:
            continue
        lp = by_counter.get(v.name)
        if lp is None or lp.trip is None or lp.trip.is_opaque():
            return None
        out.append(E.binop("<", v, lp.trip))
    return tuple(out)


def _case_pred(c: E.Expr, side: bool) -> E.Expr:
    """The data case of `c ? t : e` in which the side `side` is taken and matters."""
    return c if side else E.unop("!", c)


def _guards(contribs) -> tuple:
    return tuple(u for c in contribs for u in c.op.guard.uniform)


def _data_case(expected: E.Expr, delivered: E.Expr, contribs, loops) -> tuple[E.Ite, bool] | None:
    """A case the program itself distinguishes in which the byte accounts differ, always.

    A byte count of the form `c ? t : e` whose condition is data (`min(TR, rows_left)` of a
    ragged tail tile, `last ? tail : full`) says by its own code that either side may be taken:
    the kernel computes the smaller count because a tile may be shorter. For each side of each
    such choice, taken where the two sides differ (`min` taking its other operand), with the
    contributions' own block-uniform conditions (and a loop counter in the condition below its
    loop's trip count), the accounts are asked to differ for every
    value. One side proved to differ is a mismatch *in that case* (the finding says when); the
    case must be satisfiable with every byte count and trip count non-negative. Anything else (no such choice, a contribution whose conditions are
    not exact or merged as exclusive) is no mismatch here."""
    if any(not c.op.guard.exact or c.exclusive for c in contribs):
        return None
    # byte counts and trip counts are never negative: a case that makes one negative (the
    # clamp `n < 0 ? 0 : n` of a loop's trip count, an expect of a block past the data's end)
    # is no case of the program
    zero = E.Const(0)
    base = _guards(contribs) + tuple(
        E.binop(">=", x, zero)
        for x in (expected, delivered, *(c.amount for c in contribs), *(c.times for c in contribs))
        if x is not None
    )
    seen = []
    for x in (expected, delivered):
        for sub in E.subexprs(x):
            if isinstance(sub, E.Ite) and _is_data(sub.c) and sub not in seen:
                seen.append(sub)
    for ite in seen:
        runs = _runs(ite.c, loops)
        if runs is None:
            continue
        guards = base + runs
        for side in (True, False):
            pred = E.binop("&&", _case_pred(ite.c, side), E.binop("!=", ite.t, ite.e))
            if not solver.feasible(pred, assume=guards):
                continue
            if solver.always(E.binop("!=", expected, delivered), assume=(pred, *guards)) is True:
                return ite, side
    return None


def case_text(case: tuple[E.Ite, bool]) -> str:
    """For messages, with the unmodelled values spelled as the source spells them
    (`?grp.row_off[g + 1]#31` -> `grp.row_off[g + 1]`): a `min` / `max` case as the comparison
    of the side taken with the other (`when `rows_left` < 16`), else the condition's truth."""
    ite, side = case
    c, s, other = ite.c, (ite.t if side else ite.e), (ite.e if side else ite.t)
    if isinstance(c, E.Bin) and c.op in ("<", "<=", ">", ">=") and {c.a, c.b} == {ite.t, ite.e}:
        smaller_first = c.op in ("<", "<=")
        is_min = (c.a == ite.t) == smaller_first
        return f"when `{readable(s)}` {'<' if is_min else '>'} `{readable(other)}`"
    return f"when `{readable(c)}` is {'true' if side else 'false'}"


def readable(x: E.Expr) -> str:
    def fn(v):
        if isinstance(v, E.Var) and v.name.startswith("?") and not v.label:
            text = v.name[1:]
            head, sep, tail = text.rpartition("#")
            return E.Var(v.name, v.kind, v.is_bool, head if sep and tail.isdigit() else text)
        return None

    return str(E.rewrite(x, fn))


# ----------------------------------------------------------------- arrivals --


@dataclass
class ArrivalMismatch:
    """Barrier `name`: `kind` "none" (initialised for arrivals, waited on, nothing arrives),
    "silent" (a CTA of the cluster waits on its copy and every arrival lands on other CTAs'
    copies: `cta`, `wait`, `sources`) or "count" (round `group`: the arrivals per phase differ,
    always, from the init count)."""

    kind: str
    name: str
    acc: completion.BarrierAccount
    group: str = ""
    contribs: list = field(default_factory=list)
    init_count: E.Expr | None = None
    arrived: E.Expr | None = None
    cta: int | None = None
    wait: ir.Op | None = None
    sources: list = field(default_factory=list)
    phase: int | None = None  # kind "phase": the first phase whose arrivals differ (ragged account)


def arrival_mismatches(an: Analysis) -> list[ArrivalMismatch]:
    return an.fact("violations.arrivals", _arrival_mismatches)


def _arrival_mismatches(an: Analysis) -> list[ArrivalMismatch]:
    out = []
    for name, acc in sorted(completion.accounts(an).items()):
        if not acc.arrivals_ok() or (acc.init_count is None and not acc.group_init):
            continue
        if acc.ragged is not None:
            # i7model: arrivals enumerated phase by phase (arrive_drop, a ragged loop)
            p = acc.ragged.first_mismatch()
            if p is not None and acc.waits:
                out.append(
                    ArrivalMismatch(
                        "phase",
                        name,
                        acc,
                        f"phase {p}",
                        init_count=E.Const(acc.ragged.expected[p]),
                        arrived=E.Const(acc.ragged.arrived[p]),
                        phase=p,
                    )
                )
            continue
        if not acc.arrivals and acc.waits and acc.init_count is not None and acc.init_count.eval({}) not in (None, 0):
            out.append(ArrivalMismatch("none", name, acc, wait=acc.waits[0]))
            continue
        out.extend(_silent_copies(an, name, acc))
        reported = set()  # per-thread elements: one record per round kind
        seen_ctas: set = set()
        for group, contribs in sorted(acc.arrivals.items()):
            if not contribs:
                continue
            if acc.per_thread and group.split(" ")[0] in reported:
                continue
            init_count = acc.group_init.get(group, acc.init_count)
            if init_count is None:
                continue
            arrived = completion.total(contribs)
            if arrived.is_opaque() or init_count.is_opaque():
                continue
            if solver.differ_always(arrived, init_count, an.solver_timeout_ms) is not True:
                continue
            if _same_in_other_cta(seen_ctas, group, init_count, arrived):
                continue
            reported.add(group.split(" ")[0])
            out.append(ArrivalMismatch("count", name, acc, group, contribs, init_count, arrived))
    return out


def _silent_copies(an: Analysis, name: str, acc: completion.BarrierAccount) -> list[ArrivalMismatch]:
    """In a cluster: a CTA whose threads wait on their copy of the barrier while every arrival
    of the kernel lands on the other CTAs' copies (a commit or arrive that is not multicast)."""
    size = completion.cluster_size(an.model)
    if size is None or acc.init_count is None or acc.init_count.eval({}) in (None, 0) or not acc.arrivals:
        return []
    if acc.group_init or not all(" in CTA " in k for k in acc.arrivals):
        return []
    fed = {completion.cta_of(k) for k, cs in acc.arrivals.items() if cs}
    out = []
    for d in range(size):
        waits = [w for w in acc.waits if (r := completion.ranks_running(w, size)) is not None and d in r]
        if not waits or d in fed or any(completion.ranks_running(w, size) is None for w in acc.waits):
            continue
        sources = [c.op for cs in acc.arrivals.values() for c in cs][:3]
        out.append(ArrivalMismatch("silent", name, acc, cta=d, wait=waits[0], sources=sources))
    return out


# ---------------------------------------------------------- loads on a ring --


@dataclass
class WrongBarrierLoad:
    """A TMA load of a ring that fills stage `buffer_stage` at `iteration` but completes on the
    barrier of stage `barrier_stage`; `matched`: the loads / expects that pair stage and barrier
    as intended (the evidence)."""

    op: ir.Op
    barrier: str
    iteration: int | None
    buffer_stage: int
    barrier_stage: int
    matched: list


def _moving(op: ir.Op, index, names=None) -> list:
    names = names if names is not None else {f"k{lid}" for lid in op.loops}
    return [ix for ix in index if any(v.kind == E.LOOP and v.name in names for v in ix.free_vars())]


def load_stage(op: ir.Op) -> E.Expr | None:
    """The index of the buffer that moves with the loop (the stage), when there is one. With
    a loop of sub-tile loads (`B_s[s][p]`), the dims that move with the loops the barrier's
    index moves with."""
    if op.buffer is None or not op.loops:
        return None
    moving = _moving(op, op.buffer.index)
    if len(moving) > 1 and op.barrier is not None:
        names = {v.name for ix in op.barrier.index for v in ix.free_vars() if v.kind == E.LOOP}
        moving = _moving(op, op.buffer.index, names)
        if len(moving) > 1 or any(v.kind == E.LOOP and v.name not in names for ix in moving for v in ix.free_vars()):
            return None
    return moving[0] if len(moving) == 1 else None


def barrier_stage(op: ir.Op) -> E.Expr | None:
    """The barrier's index that moves with the loop: `full[s]`, or `bar[warp][s]` of a
    per-warp barrier array (its other dims are fixed per thread)."""
    if len(op.barrier.index) == 1:
        return op.barrier.index[0]
    moving = _moving(op, op.barrier.index)
    return moving[0] if len(moving) == 1 else None


def wrong_barrier_loads(an: Analysis) -> list[WrongBarrierLoad]:
    return an.fact("violations.wrong_barrier_loads", _wrong_barrier_loads)


def _wrong_barrier_loads(an: Analysis) -> list[WrongBarrierLoad]:
    _stage, _bar_stage = load_stage, barrier_stage
    m = an.model
    out = []
    loads = [
        o
        for o in m.ops_of(ir.TMA_LOAD)
        if o.barrier is not None and o.barrier.index and o.buffer is not None and _bar_stage(o) is not None
    ]
    groups: dict[tuple, list[ir.Op]] = {}
    for o in loads:
        groups.setdefault((o.barrier.name, o.loops), []).append(o)
    for (bname, lps), ops in sorted(groups.items(), key=lambda kv: kv[1][0].order):
        matched, suspects = [], []
        for o in ops:
            st, bi = _stage(o), _bar_stage(o)
            if st is None or st.is_opaque() or bi.is_opaque():
                continue
            if solver.always(E.binop("==", st, bi), an.solver_timeout_ms) is True:
                matched.append(o)
            else:
                suspects.append((o, st, bi))
        # evidence of the intended stage <-> barrier pairing: a load of the same loop that
        # completes on its own stage's barrier, or the expect the load is issued with
        # (same loop, same threads) naming the barrier of the load's stage
        expects = [
            e
            for e in m.ops
            if e.kind in (ir.MBAR_EXPECT, ir.TMA_LOAD)
            and e.barrier is not None
            and e.barrier.name == bname
            and e.loops
            and e.loops == lps[: len(e.loops)]
            and e.order < max(o.order for o in ops)
            and all(e is not o for o in ops)
        ]
        for o, st, bi in list(suspects):
            for e in expects:
                eb = _bar_stage(e) if e.barrier.index else None
                if eb is None or eb.is_opaque() or an.threads.issuers(e) != an.threads.issuers(o):
                    continue
                if e.kind == ir.TMA_LOAD and (
                    _stage(e) is None or solver.always(E.binop("==", _stage(e), eb), an.solver_timeout_ms) is not True
                ):
                    continue  # a load as evidence must itself pair its stage with its barrier
                if solver.always(E.binop("==", st, eb), an.solver_timeout_ms) is True:
                    matched.append(e)
                    break
        if not matched:
            continue
        for o, st, bi in suspects:
            ks = [m.loops[lid].counter for lid in o.loops]
            w = phases._smallest_counterexample(E.binop("!=", st, bi), ks[-1] if ks else None, [], an.solver_timeout_ms)
            if w is None:
                continue
            env = dict(w)
            k = {f"k{lid}": env.get(f"k{lid}") for lid in o.loops}
            sv, bv = st.eval(env), bi.eval(env)
            if sv is None or bv is None or sv == bv:
                continue
            it = next((v for v in k.values() if v is not None), None)
            out.append(WrongBarrierLoad(o, bname, it, sv, bv, matched))
    return out


@dataclass
class SplitRemoteStore:
    """r9-i7async: an `st.async` / `red.async` that writes the shared memory of CTA `store_cta`
    but completes its bytes on the barrier `barrier` of CTA `barrier_cta`, the two proved
    different for every thread of every CTA of the cluster (PTX ISA, st.async: the destination
    and the mbarrier object must be in the same CTA). The waiter on the destination CTA's barrier
    is not told when these bytes land, and the other barrier's phase counts bytes of another
    buffer."""

    op: ir.Op
    barrier: str
    buffer: str
    store_cta: E.Expr
    barrier_cta: E.Expr


def split_remote_stores(an: Analysis) -> list[SplitRemoteStore]:
    return an.fact("violations.split_remote_stores", _split_remote_stores)


def _split_remote_stores(an: Analysis) -> list[SplitRemoteStore]:
    m = an.model
    out = []
    rank = E.Var("cta_rank", E.PARAM)
    for o in m.ops_of(ir.TMA_LOAD):
        mb = o.mbar
        if mb is None or not mb.remote_store or mb.store_cta is None or mb.cta is None or mb.store_bar is None:
            continue
        if o.buffer is None:
            continue
        assume = [E.binop(">=", rank, E.Const(0))]
        if m.cluster is not None:
            assume.append(E.binop("<", rank, m.cluster))
        differ = E.binop("!=", mb.store_cta, mb.cta)
        if differ.depends_on(E.LOOP) or differ.is_opaque():
            continue
        if solver.always(differ, an.solver_timeout_ms, assume=tuple(assume)) is True:
            out.append(SplitRemoteStore(o, mb.store_bar.shown(), o.buffer.name, mb.store_cta, mb.cta))
    return out
