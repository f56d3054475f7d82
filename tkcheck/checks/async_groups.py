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


@dataclass
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
    if op.kind != ir.CP_ASYNC or not key:
        return [key]
    b = _int(op.bytes.eval(env)) if op.bytes is not None else None
    size = _elem_bytes.get(ref.name)
    if b is None or size is None or size <= 0 or b % size:
        return [key]
    return [key[:-1] + (key[-1] + j,) for j in range(b // size)]


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
    for o in m.ops:
        if o.kind in (ir.MBAR_WAIT, ir.MBAR_ARRIVE, ir.NAMED_ARRIVE) or (
            o.kind == ir.CALL and (o.not_inlined or o.api == "asm")
        ):
            return undecided_all(
                f"`{o.api}` at line {o.location.row} may order threads in a way this check does not run"
            )
        if o.kind == ir.EXIT:
            return undecided_all(f"the early exit at line {o.location.row}")
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
    try:
        for params in assignments:
            _check_run(m, sk, n, params, budget, found)
    except _Undecided as exc:
        if not found:
            return undecided_all(str(exc))
    out.extend(found.values())
    return out


def _check_run(m: ir.KernelModel, sk: list, n: int, params: dict, budget: list[int], found: dict) -> None:
    runs = {t: _run_thread(m, sk, t, params, budget) for t in range(n)}
    # per thread: running max of completed groups at each wait, by program position
    done_pos: dict[int, list[tuple]] = {}
    done_val: dict[int, list[tuple[int, int, int, ir.Op]]] = {}  # (upto, epoch, wepoch, op)
    for t, evs in runs.items():
        best = 0
        ps, vs = [], []
        for ev in evs:
            if ev.op.kind == ir.CP_ASYNC_WAIT:
                upto = completed_upto(ev.commits, _int(ev.op.count.eval({})) or 0)  # type: ignore[union-attr]
                best = max(best, upto)
                ps.append(ev.pos)
                vs.append((best, ev.epoch, ev.wepoch, ev.op))
        done_pos[t], done_val[t] = ps, vs
    events = sorted((ev for evs in runs.values() for ev in evs), key=lambda e: (e.pos, e.thread))
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
            els = _elements(op, ev.env)
            if els is None:
                raise _Undecided(f"the destination index of `{op.api}` at line {op.location.row} is not decided")
            for el in els:
                key = (op.buffer.name, el)  # type: ignore[union-attr]
                for r in readers.pop(key, []):
                    if r.thread != ev.thread and not _ordered(r, ev):
                        record("refill", r, ev, None, writer_thread=ev.thread)
                latest[key] = ev
            continue
        if op.kind == ir.SMEM_ACCESS and op.access_mode in ("write", "zero"):
            els = _elements(op, ev.env)
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
        refs = [ref for ref, _ in readers_of(op)]
        if not refs or op.kind == ir.CP_ASYNC:
            continue
        if (
            op.access is not None
            and op.access.via == "element"
            and op.buffer is not None
            and len(op.buffer.index) < key_len.get(op.buffer.name, 0)
        ):
            continue  # a scalar array indexed partly (`float (*row)[N] = a[s]`): an address, not a load
        els = _elements(op, ev.env)
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
