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


_NO_SIZE = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// launched in clusters by the host (no __cluster_dims__): the cluster's size is not known here
__global__ void __launch_bounds__(64) no_size(const int *src) {
    __shared__ int t[64];
    cg::cluster_group cluster = cg::this_cluster();
    int *peer = cluster.map_shared_rank(&t[0], cluster.block_rank() ^ 1);
    peer[threadIdx.x] = src[threadIdx.x];
    cluster.sync();
}
"""


def test_what_is_not_proved_is_coverage(tmp_path):
    """Unknown stays unknown (issue 25 item 5): a remote access before any cluster barrier that
    could not be evaluated is an undecided obligation with its place, never a silent pass."""
    from tkcheck.checks.cluster_start import peer_start
    from tkcheck.coverage import KernelCoverage, add_peer_start_undecided

    path = tmp_path / "k.cu"
    path.write_text(_NOT_PROVED + _NO_SIZE)
    got = {}
    for m in models_of(str(path)):
        an = Analysis(m)
        ps = peer_start(an)
        entry = KernelCoverage(str(path), m.name, True, None, 0, 0)
        add_peer_start_undecided(entry, an)
        got[m.name] = (
            ps.asked,
            [why for _, why in ps.undecided],
            entry.obligations,
            entry.obligations_decided,
            [u.why for u in entry.unknowns],
        )
    # a loop of unknown trip may wait on data: nothing before it, nothing asked
    assert got["unknown_trip"][:4] == (False, [], 0, 0)
    # the guard reads global data: asked, not decided, listed at the store
    asked, whys, ob, dec, texts = got["data_guard"]
    assert (asked, ob, dec) == (True, 1, 0) and len(whys) == 1 and "first iteration" in whys[0]
    assert len(texts) == 1 and "whether that CTA has started not established" in texts[0]
    # evaluated for every rank and thread, no early access: decided
    assert got["own_rank"][:4] == (True, [], 1, 1)
    assert got["later_iteration"][:4] == (True, [], 1, 1)
    # no cluster size: not decided
    asked, whys, ob, dec, _ = got["no_size"]
    assert (asked, ob, dec) == (True, 1, 0) and whys == ["the cluster's size is not known"]


def test_a_proved_early_access_decides_the_question():
    from tkcheck.checks.cluster_start import peer_start

    (ring,) = models_of(str(ROOT / "fixtures" / "cluster" / "ring_tile_start_bad.cu"))
    ps = peer_start(Analysis(ring))
    assert ps.asked and len(ps.early) == 1 and ps.undecided == []
