"""Accumulator facts: which accesses of an MMA's accumulator or operands can
happen while the MMA may still be in flight, along the program paths of each
thread.

The model's ops are in program order; a thread's path visits the ops whose
guard it satisfies, and at the end of a loop body either goes back to the
loop's first op (when the loop may run twice or more) or leaves the loop.
Every loop is assumed to run at least once (a zero-trip loop would only hide
ops, never create a path), so a path found here is a real path whenever the
loops it uses run.

A path is a *witness* only when it is certain: an op that may or may not run
for the thread (inexact guard, unknown thread set, a uniform condition that
is not the same as the endpoints') is treated, conservatively, as running
when it would protect (a wait, a barrier) and as irrelevant otherwise. So a
finding means: every op that could have made the access safe is provably
absent from this path.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis
from .. import solver

MAX_GROUPS = 16


# --------------------------------------------------------------- flow ----

class Flow:
    """Program-order successor structure over the model's ops."""

    def __init__(self, an: Analysis):
        self.an = an
        self.model = an.model
        self.ops = sorted(an.model.ops, key=lambda o: o.order)
        self.index = {id(o): i for i, o in enumerate(self.ops)}
        self.first: dict[int, int] = {}
        for i, o in enumerate(self.ops):
            for lid in o.loops:
                self.first.setdefault(lid, i)

    def may_repeat(self, lid: int) -> bool:
        loop = self.model.loops.get(lid)
        if loop is None:
            return True
        if loop.trip is None:
            return True
        v = loop.trip.eval({})
        return not (isinstance(v, int) and v <= 1)

    def succ(self, i: int) -> list[tuple[int, bool]]:
        """(next index, via a back edge). len(ops) means the end of the kernel."""
        out = []
        cur = self.ops[i].loops
        nxt = self.ops[i + 1].loops if i + 1 < len(self.ops) else ()
        # loops left between i and i+1, innermost first
        for lid in reversed(cur):
            if lid in nxt:
                break
            if self.may_repeat(lid):
                out.append((self.first[lid], True))
        out.append((i + 1, False))
        return out

    # -- who runs an op ---------------------------------------------------
    def runs(self, op: ir.Op, t: int, ctx_uniform: tuple = ()) -> bool | None:
        """True: thread t certainly runs op (given the endpoints' uniform
        conditions); False: certainly not; None: unknown."""
        ex = self.an.threads.executing(op)
        if ex is None:
            return None
        if t not in ex:
            return False if op.guard.exact else None
        if not op.guard.exact:
            return None
        if op.guard.uniform and not all(u in ctx_uniform for u in op.guard.uniform):
            return None
        return True

    def same_iteration_between(self, a: ir.Op, b: ir.Op) -> list[ir.Op]:
        """Ops strictly between a and b in program order (no back edge)."""
        i, j = self.index[id(a)], self.index[id(b)]
        return self.ops[i + 1:j] if i < j else []


def flow(an: Analysis) -> Flow:
    return an.fact("flow", Flow)


@dataclass
class PathHit:
    target: ir.Op
    back_edge: bool
    groups: int


def search(fl: Flow, start: ir.Op, t: int, is_target, blocks, step=None, uniform: tuple = (),
           state0: int = 0) -> list[PathHit]:
    """Targets reachable from just after `start` on thread t's paths without
    passing an op for which `blocks(op, runs, state)` is True. `step(op, runs,
    state)` updates an integer state (e.g. commit groups since start)."""
    n = len(fl.ops)
    i0 = fl.index[id(start)]
    seen = set()
    hits: dict[int, PathHit] = {}
    q = deque()
    for j, back in fl.succ(i0):
        q.append((j, state0, back))
    while q:
        j, st, back = q.popleft()
        if j >= n:
            continue
        key = (j, st, back)
        if key in seen:
            continue
        seen.add(key)
        op = fl.ops[j]
        r = fl.runs(op, t, uniform)
        if r is not False and is_target(op) and r is True:
            if id(op) not in hits:
                hits[id(op)] = PathHit(op, back, st)
        if blocks(op, r, st):
            continue
        if op.kind == ir.EXIT and r is True:
            continue
        if step is not None and r is not False:
            st = step(op, r, st)
        for k, b2 in fl.succ(j):
            q.append((k, st, back or b2))
    return list(hits.values())


# ------------------------------------------------------- MMA specifics ----

def is_wgmma(op: ir.Op) -> bool:
    """A Hopper wgmma: warpgroup scope, register accumulator (tcgen05 MMAs accumulate in TMEM)."""
    return op.kind == ir.MMA and op.scope == "warpgroup" and op.detail.get("acc_kind") == "regtile"


