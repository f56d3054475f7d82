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

from .. import solver
from ..model import expr as E
from ..model import ir
from . import paths
from .analysis import Analysis


def index_of(ref: ir.Ref) -> tuple | None:
    if any(ix.is_opaque() or ix.depends_on(E.THREAD) for ix in ref.index):
        return None
    key = tuple(str(ix) for ix in ref.index)
    _index_exprs()[key] = tuple(ref.index)
    return key


def same_index(a: tuple | None, b: tuple[E.Expr, ...], an: Analysis | None = None) -> bool:
    """Proved: two indices name the same element in every iteration (their components equal for
    every value of the loop counters and kernel arguments: a pipeline's implicit stage
    `tail % S` and the user's ring index `r & (S - 1)`, both advanced once a round from 0); `a`
    as `index_of` gives it, `b` the expressions."""
    if a is None or len(a) != len(b) or any(ix.is_opaque() or ix.depends_on(E.THREAD) for ix in b):
        return False
    if a == tuple(str(ix) for ix in b):
        return True
    if an is None:
        return False
    from .. import solver

    exprs = _index_exprs().get(a)
    if exprs is None:
        return False
    key = (a, tuple(str(ix) for ix in b))
    proved = _proved()
    if key not in proved:
        proved[key] = all(
            str(x) == str(y)
            or solver.always(E.binop("==", _masks_as_mod(x, an), _masks_as_mod(y, an)), an.solver_timeout_ms) is True
            for x, y in zip(exprs, b)
        )
    return proved[key]


def _masks_as_mod(e: E.Expr, an: Analysis) -> E.Expr:
    """`x & (2^n - 1)` as `x % 2^n` where x is proved non-negative (the same number; z3 decides
    the integer form, where the bit-vector one mixes theories it rarely decides)."""
    from .. import solver

    def fix(x: E.Expr) -> E.Expr | None:
        if isinstance(x, E.Bin) and x.op == "&":
            for v, c in ((x.a, x.b), (x.b, x.a)):
                k = c.eval({})
                if (
                    isinstance(k, int)
                    and not isinstance(k, bool)
                    and k >= 0
                    and (k + 1) & k == 0
                    and solver.always(E.binop(">=", v, E.Const(0)), an.solver_timeout_ms) is True
                ):
                    return E.binop("%", E.rewrite(v, fix), E.Const(k + 1))
        return None

    return E.rewrite(e, fix)


def _index_exprs() -> dict[tuple, tuple[E.Expr, ...]]:
    """index_of's answer -> the expressions it came from (this check's: solver.memo)."""
    return solver.memo("releases.index_exprs")


def _proved() -> dict[tuple, bool]:
    """(index, other index's text) -> same_index's answer (this check's: solver.memo)."""
    return solver.memo("releases.proved")


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
    refills: list[ir.Op] = field(default_factory=list)  # the refill of each tail


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
        if not same_index(wi, tuple(r.buffer.index[: len(wi)]), an):
            continue
        g = out.setdefault((w.barrier.name, r.buffer.name), Gate())
        g.tails.append((tuple(r.buffer.index[len(wi) :]), tuple(r.loops[len(w.loops) :])))
        g.refills.append(r)
        if r.barrier is not None:
            g.done.add(r.barrier.name)
        if r.kind == ir.CP_ASYNC:
            # a cp.async refill lands on the barrier its copy holds open, or that the refilling
            # threads' next cp.async arrival of the round arrives on (a pipeline's producer_commit)
            if r.copy is not None and r.copy.mbarrier is not None:
                g.done.add(r.copy.mbarrier.name)
            g.done |= {
                o.barrier.name
                for o in m.ops
                if o.kind == ir.MBAR_ARRIVE
                and o.barrier is not None
                and o.mbar is not None
                and o.mbar.cp_async
                and o.order > r.order
                and o.loops == w.loops
                and (th.executing(o) or frozenset()) & rt
            }
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


MAX_INNER = 64  # iterations of a read's (or a refill's) own loops tried


