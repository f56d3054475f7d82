"""TK501: a block or group barrier reached by only part of its participants."""
from tkcheck.checks import scope
from tkcheck.checks.threads import describe
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def check(an):
    out = []
    n = an.threads.n
    if n is None:
        return out
    exits = [o for o in an.model.ops_of(ir.EXIT)]
    for op in an.model.ops_of(ir.SYNC):
        kind = op.detail.get("sync_kind")
        if kind == "block" or (kind == "named" and op.count is not None and op.count.eval({}) == n
                               and op.api.startswith("everyone")):
            ex = an.threads.executing(op)
            if ex is None or ex == frozenset(range(n)):
                continue
            missing = frozenset(range(n)) - ex
            rel = [related(e, "these threads leave the kernel here") for e in exits
                   if an.threads.executing(e) and an.threads.executing(e) & missing]
            out.append(finding(
                "TK501",
                f"`{op.api}` is a block-wide barrier but only {describe(ex, n)} reach it; "
                f"{describe(missing, n)} never do",
                op.location, related=rel,
                witness={"reaching": describe(ex, n), "missing": describe(missing, n)},
                help="move the barrier out of the role branch, or use a named barrier whose count is the "
                     "threads of the roles that meet there (e.g. `group<N>::sync(id)`)"))
        elif kind == "named" and op.api.split("::")[0] in ("warpgroup", "group", "warp") or (
                kind == "named" and "::sync" in op.api and op.group_warps):
            size = 32 * op.group_warps if op.group_warps else None
            if not size:
                continue
            parts = scope.partial_groups(an, op, size)
            if not parts:
                continue
            g, ts = parts[0]
            out.append(finding(
                "TK501",
                f"`{op.api}` synchronises a group of {size} threads, but in group {g} only "
                f"{describe(ts, n)} reach it",
                op.location,
                witness={"group": g, "reaching": len(ts), "group_threads": size},
                help="every thread of the group must reach the group barrier; hoist it out of the lane/warp "
                     "condition"))
    return out


_BAD = HEADER + """
__global__ __launch_bounds__(384, 1) void k(float *out) {
    __shared__ float buf[256];
    if (warpgroup::groupid() == 0) {
        buf[threadIdx.x] = 1.0f;
        __syncthreads();                 // the other two warpgroups never arrive
    }
    out[threadIdx.x] = buf[threadIdx.x % 128];
}
"""

_GOOD = HEADER + """
__global__ __launch_bounds__(384, 1) void k(float *out) {
    __shared__ float buf[256];
    if (warpgroup::groupid() == 0) {
        buf[threadIdx.x] = 1.0f;
    }
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x % 128];
}
"""

RULE = Rule(
    code="TK501",
    name="barrier-in-divergent-branch",
    contract="deadlock",
    severity="error",
    precision="proved",
    symptoms=("hang",),
    summary="A block or group barrier under a condition that not all of its participants take",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Computes the threads that reach every `__syncthreads()` / `everyone::sync`
(all threads of the block must) and every `group<N>::sync(id)` /
`warpgroup::sync(id)` (all 32*N threads of each group instance must), taking
role branches and earlier `return`s into account, and reports a barrier that
some of its participants can never reach.

Named barriers with an explicit count reached from several role branches (as
TK's `prototype::lcf` does) are legal when exactly `count` threads arrive; that
is TK404's question, not this rule's.

## Why is this bad?
`bar.sync` waits for its full thread count. Threads that skip the branch never
arrive: the block hangs (or, with `__syncthreads` in some architectures'
implementations, synchronises with an unrelated later barrier).

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
