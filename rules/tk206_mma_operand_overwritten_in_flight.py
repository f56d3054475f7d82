"""TK206: a shared-memory operand of an in-flight wgmma refilled (TMA or
stores) before the wait of every warp that issued it is ordered before the
refill."""

from tkcheck.checks import accumulator as A
from tkcheck.rule import Confirm, Explains, Rule, WGMMA_OPERAND_RELEASE

from ._common import HEADER, finding, related


def check(an):
    out = []
    for r in A.operand_races(an):
        rel = [related(r.mma, f"the wgmma reading `{r.operand}` is issued here (warp {r.warp} among its issuers)")]
        if r.release is None:
            msg = (
                f"`{r.refill.api}` overwrites `{r.refill.buffer}` while the wgmma `{r.mma.api}` issued by the "
                f"same warp (warp {r.warp}) may still read it: no `mma_async_wait` retires the wgmma first"
            )
            wit = {"warp": r.warp, "operand": str(r.operand)}
        else:
            rel.append(related(r.release, f"`{r.barrier}` is released here"))
            msg = (
                f"`{r.refill.api}` refills `{r.refill.buffer}` after waiting on `{r.barrier}`, but "
                f"{r.early_arrivals} of the {r.init_count} arrivals that complete its phase are not ordered "
                f"after warp {r.warp}'s `mma_async_wait`: the wgmma `{r.mma.api}` of warp {r.warp} may still "
                f"read `{r.operand}`"
            )
            wit = {
                "warp": r.warp,
                "barrier": r.barrier,
                "init_count": r.init_count,
                "arrivals_not_after_wait": r.early_arrivals,
            }
        out.append(
            finding(
                "TK206",
                msg,
                r.refill.location,
                related=rel,
                witness=wit,
                help="wait for the wgmma (`warpgroup::mma_async_wait()`) before releasing the slot, and let every "
                "issuing warp arrive after its own wait (init the barrier for one arrival per warp and use "
                "`if (laneid() == 0) arrive(...)`), or synchronise the warpgroup before one lane arrives",
            )
        )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A, int iters) {
    __shared__ tile a, b;
    __shared__ semaphore full, empty;
    if (threadIdx.x == 0) { init_semaphore(full, 0, 1); init_semaphore(empty, 1, 0); }
    __syncthreads();
    if (warpgroup::groupid() == 0) {
        if (warpgroup::laneid() == 0) {
            for (int i = 0; i < iters; i++) {
                wait(empty, (i % 2) ^ 1);
                tma::expect(full, a);
                tma::load_async(a, A, {0, 0, 0, i}, full);    // may overwrite a under warps 1-3's wgmma
            }
        }
    } else {
        rt_fl<16, 64> acc;
        warp::zero(acc);
        for (int i = 0; i < iters; i++) {
            wait(full, i % 2);
            warpgroup::mma_AB(acc, a, b);
            warpgroup::mma_async_wait();
            if (warpgroup::laneid() == 0) arrive(empty);     // only warp 4 has waited
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
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A, int iters) {
    __shared__ tile a, b;
    __shared__ semaphore full, empty;
    if (threadIdx.x == 0) { init_semaphore(full, 0, 1); init_semaphore(empty, 4, 0); }
    __syncthreads();
    if (warpgroup::groupid() == 0) {
        if (warpgroup::laneid() == 0) {
            for (int i = 0; i < iters; i++) {
                wait(empty, (i % 2) ^ 1);
                tma::expect(full, a);
                tma::load_async(a, A, {0, 0, 0, i}, full);
            }
        }
    } else {
        rt_fl<16, 64> acc;
        warp::zero(acc);
        for (int i = 0; i < iters; i++) {
            wait(full, i % 2);
            warpgroup::mma_AB(acc, a, b);
            warpgroup::mma_async_wait();
            if (laneid() == 0) arrive(empty);                // every consumer warp, after its own wait
        }
    }
}
"""
)

RULE = Rule(
    code="TK206",
    name="mma-operand-overwritten-in-flight",
    contract="accumulator",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    explains={
        "wrong": Explains(4, "a stage is released while an MMA still reads it"),
        "stripes": Explains(4, "the refill overwrites operands of an in-flight MMA"),
    },
    confirm=Confirm(widen=("delay-wgmma-issue", "poison-refill"), wgmma_race=WGMMA_OPERAND_RELEASE),
    summary="A shared operand of an in-flight wgmma is refilled before every issuing warp's wait is ordered before it",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For every wgmma with a shared-memory operand — a tile of `warpgroup::mma_*`,
or the stage a raw `wgmma.mma_async` reads through its matrix descriptor (the
descriptor's start address, `(addr & 0x3FFFF) >> 4` in bits 0-13, followed back
to the stage region of dynamic shared memory that the kernel's bulk copies
fill) — finds the operations that overwrite that buffer — TMA loads,
`warpgroup::store`/`load` into it, raw `st.shared` — and proves that one of
them can run while the wgmma of some issuing warp is still in flight:

* the issuing threads themselves overwrite it on a path with no
  `mma_async_wait` that retires the wgmma; or
* another role refills it after waiting on an mbarrier that the consumers
  arrive on (the ring's `empty`/`inputs_finished` slot), and the arrivals that
  are **not** ordered after warp w's `mma_async_wait` are already enough to
  complete the barrier's phase (its init count). The arrivals counted are those
  on the element the wgmma's stage names: in the same iteration after the
  wgmma, or in the next one (`wgmma.wait_group 1` keeps a group in flight across
  the loop's back edge, so the stage of k-tile kt - 1 may only be released
  after the wait of iteration kt). An arrival is ordered after warp w's wait
  when warp w makes it after its own wait, or when a barrier that warp w passes
  after its wait precedes it.

`wgmma.wait_group` waits for the executing warp's share of the wgmma only, so
`mma_async_wait(); if (laneid() == 0) arrive(empty)` with `empty` counting
every consumer warp is correct, while one lane of the warpgroup arriving after
only its own warp's wait (barrier counting warpgroups) is not.

## Why is this bad?
The tensor core reads the operand asynchronously until the wait returns. A TMA
that lands new data under it mixes two k-steps into one product: wrong results
that depend on timing.

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
