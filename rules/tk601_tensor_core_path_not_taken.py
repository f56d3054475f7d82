"""TK601: the source issues async tensor-core MMAs (wgmma / tcgen05) but the compiled
SASS has none (SASS pass: runs only with `--sass`)."""

from tkcheck.checks import sass_cross
from tkcheck.checks.sass_cross import kernel_label, sass_location
from tkcheck.findings import Related
from tkcheck.rule import Rule

from ._common import finding
from ._sass_rule import addr, api, call_site, text, where_compiled, witness


def check(an):
    m = sass_cross.missing_tensor_core_path(an)
    if m is None:
        return []
    k, path, ops, sync = m.kernel, m.path, m.ops, m.sync
    first = ops[0]
    if sync:
        got = f"only {len(sync)} legacy mma.sync instructions ({sync[0].instruction.opcode} at {addr(sync[0].instruction)})"
    else:
        got = "no tensor-core instruction at all"
    arch_hint = ""
    if k.arch in ("sm_90", "sm_100", "sm_101", "sm_103", "sm_120"):
        arch_hint = (
            f"; it was built for {k.arch}, where the arch-specific features of "
            f"{k.arch}a (wgmma, setmaxnreg, tcgen05) are not available and code behind "
            f"__CUDA_ARCH_FEAT_* / arch-specific guards is compiled out"
        )
    related = call_site(first) + [Related(o.location, f"{api(o)}: a tensor-core MMA in the source") for o in ops[1:4]]
    if sync:
        loc = sass_location(sync[0].instruction, path)
        if loc:
            related.append(Related(loc, f"SASS {addr(sync[0].instruction)}: {text(sync[0].instruction)}"))
    return [
        finding(
            RULE.code,
            f"the source issues {len(ops)} async tensor-core MMA call(s) ({api(first)}) but the SASS of "
            f"'{kernel_label(k)}' ({k.arch}, {len(k.instructions)} instructions) has no HGMMA/UTC*MMA: "
            f"{got}{arch_hint}{where_compiled(k, path, first)}",
            first.location,
            related=related,
            witness=witness(
                k,
                model_mma_ops=len(ops),
                sass_async_mma=0,
                sass_mma_sync=len(sync),
                sass_instructions=len(k.instructions),
            ),
            help="build for the arch-specific target (-gencode arch=compute_90a,code=sm_90a, or sm_100a "
            "on Blackwell); plain sm_90/compute_90 drops wgmma",
        )
    ]


_BAD = """\
// built with: nvcc -gencode arch=compute_90,code=sm_90   (tkcheck --sass --sass-arch sm_90)
#include <cstdint>
__device__ __forceinline__ void mma_64x8x16(float (&d)[4], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)       // only defined for sm_90a
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\\n .reg .pred p;\\n setp.ne.b32 p, %6, 0;\\n"
                 " wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db), "r"(1));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}
__global__ void __launch_bounds__(128, 1) k(float *out, uint64_t da, uint64_t db) {
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    mma_64x8x16(d, da, db);
    reinterpret_cast<float4 *>(out)[threadIdx.x] = make_float4(d[0], d[1], d[2], d[3]);
}
"""

_GOOD = """\
// the same kernel built with: nvcc -gencode arch=compute_90a,code=sm_90a   (tkcheck --sass)
""" + _BAD.split("\n", 1)[1]

RULE = Rule(
    code="TK601",
    name="tensor-core-path-not-taken",
    contract="dispatch",
    severity="error",
    precision="proved",
    symptoms=("slow", "wrong"),
    summary="The source issues wgmma/tcgen05 MMAs but the compiled SASS has no HGMMA/UTC*MMA",
    check=check,
    engine_only=True,
    tags=("sass",),
    doc=f"""\
## What it does
With `--sass`, tkcheck compiles the file with nvcc (`-lineinfo`, cached) and reads the
SASS. This rule fires when the kernel's source issues asynchronous tensor-core MMAs —
TK's `warpgroup::mma_*`/`mm_*`, TMEM-accumulator MMAs, or inline `wgmma.mma_async` /
`tcgen05.mma` — and the SASS of that kernel contains no `HGMMA` / `UTC*MMA` at all
(absence from the whole kernel: per-line attribution is not relied on). The finding
names the arch the SASS was built for, any legacy `mma.sync` (HMMA) it found instead,
and the SASS address range the MMA's source line compiled to.

The usual cause is building for `sm_90` / `compute_90` instead of `sm_90a` (or `sm_100`
instead of `sm_100a`): wgmma and tcgen05 exist only on the arch-specific targets, and
code behind `__CUDA_ARCH_FEAT_SM90_ALL`-style guards is silently compiled out.

## Why is this bad?
The kernel either runs a slow fallback or, when the guarded code has no fallback,
computes nothing at all — with no compiler error.

## Example
The SASS rules need nvcc, so their examples are not run by the catalog test with the
other rules (`engine_only`); `tests/test_sass_rules.py` compiles these exact files.
```cuda
{_BAD}
```

Use instead:
```cuda
{_GOOD}
```
""",
)
