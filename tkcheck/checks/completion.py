"""Completion-signal accounting: arrivals and transaction bytes per phase.

A phase of an mbarrier completes when its pending arrival count and its
pending tx bytes both reach zero. For every barrier this module collects the
sites that arrive on it, expect bytes on it, and deliver bytes to it (TMA
loads), and computes how much each contributes *per round* — one visit of the
barrier element by the loop that drives it (a ring slot's turn, one iteration
for a scalar barrier, or the one-shot use outside loops).

A contribution = issuing threads x amount per issue x times per round (the
trip counts of inner loops that do not change which element is hit).

Sums are compared only when the structure is recognised: every contributing
site visits the elements in the same pattern, under the same uniform
conditions, with known issuers. Otherwise the barrier is `unknown` and no
finding is made from it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from .analysis import Analysis


@dataclass
class Contribution:
    op: ir.Op
    issuers: frozenset[int]
    amount: E.Expr            # per issue: arrivals, or bytes
    times: E.Expr             # per round
    round_loop: int | None
    pattern: tuple            # how the element index moves with the round counter
    exclusive: tuple = ()     # uniform conditions of op left out: it merges exclusive sites

    @property
    def total(self) -> E.Expr:
        return E.binop("*", E.binop("*", E.Const(len(self.issuers)), self.amount), self.times)


@dataclass
class BarrierAccount:
    barrier: ir.Barrier
    inits: list[ir.Op] = field(default_factory=list)
    init_count: E.Expr | None = None
    arrivals: dict[str, list[Contribution]] = field(default_factory=dict)   # group -> contributions
    expects: dict[str, list[Contribution]] = field(default_factory=dict)
    loads: dict[str, list[Contribution]] = field(default_factory=dict)
    waits: list[ir.Op] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)   # reasons the account is not usable
    group_init: dict[str, E.Expr] = field(default_factory=dict)  # per-group init counts (MK dynamic semaphores)
    assumptions: list[str] = field(default_factory=list)  # stated with any finding made from it

    def ok(self) -> bool:
        return not self.unknown


def instance_loops(model: ir.KernelModel, op: ir.Op) -> dict:
    """A barrier re-initialised for every instruction (an MK op's dynamic semaphores, in the slot
    of the instruction: `semaphores[slot(i)][j]`): the loop of op's role over instructions, whose
    counter only picks the slot, is not a round -- every instruction has fresh semaphores. Its
    counter -> the symbol `inst` (the same for every role: the k-th iteration of each role's
    instruction loop is the same instruction). Empty when the barrier is not of this kind."""
    if op.barrier is None or not reinitialised(model, op.barrier.name):
        return {}
    index = op.barrier.index
    out = {}
    for lid in op.loops:
        loop = model.loops.get(lid)
        if loop is None:
            continue
        t = loop.trip.eval({}) if loop.trip is not None else None
        if isinstance(t, int):
            continue
        name = loop.counter.name
        dims = [i for i, ix in enumerate(index) if name in {v.name for v in ix.free_vars()}]
        if dims == [0]:
            out[name] = E.Var("inst", E.PARAM)
    return out


_ELEMENT_SCAN = 64      # rounds enumerated to find the elements a site visits


def _instance_elements(m: ir.KernelModel, op: ir.Op, round_loop: int | None) -> frozenset | None:
    """The elements (index tuples without the slot) of a per-instruction semaphore array that op
    visits over the rounds of one instruction, by enumeration; None when not enumerable."""
    inst = instance_loops(m, op)
    index = [E.substitute(ix, inst) for ix in op.barrier.index]
    loops = [lid for lid in op.loops if m.loops[lid].counter.name not in inst]
    if len(loops) > 2:
        return None
    ranges = []
    for lid in loops:
        t = m.loops[lid].trip
        tv = t.eval({}) if t is not None else None
        n = tv if isinstance(tv, int) and tv <= _ELEMENT_SCAN else _ELEMENT_SCAN
        ranges.append((m.loops[lid].counter.name, n))
    out = set()

    def rec(i, env):
        if i == len(ranges):
            vals = tuple(ix.eval({**env, "inst": 0}) for ix in index[1:])
            if any(not isinstance(v, int) for v in vals):
                raise ValueError
            out.add(vals)
            return
        name, n = ranges[i]
        for j in range(n):
            rec(i + 1, {**env, name: j})
    try:
        rec(0, {})
    except (ValueError, RecursionError):
        return None
    return frozenset(out) if out else None


def _element_inits(m: ir.KernelModel, acc: "BarrierAccount"):
    """Per-element init counts of a per-instruction semaphore array, and each group's count
    when every element the group visits has the same one."""
    counts: dict[tuple, set] = {}
    for o in acc.inits:
        els = _instance_elements(m, o, None)
        c = o.count.eval({}) if o.count is not None else None
        if els is None or not isinstance(c, int):
            return
        for e in els:
            counts.setdefault(e, set()).add(c)
    for groups in (acc.arrivals,):
        for key, contribs in groups.items():
            els = set()
            for c in contribs:
                e = _instance_elements(m, c.op, c.round_loop)
                if e is None:
                    break
                els |= e
            else:
                vals = {v for e in els for v in counts.get(e, {None})}
                if len(vals) == 1 and None not in vals:
                    acc.group_init[key] = E.Const(vals.pop())


def reinitialised(model: ir.KernelModel, name: str) -> bool:
    """The barrier is (re-)initialised inside a loop whose trip count is not a constant (an
    interpreter re-arms its per-instruction semaphores)."""
    for o in model.ops:
        if o.kind == ir.MBAR_INIT and o.barrier is not None and o.barrier.name == name:
            for lid in o.loops:
                t = model.loops[lid].trip
                if t is None or not isinstance(t.eval({}), int):
                    return True
    return False


def _round_of(model: ir.KernelModel, op: ir.Op) -> tuple[int | None, E.Expr | None, tuple] | None:
    """(round loop id, multiplicity of inner loops, index pattern) or None if unknown."""
    index = op.barrier.index if op.barrier is not None else ()
    inst = instance_loops(model, op)
    if inst:
        index = tuple(E.substitute(ix, inst) for ix in index)
    index_vars = set()
    for ix in index:
        index_vars |= {v.name for v in ix.free_vars() if v.kind == E.LOOP}
    round_loop = None
    inner = []
    for lid in reversed(op.loops):
        loop = model.loops.get(lid)
        if loop is None:
            return None
        if loop.counter.name in inst:
            break                 # the instruction loop: fresh semaphores every iteration
        if loop.counter.name in index_vars or (not index_vars and round_loop is None and not inner and False):
            round_loop = lid
            break
        inner.append(loop)
    if round_loop is None and not index_vars:
        # scalar barrier (or constant index): the innermost loop is the round
        # loop; a site outside loops is a one-shot use
        if op.loops:
            round_loop = op.loops[-1]
            inner = []
        else:
            inner = []
    elif round_loop is None:
        return None  # index varies with something that is not an enclosing loop
    times: E.Expr = E.Const(1)
    for loop in inner:
        if loop.trip is None or loop.trip.depends_on(E.THREAD) or loop.trip.is_opaque():
            return None
        times = E.binop("*", times, loop.trip)
    # the index as a function of the round counter (renamed to 'r')
    pattern: tuple = ()
    if round_loop is not None:
        rc = model.loops[round_loop].counter.name
        ren = {rc: E.Var("r", E.LOOP)}
        # a ring carried across an enclosing task loop (`ring = ring_advance(ring)` in the k
        # loop of every task): the element is a function of (task, k); the rounds are the
        # pairs, the enclosing counters named from the inside out (o1, o2, ...), so two roles
        # walking the same nest visit the same elements in the same rounds
        outer = op.loops[:op.loops.index(round_loop)]
        for j, lid in enumerate(reversed(outer)):
            if lid in model.loops:
                ren[model.loops[lid].counter.name] = E.Var(f"o{j + 1}", E.LOOP)
        pattern = tuple(str(E.substitute(ix, ren)) for ix in index)
        if any(v.kind == E.LOOP and v.name not in ren for ix in index for v in ix.free_vars()):
            return None
    else:
        pattern = tuple(str(ix) for ix in index)
    return round_loop, times, pattern


def _per_element_issuers(op: ir.Op, issuers: frozenset[int]) -> frozenset[int] | None:
    """The issuers that hit one element of a barrier array indexed by the thread, when every
    element hit is hit by the same number of them (None when that is not established)."""
    groups: dict[tuple, list[int]] = {}
    for t in issuers:
        key = []
        for ix in op.barrier.index:
            fixed = E.substitute(ix, {"tid": E.Const(t)})
            if fixed.depends_on(E.THREAD) or fixed.is_opaque():
                return None
            key.append(str(fixed))      # may still depend on loop counters: the same form per issuer
        groups.setdefault(tuple(key), []).append(t)
    sizes = {len(g) for g in groups.values()}
    if len(sizes) != 1:
        return None
    return frozenset(min(groups.values(), key=min))


def _group_key(round_loop) -> str:
    return "one-shot" if round_loop is None else "steady"


RUNNING = "<the instruction loop goes on>"
ASSUMPTION = ("assuming the roles' loops that end on a data-dependent `break` (an instruction or task "
              "stream) run the same rounds, at least one")


def _running(model: ir.KernelModel, op: ir.Op, c: E.Expr) -> bool:
    """c is what lets an iteration of an enclosing data-exit loop go on past its break
    (`!(op == STOP)`): true in every round that runs, which is the round accounted."""
    return any(c in model.loops[lid].continues for lid in op.loops
               if lid in model.loops and model.loops[lid].trip is None)


def _pair_commit(op: ir.Op) -> bool:
    """A cta_group::2 tcgen05 commit multicast to both CTAs of the pair (TK's default mask 0b11):
    the copy of the barrier in *each* CTA gets one arrival per commit, whichever CTA issues it,
    so per CTA it counts like a local arrive by its issuers (the rank condition of the issuer
    does not select the receiving CTA)."""
    if not (op.kind == ir.MBAR_ARRIVE and op.detail.get("via") == "tcgen05.commit" and op.detail.get("ncta") == 2):
        return False
    mask = op.detail.get("mask")
    return mask is None or (isinstance(mask, E.Expr) and mask.eval({}) == 3)


def _rank_only(c: E.Expr) -> bool:
    return any(v.name == "cta_rank" for v in c.free_vars()) and \
        all(v.name == "cta_rank" or v.kind != E.PARAM for v in c.free_vars())


def cluster_size(model: ir.KernelModel) -> int | None:
    v = model.cluster.eval({}) if model.cluster is not None else None
    return v if isinstance(v, int) and not isinstance(v, bool) and 1 < v <= 16 else None


def _ranks_running(op: ir.Op, size: int) -> list[int] | None:
    """The CTA ranks of the cluster in which op runs (its rank-only uniform conditions)."""
    conds = [c for c in op.guard.uniform if _rank_only(c)]
    out = []
    for r in range(size):
        vals = [c.eval({"cta_rank": r}) for c in conds]
        if any(v is None for v in vals):
            return None
        if all(bool(v) for v in vals):
            out.append(r)
    return out


ranks_running = _ranks_running


def destinations(model: ir.KernelModel, op: ir.Op) -> dict[int, int] | None:
    """In a cluster of known size: the CTA whose copy of op's barrier each execution of op
    signals -> how many of the cluster's CTAs run op into it (a remote arrive to CTA c from
    every CTA counts twice on CTA c's copy in a pair; a commit multicast to the pair lands on
    both; a TMA load with `dst_mbar_cta` completes its bytes on that CTA's barrier; a
    multicast load on every masked CTA's, or, given `dst_mbar_cta` in a pair, all on that CTA's;
    a CLC response on every CTA's). None: not known."""
    size = cluster_size(model)
    if size is None:
        return None
    ranks = _ranks_running(op, size)
    if ranks is None:
        return None
    out: dict[int, int] = {}

    def add(d):
        if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d < size:
            raise ValueError
        out[d] = out.get(d, 0) + 1
    try:
        for r in ranks:
            env = {"cta_rank": r}
            if op.detail.get("clc"):
                for d in range(size):
                    add(d)
            elif _pair_commit(op):
                for d in range(min(size, 2)):
                    add(d)
            elif op.detail.get("mbar_cta") is not None:
                n = 1
                if op.kind == ir.TMA_LOAD and op.detail.get("multicast"):
                    # cta_group::2 multicast with the barrier of one CTA of the pair
                    # (`load_async(..., mask, dst_mbar_cta)`): every destination's bytes complete
                    # on that barrier, so a 0b11 mask delivers twice the tile to it
                    mask = op.detail.get("mask")
                    mv = mask.eval(env) if isinstance(mask, E.Expr) else None
                    if not isinstance(mv, int) or isinstance(mv, bool):
                        return None
                    n = bin(mv & ((1 << size) - 1)).count("1")
                    if size != 2 and n > 1:
                        return None
                for _ in range(n):
                    add(op.detail["mbar_cta"].eval(env))
            elif op.kind == ir.TMA_LOAD and op.detail.get("multicast"):
                mask = op.detail.get("mask")
                mv = mask.eval(env) if isinstance(mask, E.Expr) else None
                if not isinstance(mv, int):
                    return None
                for d in range(size):
                    if mv >> d & 1:
                        add(d)
            elif op.detail.get("cta") is not None:
                c = op.detail["cta"]
                add(c.eval(env) if isinstance(c, E.Expr) else None)
            elif op.detail.get("remote") or op.detail.get("multicast"):
                return None
            else:
                add(r)
    except ValueError:
        return None
    return out


def _uniform_sig(op: ir.Op, model: ir.KernelModel | None = None, leave: tuple = ()) -> tuple | None:
    sig = []
    for c in op.guard.uniform:
        if c in leave:
            continue
        if (_pair_commit(op) or (model is not None and cluster_size(model) is not None)) and _rank_only(c):
            continue                  # which CTAs run it: the destination accounting's part
        if model is not None and _running(model, op, c):
            sig.append(RUNNING)
            continue
        if model is not None and any(model.loops[lid].cond == c for lid in op.loops if lid in model.loops):
            sig.append(RUNNING)       # the enclosing loop's own condition: every round that runs
            continue
        if c.depends_on(E.LOOP) or c.is_opaque():
            return None
        sig.append(str(c))
    return tuple(sorted(sig))


def accounts(an: Analysis) -> dict[str, BarrierAccount]:
    return an.fact("barrier_accounts", _compute)


def _compute(an: Analysis) -> dict[str, BarrierAccount]:
    m = an.model
    out: dict[str, BarrierAccount] = {name: BarrierAccount(b) for name, b in m.barriers.items()}
    for op in m.ops:
        if op.barrier is None or op.barrier.name not in out:
            continue
        acc = out[op.barrier.name]
        if op.kind == ir.MBAR_INIT:
            acc.inits.append(op)
            continue
        if op.kind == ir.MBAR_WAIT:
            acc.waits.append(op)
            continue
        if op.kind not in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD):
            continue
        pair_commit = _pair_commit(op)
        dests = destinations(m, op)
        if (op.detail.get("remote") or op.detail.get("multicast") or op.detail.get("cta") is not None
                or op.detail.get("mbar_cta") is not None) and not pair_commit and dests is None:
            acc.unknown.append(f"{op.api} at line {op.location.row} crosses CTAs")
            continue
        issuers = an.threads.issuers(op)
        if issuers is None:
            acc.unknown.append(f"threads of {op.api} at line {op.location.row} unknown")
            continue
        if any(ix.depends_on(E.THREAD) for ix in op.barrier.index):
            # `arrive(bar[warpgroup::groupid()])`: each issuer signals its own element; the
            # contribution to one element is the issuers that hit it (all elements alike)
            issuers = _per_element_issuers(op, issuers)
            if issuers is None:
                acc.unknown.append(f"elements of '{acc.barrier.name}' hit by {op.api} at line {op.location.row} "
                                   "depend on the thread in a way not recognised")
                continue
        r = _round_of(m, op)
        if r is None:
            acc.unknown.append(f"rounds of {op.api} at line {op.location.row} not recognised")
            continue
        round_loop, times, pattern = r
        classes = _element_classes(op, issuers)
        if classes is None:
            acc.unknown.append(f"element of '{acc.barrier.name}' hit by {op.api} at line {op.location.row} "
                               "depends on the thread in a way not modelled")
            continue
        elems_of = _instance_elements(m, op, round_loop) if instance_loops(m, op) else None
        if instance_loops(m, op) and elems_of is None:
            acc.unknown.append(f"elements of '{acc.barrier.name}' hit by {op.api} at line {op.location.row} not "
                               "enumerated")
            continue
        for elem, ts, (cta, mult) in ((e, t, d) for e, t in classes
                                      for d in (sorted(dests.items()) if dests is not None else [(None, 1)])):
            key = _group_key(round_loop) + (f" {acc.barrier.name}[{']['.join(elem)}]" if elem else "")
            if elems_of is not None:
                key += f" elements {sorted(elems_of)}"
            if cta is not None:
                key += f" in CTA {cta}"
            times_c = times if mult == 1 else E.binop("*", times, E.Const(mult))
            pat = pattern if not elem else pattern + elem
            if op.kind == ir.MBAR_ARRIVE:
                amount = op.count if op.count is not None else E.opaque("count")
                acc.arrivals.setdefault(key, []).append(Contribution(op, ts, amount, times_c, round_loop, pat))
            elif op.kind == ir.MBAR_EXPECT:
                acc.arrivals.setdefault(key, []).append(
                    Contribution(op, ts, E.Const(op.detail.get("arrives", 1)), times_c, round_loop, pat))
                acc.expects.setdefault(key, []).append(
                    Contribution(op, ts, op.bytes if op.bytes is not None else E.opaque("bytes"), times_c,
                                 round_loop, pat))
            else:
                acc.loads.setdefault(key, []).append(
                    Contribution(op, ts, op.bytes if op.bytes is not None else E.opaque("bytes"), times_c,
                                 round_loop, pat))
    # mbarrier operations the front end could not attribute (raw PTX, an
    # unresolved barrier argument) may arrive on any barrier: no sums then
    blind = [o for o in m.ops if o.detail.get("barrier_unknown") is not None
             or (o.kind == ir.CALL and "mbarrier" in str(o.detail.get("ptx", "")))]
    # a call tkcheck does not model received the barrier: its account is unknown
    for o in m.ops:
        if o.detail.get("unmodelled_barrier_use") and o.barrier is not None and o.barrier.name in out:
            out[o.barrier.name].unknown.append(f"passed to {o.api} at line {o.location.row}, which is not modelled")
    if blind:
        for acc in out.values():
            acc.unknown.append(f"unattributed mbarrier operation at line {blind[0].location.row}")
    size = cluster_size(m)
    if size is not None:
        # a barrier copy no thread of that CTA waits on does not gate anything: its groups go
        for acc in out.values():
            ranks: set[int] = set()
            for w in acc.waits:
                r = _ranks_running(w, size)
                if r is None:
                    ranks = set(range(size))
                    break
                ranks |= set(r)
            for groups in (acc.arrivals, acc.expects, acc.loads):
                for key in list(groups):
                    if " in CTA " in key and int(key.rsplit(" in CTA ", 1)[1]) not in ranks:
                        del groups[key]
    for acc in out.values():
        counts = {str(o.count) for o in acc.inits if o.count is not None}
        if len(acc.inits) >= 1 and len(counts) == 1 and all(
                o.count is not None and not o.count.depends_on(E.LOOP) and not o.count.is_opaque()
                for o in acc.inits):
            acc.init_count = acc.inits[0].count
        if acc.inits and any(instance_loops(m, o) for o in acc.inits):
            # an MK op's dynamic semaphores: one array, elements with counts of their own
            _element_inits(m, acc)
        # the same visiting pattern and uniform conditions across a group
        for groups in (acc.arrivals, acc.expects, acc.loads):
            for key, contribs in groups.items():
                _merge_exclusive(contribs, an.solver_timeout_ms)
                pats = {c.pattern for c in contribs}
                sigs = {_uniform_sig(c.op, m, c.exclusive) for c in contribs}
                if _nested_rounds(contribs):
                    acc.unknown.append(f"{key} sites of '{acc.barrier.name}' are at different loop depths of one "
                                       "role: they need not share a phase")
                elif len(pats) > 1 or None in sigs or len(sigs) > 1:
                    acc.unknown.append(f"{key} sites of '{acc.barrier.name}' visit it in different patterns "
                                       "or under different conditions")
                elif any(RUNNING in s for s in sigs) and ASSUMPTION not in acc.assumptions:
                    acc.assumptions.append(ASSUMPTION)
    return out


