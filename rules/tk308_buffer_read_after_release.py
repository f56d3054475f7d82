"""TK308: a thread reads a shared buffer after it released the buffer (arrived on the barrier
its producer waits before refilling it)."""

from tkcheck.checks import paths
from tkcheck.checks.threads import describe
from tkcheck.model import expr as E
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def _index(ref: ir.Ref) -> tuple | None:
    if any(ix.is_opaque() or ix.depends_on(E.THREAD) for ix in ref.index):
        return None
    return tuple(str(ix) for ix in ref.index)


def _stage(ref: ir.Ref, n: int) -> tuple | None:
    """The first `n` indices of a buffer reference (its stage, when a barrier of n indices
    guards it: `buf[s][j]` under `empty[s]`), as `_index` gives them. A scalar barrier (n = 0)
    guards a buffer only as a whole: the buffer's whole index then (its slot is not the barrier's)."""
    if n == 0:
        return _index(ref)
    if len(ref.index) < n:
        return None
    return _index(ir.Ref(ref.name, ref.index[:n]))


def _refill(o: ir.Op) -> bool:
    return o.buffer is not None and (
        o.kind in (ir.TMA_LOAD, ir.CP_ASYNC) or (o.kind == ir.SMEM_ACCESS and o.access_mode == "write")
    )


def _gates(an) -> dict[tuple[str, str], set[str]]:
    """(barrier, buffer) -> the barriers the refill completes on, where some role refills the
    buffer element right after waiting on the barrier element of the same index (a ring's
    `empty[s]` before the load into `a[s]`, an MK page token before the load into that page):
    releasing the barrier hands the buffer over. Only the refilling threads' nearest wait before
    the refill gates it: a producer that refills several buffers in one pass, each after its own
    release wait, hands each buffer over with its own barrier."""
    m, th = an.model, an.threads
    out: dict[tuple[str, str], set[str]] = {}
    waits = [o for o in m.ops if o.kind == ir.MBAR_WAIT and o.barrier is not None and o.guard.exact]
    for r in m.ops:
        if not _refill(r) or not r.guard.exact:
            continue
        rt = th.executing(r)
        if not rt:
            continue
        # the nearest wait of the refilling threads in the refill's round (the refill possibly in
        # a loop nested in it: a copy loop of cp.async)
        before = [
            w
            for w in waits
            if w.order < r.order
            and w.loops
            and r.loops[: len(w.loops)] == w.loops
            and (th.executing(w) or frozenset()) >= rt
        ] or [w for w in waits if w.order < r.order and w.loops == r.loops and (th.executing(w) or frozenset()) >= rt]
        if not before:
            continue
        w = max(before, key=lambda o: o.order)
        wi = _index(w.barrier)
        if wi is not None and _stage(r.buffer, len(wi)) == wi:
            done = out.setdefault((w.barrier.name, r.buffer.name), set())
            if r.barrier is not None:
                done.add(r.barrier.name)
    return out


