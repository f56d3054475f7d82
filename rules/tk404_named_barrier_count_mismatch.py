"""TK404: a named barrier whose thread count disagrees with the threads that
reach it, or one id used with different counts."""

from tkcheck.checks import protocol as P
from tkcheck.checks import syncscope as S
from tkcheck.checks.threads import describe
from tkcheck.rule import Confirm, Explains, Rule

from ._common import HEADER, finding, related
from ._deadlock_common import classify, deadlock_finding


def check(an):
    out = _static(an)
    # the progress exploration: a reachable state in which roles are blocked at a named barrier
    # whose count no generation can reach (inline `bar.sync id, n` included)
    c = classify(an)
    if c is not None and c[0] == "TK404" and not any(f.location == c[2].op.location for f in out):
        code, ri, e, others = c
        ex = P.explore(an)
        sid, cnt = e.sync
        msg = (
            f"named barrier {sid} counts {cnt} threads (`{e.op.api}`), but only {P.barrier_threads(ex, sid)} "
            f"threads ever reach it: {ex.roles[ri].name} waits there forever"
        )
        out.append(
            deadlock_finding(
                an,
                code,
                ri,
                e,
                others,
                msg,
                "make the count the threads of the groups that meet at the barrier (32 per warp that "
                "syncs or arrives there)",
            )
        )
    return out


def _static(an):
    out = []
    n = an.threads.n
    uses = S.named_barrier_uses(an)
    if not uses:
        return out
    by_id: dict[int, list] = {}
    for u in uses:
        by_id.setdefault(u.bar_id, []).append(u)
    for bid, us in sorted(by_id.items()):
        counts = {u.count for u in us}
        if None in counts:
            continue
        if len(counts) > 1:
            us_sorted = sorted(us, key=lambda u: u.op.order)
            # a use outside loops by every thread that ever uses this id (the prologue's
            # __syncthreads, the consumers' `group<8>::sync(0)` in their setup) completes before any
            # of them reaches a later use: the barrier is free again, and may take another count
            while (
                len(us_sorted) > 1
                and us_sorted[0].threads is not None
                and all(u.threads is not None and u.threads <= us_sorted[0].threads for u in us_sorted)
                and not us_sorted[0].op.loops
                and not us_sorted[0].op.guard.uniform
                and us_sorted[0].op.guard.exact
            ):
                us_sorted = us_sorted[1:]
            if len({u.count for u in us_sorted}) < 2:
                continue
            a = us_sorted[0]
            b = next(u for u in us_sorted if u.count != a.count)
            out.append(
                finding(
                    "TK404",
                    f"named barrier {bid} is used with {b.count} threads here (`{b.op.api}`, {describe(b.threads, n)}) "
                    f"and with {a.count} threads elsewhere (`{a.op.api}`, {describe(a.threads, n)}): "
                    "one hardware barrier, two different expected counts",
                    b.op.location,
                    related=[related(a.op, f"barrier {bid} used with count {a.count} here")],
                    witness={"barrier_id": bid, "counts": sorted(counts)},
                    help="give each group its own barrier id (TK's templates reserve some ids, e.g. lcf uses 14 "
                    "and 15)",
                )
            )
            continue
        (count,) = counts
        reach = frozenset().union(*(u.threads for u in us))
        if len(reach) > count:
            u = max(us, key=lambda u: len(u.threads))
            others = [x for x in us if x is not u]
            out.append(
                finding(
                    "TK404",
                    f"named barrier {bid} expects {count} threads per use, but {len(reach)} threads reach it "
                    f"({describe(reach, n)}): groups that should synchronise separately pass it together "
                    "with each other's threads",
                    u.op.location,
                    related=[related(x.op, f"also reached here by {describe(x.threads, n)}") for x in others],
                    witness={"barrier_id": bid, "count": count, "reaching": len(reach)},
                    help="use a distinct barrier id per group, e.g. `warpgroup::sync(1 + warpgroup::groupid())`",
                )
            )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(256, 1) void k(float *out) {
    __shared__ float buf[256];
    buf[threadIdx.x] = threadIdx.x;
    warpgroup::sync(1);                  // both warpgroups: 256 threads on a 128-thread barrier
    out[threadIdx.x] = buf[threadIdx.x ^ 64];
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(256, 1) void k(float *out) {
    __shared__ float buf[256];
    buf[threadIdx.x] = threadIdx.x;
    warpgroup::sync(1 + warpgroup::groupid());   // one barrier id per warpgroup
    out[threadIdx.x] = buf[threadIdx.x ^ 64];
}
"""
)

RULE = Rule(
    code="TK404",
    name="named-barrier-count-mismatch",
    contract="scope",
    severity="error",
    precision="proved",
    symptoms=("hang", "wrong"),
    explains={
        "hang": Explains(4, "two uses of one named barrier id with different counts"),
        "wrong": Explains(4, "a named barrier id shared by groups that should sync separately"),
    },
    confirm=Confirm(widen=("stagger-writers-before-barrier",)),
    summary="A named barrier's thread count differs from the threads that reach it, or an id is used with two counts",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Evaluates the barrier id of every `bar.sync id, count` the kernel issues —
`group<N>::sync(id)` / `warpgroup::sync(id)` (count 32*N), `everyone::sync(id)`
(the block), `__syncthreads()` (id 0, the block) — per thread, and reports

* an id used with different counts at different sites, and
* an id reached, over all its sites, by more threads than its count: two
  groups that should synchronise separately share one barrier.

One id reached from several role branches is fine when the counts agree and
the threads add up: TK's `lcf` template reaches `bar.sync 15` (the whole
block) from both the producer and the consumer branch. Fewer threads than the
count is TK501's question (a barrier some participants never reach), except
where the progress exploration (see TK502) proves it: a reachable state in
which roles are blocked at a named barrier (`bar.sync` / `bar.arrive` in
inline PTX included) whose count is more than the threads of every role that
ever syncs or arrives there (32 per warp), and every role that could still
arrive is blocked too. That finding carries the interleaving that leads to it.

## Why is this bad?
A hardware barrier completes when `count` threads have arrived. With two
warpgroups on one 128-thread barrier, a warpgroup can leave with the other's
warps, before its own writes are done (wrong results); mixed counts on one id
are undefined and typically hang.

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
