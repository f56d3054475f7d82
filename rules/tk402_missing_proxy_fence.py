"""TK402: generic-proxy writes of shared memory read by the async proxy
(TMA store, tensor-core operand) with no fence.proxy.async in between."""

from tkcheck.checks import syncscope as S
from tkcheck.checks import tensormaps as TM
from tkcheck.checks.threads import describe
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def check(an):
    out = []
    n = an.threads.n
    for d in S.dependencies(an):
        if not d.proxy_unfenced or d.uncovered:
            continue
        r, ws = sorted(d.proxy_unfenced.items())[0]
        out.append(
            finding(
                "TK402",
                f"`{d.reader.api}` reads `{d.writer.buffer}` through the async proxy, but the generic-proxy "
                f"writes of {describe(ws, n)} are not followed by `fence.proxy.async` (neither in the writers "
                f"nor in the issuing thread after the barrier)",
                d.reader.location,
                related=[related(d.writer, "generic-proxy write of the operand here")],
                witness={"reader_thread": r, "writers": describe(ws, n)},
                help="issue `fence.proxy.async.shared::cta` after the stores and before the barrier (or in the "
                "issuing thread after it), e.g. `asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");`",
            )
        )
    told = set()
    for u in TM.unacquired(an):
        if u.copy.location in told:
            continue  # one helper's copy inlined at several calls: one finding at its line
        told.add(u.copy.location)
        out.append(
            finding(
                "TK402",
                f"`{u.copy.api}` reads a tensor map in global memory through the tensormap proxy, but the "
                f"`tensormap.cp_fenceproxy` that published it is not followed by "
                f"`fence.proxy.tensormap::generic.acquire` of that map in the issuing thread (the kernel has none): "
                "the copy may use the stale map",
                u.copy.location,
                related=[related(u.release, "the map published (released into the tensormap proxy) here")],
                help="issue `fence.proxy.tensormap::generic.acquire.gpu [map], 128;` in the thread that issues the "
                "copy, after the publication and before its first use of the map",
            )
        )
    for u in TM.unreleased(an):
        if u.copy.location in told:
            continue
        told.add(u.copy.location)
        out.append(
            finding(
                "TK402",
                f"`{u.copy.api}` reads a tensor map in global memory through the tensormap proxy, but the kernel "
                f"writes that map with generic-proxy stores (`{u.write.global_access.text if u.write.global_access else u.write.api}`) "
                "and releases no map into the tensormap proxy (no `tensormap.cp_fenceproxy ... release`, no "
                "`fence.proxy.tensormap::generic.release`): no acquire fence of the reader has a release to pair with, and the copy "
                "may use the stale map",
                u.copy.location,
                related=[related(u.write, "the map written through the generic proxy here")],
                help="patch the map in shared memory and publish it with the warp's `tensormap.cp_fenceproxy.global."
                "shared::cta.tensormap::generic.release.gpu.sync.aligned [map], [smem_map], 128;` (or issue "
                "`fence.proxy.tensormap::generic.release.gpu;` after the stores, in the writing threads), then "
                "`fence.proxy.tensormap::generic.acquire.gpu [map], 128;` in the thread that issues the copy",
            )
        )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(int n) {
    extern __shared__ alignment_dummy __shm[];
    tensor_allocator<1, 1> tm_alloc{};
    __shared__ st_bf<128, 64> p, v;
    __shared__ semaphore done;
    rt_bf<32, 64> p_reg;
    tt<float, 128, 64> o = tm_alloc.allocate<tt<float, 128, 64>>(0);
    if (threadIdx.x == 0) init_semaphore(done, 0, 1);
    warpgroup::store(p, p_reg);        // generic-proxy writes
    warpgroup::sync(1);
    if (warpgroup::laneid() == 0) warpgroup::mma_AB(o, p, v, done);   // tcgen05 reads p via the async proxy
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(int n) {
    extern __shared__ alignment_dummy __shm[];
    tensor_allocator<1, 1> tm_alloc{};
    __shared__ st_bf<128, 64> p, v;
    __shared__ semaphore done;
    rt_bf<32, 64> p_reg;
    tt<float, 128, 64> o = tm_alloc.allocate<tt<float, 128, 64>>(0);
    if (threadIdx.x == 0) init_semaphore(done, 0, 1);
    warpgroup::store(p, p_reg);
    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
    warpgroup::sync(1);
    if (warpgroup::laneid() == 0) warpgroup::mma_AB(o, p, v, done);
}
"""
)

RULE = Rule(
    code="TK402",
    name="missing-proxy-fence",
    contract="scope",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    summary="Generic-proxy shared-memory writes read by a TMA store or tensor-core operand without fence.proxy.async",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For each shared-memory dependency whose reader is an async-proxy operation — a
TMA / bulk store, a wgmma or tcgen05 shared-memory operand — and whose writers
use the generic proxy (`warpgroup::store`, `warp::store`, `st.shared`), checks
that a `fence.proxy.async` lies on every writer→reader ordering: in the writer
after its writes, or in the reader's issuing thread after a barrier that
orders the writer before it.

**TK's convention.** `tma::store_async` (all scopes) issues
`fence.proxy.async.shared::cta` in the issuing thread right before the bulk
copy — after the `warpgroup::sync` that orders the other writers — and
`warpgroup::mma_*` does the same in every thread of the warpgroup (`mma_fence`,
unless called with `fence = 0`). tkcheck treats this as **correct**: in the
PTX memory model the writes of the other threads precede the barrier, the
barrier synchronises them with the issuing thread (base causality order is
transitive through it), and a proxy fence in the issuing thread then orders
everything that precedes it in causality order with its subsequent
async-proxy operations. A fence need not be executed by the writing thread;
it must lie on the causality path between the generic write and the async
read. So TK402 never fires on TK's own TMA stores or wgmma calls; it fires on
tcgen05 MMAs (TK's tcgen05 `mma*` issue no proxy fence) and on async reads
whose issuing path has no fence.

**Tensor maps patched on the device** (the tensormap proxy). A TMA copy through
a `CUtensorMap` in global memory that the kernel itself wrote reads the map
through the tensormap proxy: the generic writes of the map must be released
into that proxy (`tensormap.cp_fenceproxy ... release`, or
`fence.proxy.tensormap::generic.release` after plain stores) and acquired by
the issuing thread (`fence.proxy.tensormap::generic.acquire [map], 128`).
Reported when proved: the map published with no acquire fence anywhere in the
kernel; the map written with plain stores (or `tensormap.replace ... .global`)
in a kernel with no release into the tensormap proxy at all.

mbarrier initialisation followed by TMA use is **not** reported here: TK's
headers and templates issue no proxy fence after `init_semaphore` and rely on
the CTA barrier that follows, and tkcheck has no proof that this is wrong for
CTA-local barriers; cluster-wide visibility of an init is TK307 / TK505's
question.

## Why is this bad?
The async proxy (TMA engine, tensor core) does not observe generic-proxy
writes in order without a proxy fence: the MMA or bulk store can read stale
shared memory even though a barrier was passed.

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
