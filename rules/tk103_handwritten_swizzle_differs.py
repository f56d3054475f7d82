"""TK103: hand-written shared-memory address math disagrees with the tile's swizzle."""

from tkcheck.checks import layout
from tkcheck.findings import Related
from tkcheck.rule import Explains, Rule

from ._common import HEADER
from ._layout_rule import cx_text, report, sw, witness


def _word(m):
    tt, rep, buf = m.tile, m.repeat, m.buffer
    return (
        f"{m.address} on '{m.smem.buffer}' differs from {tt.spelling} ({sw(m.tile_layout.swizzle_bytes)} swizzle, "
        f"what TMA / wgmma / TK's idx use): "
        + cx_text(m.cx, tt.spelling + "'s layout", "the kernel's address", "hand-written")
        + " (assuming the offset before the XOR is the tile's column-panel offset of the element)",
        witness(m.cx, tile=tt.spelling, swizzle_b="hand-written"),
        [
            Related(
                buf.location,
                f"'{buf.name}' declared here as {tt.spelling}, base guaranteed {m.guaranteed}-byte aligned",
            ),
            Related(m.smem.location, "address taken here"),
        ],
        f"for a {sw(m.tile_layout.swizzle_bytes)}-swizzled tile the XOR is "
        + (f"a ^ (((a % {rep}) >> 7) << 4) on the absolute address" if rep else "absent (unswizzled)"),
    )


def check(an):
    return report(an, RULE.code, layout.HandwrittenDiffers, _word)


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 32>;                       // 32 bf16 columns: 64-byte swizzle
__global__ __launch_bounds__(128, 1) void k(bf16 *out) {
    __shared__ tile t;
    rt_fl<16, 32> acc;
    warp::zero(acc);
    warpgroup::store(t, acc);
    warpgroup::sync(1);
    int row = threadIdx.x / 2, col = (threadIdx.x % 2) * 16;
    uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(&t.data[0])) + (row * 32 + col) * 2;
    addr ^= ((addr & 0x380) >> 7) << 4;           // the 128-byte pattern
    uint32_t v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
    out[threadIdx.x] = __float2bfloat16((float)v);
}
"""
)

_GOOD = _BAD.replace(
    "addr ^= ((addr & 0x380) >> 7) << 4;           // the 128-byte pattern",
    "addr ^= ((addr & 0x180) >> 7) << 4;           // the 64-byte pattern",
)

RULE = Rule(
    code="TK103",
    name="hand-written-swizzle-differs",
    contract="layout",
    severity="error",
    precision="proved",
    symptoms=("wrong", "nan"),
    explains={"wrong": Explains(4, "hand-written swizzle math differs from the tile layout"), "nan": Explains(3)},
    summary="Hand-written shared-memory address math (XOR swizzle) differs from the tile's layout",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Follows addresses the kernel computes itself -- `__cvta_generic_to_shared(&tile)` plus an offset,
with an XOR swizzle such as `a ^ (((a & 0x380) >> 7) << 4)` applied to the absolute address or to
the buffer-relative offset -- into raw `st.shared` / `ld.shared` / `ldmatrix` / `stmatrix`, and
proves with z3 that the address math equals the tile type's layout (the one TMA, wgmma and TK's
`idx` use) for every element and every base the tile can have. Otherwise it reports an element
`(row, col)`, the byte each side computes and the swizzle mode. The offset before the XOR is
taken to be the tile's column-panel offset of the element (stated in the finding).

## Why is this bad?
Epilogues and custom loaders often hard-code the 128-byte pattern (mask `0x380`); on a tile with
a 64- or 32-byte swizzle (narrower tiles) or on an unswizzled tile, every row after the first
reads the wrong 16-byte chunk. The result is silently wrong.

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
