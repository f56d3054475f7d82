"""Buffers handed back through an mbarrier, and reads after the hand-back (issue 25's
happens-before over mbarrier hand-overs; no rule names here).

A role that refills a shared buffer element right after waiting on a barrier element (a ring's
`wait(empty[s])` before the TMA load into `a[s]`, or into each strip `x[s][r]` of the stage) makes
an arrival on that barrier element a *release* of the buffer element: once the phase completes,
the refill may overwrite it. `reads_after_release(an)` asks, for every release arrive, whether a
releasing thread reads a released element later in the same iteration (no wait for the refill
itself between, no later arrival of the same threads keeping the phase open): a violation; or
leaves the pair undecided with its reason (the element read not known to be one the refill
writes, a read in a loop of its own after the release, a call between whose threads are not
known); undecided pairs are coverage (`coverage.add_release_undecided`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from . import paths
from .analysis import Analysis


def index_of(ref: ir.Ref) -> tuple | None:
    if any(ix.is_opaque() or ix.depends_on(E.THREAD) for ix in ref.index):
        return None
    return tuple(str(ix) for ix in ref.index)


def _refill(o: ir.Op) -> bool:
    # a TMA load, a cp.async copy (libcu++'s memcpy_async into a pipeline stage) or a plain store
    return o.buffer is not None and (
        o.kind in (ir.TMA_LOAD, ir.CP_ASYNC) or (o.kind == ir.SMEM_ACCESS and o.access_mode == "write")
    )


@dataclass
class Gate:
    """What releasing one barrier element hands over: the buffer elements a role refills after
    waiting on it. `tails` are the refills' index components past the barrier's index (empty
    when the buffer has the barrier's shape: the whole element), each with the loops the refill
    runs in inside the wait's loops (a stage refilled strip by strip, `x[s][r]` for r < 8 after
    `wait(empty[s])`); `done` the barriers the refills complete on."""

    done: set[str] = field(default_factory=set)
    tails: list[tuple[tuple[E.Expr, ...], tuple[int, ...]]] = field(default_factory=list)


def gates(an: Analysis) -> dict[tuple[str, str], Gate]:
    """(barrier, buffer) -> the gate, where some role refills the buffer element right after
    waiting on the barrier element of the same index (a ring's `empty[s]` before the load into
    `a[s]`, an MK page token before the load into that page; the buffer's index may go on past
    the barrier's, `x[s][r]` refilled in an inner loop after `wait(empty[s])`): releasing the
    barrier hands the buffer over. Only the refilling threads' nearest wait before the refill
    gates it: a producer that refills several buffers in one pass, each after its own release
    wait, hands each buffer over with its own barrier."""
    m, th = an.model, an.threads
    out: dict[tuple[str, str], Gate] = {}
    waits = [o for o in m.ops if o.kind == ir.MBAR_WAIT and o.barrier is not None and o.guard.exact]
    for r in m.ops:
        if not _refill(r) or not r.guard.exact:
            continue
        rt = th.executing(r)
        if not rt:
            continue
        before = [
            w
            for w in waits
            if w.order < r.order and r.loops[: len(w.loops)] == w.loops and (th.executing(w) or frozenset()) >= rt
        ]
        if not before:
            continue
        w = max(before, key=lambda o: o.order)
        wi = index_of(w.barrier)
        if wi is None or len(r.buffer.index) < len(wi):
            continue
        head = ir.Ref(r.buffer.name, r.buffer.index[: len(wi)])
        if index_of(head) != wi:
            continue
        g = out.setdefault((w.barrier.name, r.buffer.name), Gate())
        g.tails.append((tuple(r.buffer.index[len(wi) :]), tuple(r.loops[len(w.loops) :])))
        if r.barrier is not None:
            g.done.add(r.barrier.name)
    return out


def _covers(m: ir.KernelModel, tail: tuple[E.Expr, ...], inner: tuple[int, ...], seen: tuple) -> bool | None:
    """Proved: the refill indexed `tail` (over the counters of its `inner` loops) writes the
    element `seen` (the read's index past the barrier's, as the reading thread names it) in
    some iteration. Compared over the common prefix (a shorter index names a whole sub-array);
    each component is the same expression, the same constant, or the counter of an inner loop
    with constant start, step and trip whose range holds the read's value. False: proved
    another element; None: not known."""
    counters = {m.loops[i].counter.name: m.loops[i] for i in inner if i in m.loops}
    known = True
    for ix, v in zip(tail, seen):
        if isinstance(v, E.Expr):
            if ix.depends_on(E.THREAD) or ix.is_opaque() or str(ix) != str(v):
                known = False
            continue
        c = ix.eval({})
        if c is not None:
            if c != v:
                return False
            continue
        lp = counters.get(ix.name) if isinstance(ix, E.Var) else None
        if lp is None:
            known = False
            continue
        init, step, trip = (x.eval({}) if x is not None else None for x in (lp.init, lp.step, lp.trip))
        if not isinstance(init, int) or not isinstance(step, int) or not isinstance(trip, int) or step == 0:
            known = False
            continue
        if (v - init) % step or not 0 <= (v - init) // step < trip:
            return False
    return True if known else None


def _read_covered(m: ir.KernelModel, g: Gate, r: ir.Op, n_head: int, t: int) -> bool | None:
    """Does thread t's read name an element some refill behind gate g writes? None: not known."""
    assert r.buffer is not None
    seen = paths.index_key(ir.Ref(r.buffer.name, r.buffer.index[n_head:]), t)
    if any(isinstance(v, E.Expr) and (v.depends_on(E.THREAD) or v.is_opaque()) for v in seen):
        return None
    res = [_covers(m, tail, inner, seen) for tail, inner in g.tails]
    if any(x is True for x in res):
        return True
    return None if any(x is None for x in res) else False


@dataclass
class ReadAfterRelease:
    arrive: ir.Op
    read: ir.Op
    thread: int


@dataclass
class ReleaseFacts:
    violations: list[ReadAfterRelease] = field(default_factory=list)
    undecided: list[tuple[ir.Op, ir.Op, str]] = field(default_factory=list)  # (arrive, read, why)
    asked: set[tuple[int, str]] = field(default_factory=set)  # (id of the arrive, buffer name)


def reads_after_release(an: Analysis) -> ReleaseFacts:
    return an.fact("releases.reads_after_release", _reads_after_release)


def _reads_after_release(an: Analysis) -> ReleaseFacts:
    out = ReleaseFacts()
    m, th = an.model, an.threads
    fl = paths.flow(an)
    gs = gates(an)
    if not gs:
        return out
    for a in m.ops:
        if (
            a.kind != ir.MBAR_ARRIVE
            or a.barrier is None
            or not a.guard.exact
            or (a.mbar is not None and (a.mbar.tcgen05_commit or a.mbar.remote or a.mbar.cta is not None))
        ):
            continue
        ai = index_of(a.barrier)
        ea = th.executing(a)
        if ai is None or not ea:
            continue
        bufs = {b for (bar, b) in gs if bar == a.barrier.name}
        # one question per release and buffer it hands back: is a released element read after it?
        out.asked |= {(id(a), b) for b in bufs}
        for r in m.ops:
            if (
                r.kind != ir.SMEM_ACCESS
                or r.access_mode != "read"
                or r.buffer is None
                or r.buffer.name not in bufs
                or r.order <= a.order
                or r.loops[: len(a.loops)] != a.loops
                or len(r.buffer.index) < len(ai)
                or index_of(ir.Ref(r.buffer.name, r.buffer.index[: len(ai)])) != ai
            ):
                continue
            readers = th.executing(r)
            if readers is not None and not ea & readers:
                continue  # no releasing thread reads it
            if not r.guard.exact or readers is None:
                out.undecided.append((a, r, "the threads that read it are not known"))
                continue
            if r.loops != a.loops:
                out.undecided.append((a, r, "the read is in a loop of its own after the release"))
                continue
            gate = gs[(a.barrier.name, r.buffer.name)]
            # a releasing thread that reads an element the refill writes (its strip of the stage)
            cover = {t: _read_covered(m, gate, r, len(ai), t) for t in sorted(ea & readers)}
            common = [t for t, c in cover.items() if c]
            if not common:
                if any(c is None for c in cover.values()):
                    out.undecided.append((a, r, "whether it reads an element the refill writes is not known"))
                continue
            t = common[0]
            between = fl.same_iteration_between(a, r)
            if any(fl.runs(o, t, a.guard.uniform) is None for o in between if o.kind in (ir.CALL, ir.EXIT)):
                out.undecided.append((a, r, "a call or return between whose threads are not known"))
                continue
            runs = fl.runs(r, t, a.guard.uniform)
            if runs is not True:
                if runs is None:
                    out.undecided.append((a, r, "whether the releasing thread runs the read is not known"))
                continue
            # a wait for the refill itself between the release and the read: the new contents are read
            if any(
                o.kind == ir.MBAR_WAIT
                and o.barrier is not None
                and o.barrier.name in gate.done
                and t in (th.executing(o) or frozenset())
                for o in between
            ):
                continue
            # a later arrival of the same threads on the barrier (two-part release) keeps the phase open
            if any(
                o.kind == ir.MBAR_ARRIVE
                and o.barrier is not None
                and o.barrier.name == a.barrier.name
                and o.order > r.order
                and o.loops[: len(a.loops)] == a.loops
                and (th.executing(o) or frozenset()) & frozenset(common)
                for o in m.ops
            ):
                continue
            out.violations.append(ReadAfterRelease(a, r, t))
    return out
