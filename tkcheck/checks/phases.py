"""Phase reasoning: which phase of which barrier every wait is due to observe.

For a wait site W on barrier element B[e(k)] at iteration k of its round loop:

* use(k)   -- how many times this site waited on the same element before:
              k / P when e(k) is periodic with period P (a ring of P slots,
              proved by z3: e(k+P) == e(k) and e(k+d) != e(k) for 0 < d < P),
              k for a scalar barrier, the count of earlier one-shot waits
              outside loops;
* offset   -- -1 when W waits for the *previous* use's release: B carries no
              data (no TMA bytes complete on it) and its signallers first wait
              on a data barrier that W's own role fills after W (the producer
              side of a full/empty handshake, fresh-barrier parity 1); else 0;
* pre      -- phases completed before the loop (pre-arrived tokens: arrivals
              on B outside the loop that complete a whole phase per element);
* due(k)   = use(k) + offset + pre: the completion index W must observe.

`mbarrier.try_wait.parity p` returns once the phase with parity p completed,
so W is correct iff its parity equals due(k) mod 2 for every k in the trip
range (and every template parameter value): proved or refuted by z3; a
refutation comes with the smallest k. Anything not recognised is `unknown`
(never a finding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import z3

from ..model import expr as E
from ..model import ir
from ..recurrence import flat_base, tabulate
from . import alternation, completion, ring_uses, visit_groups
from .analysis import Analysis
from .threads import describe

DATA_KINDS = (ir.TMA_LOAD,)


@dataclass
class WaitPhase:
    op: ir.Op
    barrier: str
    status: str = "unknown"  # ok | mismatch | not-advanced | unknown
    reason: str = ""
    loop: int | None = None
    period: E.Expr | None = None
    use: E.Expr | None = None
    offset: int = 0
    pre: int = 0
    due: E.Expr | None = None
    witness: dict = field(default_factory=dict)
    role: str = ""
    assumption: str = ""  # stated with a finding (a data-exit loop's trip count)
    stated: str = ""  # stated with a proof (`ok`): what it assumes that the kernel does not order


def phases(an: Analysis) -> list[WaitPhase]:
    return an.fact("wait_phases", _compute)


# ----------------------------------------------------------------- helpers --


def _moduli(e: E.Expr, out: list):
    for x in E.subexprs(e):
        if isinstance(x, E.Bin) and x.op == "%" and x.b not in out:
            out.append(x.b)
    return out


def _shift(e: E.Expr, k: E.Var, d: E.Expr) -> E.Expr:
    return E.substitute(e, {k.name: E.binop("+", k, d)})


def _period(index: tuple[E.Expr, ...], k: E.Var, timeout: int, assume: tuple[E.Expr, ...] = ()) -> E.Expr | None:
    """Smallest proved period of the element index in k (1 for a constant index).

    The candidates are the moduli of the index and, for a constant modulus, its divisors: a
    loop with a stride (`for (t = c; t < N; t += 2)`, stage `t % S`) visits the S slots with
    period S / gcd(S, 2) in its iteration k. `assume` (the wait's threads: a start `c` that
    depends on the thread) holds for both sides of the proofs."""
    from .. import solver

    if not any(k in ix.free_vars() for ix in index):
        return E.Const(1)
    moduli: list[E.Expr] = []
    for ix in index:
        _moduli(ix, moduli)
    # the moduli first (each proof costs solver budget: an ordinary ring asks what it asked
    # before), then the proper divisors of the constant ones, smallest first
    divisors: list[E.Expr] = []
    for p0 in moduli:
        v = p0.eval({}) if isinstance(p0, E.Const) else None
        if isinstance(v, int) and not isinstance(v, bool) and 1 < v <= 64:
            divisors += [E.Const(q) for q in range(1, v) if v % q == 0 and E.Const(q) not in moduli + divisors]
    divisors.sort(key=lambda p: p.value if isinstance(p, E.Const) else 0)
    for p in moduli + divisors:
        if p.is_opaque() or k in p.free_vars():
            continue
        same = E.conj(*[E.binop("==", _shift(ix, k, p), ix) for ix in index])
        if solver.always(E.binop("||", E.binop("<=", p, E.Const(0)), same), timeout, assume=assume) is not True:
            continue
        d = E.Var("d@gap", E.PARAM)
        clash = E.conj(
            E.binop(">", d, E.Const(0)), E.binop("<", d, p), *[E.binop("==", _shift(ix, k, d), ix) for ix in index]
        )
        if not solver.feasible(clash, timeout, assume=assume) and _unsat_under(clash, timeout, assume):
            return p
    return None


def _unsat_under(pred: E.Expr, timeout: int, assume: tuple[E.Expr, ...]) -> bool:
    from .. import solver

    return solver.always(E.negate(pred), timeout, assume=assume) is True


def _round_loops(an: Analysis, w: ir.Op) -> tuple[int, ...]:
    """w's loops without the innermost ones that only pick the element it waits on
    (`_element_loops`): the loop body a round of w spans."""
    if w.kind != ir.MBAR_WAIT or len(w.loops) < 2 or w.barrier is None or w.parity is None:
        return w.loops
    if w.parity.is_opaque() or any(ix.is_opaque() for ix in w.barrier.index):
        return w.loops
    chain = [an.model.loops[i] for i in w.loops]
    n = _element_loops(an, w, chain, tuple(linear(ix) for ix in w.barrier.index), linear(w.parity))
    return w.loops[: len(w.loops) - n] if n else w.loops


def _element_loops(an: Analysis, w: ir.Op, chain: list, index, parity, outermost: bool = False) -> int:
    """How many of w's innermost loops only pick the element it waits on: constant trip
    counts, counters in the index alone (not in the parity, the guards, the other loops'
    trips), the index injective over their iterations (proved by z3), the index free of the
    counters of the loops around them. Such a wait uses each element once per iteration of
    the loops around them."""
    from .. import solver

    n = 0
    for i in range(len(chain) - 1, -1 if outermost else 0, -1):
        L = chain[i]
        t = L.trip.eval({}) if L.trip is not None else None
        if not isinstance(t, int) or isinstance(t, bool) or t <= 0 or L.continues or not L.uniform:
            break
        k = L.counter
        if k in parity.free_vars() or k in w.guard.thread.free_vars():
            break
        if any(k in c.free_vars() for c in w.guard.uniform):
            break
        if not any(k in ix.free_vars() for ix in index):
            break
        n += 1
    if not n:
        return 0
    inner = chain[len(chain) - n :]
    outer = chain[: len(chain) - n]
    ks = {L.counter for L in inner}
    if any(o.counter in ix.free_vars() for ix in index for o in outer):
        return 0
    if any(L.trip is not None and L.trip.free_vars() & ks for L in chain):
        return 0
    # injective: two different iterations of the element loops hit different elements
    ren = {L.counter.name: E.Var(L.counter.name + "@other", E.PARAM) for L in inner}
    other = [E.substitute(ix, ren) for ix in index]
    bounds = []
    for L in inner:
        for v in (L.counter, ren[L.counter.name]):
            bounds += [E.binop(">=", v, E.Const(0)), E.binop("<", v, L.trip)]
    differ = E.disj(*[E.binop("!=", L.counter, ren[L.counter.name]) for L in inner])
    same = E.conj(*[E.binop("==", a, b) for a, b in zip(index, other)])
    clash = E.conj(differ, same)
    if solver.always(E.negate(clash), an.solver_timeout_ms, assume=tuple(bounds)) is not True:
        return 0
    return n


def _one_shot_signal(an: Analysis, s: ir.Op) -> bool:
    """A signal inside a loop that still belongs to the barrier's one-shot phase: the barrier
    accounts put it there (TMA loads in a loop over tiles, delivering their bytes to the phase of
    one expect issued outside every loop)."""
    r = completion._round_of(an.model, s, an)
    if r is not None and r[0] is None:
        return True
    # a signal in loops that only pick the element (`for (i = 0; i < N; i++) expect(bar[i], ..)`
    # once per kernel): each element signalled once
    if s.barrier is None or not s.loops or any(ix.is_opaque() for ix in s.barrier.index):
        return False
    chain = [an.model.loops[i] for i in s.loops]
    index = tuple(linear(ix) for ix in s.barrier.index)
    return _element_loops(an, s, chain, index, E.Const(0), outermost=True) == len(chain)


def _own_elements(an: Analysis, w: ir.Op, index, k: E.Var, period: E.Expr) -> bool:
    """A period that is no modulus of the index (a strided loop: `t = c; t += 2`), or an index
    that depends on the thread, counts the uses of an element by w's threads alone; that is the element's phase count only when no
    other waiting threads use the element: the threads of w grouped by their element pattern
    (the index with the thread substituted) must visit pairwise disjoint elements (z3), and no
    other wait site on the barrier may be run by other threads. (Three stages shared by two
    alternating consumers: each element's phases alternate between them.)"""
    moduli: list[E.Expr] = []
    for ix in index:
        _moduli(ix, moduli)
    strided = period not in moduli and not (period == E.Const(1) and not moduli)
    if not strided and not any(ix.depends_on(E.THREAD) for ix in index):
        return True
    m, th = an.model, an.threads
    mine = th.executing(w)
    if mine is None:
        return False
    for o in m.ops_of(ir.MBAR_WAIT):
        if o is w or o.barrier is None or o.barrier.name != w.barrier.name:
            continue
        if _other_blocks(o, w, an.solver_timeout_ms):
            continue  # never in w's block (a kernel's other kind of block, its own barriers)
        theirs = th.executing(o)
        if theirs is None or not theirs <= mine:
            return False
    if not any(ix.depends_on(E.THREAD) for ix in index):
        return True
    pats: dict[tuple, None] = {}
    ren = {k.name: E.Var("r", E.LOOP)}
    for t in sorted(mine):
        pat = tuple(
            E.substitute(ix, {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0), **ren}) for ix in index
        )
        if any(x.depends_on(E.THREAD) for x in pat):
            return False
        pats.setdefault(pat, None)
        if len(pats) > 8:
            return False
    ps = list(pats)
    return all(completion._disjoint(a, b, an.solver_timeout_ms) for i, a in enumerate(ps) for b in ps[i + 1 :])


def _other_blocks(a: ir.Op, w: ir.Op, to: int) -> bool:
    """a and w never run in one block: their block-uniform conditions exclude each other (a
    kernel that runs one function on its compute blocks and another on its communication blocks,
    `if (blockIdx.x < n) f(); else g();`, each with its own `__shared__` barriers and bitfield),
    and neither lands on another CTA's barrier (a remote arrive, a multicast load or commit)."""
    from .. import solver

    if not a.guard.uniform or not w.guard.uniform or not a.guard.exact or not w.guard.exact:
        return False
    for o in (a, w):
        b = o.mbar
        if b is not None and (
            b.remote or b.multicast or b.cta is not None or b.mbar_cta is not None or b.mask is not None
        ):
            return False  # it may land on another CTA's barrier: the blocks may meet there
    both = [u for u in (*a.guard.uniform, *w.guard.uniform) if not u.depends_on(E.LOOP) and not u.is_opaque()]
    if not both:
        return False
    return solver.always(E.negate(E.conj(*both)), to) is True


def _thread_range(an: Analysis, w: ir.Op, index, parity) -> list[E.Expr]:
    """For a wait whose element or parity depends on the thread (a loop that starts at the
    consumer's number: `for (t = c; t < N; t += 2)`): the block's thread range, so that the
    proofs hold for the threads that run the wait (with its thread guard), not for every
    integer."""
    if not any(x.depends_on(E.THREAD) for x in (*index, parity)):
        return []
    n = an.threads.n
    if n is None:
        return []
    if any(v.kind == E.THREAD and v.name != "tid" for x in (*index, parity) for v in x.free_vars()):
        return []  # a 2-D / 3-D thread index: no range stated
    return [E.binop("<", E.Var("tid", E.THREAD), E.Const(n))]


def _unsat(pred: E.Expr, timeout: int) -> bool:
    from .. import solver

    return solver.always(E.negate(pred), timeout) is True


def _signals(m: ir.KernelModel, name: str) -> list[ir.Op]:
    return [
        o
        for o in m.ops
        if o.barrier is not None and o.barrier.name == name and o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)
    ]


def _carries_data(m: ir.KernelModel, name: str, body: bool = False) -> bool:
    """Does a signal of the barrier carry data to its waiters? `body` (a body walk,
    `_body_walk_uses`): an arrive outside every loop by a role that also arrives in a loop (its
    visit after the loop: `lse_s[..] = m; arrive(corr_arrived)`) publishes what its threads
    wrote before it outside every loop, as the loop's arrives publish their round's writes."""
    sig = _signals(m, name)
    if any(
        o.kind in DATA_KINDS or (o.kind == ir.MBAR_EXPECT and o.bytes is not None and o.bytes != E.Const(0))
        for o in sig
    ):
        return True
    if any(o.kind == ir.MBAR_ARRIVE and o.mbar is not None and o.mbar.tcgen05_commit for o in sig):
        # an MMA's commit: data for the readers of its accumulator, but a release of its
        # operands for a waiter that refills them (`wait(inputs_finished[s]); load_async(...)`)
        return not _refills_after_wait(m, name)
    # a barrier every arrival of which publishes shared memory the arriving threads wrote in
    # the same round (`warpgroup::store(C_s, acc); warpgroup::sync(); warpgroup::arrive(full)`):
    # a "full" barrier too, whose waiters read that memory
    # -- when its waiters then use that memory: a consumer that writes its output tile before
    # it releases an input stage (`inputs_finished`) publishes nothing to the producer, which
    # only refills the stage
    arrives = [o for o in sig if o.kind == ir.MBAR_ARRIVE]
    written: set[str] = set()
    for o in arrives:
        ws = {
            x.buffer.name
            for x in m.ops
            if x.kind == ir.SMEM_ACCESS
            and x.access_mode == "write"
            and x.buffer is not None
            and x.order < o.order
            and x.loops == o.loops
            and _same_frame_or_caller(x, o)
        } | {
            # the arriving threads' own cp.async copies of the round (libcu++'s producer_commit
            # arrives once they land), also from a loop nested in the round, under the same guard
            x.buffer.name
            for x in m.ops
            if x.kind == ir.CP_ASYNC
            and x.buffer is not None
            and _guard_within(o.guard.thread, x.guard.thread)
            and x.order < o.order
            and x.loops[: len(o.loops)] == o.loops
            and _same_frame_calls(x, o)
        }
        if not ws or (not o.loops and not (body and _looped_sibling(o, arrives))):
            return False
        written |= ws
    return bool(arrives) and len(arrives) == len(sig) and _waiters_use(m, name, written)


def _looped_sibling(o: ir.Op, arrives: list) -> bool:
    """Another arrive of the same threads (the same guard) on the barrier, in a loop."""
    return any(x is not o and x.loops and x.guard.thread == o.guard.thread for x in arrives)


def _guard_within(inner: E.Expr, outer: E.Expr) -> bool:
    """`inner` is `outer` or `outer && c` (nested to the left): every thread of `inner` is one
    of `outer`'s -- the lane that arrives for the warp whose copies it publishes
    (`load_async(..); load_async_wait(); if (laneid() == 0) arrive(bar);`)."""
    while True:
        if inner == outer:
            return True
        if not (isinstance(inner, E.Bin) and inner.op == "&&"):
            return False
        inner = inner.a


def _same_frame_calls(x: ir.Op, o: ir.Op) -> bool:
    """x and o are made by one function body: the same frame, or two helper calls of it (the
    kernel's `cp_async16(...)` in a loop, then `cp_async_arrive(&full[s])`: each helper's PTX
    is the op, the call sites differ)."""
    return x.callers == o.callers or (bool(x.callers) and x.callers[:-1] == o.callers[:-1] and bool(o.callers))


def _same_frame_or_caller(x: ir.Op, o: ir.Op) -> bool:
    """x is written in o's own function body, or by the same threads in a caller of it: the
    kernel's `tile_s = t;` before `mb_arrive(&slot_full)`, whose arrive is a helper's PTX."""
    if x.callers == o.callers:
        return True
    return x.callers == o.callers[: len(x.callers)] and x.guard.thread == o.guard.thread


def _waiters_use(m: ir.KernelModel, name: str, buffers: set[str]) -> bool:
    """Some wait on `name` is followed, in its loop body, by an op that names one of `buffers`
    other than a plain shared-memory write (a read, a TMA store from it, an MMA operand)."""
    waits = [w for w in m.ops if w.kind == ir.MBAR_WAIT and w.barrier is not None and w.barrier.name == name]
    for w in waits:
        for o in m.ops:
            if o.order <= w.order or o.loops[: len(w.loops)] != w.loops:
                continue
            if o.kind == ir.SMEM_ACCESS and o.access_mode == "write":
                continue
            names = {r.name for r in (o.buffer, *o.operands) if r is not None}
            if names & buffers:
                return True
    return False


def _refills_after_wait(m: ir.KernelModel, name: str) -> bool:
    """Every wait on `name` is followed, in its loop body and by the same threads, by a TMA
    load (the waiter refills what the signaller has finished reading)."""
    waits = [w for w in m.ops if w.kind == ir.MBAR_WAIT and w.barrier is not None and w.barrier.name == name]
    return bool(waits) and all(
        w.loops
        and any(
            o.kind == ir.TMA_LOAD
            and o.order > w.order
            and o.loops[: len(w.loops)] == w.loops
            and str(o.guard.thread) == str(w.guard.thread)
            for o in m.ops
        )
        for w in waits
    )


def _carries_bytes(m: ir.KernelModel, name: str) -> bool:
    """Bytes land on the barrier (TMA / cp.async completions, expect_tx), not only arrivals."""
    return any(
        o.kind in DATA_KINDS or (o.kind == ir.MBAR_EXPECT and o.bytes is not None and o.bytes != E.Const(0))
        for o in _signals(m, name)
    )


