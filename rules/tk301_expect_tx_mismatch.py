"""TK301: bytes expected per phase != bytes the TMA loads deliver per phase."""

from tkcheck.checks import completion, violations
from tkcheck.checks.threads import describe
from tkcheck.rule import Explains, Rule

from ._common import HEADER, finding, num, related


def check(an):
    """The byte accounts the completion engine proves broken (`checks/violations.byte_mismatches`), worded."""
    out = []
    for v in violations.byte_mismatches(an):
        name, acc, group, exps, loads = v.name, v.acc, v.group, v.exps, v.loads
        expected, delivered = v.expected, v.delivered
        anchor = exps[0].op if exps else loads[0].op
        rel = []
        for c in exps:
            rel.append(
                related(
                    c.op,
                    f"expects {num(c.amount)} bytes, issued by {describe(c.issuers)}"
                    + (f", {num(c.times)} times per phase" if num(c.times) != "1" else ""),
                )
            )
        for c in loads:
            tile = c.op.transfer.tile_type if c.op.transfer is not None else None
            rel.append(
                related(
                    c.op,
                    f"loads {num(c.amount)} bytes ({tile.short() if tile else 'tile'}),"
                    f" issued by {describe(c.issuers)}"
                    + (f", {num(c.times)} times per phase" if num(c.times) != "1" else ""),
                )
            )
        for o in acc.inits:
            rel.append(related(o, f"'{name}' initialised here"))
        for o in acc.waits[:2]:
            rel.append(related(o, "waited on here"))
        e, d = num(expected), num(delivered)
        # i7model: bytes a thread's st.async / red.async completes on the (peer's) barrier
        stores = any(c.op.mbar is not None and c.op.mbar.remote_store for c in loads)
        loads_word = "the st.async stores" if stores else "the TMA loads"
        if not exps and not acc.arrivals.get(group):
            where = f" in CTA {completion.cta_of(group)}" if " in CTA " in group else ""
            msg = (
                f"the TMA loads completing on '{name}'{where} deliver {d} bytes per phase but no expect_tx "
                f"announces them and nothing arrives on that copy: its phase never completes"
            )
        elif not exps:
            msg = (
                f"the TMA loads completing on '{name}' deliver {d} bytes per phase but no expect_tx "
                f"announces them: the phase completes on arrivals alone and the bytes land in a later phase"
            )
        elif not loads:
            msg = f"expect_tx of {e} bytes per phase on '{name}' but no TMA load completes on it: the phase never completes"
        else:
            msg = f"expect_tx of {e} bytes per phase on '{name}' but {loads_word} completing on it deliver {d}"
        if v.case is not None:
            # a mismatch in one case the data picks: the byte count is a `?:` / `min` whose other
            # side the kernel computes for that case (a ragged tail tile)
            e, d = violations.readable(expected), violations.readable(delivered)
            msg = (
                f"expect_tx of {e} bytes per phase on '{name}' but the TMA loads completing on it deliver {d}, "
                f"which differs {violations.case_text(v.case)} (the case the kernel's own `?:` / `min` computes)"
            )
        hint = (
            "fewer bytes than expected: the phase never completes (hang)"
            if not loads
            or v.short
            or (
                expected.eval({}) is not None
                and delivered.eval({}) is not None
                and expected.eval({}) > delivered.eval({})
            )
            else "more bytes than expected: the phase completes early and the rest lands in the next phase (stale data or a later hang)"
        )
        out.append(
            finding(
                "TK301",
                msg,
                anchor.location,
                related=rel,
                witness={"barrier": name, "expected_bytes": e, "delivered_bytes": d, "phase": group}
                | ({"case": violations.case_text(v.case)} if v.case is not None else {}),
                help=f"{hint}; expect exactly the bytes of every load on this barrier, e.g. "
                f"tma::expect(bar, tiles...) with the same tiles the loads fill",
            )
        )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout A, const __grid_constant__ layout B) {
    __shared__ semaphore bar;
    __shared__ tile a, b;
    if (threadIdx.x == 0) init_semaphore(bar, 0, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        tma::expect_bytes(bar, size_bytes<tile>);   // only one tile's bytes
        tma::load_async(a, A, {0, 0, 0, 0}, bar);
        tma::load_async(b, B, {0, 0, 0, 0}, bar);
    }
    wait(bar, 0);
}
"""
)

_GOOD = _BAD.replace("tma::expect_bytes(bar, size_bytes<tile>);   // only one tile's bytes", "tma::expect(bar, a, b);")

RULE = Rule(
    code="TK301",
    name="expect-tx-mismatch",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("hang", "stripes"),
    explains={
        "hang": Explains(
            5,
            "bytes expected per phase differ from the bytes delivered: the phase "
            "never completes (too many expected) or completes early and drifts",
        ),
        "stripes": Explains(4, "a phase that completes before all bytes land lets consumers read a half-written stage"),
    },
    summary="Bytes expected on an mbarrier per phase differ from the bytes the TMA loads deliver",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
For every mbarrier, adds up per phase the transaction bytes announced by
`tma::expect_bytes` / `tma::expect` (times the threads that issue them) and the
bytes delivered by the TMA loads that complete on it (`size_bytes` of each
destination tile, times issuers and inner-loop trips), symbolically over
template parameters, and reports when they differ for every instantiation.
A byte count the data picks, `c ? t : e` or `min(TR, rows_left)` with a
condition over kernel arguments or loaded values (a ragged tail tile), is also
asked per side: where the side the kernel computes for that case makes the
totals differ for every value, the finding says when ("which differs when
`rows_left` < `16`").

## Why is this bad?
A phase completes when both its arrival count and its pending tx bytes reach
zero. Expecting fewer bytes than are loaded lets the phase complete early:
consumers read a half-filled stage (row stripes) and the surplus bytes are
charged to the next phase. Expecting more than arrive means the phase never
completes: the kernel hangs, and compute-sanitizer only times out.

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
