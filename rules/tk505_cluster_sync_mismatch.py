"""TK505: a cluster barrier not reached by every CTA, or remote signals without a closing cluster barrier."""

from tkcheck import solver
from tkcheck.model import expr as E
from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import HEADER, finding, related

CLUSTER_SYNCS = ("cluster", "cluster_arrive", "cluster_wait")


def _rank_dependent(c: E.Expr) -> bool:
    return any(v.name == "cta_rank" for v in c.free_vars())


def check(an):
    m = an.model
    out = []
    syncs = [o for o in m.ops_of(ir.SYNC) if o.sync_kind in CLUSTER_SYNCS]
    for o in syncs:
        if o.sync_kind == "cluster_wait":
            # barrier.cluster.wait only waits for the phase every thread's arrive completes: a
            # rank that arrived and does not wait (TK's roles after `arrive_aligned()`) hangs no one
            continue
        conds = [c for c in o.guard.uniform if _rank_dependent(c)]
        if not conds or not o.guard.exact or any(c.is_opaque() for c in conds):
            continue
        guard = E.conj(*conds)
        rank = E.Var("cta_rank", E.PARAM)
        size = m.cluster if m.cluster is not None else None
        assume = (E.binop("<", rank, size),) if size is not None else ()
        w = solver.witness(E.negate(guard), an.solver_timeout_ms, assume=assume)
        if w is None or solver.witness(guard, an.solver_timeout_ms, assume=assume) is None:
            continue
        out.append(
            finding(
                "TK505",
                f"{o.api} is reached only when {guard}: CTA rank {w.get('cta_rank', '?')} of the cluster skips it, "
                "the others wait for it forever",
                o.location,
                witness={"cta_rank_skipping": w.get("cta_rank"), "condition": str(guard)},
                help="every CTA of the cluster must execute the same cluster barriers: hoist the cluster sync out "
                "of the rank-dependent branch",
            )
        )
    # signals to a peer CTA, and accesses of a peer CTA's shared memory (distributed shared
    # memory through cooperative groups' `cluster.map_shared_rank`)
    remote = [
        o
        for o in m.ops
        if (o.mbar is not None and (o.mbar.remote or o.mbar.cta is not None))
        or (o.kind == ir.SMEM_ACCESS and o.access is not None and o.access.cta is not None)
    ]
    if remote and not out:
        last = max(remote, key=lambda o: o.order)
        # a cluster barrier after the last remote signal that runs whenever that signal does: no
        # condition of its own beyond the signal's (the same task's conditions) and none on the rank
        lu = {str(c) for c in last.guard.uniform}
        after = [
            o
            for o in syncs
            if o.order > last.order
            and o.sync_kind in ("cluster", "cluster_wait")
            and {str(c) for c in o.guard.uniform} <= lu
            and not any(_rank_dependent(c) for c in o.guard.uniform)
        ]
        unknown = any(o.kind == ir.CALL and o.asm is not None for o in m.ops)
        # a rank-dependent cluster barrier after the last remote op is the first check's question
        # (reached by every rank, or skipped by one): whatever it answered, or could not answer
        # within the solver budget, a closing barrier may be there, so "none follows" is not proved
        unknown = unknown or any(
            o.order > last.order and any(_rank_dependent(c) for c in o.guard.uniform) for o in syncs
        )
        # a closing exchange instead of a cluster barrier: after its last remote signal the CTA
        # waits (outside any loop) on a barrier of its own that the peer signals remotely, as the
        # peer does on this CTA's signal: neither CTA leaves before the other's signal landed
        signalled_by_peer = {o.barrier.name for o in remote if o.kind == ir.MBAR_ARRIVE and o.barrier is not None}
        handshake = [
            o
            for o in m.ops_of(ir.MBAR_WAIT)
            if o.order > last.order and not o.loops and o.barrier is not None and o.barrier.name in signalled_by_peer
        ]
        if not after and not unknown and not handshake and last.guard.exact:
            out.append(
                finding(
                    "TK505",
                    f"{last.describe()} {_touches(last)} another CTA of the cluster, but no cluster barrier follows before "
                    "the kernel ends: this CTA may exit while its peer still uses the shared memory it targets",
                    last.location,
                    related=[related(o, "remote cluster operation") for o in remote[:3] if o is not last],
                    witness={"remote_ops": len(remote)},
                    help="end the kernel (and every task that signals a peer) with a cluster barrier "
                    "(everyone::tma::cluster::sync()) reached by every CTA",
                )
            )
    return out


def _touches(o) -> str:
    if o.kind == ir.SMEM_ACCESS and o.access is not None:
        return "reads the shared memory of" if o.access.mode == "read" else "writes the shared memory of"
    return "signals"


_BAD = (
    HEADER
    + """
__global__ __launch_bounds__(128, 1) void k(float *out) {
    __shared__ float buf[128];
    buf[threadIdx.x] = 1.0f;
    if (cluster_ctarank() == 0) {
        everyone::tma::cluster::sync();      // rank 1 never arrives
    }
    out[threadIdx.x] = buf[threadIdx.x];
}
"""
)

_GOOD = _BAD.replace(
    """    if (cluster_ctarank() == 0) {
        everyone::tma::cluster::sync();      // rank 1 never arrives
    }""",
    """    everyone::tma::cluster::sync();""",
)

RULE = Rule(
    code="TK505",
    name="cluster-sync-mismatch",
    contract="deadlock",
    severity="error",
    precision="proved",
    symptoms=("hang",),
    summary="A cluster barrier is not reached by every CTA, or remote signals lack a closing cluster barrier",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Reports a cluster barrier (`everyone::tma::cluster::sync()`, `cluster::arrive`
/ `wait`) executed under a condition on the CTA's rank in the cluster that is
false for some rank (z3 supplies the rank), and a kernel that signals a peer
CTA (remote arrive, multicast) without any cluster barrier afterwards. A closing
exchange counts as such a barrier: each CTA arrives remotely on the peer's
barrier and then waits on its own (`tma::cluster::arrive(done, 1 - rank);
wait(done, 0);`), so neither leaves before the other's signal has landed.

## Why is this bad?
`barrier.cluster` waits for every CTA of the cluster: a rank that skips it
hangs the others. Without a final cluster barrier a CTA may exit while a peer
still arrives on its barriers or reads its shared memory.

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
