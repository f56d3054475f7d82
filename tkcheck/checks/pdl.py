"""Programmatic dependent launch: the happens-before engine's question across grids.

Semantics (PTX ISA, `griddepcontrol`): `griddepcontrol.wait` (`cudaGridDependencySynchronize()`,
TK's `pdl::wait()`, `cuda::ptx::griddepcontrol_wait()`) makes the executing thread wait until all
prerequisite grids in flight have completed and their memory operations are performed and visible
to the current grid; `griddepcontrol.launch_dependents` only lets the dependent grid be scheduled
once every CTA issued it or completed (one thread per CTA suffices): it orders no memory. Without
the programmatic-serialization attribute the stream orders the kernels fully.

For a launch L of this kernel with the attribute on (`ir.GridModel`, frontend/launch_chain.py),
the grids that may still run while L's code before its wait runs (`running`): its predecessor P on
the stream when P triggers early (a `launch_dependents` op), and P's own running set when P may
trigger before its own wait returned. Each global access A of this kernel is *after the wait*
(every thread of A waited before it, or a block barrier orders it after a thread that waited),
*before* it (some thread of A reaches it with no wait and nothing that could order it after
another thread's wait: no barrier, mbarrier wait, spin, acquire or unmodelled call before it; or
the kernel has no wait at all), or undecided. A before-access that conflicts with an access of a
running grid to the same host buffer (one of them a write) is a proved race when the
running grid surely triggers early (unconditionally, in every block) and every hop of the chain
surely does; otherwise, and wherever a buffer, a predecessor or a grid's accesses are not known,
the pair is undecided (coverage, never a finding).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

# ops that may order a thread after another thread (and so after that thread's wait)
_ORDERING = (ir.SYNC, ir.NAMED_ARRIVE, ir.MBAR_WAIT, ir.SPIN, ir.CALL, ir.CP_ASYNC_WAIT, ir.MMA_WAIT)
_GLOBAL = (ir.GLOBAL_LOAD, ir.GLOBAL_STORE, ir.GLOBAL_SIGNAL)
# ops that access global memory through operands the grid question does not resolve
_OPAQUE_GLOBAL = (ir.TMA_LOAD, ir.TMA_STORE, ir.CP_ASYNC, ir.CALL)


@dataclass(frozen=True)
class Conflict:
    access: ir.Op  # this kernel's access, not ordered after its wait
    other: ir.Op | None  # the running grid's conflicting access (None: not known)
    other_kernel: str
    launch: ir.GridLaunch  # the launch of this kernel
    runner: ir.GridLaunch  # the running grid's launch
    buffer: str | None
    proved: bool
    why: str = ""


@dataclass
class PdlFacts:
    asked: bool = False  # the kernel has a PDL op or a PDL launch: one obligation
    races: list[Conflict] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)


def _global(o: ir.Op) -> bool:
    """Does the op access global memory (a cluster launch control request's response lands in
    shared memory: no global access)?"""
    if o.kind == ir.TMA_LOAD and o.mbar is not None and o.mbar.clc:
        return False
    return o.kind in _GLOBAL or o.kind in _OPAQUE_GLOBAL


def _mode(o: ir.Op) -> str:
    return "read" if o.kind == ir.GLOBAL_LOAD else "write"


def _prefix(a: tuple, b: tuple) -> bool:
    return tuple(b[: len(a)]) == tuple(a)


def _index(model: ir.KernelModel) -> dict[int, int]:
    return {id(o): i for i, o in enumerate(model.ops)}


def accesses(an: Analysis) -> dict[int, tuple[ir.Op, str]]:
    """id(op) -> (global access, "after" | "before" | "undecided": its order to the PDL wait)."""
    return an.fact("pdl.accesses", _accesses)


def _accesses(an: Analysis) -> dict[int, tuple[ir.Op, str]]:
    m = an.model
    ops = m.ops
    waits = [(i, o) for i, o in enumerate(ops) if o.kind == ir.PDL and o.pdl == "wait"]
    hidden = any(o.kind == ir.CALL or o.not_inlined for o in ops)
    out: dict[int, tuple[ir.Op, str]] = {}
    for i, a in enumerate(ops):
        if not _global(a):
            continue
        ta = an.threads.executing(a)
        if not ta:
            out[id(a)] = (a, "undecided")
            continue
        if not waits:
            out[id(a)] = (a, "undecided" if hidden else "before")
            continue
        if _after(an, ops, waits, i, a, ta):
            out[id(a)] = (a, "after")
            continue
        chain = _after_by_mbarrier(an, waits, a, ta)
        if chain is not None:
            out[id(a)] = (a, "after")
            if chain:
                assumed(an)[id(a)] = chain
            continue
        # a thread of A that reaches it with nothing before it that could order it after a wait
        cand = set(ta)
        for j in range(i):
            o = ops[j]
            if o.kind in _ORDERING or (o.kind == ir.PDL and o.pdl == "wait") or _acquires(o):
                to = an.threads.executing(o)
                if to is None:
                    cand = set()
                    break
                cand -= set(to)
                if not cand:
                    break
        out[id(a)] = (a, "before" if cand and a.guard.exact else "undecided")
    return out


def assumed(an: Analysis) -> dict[int, list[str]]:
    """id(access) -> what its order after the wait assumes (`_after_by_mbarrier`): stated with the
    decision (coverage notes), never left unsaid."""
    return an.fact("pdl.assumed", lambda _an: {})


def _after_by_mbarrier(an: Analysis, waits: list, a: ir.Op, ta: frozenset) -> list[str] | None:
    """A is ordered after a PDL wait through mbarriers: every thread of A waits, before A (in A's
    loop iteration, unconditionally), on an mbarrier every phase of which completes only after an
    op ordered after a PDL wait (`_released_after_wait`), and that wait never passes on the fresh
    barrier (its due phase, proved by `checks.phases`, is a completion at every use). An mbarrier
    wait acquires what the arrivals of the phase it observes released, so the prerequisite grid's
    memory, visible to the thread that waited for the grid, is visible to A's threads too.
    Returns the assumptions made (the loops around a signaller's own waits run at least once),
    or None when not shown."""
    from . import phases

    due = {id(wp.op): wp for wp in phases.phases(an)}
    for w in an.model.ops_of(ir.MBAR_WAIT):
        if w.order >= a.order or w.barrier is None or not _prefix(w.loops, a.loops) or not w.guard.exact:
            continue
        if any(u not in a.guard.uniform for u in w.guard.uniform):
            continue
        tw = an.threads.executing(w)
        if tw is None or not ta <= tw:
            continue
        wp = due.get(id(w))
        if wp is None or wp.status != "ok" or wp.due is None or not _completes(an, wp):
            continue
        why: list[str] = []
        if _released_after_wait(an, waits, w.barrier.name, 3, why, set()):
            return why
    return None


def _completes(an: Analysis, wp) -> bool:
    """The wait's due phase is a completion at every use (never the fresh barrier's phase -1)."""
    from .. import solver

    return solver.always(E.binop(">=", wp.due, E.Const(0)), an.solver_timeout_ms) is True


def _released_after_wait(an: Analysis, waits: list, name: str, depth: int, why: list[str], seen: set) -> bool:
    """Every phase of mbarrier `name` completes only after an op ordered after a PDL wait: bytes
    land on it from TMA loads issued after the wait and every arrival on it expects bytes (a phase
    then needs those bytes), or every arrival on it is issued by threads that waited for the grid
    before it, or that wait before it, in the same iteration, on such a barrier."""
    if depth <= 0 or name in seen:
        return False
    seen = seen | {name}
    m, th = an.model, an.threads
    sigs = [o for o in m.ops if o.barrier is not None and o.barrier.name == name and o.kind in _SIGNALS]
    if not sigs or any(o.unmodelled_barrier_use or (o.mbar is not None and o.mbar.remote) for o in sigs):
        return False
    ops = m.ops
    index = _index(m)
    loads = [o for o in sigs if o.kind == ir.TMA_LOAD]
    if loads:
        if any(o.kind == ir.MBAR_ARRIVE for o in sigs):
            return False
        if any(o.kind == ir.MBAR_EXPECT and not _positive(an, o.bytes) for o in sigs):
            return False
        for o in loads:
            to = th.executing(o)
            if not to or not _after(an, ops, waits, index[id(o)], o, to):
                return False
        return True
    for s in sigs:
        if s.kind != ir.MBAR_ARRIVE:
            return False
        iss = th.issuers(s)
        if not iss:
            return False
        if _after(an, ops, waits, index[id(s)], s, iss):
            continue
        found = False
        for o in m.ops_of(ir.MBAR_WAIT):
            if o.order >= s.order or o.barrier is None or not _prefix(s.loops, o.loops) or not o.guard.exact:
                continue
            if any(u not in s.guard.uniform for u in o.guard.uniform):
                continue
            ex = th.executing(o)
            if ex is None or not iss <= ex:
                continue
            inner = [m.loops[lid] for lid in o.loops[len(s.loops) :]]
            extra = [lp for lp in inner if not _runs(an, lp)]
            if any(lp.trip is None for lp in extra):
                continue
            sub: list[str] = []
            if _released_after_wait(an, waits, o.barrier.name, depth - 1, sub, seen):
                for lp in extra:
                    over = f" over `{lp.var}`" if lp.var else ""
                    line = f"the loop{over} at line {lp.location.row} (around a wait on '{o.barrier.name}') runs at least once"
                    if line not in why:
                        why.append(line)
                why.extend(x for x in sub if x not in why)
                found = True
                break
        if not found:
            return False
    return True


def _runs(an: Analysis, lp: ir.Loop) -> bool:
    """The loop runs at least once (its trip count proved positive)."""
    from .. import solver

    return lp.trip is not None and solver.always(E.binop(">=", lp.trip, E.Const(1)), an.solver_timeout_ms) is True


def _positive(an: Analysis, e) -> bool:
    from .. import solver

    return (
        e is not None and not e.is_opaque() and solver.always(E.binop(">", e, E.Const(0)), an.solver_timeout_ms) is True
    )


_SIGNALS = (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)


def _acquires(o: ir.Op) -> bool:
    ga = o.global_access
    return o.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL) and ga is not None and ga.sem not in ("weak",)


def _after(an: Analysis, ops: list, waits: list, i: int, a: ir.Op, ta: frozenset) -> bool:
    """Every thread of A waited before A (same loops or outer), or a block barrier between a
    wait some thread surely makes and A orders every thread after it."""
    left = set(ta)
    for j, w in waits:
        if j >= i or not _prefix(w.loops, a.loops) or not w.guard.exact:
            continue
        tw = an.threads.executing(w)
        if tw is None:
            continue
        left -= set(tw)
        if not left:
            return True
        if tw:
            for k in range(j + 1, i):
                s = ops[k]
                if (
                    s.kind == ir.SYNC
                    and s.sync is not None
                    and s.sync.kind == "block"
                    and s.guard.exact
                    and not s.guard.uniform
                    and _prefix(w.loops, s.loops)
                    and _prefix(s.loops, a.loops)
                    and an.threads.executing(s) == frozenset(range(an.threads.n))
                ):
                    return True
    return False


# -- a grid's summary, from its model alone ------------------------------------------------------
@dataclass(frozen=True)
class _Grid:
    accesses: tuple  # (op, param, mode)
    opaque: bool  # accesses global memory through operands not resolved
    trigger: str  # "early" (every block, before any wait) | "may" | "none" | "late" (only after a wait)
    passes_on: str  # its running set is still running when it triggers: "yes" | "no" | "maybe"


def _grid(m: ir.KernelModel) -> _Grid:
    acc = []
    opaque = False
    for o in m.ops:
        if o.kind in _GLOBAL:
            b = o.global_access.base if o.global_access is not None else None
            if b is None:
                opaque = True
            else:
                acc.append((o, b, _mode(o)))
        elif _global(o):
            opaque = True
    waits = [i for i, o in enumerate(m.ops) if o.kind == ir.PDL and o.pdl == "wait"]
    trigs = [(i, o) for i, o in enumerate(m.ops) if o.kind == ir.PDL and o.pdl == "launch_dependents"]
    first_wait = waits[0] if waits else len(m.ops)
    if not trigs:
        return _Grid(tuple(acc), opaque, "none", "no")
    early = [(i, o) for i, o in trigs if i < first_wait]
    sure = any(not o.loops and not o.guard.uniform and o.guard.exact and not o.guard.opaque for _, o in early)
    late_all = not early and all(
        any(j < i and _prefix(m.ops[j].loops, o.loops) and m.ops[j].guard.exact and _covers(m.ops[j], o) for j in waits)
        for i, o in trigs
    )
    trigger = "early" if sure else ("late" if late_all else "may")
    passes = "yes" if sure else ("no" if late_all else "maybe")
    return _Grid(tuple(acc), opaque, trigger, passes)


def _covers(w: ir.Op, t: ir.Op) -> bool:
    """The wait's thread guard is the trigger's or weaker (both unconditional, or equal)."""
    return bool(w.guard.thread == t.guard.thread or getattr(w.guard.thread, "value", None) is True)


def _plain(name: str) -> str:
    """An instance's name compared without spaces and namespace qualifiers (the model's name and
    the host code's spelling of a type argument may qualify it differently)."""
    return re.sub(r"\b\w+::", "", name).replace(" ", "")