def _merge_exclusive(contribs: list[Contribution], timeout_ms: int) -> None:
    """Two sites of one role that differ only in one uniform condition, c and its negation
    (`if (k == 0) mm2_AB(acc, a, b, sem); else mma2_AB(acc, a, b, sem);`), with the same
    threads, amount, multiplicity and pattern: exactly one of them runs in every round, so
    they count once, as one site without that condition (in place)."""
    from . import solver
    changed = True
    while changed:
        changed = False
        for i, a in enumerate(contribs):
            for b in contribs[i + 1:]:
                if (a.issuers != b.issuers or a.pattern != b.pattern or a.round_loop != b.round_loop
                        or str(a.amount) != str(b.amount) or str(a.times) != str(b.times)
                        or a.op.guard.thread != b.op.guard.thread or a.exclusive or b.exclusive):
                    continue
                ua, ub = list(a.op.guard.uniform), list(b.op.guard.uniform)
                da = [c for c in ua if c not in ub]
                db = [c for c in ub if c not in ua]
                if len(da) != 1 or len(db) != 1:
                    continue
                if solver.always(E.binop("==", E.ite(da[0], E.Const(1), E.Const(0)),
                                         E.ite(db[0], E.Const(0), E.Const(1))), timeout_ms) is not True:
                    continue
                a.exclusive = (da[0],)
                contribs.remove(b)
                changed = True
                break
            if changed:
                break


