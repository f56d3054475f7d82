"""Blocks of two and three dimensions (round 13): the launch's block shape read from clang's tree
(`frontend/launch_shape.py`), `threadIdx.{x,y,z}` as positions of the linear thread id in it (the
order CUDA numbers threads into warps), the back edge of a loop around an inner loop's access,
and an unknown block size reported as undecided obligations instead of a silent pass."""

from __future__ import annotations

from tkcheck.checks import happens_before
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import CheckOptions, check_file, models_of
from tkcheck.evaluate import all_codes
from tkcheck.frontend.launch_shape import block_shapes
from tkcheck.frontend.parse import ParseOptions, parse_source, read_source

from conftest import ROOT

SHAPES = ROOT / "fixtures" / "blockshape"


def _shapes(tmp_path, text: str) -> dict:
    p = tmp_path / "k.cu"
    p.write_text(text)
    return block_shapes(parse_source(str(p), read_source(str(p)), ParseOptions()))


def test_launch_shapes_from_the_tree(tmp_path):
    text = """
#define NT 128
template <int B> __global__ void tmpl(float *p) { p[threadIdx.y * B + threadIdx.x] = 0; }
__global__ void lit(float *p) { p[threadIdx.x] = 1; }
__global__ void twice(float *p) { p[threadIdx.x] = 1; }
__global__ void written(float *p) { p[threadIdx.x] = 1; }
__global__ void param(float *p) { p[threadIdx.x] = 1; }
void host(float *p, int n, dim3 given) {
  constexpr int BS = 32;
  dim3 block_size(BS, BS / 4);
  tmpl<BS><<<dim3(4), block_size>>>(p);
  lit<<<n, NT * 2>>>(p);
  twice<<<1, dim3(8, 4, 2)>>>(p);
  twice<<<1, 64>>>(p);
  dim3 b(64);
  b.x = n;
  written<<<1, b>>>(p);
  param<<<1, given>>>(p);
}
"""
    got = _shapes(tmp_path, text)
    assert got["tmpl"] == (32, 8, 1)
    assert got["lit"] == (256, 1, 1)
    assert got["twice"] is None  # two shapes: none chosen
    assert got["written"] is None  # the variable is named again (written) before the launch
    assert got["param"] is None  # a parameter: not a constant of this translation unit


def _memory(path):
    return {m.name: (m, happens_before.memory(Analysis(m))) for m in models_of(str(path))}


def test_two_dimensional_positions_are_the_linear_thread_id():
    ((m, _),) = _memory(SHAPES / "rows_64x4_syncwarp_bad.cu").values()
    assert m.block_dims == (64, 4, 1) and m.num_threads() == 256
    ((m, _),) = _memory(SHAPES / "block3d_good.cu").values()
    assert m.block_dims == (8, 4, 2) and m.num_threads() == 64


def test_good_tiles_are_decided_ordered():
    for name in ("tile2d_good.cu", "tile2d_leading_sync_good.cu", "rows_32x8_syncwarp_good.cu", "block3d_good.cu"):
        for kname, (m, f) in _memory(SHAPES / name).items():
            assert m.block_dims is not None, name
            assert not f.races, (name, kname)
            assert not f.undecided, (name, kname, [u[2] for u in f.undecided])
            assert f.examined, (name, kname)  # asked, not skipped


def test_a_missing_closing_barrier_is_undecided_not_a_finding():
    ((m, f),) = _memory(SHAPES / "tile2d_no_closing_sync_undecided.cu").values()
    assert not f.races
    assert [u[2] for u in f.undecided] == ["in different loops, across iterations of the loop around both"]


def test_an_unknown_block_size_is_an_undecided_obligation():
    res = check_file(str(SHAPES / "unknown_block_undecided.cu"), CheckOptions(enabled=all_codes()))
    assert not res.findings
    (cov,) = res.coverage
    assert cov.analysed and cov.obligations == 1 and cov.obligations_decided == 0
    assert any("the block size is not known" in u.why for u in cov.unknowns)


def test_threadidx_y_with_a_thread_count_and_no_shape_is_undecided():
    # `__launch_bounds__(256)` and no launch: a 32 x 8 block races, a 256 x 1 block does not
    res = check_file(str(SHAPES / "bounds_only_tid_y_undecided.cu"), CheckOptions(enabled=all_codes()))
    assert not res.findings
    (cov,) = res.coverage
    assert cov.analysed and cov.obligations == 1 and cov.obligations_decided == 0
    assert any("the block's shape is not known" in u.why and "threadIdx.y" in u.why for u in cov.unknowns)
