"""Tensor memory (Blackwell TMEM) facts: lane quarters, allocations, reuse before the drain.

Everything here is read from the PTX ISA (tcgen05 chapter: lane access restrictions of
tcgen05.ld/st, tcgen05.alloc/dealloc, tcgen05.wait::ld, tcgen05.fence::before_thread_sync /
after_thread_sync and the memory-consistency rules of the tcgen05 operations) and from TK's
headers (types/tensor/{tt,tensor}.cuh, ops/group/memory/tile/tensor_to_register.cuh,
ops/thread/mma/tcgen05.cuh). Nothing was measured on a Blackwell GPU in this project.

Each query returns plain records; a record is produced only when the fact is proved from
constants and enumerated thread sets. Unknown thread sets, opaque offsets, loops whose structure
is not recognised, or any synchronisation the analysis does not follow give no record.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import expr as E
from ..model import ir
from .analysis import Analysis

TMEM_LANES = 128
TMEM_COLS = 512  # 32-bit columns per CTA (PTX ISA: tensor memory is 128 lanes x 512 columns)

_PROTECTIVE_SYNCS = ("block", "named", "cluster", "cluster_wait", "group", "grid")


def _const(e) -> int | None:
    if not isinstance(e, E.Expr):
        return None
    v = e.eval({})
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def phys_cols(t: ir.TileType | None) -> int | None:
    """32-bit TMEM columns a tt<T, R, C> occupies: TK packs 4/sizeof(T) elements per column
    (tt.cuh: `subtile` divides column offsets by 4 / sizeof(T))."""
    if t is None or t.kind != "tt":
        return None
    c, b = _const(t.cols), t.dtype_bytes
    if c is None or not b or b > 4:
        return None
    return -(-c * b // 4)


def _rows(t: ir.TileType | None) -> int | None:
    return _const(t.rows) if t is not None else None


def tmem_ops(model: ir.KernelModel, what: str):
    return [o for o in model.ops if o.kind == ir.TMEM_OP and o.tmem is not None and o.tmem.action == what]


def _allocator(op: ir.Op) -> str | None:
    return op.tmem.allocator if op.tmem is not None else None


def tc_mmas(model: ir.KernelModel):
    return [
        o for o in model.ops if o.kind == ir.MMA and o.mma is not None and o.mma.kind_of("acc") == "tmem" and o.operands
    ]


def element_lane(model: ir.KernelModel, ref: ir.Ref) -> int | None:
    """The lane base of the tile element a Ref names (all candidate elements agree, or the index
    is constant)."""
    tile = model.tmem_tiles.get(ref.name)
    if tile is None or not tile.elements or any(el is None for el in tile.elements):
        return None
    lanes = [_const(el[0]) for el in tile.elements]
    if ref.index:
        i = _const(ref.index[0])
        if i is not None and 0 <= i < len(lanes):
            return lanes[i]
    return lanes[0] if len(set(lanes)) == 1 else None


def element_offset(model: ir.KernelModel, ref: ir.Ref) -> tuple[int, int] | None:
    """(lane, column) of the tile element a Ref names, when all candidate elements agree or the
    index is constant."""
    tile = model.tmem_tiles.get(ref.name)
    if tile is None or not tile.elements:
        return None
    consts = []
    for el in tile.elements:
        if el is None:
            return None
        lane, col = _const(el[0]), _const(el[1])
        if lane is None or col is None:
            return None
        consts.append((lane, col))
    if ref.index:
        i = _const(ref.index[0])
        if i is not None and 0 <= i < len(consts):
            return consts[i]
    if len(set(consts)) == 1:
        return consts[0]
    return None


# ------------------------------------------------------------ lane quarters ----


@dataclass
class LaneViolation:
    op: ir.Op
    warp: int
    lanes: tuple[int, int]  # [lo, hi)
    quarter: tuple[int, int]


def lane_violations(an: Analysis) -> list[LaneViolation]:
    """tcgen05.ld/st by a warp outside its lane quarter. PTX ISA (tcgen05 "Access restrictions"):
    warp w of the CTA may access only TMEM lanes [32 (w % 4), 32 (w % 4) + 32)."""
    m = an.model
    out = []
    for op in tmem_ops(m, "load") + tmem_ops(m, "store"):
        if not op.operands:
            continue  # raw tcgen05.ld/st PTX: its TMEM address is not followed
        ex = an.threads.executing(op)
        if not ex or not op.guard.exact:
            continue
        ref = op.operands[0]
        base = element_lane(m, ref)
        assert op.tmem is not None
        t = op.tmem.tile_type
        rows = _rows(t)
        g = op.group_warps or 1
        if base is None or rows is None or g not in (1, 4, 8) or rows % g:
            continue
        per_warp = rows // g
        lane_off = op.tmem.lane_off
        if not isinstance(lane_off, E.Expr):
            continue
        warps = sorted({x // 32 for x in ex})
        for w in warps:
            vals = {lane_off.eval({"tid": 32 * w + ln, "tid_y": 0, "tid_z": 0}) for ln in (0, 31)}
            if len(vals) != 1:
                continue
            v = vals.pop()
            if not isinstance(v, int) or isinstance(v, bool):
                continue
            i = w % g  # warp within the group (group<N>::warpid())
            if g == 1:
                inner = 0
            elif g == 4:
                inner = 32 * i
            else:
                inner = 32 * (i % 4) + 16 * (i // 4)
            lo = base + v + inner
            hi = lo + per_warp
            q = (32 * (w % 4), 32 * (w % 4) + 32)
            if lo < q[0] or hi > q[1]:
                out.append(LaneViolation(op, w, (lo, hi), q))
                break
    return out


# ------------------------------------------------------------ allocations ----


@dataclass
class Overcommit:
    tile: ir.TmemTile
    index: int | None
    cols: tuple[int, int]
    budget: int
    allocator: ir.TmemAllocator | None


@dataclass
class Overlap:
    tile: ir.TmemTile
    i: int
    j: int
    a: tuple[int, int]
    b: tuple[int, int]
    use: ir.Op  # an access selecting the element by a runtime index


@dataclass
class Lifecycle:
    kind: str  # "no_dealloc" | "early_exit" | "over_budget"
    op: ir.Op
    other: ir.Op | None = None
    threads: frozenset[int] | None = None  # early_exit: the allocating threads that may return
    total: int | None = None  # over_budget: the columns asked for at once


def overcommits(an: Analysis) -> list[Overcommit]:
    m = an.model
    out = []
    for tile in m.tmem_tiles.values():
        alloc = m.tmem_allocators.get(tile.allocator) if tile.allocator else None
        budget = alloc.cols if alloc is not None and alloc.cols is not None else None
        if budget is None:
            continue
        pc = phys_cols(tile.type)
        if pc is None:
            continue
        for i, el in enumerate(tile.elements):
            col = _const(el[1]) if el is not None else None
            if col is None:
                continue
            if col < 0 or col + pc > budget:
                out.append(Overcommit(tile, i if tile.dims else None, (col, col + pc), budget, alloc))
    return out


def _runtime_indexed(m: ir.KernelModel, name: str) -> ir.Op | None:
    for o in m.ops:
        if o.kind in (ir.TMEM_OP, ir.MMA):
            for r in o.operands:
                if r.name == name and r.index and _const(r.index[0]) is None:
                    return o
    return None


def overlaps(an: Analysis) -> list[Overlap]:
    """Two elements of one array of TMEM tiles whose lanes x columns intersect, where the kernel
    picks the element by a runtime index (a ring of accumulators: while one slot is read, the
    next slot is written, so the slots are live at the same time by construction)."""
    m = an.model
    out = []
    for tile in m.tmem_tiles.values():
        if not tile.dims or len(tile.elements) < 2:
            continue
        pc, rows = phys_cols(tile.type), _rows(tile.type)
        if pc is None or rows is None:
            continue
        use = _runtime_indexed(m, tile.name)
        if use is None:
            continue
        boxes = []
        for el in tile.elements:
            if el is None or _const(el[0]) is None or _const(el[1]) is None:
                boxes.append(None)
            else:
                boxes.append((_const(el[0]), _const(el[1])))
        done = False
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                a, b = boxes[i], boxes[j]
                if a is None or b is None:
                    continue
                lanes = a[0] < b[0] + rows and b[0] < a[0] + rows
                cols = a[1] < b[1] + pc and b[1] < a[1] + pc
                if lanes and cols:
                    out.append(Overlap(tile, i, j, (a[1], a[1] + pc), (b[1], b[1] + pc), use))
                    done = True
                    break
            if done:
                break
    return out


def lifecycle(an: Analysis) -> list[Lifecycle]:
    """tcgen05.alloc / dealloc pairing for explicitly provisioned (non-managed) allocators, and
    several allocators of one CTA asking for more than 512 columns in total."""
    m = an.model
    out = []
    allocs = tmem_ops(m, "alloc")
    deallocs = tmem_ops(m, "dealloc")
    for a in allocs:
        if a.tmem is None or a.tmem.managed:
            continue  # the destructor deallocates on every exit from the scope
        name = a.tmem.allocator
        mine = [d for d in deallocs if d.tmem is not None and d.tmem.allocator == name]
        if a.loops:
            continue
        if not mine:
            if an.threads.executing(a) and a.guard.exact:
                out.append(Lifecycle("no_dealloc", a))
            continue
        ex_a = an.threads.executing(a)
        if not ex_a or not a.guard.exact:
            continue
        first_d = min(mine, key=lambda o: o.order)
        for x in m.ops:
            if x.kind != ir.EXIT or not (a.order < x.order < first_d.order) or x.loops or x.callers:
                continue
            ex_x = an.threads.executing(x)
            if ex_x is None or not x.guard.exact or x.guard.uniform:
                continue
            hit = ex_x & ex_a
            if hit:
                out.append(Lifecycle("early_exit", a, x, threads=hit))
                break
    # more than 512 columns provisioned at once
    live = []
    for a in sorted(allocs, key=lambda o: o.order):
        cols = a.tmem.cols if a.tmem is not None else None
        if not isinstance(cols, int) or a.loops:
            continue
        name = a.tmem.allocator if a.tmem is not None else None
        live = [
            (b, c)
            for b, c in live
            if not any(_allocator(d) == _allocator(b) and b.order < d.order < a.order for d in deallocs)
        ]
        total = cols + sum(c for _, c in live)
        if live and total > TMEM_COLS and all(_allocator(b) != name for b, _ in live):
            ex_a, ex_b = an.threads.executing(a), an.threads.executing(live[0][0])
            if ex_a and ex_b and a.guard.exact and live[0][0].guard.exact:
                out.append(Lifecycle("over_budget", a, live[0][0], total=total))
        live.append((a, cols))
    return out


# ------------------------------------------------------------ reuse before the drain ----


@dataclass
class DrainIssue:
    kind: str  # no_token_wait | arrive_before_wait_ld | no_fence_before | no_sync_lanes
    #                    | no_fence_after_token | no_fence_after_commit | token_count_short
    #                    | token_local_only
    op: ir.Op  # the site reported
    other: ir.Op  # the related site (the reader's load, the MMA, the wait)
    barrier: str | None = None
    tile: str | None = None  # the TMEM tile's name
    mma_threads: frozenset[int] | None = None  # no_token_wait: who runs the MMA
    readers: frozenset[int] | None = None  # no_token_wait: who reads the tile
    others: frozenset[int] | None = None  # no_sync_lanes: readers the arrive does not order
    arrive: ir.Op | None = None  # token_local_only: a local arrive on the token
    wait: ir.Op | None = None  # token_count_short: the MMA side's wait
    init: int | None = None  # token_count_short: the token's init count,
    per_cta: int | None = None  # the readers' arrivals per CTA and in all
    total: int | None = None


def _may_run(an: Analysis, op: ir.Op, threads: frozenset[int]) -> bool:
    ex = an.threads.executing(op)
    return ex is None or not op.guard.exact or bool(ex & threads)


def _surely_threads(an: Analysis, op: ir.Op) -> frozenset[int] | None:
    ex = an.threads.executing(op)
    return ex if ex is not None and op.guard.exact else None


def _arrivers(an: Analysis, op: ir.Op) -> frozenset[int] | None:
    return an.threads.issuers(op) if op.guard.exact else None


def _tainted(an: Analysis, readers: frozenset[int]) -> tuple[set[str], bool]:
    """Barriers whose phases can complete only after some reader thread (or a thread that waited
    for one) arrived: a wait on any other barrier orders nothing after the readers. A thread
    that waits on such a barrier taints only what it signals after that wait (later in program
    order, or anywhere in a loop both are in: the next iteration). Over-approximated (barrier
    names, thread ids of both CTAs merged); unknown issuers taint."""
    m = an.model
    bars: set[str] = set()
    waits: list[tuple[ir.Op, frozenset[int]]] = []  # tainted waits and their threads

    def after_tainted_wait(o: ir.Op, thr: frozenset[int]) -> bool:
        return any(wt & thr and (w.order < o.order or set(w.loops) & set(o.loops)) for w, wt in waits)

    changed = True
    while changed:
        changed = False
        for o in m.ops:
            if o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD) and o.barrier is not None:
                if o.barrier.name in bars:
                    continue
                thr = _arrivers(an, o)
                if thr is None or thr & readers or after_tainted_wait(o, thr):
                    bars.add(o.barrier.name)
                    changed = True
            elif o.kind == ir.MBAR_WAIT and o.barrier is not None and o.barrier.name in bars:
                if any(w is o for w, _ in waits):
                    continue
                thr = an.threads.executing(o)
                if thr is None:
                    return bars, False
                waits.append((o, thr))
                changed = True
    return bars, True


def _in_loop_body(op: ir.Op, outer: int) -> bool:
    return bool(op.loops) and op.loops[0] == outer


def _mentions_rank(guard: ir.Guard) -> bool:
    return any(v.name == "cta_rank" for c in guard.uniform for v in c.free_vars()) or any(
        v.name == "cta_rank" for v in guard.thread.free_vars()
    )


def _pair_count(an, mm, token_waits, direct, readers, out, reported, name):
    """A cta_group::2 MMA writes the TMEM of both CTAs of the pair: its token must count the
    readers of both. Proved only for the shape: every arrive on the token is a remote arrive to
    one constant CTA, run by both CTAs alike (no rank condition), and the init count is smaller
    than the arrivals of both CTAs' readers in one iteration."""
    m = an.model
    for w in token_waits:
        b = w.barrier.name
        if b not in direct:
            continue
        inits = [o for o in m.ops if o.kind == ir.MBAR_INIT and o.barrier is not None and o.barrier.name == b]
        arrs = [o for o in m.ops if o.kind == ir.MBAR_ARRIVE and o.barrier is not None and o.barrier.name == b]
        if len(inits) != 1 or not arrs:
            return
        init_count = _const(inits[0].count)
        if init_count is None:
            return
        if all(
            a.mbar is None or (not a.mbar.remote and a.mbar.cta is None and not a.mbar.multicast) for a in arrs
        ) and any(v.name == "cta_rank" for c in mm.guard.uniform for v in c.free_vars()):
            # every arrive on the token is local to its CTA, by readers that run in every CTA (no
            # rank condition), while the MMA runs in one CTA only: the peer's readers never reach
            # the token the MMA side waits on
            if all(_arrivers(an, a) and _arrivers(an, a) <= readers and not _mentions_rank(a.guard) for a in arrs):
                key = ("pair_local", b)
                if key not in reported:
                    reported.add(key)
                    out.append(DrainIssue("token_local_only", w, mm, b, tile=name, arrive=arrs[0]))
            return
        per_cta = 0
        for a in arrs:
            thr = _arrivers(an, a)
            cnt = _const(a.count)
            if (
                not thr
                or cnt is None
                or a.mbar is None
                or not a.mbar.remote
                or _const(a.mbar.cta) is None
                or _mentions_rank(a.guard)
                or not thr <= readers
            ):
                return
            lp = a.loops[-1] if a.loops else None
            if lp is not None and any(o.loops and o.loops[-1] == lp and o is not a for o in arrs):
                return
            per_cta += len(thr) * cnt
        total = 2 * per_cta
        if init_count < total:
            key = ("pair_count", b)
            if key not in reported:
                reported.add(key)
                out.append(
                    DrainIssue(
                        "token_count_short",
                        inits[0],
                        mm,
                        b,
                        tile=name,
                        init=init_count,
                        per_cta=per_cta,
                        total=total,
                        wait=w,
                    )
                )
        return