def acc_ref(op: ir.Op) -> ir.Ref | None:
    if op.kind == ir.MMA and op.operands and op.detail.get("acc_kind") == "regtile":
        return op.operands[0]
    return None


def smem_operands(op: ir.Op) -> list[ir.Ref]:
    """The shared-memory operands (a and/or b) of an MMA."""
    out = []
    roles = [r for r in ("acc", "a", "b") if f"{r}_kind" in op.detail]
    for role, ref in zip(roles, op.operands):
        if role in ("a", "b") and op.detail.get(f"{role}_kind") == "buffer":
            out.append(ref)
    return out


def reg_a_operand(op: ir.Op) -> ir.Ref | None:
    roles = [r for r in ("acc", "a", "b") if f"{r}_kind" in op.detail]
    for role, ref in zip(roles, op.operands):
        if role == "a" and op.detail.get("a_kind") == "regtile":
            return ref
    return None


def refs_may_alias(a: ir.Ref, b: ir.Ref, ta: int | None = None, tb: int | None = None,
                   timeout_ms: int = 500) -> bool | None:
    """True: certainly the same object; False: certainly different; None: unknown.
    Indices may depend on the thread (evaluated at ta / tb)."""
    if a.name != b.name:
        return False
    if not a.index and not b.index:
        return True
    if len(a.index) != len(b.index):
        return None
    verdict = True
    for x, y in zip(a.index, b.index):
        if ta is not None:
            x = E.substitute(x, {"tid": E.Const(ta)})
        if tb is not None:
            y = E.substitute(y, {"tid": E.Const(tb)})
        if x == y:
            continue
        cx, cy = x.eval({}), y.eval({})
        if cx is not None and cy is not None:
            if cx != cy:
                return False
            continue
        verdict = None
    return verdict


def wait_retires(op: ir.Op, groups_after: int) -> bool | None:
    """Does this mma_async_wait<N> retire an MMA followed by `groups_after`
    commit groups? (wgmma.wait_group N: at most N most recent groups pending)."""
    n = op.count.eval({}) if op.count is not None else 0
    if not isinstance(n, int):
        return None
    return groups_after >= n


def commits(op: ir.Op) -> bool:
    """TK's mma_* commit one wgmma group each; mma_commit_group commits one."""
    return is_wgmma(op) or op.kind == ir.MMA_COMMIT


def in_flight_hits(an: Analysis, mma: ir.Op, t: int, is_target) -> list[PathHit]:
    """Targets thread t reaches after `mma` while the MMA may be in flight."""
    fl = flow(an)

    def blocks(op, r, st):
        if r is True and is_target(op):
            return True             # report the first access on each path only
        if op.kind == ir.MMA_WAIT and r is not False:
            w = wait_retires(op, st)
            return w is not False   # retired, or unknown: not a witness
        return False

    def step(op, r, st):
        return min(st + 1, MAX_GROUPS) if commits(op) else st

    return search(fl, mma, t, is_target, blocks, step, mma.guard.uniform)


def representatives(an: Analysis, op: ir.Op, relevant: list[ir.Op]) -> list[int]:
    """One thread per class of threads (running `op`) that run the same subset
    of `relevant` ops: enough to cover every distinct path."""
    ex = an.threads.executing(op)
    if ex is None:
        return []
    sets = [an.threads.executing(o) for o in relevant]
    classes: dict[tuple, int] = {}
    for t in sorted(ex):
        sig = tuple((s is None) or (t in s) for s in sets)
        classes.setdefault(sig, t)
    return sorted(classes.values())


def uniform_feasible(a: ir.Op, b: ir.Op, back_edge: bool, timeout_ms: int = 1000) -> bool:
    """The two ops' uniform conditions can hold together (and do not refer to
    loop counters across a back edge)."""
    conds = tuple(a.guard.uniform) + tuple(c for c in b.guard.uniform if c not in a.guard.uniform)
    if not conds:
        return True
    if back_edge and any(c.depends_on(E.LOOP) for c in conds):
        return False
    if any(c.is_opaque() for c in conds):
        return False
    w = solver.witness(E.conj(*conds), timeout_ms)
    return w is not None


# ------------------------------------------------------------ shapes ----

def _dims(t: ir.TileType | None):
    if t is None or t.rows is None or t.cols is None:
        return None
    r, c = t.rows.eval({}), t.cols.eval({})
    if not isinstance(r, int) or not isinstance(c, int):
        return None
    return r, c


