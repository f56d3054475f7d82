"""TK408: a __shared__ scalar is written by some threads and read by other warps with no barrier between."""

from __future__ import annotations

from collections.abc import Iterator

from tkcheck.checks.analysis import Analysis
from tkcheck.checks.happens_before import memory
from tkcheck.checks.threads import describe
from tkcheck.findings import Finding
from tkcheck.model import ir
from tkcheck.rule import Confirm, Rule

from ._common import HEADER, finding, related


def _what(o: ir.Op) -> str:
    a = o.access
    if a is not None and a.atomic:
        return f"atomic {a.atomic}"
    return "writes" if o.access_mode == "write" else "reads"


def _noun(w: ir.Op, elem: str) -> str:
    """What the race is on, in the user's words: a `__shared__` scalar, or an element of a
    `__shared__` array of scalars (`red_s[w]`: an element, named as the race names it)."""
    assert w.buffer is not None
    if w.buffer.index:
        return f"the element `{elem}` of the shared array `{w.buffer.name}`"
    return f"the shared scalar `{elem}`"


def check(an: Analysis) -> Iterator[Finding]:
    """The happens-before engine's shared-memory races (`checks/happens_before.py`): a write and
    a read of one `__shared__` scalar (or element of a shared array of scalars) by threads of
    two warps with no barrier both take part in between them, in the same iteration or across
    the loop's back edge. Pairs the engine could not decide are coverage, never findings."""
    n = an.threads.n
    seen = set()
    for race in memory(an).races:
        w = race.first if race.first.access_mode == "write" else race.second
        r = race.second if w is race.first else race.first
        tw = race.first_thread if w is race.first else race.second_thread
        tr = race.second_thread if w is race.first else race.first_thread
        assert w.buffer is not None
        loc = r.location if r.access_mode == "read" else race.second.location
        key = (w.buffer.name, loc.row, loc.column)
        if key in seen:
            continue
        seen.add(key)
        if race.narrow:
            continue  # two lanes of one warp at a `__syncwarp(mask)` too narrow for them: TK401
        if race.search is not None:
            yield _searched(an, race, w, r, tw, tr, loc)
            continue
        if race.ragged is not None:
            yield _ragged(an, race, w, loc)
            continue
        when = "in the next iteration of the loop" if race.next_iteration else "later"
        # an access asked per iteration of its own loop: which iteration races
        it1 = it2 = ""
        if race.inner:
            its = " (in its loop's iteration " + ", ".join(f"`{v} = {k}`" for v, k in race.inner) + ")"
            it1, it2 = (its, "") if race.inner_first else ("", its)
        # two lanes of one warp are two threads (independent thread scheduling; a shuffle is no
        # memory barrier): say so, the usual surprise
        lanes = " (another lane of its warp)" if tw // 32 == tr // 32 else ""
        elem = race.element or str(w.buffer)
        # an atomic read-modify-write reads the element too (its read races with a plain write)
        reads = _what(r) if r.access is not None and r.access.atomic else "reads"
        given = f" (for input data where {race.input})" if race.input else ""
        if race.first is w:
            msg = (
                f"{describe(frozenset([tw]), n)} {_what(w)} {_noun(w, elem)}{it1} and "
                f"{describe(frozenset([tr]), n)}{lanes} {reads} it {when}{it2} with no barrier both take part in "
                f"between{given}: the read may see the value from before the write"
            )
        else:
            msg = (
                f"{describe(frozenset([tr]), n)} {reads} {_noun(w, elem)}{it1} and "
                f"{describe(frozenset([tw]), n)}{lanes} {_what(w)} it {when}{it2} with no barrier both take part in "
                f"between{given}: the write may land before the read has read the old value"
            )
        yield finding(
            "TK408",
            msg,
            loc,
            related=[related(w, f"the write of `{w.buffer}`")],
            witness={
                "writer": tw,
                "reader": tr,
                "next_iteration": race.next_iteration,
                **({"iteration": dict(race.inner)} if race.inner else {}),
                **({"input": race.input} if race.input else {}),
            },
            help=(
                "put a `__syncwarp()` whose mask holds both lanes between the write and the read "
                "(lanes of one warp are not in lock step, and a shuffle orders no memory)"
                if lanes
                else "put a barrier both warps take part in between the write and the read "
                "(`__syncthreads()`, or a named barrier `group<N>::sync(id)` / `bar.sync id, count` of both)"
            ),
        )


MAX_STEPS = 24


