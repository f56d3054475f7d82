"""TK203: a warp reads or writes TMEM lanes outside its lane quarter."""

from tkcheck.checks import tmem as T
from tkcheck.rule import Rule

from ._common import HEADER, finding


def check(an):
    out = []
    for v in T.facts(an, "lanes"):
        op = v.op
        ref = op.operands[0]
        t = op.tmem.tile_type if op.tmem is not None else None
        out.append(
            finding(
                "TK203",
                f"warp {v.warp} {'stores to' if op.tmem is not None and op.tmem.action == 'store' else 'loads from'} TMEM lanes "
                f"{v.lanes[0]}..{v.lanes[1] - 1} of `{ref}` (`{op.api}` of {t.spelling if t else 'a tile'}), but "
                f"warp {v.warp} may access only lanes {v.quarter[0]}..{v.quarter[1] - 1} "
                f"(its quarter: 32 * (warp % 4) = 32 * {v.warp % 4})",
                op.location,
                witness={"warp": v.warp, "lanes": list(v.lanes), "allowed": list(v.quarter), "tile": str(ref)},
                help="give each warp the rows of its own quarter: `subtile<tt<T, 32, C>>(32 * (warpid() % 4), col)`, "
                "or use `warpgroup::load_async` on the whole 128-lane tile from an aligned warpgroup",
            )
        )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(int n) {
    tensor_allocator<1, 1> tm;
    tt<float, 128, 64> acc = tm.allocate<tt<float, 128, 64>>(0);
    rt_fl<32, 64> r;
    // warp w reads the rows of quarter (w + 1) % 4
    warp::load_async(r, acc.subtile<tt<float, 32, 64>>(32 * ((warpid() + 1) % 4), 0));
    tensor_load_wait();
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(int n) {
    tensor_allocator<1, 1> tm;
    tt<float, 128, 64> acc = tm.allocate<tt<float, 128, 64>>(0);
    rt_fl<32, 64> r;
    warp::load_async(r, acc.subtile<tt<float, 32, 64>>(32 * (warpid() % 4), 0));
    tensor_load_wait();
}
"""
)

RULE = Rule(
    code="TK203",
    name="tmem-lane-quarter",
    contract="accumulator",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    summary="A warp's tcgen05.ld/st touches TMEM lanes outside 32*(warp%4) .. 32*(warp%4)+31",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For every TMEM load or store of a `tt` tile (`warp::load_async(rt, tt)`,
`warp::store_async(tt, rt)`, and the `warpgroup::` / `group<8>::` forms, which TK
splits per warp as `32 * warpid()` or `32 * (warpid() % 4) + 16 * (warpid() / 4)`
rows), computes, for each warp w that executes it, the lanes it accesses: the
tile's lane base (from `allocate`), plus the `subtile<...>(row, col)` row offsets,
plus the per-warp split, over the rows of the accessed tile. It reports the first
warp whose lanes leave `[32 (w % 4), 32 (w % 4) + 32)`.

Blackwell-only (sm_100a): the rule is built from the PTX ISA's access restriction
for `tcgen05.ld` / `tcgen05.st` ("warp w of a CTA can access lanes 32 (w % 4) to
32 (w % 4) + 31") and TK's `tt.cuh` / `tensor_to_register.cuh` address arithmetic;
it was **not measured** on a Blackwell GPU in this project.

Only constant lane offsets are judged (after substituting each executing warp);
an offset that depends on a loop counter, a runtime value or an opaque expression
gives no finding. Half tiles (`allocate(superlane, col)`) use TK's
`superlane * 16` lane offset.

## Why is this bad?
The tensor core's lane restriction is architectural: a warp addressing another
quarter's lanes gets undefined results (the data of the wrong rows, or an
illegal-instruction error), so the epilogue writes rows of the accumulator that
belong to another warp, or garbage.

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
