"""TK305: a TMA load fills stage s of a ring but completes on another stage's barrier."""

from tkcheck.checks import violations
from tkcheck.model import ir
from tkcheck.rule import Confirm, Explains, Rule

from ._common import HEADER, finding, related


def check(an):
    """The ring pairing query (`checks/violations.wrong_barrier_loads`), worded."""
    out = []
    for v in violations.wrong_barrier_loads(an):
        o, it, sv, bv, bname = v.op, v.iteration, v.buffer_stage, v.barrier_stage, v.barrier
        out.append(
            finding(
                "TK305",
                f"TMA load into '{o.buffer.shown()}' completes on '{o.barrier.shown()}': at iteration {it} it fills stage {sv} "
                f"but signals the barrier of stage {bv}",
                o.location,
                related=[
                    related(
                        x,
                        f"'{x.buffer.shown()}' completes on its own stage's barrier '{x.barrier.shown()}'"
                        if x.kind == ir.TMA_LOAD
                        else f"the expect it is issued with names '{x.barrier.shown()}'",
                    )
                    for x in v.matched[:3]
                ],
                witness={"iteration": it, "buffer_stage": sv, "barrier_stage": bv, "barrier": bname},
                help=f"complete every load of stage s on {bname}[s]: the consumer that waits {bname}[{sv}] "
                f"otherwise reads the tile before its bytes land, and stage {bv} completes on bytes of another stage",
            )
        )
    for v in violations.split_remote_stores(an):
        o = v.op
        out.append(
            finding(
                "TK305",
                f"`{o.api}` writes '{v.buffer}' in the shared memory of CTA {violations.readable(v.store_cta)} but completes "
                f"its bytes on '{v.barrier}' of CTA {violations.readable(v.barrier_cta)}: the destination and the barrier "
                "are in different CTAs for every thread",
                o.location,
                witness={"barrier": v.barrier, "store_cta": str(v.store_cta), "barrier_cta": str(v.barrier_cta)},
                help="map the barrier to the destination's CTA (`mapa` with the same rank): the CTA that reads "
                f"'{v.buffer}' waits on its own '{v.barrier}', which these bytes otherwise never complete",
            )
        )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
constexpr int STAGES = 2;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    const int n = A.cols() / 64;
    __shared__ tile a[STAGES], b[STAGES];
    __shared__ semaphore full[STAGES], empty[STAGES];
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 4, 0); }
    }
    __syncthreads();
    if (warpgroup::groupid() == 0) {
        if (threadIdx.x == 0) {
            for (int k = 0; k < n; k++) {
                int s = k % STAGES;
                wait(empty[s], ((k / STAGES) % 2) ^ 1);
                tma::expect(full[s], a[s], b[s]);
                tma::load_async(a[s], A, {0, 0, 0, k}, full[s]);
                tma::load_async(b[s], A, {0, 0, 1, k}, full[(s + 1) % STAGES]);
            }
        }
    } else {
        for (int k = 0; k < n; k++) {
            int s = k % STAGES;
            wait(full[s], (k / STAGES) % 2);
            if (laneid() == 0) arrive(empty[s]);
        }
    }
}
"""
)

_GOOD = _BAD.replace(
    "tma::load_async(b[s], A, {0, 0, 1, k}, full[(s + 1) % STAGES]);",
    "tma::load_async(b[s], A, {0, 0, 1, k}, full[s]);",
)

RULE = Rule(
    code="TK305",
    name="load-completes-on-wrong-barrier",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("stripes",),
    explains={
        "stripes": Explains(5, "a load completes on another stage's barrier: stage reuse out of order"),
        "hang": Explains(3, "a stage's barrier gets too few bytes"),
    },
    confirm=Confirm(widen=("delay-load",)),
    summary="A TMA load into ring stage s completes on the barrier of another stage",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For the TMA loads that complete on a ring of barriers, compares the stage index
of the destination buffer with the index of the completion barrier. When the
other loads of the same loop pair stage s with barrier s (proved for every
iteration), a load whose buffer stage differs from its barrier's stage for
some iteration is reported with that iteration.

## Why is this bad?
The consumer of stage s waits on barrier s; bytes for stage s that complete
on barrier s+1 are not covered by that wait, so the consumer can read the
tile before it lands (stripes), while stage s+1's phase is completed by bytes
that belong to stage s.

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