def drain_issues(an: Analysis) -> list[DrainIssue]:
    m = an.model
    out: list[DrainIssue] = []
    mmas = tc_mmas(m)
    loads = [o for o in tmem_ops(m, "load") if o.operands]
    if not mmas or not loads:
        return out
    by_tile: dict[str, tuple[list, list]] = {}
    for mm in mmas:
        by_tile.setdefault(mm.operands[0].name, ([], []))[0].append(mm)
    for ld in loads:
        if ld.operands[0].name in by_tile:
            by_tile[ld.operands[0].name][1].append(ld)
    commit_bars = {
        o.barrier.name
        for o in m.ops
        if o.kind == ir.MBAR_ARRIVE and o.barrier is not None and o.mbar is not None and o.mbar.tcgen05_commit
    }
    reported: set = set()

    def report(key: tuple, kind: str, *fields, **facts) -> None:
        # one issue per kind and site, however many paths lead to it
        if key not in reported:
            reported.add(key)
            out.append(DrainIssue(kind, *fields, **facts))

    def fences(body, fence_kind: str, lo: int, hi: int, thr) -> list:
        return [
            o
            for o in body
            if o.kind == ir.FENCE and o.fence_kind == fence_kind and lo < o.order < hi and _may_run(an, o, thr)
        ]

    for name, (ms, ls) in by_tile.items():
        if not ls:
            continue
        reader_sets = [_surely_threads(an, ld) for ld in ls]
        if any(r is None for r in reader_sets):
            continue
        readers = frozenset().union(*reader_sets)
        tainted, ok = _tainted(an, readers)
        if not ok:
            continue
        # barriers a reader thread arrives on itself (the TMEM token)
        direct = set()
        for o in m.ops:
            if o.kind == ir.MBAR_ARRIVE and o.barrier is not None:
                thr = _arrivers(an, o)
                if thr and thr & readers:
                    direct.add(o.barrier.name)
        token_bars: set[str] = set()
        # barriers the readers wait on before reading (the MMA's completion)
        read_waits = {
            o.barrier.name
            for o in m.ops
            if o.kind == ir.MBAR_WAIT
            and o.barrier is not None
            and any(o.order < ld.order for ld in ls)
            and (an.threads.executing(o) or frozenset()) & readers
        }
        for mm in ms:
            mthr = _surely_threads(an, mm)
            if not mthr or not mm.loops or mthr & readers:
                continue
            outer = mm.loops[0]
            body = [o for o in m.ops if _in_loop_body(o, outer)]
            # the loop hands the tile to the readers in every iteration (a commit they wait on, in
            # the loop): only then is it written again after a read; an accumulation loop followed
            # by one commit after it (one tile per CTA) reuses nothing
            if not any(
                o.kind == ir.MBAR_ARRIVE
                and o.mbar is not None
                and o.mbar.tcgen05_commit
                and o.barrier is not None
                and o.barrier.name in read_waits
                for o in body
            ):
                continue
            token_waits = [
                o
                for o in body
                if o.kind == ir.MBAR_WAIT
                and o.barrier is not None
                and o.barrier.name in tainted
                and _may_run(an, o, mthr)
            ]
            syncs = [
                o
                for o in body
                if o.kind in (ir.SYNC, ir.NAMED_ARRIVE) and o.sync_kind in _PROTECTIVE_SYNCS and _may_run(an, o, mthr)
            ]
            token_bars |= {w.barrier.name for w in token_waits}
            if not token_waits and not syncs:
                report(
                    ("no_token_wait", name, outer),
                    "no_token_wait",
                    mm,
                    ls[0],
                    None,
                    mma_threads=mthr,
                    readers=readers,
                    tile=name,
                )
                continue
            if mm.mma is not None and mm.mma.ncta == 2:
                _pair_count(an, mm, token_waits, direct, readers, out, reported, name)
            before = [w for w in token_waits if w.order < mm.order and w.barrier.name in direct]
            if before and not syncs:
                w = max(before, key=lambda o: o.order)
                if not fences(body, "tcgen05_after", w.order, mm.order, mthr):
                    report(
                        ("no_fence_after_token", w.location.row, w.location.column),
                        "no_fence_after_token",
                        w,
                        mm,
                        w.barrier.name,
                        tile=name,
                    )
        # readers: the token arrive after their loads
        for ld, rthr in zip(ls, reader_sets):
            if not ld.loops:
                continue
            outer = ld.loops[0]
            body = [o for o in m.ops if _in_loop_body(o, outer)]
            arrives = [
                o
                for o in body
                if o.kind == ir.MBAR_ARRIVE
                and o.barrier is not None
                and o.barrier.name in token_bars
                and o.order > ld.order
                and o.guard.exact
            ]
            for a in arrives:
                athr = _arrivers(an, a)
                if not athr or not athr & rthr:
                    continue
                mid = [o for o in body if ld.order < o.order < a.order]
                wlds = [
                    o
                    for o in mid
                    if o.kind == ir.TMEM_OP
                    and o.tmem is not None
                    and o.tmem.action == "wait_ld"
                    and _may_run(an, o, athr)
                ]
                if not wlds:
                    report(
                        ("arrive_before_wait_ld", a.location.row, a.location.column),
                        "arrive_before_wait_ld",
                        a,
                        ld,
                        a.barrier.name,
                        tile=name,
                    )
                    continue
                wl = max(wlds, key=lambda o: o.order)
                before_fences = fences(mid, "tcgen05_before", wl.order, a.order, athr)
                if not before_fences:
                    report(
                        ("no_fence_before", a.location.row, a.location.column),
                        "no_fence_before",
                        a,
                        wl,
                        a.barrier.name,
                        tile=name,
                    )
                    continue
                # the other lanes of the reading warps: their loads must be ordered before the
                # single arriving lane by a sync after their fence
                others = rthr - athr
                if others:
                    f = min(before_fences, key=lambda o: o.order)
                    syncs = [o for o in mid if o.kind in (ir.SYNC, ir.NAMED_ARRIVE) and o.order > f.order]
                    if not syncs:
                        report(
                            ("no_sync_lanes", a.location.row, a.location.column),
                            "no_sync_lanes",
                            a,
                            ld,
                            a.barrier.name,
                            tile=name,
                            others=others,
                        )
        # readers: wait on the commit barrier, then fence::after_thread_sync, then tcgen05.ld
        for ld, rthr in zip(ls, reader_sets):
            if not ld.loops:
                continue
            outer = ld.loops[0]
            body = [o for o in m.ops if _in_loop_body(o, outer)]
            waits = [
                o
                for o in body
                if o.kind == ir.MBAR_WAIT
                and o.barrier is not None
                and o.barrier.name in commit_bars
                and o.order < ld.order
                and o.guard.exact
                and (an.threads.executing(o) or frozenset()) >= rthr
            ]
            if not waits:
                continue
            w = max(waits, key=lambda o: o.order)
            if not fences(body, "tcgen05_after", w.order, ld.order, rthr):
                report(
                    ("no_fence_after_commit", w.location.row, w.location.column),
                    "no_fence_after_commit",
                    w,
                    ld,
                    w.barrier.name,
                    tile=name,
                )
    return out