def _handshake(an: Analysis, w: ir.Op, why: list | None = None, body: bool = False) -> bool | None:
    """True when every signaller of w's barrier first waits on a barrier that w's
    role signals after w in the same loop body; False when none does; None mixed. `body`: a
    body walk's (`_carries_data`'s arrives after a loop)."""
    m, th = an.model, an.threads
    mine = th.executing(w)
    if mine is None:
        return None

    def within(inner, outer):
        # inner's loops are outer's loops or loops nested in them (the same round body)
        return inner[: len(outer)] == outer

    w_loops = _round_loops(an, w)
    later = [
        o
        for o in m.ops
        if o.order > w.order
        and within(o.loops, w_loops)
        and o.barrier is not None
        and o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)
    ]

    def issuing(o):
        # the threads that issue o in some iteration: a lane picked by the iteration
        # (`if (warpid() == k % 4)`) issues in one of its role's warps each round
        iss = th.issuers(o)
        if iss is None:
            pr = th.per_round(o)
            iss = pr[0] if pr is not None else None
        if iss is None:
            # a guard on the iteration of a loop whose trip is the thread's (a ragged tail's
            # last-round arrive_drop): the threads that issue it in some iteration, enumerated
            iss = th.over_iterations(o)
        return iss

    after = {o.barrier.name for o in later if (issuing(o) or frozenset()) <= mine and issuing(o)}
    # signals after w whose issuing threads are not known: w's role may signal these barriers
    # too, so a signaller that waits on one of them makes the direction unknown, never "not a
    # handshake"
    unsure = {o.barrier.name for o in later if issuing(o) is None} - after
    verdicts = set()
    paired = []  # per signaller: its wait on a barrier of w's role was found
    for s in _signals(m, w.barrier.name):
        if s.kind == ir.TMA_LOAD or _other_blocks(s, w, an.solver_timeout_ms):
            continue
        if w.loops and _one_visit(m, s):
            continue  # a one-visit (pre-arrival) signal, not the steady-state handshake
        iss = issuing(s)
        if iss is None:
            return None
        hit = False
        # the waiter arms the phase itself just before waiting (`expect_bytes; wait`): it
        # waits for this round's completion
        # (an expect_tx with no arrival does not hold the phase open: it may land in the next one)
        found = s.kind == ir.MBAR_EXPECT and not s.tx_only and s.loops == w.loops and s.order < w.order and iss <= mine
        for o in m.ops:
            if (
                o.kind == ir.MBAR_WAIT
                and o.order < s.order
                and o.loops
                and within(s.loops, _round_loops(an, o))
                and o.barrier is not None
                and o.barrier.name in unsure
                and o.barrier.name != w.barrier.name
            ):
                ex = th.executing(o)
                if ex is None or iss <= ex:
                    return None
            if (
                o.kind == ir.MBAR_WAIT
                and o.order < s.order
                and (o.loops or _precedes_nest(m, o, s))
                and within(s.loops, _round_loops(an, o))
                and o.barrier is not None
                and o.barrier.name in after
                and o.barrier.name != w.barrier.name
            ):
                ex = th.executing(o)
                if ex is not None and iss <= ex:
                    hit = _carries_data(m, o.barrier.name, body)
                    if not hit and not _carries_data(m, w.barrier.name, body):
                        # a handshake of two data-less barriers: the side whose wait skips
                        # the first use of every slot (`if (k >= P) wait(...)`) waits for the
                        # release of the previous use; the other side waits for this use's
                        # signal. Neither or both: the direction cannot be told apart.
                        mine_skip, theirs_skip = _skips_first_use(an, w), _skips_first_use(an, o)
                        if mine_skip is None or theirs_skip is None or mine_skip == theirs_skip:
                            return None
                        hit = mine_skip
                        if why is not None:
                            why.append("skip")
                    else:
                        found = True  # a data barrier against a data-free one: the direction is known
                    break
        verdicts.add(hit)
        paired.append(found)
    if len(verdicts) != 1:
        return None if verdicts else False
    if why is not None and paired and all(paired):
        why.append("pair")
    return verdicts.pop()


def _release_chain(an: Analysis, w: ir.Op) -> bool:
    """w (no bytes land on its barrier) is the back channel of a cycle, directly or through a
    third role: every signaller s of w's barrier waits, before s in the same iteration of s's
    loops (also in a loop nested there), on a data barrier that w's own threads fill after w in
    w's loop body, or on a barrier X whose every signaller waits so (loader -> `full` -> consumer
    -> `out_full` -> storer -> `out_free` -> loader). Its completion j then needs w's own use j to
    pass first: w waits for the release of the use before (a release, offset -1)."""
    m, th = an.model, an.threads
    mine = th.executing(w)
    if mine is None or _carries_bytes(m, w.barrier.name) or not w.loops:
        return False
    to = an.solver_timeout_ms
    after = {
        o.barrier.name
        for o in m.ops
        if o.order > w.order
        and o.loops[: len(w.loops)] == w.loops
        and o.barrier is not None
        and o.kind in (ir.MBAR_EXPECT, ir.TMA_LOAD)
        and _carries_data(m, o.barrier.name)
        and (th.issuers(o) or frozenset()) <= mine
        and th.issuers(o)
    }
    if not after:
        return False

    def waits_before(s: ir.Op) -> list[ir.Op] | None:
        iss = th.issuers(s)
        if iss is None or not s.loops:
            return None
        out = []
        for o in m.ops_of(ir.MBAR_WAIT):
            if o.order >= s.order or o.barrier is None or o.loops[: len(s.loops)] != s.loops:
                continue
            ex = th.executing(o)
            if ex is not None and iss <= ex:
                out.append(o)
        return out

    sigs = [s for s in _signals(m, w.barrier.name) if not _other_blocks(s, w, to)]
    if not sigs:
        return False
    for s in sigs:
        if s.kind != ir.MBAR_ARRIVE or (th.issuers(s) or frozenset()) & mine:
            return False
        found = False
        for o in waits_before(s) or ():
            x = o.barrier.name
            if x in after:
                found = True  # the signaller itself waits for that data (one hop)
                break
            if x == w.barrier.name:
                continue
            xs = [t for t in _signals(m, x) if not _other_blocks(t, o, to)]
            if not xs or any(t.kind != ir.MBAR_ARRIVE for t in xs):
                continue
            if all(any(o2.barrier.name in after for o2 in (waits_before(t) or ())) for t in xs):
                found = True
                break
        if not found:
            return False
    return True


def _lagging_release(an: Analysis, w: ir.Op) -> tuple[ir.Op, ...] | None:
    """w, in a loop, on a barrier B no data lands on, is the back channel of a handshake whose
    forward data w's own threads fill *before* w in w's round (the finish block of TK's lcf/lcsf
    templates: the producer loads a task's inputs, then waits until the consumers released the
    previous task's output): every signaller s of B arrives after waiting, in s's round, on a data
    barrier that w's threads fill before w in w's round body. B's completion of round t then needs
    the fill of round t, which precedes w's wait of round t, and its completion of round t + 1 the
    fill of round t + 1, which follows it: at w's wait of round t, B completed the phases of the
    rounds before t, and maybe of round t too. Returns the signallers, or None."""
    m, th = an.model, an.threads
    mine = th.executing(w)
    if mine is None or not w.loops or _carries_data(m, w.barrier.name):
        return None
    to = an.solver_timeout_ms
    w_loops = _round_loops(an, w)
    filled = {
        o.barrier.name
        for o in m.ops
        if o.order < w.order
        and o.loops[: len(w_loops)] == w_loops
        and o.barrier is not None
        and o.kind in (ir.MBAR_EXPECT, ir.TMA_LOAD)
        and _carries_data(m, o.barrier.name)
        and _issuing(th, o)
        and (_issuing(th, o) or frozenset()) <= mine
    }
    sigs = [s for s in _signals(m, w.barrier.name) if not _other_blocks(s, w, to)]
    if not filled or not sigs:
        return None
    for s in sigs:
        iss = th.issuers(s)
        if s.kind != ir.MBAR_ARRIVE or not s.loops or iss is None or iss & mine or _one_visit(m, s):
            return None
        if not any(
            o.order < s.order
            and o.barrier is not None
            and o.barrier.name in filled
            and o.loops[: len(s.loops)] == s.loops
            and (th.executing(o) or frozenset()) >= iss
            for o in m.ops_of(ir.MBAR_WAIT)
        ):
            return None
    return tuple(sigs)


def _issuing(th, o: ir.Op) -> frozenset | None:
    """The threads that issue o in some iteration (as `_handshake` reads them): a lane picked by
    the iteration (`if (warpid() == k % 4)`) issues in one of its role's warps each round."""
    iss = th.issuers(o)
    if iss is None:
        pr = th.per_round(o)
        iss = pr[0] if pr is not None else None
    return iss if iss is not None else th.over_iterations(o)


LAG_STATED = (
    "its signallers' release of a round needs only what this role does before the wait, so nothing in the "
    "kernel keeps them from completing the next phase before the wait is reached (the wait would then miss "
    "its parity and block): the parity is proved for the release of the previous round; whether that lag "
    "can happen is the kernel's progress obligation"
)


def _lag_obligation(an: Analysis, w: ir.Op, wp: WaitPhase, sigs, parity, due: E.Expr, k, assume: list):
    """The wait of a lagging back channel (`_lagging_release`) at round k finds B completed due(k) + 1
    phases (the release of the round before: its due phase) or one more (the signallers ran a
    whole phase ahead). Its parity is right for the current round's completion at every k: proved
    outright (it waits for the round's own release, which needs nothing after the wait); right for
    the release of the round before: proved, stating that a lag of a phase is left to the progress
    obligation. A wait that passes on the previous round's release at k - 1 and then on the
    current round's at k passes at round k before the release of round k - 1 when those signallers
    are slow -- a stale pass, refuted when nothing w's threads wait for in the round needs that
    release. Returns the predicate whose satisfiability is a counterexample, or None when
    decided here (ok) or left undecided (wp.reason)."""
    from .. import solver

    to = an.solver_timeout_ms
    cur = E.binop("==", _mod2(parity), _mod2(E.binop("+", due, E.Const(1))))
    if solver.always(cur, to, assume=tuple(assume)) is True:
        wp.status = "ok"
        return None
    prev = {k.name: E.binop("-", k, E.Const(1))}
    switch = E.conj(
        E.binop("!=", _mod2(parity), _mod2(due)),
        E.binop(">=", k, E.Const(1)),
        E.binop("==", _mod2(E.substitute(parity, prev)), _mod2(E.substitute(due, prev))),
        *[E.substitute(a, prev) for a in assume if k in a.free_vars()],
    )
    if not _stale_reachable(an, w, sigs):
        if solver.always(E.negate(switch), to, assume=tuple(assume)) is True:
            wp.status, wp.stated = "ok", LAG_STATED
        else:
            wp.reason = "lagging back channel: a stale pass is not shown reachable"
        return None
    wp.stated = LAG_STATED
    return switch


def _stale_reachable(an: Analysis, w: ir.Op, sigs) -> bool:
    """w's threads can reach w's wait of round k before the signallers' release of round k - 1:
    every other barrier they wait on in w's round body is filled by their own TMA loads, or
    signalled by the signallers before their release in the same round (program order), so the
    signallers may stall just before that release while w's threads go on."""
    m, th = an.model, an.threads
    mine = th.executing(w)
    w_loops = _round_loops(an, w)
    sig_threads = frozenset().union(*(th.issuers(s) or frozenset() for s in sigs))
    first = min(s.order for s in sigs)
    for o in m.ops_of(ir.MBAR_WAIT):
        if o is w or o.barrier is None or o.loops[: len(w_loops)] != w_loops:
            continue
        ex = th.executing(o)
        if ex is None or not (ex & (mine or frozenset())):
            continue
        if o.barrier.name == w.barrier.name:
            return False
        for t in _signals(m, o.barrier.name):
            if t.kind == ir.TMA_LOAD:
                continue
            iss = _issuing(th, t)
            if iss is None:
                return False
            if iss <= (mine or frozenset()) and t.kind == ir.MBAR_EXPECT and not t.tx_only:
                continue
            if not iss <= sig_threads or t.order > first or not any(t.loops[: len(s.loops)] == s.loops for s in sigs):
                return False
    return True


def _self_paced(an: Analysis, w: ir.Op, index, k: E.Var, period: E.Expr | None) -> E.Expr | None:
    """due(k) - use(k) for a data barrier that the waiting threads fill themselves: every
    arrival on it in the loop (an expect issued by a lane of the waiting warp) sits in the
    wait's loop and fills the element the wait uses d iterations later (d >= 0, the
    lookahead; `load(bar[(k + 1) % S])` before `wait(bar[k % S])` is d = 1), the other
    arrivals come before the loop (the prologue fills), and every phase gets exactly its
    init count of arrivals. Then the wait at k observes completion
    use(k) + prologue(k) - #{i < d : element(i) == element(k)}. None when not this shape."""
    from .. import solver

    m, th, to = an.model, an.threads, an.solver_timeout_ms
    name = w.barrier.name
    if not _carries_data(m, name) or period is None or not isinstance(period.eval({}), int):
        return None
    P = period.eval({})
    mine = th.executing(w)
    if mine is None:
        return None
    arrivals = [s for s in _signals(m, name) if s.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT)]
    steady = [s for s in arrivals if s.loops == w.loops]
    prologue = [s for s in arrivals if not s.loops]
    if not steady or len(steady) + len(prologue) != len(arrivals):
        return None
    loop_start = min(o.order for o in m.ops if w.loops[-1] in o.loops)
    if any(s.order > loop_start for s in prologue):
        return None
    acc = completion.accounts(an).get(name)
    if acc is None or not acc.ok() or acc.init_count is None or acc.ragged is not None:
        return None
    for contribs in acc.arrivals.values():
        if solver.always(E.binop("==", completion.total(contribs), acc.init_count), to) is not True:
            return None
    idx_w = tuple(linear(ix) for ix in w.barrier.index)
    lookahead = None
    for s in steady:
        iss = th.issuers(s)
        if iss is None or not iss <= mine or not s.guard.exact:
            return None
        idx_s = tuple(linear(ix) for ix in s.barrier.index)
        if len(idx_s) != len(idx_w):
            return None
        found = None
        for d in range(0 if s.order < w.order else 1, P + 1):
            same = E.conj(
                *[
                    E.binop("==", a, E.substitute(b, {k.name: E.binop("+", k, E.Const(d))}))
                    for a, b in zip(idx_s, idx_w)
                ]
            )
            if solver.always(same, to) is True:
                found = d
                break
        if found is None or (lookahead is not None and lookahead != found):
            return None
        lookahead = found
    pre: E.Expr = E.Const(0)
    for s in prologue:
        iss = th.issuers(s)
        if iss is None or not s.guard.exact:
            return None
        idx_s = tuple(linear(ix) for ix in s.barrier.index)
        # the prologue fill of the waiting thread's own element (per warp: the same for
        # every lane of a warp)
        for t in mine:
            base = 32 * (t // 32)
            envs = [{"tid": t}, {"tid": base}]
            vals = [tuple(ix.eval(e) for ix in idx_s) for e in envs]
            if vals[0] != vals[1] or None in vals[0]:
                return None
        hit = E.conj(*[E.binop("==", a, b) for a, b in zip(idx_s, idx_w)])
        pre = E.binop("+", pre, E.ite(hit, E.Const(1), E.Const(0)))
    before: E.Expr = E.Const(0)
    for i in range(lookahead):
        same = E.conj(*[E.binop("==", E.substitute(b, {k.name: E.Const(i)}), b) for b in idx_w])
        before = E.binop("+", before, E.ite(same, E.Const(1), E.Const(0)))
    return E.binop("-", pre, before)


def _prefilled(an: Analysis, w: ir.Op) -> int | None:
    """For a release wait w (the producer side of a handshake): how many times w's role fills
    each element of the forward data barriers before w's loop -- the pipeline's prologue
    (`for (s = 0; s < S; s++) load(a[s], full[s]);` before the loop that waits on empty[k % S]).
    0 when it fills nothing there; 1 when every forward barrier it fills there is an array of
    w's barrier's length whose every element one loop, nested in none, fills once; None for any
    other fill before the loop (not modelled)."""
    m, th = an.model, an.threads
    mine = th.executing(w)
    if mine is None or not w.loops:
        return None
    loop_start = min(o.order for o in m.ops if w.loops[0] in o.loops)
    forward = {
        o.barrier.name
        for o in m.ops
        if o.order > w.order
        and o.loops[: len(w.loops)] == w.loops
        and o.barrier is not None
        and o.barrier.name != w.barrier.name
        and o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)
        and th.issuers(o)
        and (th.issuers(o) or frozenset()) <= mine
    }
    before = [
        o
        for name in sorted(forward)
        for o in _signals(m, name)
        if o.order < loop_start and (th.issuers(o) or frozenset()) & mine
    ]
    if not before:
        return 0
    mb = m.barriers.get(w.barrier.name)
    size = mb.dims[0].eval({}) if mb is not None and len(mb.dims) == 1 else None
    if not isinstance(size, int):
        return None
    for o in before:
        fb = m.barriers.get(o.barrier.name)
        if completion.fill_visits(m, o) != size or fb is None or fb.dims[0].eval({}) != size:
            return None
    return 1


def _waited_outside(an: Analysis, w: ir.Op) -> bool:
    """Some wait on w's barrier lies outside w's loops (its phases are not w's alone to count).
    A wait changes no phase: only waits some of w's threads run count (another consumer
    warpgroup waiting in its own loop is not a use by w's threads)."""
    mine = an.threads.executing(w)
    for o in an.model.ops_of(ir.MBAR_WAIT):
        if o.barrier is None or o.barrier.name != w.barrier.name or o.loops[: len(w.loops)] == w.loops:
            continue
        theirs = an.threads.executing(o)
        if mine is None or theirs is None or mine & theirs:
            return True
    return False


def _one_visit(m: ir.KernelModel, s: ir.Op) -> bool:
    """A signal whose loops have constant trips visiting each element of its barrier at most
    once (a pre-arrival loop over the stages), not a steady-state signal."""
    trips = [m.loops[i].trip.eval({}) if m.loops[i].trip is not None else None for i in s.loops]
    if not all(isinstance(t, int) for t in trips):
        return False
    b = m.barriers.get(s.barrier.name) if s.barrier is not None else None
    elems = 1
    for d in b.dims if b else ():
        v = d.eval({})
        if not isinstance(v, int):
            return False
        elems *= v
    return _prod(trips) <= elems


def _skips_first_use(an: Analysis, w: ir.Op) -> bool | None:
    """True when the wait runs exactly from the second use of its slot on: a uniform guard
    over the round counter k equivalent to k >= P, P the period of the barrier index (the
    controller of a two-slot ring: `if (iter >= 2) wait(finished[iter % 2], ...)`); False
    when no guard mentions k; None otherwise."""
    from .. import solver

    m = an.model
    if not w.loops or w.barrier is None:
        return None
    k = m.loops[w.loops[-1]].counter
    conds = [c for c in w.guard.uniform if k in c.free_vars()]
    if not conds and k not in w.guard.thread.free_vars():
        return False
    if len(conds) != 1 or k in w.guard.thread.free_vars():
        return None
    period = _period(tuple(linear(ix) for ix in w.barrier.index), k, an.solver_timeout_ms)
    if period is None or period.depends_on(E.LOOP):
        return None
    same = E.binop(
        "==", E.ite(conds[0], E.Const(1), E.Const(0)), E.ite(E.binop(">=", k, period), E.Const(1), E.Const(0))
    )
    return True if solver.always(same, an.solver_timeout_ms) is True else None


def _reinitialised(m: ir.KernelModel, name: str) -> bool:
    """The barrier is (re-)initialised inside a loop whose trip count is not a constant (an
    interpreter re-arms its per-instruction semaphores): its phase count restarts there."""
    for o in m.ops:
        if o.kind == ir.MBAR_INIT and o.barrier is not None and o.barrier.name == name:
            for lid in o.loops:
                t = m.loops[lid].trip
                if t is None or not isinstance(t.eval({}), int):
                    return True
    return False