def _searched(an: Analysis, race, w: ir.Op, r: ir.Op, tw: int, tr: int, loc) -> Finding:
    """A race the race search reached (`protocol.races`): both accesses can run at one state of an
    interleaving of the roles; the trace is that interleaving's synchronisation."""
    from tkcheck.checks import protocol as P
    from tkcheck.findings import TraceStep

    n = an.threads.n
    s = race.search
    it_w, it_r = (an.model.user_iteration(tuple(sorted(e.items()))) for e in s["iterations"])

    def at(it):
        return " (" + ", ".join(f"{k} = {v}" for k, v in it.items()) + ")" if it else ""

    assert w.buffer is not None
    elem = w.buffer.name + "".join(f"[{x}]" for x in s["element"])
    msg = (
        f"{describe(frozenset([tr]), n)} reads `{elem}`{at(it_r)} while {describe(frozenset([tw]), n)} "
        f"{_what(w)} it{at(it_w)}: a reachable interleaving of the roles lets both run with no barrier, "
        "arrive or wait ordering one before the other"
    )
    made = s.get("made")
    if made == "write":
        msg = (
            f"{describe(frozenset([tr]), n)} reads `{elem}`{at(it_r)} after {describe(frozenset([tw]), n)} "
            f"{_what(w)} it{at(it_w)}, but the writer has not released since that write (its arrive or barrier "
            "comes before it; a bulk copy's complete_tx releases nothing): nothing the reader acquired orders "
            "the write before the read"
        )
    elif made == "read":
        msg = (
            f"{describe(frozenset([tw]), n)} {_what(w)} `{elem}`{at(it_w)} after {describe(frozenset([tr]), n)} "
            f"read it{at(it_r)}, but the reader has not released since that read: nothing orders the read "
            "before the write"
        )
    if s["assumption"]:
        msg += f" ({s['assumption']})"
    steps = [(role, e, what) for role, e, what in s["trace"] if e.kind != "mem"]
    trace = []
    if len(steps) > MAX_STEPS:
        trace.append(TraceStep("...", f"{len(steps) - MAX_STEPS} earlier steps"))
        steps = steps[-MAX_STEPS:]
    for role, e, what in steps:
        itx = ", ".join(f"{k}={v}" for k, v in an.model.user_iteration(e.env).items())
        text = P.event_text(e) + (f" {what}" if what else "") + (f" [{itx}]" if itx else "")
        trace.append(TraceStep(role, text, e.op.location, P.elem_str(e.elem) if e.elem else None, None))
    wr, rr = s["roles"]
    trace.append(TraceStep(wr, f"{w.api}: {_what(w)} `{elem}`{at(it_w)}", w.location, None, None, fault=True))
    trace.append(
        TraceStep(
            rr,
            f"{r.api}: reads `{elem}`{at(it_r)}" + (", at the same time" if not made else ", unordered with the write"),
            r.location,
            None,
            None,
            fault=True,
        )
    )
    return finding(
        "TK408",
        msg,
        loc,
        related=[related(w, f"the write of `{elem}`")],
        witness={
            "writer": tw,
            "reader": tr,
            "element": elem,
            "writer_iteration": it_w,
            "reader_iteration": it_r,
            "next_iteration": False,
        },
        trace=trace,
        help="order the read before the next write of the location: the reader releases it (an arrive, "
        "a `bar.arrive` on a barrier the writer syncs, or a `__syncwarp()` of the lanes that read before "
        "lane 0 releases) and the writer waits for that release before writing",
    )


