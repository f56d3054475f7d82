"""TK302: init count != arrivals per phase (scope-aware)."""

import re

from tkcheck.checks import completion, violations
from tkcheck.checks.threads import describe
from tkcheck.rule import Confirm, Explains, ISSUERS_JOIN, Rule

from ._common import HEADER, finding, num, related


def check(an):
    """The arrival accounts the completion engine proves broken (`checks/violations.arrival_mismatches`), worded."""
    out = []
    for v in violations.arrival_mismatches(an):
        name, acc = v.name, v.acc
        if v.kind == "none":
            w = acc.waits[0]
            out.append(
                finding(
                    "TK302",
                    f"'{name}' is initialised for {num(acc.init_count)} arrivals per phase but nothing arrives on it",
                    w.location,
                    related=[related(o, f"'{name}' initialised for {num(o.count)} arrivals") for o in acc.inits]
                    + [related(o, "waited on here") for o in acc.waits[1:3]],
                    witness={"barrier": name, "init_count": num(acc.init_count), "arrivals_per_phase": 0},
                    help="no arrive, expect or commit targets this barrier: its phase never completes (hang); "
                    "add the missing arrive (e.g. `if (laneid() == 0) arrive(bar)` in every warp it counts)",
                )
            )
            continue
        if v.kind == "silent":
            d, w, sources = v.cta, v.wait, v.sources
            out.append(
                finding(
                    "TK302",
                    f"CTA {d} of the cluster waits on its copy of '{name}' (initialised for {num(acc.init_count)} "
                    f"arrivals per phase) but every arrival lands on another CTA's copy: nothing arrives on CTA {d}'s",
                    w.location,
                    related=[
                        related(
                            o, f"arrives on '{name}' of CTA(s) {sorted(completion.destinations(an.model, o) or {})}"
                        )
                        for o in sources
                    ]
                    + [related(o, f"'{name}' initialised for {num(o.count)} arrivals") for o in acc.inits[:1]],
                    witness={"barrier": name, "cta": d, "init_count": num(acc.init_count), "arrivals_per_phase": 0},
                    help="CTA-local barriers of a cluster are separate objects: multicast the commit to every CTA that "
                    "waits (`tensor_commit<2>`, `detail::tcgen05::commit<2>`), arrive remotely "
                    "(`tma::cluster::arrive(bar, cta)`), or let the waiting CTA's own threads arrive",
                )
            )
            continue
        if v.kind == "phase":
            out.append(_phase_finding(v))
            continue
        group, contribs, init_count, arrived = v.group, v.contribs, v.init_count, v.arrived
        rel = [related(o, f"'{name}' initialised for {num(o.count)} arrivals per phase") for o in acc.inits]
        for c in contribs:
            per = num(c.amount)
            rel.append(
                related(
                    c.op,
                    f"{c.op.api} arrives {per} x {len(c.issuers)} issuing thread(s)"
                    f" ({describe(c.issuers)})"
                    + (f" x {num(c.times)} per phase" if num(c.times) != "1" else "")
                    + (f" [{c.op.scope} scope: one elected lane per group]" if c.op.issuers_per_group else ""),
                )
            )
        for o in acc.waits[:2]:
            rel.append(related(o, "waited on here"))
        a, i = num(arrived), num(init_count)
        many = [c for c in contribs if len(c.issuers) > 1]
        anchor = (many[0].op if many else contribs[0].op) if len(contribs) == 1 or many else acc.inits[0]
        av, iv = arrived.eval({}), init_count.eval({})
        effect = (
            "too few arrivals: the phase never completes (hang)"
            if av is not None and iv is not None and av < iv
            else "too many arrivals: phases complete early, waiters see stale data and the counts drift"
        )
        assumed = f" ({'; '.join(acc.assumptions)})" if acc.assumptions else ""
        wit = {"barrier": name, "init_count": i, "arrivals_per_phase": a, "phase": group}
        if acc.assumptions:
            wit["assumptions"] = list(acc.assumptions)
        out.append(
            finding(
                "TK302",
                f"'{name}' is initialised for {i} arrivals per phase but {a} arrive per phase{assumed}",
                anchor.location,
                related=rel,
                witness=wit,
                help=f"{effect}; a thread-scope arrive runs once per executing thread (a whole warp is 32 "
                f"arrivals): guard it with `laneid() == 0`, use `warp::arrive`, or change the init count",
            )
        )
    return out


