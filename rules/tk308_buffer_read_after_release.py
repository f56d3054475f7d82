"""TK308: a thread reads a shared buffer after it released the buffer (arrived on the barrier
its producer waits before refilling it)."""

from tkcheck.checks import releases
from tkcheck.checks.threads import describe
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._handoff import handoff_findings
from ._common import HEADER, finding, related, user_site


def check(an):
    """The release engine's reads after release (`checks/releases.py`)."""
    out = []
    m, n = an.model, an.threads.n
    seen = set()
    for v in releases.reads_after_release(an).violations:
        a, r, t = v.arrive, v.read, v.thread
        assert a.barrier is not None and r.buffer is not None
        key = (r.location.row, r.location.column, a.location.row)
        if key in seen:
            continue
        seen.add(key)
        # a read in a loop whose trip count is data: the violation holds when that loop runs
        when = "".join(
            f" (when the `{lp.var or 'inner'}` loop runs, as the data lets it: its first iteration reads it)"
            for lp, _ in v.cases[:1]
        )
        out.append(
            finding(
                "TK308",
                f"{describe(frozenset([t]), n)} reads `{r.buffer}` (`{r.api}`) after releasing it "
                f"(`{a.api}` on `{a.barrier}`){when}: the producer that waits on `{a.barrier.name}` may refill "
                f"`{r.buffer.name}` while this read is still going on",
                r.location,
                related=[
                    related(a, f"`{a.barrier}` released here"),
                    *[
                        related(w, "the refill waits here")
                        for w in m.ops
                        if w.kind == ir.MBAR_WAIT and w.barrier is not None and w.barrier.name == a.barrier.name
                    ][:1],
                ],
                witness={"thread": t, "barrier": str(a.barrier), "buffer": str(r.buffer)}
                | ({"when": [str(c) for _, c in v.cases]} if v.cases else {}),
                help="release a buffer after the last read of every thread that reads it: read, then "
                "synchronise the readers (`warpgroup::sync`, `__syncwarp`), then one lane arrives",
            )
        )
    out.extend(handoff_findings(an, "TK308", ("after_release",)))
    out.extend(_global_handbacks(an))
    return out


def _global_handbacks(an) -> list:
    """The happens-before engine's global hand-backs (`happens_before.memory(an).handbacks`): a
    slot of global memory read after the flag that hands it back to its writer was stored."""
    from tkcheck.checks.happens_before import describe_location, memory

    n = an.threads.n
    out = []
    for h in memory(an).handbacks:
        ga = h.release.global_access
        flag = (ga.text if ga is not None and ga.text else h.release.api)[:50]
        out.append(
            finding(
                "TK308",
                f"{describe(frozenset([h.thread]), n)} reads `{describe_location(h.read)[:50]}` after its side "
                f"stored the flag that hands the slot back (`{flag}`): the writer that spins on that flag "
                f"overwrites the slot (`{describe_location(h.write)[:50]}`) as soon as it sees it, possibly "
                "while this read is still going on",
                user_site(h.read),
                related=[
                    related(h.release, "the slot is handed back here"),
                    related(h.write, "the writer refills it here"),
                ],
                witness={"thread": h.thread, "order": "read after hand-back"},
                help="hand the slot back after the last read of every lane: read, `__syncwarp()` (or the "
                "block's barrier), then one thread stores the flag with release",
            )
        )
    return out


_BAD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(160, 1) void k(const __grid_constant__ layout A, int n) {
    __shared__ tile a[2];
    __shared__ semaphore full[2], empty[2];
    if (threadIdx.x == 0)
        for (int s = 0; s < 2; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 1, 0); }
    __syncthreads();
    if (warpid() == 4) {
        if (laneid() == 0) {
            for (int i = 0; i < n; i++) {
                wait(empty[i % 2], ((i / 2) % 2) ^ 1);
                tma::expect(full[i % 2], a[i % 2]);
                tma::load_async(a[i % 2], A, {0, 0, 0, i}, full[i % 2]);
            }
        }
    } else {
        rt_fl<16, 64> r;
        for (int i = 0; i < n; i++) {
            wait(full[i % 2], (i / 2) % 2);
            warpgroup::sync(1);                                   // every warp has waited
            if (warpgroup::laneid() == 0) arrive(empty[i % 2]);   // released first...
            warpgroup::load(r, a[i % 2]);                         // ...read after
        }
    }
}
"""
)

_GOOD = (
    HEADER
    + """
