"""TK406: setmaxnreg without a register cap at entry, or under a branch that
splits a warpgroup."""
from tkcheck.checks import syncscope as S
from tkcheck.checks.threads import describe
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def check(an):
    out = []
    m = an.model
    n = an.threads.n
    sets = list(m.ops_of(ir.SETMAXNREG))
    if not sets:
        return out
    if m.kind == "global" and m.block_threads_source != "__launch_bounds__":
        first = sets[0]
        out.append(finding(
            "TK406",
            f"`{first.api}` needs a register count fixed at kernel entry, but kernel '{m.name}' has no "
            "`__launch_bounds__`: ptxas ignores setmaxnreg (warning C7508) and the role keeps its "
            "entry registers",
            first.location,
            related=[related(o, "also ignored") for o in sets[1:]],
            witness={"launch_bounds": None},
            help="declare `__launch_bounds__(NUM_THREADS, 1)` on the kernel"))
    for op in sets:
        parts = S.misaligned_groups(an, op)
        if not parts:
            continue
        g, got, missing = parts[0]
        out.append(finding(
            "TK406",
            f"`{op.api}` runs on only part of warpgroup {g} ({describe(got, n)}); setmaxnreg is "
            f"warpgroup-collective and {describe(missing, n)} do not execute it",
            op.location, witness={"warpgroup": g, "running": len(got)},
            help="branch on `warpgroup::groupid()` so every warp of the warpgroup changes its registers"))
    return out


_BAD = HEADER + """
__global__ void k(float *out) {          // no __launch_bounds__: no register cap at entry
    if (warpgroup::groupid() == 0) {
        warpgroup::decrease_registers<40>();
    } else {
        warpgroup::increase_registers<232>();
        out[threadIdx.x] = 1.0f;
    }
}
"""

_GOOD = HEADER + """
__global__ __launch_bounds__(384, 1) void k(float *out) {
    if (warpgroup::groupid() == 0) {
        warpgroup::decrease_registers<40>();
    } else {
        warpgroup::increase_registers<232>();
        out[threadIdx.x] = 1.0f;
    }
}
"""

RULE = Rule(
    code="TK406",
    name="setmaxnreg-ineffective",
    contract="scope",
    severity="warning",
    precision="proved",
    symptoms=("slow",),
    summary="setmaxnreg is ignored (no register cap at entry) or run by part of a warpgroup",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Reports `warpgroup::increase_registers` / `decrease_registers` (PTX
`setmaxnreg`) in a kernel without `__launch_bounds__` — ptxas cannot fix the
register count at entry and ignores the instruction (warning C7508) — and
setmaxnreg under a condition that runs it on only part of an aligned
warpgroup. Kernels built from TK's prototype templates get their launch bounds
from the template and are not checked for the first case.

## Why is this bad?
Warp-specialised kernels rely on shrinking the producer's registers to grow the
consumers'. When setmaxnreg is ignored the consumers spill (slow); when only
part of a warpgroup executes it the behaviour is undefined.

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
