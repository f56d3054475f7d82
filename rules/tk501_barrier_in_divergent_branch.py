"""TK501: a block or group barrier reached by only part of its participants."""

from tkcheck.checks.threads import describe
from tkcheck.checks.warp_collectives import collectives, describe_lanes
from tkcheck.knowledge.ops import ALIGNED_WARP
from tkcheck.checks.wide_barriers import divergences
from tkcheck.model import ir
from tkcheck.rule import Explains, Rule

from ._common import HEADER, finding, in_helper, related, user_site


def _block_barrier_id(op):
    """0 for __syncthreads, the id of everyone::sync(id); None if not a block-wide barrier."""
    kind = op.sync_kind
    if kind == "block" and op.sync is not None and op.sync.syncthreads:
        return 0
    if kind == "block" and op.sync is not None and op.sync.everyone:
        v = op.sync_id.eval({}) if op.sync_id is not None else None
        return v if isinstance(v, int) else None
    return None


def check(an):
    out = []
    n = an.threads.n
    if n is None:
        return out
    everyone = frozenset(range(n))
    exits = list(an.model.ops_of(ir.EXIT))
    # Block-wide barriers: a `bar.sync id` (no count) waits for every thread of
    # the block. The same id may be reached from different role branches (TK's
    # lcf template does this): what matters is that every thread reaches one of
    # the sites of that id.
    by_id: dict[int, list] = {}
    for op in an.model.ops_of(ir.SYNC):
        bid = _block_barrier_id(op)
        if bid is not None:
            by_id.setdefault(bid, []).append(op)
    for bid, sites in sorted(by_id.items()):
        # who may reach each site: exact, or bounded by its thread guard where only a
        # `__shared__` flag's value is unknown (the threads outside the bound never reach it)
        sets = [an.threads.reach_bound(o) for o in sites]
        if any(s is None for s in sets):
            continue
        # sites every thread reaches are complete uses on their own; the rest
        # must complement each other (the same id from different role branches)
        pairs = [(o, s) for o, s in zip(sites, sets) if s != everyone]
        if not pairs:
            continue
        sites, sets = [o for o, _ in pairs], [s for _, s in pairs]
        reach = frozenset().union(*sets)
        if reach == everyone:
            continue
        missing = everyone - reach
        op = next(o for o, s in zip(sites, sets) if s != everyone)
        rel = [
            related(e, "these threads leave the kernel here")
            for e in exits
            if an.threads.executing(e) and an.threads.executing(e) & missing
        ]
        rel += [related(o, f"also reached here by {describe(s, n)}") for o, s in zip(sites, sets) if o is not op]
        flags = sorted({v.name.removeprefix("?shared:") for o in sites for c in o.guard.opaque for v in c.free_vars()})
        when = f" (when `{'`, `'.join(flags)}` holds)" if flags else ""
        out.append(
            finding(
                "TK501",
                f"`{op.api}` is a block-wide barrier (bar.sync {bid}) but only {describe(reach, n)} reach it{when}; "
                f"{describe(missing, n)} never do",
                op.location,
                related=rel,
                witness={"barrier_id": bid, "reaching": describe(reach, n), "missing": describe(missing, n)},
                help="move the barrier out of the role branch, or use a named barrier whose count is the "
                "threads of the roles that meet there (e.g. `group<N>::sync(id)`)",
            )
        )
    # Group barriers: `group<N>::sync(id)` is `bar.sync id, 32*N`: the 32*N
    # threads of a group instance must meet at barrier `id`. As for block
    # barriers, one id may be reached from several sites (a helper called from
    # two role branches): the union over the sites of that id must cover the
    # whole group.
    meet: dict[tuple, set[int]] = {}
    where: dict[tuple, list] = {}
    usable = True
    # `group<N>::arrive(id)` (bar.arrive id, 32*N) counts towards the same barrier without
    # waiting: consumers that arrive let producers that sync go on, so arrivals join the meet
    for op in an.model.ops_of(ir.SYNC, ir.NAMED_ARRIVE):
        if op.kind == ir.NAMED_ARRIVE:
            if op.asm is not None:
                # inline `bar.arrive`: this static meet pairs TK's group barriers only (inline
                # bar.sync is skipped below); the progress exploration runs both (TK502/TK503)
                usable = False
                break
            count = op.count.eval({}) if op.count is not None else None
            if not isinstance(count, int) or count <= 0 or count % 32:
                usable = False  # an arrival of unknown count: the meet is not known
                break
            size = count
        elif op.sync_kind != "named" or not op.group_warps or op.asm is not None:
            continue
        else:
            size = 32 * op.group_warps
        ex = an.threads.executing(op)
        if ex is None or op.sync_id is None:
            usable = False
            break
        for t in ex:
            bid = op.sync_id.eval({"tid": t, "tid_y": 0, "tid_z": 0})
            if not isinstance(bid, int):
                usable = False
                break
            key = (size, t // size, bid)
            meet.setdefault((key, op.order), set()).add(t)
            where.setdefault(key, [])
            if op not in where[key]:
                where[key].append(op)
        if not usable:
            break
    if usable:
        # per group instance and barrier id: sites the whole group reaches are
        # complete uses on their own; the partial ones must complement each other
        partial: dict[tuple, set[int]] = {}
        # bar.sync id, 32*N completes when 32*N threads arrive, whichever warps they are: a site
        # reached by exactly 32*N threads of whole warps (consumer warps 4-11 meeting at
        # group<8>::sync(1)) is one complete use, aligned to group instances or not
        reach: dict[tuple, set[int]] = {}
        for (key, order), ts in meet.items():
            reach.setdefault((key[0], key[2], order), set()).update(ts)
        whole = {
            k
            for k, ts in reach.items()
            if len(ts) == k[0] and all(set(range(32 * (t // 32), 32 * (t // 32) + 32)) <= ts for t in ts)
        }

        # ... and so are the sites of one id, each reached by whole warps, that together are
        # reached by exactly 32*N threads, whatever their group instances: the FlashAttention-3
        # ping-pong's consumer that syncs on its barrier and the other consumer that arrives
        # there (whether they meet in time is the progress exploration's question, TK502/TK503)
        def whole_warps(ts):
            return all(set(range(32 * (t // 32), 32 * (t // 32) + 32)) <= ts for t in ts)

        met = set()
        for size, bid in {(k[0], k[1]) for k in reach}:
            sites = [ts for k, ts in reach.items() if (k[0], k[1]) == (size, bid)]
            union = set().union(*sites)
            if len(union) == size and all(whole_warps(ts) for ts in sites):
                met.add((size, bid))
        for (key, order), ts in meet.items():
            if (key[0], key[2], order) in whole or (key[0], key[2]) in met:
                continue
            size, g, _ = key
            if ts != set(range(g * size, min((g + 1) * size, n))):
                partial.setdefault(key, set()).update(ts)
        for (size, g, bid), ts in sorted(partial.items()):
            full = set(range(g * size, min((g + 1) * size, n)))
            if ts == full:
                continue
            op = next(o for o in where[(size, g, bid)] if meet.get(((size, g, bid), o.order)) != full)
            out.append(
                finding(
                    "TK501",
                    f"`{op.api}` synchronises a group of {size} threads at barrier {bid}, but in group {g} only "
                    f"{describe(frozenset(ts), n)} reach it",
                    op.location,
                    related=[related(o, "also reached here") for o in where[(size, g, bid)][1:]],
                    witness={"group": g, "barrier_id": bid, "reaching": len(ts), "group_threads": size},
                    help="every thread of the group must reach the group barrier; hoist it out of the lane/warp "
                    "condition",
                )
            )
    out.extend(_wide(an))
    out.extend(_warp(an))
    out.extend(_steps(an))
    return out


def _steps(an):
    """A `__syncthreads()` that threads skip on data (a `continue` or a branch on loaded values
    before it), found by the run over loop steps (`checks/loop_steps.py`) at the step where, with
    every thread's data test coming out the same, only some threads reach it."""
    from tkcheck.checks.loop_steps import shown_at, simulate

    facts = simulate(an)
    if facts is None or facts.divergence is None:
        return []
    d = facts.divergence
    n = an.threads.n
    at = shown_at(an, d.at)
    step = f" at the step {at}" if at else ""
    return [
        finding(
            "TK501",
            f"`{d.op.api}` is a block-wide barrier, but{step} only {describe(d.reaching, n)} reach it when "
            f"every thread's test on the data comes out the same (an input where the loaded values "
            f"agree); {describe(d.missing, n)} skip it: the block waits for threads that never arrive",
            d.op.location,
            witness={"step": at, "reaching": describe(d.reaching, n), "missing": describe(d.missing, n)},
            help="every thread must reach each `__syncthreads()` the same number of times: skip the work "
            "under the data test, never the barrier (no `continue` / `return` past it)",
        )
    ]


def _warp(an):
    """Warp collectives (`__shfl_*_sync`, votes, `elect.sync`, `__syncwarp(mask)`, ...) whose
    member mask names lanes that never execute them, or executed by a lane outside their mask
    (`checks/warp_collectives.py`)."""
    out = []
    for mm in collectives(an).mismatches:
        op = mm.site
        shown = f"{mm.instr}, " if mm.instr != op.api else ""
        what = f"`{op.api}` ({shown}member mask 0x{mm.mask:08x})"
        if op.warp_coll is not None and op.warp_coll.instr in ALIGNED_WARP:
            what = f"`{op.api}` (`.sync.aligned`: every lane of the warp)"
        if mm.kind == "not_in_mask":
            msg = (
                f"{what} is executed by {describe_lanes(mm.missing)} of warp {mm.warp}, not in its member mask: "
                "the behaviour is undefined"
            )
            help_ = "the executing lane must be in the mask: pass the mask of the lanes that take this branch"
            rel = []
        else:
            when = (
                f", for input data where `{mm.input_text}` holds for {describe_lanes(mm.reaching)} only (each lane "
                "loads its own element, which the kernel never writes),"
                if mm.input_cond is not None
                else ""
            )
            if mm.when:
                when += f" {mm.when},"
            reach = "reaches" if len(mm.reaching) == 1 else "reach"
            msg = (
                f"{what} is a warp collective every lane named in its mask must execute, but in warp {mm.warp}"
                f"{when} only {describe_lanes(mm.reaching)} {reach} it; {describe_lanes(mm.missing)} never do (they reach "
                f"{'fewer ' + mm.instr + ' sites of that mask' if mm.others else 'no ' + mm.instr + ' of that mask'})"
            )
            help_ = (
                "give the collective the mask of the lanes that reach it (e.g. 0x0000ffff in a `lane < 16` branch), "
                "or move it out of the lane condition"
            )
            rel = [related(o, "the lanes left out reach this one") for o in mm.others[:3]]
        out.append(
            finding(
                "TK501",
                msg,
                user_site(op),
                related=in_helper(op) + rel,
                witness={
                    "instruction": mm.instr,
                    "mask": f"0x{mm.mask:08x}",
                    "warp": mm.warp,
                    "reaching": describe_lanes(mm.reaching),
                    "missing": describe_lanes(mm.missing),
                    **({"input": mm.input_text} if mm.input_cond is not None else {}),
                    **({"execution": mm.when} if mm.when else {}),
                },
                help=help_,
            )
        )
    return out


def _wide(an):
    """Grid and cluster barriers some threads or blocks reach fewer times than others
    (`checks/wide_barriers.py`)."""
    out = []
    for d in divergences(an):
        what = (
            "grid barrier: every thread of every block"
            if d.kind == "grid"
            else "cluster barrier: every thread of every CTA of the cluster"
        )
        if d.threads is not None and d.blocks is None:
            t1, t2 = d.threads
            if d.counts is not None:
                who = f"thread {t1} reaches it {d.counts[0]} time(s), thread {t2} {d.counts[1]} time(s)"
            else:  # counts over a value read per iteration: no number to name
                who = f"thread {t1} reaches it a different number of times than thread {t2}"
        elif d.blocks is not None:
            b = ", ".join(f"{k}={v}" for k, v in sorted(d.blocks.items()) if not k.endswith("'"))
            b2 = ", ".join(f"{k.rstrip(chr(39))}={v}" for k, v in sorted(d.blocks.items()) if k.endswith("'"))
            if d.counts is not None:
                who = f"the block with {b} reaches it {d.counts[0]} time(s), the block with {b2} {d.counts[1]} time(s)"
            else:  # counts over a value read per iteration: no number to name
                who = f"the block with {b} reaches it a different number of times than the block with {b2}"
        else:
            who = "its participants reach it a different number of times"
        out.append(
            finding(
                "TK501",
                f"`{d.site.api}` is a {what} must arrive, as often as the others; {who}",
                d.site.location,
                related=[related(o, "also a site of this barrier") for o in d.sites if o is not d.site][:3],
                witness={
                    "barrier": d.kind,
                    "threads": list(d.threads) if d.threads else None,
                    "counts": list(d.counts) if d.counts else None,
                    "blocks": d.blocks,
                },
                help=f"every thread{' of every block' if d.kind == 'grid' else ' of the cluster'} must reach the "
                f"{d.kind} barrier the same number of times: move it out of the condition",
            )
        )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(384, 1) void k(float *out) {
    __shared__ float buf[256];
    if (warpgroup::groupid() == 0) {
        buf[threadIdx.x] = 1.0f;
        __syncthreads();                 // the other two warpgroups never arrive
    }
    out[threadIdx.x] = buf[threadIdx.x % 128];
}
"""
)

_GOOD = (
    HEADER
    + """
__global__ __launch_bounds__(384, 1) void k(float *out) {
    __shared__ float buf[256];
    if (warpgroup::groupid() == 0) {
        buf[threadIdx.x] = 1.0f;
    }
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x % 128];
}
"""
)

RULE = Rule(
    code="TK501",
    name="barrier-in-divergent-branch",
    contract="deadlock",
    severity="error",
    precision="proved",
    symptoms=("hang",),
    explains={
        "hang": Explains(5, "a block/group barrier under a condition not all participants take"),
        "wrong": Explains(
            8,
            "a barrier only part of the block reaches orders nothing for the rest "
            "(where the hardware lets it pass, e.g. after warps exited)",
        ),
    },
    summary="A block or group barrier under a condition that not all of its participants take",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Computes the threads that reach every `__syncthreads()` / `everyone::sync`
(all threads of the block must) and every `group<N>::sync(id)` /
`warpgroup::sync(id)` (all 32*N threads of each group instance must), taking
role branches and earlier `return`s into account, and reports a barrier that
some of its participants can never reach.

A `__syncthreads()` that threads skip on data (a `continue` under a test of values loaded from
memory, in loops whose steps are numbers: `checks/loop_steps.py`) is asked at each step with every
thread's test coming out the same (an input where the loaded values agree): when only some
threads reach it there, the block waits for threads that never arrive (a hang).

Barriers wider than a block -- the grid barrier (cooperative groups'
`grid.sync()`) and the cluster barrier (`cluster.sync()`,
`everyone::tma::cluster::sync()`, `barrier.cluster.arrive`) -- wait for every
thread of the grid / cluster as many times as the waiter arrives: the rule
counts, per thread and (for the grid barrier) per block, how often each
reaches one (z3 gives two blocks whose counts differ when a site depends on
`blockIdx`); a CTA of the cluster skipping a cluster barrier by its rank is
TK505's.

Named barriers with an explicit count reached from several role branches (as
TK's `prototype::lcf` does) are legal when exactly `count` threads arrive; that
is TK404's question, not this rule's.

Warp collectives are barriers of the lanes their member mask names:
`__syncwarp(mask)` / `bar.warp.sync`, the shuffles (`__shfl_*_sync`,
`shfl.sync`), votes (`__ballot_sync`, `__any_sync`, `vote.sync`), matches,
reductions (`__reduce_*_sync`, `redux.sync`) and `elect.sync` (TK's
`elect_one_sync` / `elect_leader`, inline PTX), and the `.sync.aligned`
instructions without a mask that the whole warp executes as one: `ldmatrix`,
`stmatrix`, `tensormap.cp_fenceproxy` (a lane that skips an `ldmatrix` leaves
the warp's collective undefined; observed as a hang). PTX waits until every
non-exited lane of the mask has executed the same instruction with the same
mask (any `bar.warp.sync` of that mask on sm_70+), and the executing lane must
be in the mask. Per warp and mask, the rule reports a lane that executes a
collective outside its own mask, and a site reached by some lanes of the mask
that other lanes of it never reach, when those lanes reach only sites the
first ones reach too (so they run the collective fewer times): a full-mask
`__shfl_down_sync` or `__syncwarp()` inside `if (lane < 16)`, an
`elect.sync` under `lane < 16 && ...`. Lanes that leave a loop by a `break`
under a test of the thread (`if (lane >= 8) break;`) start one iteration and
are still running (they have not exited the kernel): a full-mask collective
later in the loop, which the other lanes reach, is reported. A branch on data each lane loads for
itself (memory the kernel never writes, an element no other lane of its warp
loads) is chosen by the input: a full-mask collective inside `if (key >= 0)`
is reported for the input where only one lane takes the branch. A mask that is
a `__ballot_sync` / `__match_any_sync` value names exactly the lanes that ran
it (with the ballot's predicate true): a collective over it in the same
iteration under the same guard is kept. A branch on a block-scope ticket (the
old value of an atomic on a `__shared__` counter, `checks/tickets.py`) is asked
once per arriver that may draw the tested value: a ticket `__shfl_sync` passed
from lane 0 to its warp takes every lane of the warp into the branch, a ticket
only lane 0 holds takes lane 0 alone (a full-mask shuffle there is reported,
with the execution: which thread draws which ticket). `__activemask()` and
other data leave the question undecided (`tkcheck coverage`).

## Why is this bad?
`bar.sync` waits for its full thread count. Threads that skip the branch never
arrive: the block hangs (or, with `__syncthreads` in some architectures'
implementations, synchronises with an unrelated later barrier). A warp
collective whose mask names lanes that never execute it is undefined: it
hangs, or returns values of lanes that never took part (the H100 gave wrong
results for a half-warp shuffle and `__syncwarp()` with the full mask, and
hung on a half-warp `elect.sync`).

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
