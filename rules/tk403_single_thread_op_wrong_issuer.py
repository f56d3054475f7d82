"""TK403: a single-thread op (TMA issue, expect, init) run by several threads
per intended issue, or guarded so that no thread of its role runs it."""

from tkcheck.checks import paths, single_issue
from tkcheck.checks.threads import describe
from tkcheck.fixes import lane_guard_fix
from tkcheck.model import ir
from tkcheck.rule import Confirm, Explains, ISSUERS_OWN, Rule

from ._common import HEADER, finding

_WHAT = {ir.TMA_LOAD: "TMA load", ir.TMA_STORE: "TMA store", ir.MBAR_EXPECT: "expect_tx", ir.MBAR_INIT: "mbarrier init"}


def check(an):
    return _ops(an) + _locks(an)


def _locks(an):
    """A spin lock (`checks/locks.py`) taken by several lanes of one warp: a lock is a
    one-thread-of-a-warp acquisition; the lane that takes it must leave the loop and reach the
    release after it, while its warp-mates spin on the lock it holds."""
    from tkcheck.checks import locks

    out = []
    n = an.threads.n
    for lc in locks.locks(an).lanes:
        lk = lc.lock
        out.append(
            finding(
                "TK403",
                f"{lc.lanes} lanes of warp {lc.warp} take the one spin lock `{lk.word}` ({describe(lk.holders, n)} "
                f"run the loop): the lane that wins must leave the loop and reach the release after it, while its "
                "warp-mates spin on the lock it holds (the warp reconverges after the loop: a hang, observed on "
                "H100), and each lane repeats the critical section",
                lk.spin.location,
                related=[paths_related(r) for r in lk.releases[:1]],
                witness={"lock": lk.word, "lanes": lc.lanes, "warp": lc.warp, "threads": describe(lk.holders, n)},
                help="take the lock from one lane of the warp (`if (threadIdx.x % 32 == 0)`) and share the result "
                "with `__shfl_sync`, or combine the lanes' values first (a warp reduction)",
            )
        )
    return out


def paths_related(op):
    from ._common import related

    return related(op, "the release, after the loop")