def _data_exit_ok(loop: ir.Loop) -> bool:
    """A `for (;;)` left only through `if (c) break;` on data (c over no loop counter but as the
    index of a value read from memory, `schedule(it) < 0`), or a
    `while (c)` on such data without a break (`Loop.data_cond`): as far as the model knows, any
    number N >= 0 of iterations may be entered (its trip count is a symbol; a proof holds for
    every N, a counterexample at iteration k holds when N > k, stated with the finding)."""
    return loop.trip is None and (
        loop.data_cond
        or (
            loop.infinite
            and bool(loop.continues)
            and not any(E.loop_outside_data(c) or c.is_opaque() for c in loop.continues)
        )
    )


# how many iterations of a loop that ends on its counter a counterexample may need
REACH_BOUND = 16


def _counter_exit(loop: ir.Loop) -> bool:
    """A `for (;;)` left only through `if (c) break;` on block-uniform conditions c over its own
    counter (`if (task_idx(k).x == -1) break;`): its trip count is the first k where some c
    fails -- a symbol to the model. A proof for every k holds for it; a counterexample at k
    holds only when every iteration before k went on (`_reached`)."""
    return (
        loop.trip is None
        and loop.infinite
        and bool(loop.continues)
        and not any(c.is_opaque() or E.apps(c) for c in loop.continues)
        and all(v == loop.counter for c in loop.continues for v in c.free_vars() if v.kind == E.LOOP)
        and any(loop.counter in c.free_vars() for c in loop.continues)
    )


def _reached(loop: ir.Loop) -> list[E.Expr]:
    """Constraints that iteration k of a loop ending on its counter is entered: k is at most
    REACH_BOUND and every iteration j < k went on past each break."""
    k = loop.counter
    out = [E.binop("<=", k, E.Const(REACH_BOUND))]
    for j in range(REACH_BOUND):
        for c in loop.continues:
            out.append(E.binop("||", E.binop(">=", E.Const(j), k), E.substitute(c, {k.name: E.Const(j)})))
    return out


