"""TK102: a shared tile's base does not meet the alignment its consumers need."""

from tkcheck.checks import layout
from tkcheck.findings import Related
from tkcheck.rule import Explains, Rule

from ._common import HEADER
from ._layout_rule import cx_text, report, sw, witness


def _word(m):
    buf = m.buffer
    if isinstance(m, layout.TmaMisaligned):
        return (
            f"the shared destination of {m.op.api} ('{m.op.buffer}') is only guaranteed "
            f"{m.guaranteed}-byte aligned (e.g. address {m.witness_base:#x}); TMA tensor "
            f"copies need a 128-byte-aligned shared address and fault otherwise",
            {"required": m.required, "guaranteed": m.guaranteed, "witness_base": m.witness_base},
            [
                Related(
                    buf.location,
                    f"'{buf.name}' declared here (alignment {buf.alignment}"
                    f"{f', +{buf.base_offset} bytes' if buf.base_offset else ''})",
                )
            ],
            "align the tile to 128 bytes (TK tiles are __align__(128); use TK's shared_allocator)",
        )
    tt, rep = m.tile, m.required
    return (
        f"{m.address} on '{m.smem.buffer}' agrees with {tt.spelling} ({sw(m.tile_layout.swizzle_bytes)} swizzle) "
        f"only when the tile base is {rep}-byte aligned, but it is only guaranteed "
        f"{m.guaranteed}-byte aligned: "
        + cx_text(m.cx, tt.spelling + "'s layout", "the kernel's address", "hand-written"),
        witness(m.cx, required=rep, guaranteed=m.guaranteed, tile=tt.spelling, swizzle_b="hand-written"),
        [
            Related(
                buf.location,
                f"'{buf.name}' declared here as {tt.spelling}, base guaranteed {m.guaranteed}-byte aligned",
            ),
            Related(m.smem.location, "address taken here"),
        ],
        f"swizzle the absolute shared address (as TK's idx, TMA and wgmma do), or align "
        f"the tile to {rep} bytes (alignas({rep}) / TK's shared_allocator)",
    )


def check(an):
    return report(an, RULE.code, (layout.TmaMisaligned, layout.HandwrittenNeedsAlignment), _word)


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;                       // 128-byte swizzle: the pattern repeats every 1024 bytes
__global__ __launch_bounds__(128, 1) void k(bf16 *out) {
    __shared__ tile t;                            // TK tiles are only 128-byte aligned
    rt_fl<16, 64> acc;
    warp::zero(acc);
    warpgroup::store(t, acc);
    warpgroup::sync(1);
    int row = threadIdx.x / 2, col = (threadIdx.x % 2) * 32;
    uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(&t.data[0]));
    uint32_t off = (row * 64 + col) * 2;
    off ^= ((off & 0x380) >> 7) << 4;             // XOR on the buffer-relative offset
    uint32_t addr = base + off;
    uint32_t v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
    out[threadIdx.x] = __float2bfloat16((float)v);
}
"""
)

_GOOD = _BAD.replace(
    "    __shared__ tile t;                            // TK tiles are only 128-byte aligned",
    "    __shared__ alignas(1024) tile t;              // aligned to the swizzle repeat",
)

RULE = Rule(
    code="TK102",
    name="swizzle-misaligned-base",
    contract="layout",
    severity="error",
    precision="proved",
    symptoms=("wrong", "nan"),
    explains={
        "nan": Explains(5, "misaligned tile base: the swizzle pattern is off by a phase"),
        "wrong": Explains(4, "misaligned tile base"),
    },
    summary="A shared tile base is not aligned as its consumers require (TMA 128 B; relative XOR: swizzle repeat)",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Computes the alignment the model guarantees for each shared tile element (TK tiles are
`__align__(128)`; `shared_allocator` aligns each allocation to 1024; `alignas`; array strides and
struct member offsets) and checks it against what each consumer needs, per the measured Hopper
contract: TMA and bulk-tensor copies need a 128-byte-aligned shared address; TMA, wgmma
descriptors and TK's `idx` swizzle on ABSOLUTE address bits, so 128-byte-aligned tiles that are
not 1024-aligned are correct and stay clean; a hand-written XOR applied to a BUFFER-RELATIVE
offset agrees with them only when the base is aligned to the swizzle repeat (`swizzle_bytes * 8`).
For the latter, z3 proves the address math equal to the tile's layout at the repeat alignment
and gives an element `(row, col)` where it differs at the guaranteed alignment.

## Why is this bad?
A TMA destination off a 128-byte boundary faults ("misaligned address"). A relative XOR on a
tile that happens to be only 128-byte aligned reads the right rows in the wrong 16-byte chunks:
wrong results that depend on where the compiler placed the tile.

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
