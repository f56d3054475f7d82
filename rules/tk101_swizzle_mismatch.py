"""TK101: two accessors of one shared tile assume different swizzle modes."""

from tkcheck.checks import layout
from tkcheck.findings import Related
from tkcheck.rule import Explains, Rule

from ._common import HEADER
from ._layout_rule import cx_text, report, sw, witness


def _word(m):
    res = m.cx
    if isinstance(m, layout.DescriptorSwizzleMismatch):
        return (
            f"{m.op.api} on '{m.gl}' uses the TMA descriptor built for {m.descriptor.spelling} "
            f"({sw(m.descriptor_layout.swizzle_bytes)} swizzle) but the shared tile '{m.op.buffer}' is "
            f"{m.tile.spelling} ({sw(m.tile_layout.swizzle_bytes)} swizzle): "
            + cx_text(res, "the TMA box", "the tile's layout"),
            witness(res, descriptor=m.descriptor.spelling, tile=m.tile.spelling),
            [
                Related(
                    m.buffer.location, f"'{m.buffer.name}' declared here as {layout.element_type(m.buffer).spelling}"
                )
            ],
            "register the destination's exact tile type on the gl (gl<..., tile_t>) so the "
            "descriptor and the tile agree on the swizzle mode",
        )
    return (
        f"{m.accessor} reads '{m.ref}' as {m.view.spelling} ({sw(m.view_layout.swizzle_bytes)} swizzle) but "
        f"the buffer holds {m.declared.spelling} ({sw(m.declared_layout.swizzle_bytes)} swizzle): "
        + cx_text(res, m.view.spelling, m.declared.spelling),
        witness(res, view=m.view.spelling, buffer_type=m.declared.spelling),
        [Related(m.buffer.location, f"'{m.buffer.name}' declared here as {m.declared.spelling}")],
        "use the buffer's own tile type at every accessor (or declare the buffer with the "
        "swizzle mode the consumer expects)",
    )


def check(an):
    return report(an, RULE.code, (layout.DescriptorSwizzleMismatch, layout.ViewSwizzleMismatch), _word)


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;                       // 128-byte swizzle (64 bf16 columns)
using tile64 = st_bf<64, 64, true, 64>;           // the same tile, 64-byte swizzle
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout A) {
    __shared__ semaphore bar;
    __shared__ tile a;
    rt_fl<16, 64> acc;
    if (threadIdx.x == 0) init_semaphore(bar, 0, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        tma::expect(bar, a);
        tma::load_async(a, A, {0, 0, 0, 0}, bar);
    }
    wait(bar, 0);
    warpgroup::mm_ABt(acc, reinterpret_cast<tile64&>(a), a);
    warpgroup::mma_async_wait();
}
"""
)

_GOOD = _BAD.replace("warpgroup::mm_ABt(acc, reinterpret_cast<tile64&>(a), a);", "warpgroup::mm_ABt(acc, a, a);")

RULE = Rule(
    code="TK101",
    name="swizzle-mismatch",
    contract="layout",
    severity="error",
    precision="proved",
    symptoms=("wrong", "nan"),
    explains={
        "nan": Explains(5, "the tensor core / TMA reads the tile with another swizzle: scrambled or NaN values"),
        "wrong": Explains(4, "the swizzles disagree: elements land in the wrong places"),
    },
    summary="A TMA descriptor or wgmma operand assumes a different swizzle than the shared tile holds",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For every shared tile, compares the element-to-byte map of each accessor with the map of the
tile's own type: the TMA descriptor registered on the `gl` for the copy (`TmaBoxLayout`), the
wgmma shared-memory descriptor built from the tile type at the MMA call (K- or MN-major), and
`reinterpret_cast` to a tile of the same shape but another swizzle mode. z3 proves the two maps
equal for every element and every admissible base, or returns a concrete element `(row, col)`,
the two byte offsets and the two swizzle modes.

## Why is this bad?
A swizzle disagreement does not crash or hang: the tensor cores silently read scrambled
16-byte chunks, and the result is wrong by a few units or NaN. No runtime tool detects it.

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