def _iterations(
    m: ir.KernelModel, loops: tuple[int, ...], t: int, cases: list | None = None
) -> list[dict[str, int]] | None:
    """Every combination of iterations of `loops` (innermost last) thread t runs, as counter
    values: each loop's trip count a number for t (a constant, or one of the thread id), at
    most MAX_INNER combinations; None: not known. With `cases` (a list), a loop whose trip
    count for t is data (`for (r = cw; r < d.w; r += 4)`: kernel arguments or loaded values,
    no unknown thread term) runs its first iteration in the case the data gives it one: its
    `trip > 0` is added to `cases` (some, not every, iteration: a match is then a match in
    that case, no match proves nothing)."""
    combos: list[dict[str, int]] = [{}]
    for lid in loops:
        lp = m.loops.get(lid)
        if lp is None or lp.trip is None:
            return None
        tripx = E.substitute(lp.trip, {"tid": E.Const(t)})
        trip = tripx.eval({})
        if not isinstance(trip, int) or isinstance(trip, bool) or trip < 0:
            if cases is None or not _data_trip(tripx):
                return None
            runs = E.binop(">", tripx, E.Const(0))
            if not solver.feasible(runs):
                return None
            cases.append((lp, runs))
            trip = 1
        combos = [{**c, lp.counter.name: k} for c in combos for k in range(trip)]
        if len(combos) > MAX_INNER:
            return None
    return combos


def _data_trip(trip: E.Expr) -> bool:
    """A trip count the data decides: over kernel arguments and loaded or unmodelled values,
    with neither the thread nor a loop counter left in it (but as the index of a value read per
    iteration, `lens(b)`)."""
    vs = trip.free_vars()
    if E.apps(trip):
        return not E.loop_outside_data(trip) and all(v.kind in (E.PARAM, E.OPAQUE, E.LOOP) for v in vs)
    return any(v.kind in (E.PARAM, E.OPAQUE) for v in vs) and all(v.kind in (E.PARAM, E.OPAQUE) for v in vs)


def _elem_bytes(o: ir.Op) -> int | None:
    tt = o.access.tile_type if o.access is not None else None
    return tt.dtype_bytes if tt is not None and tt.kind == "scalar" and tt.dtype_bytes else None


def _inner_read_covered(
    an: Analysis, g: Gate, a: ir.Op, r: ir.Op, n_head: int, t: int, cases: list | None = None
) -> bool | None:
    """Does thread t, in some iteration of the read's loops inside the release's, read an
    element of the stage that some refill behind gate g writes (a refilling thread, an
    iteration of the refill's own loops, the bytes a cp.async copies from its index)? Every
    index past the barrier's evaluated to numbers; None: not known. A read loop of a data trip
    count is tried at its first iteration (`_iterations`' cases, appended to `cases`): True
    then holds in the case that loop runs, and no match is None."""
    m = an.model
    assert r.buffer is not None
    own = tuple(r.loops[len(a.loops) :])
    if any(
        o.kind in (ir.MBAR_WAIT, ir.MBAR_ARRIVE, ir.SYNC, ir.NAMED_ARRIVE, ir.CALL, ir.EXIT, ir.SPIN)
        and o.loops[: len(a.loops) + 1] == r.loops[: len(a.loops) + 1]
        for o in m.ops
    ):
        return None  # the read's loops wait or arrive themselves: a later iteration may follow a wait
    mine: list = []
    inner = _iterations(m, own, t, mine)
    if inner is None:
        return None
    size = _elem_bytes(r)
    written: set[tuple[int, ...]] = set()
    for f, (_, refill_loops) in zip(g.refills, g.tails):
        assert f.buffer is not None
        width = 1
        if f.kind == ir.CP_ASYNC:
            b = f.bytes.eval({}) if f.bytes is not None else None
            if not isinstance(b, int) or size is None or b % size:
                return None
            width = b // size
        for u in sorted(an.threads.executing(f) or ()):
            # the refill's loops inside its gate wait's: those run once per hand-over
            its = _iterations(m, refill_loops, u)
            if its is None:
                return None
            for env in its:
                ix = [E.substitute(x, {"tid": E.Const(u)}).eval(env) for x in f.buffer.index[n_head:]]
                if any(not isinstance(v, int) or isinstance(v, bool) for v in ix):
                    return None
                for j in range(width):
                    written.add(tuple(ix[:-1]) + (ix[-1] + j,) if ix else ())
    for env in inner:
        ix = [E.substitute(x, {"tid": E.Const(t)}).eval(env) for x in r.buffer.index[n_head:]]
        if any(not isinstance(v, int) or isinstance(v, bool) for v in ix):
            return None
        key = tuple(ix)
        if any(w[: len(key)] == key or key[: len(w)] == w for w in written):
            if cases is not None:
                cases.extend(mine)
            return True
    return None if mine else False


