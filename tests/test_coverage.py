"""Coverage, honestly reported: what was analysed, what was not and why, how many sync ops the
model understood; `--require-coverage` makes a silent pass fail."""

import json

import pytest

from conftest import ROOT, cli

KERNELS = """#include "kittens.cuh"
using namespace kittens;

__global__ __launch_bounds__(128, 1) void plain() {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, 1, 0);
    __syncthreads();
    if (threadIdx.x == 0) arrive(bar);
    wait(bar, 0);
    if (threadIdx.x == 0) invalidate_semaphore(bar);        // found, not modelled
}

template <int N>
__global__ void never_instantiated() {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, N, 0);
    __syncthreads();
    wait(bar, 0);
}

__global__ void broken() {
    __shared__ semaphore bar;
    no_such_function(bar);
    __syncthreads();
}
"""

KEYS = {"file", "kernel", "analysed", "reason", "sync_ops", "sync_ops_modelled", "unknowns"}


def run(args, cwd):
    """The CLI in this process (conftest.cli): what `python -m tkcheck` answers, without its start-up."""
    return cli(args, cwd)


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "k.cu").write_text(KERNELS)
    return tmp_path


def test_coverage_json_lists_every_kernel(kernels):
    p = run(["coverage", "k.cu", "--output-format", "json"], kernels)
    assert p.returncode == 0, p.stderr
    recs = json.loads(p.stdout)
    assert isinstance(recs, list) and all(KEYS <= set(r) for r in recs)
    by = {r["kernel"]: r for r in recs}
    assert set(by) == {"plain", "never_instantiated", "broken"}
    plain = by["plain"]
    assert plain["analysed"] and plain["reason"] is None
    assert plain["sync_ops"] == 5 and plain["sync_ops_modelled"] == 4
    assert any("invalidate_semaphore" in u["why"] and u["location"].startswith("k.cu:10:") for u in plain["unknowns"])
    assert not by["never_instantiated"]["analysed"]
    assert "never instantiated" in by["never_instantiated"]["reason"]
    assert by["never_instantiated"]["sync_ops"] == 3 and by["never_instantiated"]["sync_ops_modelled"] == 0
    assert not by["broken"]["analysed"] and "no_such_function" in by["broken"]["reason"]


GROUP_ARRIVE = """#include "kittens.cuh"
using namespace kittens;

__global__ __launch_bounds__(256, 1) void k(float *out) {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, 1, 0);
    __syncthreads();
    if (warpgroup::groupid() == 0) {
        if (threadIdx.x == 0) arrive(bar);
        group<8>::sync(3);
    } else {
        wait(bar, 0);
        group<8>::arrive(3);
    }
}
"""