using tile = st_bf<64, 64>;
using layout = gl<bf16, 1, 1, -1, -1, tile>;
__global__ __launch_bounds__(160, 1) void k(const __grid_constant__ layout A, int n) {
    __shared__ tile a[2];
    __shared__ semaphore full[2], empty[2];
    if (threadIdx.x == 0)
        for (int s = 0; s < 2; s++) { init_semaphore(full[s], 0, 1); init_semaphore(empty[s], 1, 0); }
    __syncthreads();
    if (warpid() == 4) {
        if (laneid() == 0) {
            for (int i = 0; i < n; i++) {
                wait(empty[i % 2], ((i / 2) % 2) ^ 1);
                tma::expect(full[i % 2], a[i % 2]);
                tma::load_async(a[i % 2], A, {0, 0, 0, i}, full[i % 2]);
            }
        }
    } else {
        rt_fl<16, 64> r;
        for (int i = 0; i < n; i++) {
            wait(full[i % 2], (i / 2) % 2);
            warpgroup::load(r, a[i % 2]);                         // every warp reads...
            warpgroup::sync(1);                                   // ...all have read...
            if (warpgroup::laneid() == 0) arrive(empty[i % 2]);   // ...then one lane releases
        }
    }
}
"""
)

RULE = Rule(
    code="TK308",
    name="buffer-read-after-release",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("stripes", "wrong"),
    summary="A thread reads a shared buffer after it released it to the producer that refills it",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Pairs each barrier with the shared buffers a role refills right after waiting on it, element
by element (a ring's `empty[s]` before the TMA load into `a[s]`; an MK page token
`page_finished[p]` before the load into page `p`): arriving on that barrier element releases
that buffer element (a stage refilled strip by strip, `x[s][r]` for every `r`, after one
`wait(empty[s])`: every strip of stage `s`). Then reports a read of the buffer element (`warp::load`,
`warpgroup::load`, `ld.shared`) that a releasing thread makes later in the same iteration,
after its own arrive, when no later arrival of those threads keeps the phase open. This is the
MK consumer that releases a page before its last read of it, and the libcu++ consumer that calls
`consumer_release()` before reading the stage (the pipeline's implicit stage `tail % S` and the
ring index proved equal). A read in a loop of its own after the release is reported when some
iteration of that loop the thread runs reads a refilled element; a loop whose trip count is
data (`r < d.w`) is tried at its first iteration, and the finding says it holds when that loop
runs. A read it cannot place (a trip
count or index not evaluated, an element not known to be refilled) is listed by
`tkcheck coverage`, not reported.

Asynchronous readers are the business of other rules: an in-flight wgmma operand (TK206), a
TMA store still reading its source (TK306).

The same for a slot of a shared-memory queue handed back through a volatile `__shared__` index
(`head = i + 1` stored before the slot's read): the producer that polls `head` may refill it
(`checks/shared_handoff.py`).

And for a slot of global memory handed back through a flag (a ring's per-slot sequence number,
round 11): the writer spins with an acquire on the flag, then overwrites the slot; a read the
other side makes after its store of that flag (the only store of the flag by those threads in the
iteration, so the one that hands the slot back), by blocks of another role than the writer's, is
ordered before nothing the writer does (`happens_before.memory(an).handbacks`).

## Why is this bad?
Once the arrival completes the barrier's phase, the producer's wait returns and its refill (a
TMA load, the next instruction's loader) may overwrite the buffer while this thread is still
reading it: the read returns a mix of the old and the new tile, depending on timing.

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