def check(an):
    out = []
    m, th, n = an.model, an.threads, an.threads.n
    fl = paths.flow(an)
    gates = _gates(an)
    if not gates:
        return out
    seen = set()
    for a in m.ops:
        if (
            a.kind != ir.MBAR_ARRIVE
            or a.barrier is None
            or not a.guard.exact
            or (a.mbar is not None and (a.mbar.tcgen05_commit or a.mbar.remote or a.mbar.cta is not None))
        ):
            continue
        ai = _index(a.barrier)
        ea = th.executing(a)
        if ai is None or not ea:
            continue
        bufs = {b for (bar, b) in gates if bar == a.barrier.name}
        if not bufs:
            continue
        for r in m.ops:
            if (
                r.kind != ir.SMEM_ACCESS
                or r.access_mode != "read"
                or r.buffer is None
                or r.buffer.name not in bufs
                or r.order <= a.order
                or r.loops[: len(a.loops)] != a.loops
                or not r.guard.exact
                or _stage(r.buffer, len(ai)) != ai
            ):
                continue
            common = sorted(ea & (th.executing(r) or frozenset()))
            if not common:
                continue
            t = common[0]
            between = fl.same_iteration_between(a, r)
            if any(fl.runs(o, t, a.guard.uniform) is None for o in between if o.kind in (ir.CALL, ir.EXIT)):
                continue
            if fl.runs(r, t, a.guard.uniform) is not True:
                continue
            # a wait for the refill itself between the release and the read: the new contents are read
            landed = gates.get((a.barrier.name, r.buffer.name), set())
            if any(
                o.kind == ir.MBAR_WAIT
                and o.barrier is not None
                and o.barrier.name in landed
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
            key = (r.location.row, r.location.column, a.location.row)
            if key in seen:
                continue
            seen.add(key)
            out.append(
                finding(
                    "TK308",
                    f"{describe(frozenset([t]), n)} reads `{r.buffer}` (`{r.api}`) after releasing it "
                    f"(`{a.api}` on `{a.barrier}`): the producer that waits on `{a.barrier.name}` may refill "
                    f"`{r.buffer.name}` while this read is still going on",
                    r.location,
                    related=[
                        related(a, f"`{a.barrier}` released here"),
                        *[
                            related(w, "the refill waits here")
                            for w in m.ops
                            if w.kind == ir.MBAR_WAIT and w.barrier is not None and w.barrier.name == a.barrier.name
                        ][:1],
                    ],
                    witness={"thread": t, "barrier": str(a.barrier), "buffer": str(r.buffer)},
                    help="release a buffer after the last read of every thread that reads it: read, then "
                    "synchronise the readers (`warpgroup::sync`, `__syncwarp`), then one lane arrives",
                )
            )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(160, 1) void k(const __grid_constant__ layout A, int n) {
    __shared__ tile a[2];
    __shared__ semaphore full[2], empty[2];
    if (threadIdx.x == 0)
        for (int s = 0; s < 2; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 1, 0); }
    __syncthreads();
    if (warpid() == 4) {
        if (laneid() == 0) {
            for (int i = 0; i < n; i++) {
                wait(empty[i % 2], ((i / 2) % 2) ^ 1);
                tma::expect(full[i % 2], a[i % 2]);
                tma::load_async(a[i % 2], A, {0, 0, 0, i}, full[i % 2]);
            }
        }
    } else {
        rt_fl<16, 64> r;
        for (int i = 0; i < n; i++) {
            wait(full[i % 2], (i / 2) % 2);
            warpgroup::sync(1);                                   // every warp has waited
            if (warpgroup::laneid() == 0) arrive(empty[i % 2]);   // released first...
            warpgroup::load(r, a[i % 2]);                         // ...read after
        }
    }
}
"""
)

_GOOD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(160, 1) void k(const __grid_constant__ layout A, int n) {
    __shared__ tile a[2];
    __shared__ semaphore full[2], empty[2];
    if (threadIdx.x == 0)
        for (int s = 0; s < 2; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 1, 0); }
    __syncthreads();
    if (warpid() == 4) {
        if (laneid() == 0) {
            for (int i = 0; i < n; i++) {
                wait(empty[i % 2], ((i / 2) % 2) ^ 1);
                tma::expect(full[i % 2], a[i % 2]);
                tma::load_async(a[i % 2], A, {0, 0, 0, i}, full[i % 2]);
            }
        }
    } else {
        rt_fl<16, 64> r;
        for (int i = 0; i < n; i++) {
            wait(full[i % 2], (i / 2) % 2);
            warpgroup::load(r, a[i % 2]);                         // every warp reads...
            warpgroup::sync(1);                                   // ...all have read...
            if (warpgroup::laneid() == 0) arrive(empty[i % 2]);   // ...then one lane releases
        }
    }
}
"""
)

RULE = Rule(
    code="TK308",
    name="buffer-read-after-release",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("stripes", "wrong"),
    summary="A thread reads a shared buffer after it released it to the producer that refills it",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Pairs each barrier with the shared buffers a role refills right after waiting on it, element
by element (a ring's `empty[s]` before the TMA load into `a[s]`; an MK page token
`page_finished[p]` before the load into page `p`): arriving on that barrier element releases
that buffer element. Then reports a read of the buffer element (`warp::load`,
`warpgroup::load`, `ld.shared`) that a releasing thread makes later in the same iteration,
after its own arrive, when no later arrival of those threads keeps the phase open. This is the
MK consumer that releases a page before its last read of it.

Asynchronous readers are the business of other rules: an in-flight wgmma operand (TK206), a
TMA store still reading its source (TK306).

## Why is this bad?
Once the arrival completes the barrier's phase, the producer's wait returns and its refill (a
TMA load, the next instruction's loader) may overwrite the buffer while this thread is still
reading it: the read returns a mix of the old and the new tile, depending on timing.

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