def mma_shape_problems(op: ir.Op) -> list[str] | None:
    """What TK's static_asserts on warpgroup::mma_* would reject, in element
    terms (16-bit A/B types only). None: not decidable."""
    api = op.api.rsplit("::", 1)[-1]
    trans = api.split("_", 1)[1] if "_" in api else "AB"
    d_t, a_t, b_t = op.detail.get("acc_type"), op.detail.get("a_type"), op.detail.get("b_type")
    D, A, B = _dims(d_t), _dims(a_t), _dims(b_t)
    if D is None or A is None or B is None or a_t.dtype_bytes != 2 or b_t.dtype_bytes != 2 or d_t.kind != "rt":
        return None
    out = []
    a_reg = op.detail.get("a_kind") == "regtile"
    # B: N and K
    if trans in ("AB", "AtB"):
        b_k, n = B
    else:
        n, b_k = B
    if a_reg:
        m_rows, a_k = A                     # per-warp rows
        want_d_rows = m_rows
    else:
        if trans in ("AB", "ABt"):
            m_rows, a_k = A
        else:
            a_k, m_rows = A
        if m_rows != 64:
            out.append(f"the shared A tile gives M = {m_rows} rows, a warpgroup wgmma needs 64")
        want_d_rows = m_rows // 4
    if D[0] != want_d_rows:
        out.append(f"the accumulator has {D[0]} rows per warp, the MMA produces {want_d_rows}")
    if D[1] != n:
        out.append(f"the accumulator has {D[1]} columns, the MMA produces N = {n}")
    if a_k != b_k:
        out.append(f"A has K = {a_k}, B has K = {b_k}")
    if a_t.dtype and b_t.dtype and a_t.dtype != b_t.dtype:
        out.append(f"A is {a_t.dtype}, B is {b_t.dtype} (they must match)")
    if d_t.dtype and d_t.dtype not in ("float", "half"):
        out.append(f"the accumulator is {d_t.dtype}; wgmma accumulates in float or half")
    return out


# ------------------------------------------------- operands in flight ----

REFILL_KINDS = (ir.TMA_LOAD, ir.SMEM_ACCESS, ir.CP_ASYNC)


def is_refill(op: ir.Op) -> bool:
    if op.buffer is None:
        return False
    if op.kind == ir.TMA_LOAD:
        return True
    return op.kind == ir.SMEM_ACCESS and op.detail.get("access") == "write"


@dataclass
class OperandRace:
    mma: ir.Op
    refill: ir.Op
    operand: ir.Ref
    warp: int                     # an issuing warp whose wait is not ordered before the refill
    release: ir.Op | None = None  # the arrive that lets the refill go (cross-role case)
    barrier: str | None = None
    init_count: int | None = None
    early_arrivals: int | None = None


def _first_index(r: ir.Ref):
    return r.index[0] if r.index else None


def _waits_before(fl: Flow, mma: ir.Op, target: ir.Op, t: int) -> bool | None:
    """On every path of thread t from mma to target (same iteration or later),
    a wait retires mma? True / False (a path without) / None (unknown)."""
    hits = in_flight_hits(fl.an, mma, t, lambda o: o is target)
    return False if hits else True


def operand_races(an: Analysis) -> list[OperandRace]:
    return an.fact("accumulator.operand_races", _operand_races)