def _ops(an):
    out = []
    n = an.threads.n
    for op in single_issue.single_issue_ops(an.model):
        issuers = an.threads.issuers(op)
        if issuers is None:
            continue
        what = _WHAT[op.kind]
        if not issuers:
            # nobody issues it: a role condition and an issuer condition that exclude each other
            parts = single_issue.conjuncts(op.guard.thread)
            sets = [an.threads.satisfying(p) for p in parts]
            if len(parts) < 2 or any(s is None or not s for s in sets):
                if op.issuers_per_group and an.threads.executing(op):
                    ex = an.threads.executing(op)
                    out.append(
                        finding(
                            "TK403",
                            f"{op.api} is never issued: it runs on {describe(ex, n)} but the {op.scope}-scoped call "
                            f"issues only from lane 0 of each {op.scope}, which does not reach it",
                            op.location,
                            witness={"executing": describe(ex, n), "issuers": "none"},
                            help=f"call it from the whole {op.scope} (or use the thread-scope spelling in the one thread)",
                        )
                    )
                continue
            rel = []
            out.append(
                finding(
                    "TK403",
                    f"{op.api} is never issued: no thread satisfies its guard — "
                    + "; ".join(f"`{p}` holds for {describe(s, n)}" for p, s in zip(parts, sets)),
                    op.location,
                    related=rel,
                    witness={"guard": str(op.guard.thread), "threads": 0},
                    help="the issuing thread must belong to the role that performs this operation "
                    "(e.g. thread 0 of the producer warp, not thread 0 of the block)",
                )
            )
            continue
        # several issuers doing the same copy: group them by what they issue
        sigs: dict[str, list[int]] = {}
        for t in sorted(issuers):
            sig = paths.issue_signature(op, t)
            if sig is None:
                sigs = {}
                break
            sigs.setdefault(sig, []).append(t)
        dups = [ts for ts in sigs.values() if len(ts) > 1]
        if op.kind == ir.MBAR_INIT:
            # Several threads writing the same init before the barrier that
            # precedes every use is benign (TK's own lcf template inits from a
            # whole warp); an init racing with a use is TK307's question.
            continue
        if op.kind == ir.MBAR_EXPECT:
            # several warps may each expect their own share; lanes of one warp may not
            dups = [ts for ts in dups if len({t // 32 for t in ts}) < len(ts)]
        if not dups:
            continue
        ts = frozenset(dups[0])
        per_warp = {}
        for t in ts:
            per_warp[t // 32] = per_warp.get(t // 32, 0) + 1
        semantics = (
            ""
            if op.scope != "thread"
            else f" (TK {an.model.tk_semantics} semantics: `{op.api}` runs once per calling thread)"
        )
        where = (
            f", {max(per_warp.values())} lanes of warp {max(per_warp, key=per_warp.get)}"
            if max(per_warp.values()) > 1
            else f", one lane in each of warps {sorted(per_warp)}"
        )
        msg = (
            f"{what} `{op.api}` issues the same copy from {len(ts)} threads ({describe(ts, n)}{where}); "
            f"it should be issued once{semantics}"
        )
        hint = (
            "guard it with one thread of the role (`laneid() == 0` within one warp, or "
            "`warpgroup::laneid() == 0`), or use the group-scoped `warp::tma::...` / "
            "`warpgroup::tma::...` spelling, which elects one lane"
        )
        # every lane of one warp issues a thread-scope single-thread op: one lane guard repairs it
        whole_warp = op.scope == "thread" and len(per_warp) == 1 and max(per_warp.values()) == 32
        out.append(
            finding(
                "TK403",
                msg,
                op.location,
                witness={"issuers": len(ts), "threads": describe(ts, n), "tk_semantics": an.model.tk_semantics},
                help=hint,
                fixes=[x for x in [lane_guard_fix(op.location)] if x] if whole_warp else [],
            )
        )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    __shared__ semaphore bar;
    __shared__ tile a;
    if (threadIdx.x == 0) init_semaphore(bar, 0, 32);
    __syncthreads();
    if (warpid() == 0) {                       // the whole producer warp
        tma::expect(bar, a);
        tma::load_async(a, A, {0, 0, 0, 0}, bar);
    }
    wait(bar, 0);
}
"""
)

_GOOD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(256, 1) void k(const __grid_constant__ layout A) {
    __shared__ semaphore bar;
    __shared__ tile a;
    if (threadIdx.x == 0) init_semaphore(bar, 0, 1);
    __syncthreads();
    if (warpid() == 0 && laneid() == 0) {      // one thread of the producer warp
        tma::expect(bar, a);
        tma::load_async(a, A, {0, 0, 0, 0}, bar);
    }
    wait(bar, 0);
}
"""
)


def _issuers(f):
    """The issuing threads as the witness describes them, at the finding's own line."""
    if f.witness and f.witness.get("threads"):
        return str(f.witness["threads"]), f.location.row
    return None


RULE = Rule(
    code="TK403",
    name="single-thread-op-wrong-issuer",
    contract="scope",
    severity="error",
    precision="proved",
    symptoms=("hang", "wrong"),
    explains={
        "hang": Explains(
            6,
            "an issue-once op runs on several threads (or none): arrivals and bytes"
            " multiply (the count/byte mismatches follow from this)",
        ),
        "wrong": Explains(3, "several threads issue the same store/copy"),
    },
    confirm=Confirm(widen=("poison-after-read-wait",), issuers=_issuers, issuer_repair=ISSUERS_OWN),
    summary="A TMA issue, expect_tx or mbarrier init runs on several threads per intended issue, or on none",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Finds single-thread operations — `tma::load_async`, `tma::store_async`,
`tma::expect*`, `init_semaphore` — whose guard lets several threads issue the
same copy (each issues its own bulk copy, or its own arrival + expect_tx;
several warps may each expect their own share of a barrier, but not several
lanes of one warp), and such operations whose guard no thread satisfies (an issuer condition such as
`threadIdx.x == 0` inside a role that does not contain thread 0).

Since late 2025 ThunderKittens' `tma::` operations are thread-scoped (no lane
guard inside); code written for the older lane-guarded headers issues every
copy 32 times. tkcheck says which semantics it assumed (detected from the
headers given with `--tk-include`, or set with `tk-version`).

Several threads writing the same `init_semaphore` before the block barrier
that precedes every use is benign (TK's own `lcf` template initialises from a
whole warp) and is not reported; an init that races with a use is TK307.

A global spin lock is a one-thread-of-a-warp acquisition too (`checks/locks.py`):
a lock word taken by a spin on a CAS or exchange (`while (atomicCAS(lock, 0, 1) != 0)`,
a `do {{}} while`, a `for (;;)` left by a `break`) by two or more lanes of one warp,
released after the loop, is reported: the lane that wins must leave the loop and
reach the release, while its warp-mates spin on the lock it holds (the warp
reconverges after the loop; observed to hang on H100), and every lane repeats the
critical section.

## Why is this bad?
32 copies of one load deliver 32x the bytes and 32 arrivals: the barrier's
counts are off (a hang or early completion), and the copies race on the same
shared memory. An operation no thread issues never completes its barrier.

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
