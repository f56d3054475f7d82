"""TK307: an mbarrier initialised by some threads is used by others before a barrier makes the init visible."""
from tkcheck.checks.threads import describe
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import HEADER, finding, related

USES = (ir.MBAR_WAIT, ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)


def _orders(o: ir.Op) -> bool:
    """A block-wide barrier (or cluster barrier) orders the init before later uses."""
    if o.kind == ir.SYNC:
        k = o.detail.get("sync_kind")
        return k in ("block", "cluster", "cluster_wait") or (k == "named" and o.count is not None)
    return False


def check(an):
    m = an.model
    out = []
    seen = set()
    for init in m.ops_of(ir.MBAR_INIT):
        if init.barrier is None or init.barrier.name in seen:
            continue
        inits = [o for o in m.ops_of(ir.MBAR_INIT) if o.barrier is not None and o.barrier.name == init.barrier.name]
        who = set()
        for o in inits:
            ex = an.threads.executing(o)
            if ex is None or not o.guard.exact or o.guard.uniform:
                who = None
                break
            who |= ex
        if who is None:
            continue
        last = max(o.order for o in inits)
        for use in m.ops:
            if use.order <= last or use.kind not in USES or use.barrier is None \
                    or use.barrier.name != init.barrier.name:
                continue
            if any(_orders(x) or x.kind == ir.EXIT or (x.kind == ir.CALL and "asm" in x.api)
                   for x in m.ops if last < x.order < use.order):
                break
            if not use.guard.exact:
                break
            users = an.threads.executing(use)
            if users is None:
                break
            others = users - who
            if not others:
                continue
            seen.add(init.barrier.name)
            out.append(finding(
                "TK307",
                f"'{use.barrier}' is used by {describe(frozenset(others), an.threads.n)} before any block "
                f"barrier makes its initialisation by {describe(frozenset(who), an.threads.n)} visible",
                use.location,
                related=[related(o, "initialised here") for o in inits[:2]],
                witness={"barrier": init.barrier.name, "first_user": min(others), "init_threads": len(who)},
                help="put __syncthreads() (or everyone::sync) between init_semaphore and the first use by other "
                     "threads; a cluster needs a cluster barrier and fence.mbarrier_init first"))
            break
    return out


_BAD = HEADER + """
__global__ __launch_bounds__(128, 1) void k(float *out) {
    __shared__ semaphore done;
    if (threadIdx.x == 0) init_semaphore(done, 1, 0);
    if (threadIdx.x == 32) arrive(done);     // warp 1 may arrive before thread 0 initialised it
    if (threadIdx.x == 0) wait(done, 0);
}
"""

_GOOD = _BAD.replace("""    if (threadIdx.x == 0) init_semaphore(done, 1, 0);
""", """    if (threadIdx.x == 0) init_semaphore(done, 1, 0);
    __syncthreads();
""")

RULE = Rule(
    code="TK307",
    name="barrier-used-before-init-visible",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("hang", "wrong"),
    summary="An mbarrier is used by other threads before a block barrier orders its init",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Finds mbarriers initialised by some threads (usually thread 0) and then waited
on, arrived at or targeted by TMA loads of *other* threads with no block-wide
barrier (`__syncthreads()`, `everyone::sync`, a named barrier, a cluster
barrier) in between on the path.

## Why is this bad?
`mbarrier.init` is an ordinary shared-memory write of thread 0. Without a
barrier, other warps may arrive on or wait for an uninitialised barrier
(garbage count and phase): a hang, or a phase completing at the wrong time.

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
