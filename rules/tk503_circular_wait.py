"""TK503: roles wait on each other in a cycle."""

from tkcheck.checks import protocol as P
from tkcheck.rule import Explains, Rule

from ._common import HEADER
from ._deadlock_common import classify, deadlock_finding


def check(an):
    c = classify(an)
    if c is None or c[0] != "TK503":
        return []
    code, ri, e, others = c
    ex = P.explore(an)
    d = dict(ex.deadlock.blocked)
    chain = "; ".join(f"{ex.roles[i].name} waits on {P.blocked_on(d[i])}" for i in others if i in d)
    msg = (
        f"circular wait: {ex.roles[ri].name} waits on {P.blocked_on(e)}, which only "
        f"{', '.join(ex.roles[i].name for i in others)} can complete later, while {chain}"
    )
    return [
        deadlock_finding(
            an,
            code,
            ri,
            e,
            others,
            msg,
            "grant the first turn before the loop (one group arrives at the other's named barrier)"
            if e.kind == "sync"
            else "order each role's signals before the waits that depend on the other role "
            "(e.g. issue the one-shot loads before entering the ring loop)",
        )
    ]


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    const int n = A.cols() / 64;
    __shared__ tile q, a[2];
    __shared__ semaphore q_full, full[2], empty[2];
    if (threadIdx.x == 0) {
        init_semaphore(q_full, 0, 1);
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
            tma::expect(q_full, q);                 // q is loaded after the ring
            tma::load_async(q, A, {0, 0, 1, 0}, q_full);
        }
    } else {
        wait(q_full, 0);
        for (int k = 0; k < n; k++) {
            wait(full[k % 2], (k / 2) % 2);
            if (laneid() == 0) arrive(empty[k % 2]);
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
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    const int n = A.cols() / 64;
    __shared__ tile q, a[2];
    __shared__ semaphore q_full, full[2], empty[2];
    if (threadIdx.x == 0) {
        init_semaphore(q_full, 0, 1);
        for (int s = 0; s < 2; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 4, 0); }
    }
    __syncthreads();
    if (warpgroup::groupid() == 0) {
        if (threadIdx.x == 0) {
            tma::expect(q_full, q);                 // q first
            tma::load_async(q, A, {0, 0, 1, 0}, q_full);
            for (int k = 0; k < n; k++) {
                wait(empty[k % 2], ((k / 2) % 2) ^ 1);
                tma::expect(full[k % 2], a[k % 2]);
                tma::load_async(a[k % 2], A, {0, 0, 0, k}, full[k % 2]);
            }
        }
    } else {
        wait(q_full, 0);
        for (int k = 0; k < n; k++) {
            wait(full[k % 2], (k / 2) % 2);
            if (laneid() == 0) arrive(empty[k % 2]);
        }
    }
}
"""
)

RULE = Rule(
    code="TK503",
    name="circular-wait",
    contract="deadlock",
    severity="error",
    precision="proved",
    symptoms=("hang",),
    explains={"hang": Explains(5, "circular wait between roles")},
    summary="Warp roles block each other in a cycle of barrier waits",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Explores the interleavings of the kernel's warp roles (see TK502) and reports
a reachable state in which every blocked role waits on a barrier that only
another blocked role would signal later in its program: a cycle. The finding
carries the numbered interleaving that reaches the cycle. Named barriers are
part of the cycle like mbarrier waits: two ping-pong consumers each blocked at
their own `bar.sync` because neither was granted the first turn.

## Why is this bad?
Each role holds what the other needs: the kernel hangs as soon as the ring is
full. Small test sizes that never fill the ring (fewer iterations than stages)
hide it.

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
