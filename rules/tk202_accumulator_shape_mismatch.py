"""TK202: a wgmma whose accumulator, A and B tiles do not fit together."""

from tkcheck.checks import accumulator as A
from tkcheck.checks import paths
from tkcheck.model import ir
from tkcheck.rule import Explains, Rule

from ._common import HEADER, finding


def check(an):
    out = []
    for op in an.model.ops_of(ir.MMA):
        if not paths.is_wgmma(op):
            continue
        probs = A.mma_shape_problems(op)
        if not probs:
            continue
        # the problems are decided over the three operands' types
        assert op.mma is not None and op.mma.acc and op.mma.a and op.mma.b
        d, a, b = op.mma.acc.type, op.mma.a.type, op.mma.b.type
        out.append(
            finding(
                "TK202",
                f"`{op.api}` with accumulator `{d.spelling}`, A `{a.spelling}`, B `{b.spelling}`: " + "; ".join(probs),
                op.location,
                witness={"acc": d.spelling, "a": a.spelling, "b": b.spelling},
                help="a warpgroup wgmma computes a 64 x N tile: each warp's accumulator is rt_fl<16, N> "
                "(N = B's output width), and A's K must equal B's K",
            )
        )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(bf16 *out) {
    __shared__ st_bf<64, 64> a, b;
    __shared__ st_bf<64, 128> c;
    rt_fl<16, 128> acc;                // 128 columns, the MMA produces 64
    warp::zero(acc);
    warpgroup::mma_AB(acc, a, b);
    warpgroup::mma_async_wait();
    warpgroup::store(c, acc);
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(bf16 *out) {
    __shared__ st_bf<64, 64> a, b;
    __shared__ st_bf<64, 64> c;
    rt_fl<16, 64> acc;
    warp::zero(acc);
    warpgroup::mma_AB(acc, a, b);
    warpgroup::mma_async_wait();
    warpgroup::store(c, acc);
}
"""
)

RULE = Rule(
    code="TK202",
    name="accumulator-shape-mismatch",
    contract="accumulator",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    explains={"wrong": Explains(4, "the accumulator shape disagrees with the MMA")},
    summary="The accumulator tile of a wgmma does not have the shape or type the MMA produces",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Checks every `warpgroup::mma_*` / `mm_*` the way TK's own `static_assert`s do,
in elements: a shared A tile has 64 rows (M) and each warp's accumulator has
M/4 = 16 rows; a register A tile has as many rows as the accumulator; the
accumulator's columns equal B's output width N (B's columns for `AB`/`AtB`,
B's rows for `ABt`/`AtBt`); A's K equals B's K; A and B have the same element
type; the accumulator is `float` or `half`. Only 16-bit A/B types are checked
(fp8 tiles count columns differently).

## Why is this bad?
The real headers reject most of these at compile time; tkcheck names the
mismatch (with the numbers) without a compiler, and catches it in kernels
analysed with the declaration-only model.

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
