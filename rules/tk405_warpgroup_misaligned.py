"""TK405: a warpgroup operation (wgmma, its waits and fences) run by threads
that do not form whole aligned warpgroups."""

from tkcheck.checks import paths
from tkcheck.checks import syncscope as S
from tkcheck.model import ir
from tkcheck.checks.threads import describe
from tkcheck.rule import Rule

from ._common import HEADER, finding


def check(an):
    out = []
    n = an.threads.n
    for op in an.model.ops_of(*S.WARPGROUP_KINDS):
        if op.scope != "warpgroup" or (op.kind == ir.MMA and not paths.is_wgmma(op)):
            continue  # tcgen05 MMAs are issued by one thread
        parts = S.misaligned_groups(an, op)
        if not parts:
            continue
        g, got, missing = parts[0]
        out.append(
            finding(
                "TK405",
                f"`{op.api}` is a warpgroup operation (4 consecutive warps, the first a multiple of 4), but in "
                f"warpgroup {g} only {describe(got, n)} run it; {describe(missing, n)} do not",
                op.location,
                witness={"warpgroup": g, "running": len(got), "missing": len(missing)},
                help="assign roles by whole warpgroups (`warpgroup::groupid()`), not by warps or lanes",
            )
        )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(256, 1) void k(float *out) {
    __shared__ st_bf<64, 64> a, b;
    rt_fl<16, 64> acc;
    if (warpid() >= 2 && warpid() < 6) {     // warps 2-5 straddle two warpgroups
        warpgroup::mm_AB(acc, a, b);
        warpgroup::mma_async_wait();
    }
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(256, 1) void k(float *out) {
    __shared__ st_bf<64, 64> a, b;
    rt_fl<16, 64> acc;
    if (warpgroup::groupid() == 1) {          // warps 4-7
        warpgroup::mm_AB(acc, a, b);
        warpgroup::mma_async_wait();
    }
}
"""
)

RULE = Rule(
    code="TK405",
    name="warpgroup-misaligned",
    contract="scope",
    severity="error",
    precision="proved",
    symptoms=("wrong", "hang"),
    summary="A warpgroup operation runs on warps that do not form an aligned warpgroup",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Computes the threads that run each `warpgroup::mma_*`, `mma_async_wait`,
`mma_commit_group` and `mma_fence` and reports a warpgroup instance (threads
128g … 128g+127) that runs it only partly: roles split by warp index across a
warpgroup boundary, or a wgmma under a lane condition.
(`setmaxnreg` is TK406's, a partial `warpgroup::sync` TK501's.)

## Why is this bad?
wgmma instructions are `.sync.aligned` over a hardware warpgroup: all four
warps of an aligned warpgroup must execute the same instruction. Otherwise the
behaviour is undefined: a hang or garbage accumulators.

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
