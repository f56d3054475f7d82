"""TK603: the compiled SASS lacks a synchronisation the source analysis relied on
(SASS pass: runs only with `--sass`)."""

from tkcheck.checks import sass_cross
from tkcheck.checks.sass_cross import kernel_label, sass_location
from tkcheck.findings import Related
from tkcheck.rule import Rule

from ._common import finding
from ._sass_rule import addr, call_site, first_site, text, where_compiled, witness


def _arrive(m):
    k, ops = m.kernel, m.ops
    first = ops[0]
    return finding(
        RULE.code,
        f"the source arrives on mbarriers at {len(ops)} site(s) (first: {first_site(first)}) but the "
        f"SASS of '{kernel_label(k)}' has no mbarrier arrive instruction (SYNCS.ARRIVE...A1) "
        f"anywhere{where_compiled(k, m.path, first)}: the binary does not do what the source "
        "analysis checked",
        first.location,
        related=call_site(first) + [Related(o.location, "arrive in the source") for o in ops[1:4]],
        witness=witness(
            k,
            model_arrive_sites=sorted({o.location.row for o in ops}),
            sass_arrive_sites=[],
            sass_arrive_instructions=m.sass_arrives,
        ),
        help="check the preprocessor conditions and the build flags (arch, defines) around the arrive: "
        "the analysed source and the compiled one differ",
    )


def _expect_tx(m):
    k, eops = m.kernel, m.ops
    first = eops[0]
    return finding(
        RULE.code,
        f"the source sets an expected transaction count at {len(eops)} site(s) (first: {first_site(first)}) "
        f"but the SASS of '{kernel_label(k)}' has no expect_tx arrive (SYNCS.ARRIVE.TRANS64 with a byte "
        f"count) anywhere{where_compiled(k, m.path, first)}",
        first.location,
        witness=witness(k, model_expect_sites=sorted({o.location.row for o in eops}), sass_expect_tx=0),
        help="check the preprocessor conditions and build flags around the expect: the analysed source "
        "and the compiled one differ",
    )


def _proxy_fence(m):
    k, fops, stores = m.kernel, m.ops, m.stores
    st = stores[0].instruction
    first = fops[0]
    sloc = sass_location(st, m.path)
    rel = (
        call_site(first)
        + [Related(sloc, f"SASS {addr(st)}: {text(st)} (bulk store with no proxy fence in the kernel)")]
        if sloc
        else []
    )
    return finding(
        RULE.code,
        f"the source has a fence.proxy.async before its TMA/bulk stores ({first_site(first)}, line "
        f"{first.location.row}) but the SASS of '{kernel_label(k)}' has no FENCE.VIEW.ASYNC anywhere while "
        f"it issues {len(stores)} bulk store(s) (first: {addr(st)} `{text(st)}`"
        f"{', source line ' + str(sloc.row) if sloc else ''}): shared-memory writes may not be visible to the "
        "async proxy that reads them",
        first.location,
        related=rel,
        witness=witness(
            k,
            sass_address=addr(st),
            sass_bulk_stores=len(stores),
            sass_proxy_fences=0,
            model_fence_sites=sorted({o.location.row for o in fops}),
        ),
        help="make the fence unconditional (or guarded by the same condition as the store) and check the "
        "build flags: the analysed source and the compiled one differ",
    )


_WORDING = {
    sass_cross.MissingArrive: _arrive,
    sass_cross.MissingExpectTx: _expect_tx,
    sass_cross.MissingProxyFence: _proxy_fence,
}


def check(an):
    return [_WORDING[type(m)](m) for m in sass_cross.missing_syncs(an)]


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

_GOOD = (
    _BAD.replace(
        "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)        // wrong guard: the fence is needed on every arch\n", ""
    )
    .replace(
        "    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n#endif\n",
        "    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n",
    )
    .replace("the feature guard is off", "the fence is unconditional")
)

RULE = Rule(
    code="TK603",
    name="source-sass-disagreement",
    contract="dispatch",
    severity="error",
    precision="proved",
    symptoms=("hang", "wrong"),
    summary="The compiled SASS lacks an mbarrier arrive, expect_tx or proxy fence the source analysis relied on",
    check=check,
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
