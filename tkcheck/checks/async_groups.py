"""cp.async commit groups: when a non-bulk async copy has landed, and who may read it.

A CP_ASYNC is a write of shared memory by the issuing thread that lands later: it joins the
thread's open group, a CP_ASYNC_COMMIT closes that group, and a CP_ASYNC_WAIT with count N
completes every group of the thread but the N most recent (PTX `cp.async.wait_group N`;
`wait_all` is a commit then N = 0). Completion is per thread: a wait says nothing of other
threads' copies, so a thread reading words another thread copied needs a block barrier that
the copying thread reaches after its wait; and a copy refilling a stage must come after a
barrier that every earlier reader of that stage reached after its read.

The query runs the kernel's event skeleton (the copies, commits, waits, block and warp barriers
and the reads of the copied buffers, in program order) for every thread, with concrete loop
trip counts: each loop whose trip count is not a constant is tried with trip counts 0 ..
`MAX_TRIP` (kernel arguments chosen by z3 to give that count). Block barriers line up across
threads by their instance number (checked: every barrier of the skeleton is reached by all
threads, same number of times). Each read gives obligations:

* complete: the copy that last wrote the element has completed in its issuing thread by the
  last wait that thread runs at or before the read's program point (group arithmetic);
* visible: when another thread copied it, that thread's completing wait comes before a barrier
  instance the reader passed before the read (warp barriers count within one warp);
* refill: a later copy into the element by another thread comes after a barrier the reader
  passed after its read.

A violated obligation is a witness (a thread, iteration and argument values); the engine
reports nothing it could not run exactly: a skeleton op with an inexact guard, a barrier under
a thread-dependent condition, a named barrier, an unmodelled call or mbarrier op between, a
destination not known: the reads of those buffers get `undecided` obligations with the reason.

`obligations(an)` is the interface; `group_index` / `completed_upto` are the group arithmetic
another engine can reuse.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from typing import Any

from ..model import expr as E
from ..model import ir
from .analysis import Analysis
from .syncscope import readers_of

MAX_TRIP = 8  # loops with a symbolic trip count are run with 0 .. MAX_TRIP iterations
MAX_STEPS = 400_000  # events over all threads and trip counts; past it: undecided
MAX_THREADS = 1024


@dataclass
class Obligation:
    kind: str  # complete | visible | refill
    read: ir.Op  # the read (refill: the read whose value the copy may overwrite)
    copy: ir.Op | None  # the copy that wrote (refill: that overwrites) the element
    status: str  # violated | undecided
    reason: str = ""
    wait: ir.Op | None = None  # complete: the reader-side wait that did not cover the copy
    witness: dict[str, Any] = field(default_factory=dict)


def group_index(commits_before: int) -> int:
    """The group a copy joins: groups are numbered from 1 per thread, the copy's is closed by
    the first commit after it."""
    return commits_before + 1


def completed_upto(commits_before: int, n: int) -> int:
    """`cp.async.wait_group n` after `commits_before` commits: groups 1 .. this have landed."""
    return commits_before - n


def what_of(o: ir.Op) -> str:
    return (o.copy.dst_unknown if o.copy is not None else None) or "?"


def obligations(an: Analysis) -> list[Obligation]:
    """The violated and undecided cp.async obligations of the kernel (one per read site and kind)."""
    return an.fact("async_groups.obligations", _obligations)


# ---------------------------------------------------------------- skeleton ----


def _skeleton(model: ir.KernelModel, ops: list[ir.Op]) -> list:
    """The ops as a nested list in program order: ("op", op) / ("loop", lid, [items])."""
    root: list = []
    stack: list[tuple[int, list]] = []
    for op in sorted(ops, key=lambda o: o.order):
        chain = list(op.loops)
        k = 0
        while k < len(stack) and k < len(chain) and stack[k][0] == chain[k]:
            k += 1
        del stack[k:]
        for lid in chain[k:]:
            items: list = []
            (stack[-1][1] if stack else root).append(("loop", lid, items))
            stack.append((lid, items))
        (stack[-1][1] if stack else root).append(("op", op))
    return root


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(slots=True)
class _Ev:
    pos: tuple
    op: ir.Op
    thread: int
    env: dict
    epoch: int  # block barriers passed before it
    wepoch: int  # block or warp barriers passed before it
    commits: int  # commits before it (this thread)


class _Undecided(Exception):
    pass


class _RunBlocks(_Undecided):
    """A run in which every thread left waits for ever (the schedule decides nothing)."""


def _run_thread(model: ir.KernelModel, sk: list, t: int, params: dict, budget: list[int]) -> list[_Ev]:
    out: list[_Ev] = []
    state = {"epoch": 0, "wepoch": 0, "commits": 0}

    def holds(op: ir.Op, env: dict) -> bool:
        conds = (op.guard.thread,) + op.guard.uniform
        for c in conds:
            v = c.eval(env)
            if v is None:
                raise _Undecided(f"the condition `{c}` of `{op.api}` (line {op.location.row}) is not decided")
            if not v:
                return False
        return True

    def walk(items: list, env: dict, pos: tuple) -> None:
        for i, it in enumerate(items):
            if it[0] == "op":
                op = it[1]
                if not holds(op, env):
                    continue
                budget[0] -= 1
                if budget[0] < 0:
                    raise _Undecided("too many events to run")
                out.append(_Ev(pos + (i,), op, t, env, state["epoch"], state["wepoch"], state["commits"]))
                if op.kind == ir.CP_ASYNC_COMMIT:
                    state["commits"] += 1
                elif op.kind == ir.SYNC:
                    if op.sync_kind == "block":
                        state["epoch"] += 1
                    state["wepoch"] += 1
                continue
            lp = model.loops[it[1]]
            trip = _int(lp.trip.eval(env)) if lp.trip is not None else None
            if trip is None:
                raise _Undecided(f"the trip count of the loop at line {lp.location.row} is not decided")
            for k in range(max(trip, 0)):
                walk(it[2], {**env, lp.counter.name: k}, pos + (i, k))

    walk(sk, {**params, "tid": t}, ())
    return out


# --------------------------------------------------- threads run by classes ----
#
# A thread's run of the skeleton (which ops it executes, how often each loop turns, the barrier
# and commit counts before each event) depends on the thread only through the values of the
# expressions the walk evaluates (the ops' guards, the loops' trip counts) at that thread. Each
# such expression is a function of its *thread atoms* (its largest subexpressions that name
# thread indices and nothing else: `tid / 32`, `tid % 32 == 0`, `tid < 64`) and of variables that
# are the same for every thread at one point of the walk (kernel arguments, loop counters). So two
# threads whose atoms all have equal values run alike: the first thread of each class is walked,
# the others take its events with their own `tid` (what depends on the thread beyond its class,
# the elements an event touches, is still evaluated per thread, from that thread's environment).
# An expression whose thread-dependent part cannot be split off (`tid + k < n`: the atom is `tid`
# itself) makes every thread a class of its own: the plain per-thread run.

_THREAD_NAMES = frozenset(("tid", "tid_y", "tid_z"))


def _threadish(v: E.Var) -> bool:
    return v.kind == E.THREAD or v.name in _THREAD_NAMES


def _thread_atoms(e: E.Expr, out: dict[E.Expr, None]) -> None:
    fv = e.free_vars()
    if not any(_threadish(v) for v in fv):
        return
    if all(_threadish(v) for v in fv):
        out.setdefault(e, None)
        return
    for c in e.children():  # Bin, Un, Ite: evaluated from their children's values alone
        _thread_atoms(c, out)


class _Runs:
    """One kernel's runs of the skeleton (per `_obligations` call: nothing outlives the check):
    the threads' event lists by classes of threads (above), the elements an op touches in an
    environment, memoised by the values of the variables its index expressions name (the same
    element of the same op recurs across the argument assignments, whose loops run 0 .. 8 times),
    and each op's readers."""

    def __init__(self, m: ir.KernelModel, sk: list, n: int) -> None:
        self.m, self.sk, self.n = m, sk, n
        atoms: dict[E.Expr, None] = {}
        for e in self._walked(sk):
            _thread_atoms(e, atoms)
        self.atoms = list(atoms)
        self._elems: dict[tuple, list[tuple] | None] = {}
        self._elem_vars: dict[int, tuple[str, ...]] = {}
        self._readers: dict[int, list] = {}
        self._touches: dict[int, bool] = {}
        self.rep: dict[int, int] = {}

    def _walked(self, items: list):
        """Every expression `_run_thread` evaluates."""
        for it in items:
            if it[0] == "op":
                yield it[1].guard.thread
                yield from it[1].guard.uniform
                continue
            lp = self.m.loops[it[1]]
            if lp.trip is not None:
                yield lp.trip
            yield from self._walked(it[2])

    def threads(self, params: dict, budget: list[int], whole: bool = True) -> dict[int, list[_Ev]]:
        """`{t: _run_thread(m, sk, t, params, budget) for t in range(n)}`, the same answer (the
        same events, the same exception, the budget spent alike). `whole=False`: a thread
        that is not the first of its class gets only the events `touches` keeps (`_check_run`
        reads the others, the waits, from the first thread's run: `rep`)."""
        first: dict[tuple, tuple[int, list[_Ev]]] = {}
        out: dict[int, list[_Ev]] = {}
        shown: dict[int, list[_Ev]] = {}
        self.rep = {}  # thread -> the first thread of its class (whose run it took)
        for t in range(self.n):
            env = {**params, "tid": t}
            key = tuple((type(v), v) for v in (a.eval(env) for a in self.atoms))
            got = first.get(key)
            if got is None:
                out[t] = _run_thread(self.m, self.sk, t, params, budget)
                first[key] = (t, out[t])
                self.rep[t] = t
                continue
            r, evs = got
            budget[0] -= len(evs)
            if budget[0] < 0:
                raise _Undecided("too many events to run")
            if not whole:
                kept = shown.get(r)
                if kept is None:
                    kept = shown[r] = [ev for ev in evs if self.touches(ev.op)]
                evs = kept
            out[t] = _as_thread(evs, t)
            self.rep[t] = r
        return out

    def touches(self, op: ir.Op) -> bool:
        """Does `_check_run`'s pass over the events do anything at `op` (a copy, a generic
        write of shared memory, a read)? The others (commits, waits, barriers) count only in
        the per-thread numbers each event carries."""
        got = self._touches.get(id(op))
        if got is None:
            got = self._touches[id(op)] = bool(
                op.kind == ir.CP_ASYNC
                or (op.kind == ir.SMEM_ACCESS and op.access_mode in ("write", "zero"))
                or self.readers(op)
            )
        return got

    def touches_ev(self, ev: _Ev) -> bool:
        return self.touches(ev.op)

    def elements(self, op: ir.Op, env: dict) -> list[tuple] | None:
        """`_elements(op, env)` (the list is shared: read it, never change it)."""
        names = self._elem_vars.get(id(op))
        if names is None:
            exprs = list(op.buffer.index) if op.buffer is not None else []
            if op.bytes is not None:
                exprs.append(op.bytes)
            cc = op.copy.collective if op.copy is not None else None
            if cc is not None:
                exprs.append(cc.rank)
            names = self._elem_vars[id(op)] = tuple(sorted({v.name for e in exprs for v in e.free_vars()}))
        key = [id(op)]
        for k in names:
            v = env.get(k)
            if v is not None and type(v) is not int:
                return _elements(op, env)  # a bool or another type: `True == 1` in a key, not in `_int`
            key.append(v)
        tkey = tuple(key)
        got = self._elems.get(tkey, _MISSING)
        if got is _MISSING:
            got = self._elems[tkey] = _elements(op, env)
        return got  # type: ignore[return-value]

    def readers(self, op: ir.Op) -> list:
        got = self._readers.get(id(op))
        if got is None:
            got = self._readers[id(op)] = readers_of(op)
        return got


