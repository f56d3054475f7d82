"""TK205: the next tcgen05 accumulation into a TMEM tile before every reader has drained it,
and the tcgen05 fences around the mbarrier hand-offs."""

from tkcheck.checks import tmem as T
from tkcheck.checks.threads import describe
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def check(an):
    out = []
    n = an.threads.n
    for d in T.facts(an, "drain"):
        tile = d.tile
        if d.kind == "no_token_wait":
            msg = (
                f"the tcgen05 MMA `{d.op.api}` writes `{tile}` again in every iteration, but "
                f"{describe(d.mma_threads, n)} waits on no barrier that the readers of `{tile}` "
                f"({describe(d.readers, n)}) arrive on: the next accumulation can overwrite the "
                f"tile while they are still reading it"
            )
            rel = [related(d.other, f"a reader of `{tile}` (tcgen05.ld)")]
            hlp = (
                "have every reader arrive on a token barrier after `tensor_load_wait(); "
                "tensor_before_thread_sync();`, init it with the number of arrivals of all readers (both CTAs "
                "of a pair), and wait on it (then `tensor_after_thread_sync()`) before the first MMA into the tile"
            )
        elif d.kind == "arrive_before_wait_ld":
            msg = (
                f"`{d.op.api}` returns the TMEM token `{d.barrier}` before `tensor_load_wait()`: the "
                f"tcgen05.ld of `{tile}` may still be reading when the MMA waiting on `{d.barrier}` overwrites it"
            )
            rel = [related(d.other, f"the tcgen05.ld of `{tile}` not yet waited for")]
            hlp = "call `tensor_load_wait(); tensor_before_thread_sync();` before arriving on the token"
        elif d.kind == "no_fence_before":
            msg = (
                f"no `tensor_before_thread_sync()` (tcgen05.fence::before_thread_sync) between "
                f"`tensor_load_wait()` and the token arrive `{d.op.api}({d.barrier})`: the mbarrier hand-off "
                f"does not order this thread's TMEM reads of `{tile}` before the next MMA"
            )
            rel = [related(d.other, "tcgen05.wait::ld here")]
            hlp = "call `tensor_before_thread_sync()` after `tensor_load_wait()` and before the arrive"
        elif d.kind == "no_sync_lanes":
            msg = (
                f"only {describe(d.op and an.threads.issuers(d.op), n)} arrives on the token `{d.barrier}`, "
                f"but {describe(d.others, n)} also read `{tile}` and no thread synchronisation "
                f"orders their reads (after their fence) before the arrive"
            )
            rel = [related(d.other, f"tcgen05.ld of `{tile}` by the whole warp")]
            hlp = "add `__syncwarp()` (or the group's barrier) between `tensor_before_thread_sync()` and the arrive"
        elif d.kind == "no_fence_after_token":
            msg = (
                f"no `tensor_after_thread_sync()` (tcgen05.fence::after_thread_sync) between this wait on the "
                f"TMEM token `{d.barrier}` and the tcgen05 MMA `{d.other.api}` into `{tile}`: the MMA is not "
                f"ordered after the readers' hand-off"
            )
            rel = [related(d.other, f"the MMA into `{tile}`")]
            hlp = "call `tensor_after_thread_sync()` right after the wait"
        elif d.kind == "token_count_short":
            msg = (
                f"`{d.barrier}` is the TMEM token of the cta_group::2 MMA `{d.other.api}` into `{tile}` (it "
                f"writes the TMEM of both CTAs of the pair), but it is initialised for {d.init} arrivals "
                f"while the readers of both CTAs arrive {d.total} times per use ({d.per_cta} per CTA): "
                f"a phase can complete before the other CTA's readers are done"
            )
            rel = [related(d.other, f"the 2-CTA MMA into `{tile}`"), related(d.wait, "the MMA side waits here")]
            hlp = f"initialise `{d.barrier}` with the arrivals of both CTAs' readers ({d.total})"
        elif d.kind == "token_local_only":
            a = d.arrive
            msg = (
                f"the cta_group::2 MMA `{d.other.api}` into `{tile}` writes the TMEM of both CTAs of the pair "
                f"and runs in one CTA, but its TMEM token `{d.barrier}` is arrived on only locally "
                f"(`{a.api}` in each CTA): this wait hears from this CTA's readers, never from the peer's, "
                f"so the next MMA can overwrite the peer's accumulator while it is still being read"
            )
            rel = [
                related(d.other, f"the 2-CTA MMA into `{tile}`"),
                related(a, "readers arrive on their own CTA's token"),
            ]
            hlp = (
                f"have the readers of both CTAs arrive on the MMA CTA's `{d.barrier}` (`tma::cluster::arrive"
                f"({d.barrier}, 0)`) and initialise it with both CTAs' arrivals"
            )
        else:  # no_fence_after_commit
            msg = (
                f"no `tensor_after_thread_sync()` between this wait on the MMA commit barrier `{d.barrier}` "
                f"and the tcgen05.ld of `{tile}`: the load is not ordered after the MMA's completion"
            )
            rel = [related(d.other, f"tcgen05.ld of `{tile}`")]
            hlp = "call `tensor_after_thread_sync()` right after the wait"
        out.append(
            finding(
                "TK205",
                msg,
                d.op.location,
                related=rel,
                witness={"kind": d.kind, "tile": tile, "barrier": d.barrier},
                help=hlp,
            )
        )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(160, 1) void k(int n) {
    tensor_allocator<1, 1> tm;
    __shared__ st_bf<128, 64> a, b;
    __shared__ semaphore full, empty;
    tt<float, 128, 64> acc = tm.allocate<tt<float, 128, 64>>(0);
    if (threadIdx.x == 0) { init_semaphore(full, 0, 1); init_semaphore(empty, 4, 0); }
    __syncthreads();
    if (warpid() < 4) {                       // readers: one warp per lane quarter
        rt_fl<32, 64> r;
        for (int t = 0; t < n; t++) {
            wait(full, t % 2);
            tensor_after_thread_sync();
            warp::load_async(r, acc.subtile<tt<float, 32, 64>>(32 * warpid(), 0));
            if (laneid() == 0) arrive(empty);  // the TMEM token, returned before the load retired
            tensor_load_wait();
        }
    } else if (laneid() == 0) {               // the MMA thread
        for (int t = 0; t < n; t++) {
            wait(empty, (t % 2) ^ 1);
            tensor_after_thread_sync();
            mm_AB(acc, a, b, full);            // may overwrite acc while a reader's tcgen05.ld is in flight
        }
    }
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(160, 1) void k(int n) {
    tensor_allocator<1, 1> tm;
    __shared__ st_bf<128, 64> a, b;
    __shared__ semaphore full, empty;
    tt<float, 128, 64> acc = tm.allocate<tt<float, 128, 64>>(0);
    if (threadIdx.x == 0) { init_semaphore(full, 0, 1); init_semaphore(empty, 4, 0); }
    __syncthreads();
    if (warpid() < 4) {
        rt_fl<32, 64> r;
        for (int t = 0; t < n; t++) {
            wait(full, t % 2);
            tensor_after_thread_sync();
            warp::load_async(r, acc.subtile<tt<float, 32, 64>>(32 * warpid(), 0));
            tensor_load_wait();
            tensor_before_thread_sync();
            __syncwarp();
            if (laneid() == 0) arrive(empty);
        }
    } else if (laneid() == 0) {
        for (int t = 0; t < n; t++) {
            wait(empty, (t % 2) ^ 1);          // every reader has drained acc
            tensor_after_thread_sync();
            mm_AB(acc, a, b, full);
        }
    }
}
"""
)

RULE = Rule(
    code="TK205",
    name="tmem-reuse-before-drain",
    contract="accumulator",
    severity="error",
    precision="proved",
    symptoms=("stripes", "wrong"),
    summary="The next tcgen05 MMA into a TMEM tile before every reader drained it, or tcgen05 fences missing "
    "around the mbarrier hand-off",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For each TMEM tile written by tcgen05 MMAs (`mm*_AB`, `mma*_AB`, `mm2_*`, `mma2_*`, ...)
in a loop and read with `tcgen05.ld` (`warp::` / `warpgroup::load_async(rt, tt)`),
checks the hand-off protocol the PTX ISA's tcgen05 memory-consistency rules require:

* **reader side**: `tcgen05.ld` ... `tensor_load_wait()` (tcgen05.wait::ld) →
  `tensor_before_thread_sync()` (tcgen05.fence::before_thread_sync) → a thread
  sync that orders the other lanes (`__syncwarp()`) → the arrive on the token
  barrier. Reported: the arrive before `tensor_load_wait()`, a missing fence, the
  single arriving lane not ordered after its siblings' reads;
* **MMA side**: in every iteration that writes the tile, the MMA thread waits on a
  barrier that the readers (transitively) arrive on — otherwise nothing orders
  the next accumulation after the reads — and runs `tensor_after_thread_sync()`
  (tcgen05.fence::after_thread_sync) between that wait and the MMA;
* the readers' wait on the MMA's commit barrier (`tensor_commit`, or the
  semaphore argument of an MMA) is followed by `tensor_after_thread_sync()`
  before the `tcgen05.ld`.

* **2-CTA pairs**: a `cta_group::2` MMA (`mm2_*` / `mma2_*`) writes the TMEM of both
  CTAs, so its token must count the readers of both. Reported when every arrive on
  the token is a remote arrive to one constant CTA, run alike by both CTAs, and the
  init count is below the arrivals of both CTAs' readers (TK302 reports the count
  mismatch as such too). A token arrived on only CTA-locally is not judged.

Blackwell-only (sm_100a). Encoded from the PTX ISA (tcgen05.wait::ld completes
only the executing thread's prior tcgen05.ld; tcgen05.fence::before_thread_sync /
after_thread_sync order asynchronous tcgen05 operations across thread
synchronisation such as mbarrier arrive/wait) and TK's headers (`tensor_commit`,
the semaphore overloads of the tcgen05 MMAs commit after the MMA). Not measured
on a Blackwell GPU in this project.

A finding needs: enumerated reader and MMA thread sets, the reuse in a loop, and
no wait / fence / synchronisation that could order the accesses on that path
(any block, named or cluster barrier the MMA thread takes in the loop counts as
possible ordering, so nothing is reported then).

## Why is this bad?
The next MMA overwrites the accumulator while some warp (of either CTA) is still
reading the previous tile: stripes of the output come from the next tile's
partial sums. Without the fences the mbarrier hand-off orders nothing between the
tensor core's asynchronous accesses and the other threads.

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
