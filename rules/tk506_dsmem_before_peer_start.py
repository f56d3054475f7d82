"""TK506: a CTA touches a peer CTA's shared memory before anything shows that the peer runs."""

from tkcheck.model import ir
from tkcheck.rule import Rule

from ._common import finding, in_helper, related, user_site


def check(an):
    """A query on the happens-before engine's peer starts (`checks/cluster_start`)."""
    from tkcheck.checks.cluster_start import early_peer_uses

    out = []
    for pu in early_peer_uses(an):
        u = pu.use
        if u.kind == ir.SMEM_ACCESS:
            what = "reads" if u.access is not None and u.access.mode == "read" else "writes"
            what += " the shared memory of"
        elif u.kind == ir.TMA_LOAD:
            what = "multicasts into"
        else:
            what = f"arrives on '{u.barrier}' of" if u.barrier is not None else "arrives on a barrier of"
        before = (
            f"the only barrier before it (`{pu.block_barrier.api}`, line {pu.block_barrier.location.row}) orders "
            "the threads of one CTA"
            if pu.block_barrier is not None
            else "no barrier lies before it"
        )
        rel = in_helper(u)
        if pu.block_barrier is not None:
            rel.append(related(pu.block_barrier, "a block barrier: it says nothing about the peer CTAs"))
        out.append(
            finding(
                "TK506",
                f"CTA {pu.rank} of the cluster {what} CTA {pu.target} ({u.api}, thread {pu.thread}) before any "
                f"cluster barrier shows that CTA {pu.target} has started: {before}, so the access may land in "
                "the shared memory of a CTA that is not running yet",
                user_site(u),
                related=rel,
                witness={"cta": pu.rank, "peer_cta": pu.target, "thread": pu.thread},
                help="wait for the whole cluster once before the first access of a peer's shared memory: "
                "cluster.sync(), or barrier.cluster.arrive (.relaxed is enough) + barrier.cluster.wait",
            )
        )
    return out


_BAD = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128) k(const float *x, float *y) {
    __shared__ float inbox[128];
    cg::cluster_group cluster = cg::this_cluster();
    float *peer = cluster.map_shared_rank(&inbox[0], cluster.block_rank() ^ 1);
    peer[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];   // the peer may not have started
    cluster.sync();
    y[blockIdx.x * 128 + threadIdx.x] = inbox[threadIdx.x];
    cluster.sync();
}
"""

_GOOD = _BAD.replace(
    "    peer[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];   // the peer may not have started\n",
    "    cluster.sync();                                          // every CTA of the cluster runs\n"
    "    peer[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];\n",
)

RULE = Rule(
    code="TK506",
    name="dsmem-before-peer-start",
    contract="deadlock",
    severity="error",
    precision="proved",
    symptoms=("wrong",),
    summary="A CTA accesses a peer CTA's shared memory before a cluster barrier shows that the peer runs",
    check=check,
    bad_example=_BAD,
    good_example=_GOOD,
    doc=f"""\
## What it does
Reports the first access of another CTA's shared memory (a `mapa` address with
`st` / `ld.shared::cluster`, `cluster.map_shared_rank`, a remote mbarrier arrive,
a multicast TMA load) that a thread makes before anything shows it that the CTA
it names has started: no cluster barrier (`cluster.sync()`,
`barrier.cluster.arrive` + `barrier.cluster.wait`, a grid barrier), no mbarrier
wait, spin loop, call the model does not follow, or loop of unknown trip count
lies before it in program order, and for some rank of the cluster (of known
size) and some thread the access, in the first iteration of its loops, names a
CTA other than its own. A `__syncthreads()` orders the threads of one CTA only.
The closing half of the contract (a CTA must not exit while peers still use its
shared memory) is TK505's.

## Why is this bad?
The CTAs of a cluster are launched together, but the programming model does not
promise that a peer has started (its shared memory exists) when a thread first
runs: the CUDA programming guide asks for a cluster barrier before the first
access of distributed shared memory. A store that lands before the peer starts
may be lost or overwritten by its start-up, or fault; in practice the race is
latent (compute-sanitizer racecheck reports it). A cluster barrier with a
`.relaxed` arrive is enough here: its wait returns only once every CTA arrived.

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
