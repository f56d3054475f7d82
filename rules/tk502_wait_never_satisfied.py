"""TK502: a wait whose phase no remaining role will ever complete."""

from tkcheck.checks import protocol as P
from tkcheck.rule import Explains, Rule

from ._common import HEADER
from ._deadlock_common import classify, deadlock_finding


def check(an):
    c = classify(an)
    if c is None or c[0] != "TK502":
        return []
    code, ri, e, others = c
    ex = P.explore(an)
    sizes = ", ".join(f"{k} = {v}" for k, v in sorted(ex.params.items()))
    if e.kind == "sync":
        arrived, gen = P.sync_state(ex, e.sync[0])
        msg = (
            f"{ex.roles[ri].name} waits at {P.blocked_on(e)} (`{e.op.api}`, {e.sync[1]} threads) but no role "
            f"will complete that generation: {arrived} thread(s) have arrived and no role that could still "
            "arrive there is left" + (f" (with {sizes})" if sizes else "")
        )
    else:
        msg = (
            f"{ex.roles[ri].name} waits on '{P.elem_str(e.elem)}' (parity {e.parity}) but no role will complete "
            f"that phase: every role that signals it has finished" + (f" (with {sizes})" if sizes else "")
        )
    return [
        deadlock_finding(
            an,
            code,
            ri,
            e,
            others,
            msg,
            "hand each turn to the named barrier the other group waits at, so that every generation a "
            "group syncs on gets its count of threads"
            if e.kind == "sync"
            else "make the producing and consuming roles run the same number of iterations over "
            "the ring, and signal every phase that is waited on",
        )
    ]


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
            for (int k = 0; k < n - 1; k++) {      // one load short
                wait(empty[k % 2], ((k / 2) % 2) ^ 1);
                tma::expect(full[k % 2], a[k % 2]);
                tma::load_async(a[k % 2], A, {0, 0, 0, k}, full[k % 2]);
            }
        }
    } else {
        for (int k = 0; k < n; k++) {
            wait(full[k % 2], (k / 2) % 2);
            if (laneid() == 0) arrive(empty[k % 2]);
        }
    }
}
"""
)

_GOOD = _BAD.replace("for (int k = 0; k < n - 1; k++) {      // one load short", "for (int k = 0; k < n; k++) {")

RULE = Rule(
    code="TK502",
    name="wait-never-satisfied",
    contract="deadlock",
    severity="error",
    precision="proved",
    symptoms=("hang",),
    explains={"hang": Explains(5, "roles disagree on the trip count: one side waits for a phase never produced")},
    summary="A role waits for a barrier phase that no remaining role will complete",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Abstracts each warp role (the threads with the same guard pattern) into a
program of waits, arrivals, expects, loads and barriers, unrolls its loops
with small concrete sizes (every ring wraps at least twice) and explores the
interleavings of the roles. A reachable state in which a role waits on a
barrier phase while every role that could still signal that barrier has
finished is reported with the interleaving that leads to it.

Named barriers run in the same exploration with their PTX semantics
(`bar.sync id, n` / `group<N>::sync(id)` wait, `bar.arrive id, n` /
`group<N>::arrive(id)` count without waiting, 32 threads per arriving warp,
a generation completes at the count): a role blocked at a named barrier that
no other role will arrive at again is reported the same way (a ping-pong
consumer that hands the turn back to its own barrier).

## Why is this bad?
The waiting warps spin forever: the kernel hangs, and compute-sanitizer only
reports a timeout. Typical causes are roles disagreeing on the trip count
(the producer loads one stage fewer than the consumers wait for) or a signal
under a condition that is false for the last iteration.

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
