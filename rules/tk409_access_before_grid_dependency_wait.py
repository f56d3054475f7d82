"""TK409: in a kernel launched as a programmatic dependent, a global access that conflicts with the prerequisite grid's is not ordered after griddepcontrol.wait."""

from __future__ import annotations

from collections.abc import Iterator

from tkcheck.checks import pdl
from tkcheck.checks.analysis import Analysis
from tkcheck.findings import Finding
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def check(an: Analysis) -> Iterator[Finding]:
    """The happens-before engine's PDL question (`checks/pdl.py`): in a launch that carries the
    programmatic-serialization attribute, a global access of this kernel that some thread makes
    before any `griddepcontrol.wait` could order it, on a host buffer that a grid still running
    then (its predecessor on the stream, which triggers its dependents early, and transitively)
    writes -- or reads, for a write. Launch chains not in the file, buffers not followed and
    accesses not proved before the wait are coverage, never findings."""
    seen = set()
    for c in pdl.conflicts(an).races:
        a, o = c.access, c.other
        key = (a.location.row, a.location.column)
        if key in seen:
            continue
        seen.add(key)
        verb = "reads" if a.kind == ir.GLOBAL_LOAD else "writes"
        ov = "writes" if o is not None and o.kind != ir.GLOBAL_LOAD else "reads"
        assert a.global_access is not None
        yield finding(
            "TK409",
            f"`{a.global_access.base}` {verb} global memory before `griddepcontrol.wait` orders it after the "
            f"prerequisite grid, but this launch (line {c.launch.location.row}) may start early (programmatic "
            f"stream serialization) while '{c.other_kernel}' (launched at line {c.runner.location.row}, it lets its "
            f"dependents start early) still {ov} the same buffer"
            + (f" through `{o.global_access.base}`" if o is not None and o.global_access is not None else ""),
            a.location,
            related=[related(o, f"the access of '{c.other_kernel}'")] if o is not None else [],
            witness={"kernel": c.other_kernel, "buffer": c.buffer, "launch_line": c.launch.location.row},
            help="call `griddepcontrol.wait` (`cudaGridDependencySynchronize()`, TK's `pdl::wait()`) before "
            "this access (a thread's wait and then a block barrier orders the whole block), or move it after "
            "the wait; only data no earlier grid of the stream writes may be read before it",
        )


_LAUNCH = """
template <typename... P, typename... A>
static void launch_pdl(void (*k)(P...), cudaStream_t s, A... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(64);
    cfg.blockDim = dim3(128);
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, k, args...);
}

int main() {
    float *x, *y, *z;
    cudaMalloc(&x, 64 * 128 * 4);
    cudaMalloc(&y, 64 * 128 * 4);
    cudaMalloc(&z, 64 * 128 * 4);
    cudaStream_t s;
    cudaStreamCreate(&s);
    launch_pdl(produce, s, (const float *)x, y);
    launch_pdl(consume, s, (const float *)y, z);
    cudaStreamSynchronize(s);
}
"""

_PRODUCE = """
__global__ __launch_bounds__(128, 1) void produce(const float *in, float *mid) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const int i = blockIdx.x * 128 + threadIdx.x;
    mid[i] = 2.0f * in[i];
}
"""

_BAD = (
    HEADER
    + _PRODUCE
    + """
__global__ __launch_bounds__(128, 1) void consume(const float *mid, float *out) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const int i = blockIdx.x * 128 + threadIdx.x;
    const float v = mid[i];  // before the wait: `produce` may still be writing it
    asm volatile("griddepcontrol.wait;" ::: "memory");
    out[i] = v + 1.0f;
}
"""
    + _LAUNCH
)

_GOOD = (
    HEADER
    + _PRODUCE
    + """
__global__ __launch_bounds__(128, 1) void consume(const float *mid, float *out) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const int i = blockIdx.x * 128 + threadIdx.x;
    asm volatile("griddepcontrol.wait;" ::: "memory");
    out[i] = mid[i] + 1.0f;
}
"""
    + _LAUNCH
)

RULE = Rule(
    code="TK409",
    name="access-before-grid-dependency-wait",
    contract="scope",
    severity="error",
    precision="proved",
    symptoms=('wrong',),
    summary="In a kernel launched as a programmatic dependent, a global access that conflicts with the prerequisite grid's is not ordered after griddepcontrol.wait",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Reads the launch sequence of the file's host code (kernels launched in order on a stream, with
`cudaLaunchKernelEx` or `<<<...>>>`, which launch carries
`cudaLaunchAttributeProgrammaticStreamSerialization`, which host buffer each pointer parameter
receives) and, for a kernel launched with that attribute, reports a global access made before
`griddepcontrol.wait` (inline PTX, `cudaGridDependencySynchronize()`, TK's `pdl::wait()`,
`cuda::ptx::griddepcontrol_wait()`) orders it, to a buffer that a grid still running then writes
(or reads, for a write). The grids still running are the predecessor on the stream when it lets
its dependents start early (`griddepcontrol.launch_dependents` in every block), and, when that
predecessor triggers before its own wait, the grids running beside it. An access is before the
wait when a thread of it reaches it with no wait and no barrier, mbarrier wait, spin or acquire
before it (a thread's wait followed by `__syncthreads()` orders the whole block). A kernel whose
launch chain is not in the file, a buffer the host walk cannot follow, an access not proved before
the wait: coverage, never a finding.

## Why is this bad?
With programmatic dependent launch the dependent grid may start as soon as every CTA of its
prerequisite issued `griddepcontrol.launch_dependents`; that instruction orders no memory. Only
`griddepcontrol.wait` waits until the prerequisite grids completed and their memory operations are
visible (PTX ISA, `griddepcontrol`). A read before it may see the previous round's data (or
poison), a write before it may be overwritten by, or be seen by, the grid still running: wrong
results that depend on timing, which neither racecheck nor synccheck reports.

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