@dataclass
class ReadAfterRelease:
    arrive: ir.Op
    read: ir.Op
    thread: int
    # the loops of a data trip count the read runs in, each with its `trip > 0`: the violation
    # holds in the case they run (the finding says when); empty: in every execution
    cases: list = field(default_factory=list)


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
        ea_all = th.executing(a)
        if not ea_all:
            continue
        bufs = {b for (bar, b) in gs if bar == a.barrier.name}
        # one question per release and buffer it hands back: is a released element read after it?
        out.asked |= {(id(a), b) for b in bufs}
        for ai, ea, sub in _release_classes(a, ea_all):
            if ai is None:
                # an element no thread substitution makes known (data, an unmodelled value)
                out.undecided += [
                    (a, r, "the released element is not known")
                    for r in _reads_of(m, a, bufs)
                    if (th.executing(r) or ea) & ea
                ]
                continue
            _ask_release(an, fl, gs, out, a, ai, ea, sub, bufs)
    return out


def _release_classes(a: ir.Op, ea: frozenset) -> list[tuple[tuple | None, frozenset, dict[str, E.Expr]]]:
    """The releasing threads of arrive `a` grouped by the barrier element each releases: one
    class `(index_of, threads, {})` when the index names no thread; for an index over the thread
    (a role's ring `empty[(c + 2 * k) % 4]` with `c = tid / 128 - 1`), one class per distinct
    index with the thread substituted, each with that substitution (its threads name the same
    element in every iteration: the index's text after substitution is the same). An index no
    substitution makes known (opaque) is one class of index None (undecided, coverage)."""
    assert a.barrier is not None
    ai = index_of(a.barrier)
    if ai is not None:
        return [(ai, ea, {})]
    if any(ix.is_opaque() for ix in a.barrier.index) or len(ea) > 1024:
        return [(None, ea, {})]
    by: dict[tuple, tuple[ir.Ref, list[int]]] = {}
    for t in sorted(ea):
        ref = ir.Ref(a.barrier.name, tuple(E.substitute(ix, _thread_sub(t)) for ix in a.barrier.index))
        key = tuple(str(ix) for ix in ref.index)
        by.setdefault(key, (ref, []))[1].append(t)
    out: list[tuple[tuple | None, frozenset, dict[str, E.Expr]]] = []
    for ref, ts in by.values():
        out.append((index_of(ref), frozenset(ts), _thread_sub(ts[0])))
    return out


def _thread_sub(t: int) -> dict[str, E.Expr]:
    return {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)}


def _reads_of(m: ir.KernelModel, a: ir.Op, bufs: set[str]) -> list[ir.Op]:
    """The shared reads of the buffers `a` releases, after it in its loops' iteration."""
    return [
        r
        for r in m.ops
        if r.kind == ir.SMEM_ACCESS
        and r.access_mode == "read"
        and r.buffer is not None
        and r.buffer.name in bufs
        and r.order > a.order
        and r.loops[: len(a.loops)] == a.loops
    ]


def _ask_release(an: Analysis, fl, gs, out: ReleaseFacts, a: ir.Op, ai: tuple, ea: frozenset, sub, bufs) -> None:
    """The reads after release `a` by its threads `ea`, which release the element `ai` (the
    index with `sub`, their thread, substituted where it named the thread)."""
    m, th = an.model, an.threads
    assert a.barrier is not None
    for r in _reads_of(m, a, bufs):
        assert r.buffer is not None
        head = tuple(E.substitute(ix, sub) for ix in r.buffer.index[: len(ai)]) if sub else r.buffer.index[: len(ai)]
        if len(r.buffer.index) < len(ai) or not same_index(ai, tuple(head), an):
            if sub and any(ix.depends_on(E.THREAD) for ix in r.buffer.index[: len(ai)]):
                out.undecided.append((a, r, "whether it reads the released element is not known"))
            continue
        readers = th.executing(r)
        if readers is not None and not ea & readers:
            continue  # no releasing thread reads it
        if not r.guard.exact or readers is None:
            out.undecided.append((a, r, "the threads that read it are not known"))
            continue
        gate = gs[(a.barrier.name, r.buffer.name)]
        if r.loops != a.loops:
            # a read in loops of its own inside the release's iteration: some iteration of
            # them that thread t runs reads an element a refill writes
            cases: dict[int, list] = {t: [] for t in ea & readers}
            cover = {t: _inner_read_covered(an, gate, a, r, len(ai), t, cases[t]) for t in sorted(ea & readers)}
            if not any(cover.values()):
                if any(c is None for c in cover.values()):
                    out.undecided.append((a, r, "the read is in a loop of its own after the release"))
                continue
        else:
            # a releasing thread that reads an element the refill writes (its strip of the stage)
            cases = {}
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
        out.violations.append(ReadAfterRelease(a, r, t, cases.get(t, [])))