def _element_classes(op: ir.Op, issuers: frozenset[int]) -> list[tuple[tuple, frozenset[int]]] | None:
    """The issuing threads grouped by the barrier element they hit, when the element index
    depends on the thread (`bar[warpgroup::groupid()]`): [(element index text, threads)]; one
    class with an empty key when it does not; None when the index is not a function of tid."""
    index = op.barrier.index if op.barrier is not None else ()
    if not any(ix.depends_on(E.THREAD) for ix in index):
        return [((), issuers)]
    out: dict[tuple, set[int]] = {}
    for t in sorted(issuers):
        key = []
        for ix in index:
            v = E.substitute(ix, {"tid": E.Const(t)})
            if v.depends_on(E.THREAD):
                return None
            key.append(str(v))
        out.setdefault(tuple(key), set()).add(t)
    return [(k, frozenset(v)) for k, v in sorted(out.items())]


def _nested_rounds(contribs: list[Contribution]) -> bool:
    """Two sites in different loops that the same threads run one after the other (an arrive in
    the k-loop and another after it in the task loop; two loops in sequence): each may complete
    phases of its own, so their sum is no phase's count."""
    for a in contribs:
        for b in contribs:
            if a.round_loop != b.round_loop and (
                    (a.round_loop is not None and a.round_loop in b.op.loops)
                    or (b.round_loop is not None and b.round_loop in a.op.loops)
                    or (a.issuers & b.issuers)):
                return True
    return False


def total(contribs: list[Contribution]) -> E.Expr:
    t: E.Expr = E.Const(0)
    for c in contribs:
        t = E.binop("+", t, c.total)
    return t
