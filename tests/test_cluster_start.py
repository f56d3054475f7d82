"""Round 16 (issue 25, r16-remote): the start of a peer CTA as a happens-before event
(checks/cluster_start.py): which remote accesses are proved to run before anything shows that
the CTA they name has started."""

from tkcheck.checks.analysis import Analysis
from tkcheck.checks.cluster_start import early_peer_uses
from tkcheck.engine import models_of

from conftest import ROOT

_NOT_PROVED = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// a loop of unknown trip count (it may run no iteration)
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(64) unknown_trip(const int *src, int n) {
    __shared__ int t[64];
    cg::cluster_group cluster = cg::this_cluster();
    for (int i = 0; i < n; i++) {
        int *peer = cluster.map_shared_rank(&t[0], cluster.block_rank() ^ 1);
        peer[threadIdx.x] = src[threadIdx.x];
        cluster.sync();
    }
    cluster.sync();
}
// a guard over a loaded value (it may be a peer's signal)
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(64) data_guard(const int *src) {
    __shared__ int t[64];
    cg::cluster_group cluster = cg::this_cluster();
    if (src[0] > 0) {
        int *peer = cluster.map_shared_rank(&t[0], cluster.block_rank() ^ 1);
        peer[threadIdx.x] = src[threadIdx.x];
    }
    cluster.sync();
}
// the CTA's own shared memory through map_shared_rank
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(64) own_rank(const int *src) {
    __shared__ int t[64];
    cg::cluster_group cluster = cg::this_cluster();
    int *peer = cluster.map_shared_rank(&t[0], cluster.block_rank());
    peer[threadIdx.x] = src[threadIdx.x];
    cluster.sync();
}
// not in the first iteration: a cluster barrier of iteration 0 comes first
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(64) later_iteration(const int *src) {
    __shared__ int t[64];
    cg::cluster_group cluster = cg::this_cluster();
    for (int i = 0; i < 4; i++) {
        if (i > 0) {
            int *peer = cluster.map_shared_rank(&t[0], cluster.block_rank() ^ 1);
            peer[threadIdx.x] = src[threadIdx.x];
        }
        cluster.sync();
    }
}
"""


def test_not_proved_early(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(_NOT_PROVED)
    models = models_of(str(path))
    assert sorted(m.name for m in models) == ["data_guard", "later_iteration", "own_rank", "unknown_trip"]
    for m in models:
        assert early_peer_uses(Analysis(m)) == [], m.name


def test_ring_and_broadcast():
    (ring,) = models_of(str(ROOT / "fixtures" / "cluster" / "ring_tile_start_bad.cu"))
    (pu,) = early_peer_uses(Analysis(ring))
    # CTA 0's thread 0 stores into CTA 1 (the next of the ring), after a block barrier only
    assert (pu.rank, pu.target, pu.thread) == (0, 1, 0)
    assert pu.block_barrier is not None and pu.block_barrier.sync_kind == "block"
    (good,) = models_of(str(ROOT / "fixtures" / "cluster" / "ring_tile_start_good.cu"))
    assert early_peer_uses(Analysis(good)) == []
    (bc,) = models_of(str(ROOT / "fixtures" / "cg" / "cluster_broadcast_start_bad.cu"))
    (pu,) = early_peer_uses(Analysis(bc))
    # only rank 0 writes, into peer p = 1 in the loop's first iteration
    assert (pu.rank, pu.target) == (0, 1)