def _model_name(m: ir.KernelModel) -> str:
    return _plain(m.name.split(" [op ")[0])


def model_of(grid: ir.GridModel, launch: ir.GridLaunch) -> ir.KernelModel | None:
    """The model a launch runs: the kernel's only model, or the template instance it names."""
    ms = grid.models.get(launch.kernel, [])
    if len(ms) == 1:
        return ms[0]
    if launch.instance is None:
        return None
    want = _plain(launch.instance)
    got = [m for m in ms if _model_name(m) == want]
    return got[0] if len(got) == 1 else None


def _grid_of(grid: ir.GridModel, launch: ir.GridLaunch, cache: dict) -> _Grid | None:
    key = (launch.kernel, launch.instance)
    if key not in cache:
        m = model_of(grid, launch)
        cache[key] = _grid(m) if m is not None else None
    return cache[key]


def _running(grid: ir.GridModel, i: int, cache: dict, depth: int = 0) -> tuple[list[tuple[int, bool]], str]:
    """The launches that may run while launch i's code before its wait runs: (index, surely)
    pairs, and why the set is not complete ("" when it is)."""
    g = grid.launches[i]
    if g.pdl is False:
        return [], ""
    if g.pdl is None:
        return [], "whether the launch carries the programmatic-serialization attribute is not known"
    if g.predecessor == ir.PRED_NONE:
        return [], ""
    if g.predecessor == ir.PRED_UNKNOWN or depth > 32:
        return [], "the grid launched before it on the stream is not known"
    p = grid.launches[g.predecessor]
    pg = _grid_of(grid, p, cache)
    if pg is None:
        return [], f"the kernel '{p.kernel}' launched before it is not modelled"
    out: list[tuple[int, bool]] = []
    why = ""
    if pg.trigger == "none":
        why = f"'{p.kernel}' before it never triggers: whether its writes are visible before the wait is not modelled"
        out.append((g.predecessor, False))
    else:
        out.append((g.predecessor, pg.trigger == "early"))
    if pg.passes_on != "no" and pg.trigger != "none":
        more, w2 = _running(grid, g.predecessor, cache, depth + 1)
        sure = pg.passes_on == "yes"
        out += [(j, s and sure and pg.trigger == "early") for j, s in more]
        why = why or w2
    return out, why


