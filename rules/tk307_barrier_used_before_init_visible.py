"""TK307: an mbarrier initialised by some threads is used by others before a barrier makes the init visible."""

from tkcheck.checks.threads import describe
from tkcheck.model import ir
from tkcheck.rule import Confirm, Explains, Rule

from ._common import HEADER, finding, related

USES = (ir.MBAR_WAIT, ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.TMA_LOAD)


def _orders(o: ir.Op) -> bool:
    """A block-wide barrier (or cluster barrier) orders the init before later uses."""
    if o.kind == ir.SYNC:
        k = o.sync_kind
        return k in ("block", "cluster", "cluster_wait", "grid") or (k == "named" and o.count is not None)
    return False


def _static_dims(index, t: int) -> dict[int, int]:
    """The index positions that are constants for thread t (its warp's element of a per-warp
    barrier array), with their values."""
    from tkcheck.model import expr as E

    out = {}
    for p, ix in enumerate(index):
        v = E.substitute(ix, {"tid": E.Const(t), "tid_y": E.Const(0), "tid_z": E.Const(0)}).eval({})
        if isinstance(v, int) and not isinstance(v, bool):
            out[p] = v
    return out


def _warp_private(an, inits, use, others, between) -> bool:
    """A per-warp barrier array (`bar[warpid()][s]`) initialised by one lane of each warp and
    published with `__syncwarp()`: every thread that uses an element before a block barrier
    does so after a full warp barrier of its own warp, and the element it uses is initialised
    only by threads of that warp."""

    def full_mask(x):
        mask = x.sync.mask if x.sync is not None else None
        return mask is None or getattr(mask, "value", None) in (0xFFFFFFFF, -1)

    syncs = [x for x in between if x.kind == ir.SYNC and x.sync_kind == "warp" and full_mask(x)]
    if not syncs or not any(x.guard.exact and (an.threads.executing(x) or frozenset()) >= others for x in syncs):
        return False
    init_elems = []
    for o in inits:
        ex = an.threads.executing(o)
        if ex is None:
            return False
        for i in ex:
            init_elems.append((i, _static_dims(o.barrier.index, i)))
    for t in others:
        mine = _static_dims(use.barrier.index, t)
        if not mine:
            return False
        relevant = [i for i, dims in init_elems if all(dims[p] == v for p, v in mine.items() if p in dims)]
        if not relevant or any(i // 32 != t // 32 for i in relevant):
            return False
    return True


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
            if (
                use.order <= last
                or use.kind not in USES
                or use.barrier is None
                or use.barrier.name != init.barrier.name
            ):
                continue
            if any(
                _orders(x) or x.kind == ir.EXIT or (x.kind == ir.CALL and (x.asm is not None or x.not_inlined))
                for x in m.ops
                if last < x.order < use.order
            ):
                break
            if not use.guard.exact:
                break
            # a group-scoped op (`warp::tma::expect`) touches the barrier from its elected lane
            users = an.threads.issuers(use) if use.issuers_per_group else an.threads.executing(use)
            if users is None and use.loops and not use.guard.uniform and not use.issuers_per_group:
                # a use in some iteration only (`if (k == last) bar.arrive_and_drop()`, last the
                # thread's): the threads that run it in some iteration, where no block barrier
                # in its loops could order an earlier iteration's init-visibility before it
                if not any(_orders(x) and set(x.loops) & set(use.loops) for x in m.ops):
                    users = an.threads.over_iterations(use)
            if users is None:
                break
            others = users - who
            if not others:
                continue
            if _warp_private(an, inits, use, others, [x for x in m.ops if last < x.order < use.order]):
                continue
            seen.add(init.barrier.name)
            out.append(
                finding(
                    "TK307",
                    f"'{use.barrier}' is used by {describe(frozenset(others), an.threads.n)} before any block "
                    f"barrier makes its initialisation by {describe(frozenset(who), an.threads.n)} visible",
                    use.location,
                    related=[related(o, "initialised here") for o in inits[:2]],
                    witness={"barrier": init.barrier.name, "first_user": min(others), "init_threads": len(who)},
                    help="put __syncthreads() (or everyone::sync) between init_semaphore and the first use by other "
                    "threads; a cluster needs a cluster barrier and fence.mbarrier_init first",
                )
            )
            break
    out.extend(_peer_uses(an, seen))
    return out


def _peer_uses(an, seen) -> list:
    """The happens-before engine's peer uses (`checks/happens_before.peer_init_uses`): a peer
    CTA arrives on (or multicasts into) this CTA's barrier with no cluster barrier after the
    init; a block barrier orders one CTA's threads only."""
    from tkcheck.checks.happens_before import peer_init_uses

    out = []
    for pu in peer_init_uses(an):
        if pu.init.barrier is None or pu.init.barrier.name in seen or pu.use.barrier is None:
            continue
        seen.add(pu.init.barrier.name)
        how = "multicasts into" if pu.use.kind == ir.TMA_LOAD else "arrives on"
        if pu.use.mbar is not None and pu.use.mbar.remote_store:
            how = "completes st.async bytes on"
        blocks = [
            x
            for x in an.model.ops_of(ir.SYNC)
            if x.sync_kind in ("block", "named") and pu.init.order < x.order < pu.use.order
        ]
        only = (
            f"the only barrier between them (`{blocks[0].api}`) orders the threads of one CTA"
            if blocks
            else "no barrier lies between them"
        )
        if pu.relaxed is not None:
            only = (
                f"the cluster barrier between them arrives relaxed (line {pu.relaxed.location.row}) with no "
                "fence.mbarrier_init.release.cluster after the init: it releases nothing"
            )
        out.append(
            finding(
                "TK307",
                f"CTA {pu.rank} of the cluster {how} '{pu.use.barrier}' of CTA {pu.target} ({pu.use.api}) with no "
                f"releasing cluster barrier after CTA {pu.target} initialised it: {only}, so the peer may use the "
                "barrier before its initialisation",
                pu.use.location,
                related=[related(pu.init, "initialised here")],
                witness={"barrier": pu.init.barrier.name, "using_cta": pu.rank, "owner_cta": pu.target},
                help="make the init visible to the cluster before any peer uses it: fence.mbarrier_init.release.cluster "
                "then a cluster barrier (barrier.cluster.arrive.release + barrier.cluster.wait.acquire, "
                "cluster.sync()) between the init and the first remote arrive or multicast",
            )
        )
    return out


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(float *out) {
    __shared__ semaphore done;
    if (threadIdx.x == 0) init_semaphore(done, 1, 0);
    if (threadIdx.x == 32) arrive(done);     // warp 1 may arrive before thread 0 initialised it
    if (threadIdx.x == 0) wait(done, 0);
}
"""
)

_GOOD = _BAD.replace(
    """    if (threadIdx.x == 0) init_semaphore(done, 1, 0);
""",
    """    if (threadIdx.x == 0) init_semaphore(done, 1, 0);
    __syncthreads();
""",
)

RULE = Rule(
    code="TK307",
    name="barrier-used-before-init-visible",
    contract="completion",
    severity="error",
    precision="proved",
    symptoms=("hang", "wrong"),
    explains={"hang": Explains(4, "barriers used before every thread sees them initialised")},
    confirm=Confirm(init_probe=True, repairs=("sync-after-init",)),
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