_MISSING = object()


def _as_thread(evs: list[_Ev], t: int) -> list[_Ev]:
    """Another thread's events of a run of its class: its own `tid` in each environment (one
    environment per loop iteration, shared by that iteration's events, as `_run_thread` makes)."""
    envs: dict[int, dict] = {}
    out = []
    for ev in evs:
        env = envs.get(id(ev.env))
        if env is None:
            env = envs[id(ev.env)] = {**ev.env, "tid": t}
        out.append(_Ev(ev.pos, ev.op, t, env, ev.epoch, ev.wepoch, ev.commits))
    return out


def _elements(op: ir.Op, env: dict) -> list[tuple] | None:
    """The elements (index tuples) an op touches in `env`: a copy of b bytes covers b / element
    size elements along the last index; a ref with fewer indices names a whole tile."""
    ref = op.buffer
    if ref is None:
        return None
    ix = []
    for e in ref.index:
        v = _int(e.eval(env))
        if v is None:
            return None
        ix.append(v)
    key = tuple(ix)
    if op.kind == ir.CP_ASYNC and op.copy is not None and op.copy.collective is not None:
        return _collective_elements(op, op.copy.collective, key, env)
    if op.kind != ir.CP_ASYNC or not key:
        return [key]
    b = _int(op.bytes.eval(env)) if op.bytes is not None else None
    size = _elem_bytes.get(ref.name)
    if b is None or size is None or size <= 0 or b % size:
        return [key]
    return [key[:-1] + (key[-1] + j,) for j in range(b // size)]


def _split_unknown(o: ir.Op) -> str | None:
    """Why the words each thread copies in a collective copy are not known (None: they are)."""
    cc = o.copy.collective if o.copy is not None else None
    if cc is None:
        return None
    if cc.chunk is None:
        return (
            "its split over the group's threads depends on the pointers' alignment at run time "
            "(an element type of 1 or 2 bytes and no `cuda::aligned_size_t<4/8/16>` size)"
        )
    if not cc.elem_bytes or cc.extents is None:
        return "the layout of its destination array is not known"
    return None


def _collective_elements(op: ir.Op, cc: ir.CollectiveCopy, first: tuple, env: dict) -> list[tuple] | None:
    """The elements the thread of `env` copies in a group's collective copy (CollectiveCopy: its
    chunks by rank, as CUDA's `accelerated_async_copy` splits them), from the destination's first
    element `first`; None: the split or the layout is not known."""
    rank = _int(cc.rank.eval(env))
    b = _int(op.bytes.eval(env)) if op.bytes is not None else None
    if rank is None or b is None or cc.chunk is None or not cc.elem_bytes or cc.extents is None:
        return None
    if len(first) != len(cc.extents) + 1:
        return None
    n, size = max(b, 0) // cc.chunk, cc.size
    if cc.tile_tail:
        whole = n - n % size  # `count & ~(size - 1)`: every thread copies in step
        chunks = list(range(rank, whole, size))
        if n > whole:
            chunks.append(whole + min(rank, n - whole - 1))  # the remainder: rank min(r, rem - 1)
    else:
        chunks = list(range(rank, n, size))
    flat = first[0]
    for i, e in zip(first[1:], cc.extents):
        flat = flat * e + i
    out: set[tuple] = set()
    for j in chunks:
        for f in range(j * cc.chunk // cc.elem_bytes, ((j + 1) * cc.chunk - 1) // cc.elem_bytes + 1):
            idx, rest = [], flat + f
            for e in reversed(cc.extents):
                rest, r = divmod(rest, e)
                idx.append(r)
            out.add((rest,) + tuple(reversed(idx)))
    return sorted(out)


_elem_bytes: dict[str, int] = {}  # scalar shared arrays: bytes per element (from their addresses)


# ------------------------------------------------------------------- query ----


def _obligations(an: Analysis) -> list[Obligation]:
    m = an.model
    copies = [o for o in m.ops if o.kind == ir.CP_ASYNC]
    if not copies:
        return []
    bufs = {o.buffer.name for o in copies if o.buffer is not None}
    reads = [o for o in m.ops if any(r.name in bufs for r, _ in readers_of(o))]
    out: list[Obligation] = []

    def undecided_all(reason: str) -> list[Obligation]:
        return [Obligation("complete", r, None, "undecided", reason) for r in reads]

    unknown_dst = [o for o in copies if o.buffer is None]
    if unknown_dst:
        o = unknown_dst[0]
        what = o.copy.dst_unknown if o.copy is not None else None
        reason = f"the destination of `{o.api}` at line {o.location.row} ({what or '?'}) is not a known shared buffer"
        # the copy may write any buffer: no read of a copied buffer is decided, and reads of
        # what it writes are not seen at all (one obligation at each such copy says so)
        return undecided_all(reason) + [
            Obligation(
                "complete",
                o,
                o,
                "undecided",
                f"the destination of `{o.api}` ({what_of(o)}) is not a known "
                "shared buffer: the reads of what it copies are not checked",
            )
            for o in unknown_dst
        ]
    if not reads:
        return []
    for o in copies:
        why = _split_unknown(o)
        if why:
            return undecided_all(f"`{o.api}` at line {o.location.row}: {why}")
    n = an.threads.n
    if n is None or n > MAX_THREADS:
        return undecided_all("the block size is not known")
    _elem_bytes.clear()
    for r in reads:
        tt = r.access.tile_type if r.access is not None else None
        if r.buffer is not None and tt is not None and tt.kind == "scalar" and tt.dtype_bytes:
            _elem_bytes[r.buffer.name] = tt.dtype_bytes
    for sa in m.smem_addresses.values():
        tt = sa.tile_type
        if tt is not None and tt.kind == "scalar" and tt.dtype_bytes:
            _elem_bytes[sa.buffer.name] = tt.dtype_bytes
    syncs = [o for o in m.ops if o.kind == ir.SYNC]
    # generic writes of a copied buffer: a read after one reads that write, not the copy
    stores = [
        o
        for o in m.ops
        if o.kind == ir.SMEM_ACCESS
        and o.access_mode in ("write", "zero")
        and o.buffer is not None
        and o.buffer.name in bufs
    ]
    skel_ops = copies + reads + syncs + stores + list(m.ops_of(ir.CP_ASYNC_COMMIT, ir.CP_ASYNC_WAIT))
    # what the skeleton cannot order: a reason for undecided
    for o in skel_ops:
        if not o.guard.exact:
            return undecided_all(f"the condition of `{o.api}` at line {o.location.row} is not modelled")
    for s in syncs:
        if s.sync_kind not in ("block", "warp"):
            return undecided_all(f"`{s.api}` at line {s.location.row}: named barriers are not run by this check")
        if s.sync_kind == "block" and s.guard.thread != E.TRUE:
            return undecided_all(f"`{s.api}` at line {s.location.row} runs under a thread-dependent condition")
        if s.sync_kind == "warp" and s.sync is not None and s.sync.mask is not None:
            if _int(s.sync.mask.eval({})) not in (0xFFFFFFFF, -1):
                return undecided_all(f"`{s.api}` at line {s.location.row}: a partial warp mask")
    mbar_ops = [o for o in m.ops if o.kind in (ir.MBAR_INIT, ir.MBAR_WAIT, ir.MBAR_ARRIVE)]
    for o in m.ops:
        if o.kind == ir.NAMED_ARRIVE or (o.kind == ir.CALL and (o.not_inlined or o.api == "asm")):
            return undecided_all(
                f"`{o.api}` at line {o.location.row} may order threads in a way this check does not run"
            )
        if o.kind == ir.EXIT:
            return undecided_all(f"the early exit at line {o.location.row}")
        why = _mbar_unrun(o) if mbar_ops else None
        if why:
            return undecided_all(why)
    if mbar_ops:
        skel_ops += mbar_ops
    for o in skel_ops:
        if o.kind == ir.CP_ASYNC_WAIT and _int(o.count.eval({}) if o.count is not None else None) is None:
            return undecided_all(f"the count of `{o.api}` at line {o.location.row} is not a constant")
    sk = _skeleton(m, skel_ops)
    # the argument values to run: each loop with a symbolic trip count, 0 .. MAX_TRIP iterations
    symbolic = []
    for lid in {lid for o in skel_ops for lid in o.loops}:
        lp = m.loops[lid]
        if lp.trip is None:
            return undecided_all(f"the loop at line {lp.location.row} has no known trip count")
        if lp.trip.is_opaque():
            return undecided_all(f"the trip count of the loop at line {lp.location.row} is not modelled")
        if lp.trip.eval({}) is None and not lp.trip.depends_on(E.THREAD) and not lp.trip.depends_on(E.LOOP):
            symbolic.append(lp.trip)
    from .. import solver

    assignments: list[dict] = []
    seen: set = set()
    for combo in itertools.product(range(MAX_TRIP + 1), repeat=len(symbolic)):
        pred = E.conj(*[E.binop("==", tr, E.Const(v)) for tr, v in zip(symbolic, combo)]) if symbolic else E.TRUE
        w = solver.witness(pred, an.solver_timeout_ms) if symbolic else {}
        if w is None:
            continue
        key = tuple(sorted(w.items()))
        if key not in seen:
            seen.add(key)
            assignments.append(w)
    found: dict[tuple, Obligation] = {}
    budget = [MAX_STEPS]
    runs = _Runs(m, sk, n)
    try:
        for params in assignments:
            if mbar_ops:
                for policy in SCHEDULES:
                    try:
                        _check_mbar_run(m, runs, n, params, budget, found, policy)
                    except _RunBlocks:
                        # the schedule ran one side far ahead until everyone waits (a producer
                        # that does not wait for the consumers' release completes the phases
                        # before any consumer read): the interleaved run is another execution,
                        # whose reads and refills meet (its findings are races all the same)
                        _check_mbar_run(m, runs, n, params, budget, found, INTERLEAVED)
                        raise
            else:
                _check_run(m, runs, n, params, budget, found)
    except _Undecided as exc:
        if not any(ob.status == "violated" for ob in found.values()):
            return undecided_all(str(exc))
    violated = {(ob.kind, ob.read.order) for ob in found.values() if ob.status == "violated"}
    out.extend(ob for ob in found.values() if ob.status == "violated" or (ob.kind, ob.read.order) not in violated)
    if mbar_ops:
        # a run is one execution: a race in it is a race, its absence proves nothing for the
        # other schedules; the reads no run found racing stay undecided
        met = {ob.read.order for ob in out}
        out.extend(
            Obligation(
                "complete",
                r,
                None,
                "undecided",
                f"ordered by mbarrier phases in the {len(SCHEDULES)} schedules run, not proved for every schedule",
            )
            for r in reads
            if r.order not in met
        )
    return out


def _lane_shares_unknown(read: ir.Op, reader: int, copier: int) -> bool:
    """A read by a TK op that moves a whole tile or vector (not an element the model indexes) and a
    copy into it by another lane of the same warp: which lane reads which part of the tile is the
    library's partition, which the model does not follow (TK's vector `store` and `load_async`
    give each lane the same 16-byte chunks, so a lane refills only what it read itself; its
    register-tile ops split the tile otherwise). Neither a race nor an order is known."""
    via = read.access.via if read.access is not None else None
    return via not in ("element", "scalar", "asm") and reader // 32 == copier // 32


def _lanes_undecided(found: dict, read: ir.Op, copy: ir.Op) -> None:
    """The refill of a tile a lane of the same warp read (`_lane_shares_unknown`): undecided, with
    why, unless the run finds the read violated by another copy."""
    found.setdefault(
        ("refill", read.order, "lanes"),
        Obligation(
            "refill",
            read,
            copy,
            "undecided",
            f"which lanes of the warp read which part of `{read.buffer}` (`{read.api}`) and which refill it "
            f"(`{copy.api}`, line {copy.location.row}) is the library's partition, not modelled",
        ),
    )


def _check_run(m: ir.KernelModel, rs: _Runs, n: int, params: dict, budget: list[int], found: dict) -> None:
    runs = rs.threads(params, budget, whole=False)
    # per thread: running max of completed groups at each wait, by program position
    done_pos: dict[int, list[tuple]] = {}
    done_val: dict[int, list[tuple[int, int, int, ir.Op]]] = {}  # (upto, epoch, wepoch, op)
    for t, evs in runs.items():
        first = rs.rep[t]
        if first != t:  # a thread of first's class: its waits, at the same positions, with the same counts
            done_pos[t], done_val[t] = done_pos[first], done_val[first]
            continue
        best = 0
        ps, vs = [], []
        for ev in evs:
            if ev.op.kind == ir.CP_ASYNC_WAIT:
                upto = completed_upto(ev.commits, _int(ev.op.count.eval({})) or 0)  # type: ignore[union-attr]
                best = max(best, upto)
                ps.append(ev.pos)
                vs.append((best, ev.epoch, ev.wepoch, ev.op))
        done_pos[t], done_val[t] = ps, vs
    # the events the pass below acts at, in program order, threads in order at one point
    events = sorted(
        (ev for t, evs in runs.items() for ev in (evs if rs.rep[t] != t else filter(rs.touches_ev, evs))),
        key=lambda e: (e.pos, e.thread),
    )
    latest: dict[tuple, _Ev] = {}  # (buffer, element) -> the copy that last wrote it
    key_len: dict[str, int] = {}  # buffer -> the most indices a copy into it names
    for o in m.ops_of(ir.CP_ASYNC):
        if o.buffer is not None:
            key_len[o.buffer.name] = max(key_len.get(o.buffer.name, 0), len(o.buffer.index))
    readers: dict[tuple, list[_Ev]] = {}  # (buffer, element) -> reads since that copy

    def record(kind: str, r: _Ev, c: _Ev | None, wait: ir.Op | None, **wit: Any) -> None:
        key = (kind, r.op.order)
        if key in found:
            return
        env = dict(r.env)
        env.pop("tid", None)
        wit = {**m.user_iteration(env), "reader_thread": r.thread, **wit}
        found[key] = Obligation(kind, r.op, c.op if c else None, "violated", wait=wait, witness=wit)

    for ev in events:
        op = ev.op
        if op.kind == ir.CP_ASYNC:
            els = rs.elements(op, ev.env)
            if els is None:
                raise _Undecided(f"the destination index of `{op.api}` at line {op.location.row} is not decided")
            for el in els:
                key = (op.buffer.name, el)  # type: ignore[union-attr]
                for r in readers.pop(key, []):
                    if r.thread != ev.thread and not _ordered(r, ev):
                        if _lane_shares_unknown(r.op, r.thread, ev.thread):
                            _lanes_undecided(found, r.op, op)
                        else:
                            record("refill", r, ev, None, writer_thread=ev.thread)
                latest[key] = ev
            continue
        if op.kind == ir.SMEM_ACCESS and op.access_mode in ("write", "zero"):
            els = rs.elements(op, ev.env)
            if els is None:
                raise _Undecided(f"the index of `{op.api}` at line {op.location.row} is not decided")
            (el,) = els
            for key in (
                [k for k in latest if k[0] == op.buffer.name and k[1][: len(el)] == el]
                if len(el) < key_len.get(op.buffer.name, 0)
                else [(op.buffer.name, el)]
            ):  # type: ignore[union-attr]
                latest.pop(key, None)
                readers.pop(key, None)
            continue
        refs = rs.readers(op)
        if not refs or op.kind == ir.CP_ASYNC:
            continue
        if (
            op.access is not None
            and op.access.via == "element"
            and op.buffer is not None
            and len(op.buffer.index) < key_len.get(op.buffer.name, 0)
        ):
            continue  # a scalar array indexed partly (`float (*row)[N] = a[s]`): an address, not a load
        els = rs.elements(op, ev.env)
        if els is None:
            continue
        (el,) = els
        name = op.buffer.name  # type: ignore[union-attr]
        if (name, el) in latest or key_len.get(name, 0) <= len(el):
            hits = [(name, el)]
        else:  # a whole tile (or row) read: every copied element in it
            hits = [k for k in latest if k[0] == name and k[1][: len(el)] == el]
        for key in hits:
            readers.setdefault(key, []).append(ev)
            c = latest.get(key)
            if c is None:
                continue
            g = group_index(c.commits)
            w = c.thread
            # completion in the issuing thread by its last wait at or before the read's point
            i = bisect.bisect_right(done_pos[w], ev.pos) - 1
            upto = done_val[w][i][0] if i >= 0 else 0
            if upto < g:
                last = (
                    done_val[ev.thread][bisect.bisect_right(done_pos[ev.thread], ev.pos) - 1][3]
                    if done_pos[ev.thread] and bisect.bisect_right(done_pos[ev.thread], ev.pos) > 0
                    else None
                )
                record("complete", ev, c, last, writer_thread=w, group=g, completed_groups=max(upto, 0))
                continue
            if w == ev.thread:
                continue
            # the first wait of w that completes the copy, and a barrier after it before the read
            j = next(k for k, v in enumerate(done_val[w]) if v[0] >= g)
            _, a, wa, _ = done_val[w][j]
            same_warp = w // 32 == ev.thread // 32
            if not (a < ev.epoch or (same_warp and wa < ev.wepoch)):
                record("visible", ev, c, done_val[w][j][3], writer_thread=w)


def _ordered(r: _Ev, c: _Ev) -> bool:
    """A barrier instance the reader passed after its read and the copier before its copy."""
    if r.epoch < c.epoch:
        return True
    return r.thread // 32 == c.thread // 32 and r.wepoch < c.wepoch


# ------------------------------------------------------ runs over mbarriers ----
#
# A kernel whose copies are ordered by mbarriers (libcu++'s partitioned pipeline, a cuda::barrier
# completion, `cp.async.mbarrier.arrive`) is run as one execution of all its threads at once, under
# a scheduler, with the hardware's mbarrier semantics: an arrival decrements the pending count of
# the phase in progress, the phase completes when it reaches zero (the count re-armed from the
# init); `try_wait.parity(p)` passes once the phase in progress has a parity other than p, and
# then observes every completed phase. Happens-before is vector clocks: `vc[t]` the events of
# each thread that thread t is ordered after; `cc[t]` the copies (per issuing thread, by their
# number) t has seen land. An arrival releases the arriving thread's clocks into the phase; a
# cp.async arrival (`BarrierFacts.cp_async`) also the thread's copies issued before it (they land
# before the arrival counts: in the run they land at once); a copy with `CopyFacts.mbarrier`
# likewise into the phase in progress; a wait joins what the completed phases hold; a block
# barrier joins every thread, a warp barrier its warp; `cp.async.wait_group` lands the thread's
# own groups. A read of a copied element whose last copy the reader has not seen land is a
# violation (`complete`; `visible` when the copying thread itself saw it land); a copy into an
# element some thread read since the last copy, with the read not ordered before it, is a
# `refill` violation. Each run is a real execution of the modelled semantics, so what it finds is
# a race; the first unordered pair of a run is one the hardware may reorder. A run that blocks
# (every thread left waits), or meets a barrier the run cannot place, decides nothing.

SCHEDULES = ("lowest", "highest")  # which runnable thread goes next, run until it blocks
# run only after a schedule blocked: every runnable thread one event a pass, in thread order
INTERLEAVED = "interleaved"
MAX_TRIES = 4 * MAX_STEPS  # events tried per run (blocked tries included)


def _mbar_unrun(o: ir.Op) -> str | None:
    """Why a kernel with mbarriers cannot be run by the cp.async engine (None: it can)."""
    if o.kind in (ir.MBAR_EXPECT, ir.TMA_LOAD, ir.TMEM_OP, ir.MMA):
        return f"`{o.api}` at line {o.location.row}: bytes or async work on mbarriers are not run by this check"
    if o.kind in (ir.MBAR_INIT, ir.MBAR_WAIT, ir.MBAR_ARRIVE):
        if o.barrier is None or not o.guard.exact:
            return f"`{o.api}` at line {o.location.row}: its barrier or condition is not modelled"
        mb = o.mbar
        if mb is not None and (mb.remote or mb.cta is not None or mb.tcgen05_commit or mb.multicast or mb.clc):
            return f"`{o.api}` at line {o.location.row}: a remote or asynchronous arrival is not run by this check"
    return None


class _Blocked(Exception):
    pass


@dataclass
class _Bar:
    count: int
    pending: int
    phase: int = 0  # the phase in progress
    acc_vc: list[int] = field(default_factory=list)  # what the phase in progress has been given
    acc_cc: list[int] = field(default_factory=list)
    seen_vc: list[int] = field(default_factory=list)  # what the completed phases hold
    seen_cc: list[int] = field(default_factory=list)


def _join(a: list[int], b: list[int]) -> None:
    for i, v in enumerate(b):
        if v > a[i]:
            a[i] = v


def _check_mbar_run(
    m: ir.KernelModel, rs: _Runs, n: int, params: dict, budget: list[int], found: dict, policy: str
) -> None:
    runs = rs.threads(params, budget)
    vc = {t: [0] * n for t in range(n)}
    cc = {t: [0] * n for t in range(n)}
    copies = [0] * n  # copies issued per thread (their numbers count from 1)
    groups: dict[int, list[int]] = {t: [] for t in range(n)}  # per thread: last copy of each commit group
    bars: dict[tuple, _Bar] = {}
    syncs: dict[tuple, set[int] | frozenset[int]] = {}  # (kind, warp or -1, instance) -> threads arrived
    sync_no = {t: [0, 0] for t in range(n)}  # block / warp barriers passed
    waiting_sync: dict[int, tuple] = {}
    ptr = {t: 0 for t in range(n)}
    latest: dict[tuple, tuple[int, int, _Ev]] = {}  # element -> (copier, copy number, event)
    readers: dict[tuple, list[tuple[_Ev, int]]] = {}  # element -> (read, reader's clock) since the copy
    key_len: dict[str, int] = {}
    for o in m.ops_of(ir.CP_ASYNC):
        if o.buffer is not None:
            key_len[o.buffer.name] = max(key_len.get(o.buffer.name, 0), len(o.buffer.index))

    def record(kind: str, r: _Ev, c: _Ev | None, **wit: Any) -> None:
        key = (kind, r.op.order)
        if key in found:
            return
        env = dict(r.env)
        env.pop("tid", None)
        w = {**m.user_iteration(env), "reader_thread": r.thread, **wit, "via": "mbarrier"}
        found[key] = Obligation(kind, r.op, c.op if c else None, "violated", witness=w)

    def bar_of(ev: _Ev) -> tuple[tuple, _Bar | None]:
        ref = ev.op.barrier
        assert ref is not None
        ix = tuple(_int(e.eval(ev.env)) for e in ref.index)
        if any(v is None for v in ix):
            raise _Undecided(f"the barrier index of `{ev.op.api}` at line {ev.op.location.row} is not decided")
        key = (ref.name, ix)
        return key, bars.get(key)

    def hold(b: _Bar, t: int, upto: int) -> None:
        """Thread t's clocks (and its copies 1..upto landed) into the phase in progress."""
        _join(b.acc_vc, vc[t])
        _join(b.acc_cc, cc[t])
        if upto > b.acc_cc[t]:
            b.acc_cc[t] = upto

    def step(t: int, ev: _Ev) -> None:
        """Run one event of thread t; _Blocked when it cannot run yet."""
        op = ev.op
        k = op.kind
        if k == ir.MBAR_INIT:
            key, _ = bar_of(ev)
            c = _int(op.count.eval(ev.env)) if op.count is not None else None
            if c is None or c <= 0:
                raise _Undecided(f"the count of `{op.api}` at line {op.location.row} is not decided")
            bars[key] = _Bar(c, c, 0, [0] * n, [0] * n, [0] * n, [0] * n)
        elif k == ir.MBAR_ARRIVE:
            key, b = bar_of(ev)
            if b is None:
                raise _Undecided(f"`{op.api}` at line {op.location.row} arrives on a barrier not initialised yet")
            c = _int(op.count.eval(ev.env)) if op.count is not None else None
            if c is None or c < 0:
                raise _Undecided(f"the count of `{op.api}` at line {op.location.row} is not decided")
            hold(b, t, copies[t] if op.mbar is not None and op.mbar.cp_async else 0)
            b.pending -= c
            if b.pending < 0:
                raise _Undecided(f"more arrivals than the count on `{key[0]}` at line {op.location.row}")
            if b.pending == 0:
                _join(b.seen_vc, b.acc_vc)
                _join(b.seen_cc, b.acc_cc)
                b.acc_vc, b.acc_cc = [0] * n, [0] * n
                b.phase += 1
                b.pending = b.count
        elif k == ir.MBAR_WAIT:
            key, b = bar_of(ev)
            p = _int(op.parity.eval(ev.env)) if op.parity is not None else None
            if b is None or p is None:
                raise _Undecided(f"the barrier or parity of `{op.api}` at line {op.location.row} is not decided")
            if b.phase % 2 == p % 2:
                raise _Blocked
            _join(vc[t], b.seen_vc)
            _join(cc[t], b.seen_cc)
        elif k == ir.SYNC:
            kind = 0 if op.sync_kind == "block" else 1
            inst = (kind, -1 if kind == 0 else t // 32, sync_no[t][kind])
            if waiting_sync.get(t) != inst:
                waiting_sync[t] = inst
                syncs.setdefault(inst, set())
            members = syncs[inst]
            if isinstance(members, set) and t not in members:
                members.add(t)
            size = n if kind == 0 else min(32, n - (t // 32) * 32)
            if len(members) < size:
                raise _Blocked
            if len(members) == size and not isinstance(members, frozenset):
                # the last one in: everyone's clocks joined, then all pass
                jv, jc = [0] * n, [0] * n
                for u in members:
                    _join(jv, vc[u])
                    _join(jc, cc[u])
                for u in members:
                    vc[u] = list(jv)
                    cc[u] = list(jc)
                syncs[inst] = frozenset(members)
            del waiting_sync[t]
            sync_no[t][kind] += 1
        elif k == ir.CP_ASYNC:
            els = rs.elements(op, ev.env)
            if els is None:
                raise _Undecided(f"the destination index of `{op.api}` at line {op.location.row} is not decided")
            copies[t] += 1
            for el in els:
                key = (op.buffer.name, el)  # type: ignore[union-attr]
                for r, at in readers.pop(key, []):
                    if r.thread != t and vc[t][r.thread] < at:
                        if _lane_shares_unknown(r.op, r.thread, t):
                            _lanes_undecided(found, r.op, op)
                        else:
                            record("refill", r, ev, writer_thread=t)
                latest[key] = (t, copies[t], ev)
            mb = op.copy.mbarrier if op.copy is not None else None
            if mb is not None:
                ix = tuple(_int(e.eval(ev.env)) for e in mb.index)
                b = bars.get((mb.name, ix))
                if b is None:
                    raise _Undecided(f"the barrier of `{op.api}` at line {op.location.row} is not initialised yet")
                hold(b, t, copies[t])
        elif k == ir.CP_ASYNC_COMMIT:
            groups[t].append(copies[t])
        elif k == ir.CP_ASYNC_WAIT:
            upto = completed_upto(len(groups[t]), _int(op.count.eval({})) or 0)  # type: ignore[union-attr]
            if upto > 0 and groups[t][upto - 1] > cc[t][t]:
                cc[t][t] = groups[t][upto - 1]
        elif k == ir.SMEM_ACCESS and op.access_mode in ("write", "zero"):
            els = rs.elements(op, ev.env)
            if els is None:
                raise _Undecided(f"the index of `{op.api}` at line {op.location.row} is not decided")
            (el,) = els
            for key in [k2 for k2 in latest if k2[0] == op.buffer.name and k2[1][: len(el)] == el]:  # type: ignore[union-attr]
                latest.pop(key, None)
                readers.pop(key, None)
        elif rs.readers(op) and not (
            op.access is not None
            and op.access.via == "element"
            and op.buffer is not None
            and len(op.buffer.index) < key_len.get(op.buffer.name, 0)
        ):
            els = rs.elements(op, ev.env)
            if els is not None:
                (el,) = els
                name = op.buffer.name  # type: ignore[union-attr]
                if (name, el) in latest or key_len.get(name, 0) <= len(el):
                    hits = [(name, el)]
                else:
                    hits = [k2 for k2 in latest if k2[0] == name and k2[1][: len(el)] == el]
                for key in hits:
                    readers.setdefault(key, []).append((ev, vc[t][t] + 1))
                    got = latest.get(key)
                    if got is None:
                        continue
                    w, num, cev = got
                    if cc[t][w] >= num:
                        continue
                    record("visible" if w != t and cc[w][w] >= num else "complete", ev, cev, writer_thread=w)
        vc[t][t] += 1

    # passes over the threads in the policy's order, each run until it blocks: under "lowest"
    # the low threads (a producer warp) run as far ahead as the barriers let them
    order = list(range(n)) if policy != "highest" else list(range(n - 1, -1, -1))
    per_pass = 1 if policy == INTERLEAVED else None
    live = [t for t in order if runs[t]]
    tries = 0  # events tried, blocked ones included: a run that crawls is left undecided
    while live:
        moved = False
        for t in live:
            evs = runs[t]
            ran = 0
            while ptr[t] < len(evs) and (per_pass is None or ran < per_pass):
                ran += 1
                tries += 1
                if tries > MAX_TRIES:
                    raise _Undecided("the run takes too many scheduling steps")
                try:
                    step(t, evs[ptr[t]])
                except _Blocked:
                    break
                ptr[t] += 1
                moved = True
        live = [t for t in live if ptr[t] < len(runs[t])]
        if live and not moved:
            ev = runs[live[0]][ptr[live[0]]]
            raise _RunBlocks(
                f"the run blocks: thread {live[0]} waits at `{ev.op.api}` (line {ev.op.location.row}) for ever"
            )
