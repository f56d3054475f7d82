"""TK306: a shared buffer is overwritten while a tma::store_async may still be reading it."""

from tkcheck import solver
from tkcheck.checks import bulk_stores, paths
from tkcheck.checks.threads import describe
from tkcheck.model import expr as E
from tkcheck.model import ir
from tkcheck.rule import Confirm, Explains, Rule

from ._common import HEADER, finding, related


def check(an):
    """The bulk-store engine's reuses (`checks/bulk_stores.py`): a write into the source of a
    store its thread's read waits do not cover; then the hand-over across roles below."""
    m = an.model
    out = []
    for ru in bulk_stores.reuses(an):
        st, o, iss = ru.store, ru.write, ru.issuers
        if o is None or ru.status not in ("unwaited", "unordered-writers"):
            continue
        if ru.status == "unordered-writers":
            out.append(
                finding(
                    "TK306",
                    f"'{o.buffer}' is overwritten by {o.api} on {describe(ru.writers, an.threads.n)} while the "
                    f"tma::store_async from it may still be reading it: the store_async_read_wait runs in the "
                    f"storing thread(s) ({describe(iss, an.threads.n)}) and no barrier orders the other "
                    f"writers after it",
                    o.location,
                    related=[
                        related(st, f"tma::store_async reads '{st.buffer}' asynchronously here"),
                        *([related(ru.wait, "the read wait, in the storing thread")] if ru.wait is not None else []),
                    ],
                    witness={
                        "buffer": str(o.buffer),
                        "store_line": st.location.row,
                        "overwrite_line": o.location.row,
                        "unordered_writers": describe(ru.writers, an.threads.n),
                    },
                    help="after store_async_read_wait(), synchronise the storing lane with the other writers "
                    "(`__syncwarp()` within a warp, a group or block barrier across warps) before the "
                    "tile is written again",
                )
            )
            continue
        # raw PTX (`cp.async.bulk` + `cp.async.bulk.commit_group`, `cp.async.bulk.wait_group.read N`)
        # is named as written; TK's store_async commits one bulk group per store
        ptx = st.asm is not None
        store_api = st.api if ptx else "tma::store_async"
        why = "no store_async_read_wait in between"
        rel = [related(st, f"{store_api} reads '{st.buffer}' asynchronously here")]
        if ru.partial is not None:
            pw, later = ru.partial
            n = pw.count.eval({}) if pw.count is not None else 0
            wait_api = f"{pw.api}.read {n}" if ptx else f"store_async_read_wait<{n}>"
            why = (
                f"the {wait_api} in between waits for all but the {n} most recent bulk "
                f"{'groups' if ptx else 'stores'} of the storing thread, and this store is in one of them "
                f"({later} later {'groups committed' if ptx else 'stores'} before the wait"
                + (f", the write {ru.distance} iterations after the store)" if ru.distance > 1 else ")")
            )
            rel.append(related(pw, f"{wait_api}: this store may still be reading"))
        out.append(
            finding(
                "TK306",
                f"'{o.buffer}' is overwritten by {o.api} while the {store_api} from it (issued by "
                f"{describe(iss, an.threads.n)}) may still be reading it: {why}"
                + (
                    " (in the next iteration, assuming the loop runs at least twice)"
                    if ru.wrapped and m.loops[st.loops[-1]].trip is None
                    else ""
                ),
                o.location,
                related=rel,
                witness={"buffer": str(o.buffer), "store_line": st.location.row, "overwrite_line": o.location.row},
                help="call tma::store_async_read_wait() on the storing thread after the store and before the "
                "buffer is written again (then a barrier so the other writers see it)",
            )
        )
    handed = set()
    for st in bulk_stores.store_sites(m):
        if st.buffer is None or not st.guard.exact:
            continue
        iss = an.threads.issuers(st)
        if not iss:
            continue
        for f in _handed_over(an, st, iss):
            if (f.location.row, f.location.column) not in handed:
                handed.add((f.location.row, f.location.column))
                out.append(f)
    # one finding per overwriting site (the stores of an unrolled store loop share it)
    seen, unique = set(), []
    for f in out:
        key = (f.location.row, f.location.column)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _between(ops, a: ir.Op, b: ir.Op) -> list[ir.Op]:
    return [o for o in ops if a.order < o.order < b.order and o.loops[: len(a.loops)] == a.loops]


