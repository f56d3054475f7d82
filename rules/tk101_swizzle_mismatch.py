"""TK101: two accessors of one shared tile assume different swizzle modes."""
from tkcheck.rule import Rule

from ._common import HEADER
from ._layout_rule import check_code


def check(an):
    return check_code(an, "TK101")


_BAD = HEADER + """
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

_GOOD = _BAD.replace("warpgroup::mm_ABt(acc, reinterpret_cast<tile64&>(a), a);",
                     "warpgroup::mm_ABt(acc, a, a);")

RULE = Rule(
    code="TK101",
    name="swizzle-mismatch",
    contract="layout",
    severity="error",
    precision="proved",
    symptoms=("wrong", "nan"),
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
