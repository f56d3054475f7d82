"""TK603: the compiled SASS lacks a synchronisation the source analysis relied on
(SASS pass: runs only with `--sass`)."""
from tkcheck.checks import sass_cross
from tkcheck.rule import Rule

_BAD = """\
// built for sm_90 (tkcheck --sass --sass-arch sm_90): the feature guard is off
#include <cstdint>
__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void proxy_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)        // wrong guard: the fence is needed on every arch
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
__global__ void __launch_bounds__(128, 1) k(float *out) {
    __shared__ alignas(128) float buf[1024];
    for (int i = threadIdx.x; i < 1024; i += 128) buf[i] = (float)i;
    proxy_fence();
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 4096;"
                     :: "l"(out), "r"(smem_addr(buf)) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
"""

_GOOD = _BAD.replace("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)        // wrong guard: the fence is needed on every arch\n", "") \
            .replace("    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n#endif\n",
                     "    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n") \
            .replace("the feature guard is off", "the fence is unconditional")

RULE = Rule(
    code="TK603",
    name="source-sass-disagreement",
    contract="dispatch",
    severity="error",
    precision="proved",
    symptoms=("hang", "wrong"),
    summary="The compiled SASS lacks an mbarrier arrive, expect_tx or proxy fence the source analysis relied on",
    check=sass_cross.check_disagreement,
    engine_only=True,
    tags=("sass",),
    doc=f"""\
## What it does
With `--sass`, compares what tkcheck's source model of a kernel says with what nvcc
compiled (nvdisasm `-lineinfo` SASS), and fires when the binary lacks, in the whole
kernel, a synchronisation the source has:

* the source arrives on an mbarrier (`arrive`, inline `mbarrier.arrive`) and the SASS has
  no `SYNCS.ARRIVE.TRANS64…` arrive;
* the source sets an expected transaction count (`tma::expect*`, `mbarrier.expect_tx`)
  and the SASS has no expect_tx arrive;
* the source fences the async proxy before its TMA/bulk stores (an explicit
  `fence.proxy.async`, or TK's `tma::store_async`, which fences inside) and the SASS has
  bulk stores (`UTMASTG`/`UBLKCP.G.S`) but no `FENCE.VIEW.ASYNC` anywhere.

Only absence from the whole kernel is reported: the line table gives each instruction an
approximate line, so "not at this line" proves nothing. The finding cites the source
line, the SASS address range that line compiled to and the first bulk store's address.
Typical causes: preprocessor guards that differ between the analysed and the built
configuration (arch feature macros, defines), or code the compiler proved unreachable.

## Why is this bad?
Every other rule checked the source; the GPU runs the binary. A missing arrive hangs the
waiters; a missing proxy fence lets the TMA engine read shared memory before the
generic-proxy writes are visible (stale or mixed data in the output).

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