def _handed_over(an, st: ir.Op, iss) -> list:
    """Another role overwrites the stored slot after a barrier handoff that the storer
    signals right after the store, with no store_async_read_wait in between.

    The storer arrives on X[e] after storing slot e; the writer waits X[e], then writes slot e.
    Every arrival on X comes from the storer, so any pass of the writer's wait other than the
    fresh-barrier pass observes a phase the storer completed right after a store still reading
    the slot. Proved when the writer's loop can revisit the slot (its element index has a period
    P and the loop condition holds for P + 1 iterations)."""
    from tkcheck.checks import phases as P

    m, th = an.model, an.threads
    out = []
    if not st.loops or not st.guard.exact or st.guard.thread.is_opaque():
        return out
    for a in m.ops:
        if (
            a.kind != ir.MBAR_ARRIVE
            or a.order < st.order
            or a.loops != st.loops
            or a.barrier is None
            or not a.guard.exact
            or not paths.slot_prefix(a.barrier.index, st.buffer)
            or th.issuers(a) != iss
        ):
            continue
        name = a.barrier.name
        gap = _between(m.ops, st, a)
        if any(
            x.kind in (ir.TMA_STORE_WAIT, ir.EXIT, ir.MBAR_WAIT, ir.SYNC) or (x.kind == ir.CALL and x.asm is not None)
            for x in gap
        ):
            continue
        signals = [
            o
            for o in m.ops
            if o.barrier is not None
            and o.barrier.name == name
            and o.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)
        ]
        if any(o.kind != ir.MBAR_ARRIVE or th.issuers(o) != iss or o.loops != st.loops for o in signals):
            continue
        for o in m.ops:
            if (
                not bulk_stores.writes(o)
                or o.buffer is None
                or o.buffer.name != st.buffer.name
                or not o.loops
                or o.loops == st.loops
                or not o.guard.exact
            ):
                continue
            wt = th.executing(o) if o.kind == ir.SMEM_ACCESS else th.issuers(o)
            if not wt or wt & iss:
                continue
            waits = [
                w
                for w in m.ops
                if w.kind == ir.MBAR_WAIT
                and w.barrier is not None
                and w.barrier.name == name
                and w.loops == o.loops
                and w.order < o.order
                and paths.slot_prefix(w.barrier.index, o.buffer)
                and w.guard.exact
                and (th.executing(w) or frozenset()) >= wt
            ]
            if not waits:
                continue
            w = waits[-1]
            n = len(w.barrier.index)
            if tuple(w.barrier.index) != tuple(o.buffer.index[:n]) or not paths.elements_overlap(
                st.buffer, o.buffer, n, iss, wt
            ):
                continue
            if any(
                x.kind in (ir.MBAR_WAIT, ir.EXIT)
                or (x.kind == ir.SYNC and x.sync_kind != "warp")
                or (x.kind == ir.CALL and x.asm is not None)
                for x in _between(m.ops, w, o)
            ):
                continue
            lp = m.loops[o.loops[-1]]
            if len(o.loops) != 1 or not lp.uniform:
                continue
            period = P._period(tuple(w.barrier.index), lp.counter, an.solver_timeout_ms)
            pv = period.eval({}) if period is not None else None
            if not isinstance(pv, int) or pv < 1:
                continue
            # the loop runs at least P + 1 iterations for some launch: the slot is revisited
            conds = []
            for k in range(pv + 1):
                env = {lp.counter.name: E.Const(k)}
                conds += [E.substitute(c, env) for c in o.guard.uniform]
                if lp.trip is not None:
                    conds.append(E.binop("<", E.Const(k), lp.trip))
            if any(c.is_opaque() for c in conds):
                continue
            wit = solver.witness(E.conj(*conds), an.solver_timeout_ms) if conds else {}
            if wit is None:
                continue
            params = {k: v for k, v in wit.items() if not k.startswith("?") and k != "tid"}
            out.append(
                finding(
                    "TK306",
                    f"'{o.buffer}' is overwritten by {o.api} after waiting '{w.barrier}', which the storer "
                    f"({describe(iss, an.threads.n)}) arrives on right after its tma::store_async from '{st.buffer}' "
                    f"with no store_async_read_wait in between: the bulk store may still be reading the slot "
                    f"(from iteration {pv} of the writer's loop, when "
                    + (
                        f"slot {w.barrier.index[0].eval({lp.counter.name: pv})} is reused"
                        if w.barrier.index
                        else "the buffer is written again"
                    )
                    + (f"; e.g. {', '.join(f'{k}={v}' for k, v in sorted(params.items()))}" if params else "")
                    + ")",
                    o.location,
                    related=[
                        related(st, f"tma::store_async reads '{st.buffer}' asynchronously here"),
                        related(a, f"'{a.barrier}' released here without a read wait"),
                        related(w, f"the writer waits '{w.barrier}' here"),
                    ],
                    witness={
                        "buffer": str(o.buffer),
                        "store_line": st.location.row,
                        "overwrite_line": o.location.row,
                        "release_line": a.location.row,
                        "iteration": pv,
                        **({"params": params} if params else {}),
                    },
                    help="call tma::store_async_read_wait() after the store and before arriving on the barrier "
                    "that hands the slot back",
                )
            )
            return out
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout C) {
    __shared__ tile c;
    rt_fl<16, 64> acc0, acc1;
    warp::zero(acc0);
    warp::zero(acc1);
    warpgroup::store(c, acc0);
    warpgroup::sync(1);
    if (threadIdx.x == 0) {
        tma::store_async(C, c, {0, 0, 0, 0});
    }
    warpgroup::sync(1);
    warpgroup::store(c, acc1);       // the first store may still be reading c
    warpgroup::sync(1);
    if (threadIdx.x == 0) {
        tma::store_async(C, c, {0, 0, 0, 1});
        tma::store_async_wait();
    }
}
"""
)

_GOOD = _BAD.replace(
    """        tma::store_async(C, c, {0, 0, 0, 0});
    }""",
    """        tma::store_async(C, c, {0, 0, 0, 0});
        tma::store_async_read_wait();
    }""",
)

RULE = Rule(
    code="TK306",
    name="smem-reused-before-store-read",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("stripes",),
    explains={"stripes": Explains(5, "the staging tile is rewritten while the TMA store still reads it")},
    confirm=Confirm(widen=("poison-released-stores",), repairs=("read-wait-after-named-stores",)),
    summary="A shared buffer is written again while a TMA store may still be reading it",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Follows every `tma::store_async(global, tile, coord)` along program order and
reports the first later write into the same shared tile (register-tile store,
TMA load) when no `tma::store_async_read_wait()` (or `store_async_wait()`)
executed by the storing thread lies in between. `store_async_read_wait<N>` waits
for all but the N most recent bulk stores of the thread: it covers a store only
when N or more stores of that thread come after it (a staging buffer written again
one tile later under the double buffer's `<1>` is reported).
Across roles: when the storing thread arrives on a barrier right after the store
(no read wait) and another role waits on that barrier before writing the same slot,
the write is reported once the writer's loop can revisit the slot.

## Why is this bad?
A bulk store reads shared memory asynchronously after the instruction issues.
Until the storing thread's read wait returns, writing the tile races with the
copy engine: the global result mixes the old and new contents (stripes).

## Example
```cuda
{_BAD}
```

Use instead:
```cuda
{_GOOD}
```
""",
)
