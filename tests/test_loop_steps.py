"""Geometric loop counters (closed forms, trip counts over enclosing counters) and the run over
loop steps (`checks/loop_steps.py`)."""

from __future__ import annotations

from tkcheck.checks import loop_steps
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import models_of
from tkcheck.model import expr as E

NEST = """
constexpr int T = 64, N = 2 * T;
__global__ __launch_bounds__(T) void nest(const int *x, int *y) {
    __shared__ int s[N];
    const int t = threadIdx.x;
    s[t] = x[t];
    s[t + T] = x[t + T];
    __syncthreads();
    for (int k = 2; k <= N; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            const int i = 2 * j * (t / j) + t % j;
            const int a = s[i], b = s[i + j];
            if (a > b) { s[i] = b; s[i + j] = a; }
            __syncthreads();
        }
    }
    y[t] = s[t];
    y[t + T] = s[t + T];
}
"""


def _model(tmp_path, text):
    p = tmp_path / "k.cu"
    p.write_text(text)
    (m,) = models_of(str(p))
    return m


def test_inner_trip_and_closed_forms_over_the_outer_counter(tmp_path):
    m = _model(tmp_path, NEST)
    outer, inner = sorted(m.loops.values(), key=lambda lp: lp.id)
    assert outer.trip == E.Const(7)
    k1 = outer.counter.name
    # j runs log2(k) times: k = 2 << k1, so k1 + 1 iterations
    assert [inner.trip.eval({k1: v}) for v in range(7)] == [v + 1 for v in range(7)]
    assert [outer.form.eval({k1: v}) for v in range(3)] == [2, 4, 8]
    k2 = inner.counter.name
    assert [inner.form.eval({k1: 3, k2: v}) for v in range(4)] == [8, 4, 2, 1]


def test_a_block_barrier_per_step_orders_every_pair(tmp_path):
    facts = loop_steps.simulate(Analysis(_model(tmp_path, NEST)))
    assert facts is not None and facts.races == [] and facts.buffers == {"s"} and facts.divergence is None


def test_a_warp_barrier_at_a_cross_warp_step_is_a_race_at_that_step(tmp_path):
    text = NEST.replace("__syncthreads();\n        }", "if (j > 32) __syncthreads(); else __syncwarp();\n        }")
    facts = loop_steps.simulate(Analysis(_model(tmp_path, text)))
    assert facts is not None and facts.races
    r = facts.races[0]
    assert r.first_thread // 32 != r.second_thread // 32
    assert any(o.sync_kind == "warp" for o, _ in r.between)


def test_a_barrier_skipped_on_data_diverges(tmp_path):
    # the test reads the data and the thread's direction: for any input whose keys agree, the
    # threads of one direction skip the step's barrier and the others do not
    text = NEST.replace(
        "if (a > b) { s[i] = b; s[i + j] = a; }",
        "if ((a > b) == ((i & k) == 0)) { s[i] = b; s[i + j] = a; } else continue;",
    )
    facts = loop_steps.simulate(Analysis(_model(tmp_path, text)))
    assert facts is not None and facts.divergence is not None
    d = facts.divergence
    assert d.reaching and d.missing and d.reaching | d.missing == frozenset(range(64))


def test_a_barrier_skipped_on_data_alone_stays_undecided(tmp_path):
    # `a > b` alone: an input where every thread's test agrees has every thread skip or none;
    # whether the values can differ per thread is not asked -- no claim (coverage stays)
    text = NEST.replace(
        "if (a > b) { s[i] = b; s[i + j] = a; }", "if (a > b) { s[i] = b; s[i + j] = a; } else continue;"
    )
    assert loop_steps.simulate(Analysis(_model(tmp_path, text))) is None