def _pre_completions(
    an: Analysis, w: ir.Op, round_loop: int | None, offset: int = 0, armed: bool = False
) -> int | None:
    """Phases completed per element by arrivals outside w's loops, before w. `armed` (a body
    walk, `_body_walk_uses`): an expect of w's own threads that arms the phase their next wait
    on the same element observes (`expect(bar[s]); wait(bar[s], ph)`) is that use's phase, not
    one completed ahead of it."""
    m, th = an.model, an.threads
    total = 0
    pre_ops = []
    b = m.barriers.get(w.barrier.name)
    elems = 1
    for d in b.dims if b else ():
        v = d.eval({})
        if not isinstance(v, int):
            return None
        elems *= v
    first = min((o.order for o in m.ops if round_loop is not None and round_loop in o.loops), default=w.order)
    for s in _signals(m, w.barrier.name):
        if _other_blocks(s, w, an.solver_timeout_ms):
            continue  # never in w's block
        if round_loop is not None and round_loop in s.loops:
            continue
        if round_loop is None and s.loops == w.loops:
            continue
        if armed and _arms_own_wait(an, s, w):
            continue
        if s.kind == ir.TMA_LOAD and s.loops and s.order < first and not set(s.loops) & set(w.loops):
            r = completion._round_of(m, s, an)
            if r is not None and r[0] is None:
                # loads in loops over tiles that deliver to the phase of an expect outside every
                # loop (the accounts' one-shot group): that expect's fill, counted with it below
                continue
        trips = [m.loops[i].trip.eval({}) if m.loops[i].trip is not None else None for i in s.loops]
        one_visit = all(isinstance(t, int) for t in trips) and _prod(trips) <= elems
        if not one_visit:
            mine, iss_s = th.executing(w), th.issuers(s)
            if iss_s is None and (pr := th.per_round(s)) is not None:
                # a warp picked by the iteration (`if (warpid() == k % 4)`, TK's lcsf / lcf
                # producers): the threads that issue it in some iteration, proved periodic
                iss_s = pr[0]
            if iss_s is None:
                # a guard on the iteration of a loop of per-thread trip (a ragged tail)
                iss_s = th.over_iterations(s)
            if (
                w.loops
                and s.order < first
                and not set(s.loops) & set(w.loops)
                and (mine is None or iss_s is None or iss_s & mine)
            ):
                # a loop of w's own threads before w's loop (a main loop, then a drain loop
                # without a carried counter): the phases it completed are not counted here (a
                # wait in no loop is a one-shot use: its phase is the accounts' one-shot phase)
                return None
            continue  # the steady-state signals of another role's loop
        iss = th.issuers(s) or frozenset()
        steady = [
            o.order
            for o in _signals(m, w.barrier.name)
            if o is not s and o.loops and (th.issuers(o) or frozenset()) & iss and o.order > s.order
        ]
        if armed and _visit_of_signaller(an, s, w, first):
            continue
        if s.order > first and not steady:
            return None  # arrivals after the wait's loop started: not a pre-arrival
        if (
            offset == 0
            and s.order < first
            and _carries_data(m, w.barrier.name)
            and (completion.fill_visits(m, s) is not None or _const_fill(m, s))
            and not _waited_outside(an, w)
        ):
            # the prologue of a prefilled data ring (all its stages or the first few, before the
            # loop that refills them): the first signal of each element it visits is the phase
            # w's first use of that element observes, not a phase completed ahead of it
            continue
        prologue = _prologue_signal(an, s, first)
        if not steady and not prologue:
            # a one-time signal after its role's steady-state signals (an epilogue arrive), or
            # one not ordered before anything: which phase it completes is not modelled
            return None
        if steady and not prologue and offset == 0:
            # a software-pipelined signaller (the first QK^T issued before the loop that issues
            # the next one per iteration): its first signal is the waiter's first use, not a
            # phase completed ahead of it -- only a released token (a handshake wait) is that.
            return None
        hit = _hits_waited_element(an, s, w)
        if hit is None:
            return None
        if not hit:
            continue  # another element of the barrier array
        if _after_wait_on_waiter(an, s, w):
            # the signaller waited before it for something w's threads signal (a consumer's
            # release of its first use, before its loop of uses): no completion ahead of w's
            # loop but the release of a use, whose phase is not modelled here
            return None
        pre_ops.append(s)
    if not pre_ops:
        return 0
    init = [o for o in m.ops if o.kind == ir.MBAR_INIT and o.barrier is not None and o.barrier.name == w.barrier.name]
    counts = {o.count.eval({}) for o in init if o.count is not None}
    if len(counts) != 1 or None in counts:
        return None
    cnt = counts.pop()
    for s in pre_ops:
        if s.kind != ir.MBAR_ARRIVE:
            return None
        iss = th.issuers(s)
        per = s.count.eval({}) if s.count is not None else None
        if iss is None or not isinstance(per, int):
            return None
        visits = 1
        for lid in s.loops:
            t = m.loops[lid].trip
            tv = t.eval({}) if t is not None else None
            if not isinstance(tv, int):
                return None
            visits *= tv
        if visits % elems and s.loops:
            return None
        total += len(iss) * per * (visits // elems if s.loops else 1)
    if cnt <= 0 or total % cnt:
        return None
    return total // cnt


def _visit_of_signaller(an: Analysis, s: ir.Op, w: ir.Op, first: int) -> bool:
    """In a body walk (`_body_walk_uses`, which counts every use of the waiter from its
    first): s, outside every loop, is issued by the one role that signals w's barrier, which
    also signals it in a loop, and no block-wide barrier orders s before the waiter's loop (an
    init-time token). s is then one visit of that role's walk -- before its loop (a
    software-pipelined signaller: the first QK^T's commit) or after it (the last PV's) -- the
    phase of one use of the waiter (data) or the release of one use, not a phase completed
    ahead of the waiter's uses."""
    m, th = an.model, an.threads
    iss = th.issuers(s)
    if iss is None or _prologue_signal(an, s, first):
        return False
    # in small loops of constant trip (one commit per query tile), s is one visit only when its
    # iterations together complete one phase of one element (`visit_groups`)
    if s.loops and not visit_groups.one_phase_visit(m, s, iss):
        return False
    sigs = _signals(m, w.barrier.name)
    if any(th.issuers(o) != iss for o in sigs):
        return False
    return any(o is not s and o.loops and not set(o.loops) <= set(s.loops) for o in sigs)


def _arms_own_wait(an: Analysis, s: ir.Op, w: ir.Op) -> bool:
    """s is an expect issued by w's threads alone whose next op on the barrier, in its own loop
    body, is a wait of the same threads on the same element (`expect(bar[s]); wait(bar[s],
    ph)`): the phase s arms is the one that wait observes."""
    m, th = an.model, an.threads
    mine = th.executing(w)
    iss = th.issuers(s)
    if s.kind != ir.MBAR_EXPECT or s.tx_only or mine is None or iss is None or not iss <= mine:
        return False
    nxt = min(
        (o for o in m.ops if o.order > s.order and o.barrier is not None and o.barrier.name == s.barrier.name),
        key=lambda o: o.order,
        default=None,
    )
    return (
        nxt is not None
        and nxt.kind == ir.MBAR_WAIT
        and nxt.loops == s.loops
        and nxt.barrier.index == s.barrier.index
        and th.executing(nxt) == mine
    )


def _hits_waited_element(an: Analysis, s: ir.Op, w: ir.Op) -> bool | None:
    """Does a one-time signal land on the element w waits on? (`arrive(bar[0])` and a wait on
    `bar[warpgroup::groupid()]`: only the threads of group 0 wait on it.) None: mixed/unknown."""
    si, wi = s.barrier.index, w.barrier.index
    if (
        s.loops
        or len(si) != len(wi)
        or any(ix.depends_on(E.LOOP) or ix.depends_on(E.THREAD) or ix.is_opaque() for ix in si)
    ):
        return True  # looped or unknown element: the per-element average below
    if any(ix.depends_on(E.LOOP) or ix.is_opaque() for ix in wi):
        return True
    if not any(ix.depends_on(E.THREAD) for ix in wi):
        return all(a == b or a.eval({}) == b.eval({}) for a, b in zip(si, wi))
    ex = an.threads.executing(w)
    if ex is None:
        return None
    seen = set()
    for t in ex:
        vals = [E.substitute(ix, {"tid": E.Const(t)}).eval({}) for ix in wi]
        if None in vals:
            return None
        seen.add(tuple(vals) == tuple(ix.eval({}) for ix in si))
    return seen.pop() if len(seen) == 1 else None


def _const_fill(m: ir.KernelModel, s: ir.Op) -> bool:
    """A signal outside every loop on one constant element of a barrier array (the prologue
    that fills the first stage, `expect(q_b[0]); load(q_b[0])`, before a loop that fills the
    next stage ahead of each use)."""
    decl = m.barriers.get(s.barrier.name) if s.barrier is not None else None
    if s.loops or decl is None or len(decl.dims) != len(s.barrier.index):
        return False
    # (a barrier that is no array: its one element)
    for ix, d in zip(s.barrier.index, decl.dims):
        v, n = ix.eval({}), d.eval({})
        if not isinstance(v, int) or not isinstance(n, int) or not 0 <= v < n:
            return False
    return True


def _precedes_nest(m: ir.KernelModel, o: ir.Op, s: ir.Op) -> bool:
    """o, in no loop, comes before the whole loop nest of s (every execution of s follows o):
    the last uses of a ring after its loop (`wait(kv_arrived[v], ph)` then a loop over the
    query tiles that releases `kv_finished[v]`)."""
    if o.loops or not s.loops:
        return False
    return o.order < min(x.order for x in m.ops if s.loops[0] in x.loops)


def _after_wait_on_waiter(an: Analysis, s: ir.Op, w: ir.Op) -> bool:
    """The threads of signal s wait, before s, on a barrier that w's threads signal."""
    m, th = an.model, an.threads
    iss, mine = th.issuers(s), th.executing(w)
    if iss is None or mine is None:
        return True
    for o in m.ops_of(ir.MBAR_WAIT):
        if o.order >= s.order or o.barrier is None:
            continue
        theirs = th.executing(o)
        if theirs is None or not theirs & iss:
            continue
        for g in _signals(m, o.barrier.name):
            gi = th.issuers(g)
            if gi is None or gi & mine:
                return True
    return False


def _prologue_signal(an: Analysis, s: ir.Op, first: int) -> bool:
    """A one-time signal followed by a barrier of the whole block (or cluster) that every
    thread passes before the wait's loop (`init; arrive; __syncthreads();` in the prologue)."""
    for o in an.model.ops_of(ir.SYNC):
        if not (s.order < o.order < first):
            continue
        if o.sync_kind not in ("block", "cluster", "cluster_wait", "grid"):
            continue
        if o.guard.uniform or o.guard.thread != E.TRUE:
            continue
        if len(o.loops) > len(set(o.loops) & set(s.loops)):
            continue
        return True
    return False


def _prod(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def _mod2(e: E.Expr) -> E.Expr:
    e = E.ite(e, E.Const(1), E.Const(0)) if _is_bool(e) else e
    return E.binop("%", E.binop("+", E.binop("%", e, E.Const(2)), E.Const(2)), E.Const(2))


def _bit(e: E.Expr) -> bool:
    """e is provably 0 or 1: `x % 2` of a non-negative x, 0/1 constants, bits of bits."""
    if isinstance(e, E.Const):
        return e.value in (0, 1) and not isinstance(e.value, bool)
    if isinstance(e, E.Bin) and e.op == "%" and e.b == E.Const(2):
        return True
    if isinstance(e, E.Bin) and e.op == "&" and (e.b == E.Const(1) or e.a == E.Const(1)):
        return True
    if isinstance(e, E.Bin) and e.op == "^":
        return _bit(e.a) and _bit(e.b)
    return False


def _nonneg(e: E.Expr) -> bool:
    """e >= 0 by construction: non-negative constants, loop counters, and +, *, /, %, >>, &
    of such (the values ring indices and parities are computed from)."""
    if isinstance(e, E.Const):
        return isinstance(e.value, bool) or (isinstance(e.value, int) and e.value >= 0)
    if isinstance(e, E.Var):
        return e.kind == E.LOOP and e.name[:1] == "k" and e.name[1:].isdigit()
    if isinstance(e, E.Bin) and e.op in ("+", "*", "/", "%", ">>", "&", "|", "^"):
        return _nonneg(e.a) and _nonneg(e.b)
    if isinstance(e, E.Ite):
        return _nonneg(e.t) and _nonneg(e.e)
    return False


def _pow2(e: E.Expr) -> int | None:
    v = e.value if isinstance(e, E.Const) and not isinstance(e.value, bool) else None
    return v if isinstance(v, int) and v > 0 and v & (v - 1) == 0 else None


def linear(e: E.Expr) -> E.Expr:
    """Rewrite XORs of 0/1 values as arithmetic mod 2, and masks and shifts of non-negative
    values by constants as mod / div / mul by powers of two (`k & (S-1)` is `k % S`, `k >> 2`
    is `k / 4`), so that z3 stays in linear integer arithmetic (div/mod by constants)
    instead of bit-blasting Int2BV terms."""
    if isinstance(e, E.Bin):
        a, b = linear(e.a), linear(e.b)
        if e.op == "&" and _nonneg(a):
            if _pow2(E.binop("+", b, E.Const(1))) is not None:
                return E.binop("%", a, E.binop("+", b, E.Const(1)))
        if e.op == "&" and _nonneg(b) and _pow2(E.binop("+", a, E.Const(1))) is not None:
            return E.binop("%", b, E.binop("+", a, E.Const(1)))
        if e.op == "&" and (b == E.Const(1) or a == E.Const(1)):
            # x & 1 of a possibly negative x is x mod 2 in two's complement, kept out of Int2BV
            x = a if b == E.Const(1) else b
            return E.binop("%", E.binop("+", E.binop("%", x, E.Const(2)), E.Const(2)), E.Const(2))
        if (
            e.op in (">>", "<<")
            and isinstance(b, E.Const)
            and isinstance(b.value, int)
            and not isinstance(b.value, bool)
            and 0 <= b.value < 63
            and _nonneg(a)
        ):
            return E.binop("/" if e.op == ">>" else "*", a, E.Const(1 << b.value))
        if e.op == "^":
            if a == E.Const(0):
                return b
            if b == E.Const(0):
                return a
            if _bit(a) and _bit(b):
                return E.binop("%", E.binop("+", a, b), E.Const(2))
        return E.binop(e.op, a, b)
    if isinstance(e, E.Un):
        return E.unop(e.op, linear(e.a))
    if isinstance(e, E.Ite):
        return E.ite(linear(e.c), linear(e.t), linear(e.e))
    return e


def _is_bool(e: E.Expr) -> bool:
    return (
        (isinstance(e, E.Bin) and e.op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"))
        or (isinstance(e, E.Un) and e.op == "!")
        or (isinstance(e, E.Const) and isinstance(e.value, bool))
    )


def _smallest_counterexample(
    pred: E.Expr, k: E.Var | None, assume: list[E.Expr], timeout: int, outer: Sequence[E.Var] = ()
) -> dict | None:
    """A model of `pred` under `assume`, lexicographically smallest in the outer loops'
    counters (outermost first) and then in k: the first use that goes wrong, which is reached
    (an earlier use of this wait going wrong would be smaller)."""
    zv = E.Z3Vars()
    try:
        zp = E.as_bool(pred.to_z3(zv))
        za = [E.as_bool(a.to_z3(zv)) for a in assume]
    except (z3.Z3Exception, TypeError):
        return None
    from ..solver import _constraints, checked, limited, smallest_model

    opt = limited(z3.Optimize())
    opt.add(*_constraints(zv, za))
    opt.add(zp)
    known = {name for name, _ in zv.items()}
    first = [zv.get(v) for v in (*outer, *([k] if k is not None else [])) if v.name in known]
    for t in first:
        opt.minimize(t)
    if checked(opt) != z3.sat:
        return None
    # the other values (the sizes and block shown as the witness's parameters) the smallest too:
    # z3's own choice among the models follows the process's history
    mdl = smallest_model(opt.assertions(), zv, first) or opt.model()
    out = {}
    for name, v in zv.items():
        val = mdl.eval(v, model_completion=True)
        if z3.is_int_value(val):
            out[name] = val.as_long()
        elif z3.is_true(val) or z3.is_false(val):
            out[name] = bool(z3.is_true(val))
    return out


# ------------------------------------------------------------------- check --


def _compute(an: Analysis) -> list[WaitPhase]:
    m = an.model
    out = []
    for w in m.ops_of(ir.MBAR_WAIT):
        if w.barrier is None or w.barrier.name not in m.barriers:
            continue
        wp = WaitPhase(w, w.barrier.name)
        ex = an.threads.executing(w)
        wp.role = describe(ex, an.threads.n)
        try:
            _analyse(an, w, wp)
            if wp.status == "unknown":
                # the other wait sites of the role counted as uses did not decide it: read as
                # before they were counted (the front end's ring walk, the body walk below)
                wp = WaitPhase(w, w.barrier.name, role=wp.role)
                _analyse(an, w, wp, others_ok=False)
            if wp.status == "unknown" and w.order not in m.ring_visits:
                # not decided site by site: the role's uses of the barrier before, in and after
                # one loop read as one walk (`_body_walk_uses`); its answer only where it decides
                again = WaitPhase(w, w.barrier.name, role=wp.role)
                _analyse(an, w, again, body=True, others_ok=False)
                if again.status != "unknown":
                    wp = again
        except (z3.Z3Exception, RecursionError, ZeroDivisionError) as exc:  # pragma: no cover
            wp.status, wp.reason = "unknown", f"solver error: {exc}"
        out.append(wp)
    return out


def _analyse(an: Analysis, w: ir.Op, wp: WaitPhase, body: bool = False, others_ok: bool = True):
    """`others_ok`: the round-15 readings (other wait sites counted as uses, paired flips);
    False reads the wait as before them (the fallback when they leave it undecided)."""
    m, to = an.model, an.solver_timeout_ms
    pb = None
    pb_reason = ""  # why the bitfield's counts did not decide w, when the ring walk is tried instead
    if (
        w.parity is not None
        and w.phasebit is not None
        and w.loops
        and (
            w.parity.is_opaque()
            or len(w.loops) > 1
            or (w.phasebit.pos is not None and w.phasebit.pos.depends_on(E.THREAD))
        )
        and not any(ix.is_opaque() for ix in w.barrier.index)
    ):
        pb = _phasebit_counts(an, w, others_ok)
        if isinstance(pb, str) and others_ok:
            pb = _paired_flips(an, w) or pb
        if isinstance(pb, str):
            if w.order not in m.ring_visits or w.parity.is_opaque():
                wp.reason = pb
                return
            # the bit counts do not tell (another wait site of the same threads on the barrier:
            # a peeled first use before the k loop), but the front end read the bitfield with
            # the ring as one walk (`frontend/ring_walk.py`): its uses are the walk's visits
            pb_reason, pb = pb, None
    if w.parity is None or (w.parity.is_opaque() and pb is None) or any(ix.is_opaque() for ix in w.barrier.index):
        wp.reason = "parity or barrier index not modelled"
        return
    if any(o.unmodelled_barrier_use and o.barrier is not None and o.barrier.name == w.barrier.name for o in m.ops):
        wp.reason = "the barrier is passed to a call tkcheck does not model"
        return
    # an mbarrier operation whose barrier is not known may signal this one (an arrive on a
    # `mapa` address, raw PTX on an unresolved operand): the signals `_handshake` and the phase
    # counts read would be a subset of the real ones, so nothing they say is a proof
    blind = [o for o in completion.blind_ops(m) if o.kind != ir.MBAR_WAIT]
    if blind:
        wp.reason = f"an mbarrier operation whose barrier is not known (line {blind[0].location.row}) may signal it"
        return
    # uses counted by paired flips (`_paired_flips`) hold under any condition the wait and its
    # flip share, modelled or not
    by_pairs = pb is not None and not isinstance(pb, str) and pb[4] == "paired"
    if (
        not w.guard.exact
        or (any(c.is_opaque() for c in w.guard.uniform) and not by_pairs)
        or w.guard.thread.is_opaque()
    ):
        wp.reason = "guard not modelled"
        return
    if an.threads.executing(w) is None and not w.guard.thread.depends_on(E.LOOP):
        wp.reason = "threads unknown"
        return
    if w.mbar is not None and (w.mbar.cta is not None or w.mbar.remote):
        wp.reason = "remote barrier"
        return
    if _reinitialised(m, w.barrier.name):
        wp.reason = "barrier re-initialised inside a loop"
        return
    index = tuple(linear(ix) for ix in w.barrier.index)
    parity = linear(w.parity) if pb is None else pb[0]
    walk = _ring_walk_uses(an, w, index, parity) if pb is None and w.order in m.ring_visits else None
    defs: list[E.Expr] = []  # a body walk's use and trip count, as definitions
    if body:
        walk = _body_walk_uses(an, w, index, parity) if pb is None and walk is None else "no body walk"
        if not isinstance(walk, str):
            k_, index_, parity_, defs, I_ = walk
            walk = (k_, index_, parity_, [], I_)
    if isinstance(walk, str):
        wp.reason = pb_reason or walk
        return
    if walk is None and pb_reason:
        wp.reason = pb_reason
        return
    flat = _flatten(m, w, index, parity) if pb is None and walk is None else None
    if flat is not None:
        # a ring carried across the tasks of a persistent loop: the uses are counted over the
        # flat iteration F = T * task + k of the (task, k) nest
        F, index, parity = flat
    kk = F if flat is not None else (m.loops[w.loops[-1]].counter if w.loops else None)
    index = tuple(_tabulated(ix, w, m, kk) for ix in index)
    if pb is None:
        parity = _tabulated(parity, w, m, kk)
    # a loop that goes on with the counter / ring a previous loop advanced (a drain loop): its
    # wait is the previous loop's wait site at iterations trip .. trip + its own trip - 1
    site = w
    cont = _continuation(an, w, index, parity) if flat is None and pb is None and walk is None else None
    if cont is None and flat is None and pb is None and walk is None:
        cont = _tail_use(an, w, index, parity)
    if cont is not None:
        site, index, parity, in_range = cont
    loop_vars = {v.name for ix in index for v in ix.free_vars() if v.kind == E.LOOP} | {
        v.name for v in parity.free_vars() if v.kind == E.LOOP
    }
    chain = [m.loops[i] for i in site.loops]
    if pb is None and flat is None and cont is None and len(chain) > 1:
        # innermost loops that only pick the element (`for (i = 0; i < N; i++) wait(bar[i],
        # phase)`): each element once per iteration of the loop around them, which is the round
        elem = _element_loops(an, w, chain, index, parity)
        if elem:
            chain = chain[: len(chain) - elem]
    elif pb is None and flat is None and cont is None and chain and not w.guard.thread.depends_on(E.LOOP):
        # loops that only pick the element, around a wait in no other loop (`for (i = 0; i < N;
        # i++) wait(bar[i], 0)` once per kernel): each element is waited once, a one-shot use
        if _element_loops(an, w, chain, index, parity, outermost=True) == len(chain):
            chain = []
    if any("@" in n for n in loop_vars):
        wp.reason = "loop-carried value not solved"
        return
    # the round loop: the innermost loop; outer loops must not move the index or parity
    assume: list[E.Expr] = list(w.guard.uniform)
    th_assume = _thread_range(an, w, index, parity)
    if w.guard.thread.depends_on(E.LOOP) or th_assume:
        assume.append(w.guard.thread)
    assume.extend(th_assume)
    p_assume = tuple(assume) if th_assume else ()
    trip_assume: list[E.Expr] = []
    reach: list[E.Expr] = []
    if pb is not None and w.loops and _counter_exit(m.loops[w.loops[0]]):
        # a task loop that ends on its counter (`num_iters` set from `task_iter`): a
        # counterexample must be reached, every earlier task went on
        reach = _reached(m.loops[w.loops[0]])
    if cont is not None:
        assume.append(in_range[0])
        trip_assume.append(in_range[1])
    sites = None
    first_task: list[E.Expr] | None = []  # a varying-trip flat nest: where a counterexample is reached
    if walk is not None:
        # a ring walk (`_ring_walk_uses`): w's use v of the ring is its visit v
        k, index, parity, first_task, O = walk
        # read at the use v: a bitfield's `(bits >> ring) & 1` over the walk's orbit as its
        # table form (linear arithmetic for the solver, as for a loop counter)
        index = tuple(_tabulated(ix, w, m, k) for ix in index)
        parity = _tabulated(parity, w, m, k)
        wp.loop = O.id
        assume.append(E.binop(">=", k, E.Const(0)))
        if defs:
            assume.extend(defs)
            p_assume = tuple(p_assume) + (E.binop(">=", k, E.Const(0)),)
        period = _period(index, k, to, p_assume)
        if period is None:
            wp.reason = "ring period not recognised"
            return
        if not _own_elements(an, w, index, k, period):
            wp.reason = "ring elements shared with another waiting role"
            return
        wp.period = period
        use = E.binop("/", k, period) if period != E.Const(1) else k
    elif flat is not None:
        O, I = chain
        k = F
        wp.loop = O.id
        if any(
            o is not w and o.barrier is not None and o.barrier.name == w.barrier.name and I.id in o.loops
            for o in m.ops_of(ir.MBAR_WAIT)
        ):
            # several uses of one ring an inner iteration: their uses v = P F + j in program order
            sites = _sites_in_order(an, w, I, True, flat=F)
            if sites is None:
                wp.reason = "barrier waited at several sites in the loop"
                return
            k, index, parity, extra, _, _ = sites
            assume.extend(extra)
            p_assume = tuple(p_assume) + tuple(extra)
        period = _period(index, k, to, p_assume)
        counted = ring_uses.counted_uses(index, k, to, p_assume) if period is None and sites is None else None
        if period is None and counted is None:
            wp.reason = "ring period not recognised"
            return
        if counted is not None:
            # elements visited unevenly in a period (a ring restarted per task of 8 steps over
            # 3 stages): the uses before step F tabulated over one period
            use, period = counted
        if not _own_elements(an, w, index, k, period):
            wp.reason = "ring elements shared with another waiting role"
            return
        if counted is None:
            wp.period = period
            use = E.binop("/", k, period) if period != E.Const(1) else k
        P = E.Const(sites[4] if sites is not None else 1)
        if _varying_trip(m, w):
            # F = B + k over the steps B of the earlier tasks, a symbol: the proof below is for
            # every F; a counterexample is one only where it is reached, in the first task
            # (B = 0, F = k < its trip count, the task loop entered at all)
            T0 = E.substitute(I.trip, {O.counter.name: E.Const(0)})
            if T0.depends_on(E.LOOP) or T0.is_opaque():
                first_task = None
            else:
                first_task = [E.binop("<", k, E.binop("*", P, T0))]
                if O.trip is not None:
                    first_task.append(E.binop(">", O.trip, E.Const(0)))
        elif O.trip is None and not _data_exit_ok(O):
            wp.reason = "trip count unknown"
            return
        elif O.trip is None:
            # a task loop that ends on data (a scheduler's sentinel): its trip count N is a
            # symbol; the proof below is for every flat iteration, so for every N
            wp.assumption = "data-exit"
        else:
            trip_assume.append(E.binop("<", k, E.binop("*", P, E.binop("*", I.trip, O.trip))))
    elif chain:
        rl = chain[-1]
        if len(chain) > 1 and (pb is None or pb[1] is None):
            wp.reason = "wait inside nested loops (uses across outer iterations not modelled)"
            return
        if any(
            o is not site and o.barrier is not None and o.barrier.name == w.barrier.name and rl.id in o.loops
            for o in m.ops_of(ir.MBAR_WAIT)
        ):
            # two wait sites on one barrier in a loop (page tokens: 2 pages a round out of
            # 3): one site's uses of an element are not its element's uses -- unless the
            # sites, in program order, are the uses of one ring (`_sites_in_order`)
            sites = _sites_in_order(an, site, rl, cont is None and pb is None and len(chain) == 1)
            if sites is None or rl.trip is None:
                wp.reason = "barrier waited at several sites in the loop"
                return
        elif cont is None and pb is None and len(chain) == 1 and _waited_before(an, site, rl):
            # the same threads used the ring before the loop (a peeled first use): those uses
            # come first in the sequence of the element's uses
            sites = _sites_in_order(an, site, rl, True, several=False)
            if sites is None or rl.trip is None:
                wp.reason = "barrier also waited before the loop by the same threads"
                return
        data_exit = rl.trip is None and (_data_exit_ok(rl) or _counter_exit(rl)) and len(chain) == 1
        if data_exit and _counter_exit(rl):
            # a counterexample must be reached: every earlier iteration went on
            reach = _reached(rl)
        paired = pb is not None and pb[4] == "paired"  # uses counted by the paired flips: no trip needed
        if rl.trip is None and not data_exit and not paired:
            wp.reason = "trip count unknown"
            return
        k = rl.counter
        wp.loop = rl.id
        if sites is not None:
            # the use counter v = Q + P k + j of the Q prologue waits and the P sites (j: w's
            # place among them): the element and parity of use v are site j's at iteration k
            k, index, parity, extra, _, _ = sites
            assume.extend(extra)
            p_assume = tuple(p_assume) + tuple(extra)
        period = _period(index, k, to, p_assume)
        counted = (
            ring_uses.counted_uses(index, k, to, p_assume) if period is None and sites is None and pb is None else None
        )
        if period is None and counted is None:
            wp.reason = "ring period not recognised"
            return
        if counted is not None:
            use, period = counted  # elements visited unevenly in a period: the uses tabulated
        if not _own_elements(an, w, index, k, period):
            wp.reason = "ring elements shared with another waiting role"
            return
        if counted is None:
            wp.period = period
            use = E.binop("/", k, period) if period != E.Const(1) else k
        if data_exit:
            # the loop ends on data the model does not follow: every iteration k may be
            # entered; a counterexample at k holds if the loop gets that far (stated)
            wp.assumption = "data-exit"
        elif cont is None and sites is not None:
            trip_assume.append(
                E.binop("<", k, E.binop("+", E.Const(sites[5]), E.binop("*", E.Const(sites[4]), rl.trip)))
            )
        elif cont is None and rl.trip is not None:
            trip_assume.append(E.binop("<", k, rl.trip))
        if pb is not None:
            trip_assume.extend(pb[2])
            if pb[1] is not None:
                use = pb[1]
            if len(chain) > 1 and chain[0].trip is None:
                wp.assumption = "data-exit"  # a task loop that ends on data (CLC) around the k loop
    else:
        k = None
        earlier = [
            o
            for o in m.ops_of(ir.MBAR_WAIT)
            if o.order < w.order and o.barrier is not None and o.barrier.name == w.barrier.name
        ]
        mine = an.threads.executing(w)
        if mine is not None:
            # a wait changes no phase: other threads' waits (the MMA warp's wait on the TMEM
            # allocation before the epilogue's) are not uses of w's threads
            earlier = [o for o in earlier if (an.threads.executing(o) is None or an.threads.executing(o) & mine)]
        if any(o.loops for o in earlier):
            wp.reason = "barrier also waited in a loop before"
            return
        same = [o for o in earlier if o.barrier == w.barrier and an.threads.executing(o) == an.threads.executing(w)]
        if len(same) != len(earlier):
            wp.reason = "barrier waited before by other threads / elements"
            return
        if any(s.loops and not _one_shot_signal(an, s) for s in _signals(m, w.barrier.name)):
            wp.reason = "one-shot wait on a barrier signalled in loops"
            return
        use = E.Const(len(same))
    if sites is not None and _filled_by_waiters(an, w):
        # a pipeline its own threads fill, with several uses an iteration: not modelled
        wp.reason = "barrier waited at several sites in the loop (filled by its own waiters)"
        return
    sp = (
        _self_paced(an, site, index, k, wp.period)
        if k is not None and flat is None and sites is None and walk is None
        else None
    )
    if sp is not None:
        # a pipeline its own threads fill (per-warp prefetch-ahead ring): the wait at k
        # observes completion use(k) + prologue fills of its element - the uses the
        # lookahead leaves to the prologue
        wp.use = use
        due = E.binop("+", use, sp)
        wp.due = due
    else:
        due = None
    why: list = []
    # a pipeline the waiting threads fill themselves (`_self_paced`) is no handshake: the
    # direction is theirs, also in a loop that ends on data
    hs = _handshake(an, site, why, body) if due is None else False
    if due is None and pb is not None and pb[3] and site is w and not body:
        # w is one of its role's wait sites of one sequence of uses: the direction is the
        # sequence's, read at the site that runs in every task (the k loop's); a drain after it
        # in the task that leaves (no refill after it in its body) takes that site's, any
        # other site must agree with it
        cont_ = m.loops[w.loops[0]].continues
        main = [o for o in pb[3] if not any(E.negate(c) in o.guard.uniform for c in cont_)]
        if len(main) != 1:
            wp.reason = "handshake direction not established (several wait sites of the role)"
            return
        why2: list = []
        hs2 = _handshake(an, main[0], why2, body)
        leaves = any(E.negate(c) in w.guard.uniform for c in cont_)
        if hs2 is None or (hs is True and hs2 is not True) or (not leaves and hs2 != hs):
            wp.reason = "handshake direction not established (the role's wait sites disagree)"
            return
        if leaves:
            hs, why = hs2, why2
    alt = None
    if walk is not None and wp.period == E.Const(1):
        # the walk's uses of w's barrier and w's role's requests that its signallers answer
        # alternate (`alternation.offset`): the due phase is proved from the order of w's own
        # uses and requests, whatever the handshake's direction read from one loop body says (a
        # free first use: -1; a request first: 0); nothing else completes a phase
        O_ = walk[4]
        prefix = () if body else tuple(w.loops[: w.loops.index(O_.id) + 1]) if O_.id in w.loops else None
        if prefix is not None:
            alt = alternation.offset(an, w, prefix, repeated=not body)
    if hs is None and alt is None:
        wp.reason = "handshake direction not recognised"
        return
    if (
        pb is not None
        and hs is False
        and sp is None
        and "skip" not in why
        and "pair" not in why
        and any(u.depends_on(E.LOOP) for u in w.guard.uniform)
    ):
        # a bitfield wait under a loop condition (once a task, at one step of the k loop) whose
        # signaller answers through a third role: a release when the cycle closes through the
        # data w's own role fills after it, else the direction is not told by one handshake
        if not _release_chain(an, site):
            wp.reason = "handshake direction not established (conditional wait, no direct handshake)"
            return
        hs = True
        why.append("pair")
    lag = None
    if hs is False and sp is None and walk is None and k is not None and "skip" not in why and "pair" not in why:
        # no signaller waits for anything w's role does after w; maybe for what it does before w
        lag = _lagging_release(an, site)
        if lag is not None:
            hs = True
    if alt is not None:
        wp.offset, wp.pre, wp.use = alt, 0, use
        due = E.binop("+", use, E.Const(alt))
        wp.due = due
    elif (
        walk is not None
        and hs is False
        and "skip" not in why
        and "pair" not in why
        and not _carries_data(m, w.barrier.name, body)
    ):
        # a ring walk's sites sit before, in and after the inner loop: "no handshake found" from
        # one site's loop body is no proof of the direction (the role's signal on the forward
        # barrier may come before the wait in the body); only a data barrier, or a direction
        # proved from the pairs, is taken
        wp.reason = "handshake direction not established (ring walk)"
        return
    if (
        alt is None
        and walk is not None
        and hs
        and (_body_prologue_signal(an, w) if body else _task_prologue_signal(an, w, walk[4]))
    ):
        # w's role signals another barrier in the task before w, outside w's inner loop (the
        # MMA warp's first QK commit before its k loop): the cycle through that barrier may start
        # on w's side, so w need not be the back channel -- its direction is not told
        wp.reason = "handshake direction not established (ring walk: the task signals before the wait)"
        return
    if (
        alt is None
        and wp.assumption == "data-exit"
        and hs is False
        and sp is None
        and "skip" not in why
        and "pair" not in why
    ):
        # `False` is also the answer when no handshake was found at all; in a loop whose
        # trip the model does not know, only a direction proved from the guards is used
        wp.reason = "handshake direction not established (data-exit loop)"
        return
    # w is the back channel of a handshake whose forward barrier carries data: a release.
    # Commit arrivals (tcgen05.commit: the MMAs that read a stage are done) release too; only
    # bytes landing on w itself make the direction ambiguous
    if alt is None:
        wp.offset = -1 if (hs and not _carries_bytes(m, w.barrier.name)) else 0
    if alt is None and hs and _carries_bytes(m, w.barrier.name):
        wp.reason = "both barriers of the handshake carry data"
        return
    if alt is None and wp.offset == -1:
        filled = _prefilled(an, site)
        if filled is None:
            wp.reason = "the data barrier of the handshake is filled before the loop in a way not modelled"
            return
        # every element of the forward barrier filled once before the loop: the release of
        # that fill is the first phase w's first use of its slot waits for
        wp.offset += filled
    if due is None:
        pre = _pre_completions(an, site, wp.loop, wp.offset, armed=body)
        if pre is None:
            wp.reason = "arrivals outside the loop not accounted"
            return
        if pre > 0 and wp.offset == 0 and not hs and not _carries_data(m, w.barrier.name, body):
            # a pre-arrived token (page tokens: init 1 and arrived once, so the first use finds it
            # free) carries no data: each use waits for the release of the use before it, the
            # first one for the pre-arrival, whoever releases it (its own role too)
            wp.offset = -1
        wp.pre = pre
        wp.use = use
        due = E.binop("+", use, E.Const(wp.offset + pre))
        wp.due = due
    bad = E.binop("!=", _mod2(parity), _mod2(due))
    from .. import solver

    if lag is not None:
        bad = _lag_obligation(an, w, wp, lag, parity, due, k, assume)
        if bad is None:
            return

    # first without the trip bounds (often non-linear: grid-stride task loops); a proof
    # for every iteration is a proof for the iterations that run
    ok = solver.always(E.negate(bad), to, assume=tuple(assume))
    if ok is True:
        wp.status = "ok"
        return
    if pb is not None and pb[4] == "paired":
        # the paired flips count the uses, not the iterations: no counterexample is read from them
        wp.reason = "phase bitfield: the parity of an element's first use not proved"
        return
    if (flat is not None and _varying_trip(m, w)) or walk is not None:
        if first_task is None or ok is None:
            wp.reason = "ring carried across tasks of varying length: not proved, no counterexample in the first task"
            return
        trip_assume = first_task
    assume.extend(trip_assume)
    ok = solver.always(E.negate(bad), to, assume=tuple(assume)) if trip_assume else ok
    if ok is True:
        wp.status = "ok"
        return
    if ok is None:
        wp.reason = "solver: unknown"
        return
    if reach:
        assume.extend(reach)
    outer = [lp.counter for lp in chain[:-1]] if chain else []
    cex = _smallest_counterexample(bad, k, assume, to, outer=[c for c in outer if c is not None and c != k])
    if cex is None and reach:
        wp.reason = "no counterexample reached within the first iterations of a loop that ends on its counter"
        return
    if cex is None and trip_assume:
        cex = solver.witness(bad, to, assume=tuple(assume))  # Optimize gave up (non-linear bounds)
    if cex is None:
        wp.reason = "no counterexample recovered"
        return
    env = dict(cex)
    waited = _mod2(parity).eval(env)
    want = _mod2(due).eval(env)
    if waited is None or want is None or waited == want:
        wp.reason = "counterexample did not evaluate"
        return
    stage = tuple(ix.eval(env) for ix in index)
    it = env.get(k.name, 0) if k is not None else None
    if sites is not None and it is not None:
        it = (it - sites[5]) // sites[4]  # the use v = Q + P k + j: the loop's iteration k
    after_loop = None
    if body and walk is not None:
        # a body walk: the loop's own iteration, or after how many iterations a wait after it runs
        I_ = walk[4]
        it = env.get(I_.counter.name) if I_.id in w.loops else None
        trips = [n for n in env if n.startswith("T#uses")]
        if w.order > max(o.order for o in m.ops if I_.id in o.loops) and len(trips) == 1:
            after_loop = env.get(trips[0])
    if cont is not None and it is not None and not w.loops:
        # a wait after the loop (`_tail_use`): its one use, after that many iterations
        after_loop = chain[-1].trip.eval(env) if chain[-1].trip is not None else None
        it = None
    elif cont is not None and it is not None:
        # the continuing loop's own iteration
        t0 = chain[-1].trip.eval(env) if chain[-1].trip is not None else None
        it = it - t0 if isinstance(t0, int) else it
        wp.loop = w.loops[-1]
    wp.witness = {
        "iteration": it,
        "stage": stage[0] if len(stage) == 1 else (list(stage) if stage else None),
        "use": use.eval(env),
        "due_phase": due.eval(env),
        "parity_waited": waited,
        "parity_due": want,
        "role": wp.role,
        "barrier": w.barrier.shown(),  # as the user wrote it (`empty[k % STAGES]`)
    }
    if isinstance(after_loop, int) and not isinstance(after_loop, bool):
        wp.witness["after_loop"] = after_loop
    if len(chain) > 1 and chain[0].counter.name in env:
        wp.witness["outer_iteration"] = env[chain[0].counter.name]
    if flat is not None and it is not None and _varying_trip(m, w):
        wp.witness["outer_iteration"], wp.witness["iteration"] = 0, it
    elif flat is not None and it is not None:
        tv = chain[1].trip.eval(env)
        if isinstance(tv, int) and tv > 0:
            wp.witness["outer_iteration"], wp.witness["iteration"] = divmod(it, tv)
            wp.witness["flat_iteration"] = it
    if reach:
        # the loop ends on its counter and the counterexample's iteration is reached: no
        # assumption about the trip count is left
        wp.assumption = ""
    elif wp.assumption == "data-exit" and len(chain) > 1:
        ot = wp.witness.get("outer_iteration", env.get(chain[0].counter.name, 0))
        wp.assumption = (
            f"assuming the task loop, which ends on a data-dependent `break`, enters iteration {ot}: "
            f"at least {ot + 1} task(s) are handed out"
        )
        wp.witness["assumption"] = wp.assumption
    elif wp.assumption == "data-exit":
        n = (it or 0) + 1
        wp.assumption = (
            f"assuming the loop, which ends on a data-dependent `break`, enters iteration {it}: "
            f"at least {n} instruction(s) of the stream are read"
            + (f" and the first {it} are not the stop" if it else "")
        )
        wp.witness["assumption"] = wp.assumption
    else:
        wp.assumption = ""
    params = {n: v for n, v in env.items() if not n.startswith("k") and not n.startswith("?") and n != "tid"}
    if params:
        wp.witness["params"] = params
    # phase never advanced: the parity is the same on every iteration
    # (a wait after the loop, `_tail_use`, is one use: its parity has no counter to move)
    invariant = k is not None and k not in parity.free_vars() and bool(w.loops)
    if body and walk is not None:
        # a body walk: the parity never changes when the loop's counter is not in it (a wait in
        # the loop); a wait before or after the loop is one use
        invariant = walk[4].id in w.loops and walk[4].counter not in parity.free_vars()
    if not invariant and k is not None and pb is not None:
        # a phase bit that no flip touches reads the same value whatever the position (the
        # other half's bits: `get_phasebit<1>` where only `<0>` is flipped)
        ren = {v.name: E.Var(v.name + "@again", E.PARAM) for v in parity.free_vars() if v.kind == E.LOOP}
        same_par = E.binop("==", _mod2(parity), _mod2(E.substitute(parity, ren)))
        invariant = bool(ren) and solver.always(same_par, to, assume=tuple(w.guard.uniform)) is True
    wp.status = "not-advanced" if invariant else "mismatch"


_BIT_OPS = frozenset(("&", ">>", "<<", "|", "^"))


def _sites_in_order(an: Analysis, w: ir.Op, rl: ir.Loop, plain: bool, several: bool = True, flat: E.Var | None = None):
    """The uses of one barrier by w's threads as one sequence: Q waits before the loop rl (a
    prologue use: "first QK, then the loop") and P wait sites directly in rl (a ring advanced
    after each of two uses an iteration: `wait(full[s], ph); ...; if (++s == S) { s = 0; ph
    ^= 1; }` twice). When every site is run by w's threads alone, under one guard that does
    not change from iteration to iteration (a prologue site under no condition the loop's
    sites lack), with modelled element and parity, the sites in program order are the uses v
    = 0 .. Q - 1 (prologue) and v = Q + P k + j (site j of P at iteration k) of one sequence:
    the element of use v is that site's at that iteration. Returns (v, element of use v, w's
    parity at v, assumptions (v >= Q, (v - Q) % P == j), P, Q), or None. The due phase is
    then proved over v as for one site: the completions of its element before use v are v /
    period when the whole element sequence is a ring of that period (`_period`). With `flat`
    (the wait's flat iteration F of a (task, k) nest, `_flatten`) the sites' elements and
    parities are read over F, a prologue counts only in no task loop, and v = P F + j."""
    if not plain:
        return None
    m, th = an.model, an.threads
    name = w.barrier.name
    ops = [o for o in m.ops_of(ir.MBAR_WAIT) if o.barrier is not None and o.barrier.name == name]
    sites = sorted((o for o in ops if rl.id in o.loops), key=lambda o: o.order)
    mine = th.executing(w)
    if mine is None or len(sites) > 8:
        return None
    start = min(o.order for o in m.ops if rl.id in o.loops)
    for o in ops:
        if o in sites:
            continue
        theirs = th.executing(o)
        if theirs is not None and not theirs & mine:
            continue  # another role's waits change no phase of w's
        if o.loops or theirs is None:
            return None  # w's threads wait in another loop too: not counted here
    pro = sorted((o for o in ops if not o.loops and o.order < start and th.executing(o) == mine), key=lambda o: o.order)
    if flat is not None and pro:
        return None
    if len(pro) > 8 or (len(sites) < 2 and not pro) or (not several and len(sites) > 1):
        return None
    k = rl.counter if flat is None else flat
    tab_index, tab_parity = [], []
    for o in pro + sites:
        g = o.guard
        if o not in pro and o.loops != w.loops:
            return None
        if th.executing(o) != mine or len(o.barrier.index) != len(w.barrier.index):
            return None
        if not g.exact or g.thread.depends_on(E.LOOP) or g.thread.is_opaque():
            return None
        if any(c.depends_on(E.LOOP) or c.is_opaque() for c in g.uniform):
            return None
        if (set(g.uniform) != set(w.guard.uniform)) if o not in pro else not set(g.uniform) <= set(w.guard.uniform):
            return None
        if o.parity is None or o.parity.is_opaque() or o.phasebit is not None:
            return None
        if any(ix.is_opaque() for ix in o.barrier.index):
            return None
        ix, par = tuple(linear(x) for x in o.barrier.index), linear(o.parity)
        if flat is not None:
            fl = _flatten(m, o, ix, par)
            if fl is None or fl[0] != flat:
                return None
            _, ix, par = fl
        ix = tuple(_tabulated(x, o, m, k if o in sites else None) for x in ix)
        par = _tabulated(par, o, m, k if o in sites else None)
        if any(v.kind == E.LOOP and ("@" in v.name or o in pro) for x in (*ix, par) for v in x.free_vars()):
            return None
        tab_index.append(ix)
        tab_parity.append(par)
    P, Q = len(sites), len(pro)
    v = E.Var(f"{k.name}#use", E.LOOP)
    rel = E.binop("-", v, E.Const(Q)) if Q else v
    it = E.binop("/", rel, E.Const(P)) if P > 1 else rel
    j = E.binop("%", rel, E.Const(P))
    at = {k.name: it}
    index = []
    for d in range(len(w.barrier.index)):
        e = E.substitute(tab_index[-1][d], at)
        for q in range(P - 2, -1, -1):
            e = E.ite(E.binop("==", j, E.Const(q)), E.substitute(tab_index[Q + q][d], at), e)
        for q in range(Q - 1, -1, -1):
            e = E.ite(E.binop("==", v, E.Const(q)), tab_index[q][d], e)
        index.append(e)
    me = sites.index(w)
    parity = E.substitute(tab_parity[Q + me], at)
    extra = [E.binop(">=", v, E.Const(Q))]
    if P > 1:
        extra.append(E.binop("==", j, E.Const(me)))
    return v, tuple(index), parity, extra, P, Q


def _ring_walk_uses(an: Analysis, w: ir.Op, index, parity):
    """A wait whose ring state the front end read as a ring walk (`frontend/ring_walk.py`:
    the state at visit X is g(X), X = B + c with B the visits of the earlier tasks of the task
    loop O). The waits of w's threads on the barrier, all in O (before, inside or after one
    inner loop I of trip T, or in no inner loop), in program order are the uses of one task:
    Q before I, P an iteration of I, R after it; use rank j (before), Q + P k + j (inside),
    Q + P T + j (after). When every site's visit is B + its rank (z3) and a task's visits are
    Q + P T + R (so the uses of the earlier tasks are B too), use v sees the ring's state g(v):
    returns (v, element at v, parity at v, where a counterexample is reached: the first task,
    B = 0, O). Else a reason (undecided)."""
    from .. import solver

    m, th, to = an.model, an.threads, an.solver_timeout_ms
    wid, X = m.ring_visits[w.order]
    O_id, B, steps = m.ring_walks[wid]
    if not w.loops or w.loops[0] != O_id:
        return "ring walk: wait outside its task loop"
    O = m.loops[O_id]
    mine = th.executing(w)
    if mine is None:
        return "threads unknown"
    # the task loop's own exits (`for (t = 0; ; t++) { if (task(t).x == -1) break; ... }`): a
    # site after the break runs under "this task went on", a condition over O's counter that
    # every site of the sequence shares (checked below); a task that fails it ends O, so no
    # later task runs and the earlier tasks' visits are still B. No other condition over a loop
    exits = set(O.continues) if _counter_exit(O) else set()
    elem_loops: dict[int, list] = {}  # a site's loops that only pick its element
    sites = []
    loops_of: dict[int, tuple[int, ...]] = {}
    uniform_of: dict[int, set] = {}
    for o in m.ops_of(ir.MBAR_WAIT):
        if o.barrier is None or o.barrier.name != w.barrier.name:
            continue
        theirs = th.executing(o)
        if theirs is None:
            return "threads unknown"
        if not theirs & mine:
            continue
        g = o.guard
        pinned = _pinned_loops(m, o)
        loops = o.loops[: len(o.loops) - len(pinned)]
        uniform = {c for c in g.uniform if c not in pinned.values()}
        if len(loops) > 1 and o.parity is not None:
            # innermost loops that only pick the element (`for (qid ..) wait(bar[qid], phase)`)
            ne = _element_loops(an, o, [m.loops[i] for i in loops], tuple(o.barrier.index), o.parity)
            if ne:
                elem_loops[o.order] = [m.loops[i] for i in loops[len(loops) - ne :]]
                loops = loops[: len(loops) - ne]
        if (
            theirs != mine
            or m.ring_visits.get(o.order, (None,))[0] != wid
            or not loops
            or loops[0] != O_id
            or len(loops) > 2
            or not g.exact
            or g.thread.depends_on(E.LOOP)
            or g.thread.is_opaque()
            or any((c.depends_on(E.LOOP) and c not in exits) or c.is_opaque() for c in uniform)
            or len(o.barrier.index) != len(w.barrier.index)
        ):
            return "ring walk: a use of the ring not in one sequence with this wait"
        loops_of[o.order], uniform_of[o.order] = loops, uniform
        sites.append(o)
    if w not in sites or any(uniform_of[o.order] != uniform_of[w.order] for o in sites):
        return "ring walk: a use of the ring not in one sequence with this wait"
    inner_ids = {loops_of[o.order][1] for o in sites if len(loops_of[o.order]) == 2}
    if len(inner_ids) > 1:
        return "ring walk: uses in several inner loops"
    I = m.loops[inner_ids.pop()] if inner_ids else None
    if I is not None and (I.trip is None or I.parent != O_id or I.trip.depends_on(E.THREAD)):
        return "ring walk: inner trip count unknown"
    sites.sort(key=lambda o: o.order)
    groups = _element_visits(sites, elem_loops, m)
    if isinstance(groups, str):
        return groups
    if I is not None:
        lo = min(o.order for o in m.ops if I.id in o.loops)
        pre = [gr for gr in groups if len(loops_of[gr[0].order]) == 1 and gr[0].order < lo]
        ins = [gr for gr in groups if len(loops_of[gr[0].order]) == 2]
        post = [gr for gr in groups if len(loops_of[gr[0].order]) == 1 and gr[0].order > lo]
    else:
        pre, ins, post = groups, [], []
    Q, P, R = len(pre), len(ins), len(post)
    T = I.trip if I is not None else E.Const(0)
    kI = I.counter if I is not None else None
    group_of = {o.order: gr for gr in groups for o in gr}

    def rank(o):
        gr = group_of[o.order]
        if gr in pre:
            return E.Const(pre.index(gr))
        if gr in ins:
            return E.binop("+", E.Const(Q + ins.index(gr)), E.binop("*", E.Const(P), kI))
        return E.binop("+", E.Const(Q + post.index(gr)), E.binop("*", E.Const(P), T))

    # the trip count as one symbol (the same expression on both sides: its arithmetic, often
    # non-linear, is no part of the question)
    Ts = E.Var("T#walk", E.LOOP)

    def sym(e):
        return E.replace_sub(e, T, Ts) if I is not None else e

    bounds = [E.binop(">=", B, E.Const(0)), E.binop(">=", Ts, E.Const(0))]
    if kI is not None:
        bounds += [E.binop(">=", kI, E.Const(0)), E.binop("<", kI, Ts)]
    for o in sites:
        xo = m.ring_visits[o.order][1]
        same = E.binop("==", sym(xo), E.binop("+", B, sym(rank(o))))
        if solver.always(same, to, assume=tuple(bounds)) is not True:
            return "ring walk: a wait's visit is not its use (an advance skipped or repeated)"
    # a task's visits (a + b) + m T (T the trip count of the inner loop that advances the
    # ring, m >= 1): its uses Q + R + P T, so no uses in that loop is no match
    if tuple(steps) != (Q + R, P):
        return "ring walk: a task's visits are not its uses"
    v = E.Var("v#walk", E.LOOP, label="use of the ring")
    idx = tuple(E.replace_sub(ix, X, v) for ix in index)
    par = E.replace_sub(parity, X, v)
    if any(B in x.free_vars() or (kI is not None and kI in x.free_vars()) for x in (*idx, par)):
        return "ring walk: the wait's element or parity not read at its visit"
    # a counterexample is one where it is reached: in the first task (B = 0), O entered
    first = {O.counter.name: E.Const(0)}
    T0 = E.substitute(T, first)
    if T0.depends_on(E.LOOP) or T0.is_opaque():
        return (v, idx, par, None, O)
    r0 = E.substitute(rank(w), first)
    if kI is not None:
        r0 = E.substitute(r0, {kI.name: kI})
    reached = [E.binop("==", v, r0)]
    if w in ins:
        reached += [E.binop(">=", kI, E.Const(0)), E.binop("<", kI, T0)]
    if O.trip is not None:
        reached.append(E.binop(">", E.substitute(O.trip, first), E.Const(0)))
    # a loop that ends on its counter: the first task is entered when it goes on past each break
    reached.extend(E.substitute(c, first) for c in uniform_of[w.order] if c in exits)
    return (v, idx, par, reached, O)


def _body_walk_uses(an: Analysis, w: ir.Op, index, parity):
    """The ring walk of a role with no task loop (`_ring_walk_uses` with the role's body as its
    one task): the waits of w's threads on w's barrier sit before one loop I outside every
    loop (Q groups), in I (P groups an iteration) and after it (R groups), in program order,
    under one set of block-uniform conditions. A group is one site, or -- where sites pick
    their element by a loop (`for (qid ..) wait(bar[qid], ph)`) or wait on constant elements
    -- a run of sites that waits on every element of the barrier's one set exactly once (one
    visit of each element). Use ranks: j before I, Q + P k + j in I, Q + P T + j after it.

    With one site a group, the element of use v is the sites' index read at v: the prologue
    sites' constants, then site j of I at k = (v - Q) / P; a site after I must be proved to
    wait on the element I's site j % P would at iteration T + j / P (its index is that site's
    continued past the loop, for every trip count T). With groups, each use of the walk is a
    use of every element. Returns (v, index over v, w's parity, definitions (v = w's rank, k
    in [0, T), T >= 0), I), or a reason (undecided). No counting is guessed: the uses of the
    ring are exactly these sites' executions, each once per visit."""
    from .. import solver

    m, th, to = an.model, an.threads, an.solver_timeout_ms
    mine = th.executing(w)
    if mine is None:
        return "threads unknown"
    elem_loops: dict[int, list] = {}
    loops_of: dict[int, tuple[int, ...]] = {}
    uniform_of: dict[int, set] = {}
    sites = []
    for o in m.ops_of(ir.MBAR_WAIT):
        if o.barrier is None or o.barrier.name != w.barrier.name:
            continue
        theirs = th.executing(o)
        if theirs is None:
            return "threads unknown"
        if not theirs & mine:
            continue
        g = o.guard
        pinned = _pinned_loops(m, o)
        loops = o.loops[: len(o.loops) - len(pinned)]
        uniform = {c for c in g.uniform if c not in pinned.values()}
        if loops and o.parity is not None and not o.parity.is_opaque():
            ne = _element_loops(an, o, [m.loops[i] for i in loops], tuple(o.barrier.index), o.parity, outermost=True)
            if ne:
                elem_loops[o.order] = [m.loops[i] for i in loops[len(loops) - ne :]]
                loops = loops[: len(loops) - ne]
        if (
            theirs != mine
            or len(loops) > 1
            or o.parity is None
            or o.parity.is_opaque()
            or o.phasebit is not None
            or any(ix.is_opaque() for ix in o.barrier.index)
            or not g.exact
            or g.thread.depends_on(E.LOOP)
            or g.thread.is_opaque()
            or any(c.depends_on(E.LOOP) or c.is_opaque() for c in uniform)
            or len(o.barrier.index) != len(w.barrier.index)
        ):
            return "sibling uses: a use of the barrier not in one sequence with this wait"
        loops_of[o.order], uniform_of[o.order] = loops, uniform
        sites.append(o)
    if w not in sites or any(uniform_of[o.order] != uniform_of[w.order] for o in sites):
        return "sibling uses: a use of the barrier not in one sequence with this wait"
    inner_ids = sorted({loops_of[o.order][0] for o in sites if loops_of[o.order]})
    if not inner_ids:
        return "sibling uses: no loop"
    Ls = [m.loops[i] for i in inner_ids]
    for L in Ls:
        # (a trip count of the thread's own, `m_tile` of its warpgroup, is one symbol too: the
        # uses counted are each thread's own, proved for every trip count)
        if L.parent is not None or L.trip is None or L.trip.depends_on(E.LOOP) or L.trip.is_opaque():
            return "sibling uses: the loop's trip count unknown"
        if L.continues or L.thread_exit or L.data_cond or (not L.uniform and not L.trip.depends_on(E.THREAD)):
            return "sibling uses: a loop that ends early"
    sites.sort(key=lambda o: o.order)
    span = {
        L.id: (min(o.order for o in m.ops if L.id in o.loops), max(o.order for o in m.ops if L.id in o.loops))
        for L in Ls
    }
    Ls.sort(key=lambda L: span[L.id][0])
    if any(span[a.id][1] > span[b.id][0] for a, b in zip(Ls, Ls[1:])):
        return "sibling uses: loops not one after another"
    # the region of a site: 2 i + 1 in the i-th loop, 2 i before it (after the loop before)
    region = {}
    for o in sites:
        if loops_of[o.order]:
            i = [L.id for L in Ls].index(loops_of[o.order][0])
            if not span[Ls[i].id][0] <= o.order <= span[Ls[i].id][1]:
                return "sibling uses: not one loop"
            region[o.order] = 2 * i + 1
        else:
            region[o.order] = 2 * sum(1 for L in Ls if span[L.id][1] < o.order)
    fixed = {tuple(o.barrier.index) for o in sites} == {tuple(w.barrier.index)} and not any(
        ix.depends_on(E.LOOP) for ix in w.barrier.index
    )
    grouped = not fixed and (
        bool(elem_loops) or all(isinstance(ix.eval({}), int) for o in sites for ix in o.barrier.index)
    )
    groups: list[list] = []
    if grouped:
        sets = {}
        for o in sites:
            els = _enumerated_elements(o, elem_loops.get(o.order, []))
            if els is None:
                return "sibling uses: the elements of one visit not enumerated"
            sets[o.order] = els
        full = set().union(*sets.values())
        cur: list = []
        seen: set = set()
        for o in sites:
            if cur and region[cur[0].order] != region[o.order]:
                return "sibling uses: a visit split across the loop"
            if seen & sets[o.order]:
                return "sibling uses: an element used twice at one visit"
            cur.append(o)
            seen |= sets[o.order]
            if seen == full:
                groups.append(cur)
                cur, seen = [], set()
        if cur:
            return "sibling uses: the visits use different elements"
    else:
        # one site a use (the same element at every site, or a ring read as a table below)
        groups = [[o] for o in sites]
    if not grouped and not fixed and len(Ls) > 1:
        return "sibling uses: a ring over several loops"
    if not groups:
        return "sibling uses: no use"
    Ts = {L.id: E.Var(f"T#uses{i}", E.LOOP, label="trip count of the loop") for i, L in enumerate(Ls)}

    def sym(e):
        e = linear(e)
        for L in sorted(Ls, key=lambda L: -len(str(L.trip))):
            e = E.replace_sub(e, L.trip, Ts[L.id])
        return e

    # use ranks: the uses of every region before w's, then w's place in its own
    group_of = {o.order: gr for gr in groups for o in gr}
    gw = group_of[w.order]
    rw = region[w.order]
    rank: E.Expr = E.Const(0)
    for r in range(rw):
        n = sum(1 for gr in groups if region[gr[0].order] == r)
        if r % 2:
            rank = E.binop("+", rank, E.binop("*", E.Const(n), Ts[Ls[r // 2].id]))
        elif n:
            rank = E.binop("+", rank, E.Const(n))
    mine_region = [gr for gr in groups if region[gr[0].order] == rw]
    rank = E.binop("+", rank, E.Const(mine_region.index(gw)))
    I = Ls[rw // 2] if rw % 2 else Ls[0]
    kI = I.counter
    if rw % 2:
        rank = E.binop("+", rank, E.binop("*", E.Const(len(mine_region)), kI))
    v = E.Var("v#uses", E.LOOP, label="use of the barrier")
    defs = [*(E.binop(">=", t, E.Const(0)) for t in Ts.values()), E.binop("==", v, rank)]
    if rw % 2:
        defs += [E.binop(">=", kI, E.Const(0)), E.binop("<", kI, Ts[I.id])]
    par = sym(parity)
    allowed = {kI, *Ts.values()} | {L.counter for L in elem_loops.get(w.order, [])}
    if par.depends_on(E.LOOP) and par.free_vars() - allowed:
        return "sibling uses: the wait's parity not read at its use"
    if grouped or fixed:
        # a use of the walk is a use of every element (or of the one element): the element
        # does not move with v
        idx = tuple(sym(ix) for ix in index)
        if any(x.free_vars() & ({kI} | set(Ts.values())) for x in idx):
            return "sibling uses: the elements of one visit not enumerated"
        return (v, idx, par, defs, I)
    Ts1 = Ts[I.id]
    pre = [gr for gr in groups if region[gr[0].order] == 0]
    ins = [gr for gr in groups if region[gr[0].order] == 1]
    post = [gr for gr in groups if region[gr[0].order] == 2]
    Q, P = len(pre), len(ins)
    # one site a group: the element of use v, from the prologue sites and the loop's sites
    tab = []
    for gr in ins:
        o = gr[0]
        tab.append(tuple(_tabulated(linear(ix), o, m, kI) for ix in o.barrier.index))
    if any(Ts1 in x.free_vars() or any(fv.kind == E.LOOP and fv != kI for fv in x.free_vars()) for t in tab for x in t):
        return "sibling uses: an element not read at its use"
    head = []
    for gr in pre:
        ix = tuple(linear(x) for x in gr[0].barrier.index)
        if any(x.depends_on(E.LOOP) for x in ix):
            return "sibling uses: an element not read at its use"
        head.append(ix)
    # each site after the loop continues the loop's sites (proved for every trip count)
    bounds = (E.binop(">=", Ts1, E.Const(0)), *w.guard.uniform)
    # (only those up to w: a use after w changes nothing w observes)
    for r, gr in enumerate(post):
        o = gr[0]
        if o.order > w.order:
            break
        at = {kI.name: E.binop("+", Ts1, E.Const(r // P))}
        same = E.conj(*[E.binop("==", sym(a), E.substitute(b, at)) for a, b in zip(o.barrier.index, tab[r % P])])
        if solver.always(same, to, assume=bounds) is not True:
            return "sibling uses: a wait after the loop does not continue the loop's ring"
    rel = E.binop("-", v, E.Const(Q)) if Q else v
    it = E.binop("/", rel, E.Const(P)) if P > 1 else rel
    j = E.binop("%", rel, E.Const(P))
    seq: list[E.Expr] = []
    for d in range(len(w.barrier.index)):
        e = E.substitute(tab[-1][d], {kI.name: it})
        for q in range(P - 2, -1, -1):
            e = E.ite(E.binop("==", j, E.Const(q)), E.substitute(tab[q][d], {kI.name: it}), e)
        # the loop's elements as a table over v (periodic by construction, read at v >= Q); the
        # prologue's uses must be that table's first entries: one table is every use's element
        u = E.Var("u#uses", E.LOOP)
        ku = E.binop("/", u, E.Const(P)) if P > 1 else u
        eu = E.substitute(tab[-1][d], {kI.name: ku})
        for q in range(P - 2, -1, -1):
            eu = E.ite(
                E.binop("==", E.binop("%", u, E.Const(P)), E.Const(q)), E.substitute(tab[q][d], {kI.name: ku}), eu
            )
        t = _table_from(eu, u, Q, v)
        if t is not None and all(t.eval({v.name: q}) == head[q][d].eval({}) for q in range(Q)):
            e = t
        else:
            for q in range(Q - 1, -1, -1):
                e = E.ite(E.binop("==", v, E.Const(q)), head[q][d], e)
        seq.append(e)
    return (v, tuple(seq), par, defs, I)


def _task_prologue_signal(an: Analysis, w: ir.Op, O: ir.Loop) -> bool:
    """w's threads signal a barrier X (not w's) in the task loop O both before w, outside the
    inner loop that holds w (a per-task prologue fill: the MMA warp's first QK commit), and
    after w in the task (the loop's own fills of X): or threads not known. The cycle through X
    may then start on w's side."""
    mine = an.threads.executing(w)
    if mine is None:
        return True
    before: set = set()
    after: set = set()
    for o in an.model.ops:
        if (
            o.kind not in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)
            or o.barrier is None
            or o.barrier.name == w.barrier.name
            or not o.loops
            or o.loops[0] != O.id
        ):
            continue
        iss = an.threads.issuers(o)
        if iss is None:
            return True
        if not iss & mine:
            continue
        if o.order > w.order:
            after.add(o.barrier.name)
        elif not (len(w.loops) > 1 and len(o.loops) > 1 and o.loops[1] == w.loops[1]):
            before.add(o.barrier.name)
    return bool(before & after)


def _table_from(e: E.Expr, u: E.Var, start: int, v: E.Var) -> E.Expr | None:
    """e, a function of u >= 0 alone with a structural period p, as the canonical table over
    v = u + start (its values at v < start are the table's too: the caller checks them)."""
    from ..recurrence import MAX_TABLE, canonical_form, structural_period

    if e.free_vars() != {u}:
        return None
    p = structural_period(linear(e), u)
    if p is None or p > MAX_TABLE:
        return None
    seq_u = []
    for j in range(p):
        x = e.eval({u.name: j})
        if x is None:
            return None
        seq_u.append(int(x))
    seq = [seq_u[(i - start) % p] for i in range(p)]
    return canonical_form(seq + seq, 0, p, v)


def _body_prologue_signal(an: Analysis, w: ir.Op) -> bool:
    """`_task_prologue_signal` for a body walk (`_body_walk_uses`): w's threads signal a
    barrier X (not w's) both before w, outside the loop that holds w, and after w; or threads
    not known. The cycle through X may then start on w's side."""
    mine = an.threads.executing(w)
    if mine is None:
        return True
    before: set = set()
    after: set = set()
    for o in an.model.ops:
        if o.kind not in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD) or o.barrier is None:
            continue
        if o.barrier.name == w.barrier.name:
            continue
        iss = an.threads.issuers(o)
        if iss is None:
            return True
        if not iss & mine:
            continue
        if o.order > w.order:
            after.add(o.barrier.name)
        elif not (w.loops and o.loops and o.loops[0] == w.loops[0]):
            before.add(o.barrier.name)
    return bool(before & after)


def _element_visits(sites: list, elem_loops: dict, m: ir.KernelModel) -> list | str:
    """The walk's sites (in program order) as groups that are one use each: a site alone, as
    before -- or, where some site picks its element by a loop (`for (qid ..) wait(bar[qid],
    phase)`) or two sites share a visit (`wait(bar[0], ph); wait(bar[1], ph); ph ^= 1;`), the
    sites of one visit (one walk state, no advance between them) together. Each group must then
    wait on every element of one set exactly once (elements enumerated: constant indices,
    element loops of constant trip; disjoint within a group, the same set in every group), so
    that visit v of the walk is use v of each element: a phase per element, one counter."""
    if not elem_loops and len({str(m.ring_visits[o.order][1]) for o in sites}) == len(sites):
        return [[o] for o in sites]
    groups: list[list] = []
    for o in sites:
        x = str(m.ring_visits[o.order][1])
        if groups and str(m.ring_visits[groups[-1][0].order][1]) == x:
            groups[-1].append(o)
        else:
            groups.append([o])
    why = "ring walk: the elements of one visit not enumerated"
    full = None
    for gr in groups:
        seen: set = set()
        for o in gr:
            els = _enumerated_elements(o, elem_loops.get(o.order, []))
            if els is None:
                return why
            if seen & els:
                return "ring walk: an element used twice at one visit"
            seen |= els
        if full is None:
            full = seen
        elif seen != full:
            return "ring walk: the visits use different elements"
    return groups


def _enumerated_elements(o: ir.Op, loops: list) -> set | None:
    """The elements (index tuples) o waits on over its element loops' iterations, or None when
    an index is not a constant there."""
    from itertools import product

    ranges = []
    for L in loops:
        t = L.trip.eval({}) if L.trip is not None else None
        if not isinstance(t, int) or isinstance(t, bool) or not 0 < t <= 64:
            return None
        ranges.append([(L.counter.name, i) for i in range(t)])
    out = set()
    for combo in product(*ranges):
        env = dict(combo)
        vals = tuple(ix.eval(env) for ix in o.barrier.index)
        if any(not isinstance(v, int) or isinstance(v, bool) for v in vals):
            return None
        out.add(vals)
    return out


def _pinned_loops(m: ir.KernelModel, o: ir.Op) -> dict:
    """o's innermost loops whose iteration o's guard pins to one (`for (qid = 0; qid < 2;
    qid++) { ...; if (qid == 0) wait(...); }`: a constant trip, a condition `counter == c`
    with 0 <= c < trip, the counter nowhere in o's element or parity): o runs once per
    iteration of the loop around them. Loop id -> the pinning condition."""
    out: dict = {}
    for lid in reversed(o.loops[1:]):
        L = m.loops.get(lid)
        trip = L.trip.eval({}) if L is not None and L.trip is not None else None
        if not isinstance(trip, int) or isinstance(trip, bool):
            break
        pin = None
        for c in o.guard.uniform:
            if (
                isinstance(c, E.Bin)
                and c.op == "=="
                and c.a == L.counter
                and isinstance(c.b, E.Const)
                and isinstance(c.b.value, int)
                and 0 <= c.b.value < trip
            ):
                pin = c
        if pin is None:
            break
        used = [*o.barrier.index, o.parity] if o.barrier is not None else []
        if any(isinstance(x, E.Expr) and L.counter in x.free_vars() for x in used):
            break
        if any(c is not pin and L.counter in c.free_vars() for c in o.guard.uniform):
            break
        out[lid] = pin
    return out


def _waited_before(an: Analysis, w: ir.Op, rl: ir.Loop) -> bool:
    """w's threads wait on w's barrier outside every loop before the loop rl."""
    m, th = an.model, an.threads
    mine = th.executing(w)
    start = min(o.order for o in m.ops if rl.id in o.loops)
    for o in m.ops_of(ir.MBAR_WAIT):
        if o.loops or o.order >= start or o.barrier is None or o.barrier.name != w.barrier.name:
            continue
        theirs = th.executing(o)
        if mine is None or theirs is None or theirs & mine:
            return True
    return False


def _filled_by_waiters(an: Analysis, w: ir.Op) -> bool:
    """Some arrival or copy on w's barrier is issued by threads that also wait on it."""
    mine = an.threads.executing(w)
    for s in _signals(an.model, w.barrier.name):
        theirs = an.threads.executing(s)
        if mine is None or theirs is None or theirs & mine:
            return True
    return False


def _same_plain_guards(w: ir.Op, site: ir.Op) -> bool:
    """The wait and its loop site run under exact guards that name no loop counter, the same
    block-uniform conditions, and the site's parity is known: the site's use at an iteration is
    then the wait's use."""
    for o in (w, site):
        g = o.guard
        if not g.exact or g.thread.depends_on(E.LOOP) or any(c.depends_on(E.LOOP) or c.is_opaque() for c in g.uniform):
            return False
    return set(w.guard.uniform) == set(site.guard.uniform) and site.parity is not None and not site.parity.is_opaque()


def _continuation(an: Analysis, w: ir.Op, index, parity):
    """A wait in a loop D that goes on with the values a previous loop P advanced
    (`Loop.carried_from`: `for (; k < K + S; ++k) wait(empty[k % S], ...)` after the main loop
    `for (; k < K; ++k)`): when P has one wait site on the barrier, run by the same threads
    in every iteration, and D's index at its iteration j is that site's index at P's iteration
    P.trip + j (proved), D's waits are that site's uses at iterations P.trip .. P.trip +
    D.trip - 1 -- the fills before them are counted over both loops. Returns (P's site, index
    and parity over P's counter, (kP >= P.trip, kP < P.trip + D.trip)), or None."""
    from .. import solver

    m, th, to = an.model, an.threads, an.solver_timeout_ms
    if len(w.loops) != 1 or w.barrier is None:
        return None
    D = m.loops[w.loops[-1]]
    P = m.loops.get(D.carried_from) if D.carried_from is not None else None
    if P is None or P.trip is None or D.trip is None or P.parent != D.parent:
        return None
    if any(x.depends_on(E.THREAD) or x.is_opaque() for x in (P.trip, D.trip)):
        return None
    name = w.barrier.name
    waits = [o for o in m.ops_of(ir.MBAR_WAIT) if o.barrier is not None and o.barrier.name == name]
    sites = [o for o in waits if o.loops == (P.id,)]
    if len(sites) != 1:
        return None
    site = sites[0]
    mine = th.executing(w)
    if mine is None or th.executing(site) != mine:
        return None
    if not _same_plain_guards(w, site):
        return None
    # between the two loops, and in D, nothing else waits on or signals the barrier
    end_p = max(o.order for o in m.ops if P.id in o.loops)
    if any(o is not w and end_p < o.order and (D.id in o.loops or o.order < w.order) for o in waits):
        return None
    if any(D.id in s.loops or end_p < s.order < w.order for s in _signals(m, name)):
        return None
    kP = P.counter
    back = {D.counter.name: E.binop("-", kP, P.trip)}
    idx = tuple(linear(E.substitute(ix, back)) for ix in index)
    par = linear(E.substitute(parity, back))
    idx_p = tuple(linear(ix) for ix in site.barrier.index)
    if len(idx) != len(idx_p) or any(ix.is_opaque() for ix in idx_p):
        return None
    lo, hi = E.binop(">=", kP, P.trip), E.binop("<", kP, E.binop("+", P.trip, D.trip))
    same = E.conj(*[E.binop("==", a, b) for a, b in zip(idx, idx_p)])
    if solver.always(same, to, assume=(lo, hi, *w.guard.uniform)) is not True:
        return None
    return site, idx_p, par, (lo, hi)


def _tail_use(an: Analysis, w: ir.Op, index, parity):
    """A wait in no loop, after a loop P in no loop either, whose threads waited on the barrier
    at one site of P in every iteration and nowhere else before (`for (k..) { wait(freed, toc);
    ..; toc ^= 1; } wait(freed, toc);`, a producer's last wait for its ring's release): w is
    those threads' next use of the barrier, the site's use at P's iteration P.trip (the index
    proved equal to the site's there). Returns, as `_continuation`, (P's site, index and parity
    over P's counter, (kP >= P.trip, kP < P.trip + 1)), or None."""
    from .. import solver

    m, th, to = an.model, an.threads, an.solver_timeout_ms
    if w.loops or w.barrier is None:
        return None
    mine = th.executing(w)
    if mine is None:
        return None
    name = w.barrier.name
    waits = [o for o in m.ops_of(ir.MBAR_WAIT) if o.barrier is not None and o.barrier.name == name]
    before = [o for o in waits if o.order < w.order and (th.executing(o) is None or th.executing(o) & mine)]
    if len(before) != 1 or len(before[0].loops) != 1:
        return None
    site = before[0]
    P = m.loops.get(site.loops[0])
    if P is None or P.parent is not None or P.trip is None:
        return None
    if P.trip.depends_on(E.THREAD) or P.trip.is_opaque() or th.executing(site) != mine:
        return None
    if not _same_plain_guards(w, site):
        return None
    # w after the whole of P, and nothing signals the barrier between the two
    end_p = max(o.order for o in m.ops if P.id in o.loops)
    if w.order < end_p or any(end_p < s.order < w.order for s in _signals(m, name)):
        return None
    kP = P.counter
    idx = tuple(linear(ix) for ix in index)
    idx_p = tuple(linear(ix) for ix in site.barrier.index)
    if len(idx) != len(idx_p) or any(ix.is_opaque() for ix in idx_p):
        return None
    lo, hi = E.binop(">=", kP, P.trip), E.binop("<", kP, E.binop("+", P.trip, E.Const(1)))
    same = E.conj(*[E.binop("==", a, b) for a, b in zip(idx, idx_p)])
    if solver.always(same, to, assume=(lo, hi, *w.guard.uniform)) is not True:
        return None
    return site, idx_p, linear(parity), (lo, hi)


def _tabulated(e: E.Expr, w: ir.Op, m: ir.KernelModel, k: E.Var | None) -> E.Expr:
    """A parity or index computed with bit operations from periodic values of the wait's
    loop counter (`(bits >> s) & 1` of a table-form bitmask and ring) as its canonical
    closed form: linear arithmetic for the solver."""
    if k is None or not any(isinstance(x, E.Ite) or isinstance(x, E.Bin) and x.op in _BIT_OPS for x in E.subexprs(e)):
        return e
    t = tabulate(e, k)
    return t if t is not None else e


def _flatten(m: ir.KernelModel, w: ir.Op, index, parity):
    """(F, index, parity) when the wait sits in a (task, k) nest and its index and parity are
    functions of the flat iteration F = T * task + k alone (T the inner trip count, the
    same in every task): the closed forms of values carried across the task loop."""
    if len(w.loops) != 2:
        return None
    O, I = (m.loops[i] for i in w.loops)
    T = I.trip
    if T is None or T.depends_on(E.THREAD):
        return None
    F = E.Var(f"f{I.counter.name[1:]}", E.LOOP)
    B = flat_base(O.counter)
    # the inner trip count varies from task to task: the front end named the steps of the
    # earlier tasks B (`flat_base`), F = B + k
    varying = T.depends_on(E.LOOP) or T.is_opaque()
    base = E.binop("+", B if varying else E.binop("*", T, O.counter), I.counter)
    idx = tuple(E.replace_sub(ix, base, F) for ix in index)
    par = E.replace_sub(parity, base, F)
    used = {v for x in idx + (par,) for v in x.free_vars()}
    if O.counter in used or I.counter in used or B in used or F not in used:
        if varying:
            return None
        got = _flat_by_first_task(w, O, I, T, F, index, parity)
        restarted = ring_uses.restarted_flat(O, I, F, index, parity) if got is None else None
        return (F, *restarted) if restarted is not None else got
    return F, idx, par


def _flat_by_first_task(w: ir.Op, O: ir.Loop, I: ir.Loop, T: E.Expr, F: E.Var, index, parity):
    """(F, index, parity) when the wait's index and parity at (task kO, step k) are the first
    task's closed forms continued to the flat step F = T kO + k: v(kO, k) == v(0, T kO + k) for
    every kO >= 0 and 0 <= k < T (T >= 1, the same in every task), proved by z3. A ring the
    front end solved per loop (the inner loop's index starting from the outer loop's closed
    form, `s = ((4 kO) % 2 + k) % 2`, no phase carried with it) is then one walk of the ring
    over F, as the flat closed forms are; anything not proved stays None (undecided)."""
    from .. import solver

    loop_vars = {v for x in tuple(index) + (parity,) for v in x.free_vars() if v.kind == E.LOOP}
    if not loop_vars or not loop_vars <= {O.counter, I.counter} or I.counter not in loop_vars:
        return None
    if any(x.is_opaque() for x in tuple(index) + (parity,)):
        return None
    first = {O.counter.name: E.Const(0), I.counter.name: F}
    idx = tuple(E.substitute(ix, first) for ix in index)
    par = E.substitute(parity, first)
    flat_at = E.binop("+", E.binop("*", T, O.counter), I.counter)
    same = E.conj(
        *[E.binop("==", ix, E.substitute(fx, {F.name: flat_at})) for ix, fx in zip(index, idx)],
        E.binop("==", _mod2(parity), _mod2(E.substitute(par, {F.name: flat_at}))),
    )
    assume = (
        E.binop(">=", T, E.Const(1)),
        E.binop("<", I.counter, T),
        *w.guard.uniform,
    )
    if solver.always(same, assume=assume) is not True:
        return None
    return F, idx, par


def _varying_trip(m: ir.KernelModel, w: ir.Op) -> bool:
    """w sits in a (task, k) nest whose inner trip count changes from task to task."""
    T = m.loops[w.loops[-1]].trip
    return T is not None and (T.depends_on(E.LOOP) or T.is_opaque())


def element(wp: WaitPhase) -> str:
    st = wp.witness.get("stage")
    return f"{wp.barrier}[{st}]" if st is not None else wp.barrier


# ------------------------------------------- phase bitfields across loops --
#
# TK's phase bitfield (`get_phasebit<n>(bits, ring)` / `update_phasebit<n>(bits, ring)`)
# inside a persistent task loop: the builder records where the bitfield was last set to
# a constant (`phasebit_set`) and every flip site (`phasebit_flip`); the bit a wait reads
# is then its initial value xor the number of flips of that bit before the wait, counted
# over the outer (task) loop and the inner (k) loop. A ring index of the form
# (R + k) % p + c counts flips in closed form: per outer iteration when R does not move,
# or over the flat iteration number T * k_outer + k when R = (R0 + T * k_outer) % p (a
# ring carried across tasks). Anything else stays unknown.


def _ring_form(pos: E.Expr, k: E.Var):
    """(R, p, c) when pos == (R + k) % p + c with R free of k, p, c constants; a constant
    position c is (0, 1, c)."""
    terms: list[E.Expr] = []

    def flat(x):
        if isinstance(x, E.Bin) and x.op == "+":
            flat(x.a)
            flat(x.b)
        else:
            terms.append(x)

    flat(pos)
    consts = [t for t in terms if isinstance(t, E.Const) and isinstance(t.value, int) and not isinstance(t.value, bool)]
    rest = [t for t in terms if t not in consts or not isinstance(t, E.Const)]
    c: int | E.Expr = sum(t.value for t in consts)
    # terms free of the loop counters (a warp's own bit: `get_phasebit<0>(bits, warp_id)`) are
    # a fixed offset of each thread: the bitfield is per thread
    fixed = [t for t in rest if not t.depends_on(E.LOOP) and not t.is_opaque()]
    if fixed and len(fixed) >= len(rest) - 1:
        rest = [t for t in rest if t not in fixed]
        for t in fixed:
            c = E.binop("+", c if isinstance(c, E.Expr) else E.Const(c), t)
    if len(rest) > 1:
        return None
    if not rest:
        # a fixed bit (`get_phasebit<1>(bits, 0)`): a ring of one position
        return E.Const(0), 1, c
    e = rest[0]
    if not (
        isinstance(e, E.Bin)
        and e.op == "%"
        and isinstance(e.b, E.Const)
        and isinstance(e.b.value, int)
        and e.b.value > 0
    ):
        return None
    p, y = e.b.value, e.a
    if y == k:
        return E.Const(0), p, c
    if isinstance(y, E.Bin) and y.op == "+":
        if y.b == k and k not in y.a.free_vars():
            return y.a, p, c
        if y.a == k and k not in y.b.free_vars():
            return y.b, p, c
    return None


def _cnt(n: E.Expr, R: E.Expr, p: int, c: int | E.Expr, b: E.Expr) -> E.Expr:
    """#{j in [0, n) : (R + j) % p + c == b} for n >= 0."""
    d = E.binop("-", b, c if isinstance(c, E.Expr) else E.Const(c))
    r = E.binop("%", E.binop("+", E.binop("%", E.binop("-", d, R), E.Const(p)), E.Const(p)), E.Const(p))
    inside = E.binop("&&", E.binop(">=", d, E.Const(0)), E.binop("<", d, E.Const(p)))
    return E.ite(inside, E.binop("/", E.binop("-", E.binop("+", n, E.Const(p - 1)), r), E.Const(p)), E.Const(0))


def _count_inner(form, kO: E.Var, T: E.Expr, n_in: E.Expr, b: E.Expr, carried: bool, to: int):
    """Executions before the point of a site at ring position (R + k) % p + c in an inner
    loop of T iterations (n_in of them in the current outer iteration) hitting b."""
    from .. import solver

    R, p, c = form
    if not carried:
        return _cnt(n_in, R, p, c, b)
    if kO not in R.free_vars():
        return E.binop("+", E.binop("*", kO, _cnt(T, R, p, c, b)), _cnt(n_in, R, p, c, b))
    R0 = E.substitute(R, {kO.name: E.Const(0)})
    if R0.free_vars() & {kO}:
        return None
    flat = E.binop("%", E.binop("+", R0, E.binop("*", T, kO)), E.Const(p))
    same = E.binop("==", E.binop("%", E.binop("+", R, E.Const(p)), E.Const(p)), flat)
    if solver.always(same, to) is not True:
        return None
    return _cnt(E.binop("+", E.binop("*", T, kO), n_in), R0, p, c, b)


def _bounds(conds, k: E.Var):
    """The interval [lo, hi) of k that a conjunction of comparisons of k with expressions free of
    k allows (None for an open side), or None when some conjunct is not such a comparison."""
    lo: E.Expr | None = None
    hi: E.Expr | None = None
    flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
    for c in conds:
        if not (isinstance(c, E.Bin) and c.op in flip):
            return None
        op, a, b = c.op, c.a, c.b
        if b == k and k not in a.free_vars():
            op, a, b = flip[op], b, a
        if a != k or k in b.free_vars():
            return None
        one = E.Const(1)
        los = {">=": b, ">": E.binop("+", b, one), "==": b}.get(op)
        his = {"<": b, "<=": E.binop("+", b, one), "==": E.binop("+", b, one)}.get(op)
        if los is not None:
            lo = los if lo is None else E.ite(E.binop(">", los, lo), los, lo)
        if his is not None:
            hi = his if hi is None else E.ite(E.binop("<", his, hi), his, hi)
    return lo, hi


def _cnt_in(n: E.Expr, R: E.Expr, p: int, c: int, b: E.Expr, bounds) -> E.Expr:
    """#{j in [0, n) : lo <= j < hi and (R + j) % p + c == b} for n >= 0 (`_cnt` cut to the
    interval `bounds` = (lo, hi), either side None when open)."""
    lo, hi = bounds
    if lo is None and hi is None:
        return _cnt(n, R, p, c, b)
    zero = E.Const(0)
    a = zero if lo is None else E.ite(E.binop(">", lo, zero), lo, zero)
    e = n if hi is None else E.ite(E.binop("<", hi, n), hi, n)
    return E.ite(E.binop(">", e, a), E.binop("-", _cnt(e, R, p, c, b), _cnt(a, R, p, c, b)), zero)


def _count_site(
    site: ir.Op, w: ir.Op, form, kO: E.Var, inner, n_in: E.Expr, b: E.Expr, carried: bool, to: int, cont=()
):
    """Executions of `site` (a flip of the bitfield, or the wait itself) before the point of the
    wait `w` that hit bit / element b: the site at ring position (R + k) % p + c of the innermost
    loop, run where its conditions hold -- a conditional flip counts only the iterations whose
    condition held (`if (k == S - 1) update_phasebit(bits, S)`: once a task). `inner` is
    (counter, trip) of the k loop, or None for a wait in the task loop alone; n_in: the site's
    runs of the current (innermost) iteration range, [0, n_in). Conditions free of the loop
    counters must follow from the wait's own; those over one counter must bound it to an
    interval. `cont`: the task loop's `continues` (held by every iteration that went on past its
    breaks: every task before the wait's); such a condition that the wait runs under too holds
    in every task the count covers. None when the count is not modelled."""
    from .. import solver

    if not site.guard.exact:
        return None
    loop_names = {kO.name} | ({inner[0].name} if inner is not None else set())
    inv, on_o, on_i = [], [], []
    last_only = False  # the site runs only in the task that leaves the loop (a drain before the break)
    for u in site.guard.uniform:
        lv = {v.name for v in u.free_vars() if v.kind == E.LOOP}
        if u in cont and u in w.guard.uniform:
            continue
        if u in w.guard.uniform and any(E.negate(c) == u for c in cont):
            # every earlier task went on past the break: the site ran in none of them; the
            # wait runs in the leaving task too, so the current task's runs are all there is
            last_only = True
            continue
        if not lv:
            inv.append(u)
        elif not lv <= loop_names or len(lv) > 1:
            return None
        elif kO.name in lv:
            on_o.append(u)
        else:
            on_i.append(u)
    if inv and site is not w and solver.always(E.conj(*inv), to, assume=tuple(w.guard.uniform)) is not True:
        return None
    bo = _bounds(on_o, kO)
    if bo is None:
        return None
    R, p, c = form
    if inner is None:
        if last_only:
            return None  # a site of the leaving task's own body: not counted here
        if kO in R.free_vars():
            return None
        return _cnt_in(n_in, R, p, c, b, bo)
    kin, T = inner
    bi = _bounds(on_i, kin)
    if bi is None:
        return None
    in_o = E.conj(*on_o) if on_o else None
    cur = _cnt_in(n_in, R, p, c, b, bi) if kO not in R.free_vars() or not carried or last_only else None
    if last_only:
        assert cur is not None
        return cur if in_o is None else E.ite(in_o, cur, E.Const(0))
    if not carried:
        if cur is None:
            return None
        return cur if in_o is None else E.ite(in_o, cur, E.Const(0))
    if kO in R.free_vars():
        # a ring carried across the tasks: closed form over the flat iteration only without
        # conditions over the counters
        if on_o or on_i:
            return None
        return _count_inner(form, kO, T, n_in, b, True, to)
    assert cur is not None
    before = _cnt_in(kO, E.Const(0), 1, 0, E.Const(0), bo)  # earlier tasks whose condition held
    return E.binop(
        "+",
        E.binop("*", before, _cnt_in(T, R, p, c, b, bi)),
        cur if in_o is None else E.ite(in_o, cur, E.Const(0)),
    )


def _count_elsewhere(m: ir.KernelModel, site: ir.Op, w: ir.Op, pos: E.Expr, O: ir.Loop, b: E.Expr, to: int):
    """Executions of `site` (a flip of the bitfield, or another wait of w's threads on w's
    barrier) before the point of the wait `w` that hit bit / element b, where `site` sits in the
    task loop O but in another loop nest than w (a drain before the break beside the k loop, a
    peeled first use before it): its runs in the earlier tasks and, when it comes before w in
    program order and runs in w's task, all its runs of the current task. `pos` is the bit or
    element the site touches; the bitfield must be carried across the tasks (set before O).
    Its conditions are read as the task loop's: one the loop goes on under (`continues`) held
    in every earlier task; its negation (the task that leaves) in none; one free of the loop
    counters must follow from w's own. None when the count is not modelled."""
    from .. import solver

    if not site.guard.exact or not site.loops or site.loops[0] != O.id or len(site.loops) > 2:
        return None
    kO = O.counter
    earlier, current = True, site.order < w.order
    for u in site.guard.uniform:
        if u in O.continues:
            if u in w.guard.uniform:
                continue
            if E.negate(u) in w.guard.uniform:
                current = False  # w runs in the task that leaves: the site does not
                continue
            return None
        leave = [c for c in O.continues if E.negate(c) == u]
        if leave:
            earlier = False  # every earlier task went on past the break
            if u in w.guard.uniform:
                continue
            if leave[0] in w.guard.uniform:
                current = False
                continue
            return None
        if u.depends_on(E.LOOP) or u.is_opaque():
            return None
        if solver.always(u, to, assume=tuple(w.guard.uniform)) is not True:
            return None
    if len(site.loops) == 1:
        form = _ring_form(pos, kO)
        if form is None or kO in form[0].free_vars():
            return None
        R, p, c = form
        here = E.ite(
            E.binop(
                "==",
                E.binop("+", E.binop("%", E.binop("+", R, kO), E.Const(p)), E.Const(c) if isinstance(c, int) else c),
                b,
            ),
            E.Const(1),
            E.Const(0),
        )
        total: E.Expr = _cnt(kO, R, p, c, b) if earlier else E.Const(0)
        return E.binop("+", total, here) if current else total
    J = m.loops[site.loops[1]]
    T = J.trip
    if T is None or T.depends_on(E.LOOP) or T.is_opaque():
        return None
    form = _ring_form(pos, J.counter)
    if form is None:
        return None
    before = _count_inner(form, kO, T, E.Const(0), b, True, to) if earlier else E.Const(0)
    if before is None:
        return None
    if not current:
        return before
    through = _count_inner(form, kO, T, T, b, True, to)  # the earlier tasks and all of this one
    if through is None:
        return None
    if earlier:
        return through
    base = _count_inner(form, kO, T, E.Const(0), b, True, to)
    return None if base is None else E.binop("-", through, base)


def _bit_of(value: int, b: E.Expr, lo: int, hi: int) -> E.Expr:
    out: E.Expr = E.Const(0)
    for i in range(lo, hi):
        out = E.ite(E.binop("==", b, E.Const(i)), E.Const((value >> i) & 1), out)
    return out


def _applies_to_waiters(an: Analysis, a: ir.Op, w: ir.Op) -> bool | None:
    """A set/flip `a` of a per-thread bitfield counts for the wait `w` when every thread that runs
    the wait runs it too (a template's `bitfield = 0xFFFF0000` by all threads, read in one role),
    never when no waiting thread runs it (the other role's copy); otherwise unknown."""
    if _other_blocks(a, w, an.solver_timeout_ms):
        return False  # never in the wait's block: another function's bitfield of the same name
    ea, eb = an.threads.executing(a), an.threads.executing(w)
    if ea is None or eb is None:
        return None
    if eb <= ea:
        return True
    return False if not (ea & eb) else None


def _bit_offset(pos: E.Expr, index: tuple[E.Expr, ...]) -> int | None:
    """c when the bit position is the barrier element plus the constant c (`stage + 16` for
    `bar[stage]`, a constant bit for a scalar barrier); None otherwise."""
    if not index:
        return pos.value if isinstance(pos, E.Const) and isinstance(pos.value, int) else None
    if len(index) != 1:
        return None
    e = linear(index[0])
    if pos == e:
        return 0
    if isinstance(pos, E.Bin) and pos.op == "+" and isinstance(pos.b, E.Const) and isinstance(pos.b.value, int):
        if linear(pos.a) == e:
            return pos.b.value
    return None


def _paired_flips(an: Analysis, w: ir.Op):
    """A phase bitfield read as a vector of per-element parities, through any loop nest: when
    every wait of w's threads on w's barrier reads the bit of its element (element + c, one c)
    and flips that very bit right after, under the same loops and conditions, and no other flip
    of these threads may touch such a bit, the bit an element's use reads is its initial value
    plus the number of the element's earlier uses (each flipped it once), whatever the loops'
    trip counts. (parity, use, assume) over that number N >= 0, or None."""
    from .. import solver

    m, to = an.model, an.solver_timeout_ms
    assert w.phasebit is not None
    name = w.phasebit.bitfield
    mine = an.threads.executing(w)
    if mine is None or w.phasebit.pos is None or w.barrier is None:
        return None
    posw = linear(w.phasebit.pos)
    if posw.is_opaque() or any(ix.is_opaque() for ix in w.barrier.index):
        return None
    c = _bit_offset(posw, w.barrier.index)
    if c is None:
        return None
    sets, flips = [], []
    for o in m.ops:
        if o.kind in (ir.PHASEBIT_SET, ir.PHASEBIT_FLIP) and o.phasebit is not None and o.phasebit.bitfield == name:
            same = _applies_to_waiters(an, o, w)
            if same is None:
                return None
            if same:
                (sets if o.kind == ir.PHASEBIT_SET else flips).append(o)
    if len(sets) != 1 or sets[0].loops or sets[0].phasebit is None or sets[0].phasebit.value is None:
        return None
    S = sets[0]
    if not S.guard.exact or any(u not in w.guard.uniform for u in S.guard.uniform):
        return None
    paired: set[int] = set()
    for o in m.ops_of(ir.MBAR_WAIT):
        if o.barrier is None or o.barrier.name != w.barrier.name or _other_blocks(o, w, to):
            continue
        theirs = an.threads.executing(o)
        if theirs is None:
            return None
        if not theirs & mine:
            continue
        if theirs != mine or o.order < S.order or o.phasebit is None or o.phasebit.bitfield != name:
            return None
        if o.phasebit.pos is None or not o.guard.exact or any(ix.is_opaque() for ix in o.barrier.index):
            return None
        pos = linear(o.phasebit.pos)
        if _bit_offset(pos, o.barrier.index) != c:
            return None
        # the flip right after it: the first flip or wait on the barrier after o, same place
        nxt = [
            f
            for f in m.ops
            if f.order > o.order
            and (f in flips or (f.kind == ir.MBAR_WAIT and f.barrier is not None and f.barrier.name == w.barrier.name))
        ]
        f = min(nxt, key=lambda x: x.order, default=None)
        if (
            f is None
            or f not in flips
            or f.loops != o.loops
            or f.guard.uniform != o.guard.uniform
            or f.guard.thread != o.guard.thread
            or not f.guard.exact
            or f.phasebit is None
            or f.phasebit.pos is None
            or linear(f.phasebit.pos) != pos
        ):
            return None
        paired.add(id(f))
    for f in flips:
        if id(f) in paired:
            continue
        if f.phasebit is None or f.phasebit.pos is None:
            return None
        # another flip of these threads: it must never touch the bit of any element of w's barrier
        posf = linear(f.phasebit.pos)
        ren = {v.name: E.Var(v.name + "@other", E.PARAM) for v in posf.free_vars() if v.kind == E.LOOP}
        other = E.substitute(posf, ren)
        if solver.always(E.binop("!=", other, posw), to) is not True:
            return None
    thread_pos = posw.depends_on(E.THREAD)
    lo, hi = (0, 32) if (thread_pos or not isinstance(posw, E.Const)) else (posw.value, posw.value + 1)
    n = E.Var("?uses of the element before this wait", E.PARAM)
    parity = E.binop("%", E.binop("+", _bit_of(S.phasebit.value, posw, lo, hi), n), E.Const(2))
    assume = [E.binop(">=", n, E.Const(0))]
    if thread_pos:
        assume.append(w.guard.thread)
    return parity, n, assume, (), "paired"


def _phasebit_counts(an: Analysis, w: ir.Op, others_ok: bool = True):
    """(parity, use, assume) for a wait in a task loop (and optionally a k loop inside it)
    whose parity is a phase bit, or a reason string."""
    from .. import solver

    m, to = an.model, an.solver_timeout_ms
    assert w.phasebit is not None and w.phasebit.pos is not None
    name = w.phasebit.bitfield
    posw = linear(w.phasebit.pos)
    chain = [m.loops[i] for i in w.loops]
    if (
        len(chain) not in (1, 2)
        or any(l.trip is None for l in chain[1:])
        or (chain[0].trip is None and not (_data_exit_ok(chain[0]) or _counter_exit(chain[0])))
    ):
        return "phase bitfield: loop nest not recognised"
    O = chain[0]
    I = chain[1] if len(chain) == 2 else None
    kO = O.counter
    T = I.trip if I is not None else None
    if I is not None and (T.depends_on(E.LOOP) or T.is_opaque()):
        return "phase bitfield: inner trip count not invariant"
    sets, flips = [], []
    for o in m.ops:
        if o.kind in (ir.PHASEBIT_SET, ir.PHASEBIT_FLIP) and o.phasebit is not None and o.phasebit.bitfield == name:
            same = _applies_to_waiters(an, o, w)
            if same is None:
                return "phase bitfield: threads of a set/flip unknown"
            if same:
                (sets if o.kind == ir.PHASEBIT_SET else flips).append(o)
    # the uses counted are the wait's own: another wait site on the barrier by the same threads
    # that may come before it (in or before the task loop) is not counted here -- except one
    # that runs only in the task that leaves the loop (`if (idx == -1) { drain; break; }`)
    mine = an.threads.executing(w)
    w_leaves = any(E.negate(c) in w.guard.uniform for c in O.continues)  # w runs in the leaving task
    others: list[ir.Op] = []  # other wait sites of w's threads in the task loop, counted as uses
    for o in m.ops_of(ir.MBAR_WAIT):
        if o is w or o.barrier is None or o.barrier.name != w.barrier.name or _other_blocks(o, w, to):
            continue
        theirs = an.threads.executing(o)
        if theirs is not None and mine is not None and not theirs & mine:
            continue
        if O.id not in o.loops and o.order > w.order:
            continue  # after the task loop
        if (
            O.id in o.loops
            and any(E.negate(c) in o.guard.uniform for c in O.continues)
            and not (w_leaves and o.loops != w.loops)
        ):
            continue  # only in the task that breaks out: never before a use of a task that went on
        if (
            O.id in o.loops
            and o.loops != w.loops
            and theirs is not None
            and mine is not None
            and mine <= theirs
            and len(o.barrier.index) == len(w.barrier.index) <= 1
            and others_ok
        ):
            # one sequence of visits in program order: o's runs before w are uses of w's element
            others.append(o)
            continue
        return "phase bitfield: barrier waited at another site by the same threads"
    before = [s for s in sets if s.order < w.order]
    if not before:
        return "phase bitfield: initial value unknown"
    S = max(before, key=lambda o: o.order)
    if not S.guard.exact or any(u not in w.guard.uniform for u in S.guard.uniform):
        return "phase bitfield: conditional set"
    if S.loops == ():
        carried = True
        if any(O.id in s.loops for s in sets):
            return "phase bitfield: set inside the task loop after its start"
    elif S.loops == (O.id,) and I is not None:
        carried = False
        first_inner = min(o.order for o in m.ops if I.id in o.loops)
        if S.order > first_inner:
            return "phase bitfield: set after the k loop started"
    else:
        return "phase bitfield: set inside the k loop"
    if others and not carried:
        return "phase bitfield: barrier waited at another site by the same threads"
    # the bit position the wait reads: (R + k) % p + c in the innermost loop
    kin = I.counter if I is not None else kO
    fw = _ring_form(posw, kin)
    if fw is None:
        return "phase bitfield: bit position not a ring index"
    thread_pos = isinstance(fw[2], E.Expr)
    # a bit chosen per thread: any bit of the 32-bit word, for the threads that run the wait
    lo, hi = (0, 32) if isinstance(fw[2], E.Expr) else (fw[2], fw[2] + fw[1])
    total: E.Expr = E.Const(0)
    for F in flips:
        if F.order < S.order:
            continue
        assert F.phasebit is not None and F.phasebit.pos is not None
        posf = linear(F.phasebit.pos)
        # a flip that never touches the bit the wait reads (another element's bit: the stage
        # bits beside a scalar barrier's bit), whatever its condition and place
        ren = {v.name: E.Var(v.name + "@other", E.PARAM) for v in posf.free_vars() if v.kind == E.LOOP}
        other = E.substitute(posf, ren)
        if solver.always(E.binop("!=", other, posw), to) is True:
            continue
        if F.loops == w.loops:
            ff = _ring_form(posf, kin)
            if ff is None:
                return "phase bitfield: flip position not a ring index"
            n_in = E.binop("+", kin, E.Const(1)) if F.order < w.order else kin
            # a conditional flip counts the iterations its condition held in
            cnt = _count_site(F, w, ff, kO, (kin, T) if I is not None else None, n_in, posw, carried, to, O.continues)
            if cnt is None:
                if not F.guard.exact or F.guard.uniform != w.guard.uniform:
                    return "phase bitfield: conditional flip"
                if I is None:
                    return "phase bitfield: flip position not recognised"
                return "phase bitfield: ring not carried in a recognised way"
            total = E.binop("+", total, cnt)
            continue
        if F.order > w.order and O.id not in F.loops:
            continue  # after the task loop (a drain): no wait inside it sees the flip
        if carried and F.loops and F.loops[0] == O.id:
            # a flip in another loop nest of the task loop (a drain's, a peeled first use's):
            # its runs in the earlier tasks, and in w's task when it comes first
            cnt = _count_elsewhere(m, F, w, posf, O, posw, to)
            if cnt is not None:
                total = E.binop("+", total, cnt)
                continue
        if not F.guard.exact or F.guard.uniform != w.guard.uniform:
            return "phase bitfield: conditional flip"
        # a flip elsewhere in the loop nest that may touch the bit the wait reads
        if not F.loops or F.loops[0] != O.id or len(F.loops) > 2:
            return "phase bitfield: flip outside the task loop"
        if not carried and I is not None and F.loops == (O.id,) and not (S.order < F.order < w.order):
            continue  # reset before the wait's next use
        if not carried and I is not None and F.loops == (O.id,):
            total = E.binop("+", total, E.ite(E.binop("==", posf, posw), E.Const(1), E.Const(0)))
            continue
        return "phase bitfield: another flip may touch the bit"
    assert S.phasebit is not None and S.phasebit.value is not None
    parity = E.binop("%", E.binop("+", _bit_of(S.phasebit.value, posw, lo, hi), total), E.Const(2))
    # a task loop that ends on data (a CLC or instruction stream): every iteration may run
    assume = [E.binop("<", kO, O.trip)] if O.trip is not None else []
    if thread_pos or posw.depends_on(E.THREAD):
        assume.append(w.guard.thread)
    use = None
    if I is not None:
        assume.append(E.binop("<", I.counter, T))
    if I is not None or any(u.depends_on(E.LOOP) for u in w.guard.uniform):
        # the wait's earlier uses of its element, counted where its condition held (a wait
        # once a task at one step of the k loop); a scalar barrier is a ring of one element
        idx = tuple(linear(ix) for ix in w.barrier.index)
        if len(idx) > 1:
            return "phase bitfield: barrier index not a ring index"
        fi = _ring_form(idx[0], kin) if idx else (E.Const(0), 1, 0)
        if fi is None:
            return "phase bitfield: barrier index not a ring index"
        use = _count_site(
            w,
            w,
            fi,
            kO,
            (kin, T) if I is not None else None,
            kin,
            idx[0] if idx else E.Const(0),
            True,
            to,
            O.continues,
        )
        if use is None:
            if any(u.depends_on(E.LOOP) for u in w.guard.uniform):
                return "phase bitfield: uses of a conditional wait not counted"
            return "phase bitfield: ring not carried in a recognised way"
        for o in others:
            # the other sites' runs before w are earlier uses of w's element (one sequence of
            # visits of the role, in program order)
            oidx = linear(o.barrier.index[0]) if o.barrier.index else E.Const(0)
            more = _count_elsewhere(m, o, w, oidx, O, idx[0] if idx else E.Const(0), to)
            if more is None:
                return "phase bitfield: barrier waited at another site by the same threads"
            use = E.binop("+", use, more)
    elif others:
        return "phase bitfield: barrier waited at another site by the same threads"
    return parity, use, assume, tuple(others), ""


def slot_mismatch(an: Analysis, wp: WaitPhase) -> dict | None:
    """A wait on a data barrier in a (task, k) loop nest whose only signaller (one role)
    walks the same loop nest (same trip counts) but fills a different ring slot at the same
    step: the waiter's phase u of slot s then completes with a tile from another step.
    Returns a witness {outer, inner, waited slot, filled slot, params} or None."""
    from .. import solver

    m, w = an.model, wp.op
    if wp.status != "ok" or len(w.loops) != 2 or len(w.barrier.index) != 1 or not _carries_data(m, wp.barrier):
        return None
    sigs = [s for s in _signals(m, wp.barrier) if s.kind in (ir.MBAR_EXPECT, ir.TMA_LOAD)]
    if not sigs or len(_signals(m, wp.barrier)) != len(sigs):
        return None
    loops = {s.loops for s in sigs}
    if len(loops) != 1:
        return None
    sl = loops.pop()
    if len(sl) != 2 or set(sl) & set(w.loops):
        return None
    lo, li = m.loops[sl[0]], m.loops[sl[1]]
    wo, wi = m.loops[w.loops[0]], m.loops[w.loops[1]]
    if lo.trip is None or li.trip is None or wo.trip is None or wi.trip is None:
        return None
    ren = {lo.counter.name: wo.counter, li.counter.name: wi.counter}
    if E.substitute(lo.trip, ren) != wo.trip or E.substitute(li.trip, ren) != wi.trip:
        return None
    if (lo.init, lo.step) != (wo.init, wo.step):
        return None
    idxs = set()
    for s in sigs:
        if not s.guard.exact or s.barrier is None or len(s.barrier.index) != 1 or s.barrier.index[0].is_opaque():
            return None
        if set(E.substitute(u, ren) for u in s.guard.uniform) != set(w.guard.uniform):
            return None
        idxs.add(linear(E.substitute(s.barrier.index[0], ren)))
    iss = {an.threads.issuers(s) for s in sigs}
    if len(iss) != 1 or None in iss:
        return None
    if len(idxs) != 1:
        return None
    filled = idxs.pop()
    waited = linear(w.barrier.index[0])
    if waited.is_opaque() or filled.is_opaque():
        return None
    pred = E.binop("!=", filled, waited)
    assume = (E.binop("<", wo.counter, wo.trip), E.binop("<", wi.counter, wi.trip), *w.guard.uniform)
    env = solver.witness(pred, an.solver_timeout_ms, assume=assume)
    if env is None:
        return None
    a, b = waited.eval(env), filled.eval(env)
    if a is None or b is None or a == b:
        return None
    params = {n: v for n, v in env.items() if not n.startswith("k") and not n.startswith("?") and n != "tid"}
    return {
        "outer_iteration": env.get(wo.counter.name),
        "iteration": env.get(wi.counter.name),
        "slot_waited": a,
        "slot_filled": b,
        "signal": sigs[0],
        "params": params,
    }
