"""Cooperative groups as events (issue 25, task cg): group objects known by their C++ type, their
barriers as SYNC ops of the one synchronisation semantics, ranks as values, map_shared_rank's
accesses as distributed-shared-memory events."""

import pytest

from tkcheck.knowledge import ops as K
from tkcheck.model import ir


@pytest.mark.parametrize(
    "spelling, expected",
    [
        ("cooperative_groups::grid_group", ("grid", None)),
        ("cooperative_groups::__v1::grid_group", ("grid", None)),
        ("const cooperative_groups::__v1::thread_block &", ("block", None)),
        ("cooperative_groups::__v1::thread_block_tile<16, cooperative_groups::__v1::thread_block>", ("tile", 16)),
        ("cooperative_groups::thread_block_tile<32, void>", ("tile", 32)),
        ("cooperative_groups::cluster_group", ("cluster", None)),
        ("cooperative_groups::coalesced_group", ("coalesced", None)),
        ("my::grid_group", None),
        ("grid_group", None),
        ("cooperative_groups::thread_block_tile_base<32>", None),
    ],
)
def test_group_kind_from_the_type(spelling, expected):
    assert K.cg_group_type(spelling) == expected


def _model(tmp_path, body: str, attrs: str = "__launch_bounds__(128)") -> ir.KernelModel:
    from tkcheck.engine import models_of

    src = (
        "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
        f"__global__ void {attrs} k(const float *x, float *y) {{\n{body}\n}}\n"
    )
    p = tmp_path / "k.cu"
    p.write_text(src)
    return next(m for m in models_of(str(p), text=src) if m.name == "k")


def test_barriers_by_group_kind_not_by_name(tmp_path):
    m = _model(
        tmp_path,
        """
    cg::grid_group block = cg::this_grid();          // a grid, whatever its name
    cg::thread_block grid = cg::this_thread_block(); // a block
    auto tile = cg::tiled_partition<16>(grid);
    block.sync();
    grid.sync();
    cg::sync(grid);
    cg::this_thread_block().sync();
    tile.sync();
    y[tile.meta_group_rank() * 16 + tile.thread_rank()] = x[threadIdx.x];
    """,
    )
    syncs = [o for o in m.ops if o.kind == ir.SYNC]
    assert [o.sync_kind for o in syncs] == ["grid", "block", "block", "block", "warp"]
    assert all(o.sync is not None and o.sync.syncthreads for o in syncs[1:4])
    mask = syncs[4].sync.mask
    assert mask is not None
    assert mask.eval({"tid": 20}) == 0xFFFF0000
    assert mask.eval({"tid": 33}) == 0x0000FFFF
    assert not m.unmodelled


def test_cluster_split_barrier_ranks_and_peer_accesses(tmp_path):
    m = _model(
        tmp_path,
        """
    __shared__ float buf[2][128];
    cg::cluster_group cluster = cg::this_cluster();
    buf[1][threadIdx.x] = x[threadIdx.x];
    cluster.barrier_arrive();
    cluster.barrier_wait();
    float *peer = cluster.map_shared_rank(&buf[1][0], 1 - cluster.block_rank());
    y[threadIdx.x] = peer[threadIdx.x + 1];
    """,
        "__cluster_dims__(2, 1, 1) __launch_bounds__(128)",
    )
    assert [o.sync_kind for o in m.ops if o.kind == ir.SYNC] == ["cluster_arrive", "cluster_wait"]
    acc = [o for o in m.ops if o.kind == ir.SMEM_ACCESS]
    own, remote = acc[0], acc[-1]
    assert own.access is not None and own.access.cta is None
    assert remote.access is not None and remote.access.cta is not None
    assert remote.access.cta.eval({"cta_rank": 0}) == 1
    assert remote.buffer is not None and remote.buffer.index[-1].eval({"tid": 5}) == 6


def test_a_tile_the_model_cannot_sync_is_an_unknown(tmp_path):
    m = _model(
        tmp_path,
        """
    auto t = cg::tiled_partition<64>(cg::this_thread_block());
    t.sync();
    """,
    )
    assert not [o for o in m.ops if o.kind == ir.SYNC]
    assert any("64 threads" in why for _, why in m.unmodelled)


def test_groups_through_helpers_and_members(tmp_path):
    from tkcheck.engine import models_of

    src = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ void phase(cg::grid_group &g, float *p) { p[blockIdx.x] = 1.0f; g.sync(); }
