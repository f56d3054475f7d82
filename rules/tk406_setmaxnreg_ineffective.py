"""TK406: setmaxnreg without a register cap at entry, or under a branch that
splits a warpgroup."""

from tkcheck.checks import syncscope as S
from tkcheck.checks.threads import describe
from tkcheck.fixes import launch_bounds_fix
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def _sass_evidence(an):
    """ptxas's verdict on this kernel's setmaxnreg when the SASS pass ran (`--sass`)."""
    if getattr(an, "sass", None) is None:
        return None
    from tkcheck.checks import sass_cross

    return sass_cross.setmaxnreg_sass_evidence(an)


def check(an):
    out = []
    m = an.model
    n = an.threads.n
    sets = list(m.ops_of(ir.SETMAXNREG))
    if not sets:
        return out
    ev = _sass_evidence(an)
    first = sets[0]
    if m.kind == "global" and m.launch_bounds is False and not (ev is not None and not ev.ignored):
        # no register cap at entry (the compiled SASS, when there is one, must agree)
        confirmed = (
            f"; ptxas confirms: {ev.message}"
            if ev is not None and ev.message
            else ("; the SASS has no USETMAXREG" if ev is not None else "")
        )
        out.append(
            finding(
                "TK406",
                f"`{first.api}` needs a register count fixed at kernel entry, but kernel '{m.name}' has no "
                "`__launch_bounds__`: ptxas ignores setmaxnreg (warning C7508) and the role keeps its "
                f"entry registers{confirmed}",
                first.location,
                related=[related(o, "also ignored") for o in sets[1:]],
                witness={"launch_bounds": None, "sass_confirmed": ev is not None},
                help="declare `__launch_bounds__(NUM_THREADS, 1)` on the kernel",
                # the block size is known (from the launch in this file): the fix is mechanical
                fixes=[x for x in [launch_bounds_fix(m.location, n)] if x] if n else [],
            )
        )
    elif ev is not None and ev.ignored:
        # the source has a cap (or tkcheck cannot tell), but the compiled kernel proves
        # ptxas dropped every setmaxnreg
        out.append(
            finding(
                "TK406",
                f"ptxas ignored `{first.api}` in kernel '{m.name}': the PTX has setmaxnreg but the SASS has no "
                f"USETMAXREG" + (f" ({ev.message})" if ev.message else ""),
                first.location,
                related=[related(o, "also ignored") for o in sets[1:]],
                witness={"sass_kernel": ev.kernel, "registers": ev.registers, "maxntid": ev.maxntid},
                help="give the kernel a register cap at entry: `__launch_bounds__(NUM_THREADS, 1)`, "
                "with a thread count ptxas can see",
            )
        )
    for op in sets:
        parts = S.misaligned_groups(an, op)
        if not parts:
            continue
        g, got, missing = parts[0]
        out.append(
            finding(
                "TK406",
                f"`{op.api}` runs on only part of warpgroup {g} ({describe(got, n)}); setmaxnreg is "
                f"warpgroup-collective and {describe(missing, n)} do not execute it",
                op.location,
                witness={"warpgroup": g, "running": len(got)},
                help="branch on `warpgroup::groupid()` so every warp of the warpgroup changes its registers",
            )
        )
    return out


_BAD = (
    HEADER
    + """
__global__ void k(float *out) {          // no __launch_bounds__: no register cap at entry
    if (warpgroup::groupid() == 0) {
        warpgroup::decrease_registers<40>();
    } else {
        warpgroup::increase_registers<232>();
        out[threadIdx.x] = 1.0f;
    }
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(384, 1) void k(float *out) {
    if (warpgroup::groupid() == 0) {
        warpgroup::decrease_registers<40>();
    } else {
        warpgroup::increase_registers<232>();
        out[threadIdx.x] = 1.0f;
    }
}
"""
)

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
from the template and are not checked for the first case; an attribute tkcheck
cannot identify leaves the first case unknown.

With `--sass`, ptxas has the last word: a kernel whose SASS keeps its
`USETMAXREG` is not reported, and one whose PTX has setmaxnreg but whose SASS
has none (ptxas C7508) is reported with ptxas's message, even where the source
seems to have a cap.

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