def conflicts(an: Analysis) -> PdlFacts:
    return an.fact("pdl.conflicts", _conflicts)


def _conflicts(an: Analysis) -> PdlFacts:
    m = an.model
    facts = PdlFacts()
    has_pdl = any(o.kind == ir.PDL for o in m.ops)
    grid = m.grid
    base = m.name.split(" [op ")[0].split("<")[0].split("::")[-1]
    launches = grid.launches_of(base) if grid is not None else []
    several = grid is not None and len(grid.models.get(base, [])) > 1
    if several:
        # the launches of this instance; one whose instance is not resolved may be one of them
        unresolved = [(i, g) for i, g in launches if model_of(grid, g) is None]
        launches = [(i, g) for i, g in launches if model_of(grid, g) is m]
        if unresolved and (has_pdl or any(g.pdl is not False for _, g in unresolved)):
            facts.asked = True
            facts.undecided.append("several kernels of this name: which one a launch runs is not resolved")
            return facts
    if not has_pdl and not any(g.pdl is not False for _, g in launches):
        return facts
    facts.asked = True
    if grid is None or not launches:
        if has_pdl:
            facts.undecided.append("no launch of the kernel in this file: its prerequisite grid is not known")
        return facts
    if base in grid.unfollowed or grid.notes:
        facts.undecided.append(
            "a launch of the kernel (or host code of the file) was not followed: "
            + (grid.notes[0] if grid.notes else "arguments passed through a `void **` array")
        )
    acc = accesses(an)
    cache: dict = {}
    seen = set()
    for i, g in launches:
        running, why = _running(grid, i, cache)
        if why:
            facts.undecided.append(why)
        for j, sure in running:
            r = grid.launches[j]
            rg = _grid_of(grid, r, cache)
            if rg is None:
                continue
            for a, status in acc.values():
                if status == "after":
                    continue
                if a.kind not in _GLOBAL or a.global_access is None or a.global_access.base is None:
                    if rg.accesses or rg.opaque:
                        facts.undecided.append(
                            f"`{a.api}` at line {a.location.row}: "
                            + ("before the wait" if status == "before" else "not proved after the wait")
                            + " and its global operands not resolved"
                        )
                    continue
                ba = g.buffer(a.global_access.base)
                for o, param, mode in rg.accesses:
                    if mode == "read" and _mode(a) == "read":
                        continue
                    bo = r.buffer(param)
                    if ba is None or bo is None:
                        facts.undecided.append(
                            f"`{a.global_access.base}` / '{r.kernel}'s `{param}`: which host buffers they are is not known"
                        )
                        continue
                    if ba != bo:
                        continue
                    proved = status == "before" and sure
                    key = (id(a), proved)
                    if key in seen:
                        continue
                    seen.add(key)
                    if proved:
                        facts.races.append(Conflict(a, o, r.kernel, g, r, ba, True))
                    else:
                        facts.undecided.append(
                            f"`{a.global_access.base}` at line {a.location.row} and '{r.kernel}'s `{param}` (one buffer): "
                            + (
                                "the access is not proved before or after the wait"
                                if status != "before"
                                else "the prerequisite grid is not proved to run concurrently"
                            )
                        )
                if rg.opaque:
                    facts.undecided.append(f"'{r.kernel}' accesses global memory through operands not resolved")
    # a race proved at an access makes its undecided entries moot
    return facts