template <typename G> __device__ void meet(const G &g) { g.sync(); }
struct Ctx { cg::thread_block block; };
__global__ __launch_bounds__(128) void k(float *p) {
    cg::grid_group grid = cg::this_grid();
    phase(grid, p);
    Ctx c{cg::this_thread_block()};
    c.block.sync();
    meet(grid);
}
"""
    p = tmp_path / "k.cu"
    p.write_text(src)
    m = next(m for m in models_of(str(p), text=src) if m.name == "k")
    assert [o.sync_kind for o in m.ops if o.kind == ir.SYNC] == ["grid", "block", "grid"]
    assert not m.unmodelled


# ---- collective async copies: cg::memcpy_async / cg::wait_prior<N> / cg::wait ----------------


def _copy_model(tmp_path, body: str, includes: str = "") -> ir.KernelModel:
    from tkcheck.engine import models_of

    src = (
        "#include <cooperative_groups.h>\n#include <cooperative_groups/memcpy_async.h>\n"
        f"{includes}namespace cg = cooperative_groups;\n"
        f"__global__ void __launch_bounds__(128) k(const float *x, float *y) {{\n{body}\n}}\n"
    )
    p = tmp_path / "k.cu"
    p.write_text(src)
    return next(m for m in models_of(str(p), text=src) if m.name == "k")


def test_memcpy_async_and_its_waits_are_cp_async_group_events(tmp_path):
    m = _copy_model(
        tmp_path,
        """
    __shared__ alignas(16) float buf[2][256];
    __shared__ alignas(16) float4 q[128];
    auto block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    cg::memcpy_async(block, buf[1], x, sizeof(float) * 256);
    cooperative_groups::wait_prior<1>(block);
    cg::memcpy_async(warp, &buf[0][64], x, cuda::aligned_size_t<16>(512));
    cg::memcpy_async(block, q, reinterpret_cast<const float4 *>(x), 2048);
    cg::wait(warp);
    y[threadIdx.x] = buf[0][threadIdx.x] + buf[1][threadIdx.x] + q[threadIdx.x].x;
    """,
        includes="#include <cuda/barrier>\n",
    )
    seq = [(o.kind, o.api) for o in m.ops if o.kind in (ir.CP_ASYNC, ir.CP_ASYNC_COMMIT, ir.CP_ASYNC_WAIT, ir.SYNC)]
    assert [k for k, _ in seq] == [
        ir.CP_ASYNC,
        ir.CP_ASYNC_COMMIT,
        ir.CP_ASYNC_WAIT,
        ir.SYNC,
        ir.CP_ASYNC,
        ir.CP_ASYNC_COMMIT,
        ir.CP_ASYNC,
        ir.CP_ASYNC_COMMIT,
        ir.CP_ASYNC_WAIT,
        ir.SYNC,
    ]
    waits = [o for o in m.ops if o.kind == ir.CP_ASYNC_WAIT]
    assert [w.count.eval({}) for w in waits] == [1, 0]
    assert [o.sync_kind for o in m.ops if o.kind == ir.SYNC] == ["block", "warp"]
    rows, tile, vec = [o for o in m.ops if o.kind == ir.CP_ASYNC]
    # a row is its first element; the extents after the first dim flatten the array
    assert str(rows.buffer) == "buf[1][0]" and rows.copy.collective.extents == (256,)
    assert rows.copy.collective.chunk == 4 and rows.copy.collective.size == 128
    assert not rows.copy.collective.tile_tail
    # aligned_size_t<16> fixes 16-byte chunks; a tile's rank is its lane in the tile
    assert tile.copy.collective.chunk == 16 and tile.copy.collective.tile_tail
    assert tile.copy.collective.rank.eval({"tid": 37}) == 5
    # float4 elements: alignof 16
    assert vec.copy.collective.chunk == 16 and vec.copy.collective.elem_bytes == 16
    assert not m.unmodelled


def test_collective_copy_split_over_the_threads():
    """CUDA's accelerated_async_copy: rank r copies chunks r, r + size, ...; a tile's remainder
    chunk w + k goes to rank min(r, rem - 1)."""
    from tkcheck.checks.async_groups import _collective_elements
    from tkcheck.model import expr as E

    def copy(nbytes: int, chunk: int, tile: bool, extents=(8,)):
        cc = ir.CollectiveCopy(4, E.TID, chunk, 4, extents, tile_tail=tile)
        return ir.Op(
            ir.CP_ASYNC,
            "cg::memcpy_async",
            None,
            ir.Guard(),
            (),
            bytes=E.Const(nbytes),
            copy=ir.CopyFacts("cg", collective=cc),
        )

    # 10 floats from buf[1][4] of float buf[.][8], 4-byte chunks over 4 threads
    block = copy(40, 4, False)
    assert _collective_elements(block, block.copy.collective, (1, 4), {"tid": 0}) == [(1, 4), (2, 0), (2, 4)]
    assert _collective_elements(block, block.copy.collective, (1, 4), {"tid": 3}) == [(1, 7), (2, 3)]
    # a tile: 10 chunks of 16 bytes over 4 lanes: 8 in step, the remainder 2 by ranks min(r, 1)
    tile = copy(160, 16, True, ())
    lanes = [_collective_elements(tile, tile.copy.collective, (0,), {"tid": t}) for t in range(4)]
    firsts = [sorted({e[0] // 4 for e in els}) for els in lanes]
    assert firsts == [[0, 4, 8], [1, 5, 9], [2, 6, 9], [3, 7, 9]]
    # an unknown rank or size: not decided
    assert _collective_elements(block, block.copy.collective, (1, 4), {}) is None


def test_libcu_group_memcpy_async_with_a_pipeline_stays_libcu(tmp_path):
    m = _copy_model(
        tmp_path,
        """
    __shared__ float buf[128];
    auto block = cg::this_thread_block();
    auto pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    cuda::memcpy_async(block, buf, x, sizeof(float) * 128, pipe);
    pipe.producer_commit();
    """,
        includes="#include <cuda/pipeline>\n",
    )
    copies = [o for o in m.ops if o.kind == ir.CP_ASYNC]
    assert copies and all(o.copy.via == "libcu" for o in copies)


def test_a_copy_from_shared_memory_is_no_async_copy(tmp_path):
    """CUDA copies a shared-memory source with plain loads and stores (`inline_copy`), at once:
    no group to wait for, so its reads are not asked (undecided), never a TK309."""
    m = _copy_model(
        tmp_path,
        """
    __shared__ alignas(16) float a[256], b[256];
    auto block = cg::this_thread_block();
    cg::memcpy_async(block, b, a, sizeof(float) * 256);
    block.sync();
    y[threadIdx.x] = b[(threadIdx.x + 1) % 256];
    """,
    )
    (copy,) = [o for o in m.ops if o.kind == ir.CP_ASYNC]
    assert copy.buffer is None and copy.copy.collective is None and "global memory" in copy.copy.dst_unknown
