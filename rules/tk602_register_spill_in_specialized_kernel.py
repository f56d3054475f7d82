"""TK602: a warp-specialized kernel whose SASS spills registers to local memory
(SASS pass: runs only with `--sass`)."""

from tkcheck.checks import sass_cross
from tkcheck.checks.sass_cross import kernel_label
from tkcheck.findings import Location, Related
from tkcheck.rule import Rule

from ._common import finding
from ._sass_rule import addr, text, witness


def check(an):
    s = sass_cross.spills_in_specialized_kernel(an)
    if s is None:
        return []
    k, path, rep, local, in_user = s.kernel, s.path, s.report, s.local, s.in_user
    loc = in_user[0][1] if in_user else Location(path, an.model.location.row, an.model.location.column)
    cite = (
        f"; first local-memory access SASS {addr(in_user[0][0])} `{text(in_user[0][0])}` "
        f"(source line {in_user[0][1].row})"
        if in_user
        else (f"; first local-memory access SASS {addr(local[0])} `{text(local[0])}`" if local else "")
    )
    regs = k.resources.registers
    setmax = s.setmaxnreg
    sm = ""
    if setmax:
        sm = "; setmaxnreg: " + ", ".join(
            f"{'inc' if o.increase else 'dec'} at line {o.location.row}" for o in setmax[:4]
        )
    related = [Related(l, f"SASS {addr(i)}: {text(i)}") for i, l in in_user[1:4]]
    related += [Related(o.location, "register reallocation (setmaxnreg)") for o in setmax[:2]]
    return [
        finding(
            RULE.code,
            f"warp-specialized kernel '{kernel_label(k)}' spills registers: ptxas reports "
            f"{rep.spill_store_bytes} bytes spill stores / {rep.spill_load_bytes} bytes spill loads "
            f"({regs if regs is not None else '?'} registers, {rep.stack_frame_bytes} bytes stack frame, "
            f"{rep.local_stores} STL / {rep.local_loads} LDL in the SASS){cite}{sm}",
            loc,
            related=related,
            witness=witness(
                k,
                spill_store_bytes=rep.spill_store_bytes,
                spill_load_bytes=rep.spill_load_bytes,
                registers=regs,
                local_stores=rep.local_stores,
                local_loads=rep.local_loads,
                sass_address=addr(in_user[0][0]) if in_user else (addr(local[0]) if local else None),
            ),
            help="give the role that needs registers more (`warpgroup::increase_registers<N>` with a matching "
            "`decrease_registers` in the producer, and `__launch_bounds__(threads, 1)` so ptxas knows the "
            "cap), or make its register tiles smaller",
        )
    ]


_BAD = """\
template <int N> __device__ __forceinline__ void grow() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N));
}
template <int N> __device__ __forceinline__ void shrink() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N));
}
#define WORK 224   // live floats per consumer thread: more than the 168-register cap
__global__ void __launch_bounds__(384, 1) k(const float *__restrict__ in, float *__restrict__ out, int n) {
    if (threadIdx.x / 128 == 0) {          // producer warpgroup
        shrink<40>();
        if (threadIdx.x == 0) out[0] = in[0];
    } else {                               // consumer warpgroups
        grow<232>();
        float acc[WORK];
#pragma unroll
        for (int i = 0; i < WORK; ++i) acc[i] = in[threadIdx.x + i * 384];
        for (int j = 0; j < n; ++j) {
#pragma unroll
            for (int i = 0; i < WORK; ++i) acc[i] = acc[i] * acc[(i + 7) % WORK] + in[j * WORK + i];
        }
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < WORK; ++i) s += acc[i] * (float)(i + 1);
        out[threadIdx.x] = s;
    }
}
"""

_GOOD = _BAD.replace(
    "#define WORK 224   // live floats per consumer thread: more than the 168-register cap",
    "#define WORK 16    // a working set that fits in registers",
)

RULE = Rule(
    code="TK602",
    name="register-spill-in-specialized-kernel",
    contract="dispatch",
    severity="warning",
    precision="proved",
    symptoms=("slow",),
    summary="ptxas spills registers to local memory in a warp-specialized kernel",
    check=check,
    engine_only=True,
    tags=("sass",),
    doc=f"""\
## What it does
With `--sass`, reads ptxas' resource report (`N bytes spill stores, M bytes spill loads`)
and the kernel's `LDL`/`STL` instructions. Fires when ptxas reports spill bytes in a
warp-specialized kernel: an lcf/lcsf template instantiation, a kernel that reallocates
registers with `setmaxnreg` (`warpgroup::increase_registers` / `decrease_registers`), or
one whose TMA loads and MMAs run on disjoint threads. The finding cites the first
local-memory instruction (SASS address and source line), the register count and the
`setmaxnreg` sites. Plain local arrays (LDL/STL without ptxas spill bytes) do not fire.

## Why is this bad?
A producer/consumer kernel is built to keep the tensor cores fed; local-memory traffic
in the consumer's inner loop serialises it behind L1/L2 round trips. ptxas allocates
registers for the whole kernel at the entry cap (65536 / threads per block, e.g. 168 at
384 threads), so a consumer that needs more spills even if `setmaxnreg` would give it
232 registers at run time.

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