@dataclass
class Clobber:
    acc: ir.TmemTile  # the accumulator whose value is carried across iterations
    other: ir.TmemTile  # a tile of the same allocation written in between
    acc_cols: tuple[int, int]
    other_cols: tuple[int, int]
    accumulate: ir.Op  # the accumulating MMA (reads the value)
    write: ir.Op  # the write into the other tile, in every iteration
    iterations: tuple[int, int]  # two iterations in which the MMA accumulates


def _box(tile: ir.TmemTile) -> tuple[int, int, int, int] | None:
    """(lane, rows, column, physical columns) of a scalar TMEM tile at a constant offset."""
    if tile.dims or len(tile.elements) != 1 or tile.elements[0] is None:
        return None
    lane, col = (_const(x) for x in tile.elements[0])
    pc, rows = phys_cols(tile.type), _rows(tile.type)
    if None in (lane, col, pc, rows):
        return None
    return lane, rows, col, pc


def clobbers(an: Analysis) -> list[Clobber]:
    """Two TMEM tiles of one allocation whose lanes x columns intersect, where one is an
    accumulator carried across the iterations of a loop (a `mma*` into it accumulates in two
    iterations) and the other is written (an MMA into it, or tcgen05.st) in every iteration of
    that loop: the write lands between two accumulations and destroys the partial sum. Tiles
    that merely alias (P written over S after S was read, FA4 style) are not accumulators and
    are left alone."""
    from .. import solver

    m = an.model
    out: list[Clobber] = []
    writes = [
        o
        for o in m.ops
        if (o.kind == ir.MMA and o.mma is not None and o.mma.family == "tcgen05")
        or (o.kind == ir.TMEM_OP and o.tmem is not None and o.tmem.action == "store")
    ]
    tiles = [t for t in m.tmem_tiles.values() if _box(t) is not None]
    for a in tiles:
        for b in tiles:
            if a is b or a.allocator is None or a.allocator != b.allocator:
                continue
            la, ra, ca, pa = _box(a)
            lb, rb, cb, pb = _box(b)
            if not (la < lb + rb and lb < la + ra and ca < cb + pb and cb < ca + pa):
                continue
            for acc in tc_mmas(m):
                if acc.operands[0].name != a.name or (acc.mma is None or not acc.mma.accumulate) or not acc.loops:
                    continue
                loop = m.loops.get(acc.loops[-1])
                if loop is None:
                    continue
                k = loop.counter
                conds = [c for c in acc.guard.uniform]
                if any(c.is_opaque() for c in conds) or acc.guard.thread.depends_on(E.LOOP):
                    continue
                k2 = E.Var(k.name + "@2", E.LOOP)
                both = (
                    [E.binop(">=", k, E.Const(0)), E.binop(">", k2, k)]
                    + conds
                    + [E.substitute(c, {k.name: k2}) for c in conds]
                )
                if any(v.kind == E.LOOP and v.name not in (k.name, k2.name) for c in both for v in c.free_vars()):
                    continue
                wit = solver.witness(E.Const(True), an.solver_timeout_ms, assume=tuple(both))
                if not wit or k.name not in wit or k2.name not in wit:
                    continue
                for w in writes:
                    if not w.operands or w.operands[0].name != b.name or loop.id not in w.loops:
                        continue
                    if any(c.depends_on(E.LOOP) or c.is_opaque() for c in w.guard.uniform):
                        continue  # not in every iteration
                    if not w.guard.exact and w.kind == ir.MMA:
                        continue
                    out.append(
                        Clobber(a, b, (ca, ca + pa), (cb, cb + pb), acc, w, (int(wit[k.name]), int(wit[k2.name])))
                    )
                    break
                else:
                    continue
                break
    return out


def facts(an: Analysis, name: str):
    fn = {
        "lanes": lane_violations,
        "overcommit": overcommits,
        "overlap": overlaps,
        "clobber": clobbers,
        "lifecycle": lifecycle,
        "drain": drain_issues,
    }[name]
    return an.fact(f"tmem.{name}", fn)
