"""TK104: a reinterpret_cast view of shared tiles whose layout differs from the tiles'."""

from tkcheck.checks import layout
from tkcheck.findings import Related
from tkcheck.rule import Explains, Rule

from ._common import HEADER
from ._layout_rule import cx_text, report, sw, witness


def _word(m):
    res, buf, declared, n_t = m.cx, m.buffer, m.declared, m.tiles
    msg = (
        f"{m.accessor} views '{m.ref}' as {m.view.spelling} ({sw(m.view_layout.swizzle_bytes)} swizzle) over "
        f"{n_t} x {declared.spelling} ({sw(m.declared_layout.swizzle_bytes)} swizzle) "
        + ("laid side by side" if m.side_by_side else "stacked")
        + ": "
    )
    if res.offset_b is None:
        msg += (
            f"element ({res.row}, {res.col}) of the view lies outside the {n_t} tile(s) the buffer holds from '{m.ref}'"
        )
    else:
        msg += cx_text(res, "the view", f"the buffer's {declared.spelling} tiles")
    return (
        msg,
        witness(res, view=m.view.spelling, buffer_type=declared.spelling, tiles=n_t),
        [
            Related(
                buf.location,
                f"'{buf.name}' declared here as {declared.spelling}"
                + (f" [{', '.join(str(d) for d in buf.dims)}]" if buf.dims else ""),
            )
        ],
        "view a buffer only as a tile type whose layout equals its tiles' layout (e.g. 64-column "
        "128B-swizzled tiles side by side read as one wider 128B-swizzled tile)",
    )


def check(an):
    return report(an, RULE.code, layout.ViewLayoutMismatch, _word)


_BAD = (
    HEADER
    + """
using b_tile = st_bf<64, 32>;                     // 64-byte swizzle, 4 KiB per tile
using wide_b = st_bf<64, 128>;                    // 128-byte swizzle
using b_gl = gl<bf16, 1, 1, -1, -1, b_tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ b_gl B) {
    __shared__ semaphore bar;
    __shared__ st_bf<64, 64> a;
    __shared__ b_tile b[4];
    rt_fl<16, 128> acc;
    if (threadIdx.x == 0) init_semaphore(bar, 0, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        tma::expect_bytes(bar, 4 * size_bytes<b_tile>);
        tma::load_async(b[0], B, {0, 0, 0, 0}, bar);
        tma::load_async(b[1], B, {0, 0, 0, 1}, bar);
        tma::load_async(b[2], B, {0, 0, 0, 2}, bar);
        tma::load_async(b[3], B, {0, 0, 0, 3}, bar);
    }
    wait(bar, 0);
    warpgroup::mm_AB(acc, a, reinterpret_cast<wide_b&>(b[0]));   // four 32-column tiles as one
    warpgroup::mma_async_wait();
}
"""
)

_GOOD = (
    _BAD.replace(
        "using b_tile = st_bf<64, 32>;                     // 64-byte swizzle, 4 KiB per tile",
        "using b_tile = st_bf<64, 64>;                     // 128-byte swizzle, 8 KiB per tile",
    )
    .replace("using wide_b = st_bf<64, 128>;", "using wide_b = st_bf<64, 256>;")
    .replace("rt_fl<16, 128> acc;", "rt_fl<16, 256> acc;")
    .replace("// four 32-column tiles as one", "// four 64-column tiles as one (TK's GEMM idiom)")
)

RULE = Rule(
    code="TK104",
    name="tile-reinterpret-incompatible",
    contract="layout",
    severity="error",
    precision="proved",
    symptoms=("wrong", "nan"),
    explains={"wrong": Explains(4, "a reinterpreting view maps elements to other bytes"), "nan": Explains(3)},
    summary="A reinterpret_cast view of shared tiles does not map elements to the bytes the tiles hold",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
When a buffer of tiles is read through another tile type (`reinterpret_cast<wide&>(b[0])`, the
GEMM idiom of several narrow B tiles used as one wide operand, or a taller/narrower view), builds
the view's layout as its consumer reads it (wgmma descriptor, TMA box, TK's `idx`) and the
buffer's tiles laid back to back (tile i at `i * sizeof(tile)`), and proves with z3 that every
element of the view is the byte the buffer's own tile types put it at. Otherwise it reports an
element `(row, col)`, the two byte offsets and the two swizzle modes.

## Why is this bad?
Four 64-column 128-byte-swizzled tiles are exactly one 256-column 128-byte-swizzled tile (each
is one swizzle panel); four 32-column 64-byte-swizzled tiles are not one 128-column tile: the
panels, their heights and the XOR pattern all differ. The MMA then multiplies permuted data with
no error anywhere.

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
