"""TK201: an accumulator read, stored, added or zeroed while the wgmma that
writes it may still be in flight."""

from tkcheck.checks import accumulator as A
from tkcheck.checks import paths
from tkcheck.checks.threads import describe
from tkcheck.model import ir
from tkcheck.rule import Confirm, Explains, Rule, WGMMA_ACCUMULATOR_READ

from ._common import HEADER, finding, related


def check(an):
    out = []
    fl = paths.flow(an)
    n = an.threads.n
    reported = set()
    for mma in fl.ops:
        if not paths.is_wgmma(mma):
            continue
        acc = A.acc_ref(mma)
        if acc is None or an.threads.executing(mma) is None or not mma.guard.exact:
            continue

        def is_target(op, acc=acc):
            if op.kind == ir.REG_ACCESS and op.buffer is not None:
                return A.reg_access_touches(op.buffer, acc) is True
            if op.kind == ir.MMA:
                ra = A.reg_a_operand(op)
                return ra is not None and paths.refs_may_alias(ra, acc) is True
            return False

        relevant = [o for o in fl.ops if o.kind in (ir.MMA_WAIT, ir.REG_ACCESS, ir.MMA, ir.MMA_COMMIT, ir.EXIT)]
        for t in paths.representatives(an, mma, relevant):
            for hit in paths.in_flight_hits(an, mma, t, is_target):
                op = hit.target
                key = (op.location.row, op.location.column, str(acc))
                if key in reported or not paths.uniform_feasible(mma, op, hit.back_edge):
                    continue
                reported.add(key)
                what = (
                    f"uses `{acc}` as the A operand of `{op.api}`"
                    if op.kind == ir.MMA
                    else f"{'zeroes' if op.access_mode == 'zero' else 'accesses'} `{acc}` (`{op.api}`)"
                )
                how = "in the next loop iteration, " if hit.back_edge else ""
                waits = [o for o in fl.ops if o.kind == ir.MMA_WAIT]
                raw = mma.mma is not None and not mma.mma.self_commit
                wait_name = "`wgmma.wait_group N`" if raw else "`warpgroup::mma_async_wait`"
                out.append(
                    finding(
                        "TK201",
                        f"{how}{describe(frozenset([t]), n).split(' (')[0]} {what} while the wgmma "
                        f"`{mma.api}` writing it may still be in flight: no {wait_name} "
                        f"that retires it lies on this path"
                        + (
                            f" ({hit.groups} wgmma group(s) committed after it; the waits on the path allow more "
                            "in flight)"
                            if hit.groups > 0 and any(o.count is not None and o.count != ir.E.Const(0) for o in waits)
                            else " (its wgmma group is not committed on this path)"
                            if hit.groups < 0
                            else ""
                        ),
                        op.location,
                        related=[related(mma, f"the wgmma that writes `{acc}` is issued here")],
                        witness={
                            "thread": t,
                            "accumulator": str(acc),
                            "back_edge": hit.back_edge,
                            "groups_after": hit.groups,
                        },
                        help="call `warpgroup::mma_async_wait()` (or `mma_async_wait<N>` with N at most the "
                        "number of wgmma groups committed after this one) before touching the accumulator",
                    )
                )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
__global__ __launch_bounds__(128, 1) void k(bf16 *out) {
    __shared__ tile a, b, c;
    rt_fl<16, 64> acc;
    warp::zero(acc);
    warpgroup::mma_AB(acc, a, b);
    warpgroup::store(c, acc);          // the wgmma may still be writing acc
    warpgroup::mma_async_wait();
}
"""
)

_GOOD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
__global__ __launch_bounds__(128, 1) void k(bf16 *out) {
    __shared__ tile a, b, c;
    rt_fl<16, 64> acc;
    warp::zero(acc);
    warpgroup::mma_AB(acc, a, b);
    warpgroup::mma_async_wait();
    warpgroup::store(c, acc);
}
"""
)

RULE = Rule(
    code="TK201",
    name="accumulator-read-before-wait",
    contract="accumulator",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    explains={"wrong": Explains(5, "the accumulator is read before the asynchronous MMA completed")},
    confirm=Confirm(wgmma_race=WGMMA_ACCUMULATOR_READ),
    summary="A wgmma accumulator is read, stored, added or zeroed before the mma_async_wait that retires it",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Follows every path of every thread of the warpgroup from each `warpgroup::mma_*` /
`mm_*` (each one commits one wgmma group) to the accesses of its register
accumulator: `warp::`/`warpgroup::` register ops (`zero`, `add`, `mul_row`,
`copy`, `store`, ...) and its use as the register A operand of a later MMA.
An access is reported when some path reaches it with no
`warpgroup::mma_async_wait<N>()` that retires the MMA: `wait<N>` retires it
only if at least N wgmma groups were committed after it on that path (loop
back edges included, so a read at the top of the next iteration counts).
Chaining another wgmma into the same accumulator is not an access.

Raw-PTX wgmma counts the same way: a `wgmma.mma_async` writes the local
`float` array its `"+f"` operands are elements of, joins the group the next
`wgmma.commit_group` closes (until then no `wgmma.wait_group` retires it), and
the array's element reads and writes in C are its accesses (an empty asm that
only names the registers, a compiler fence, is none).

A wait the analysis cannot place (unknown guard, a condition it cannot relate
to the access) counts as present: only a path with provably no retiring wait
is reported.

## Why is this bad?
wgmma is asynchronous: the accumulator registers are written until
`wgmma.wait_group` returns. Reading them earlier reads a partial sum (wrong
results that change from run to run); writing them races with the tensor core.

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
