"""TK302: init count != arrivals per phase (scope-aware)."""

import re

from tkcheck import solver
from tkcheck.checks import completion
from tkcheck.checks.threads import describe
from tkcheck.rule import Confirm, Explains, ISSUERS_JOIN, Rule

from ._common import HEADER, finding, num, related


def check(an):
    out = []
    for name, acc in sorted(completion.accounts(an).items()):
        if not acc.ok() or (acc.init_count is None and not acc.group_init):
            continue
        if not acc.arrivals and acc.waits and acc.init_count is not None and acc.init_count.eval({}) not in (None, 0):
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
        out.extend(_silent_copies(an, name, acc))
        reported = set()  # per-thread elements: one finding per round kind
        for group, contribs in sorted(acc.arrivals.items()):
            if not contribs:
                continue
            if acc.per_thread and group.split(" ")[0] in reported:
                continue
            init_count = acc.group_init.get(group, acc.init_count)
            if init_count is None:
                continue
            arrived = completion.total(contribs)
            if arrived.is_opaque() or init_count.is_opaque():
                continue
            if solver.differ_always(arrived, init_count, an.solver_timeout_ms) is not True:
                continue
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
            reported.add(group.split(" ")[0])
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


def _silent_copies(an, name, acc):
    """In a cluster: a CTA whose threads wait on their copy of the barrier while every arrival
    of the kernel lands on the other CTAs' copies (a commit or arrive that is not multicast)."""
    size = completion.cluster_size(an.model)
    if size is None or acc.init_count is None or acc.init_count.eval({}) in (None, 0) or not acc.arrivals:
        return []
    if acc.group_init or not all(" in CTA " in k for k in acc.arrivals):
        return []
    fed = {completion.cta_of(k) for k, cs in acc.arrivals.items() if cs}
    out = []
    for d in range(size):
        waits = [w for w in acc.waits if (r := completion.ranks_running(w, size)) is not None and d in r]
        if not waits or d in fed or any(completion.ranks_running(w, size) is None for w in acc.waits):
            continue
        w = waits[0]
        sources = [c.op for cs in acc.arrivals.values() for c in cs][:3]
        out.append(
            finding(
                "TK302",
                f"CTA {d} of the cluster waits on its copy of '{name}' (initialised for {num(acc.init_count)} "
                f"arrivals per phase) but every arrival lands on another CTA's copy: nothing arrives on CTA {d}'s",
                w.location,
                related=[
                    related(o, f"arrives on '{name}' of CTA(s) {sorted(completion.destinations(an.model, o) or {})}")
                    for o in sources
                ]
                + [related(o, f"'{name}' initialised for {num(o.count)} arrivals") for o in acc.inits[:1]],
                witness={"barrier": name, "cta": d, "init_count": num(acc.init_count), "arrivals_per_phase": 0},
                help="CTA-local barriers of a cluster are separate objects: multicast the commit to every CTA that "
                "waits (`tensor_commit<2>`, `detail::tcgen05::commit<2>`), arrive remotely "
                "(`tma::cluster::arrive(bar, cta)`), or let the waiting CTA's own threads arrive",
            )
        )
    return out


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