def _ragged(an: Analysis, race, w: ir.Op, loc) -> Finding:
    """A race of two iterations of a loop each thread leaves at its own iteration
    (`checks/ragged.py`): thread A's iteration i and thread B's iteration j, unordered."""
    from tkcheck.checks import ragged as R

    n = an.threads.n
    rp = race.ragged
    a, b = rp.first, rp.second
    lanes = " (another lane of its warp)" if rp.first_thread // 32 == rp.second_thread // 32 else ""
    verb_a = _what(a) if a is w else "reads"
    verb_b = _what(b) if b is w else "reads"
    msg = (
        f"{describe(frozenset([rp.first_thread]), n)} {verb_a} {_noun(w, str(w.buffer))} in "
        f"{R.iteration_text(an, a, rp.first_iteration)} and {describe(frozenset([rp.second_thread]), n)}{lanes} "
        f"{verb_b} it in {R.iteration_text(an, b, rp.second_iteration)}, and {R.order_text(rp)}: "
        + (
            "the read may see the value from before the write"
            if a is w
            else "the write may land before the read has read the old value"
        )
    )
    if rp.assumption:
        msg += f" ({rp.assumption})"
    return finding(
        "TK408",
        msg,
        loc,
        related=[related(w, f"the write of `{w.buffer}`")],
        witness={
            "writer": rp.first_thread if a is w else rp.second_thread,
            "reader": rp.second_thread if a is w else rp.first_thread,
            "next_iteration": race.next_iteration,
            "iterations": [rp.first_iteration, rp.second_iteration],
        },
        help="order every thread's iteration before its neighbours' next one: a barrier all threads still in "
        "the loop take part in each iteration (`__syncthreads_or(more)` as the loop's vote, or a split barrier "
        "whose arrive follows the write and whose wait precedes the read)",
    )


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(256, 1) void k(const int *tiles, float *out) {
    __shared__ int tile;
    if (threadIdx.x == 0) tile = tiles[blockIdx.x];  // a scheduler thread picks the tile
    out[tile * 256 + threadIdx.x] = 1.0f;
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(256, 1) void k(const int *tiles, float *out) {
    __shared__ int tile;
    if (threadIdx.x == 0) tile = tiles[blockIdx.x];  // a scheduler thread picks the tile
    __syncthreads();
    out[tile * 256 + threadIdx.x] = 1.0f;
}
"""
)

RULE = Rule(
    code="TK408",
    name="shared-scalar-race",
    contract="scope",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    # a race on shared memory between warps: racecheck observes it
    confirm=Confirm(),
    summary="A __shared__ scalar is written by some threads and read by other threads (other warps, or other lanes of the warp) with no barrier between",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Asks the happens-before engine (`tkcheck/checks/happens_before.py`) about every write and read
of one `__shared__` scalar variable, or of one element of a `__shared__` array of scalars: an
"am I last" flag set from an atomic's old value, a tile index a scheduler warp broadcasts, a
sentinel. It reports the pair when the two run on two different threads (proved from their
guards) -- of two warps, or two lanes of one warp: lanes are threads that may run apart
(independent thread scheduling, Volta and later), and a warp shuffle or vote orders no memory --
in the same loop iteration or in consecutive iterations (the read of iteration k, the next
write in iteration k + 1), and no barrier both threads take part in lies between them:
`__syncthreads()`, `everyone::sync(id)`, a named barrier `group<N>::sync(id)` (or the writer's
`bar.arrive id` and the reader's `bar.sync id`), or, for two lanes of one warp, a
`__syncwarp(mask)` both run with both lanes in its mask (a pair that both run a `__syncwarp(mask)`
whose mask leaves one out is TK401's: the barrier is too narrow). An mbarrier, a spin loop, an
atomic, a call it does not model or an unknown guard between them leaves the pair undecided:
no finding. An atomic read-modify-write (`atomicAdd(&s[k], v)`) reads its element too: a plain
write of another thread unordered with it is a race (two atomics are not).

Accesses run by leaders elected from a run-time mask (`if (lane == __ffs(peers) - 1)`, `peers`
from `__match_any_sync` or `__ballot_sync`) under conditions on data each lane loads for itself
are asked under one input: every lane loads the same value, so the lowest lane of each warp
leads its group, and the element is the one the other access names. A race then is reported
with that input; a pair the barriers order for every thread the guards admit is proved ordered.

Pairs in different loops (a producer's loop and a consumer's, a scheduler warp's and its
workers') are asked of the race search (`protocol.races`): the roles' programs run
interleaved with every barrier kind (mbarrier phases, named-barrier generations counted per
warp, `__syncwarp(mask)` as a barrier of the mask's lanes, lanes that do different things as
roles of their own). It reports a reachable state where a write and a read of one element can
both run before either thread synchronises again, with the interleaving that leads there: a
refill through named barriers that does not wait for the readers' release, a slot that lane 0
releases before the other lanes of its warp have read it (no `__syncwarp()`), one named-barrier
id used for two hand-overs (its generations complete with the wrong threads). The search runs
the kernel with small concrete sizes, as the deadlock rules' does (stated in the message when
it assumes a number of rounds of a persistent loop). It also reports an access one role makes
while another role's conflicting access is made and not released yet: no arrive or barrier of
that role has come after it (a descriptor written after the producer's `arrive.expect_tx`, whose
phase then completes when the bytes land; a bulk copy's complete_tx releases nothing).

## Why is this bad?
Shared memory written by one thread is visible to another warp only after a barrier (or
another synchronisation) orders them; warps run independently, and so do the lanes of one warp
(a hand-off through a per-warp slot, `if (lane == 0) s[warp] = v;` then every lane reads
`s[warp]`, needs a `__syncwarp()` between, and another one before the slot is rewritten). The reader may see the value
from before the write (a stale tile index, the flag from a previous tile) -- or, across
iterations, the writer may overwrite the value before a slow warp has read the old one.
The results are wrong only sometimes, under load.

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
