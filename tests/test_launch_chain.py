"""The grid level of a translation unit (frontend/launch_chain.py): the launch sequence its host
code makes, with each launch's PDL attribute, buffers and predecessor on the stream."""

from __future__ import annotations

from tkcheck.engine import models_of
from tkcheck.model import ir

from conftest import CORPUS


def _grid(path) -> ir.GridModel:
    ms = models_of(str(path))
    assert ms and all(m.grid is ms[0].grid for m in ms)
    assert ms[0].grid is not None
    return ms[0].grid


def test_ping_pong_chain_through_a_launch_wrapper():
    """idioms6 pdl_stats_chain: `launch_pdl(kernel, stream, args...)` (a variadic template) in a
    3-round loop that swaps src and dst through a temporary, inside a repeat loop of unknown trip
    count that synchronises first: S0 N0 S1 N1 S2 N2, each predecessor the launch before it."""
    g = _grid(CORPUS / "idioms6" / "pdl_stats_chain.cu")
    seq = [(x.kernel, x.buffer("in"), x.buffer("out"), x.predecessor) for x in g.launches]
    assert len(seq) == 6, seq
    assert [s[0] for s in seq] == ["row_stats", "normalize"] * 3
    assert [s[3] for s in seq] == [ir.PRED_NONE, 0, 1, 2, 3, 4]
    assert all(x.pdl is True for x in g.launches)
    a, b = seq[0][1], seq[1][2]
    assert a and b and a != b
    assert [s[1] for s in seq] == [a, a, b, b, a, a]  # the input of each round is the last output
    assert [s[2] for s in seq[1::2]] == [b, a, b]
    assert len({x.buffer("stats") for x in g.launches}) == 1


def test_plain_launch_unknown_stream_and_sync(tmp_path):
    """`<<<...>>>` carries no PDL attribute; a synchronisation leaves nothing running; a launch
    on a stream the walk does not know has no known predecessor."""
    (tmp_path / "k.cu").write_text(
        """
__global__ void a(float *x) { x[threadIdx.x] = 1.0f; }
__global__ void b(float *x) { x[threadIdx.x] += 1.0f; }
cudaStream_t pick();
int main() {
    float *x;
    cudaMalloc(&x, 128);
    cudaStream_t s;
    cudaStreamCreate(&s);
    a<<<1, 32, 0, s>>>(x);
    b<<<1, 32, 0, s>>>(x);
    cudaDeviceSynchronize();
    a<<<1, 32, 0, s>>>(x);
    cudaStream_t t = pick();
    b<<<1, 32, 0, t>>>(x);
}
"""
    )
    g = _grid(tmp_path / "k.cu")
    seq = [(x.kernel, x.pdl, x.predecessor) for x in g.launches]
    assert seq == [
        ("a", False, ir.PRED_NONE),
        ("b", False, 0),
        ("a", False, ir.PRED_NONE),
        ("b", False, ir.PRED_UNKNOWN),
    ]