def test_a_group_arrive_is_a_modelled_named_barrier_arrive(tmp_path):
    """`group<N>::arrive(id)` takes a barrier id, not an mbarrier: a modelled sync op, and no
    mbarrier op of unknown target (which would leave the kernel's barrier accounts undecided)."""
    (tmp_path / "k.cu").write_text(GROUP_ARRIVE)
    p = run(["coverage", "k.cu", "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    assert rec["analysed"] and rec["sync_ops"] == 6
    assert rec["sync_ops_modelled"] == 6, rec["unknowns"]
    assert not rec["unknowns"]


SAME_NAME_IN_TWO_NAMESPACES = """#include "kittens.cuh"
using namespace kittens;

namespace gemm {
__device__ inline void kernel(float *out) {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, 1, 0);
    __syncthreads();
    if (threadIdx.x == 0) arrive(bar);
    wait(bar, 0);
}
}  // namespace gemm

namespace quantize {
__device__ inline void kernel(float *out) {
    __shared__ semaphore other;
    if (threadIdx.x == 0) init_semaphore(other, 1, 0);
    __syncthreads();
    if (threadIdx.x == 0) invalidate_semaphore(other);
}
}  // namespace quantize

__global__ __launch_bounds__(128, 1) void entry(float *out) { gemm::kernel(out); }
"""


def test_the_census_follows_a_namespace_qualified_call(tmp_path):
    """`gemm::kernel(out)` runs gemm's `kernel`, not quantize's: the census counts the sync
    sites of the code the kernel runs, not of every function sharing the name."""
    (tmp_path / "k.cu").write_text(SAME_NAME_IN_TWO_NAMESPACES)
    p = run(["coverage", "k.cu", "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    (rec,) = [r for r in json.loads(p.stdout) if r["kernel"] == "entry"]
    assert rec["analysed"] and rec["sync_ops"] == 4
    assert rec["sync_ops_modelled"] == 4 and not rec["unknowns"]


def test_check_output_ends_with_the_coverage_line(kernels):
    p = run(["--no-cache", "--output-format", "full", "k.cu"], kernels)
    last = p.stdout.strip().splitlines()[-1]
    assert last.startswith(
        "1 kernel analysed (100% of 3 proof obligations decided; 80% of sync ops modelled); 2 not"
    ), p.stdout
    assert "template kernel never instantiated" in last and "clang error" in last
    p = run(["--no-cache", "--output-format", "concise", "k.cu"], kernels)
    assert p.stderr.strip().splitlines()[-1].startswith("1 kernel analysed")  # stdout keeps to findings
    assert all("[TK" in line for line in p.stdout.splitlines())


def test_statistics_and_sarif_carry_the_same_numbers(kernels):
    stats = json.loads(run(["--no-cache", "--statistics", "--output-format", "json", "k.cu"], kernels).stdout)
    sarif = json.loads(run(["--no-cache", "--output-format", "sarif", "k.cu"], kernels).stdout)
    cov = sarif["runs"][0]["properties"]["coverage"]
    assert stats["coverage"] == cov["summary"]
    assert cov["summary"]["kernels"] == 3 and cov["summary"]["analysed"] == 1
    assert {k["kernel"] for k in cov["kernels"]} == {"plain", "never_instantiated", "broken"}
    text = run(["--no-cache", "--statistics", "k.cu"], kernels).stdout
    assert text.strip().splitlines()[-1].startswith("1 kernel analysed (100% of 3 proof obligations decided; 80%")
    assert sarif["runs"][0]["properties"]["obligations_decided_pct"] == cov["summary"]["obligations_decided_pct"] == 100


def test_require_coverage_refuses_a_silent_pass(tmp_path):
    (tmp_path / "ok.cu").write_text(KERNELS.split("template <int N>")[0])
    assert run(["--no-cache", "ok.cu", "--require-coverage", "80"], tmp_path).returncode == 0
    p = run(["--no-cache", "ok.cu", "--require-coverage", "90"], tmp_path)
    assert p.returncode == 2 and "coverage below 90%" in p.stderr and "'plain': 4 of 5" in p.stderr
    (tmp_path / "tkcheck.toml").write_text("require-coverage = 95\n")
    assert run(["--no-cache", "ok.cu"], tmp_path).returncode == 2
    p = run(["coverage", "ok.cu"], tmp_path)
    assert p.returncode == 2 and "coverage below 95%" in p.stderr


def test_an_unmodelled_template_is_not_analysed(tmp_path):
    (tmp_path / "t.cu").write_text("""#include "kittens.cuh"
#include "prototype.cuh"
using namespace kittens;
struct config { static constexpr int NUM_THREADS = 128; };
struct globals { int n; };
struct my_template {
    struct comp_sem {};
    __device__ static inline void loader(const globals &G, comp_sem &sem) {
        __syncthreads();
    }
};
void host(globals g) { prototype::pc<my_template><<<1, 128>>>(g); }   // TK's first (2024) template
""")
    recs = json.loads(run(["coverage", "t.cu", "--output-format", "json"], tmp_path).stdout)
    rec = next(r for r in recs if r["kernel"] == "my_template")
    assert not rec["analysed"]
    assert rec["reason"] == "template pc not modelled" and rec["sync_ops"] == 1


def test_obligations_are_what_the_checks_decided(tmp_path):
    """Per kernel, `obligations` counts one per barrier account, per wait's due phase and one for
    progress; `obligations_decided` those the checks decided. A wait whose phase comes from a
    value tkcheck cannot follow is undecided, and --require-coverage counts it."""
    (tmp_path / "k.cu").write_text("""#include "kittens.cuh"
using namespace kittens;
__global__ __launch_bounds__(128, 1) void decided() {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, 1, 0);
    __syncthreads();
    if (threadIdx.x == 0) arrive(bar);
    wait(bar, 0);
}
__global__ __launch_bounds__(128, 1) void opaque_phase(const int *phase) {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, 1, 0);
    __syncthreads();
    if (threadIdx.x == 0) arrive(bar);
    wait(bar, phase[threadIdx.x]);
}
""")
    p = run(["coverage", "k.cu", "--output-format", "json"], tmp_path)
    recs = {r["kernel"]: r for r in json.loads(p.stdout)}
    d, o = recs["decided"], recs["opaque_phase"]
    assert (d["obligations"], d["obligations_decided"]) == (3, 3)
    assert o["obligations"] == 3 and o["obligations_decided"] < 3
    assert {"sync_ops", "sync_ops_modelled", "undecided"} <= set(o)
    p = run(["coverage", "k.cu", "--require-coverage", "90"], tmp_path)
    assert p.returncode == 2 and "'opaque_phase'" in p.stderr and "proof obligations decided" in p.stderr
    assert "'decided'" not in p.stderr


LIBCU = """#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>
namespace cg = cooperative_groups;

__global__ __launch_bounds__(128) void ring(const float *in, float *out, int n) {
    __shared__ float buf[2][128];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> st;
    __shared__ cuda::barrier<cuda::thread_scope_block> pair[2];
    auto pipe = cuda::make_pipeline(cg::this_thread_block(), &st,
                                    threadIdx.x < 64 ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    if (threadIdx.x == 0) { init(&pair[0], 128); init(&pair[1], 128); }
    __syncthreads();
    for (int i = 0; i < n; i++) {
        if (threadIdx.x < 64) {
            pipe.producer_acquire();
            cuda::memcpy_async(&buf[i % 2][threadIdx.x], &in[i * 64 + threadIdx.x], sizeof(float), pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            out[i * 64 + threadIdx.x - 64] = buf[i % 2][127 - threadIdx.x];
            pipe.consumer_release();
        }
    }
    pair[0].arrive_and_wait();
    pipe.quit();
}
"""


def test_libcu_sync_calls_are_counted_and_the_unmodelled_ones_named(tmp_path):
    """libcu++'s pipeline calls and memcpy_async are sync ops of the census (they were 0/0, a
    silent gap) and modelled; what is not modelled (an array of cuda::barrier, pipeline quit) is
    an unknown at the user's line."""
    (tmp_path / "k.cu").write_text(LIBCU)
    p = run(["coverage", "k.cu", "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    assert rec["analysed"]
    # make_pipeline, 2 init, __syncthreads, acquire, memcpy_async, commit, wait, release,
    # arrive_and_wait, quit
    assert rec["sync_ops"] == 11
    assert rec["sync_ops_modelled"] == 7
    rows = sorted(int(u["location"].split(":")[1]) for u in rec["unknowns"] if "not modelled" in u["why"])
    assert rows == [12, 12, 25, 26]


def test_the_census_of_a_prototype_struct_is_its_own_nested_callbacks():
    """Two prototype structs in one file, each with a nested `producer` / `consumer` whose
    callbacks share their names: each kernel's census counts its own struct's sites only (the
    other struct's `producer::load` is named by no code of this one), so both are 8/8 modelled."""
    from pathlib import Path

    fx = Path(__file__).resolve().parent.parent / "fixtures" / "prototype"
    p = run(["coverage", "two_structs_namesake_callbacks.cu", "--output-format", "json"], fx)
    assert p.returncode == 0, p.stderr
    recs = {r["kernel"]: r for r in json.loads(p.stdout)}
    assert set(recs) == {"one_task", "persistent"}
    for r in recs.values():
        assert r["analysed"] and r["sync_ops"] == 8 and r["sync_ops_modelled"] == 8, r["unknowns"]
        assert not [u for u in r["unknowns"] if "not modelled" in u["why"]]


CONSTEXPR_HELPERS = """#include "kittens.cuh"
using namespace kittens;

__device__ inline void wide_barrier() { __syncthreads(); }
__device__ inline void lane_barrier() { __syncwarp(); }

template <bool WIDE>
__global__ __launch_bounds__(128, 1) void k(float *out) {
    if constexpr (WIDE) {
        wide_barrier();
    } else {
        lane_barrier();
    }
    out[threadIdx.x] = 1.0f;
}

void run(float *out) {
    k<true><<<1, 128>>>(out);
    k<false><<<1, 128>>>(out);
}
"""


def test_a_helper_named_only_in_a_branch_not_taken_is_not_this_instance_code(tmp_path):
    """An `if constexpr` branch an instantiation does not take is not its code, and neither is a
    helper only that branch calls: each instance counts the one barrier it runs, modelled (before,
    the other branch's helper was reached by name and its site listed as not modelled)."""
    (tmp_path / "k.cu").write_text(CONSTEXPR_HELPERS)
    p = run(["coverage", "k.cu", "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    recs = {r["kernel"]: r for r in json.loads(p.stdout)}
    assert set(recs) == {"k<true>", "k<false>"}
    for r in recs.values():
        assert r["analysed"] and r["sync_ops"] == 1 and r["sync_ops_modelled"] == 1, r["unknowns"]


ATOMIC_REF = """#include <cuda/atomic>

__global__ void publish(float *out, int *sem) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
        cuda::atomic_ref<int, cuda::thread_scope_device> count(sem[0]);
        count.fetch_add(1, cuda::memory_order_release);
    }
}
"""


def test_an_atomic_object_is_a_site_the_coverage_names(tmp_path):
    """libcu++'s `cuda::atomic_ref` is a sync site of the census: modelled once the walk made its
    calls events (frontend/walk_atomics.py), so the kernel is 100% modelled -- the blocking `wait`
    too (round 13: a spin on the word); a call whose order the model has no event for (a wait with
    a release order) is named at the user's line, and the object is then "not modelled"."""
    (tmp_path / "k.cu").write_text(ATOMIC_REF)
    p = run(["coverage", "k.cu", "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    assert rec["sync_ops"] == 2 and rec["sync_ops_modelled"] == 2, rec
    assert not [u for u in rec["unknowns"] if "not modelled" in u["why"]], rec["unknowns"]
    (tmp_path / "w.cu").write_text(
        ATOMIC_REF.replace("count.fetch_add(1, cuda::memory_order_release);", "count.wait(0);")
    )
    p = run(["coverage", "w.cu", "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    assert rec["sync_ops"] == rec["sync_ops_modelled"], rec
    assert not [u for u in rec["unknowns"] if "not modelled" in u["why"]], rec["unknowns"]
    (tmp_path / "o.cu").write_text(
        ATOMIC_REF.replace(
            "count.fetch_add(1, cuda::memory_order_release);", "count.wait(0, cuda::memory_order_release);"
        )
    )
    p = run(["coverage", "o.cu", "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    # the object (no call of it is an event) and its wait, whose order no load has
    rows = {u["location"].rsplit(":", 2)[-2] for u in rec["unknowns"]}
    assert {"7", "8"} <= rows, rec["unknowns"]
    assert any(u["why"].startswith("atomic_ref::wait: its memory order") for u in rec["unknowns"]), rec["unknowns"]


def test_coverage_proves_with_the_checks_solver_limits(kernels, monkeypatch):
    """`tkcheck coverage` decides what `tkcheck check` decides: the same deterministic solver
    budget and the same wall-clock safety net. A short net (it was 2 s) made a proof's answer
    depend on the machine's load: on a busy machine a ring proof ran past it and the obligation
    was counted undecided, on an idle one decided (issue 26: decided is the coverage number)."""
    import tkcheck.cli.cli as C
    from tkcheck.solver_limits import DEFAULT_BUDGET, DEFAULT_SAFETY_NET_MS

    seen = []
    real = C.run_jobs

    def spy(jobs, *a, **k):
        seen.extend(j.opts for j in jobs)
        return real(jobs, *a, **k)

    monkeypatch.setattr(C, "run_jobs", spy)
    p = run(["coverage", "k.cu", "--output-format", "json"], kernels)
    assert p.returncode == 0, p.stderr
    assert seen and all(
        (o.solver_timeout_ms, o.solver_budget) == (DEFAULT_SAFETY_NET_MS, DEFAULT_BUDGET) for o in seen
    ), [(o.solver_timeout_ms, o.solver_budget) for o in seen]


PDL_RUNTIME = """__global__ void consumer(const float *in, float *out) {
    cudaGridDependencySynchronize();
    out[threadIdx.x] = in[threadIdx.x];
    cudaTriggerProgrammaticLaunchCompletion();
}
"""


def test_pdl_runtime_calls_are_events_and_an_unlaunched_kernel_is_coverage(tmp_path):
    """The CUDA runtime's device calls of programmatic dependent launch parse (they were a clang
    error, TK000) and are PDL events (modelled sync ops, round 8): the happens-before engine asks
    whether the kernel's global accesses are ordered after its wait against the grid launched
    before it. A kernel no host code of the file launches has no known prerequisite grid:
    that obligation is undecided, with why, never a pass and never a finding."""
    (tmp_path / "k.cu").write_text(PDL_RUNTIME)
    p = run(["coverage", "k.cu", "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    assert rec["analysed"] and rec["sync_ops"] == 2 and rec["sync_ops_modelled"] == 2, rec
    assert not [u for u in rec["unknowns"] if "not modelled" in u["why"]], rec["unknowns"]
    assert any("grid dependency (PDL)" in u["why"] and "no launch" in u["why"] for u in rec["unknowns"]), rec[
        "unknowns"
    ]


def test_pdl_access_ordered_through_an_mbarrier_chain(tmp_path):
    """A store by threads that never wait for the grid themselves, behind mbarrier waits whose
    arrivals follow the one thread's grid dependency wait: decided (after the wait), with the
    loop the chain passes through stated as assumed to run; the same kernel with the arrivals
    made before the grid wait stays undecided, never a pass."""
    d = ROOT / "fixtures" / "pdl"
    p = run(["coverage", str(d / "mbarrier_chain_good.cu"), "--output-format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    assert not [u for u in rec["unknowns"] if "grid dependency (PDL)" in u["why"]], rec["unknowns"]
    p = run(["check", str(d / "mbarrier_chain_good.cu"), "--output-format", "full"], tmp_path)
    assert "ordered after the grid dependency wait" in p.stdout and "runs at least once" in p.stdout, p.stdout
    p = run(["coverage", str(d / "mbarrier_chain_bad.cu"), "--output-format", "json"], tmp_path)
    (rec,) = json.loads(p.stdout)
    assert any("grid dependency (PDL)" in u["why"] for u in rec["unknowns"]), rec["unknowns"]


def test_assumptions_told_in_every_format(tmp_path):
    """What a decided obligation assumes (here: the k loop the PDL chain passes through runs at
    least once) is told in every format, not only the full report: the coverage record's
    `assumptions`, the coverage text, a `note:` beside concise / github / junit output, and a
    SARIF notification; a kernel that assumes nothing carries none."""
    d = ROOT / "fixtures" / "pdl"
    good = str(d / "mbarrier_chain_good.cu")
    p = run(["coverage", good, "--output-format", "json"], tmp_path)
    (rec,) = json.loads(p.stdout)
    assert any("runs at least once" in a for a in rec["assumptions"]), rec
    p = run(["coverage", good], tmp_path)
    assert "assumption:" in p.stdout and "runs at least once" in p.stdout, p.stdout
    for fmt in ("concise", "github", "junit"):
        p = run(["check", good, "--output-format", fmt], tmp_path)
        assert "tkcheck: note:" in p.stderr and "runs at least once" in p.stderr, (fmt, p.stderr)
    p = run(["check", good, "--output-format", "sarif"], tmp_path)
    inv = json.loads(p.stdout)["runs"][0]["invocations"][0]
    notes = [n for n in inv.get("toolExecutionNotifications", []) if n["descriptor"]["id"] == "assumption"]
    assert notes and all(n["level"] == "note" for n in notes), inv
    p = run(["coverage", str(d / "mbarrier_chain_bad.cu"), "--output-format", "json"], tmp_path)
    (rec,) = json.loads(p.stdout)
    assert rec["assumptions"] == [], rec["assumptions"]