def _operand_races(an: Analysis) -> list[OperandRace]:
    fl = flow(an)
    out: list[OperandRace] = []
    inits: dict[str, list[ir.Op]] = {}
    for o in fl.ops:
        if o.kind == ir.MBAR_INIT and o.barrier is not None:
            inits.setdefault(o.barrier.name, []).append(o)
    for mma in fl.ops:
        if not is_wgmma(mma) or not mma.guard.exact:
            continue
        ex = an.threads.executing(mma)
        if not ex:
            continue
        warps = sorted({t // 32 for t in ex})
        for opnd in smem_operands(mma):
            refills = [o for o in fl.ops if is_refill(o) and o.buffer.name == opnd.name]
            if not refills:
                continue
            # (1) the issuing threads themselves refill the operand with no wait in between
            for w in warps:
                for t in (32 * w,):
                    hits = in_flight_hits(an, mma, t, lambda o: is_refill(o) and o.buffer.name == opnd.name and
                                          refs_may_alias(o.buffer, opnd, t, t) is True)
                    for h in hits:
                        if uniform_feasible(mma, h.target, h.back_edge):
                            out.append(OperandRace(mma, h.target, opnd, w))
            # (2) another role refills after waiting on a barrier the issuing warps arrive on
            if not mma.loops:
                continue
            inner = mma.loops[-1]
            candidates: list = []
            safe_barriers: set[str] = set()
            arrives = [o for o in fl.ops if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT) and o.barrier is not None
                       and inner in o.loops and o.order > mma.order]
            for rel in arrives:
                bname = rel.barrier.name
                if _first_index(rel.barrier) != _first_index(opnd):
                    continue
                cnts = {o.count.eval({}) if o.count is not None else None for o in inits.get(bname, [])}
                if len(cnts) != 1:
                    continue
                init_count = cnts.pop()
                if not isinstance(init_count, int) or init_count <= 0:
                    continue
                # every arrival on this barrier in the releasing loop iteration
                same = [o for o in fl.ops if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT) and o.barrier is not None
                        and o.barrier.name == bname]
                if any(o.loops[:len(mma.loops)] != mma.loops for o in same if o.role_hint == rel.role_hint) or \
                        any(inner not in o.loops for o in same if an.threads.executing(o) and
                            an.threads.executing(o) & ex):
                    continue
                same = [o for o in same if inner in o.loops]
                issuers = [(o, an.threads.issuers(o)) for o in same]
                if any(s is None or not o.guard.exact or o.guard.uniform != mma.guard.uniform for o, s in issuers):
                    continue
                per = []
                bad = False
                for o, s in issuers:
                    c = o.count.eval({}) if (o.kind == ir.MBAR_ARRIVE and o.count is not None) else 1
                    if not isinstance(c, int):
                        bad = True
                    per.append((o, s, c))
                if bad:
                    continue
                # the refills gated by a wait on this barrier, slot matching the buffer slot
                gated = []
                for r in refills:
                    if not r.loops:
                        continue
                    # a wait of the refilling threads themselves (another role's wait gates nothing here)
                    r_threads = an.threads.issuers(r) or an.threads.executing(r)
                    waits = [o for o in fl.ops if o.kind == ir.MBAR_WAIT and o.barrier is not None and
                             o.barrier.name == bname and o.loops == r.loops and o.order < r.order
                             and r_threads and (an.threads.executing(o) or frozenset()) >= r_threads]
                    if not waits:
                        continue
                    wt = waits[-1]
                    if _first_index(wt.barrier) is None and _first_index(r.buffer) is not None:
                        continue
                    if _first_index(wt.barrier) != _first_index(r.buffer):
                        continue
                    gated.append(r)
                if not gated:
                    continue
                releases_early = False
                for w in warps:
                    tw = 32 * w
                    early = 0
                    for o, s, c in per:
                        for t in s:
                            if _ordered_after_wait(an, fl, mma, o, tw, t):
                                continue
                            early += c
                    if early >= init_count:
                        releases_early = True
                        for r in gated:
                            tr = min(an.threads.issuers(r) or an.threads.executing(r) or [None]) \
                                if (an.threads.issuers(r) or an.threads.executing(r)) else None
                            if tr is None:
                                continue
                            tails_mma = opnd.index[1:]
                            tails_r = r.buffer.index[1:]
                            ok = True
                            for x, y in zip(tails_mma, tails_r):
                                xv = E.substitute(x, {"tid": E.Const(tw)}).eval({})
                                yv = E.substitute(y, {"tid": E.Const(tr)}).eval({})
                                if xv is None or yv is None:
                                    if x != y:
                                        ok = None
                                elif xv != yv:
                                    ok = False
                            if ok is not True:
                                continue
                            candidates.append((OperandRace(mma, r, opnd, w, rel, bname, init_count, early), r))
                        break
                if not releases_early:
                    safe_barriers.add(bname)
            # a refill that also waits on a barrier every issuing warp releases only after its own
            # retiring wait (a later handshake of the same iteration) is ordered after the wgmma
            for race, r in candidates:
                r_threads = an.threads.issuers(r) or an.threads.executing(r)
                if any(o.kind == ir.MBAR_WAIT and o.barrier is not None and o.barrier.name in safe_barriers
                       and o.loops == r.loops and o.order < r.order and r_threads
                       and (an.threads.executing(o) or frozenset()) >= r_threads for o in fl.ops):
                    continue
                out.append(race)
    # one race per (refill, mma)
    seen, uniq = set(), []
    for r in out:
        k = id(r.refill)
        if k not in seen:
            seen.add(k)
            uniq.append(r)
    return uniq


def _ordered_after_wait(an: Analysis, fl: Flow, mma: ir.Op, arrive: ir.Op, tw: int, t: int) -> bool:
    """Is thread t's arrival at `arrive` ordered after warp(tw)'s retiring wait of mma?"""
    if t // 32 == tw // 32:
        return not in_flight_hits(an, mma, t, lambda o: o is arrive)
    # a barrier both threads pass between tw's retiring wait and t's arrival
    for s in fl.same_iteration_between(mma, arrive):
        if s.kind != ir.SYNC or s.detail.get("sync_kind") in ("warp", None):
            continue
        ex = an.threads.executing(s)
        if ex is None or tw not in ex or t not in ex or not s.guard.exact:
            continue
        if not in_flight_hits(an, mma, tw, lambda o: o is s):
            return True
    return False
