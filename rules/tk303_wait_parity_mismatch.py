"""TK303: the parity a wait passes differs from the parity of the phase it is due to observe."""

from tkcheck.checks import phases
from tkcheck.rule import Explains, Rule

from ._common import HEADER
from ._phase_common import phase_finding


def check(an):
    return [phase_finding(an, wp, "TK303") for wp in phases.phases(an) if wp.status == "mismatch"]


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
constexpr int STAGES = 2;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    const int n = A.cols() / 64;
    __shared__ tile a[STAGES];
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
                tma::expect(full[s], a[s]);
                tma::load_async(a[s], A, {0, 0, 0, k}, full[s]);
            }
        }
    } else {
        for (int k = 0; k < n; k++) {
            int s = k % STAGES;
            wait(full[s], k % 2);           // the parity of the iteration, not of the slot's round
            if (laneid() == 0) arrive(empty[s]);
        }
    }
}
"""
)

_GOOD = _BAD.replace(
    "wait(full[s], k % 2);           // the parity of the iteration, not of the slot's round",
    "wait(full[s], (k / STAGES) % 2);",
)

RULE = Rule(
    code="TK303",
    name="wait-parity-mismatch",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("stripes", "hang"),
    explains={
        "hang": Explains(4, "the wait observes a phase that never completes with that parity"),
        "stripes": Explains(5, "the wait passes on an old phase: the stage is read before it is refilled"),
        "wrong": Explains(5, "the wait passes on an old or fresh phase: a stage is read before it is filled"),
    },
    summary="A wait passes a parity other than the parity of the phase it is due to observe",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For every `wait(bar[e], parity)` derives which phase of which barrier element
the wait is due to observe at iteration k: the number of earlier uses of the
same ring slot (k / STAGES for a ring of STAGES slots, proved periodic with
z3), minus one on the producer side of a full/empty handshake (it waits for
the previous round's release; a fresh barrier passes parity 1 at once), plus
phases completed before the loop (pre-arrived tokens). It then proves with
z3 that the parity passed equals that phase's parity for *every* iteration and
every template parameter value, and otherwise reports the smallest
counterexample (iteration, stage, role, parity waited vs due).

## Why is this bad?
`mbarrier.try_wait.parity` only compares one bit. Waiting on the wrong parity
either returns at once, before the data of the due phase has landed (stale
tiles, row stripes), or blocks until a phase that only completes after this
wait (a hang). Tests with few iterations often miss it.

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
