"""TK304: a ring's phase/parity variable is never advanced although its slots are reused."""

from tkcheck.checks import phases
from tkcheck.rule import Explains, Rule

from ._common import HEADER, finding, related
from ._phase_common import phase_finding


def check(an):
    out = [phase_finding(an, wp, "TK304") for wp in phases.phases(an) if wp.status == "not-advanced"]
    for wp in phases.phases(an):
        sm = phases.slot_mismatch(an, wp)
        if sm is None:
            continue
        s = sm["signal"]
        at = f"outer-loop iteration {sm['outer_iteration']}, iteration {sm['iteration']}"
        msg = (
            f"the ring slot waited on '{wp.barrier}' and the slot its signaller fills at the same step are "
            f"out of step: at {at} this role waits on slot {sm['slot_waited']} while the signalling role "
            f"fills slot {sm['slot_filled']} (a ring index or its phase restarted in one role only)"
        )
        out.append(
            finding(
                "TK304",
                msg,
                wp.op.location,
                related=[related(s, f"fills {s.barrier} (slot {sm['slot_filled']} at that step)")],
                witness={
                    "outer_iteration": sm["outer_iteration"],
                    "iteration": sm["iteration"],
                    "slot_waited": sm["slot_waited"],
                    "slot_filled": sm["slot_filled"],
                    "params": sm["params"],
                    "effect": "stale read",
                },
                help="advance (and reset) the ring index and its phase bits the same way in every "
                "role that walks the ring; carry both across the task loop",
            )
        )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    const int n = A.cols() / 64;
    __shared__ tile a[2];
    __shared__ semaphore full[2], empty[2];
    if (threadIdx.x == 0) {
        for (int s = 0; s < 2; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 4, 0); }
    }
    __syncthreads();
    if (warpgroup::groupid() == 0) {
        if (threadIdx.x == 0) {
            for (int k = 0; k < n; k++) {
                wait(empty[k % 2], ((k / 2) % 2) ^ 1);
                tma::expect(full[k % 2], a[k % 2]);
                tma::load_async(a[k % 2], A, {0, 0, 0, k}, full[k % 2]);
            }
        }
    } else {
        int tic = 0, phase = 0;
        for (int k = 0; k < n; k++) {
            wait(full[tic], phase);
            if (laneid() == 0) arrive(empty[tic]);
            tic ^= 1;                      // the phase is never flipped when tic wraps
        }
    }
}
"""
)

_GOOD = _BAD.replace(
    "tic ^= 1;                      // the phase is never flipped when tic wraps",
    "tic ^= 1;\n            if (tic == 0) phase ^= 1;",
)

RULE = Rule(
    code="TK304",
    name="phase-not-advanced",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("stripes", "hang"),
    explains={
        "hang": Explains(4, "the parity never advances: the wait blocks on a phase already passed"),
        "stripes": Explains(5, "the parity never advances: later rounds read stale stages"),
        "wrong": Explains(4, "the parity never advances: later rounds read stale stages"),
    },
    summary="The parity waited on a reused ring slot never changes",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Finds waits on a barrier ring whose slots are reused (the loop runs longer
than the ring) while the parity passed is the same on every iteration: the
phase variable is never flipped when the ring index wraps (or the flip was
lost). The same z3 proof as TK303 supplies the first iteration at which the
stale parity is observed.

## Why is this bad?
After the first round the barrier of each slot has completed phase 0; waiting
parity 0 again returns at once on the already-completed phase, so the
consumer reads the slot before the next fill landed (stripes), and the ring
drifts until a wait blocks forever.

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
