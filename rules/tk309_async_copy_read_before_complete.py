"""TK309: a shared buffer filled by cp.async is read before the wait that completes the copy's commit group."""

from __future__ import annotations

from collections.abc import Iterator

from tkcheck.checks import async_groups as G
from tkcheck.checks.analysis import Analysis
from tkcheck.findings import Finding
from tkcheck.rule import Rule

from ._common import HEADER, finding, related


def check(an: Analysis) -> Iterator[Finding]:
    """Reads whose cp.async has not completed in the issuing thread by the last
    `cp.async.wait_group` that thread runs before the read (group arithmetic, async_groups)."""
    for ob in G.obligations(an):
        if ob.kind != "complete" or ob.status != "violated" or ob.copy is None:
            continue
        w = ob.witness
        at = ", ".join(
            f"{k} = {v}"
            for k, v in w.items()
            if k not in ("reader_thread", "writer_thread", "group", "completed_groups", "via")
        )
        if w.get("via") == "mbarrier":
            yield finding(
                "TK309",
                f"`{ob.read.api}` of `{ob.read.buffer}` on thread {w.get('reader_thread')} reads words that "
                f"`{ob.copy.api}` (line {ob.copy.location.row}) copies on thread {w.get('writer_thread')}, but "
                "no wait of the reader observes that copy landed (no wait on the mbarrier phase its commit "
                "arrives on, nor a barrier after the copying thread's own wait)" + (f" ({at})" if at else ""),
                ob.read.location,
                related=[related(ob.copy, f"thread {w.get('writer_thread')} copies `{ob.copy.buffer}` here")],
                witness=w,
                help="wait for the stage before reading it (`pipe.consumer_wait()`, a wait on the barrier its "
                "`producer_commit` / `cp.async.mbarrier.arrive` arrives on), and index the shared ring with "
                "as many buffers as the pipeline has stages",
            )
            continue
        rel = [
            related(
                ob.copy, f"thread {w.get('writer_thread')} copies `{ob.copy.buffer}` here (its group {w.get('group')})"
            )
        ]
        if ob.wait is not None:
            rel.append(
                related(
                    ob.wait,
                    f"completes groups 1..{w.get('completed_groups')} of the thread: group {w.get('group')} may "
                    "still be in flight",
                )
            )
        yield finding(
            "TK309",
            f"`{ob.read.api}` of `{ob.read.buffer}` on thread {w.get('reader_thread')} reads words that "
            f"`{ob.copy.api}` (line {ob.copy.location.row}) copies in commit group {w.get('group')} of thread "
            f"{w.get('writer_thread')}, but that thread's last wait before the read completes "
            + (f"only its groups 1..{w.get('completed_groups')}" if w.get("completed_groups") else "none of its groups")
            + (f" ({at})" if at else ""),
            ob.read.location,
            related=rel,
            witness=w,
            help="wait with a smaller N (`cp.async.wait_group N` / `__pipeline_wait_prior(N)` / "
            "`load_async_wait<N>` / `cg::wait_prior<N>(group)`): N is the number of groups committed after the one the read needs; "
            "commit one group per stage in the prologue and in every iteration, also when no copy was issued",
        )


_BAD = (
    HEADER
    + """#include <cuda_pipeline.h>

__global__ __launch_bounds__(128, 1) void k(const float *g, float *out, int n) {
    __shared__ float buf[2][128];
    const int t = threadIdx.x;
    float acc = 0.0f;
    __pipeline_memcpy_async(&buf[0][t], g + t, 4);
    __pipeline_commit();
    for (int i = 0; i < n; i++) {
        if (i + 1 < n) __pipeline_memcpy_async(&buf[(i + 1) % 2][t], g + (i + 1) * 128 + t, 4);
        __pipeline_commit();
        __pipeline_wait_prior(2);   // two groups may stay pending: chunk i's among them
        __syncthreads();
        acc += buf[i % 2][(t + 1) % 128];
        __syncthreads();
    }
    out[t] = acc;
}
"""
)

_GOOD = (
    HEADER
    + """#include <cuda_pipeline.h>

__global__ __launch_bounds__(128, 1) void k(const float *g, float *out, int n) {
    __shared__ float buf[2][128];
    const int t = threadIdx.x;
    float acc = 0.0f;
    __pipeline_memcpy_async(&buf[0][t], g + t, 4);
    __pipeline_commit();
    for (int i = 0; i < n; i++) {
        if (i + 1 < n) __pipeline_memcpy_async(&buf[(i + 1) % 2][t], g + (i + 1) * 128 + t, 4);
        __pipeline_commit();
        __pipeline_wait_prior(1);   // only chunk i + 1's group may stay pending
        __syncthreads();
        acc += buf[i % 2][(t + 1) % 128];
        __syncthreads();
    }
    out[t] = acc;
}
"""
)

RULE = Rule(
    code="TK309",
    name="async-copy-read-before-complete",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    summary="A shared buffer filled by cp.async is read before the wait that completes the copy's commit group",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Runs the kernel's cp.async events (`cp.async.{{ca,cg}}` in inline PTX,
`__pipeline_memcpy_async`, TK's `load_async`, cooperative groups' `cg::memcpy_async(group,
...)`, whose copy every thread of the group issues for its chunks and commits as one group;
`cp.async.commit_group` / `__pipeline_commit`; `cp.async.wait_group N` / `wait_all` /
`__pipeline_wait_prior(N)` / `load_async_wait<N>` / `cg::wait_prior<N>(group)` /
`cg::wait(group)`) for every thread, with the loops' trip counts tried from 0 to 8
where they depend on kernel arguments, and counts each thread's commit groups: a copy
joins the group the next commit closes, and a wait with count N completes every group
of the thread but the N most recent. A read of a copied element is reported when the
copy's group is not complete in the copying thread by the last wait that thread runs
before the read (prologue commits, commits under a condition and loop iterations all
counted). Copies ordered by mbarriers (libcu++'s partitioned `cuda::pipeline`:
`producer_commit` is `cp.async.mbarrier.arrive` on the stage's barrier, `consumer_wait` a
wait on it; `memcpy_async` with a `cuda::barrier`; raw `cp.async.mbarrier.arrive.noinc`)
are run as executions of all threads with the mbarriers' phase semantics: a read is
reported when, in a run, the reader has observed no phase that the copy's commit arrived
on (a skipped `consumer_wait`, a shared ring with fewer buffers than the pipeline has
stages). Reads no run finds unordered stay undecided: a run is one schedule, not a proof.
Unmodelled ordering (named barriers, mbarriers with transaction bytes, unknown
destinations) makes the obligation undecided (coverage), never a finding.

## Why is this bad?
`cp.async.wait_group N` waits only until at most N of the thread's most recent groups
are pending (PTX ISA, "cp.async.wait_group"). With N one too large, or with a group
count that runs behind (the prologue's stages committed as one group, a commit skipped
when no copy was issued), the stage a thread reads may still be in flight: stale or
half-written data, depending on timing.

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
