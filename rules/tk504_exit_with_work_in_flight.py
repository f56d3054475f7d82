"""TK504: a role exits while async work it issued is pending, or while others still wait on it."""

from tkcheck.checks import bulk_stores
from tkcheck.checks import protocol as P
from tkcheck.checks.threads import describe
from tkcheck.rule import Confirm, Explains, Rule

from ._common import HEADER, finding, related
from ._deadlock_common import classify, deadlock_finding


def _spelled(c) -> str:
    """A test of a value the model does not follow, as the walk read it: the unknown's text
    (`?src >= 0#12 != 0` is `src >= 0`); a text cut short at its 40 characters is named for what
    it is."""
    import re

    m = re.fullmatch(r"\(?\?(.+)#\d+ != 0\)?", str(c))
    if m and len(m.group(1)) < 40 and "#" not in m.group(1):
        return f"`{m.group(1)}`"
    return "a test of data loaded from memory passes"


def _stores_in_flight(an):
    """The bulk-store engine's stores whose thread exits with no read wait after them."""
    out = []
    for fl in bulk_stores.exits(an):
        if fl.status != "in-flight":
            continue
        st, iss = fl.store, fl.issuers
        conds = [f"`{c}`" for c in st.guard.uniform] + [_spelled(c) for c in st.guard.opaque]
        when = f" (when {' && '.join(conds)})" if conds else ""
        out.append(
            finding(
                "TK504",
                f"{describe(iss, an.threads.n)} finishes with the tma::store_async from '{st.buffer}' still in flight"
                f"{when}: no store_async_wait / store_async_read_wait before the thread exits",
                st.location,
                related=[related(st, "bulk store issued here")],
                witness={"buffer": str(st.buffer), "issuers": len(iss)},
                help="end the storing thread's work with tma::store_async_wait() (or at least "
                "store_async_read_wait()) so the block does not retire while the copy reads its shared memory",
            )
        )
    return out


def check(an):
    out = _stores_in_flight(an)
    c = classify(an)
    if c is not None and c[0] == "TK504":
        code, ri, e, others = c
        ex = P.explore(an)
        who = ", ".join(ex.roles[i].name for i in others)
        out.append(
            deadlock_finding(
                an,
                code,
                ri,
                e,
                others,
                f"{ex.roles[ri].name} waits on '{P.elem_str(e.elem)}' but {who}, the only role that signals it, "
                "has already returned",
                "do not return early from a role that others wait on; skip the work but keep signalling",
            )
        )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(128, 1) void k(const __grid_constant__ layout C) {
    __shared__ tile c;
    rt_fl<16, 64> acc;
    warp::zero(acc);
    warpgroup::store(c, acc);
    warpgroup::sync(1);
    if (threadIdx.x == 0) {
        tma::store_async(C, c, {0, 0, 0, 0});
    }
}
"""
)

_GOOD = _BAD.replace(
    """        tma::store_async(C, c, {0, 0, 0, 0});
""",
    """        tma::store_async(C, c, {0, 0, 0, 0});
        tma::store_async_wait();
""",
)

RULE = Rule(
    code="TK504",
    name="exit-with-work-in-flight",
    contract="deadlock",
    severity="error",
    precision="proved",
    symptoms=("hang", "wrong"),
    explains={"wrong": Explains(3, "the CTA may exit while a bulk store still reads shared memory")},
    confirm=Confirm(widen=("poison-after-store",), repairs=("read-wait-after-store",)),
    summary="A role exits with async work pending, or while other roles still wait on it",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Reports (1) a thread that issues `tma::store_async` and reaches the end of the
kernel (or a `return`) without a `store_async_wait` / `store_async_read_wait`
(also a store under a block-uniform condition, `if (owner) store_async(...)`; a
`return` under a condition that excludes the store's is not taken by it),
and (2) from the protocol exploration (see TK502), a reachable state in which
a role waits on a barrier that only a role which already returned early would
have signalled, with the interleaving.

## Why is this bad?
A block may retire while the bulk copy still reads its shared memory, which
the next block on the SM then overwrites (wrong output). A role that returns
early leaves the others waiting for its arrivals forever (hang).

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