def _phase_finding(v):
    """i7model: a barrier whose arrivals were enumerated phase by phase (arrive_drop lowering the
    expected count, warps leaving a loop after different rounds): the first phase whose arrivals
    differ from the count it expects."""
    name, acc, p, rg = v.name, v.acc, v.phase, v.acc.ragged
    a, e = rg.arrived[p], rg.expected[p]
    dropped = acc.init_count.eval({}) - e if acc.init_count is not None else 0
    expects = f"expects {e} arrival{'s' if e != 1 else ''}" + (
        f" (initialised for {num(acc.init_count)}, {dropped} dropped by arrive_drop in earlier phases)"
        if dropped
        else ""
    )
    if e <= 0:
        effect = "its expected count has run down to 0: every later arrival is undefined (a launch failure or a hang)"
    elif a < e:
        effect = "too few arrivals: the phase never completes (hang)"
    else:
        effect = (
            "too many arrivals: the phase completes early and the rest lands in the next (stale data, drifting counts)"
        )
    anchor = (rg.drops or rg.sites)[0]
    rel = [related(o, f"'{name}' initialised for {num(o.count)} arrivals per phase") for o in acc.inits]
    rel += [related(o, f"{o.api}: one arrival a round of its loop") for o in rg.sites[:2]]
    rel += [related(o, f"{o.api}: arrives and lowers the expected count of every later phase") for o in rg.drops[:2]]
    rel += [related(o, "waited on here") for o in acc.waits[:2]]
    return finding(
        "TK302",
        f"phase {p} of '{name}' {expects} but {a} arrive in it "
        f"(arrivals per phase: {rg.arrived[: p + 2]}, expected: {[max(x, 0) for x in rg.expected[: p + 2]]})",
        anchor.location,
        related=rel,
        witness={
            "barrier": name,
            "phase": p,
            "expected": e,
            "arrivals": a,
            "assumptions": ["one round of the arrivals' loop a phase"],
        },
        help=f"{effect}; a thread that leaves the barrier for good must leave with `mbarrier.arrive_drop` "
        "(once, on its last arrival) so the later phases stop counting it",
    )


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(256, 1) void k(float *out) {
    __shared__ semaphore done;
    if (threadIdx.x == 0) init_semaphore(done, 1, 0);   // one arrival expected
    __syncthreads();
    if (warpid() == 1) {
        arrive(done);               // but all 32 lanes of warp 1 arrive
    }
    if (warpid() == 0) wait(done, 0);
}
"""
)

_GOOD = _BAD.replace(
    "arrive(done);               // but all 32 lanes of warp 1 arrive", "if (laneid() == 0) arrive(done);"
)


# the note on an arrive that names its issuers: "... arrives N x K issuing thread(s) (<who>)"
_ISSUERS = re.compile(r"issuing thread\(s\) \((.*)\)\s*$")


def _issuers(f):
    """The issuers of the first arrive note that names them, at that arrive's line."""
    for r in getattr(f, "related", []):
        m = _ISSUERS.search(r.message)
        if m:
            return m.group(1), r.location.row
    return None


RULE = Rule(
    code="TK302",
    name="arrival-count-mismatch",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("hang", "stripes"),
    explains={
        "hang": Explains(5, "the barrier's arrival count is never reached (or overshoots into the next phase)"),
        "stripes": Explains(3, "extra arrivals complete a phase early: a slot is refilled while in use"),
        "wrong": Explains(8, "extra arrivals complete a phase early: a stage is released or refilled while still read"),
    },
    confirm=Confirm(repairs=("count",), issuers=_issuers, issuer_repair=ISSUERS_JOIN),
    summary="An mbarrier's init count differs from the arrivals each phase receives",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Compares the arrival count an mbarrier is initialised with
(`init_semaphore(bar, threads, tx)` counts `threads + tx` arrivals) with the
arrivals it receives per phase: every `arrive`, `arrive(bar, n)` and
`tma::expect*` (one arrival each), counted per *issuing thread* — a
thread-scope `arrive` reached by a whole warp is 32 arrivals, a `warp::` or
`warpgroup::` arrive is one per group — times the inner-loop trips per phase.
In a cluster each CTA's copy of the barrier is its own object: arrivals are
counted per destination CTA (remote `tma::cluster::arrive(bar, cta)`, the pair
commit `tensor_commit<2>` landing on both CTAs, `tma::cluster::expect(bar,
cta, ...)`), and a CTA that waits on its copy while every arrival lands on
another CTA's copy is reported too (a `tensor_commit<1>` where the peer waits).
Sites of one role at different loop depths (a commit before the k loop, one in
each iteration, one after it) are checked visit by visit: when every visit
brings the whole count, each completes a phase of its own; a visit that alone
brings more than the count (the tail's arrive made by a whole warp) is reported
at that site.
A barrier with an `mbarrier.arrive_drop` (an arrival that also lowers the
expected count of every later phase) or with arrivals in a loop whose trip
count depends on the thread (warps leaving after different rounds) is counted
phase by phase, one round of that loop a phase: phase p expects the init count
less the drops of the phases before it, and the first phase whose arrivals
differ is reported (a leaving warp's plain arrive, an arrive_drop on every
round). Where those counts are not numbers, the account is left undecided.

## Why is this bad?
Too few arrivals and the phase never completes: a hang. Too many and phases
complete early: waiters run ahead of the data (row stripes), and the surplus
arrivals drift into later phases.

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
