"""Kernels are discovered from the syntax tree of the whole translation unit: every launch form,
in the main file or a header of the user's it includes, each instance once, printed as written."""

from pathlib import Path

from tkcheck.engine import CheckOptions, check_file

ROOT = Path(__file__).resolve().parent.parent
FRONTEND = ROOT / "fixtures" / "frontend"


def _kernels(path: Path) -> dict[str, bool]:
    res = check_file(str(path), CheckOptions())
    return {c.kernel: c.analysed for c in res.coverage}


def test_lcsc_launched_from_a_header_is_analysed():
    # `auto kern = lcsc::main_kernel<config, globals, lcsct>; kern<<<...>>>(G);` in the harness
    # header included at the end: the template struct is a kernel, bad and good alike
    for name in ("lcsc_header_launch.cu", "lcsc_header_launch_good.cu"):
        assert _kernels(FRONTEND / name) == {"lcsct": True}, name


def test_every_launch_form_is_one_instance_printed_as_written():
    # an explicit instantiation also launched is one instance; a function pointer and a variable
    # in a header name theirs; `true` prints as written, never -1
    assert _kernels(FRONTEND / "launch_forms.cu") == {
        "counted<4, true>": True,
        "counted<2, true>": True,
        "counted<8, false>": True,
    }


SILENT = """#include "kittens.cuh"
using namespace kittens;
struct never_launched {
    __device__ static void body(semaphore &bar) {
        init_semaphore(bar, 1, 0);
        arrive(bar);
        wait(bar, 0);
    }
};
"""


def test_device_code_without_a_kernel_is_not_a_silent_pass(tmp_path):
    (tmp_path / "silent.cu").write_text(SILENT)
    res = check_file(str(tmp_path / "silent.cu"), CheckOptions())
    [entry] = res.coverage
    assert not entry.analysed and entry.sync_ops == 3
    assert entry.reason is not None and entry.reason.startswith("no kernel launched")
    # a file with no device code at all is still "no kernels found"
    (tmp_path / "host.cu").write_text("int main() { return 0; }\n")
    assert check_file(str(tmp_path / "host.cu"), CheckOptions()).coverage == []


def test_require_coverage_fails_on_a_file_with_no_analysed_kernel(tmp_path):
    import subprocess
    import sys

    (tmp_path / "silent.cu").write_text(SILENT)
    r = subprocess.run(
        [sys.executable, "-m", "tkcheck", "silent.cu", "--require-coverage", "80"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "no kernel launched" in r.stdout + r.stderr


def test_a_generic_lambda_tag_is_resolved_per_call():
    assert _kernels(FRONTEND / "lambda_tag_launch.cu") == {"by_dim<64>": True, "by_dim<128>": True}


def test_the_multi_gpu_wait_is_no_mbarrier_wait():
    # wait(barrier_t, coord, dev_idx, n) spins on a global counter: the kernel's mbarrier
    # accounts stay decided (they were all undecided when it was taken for an mbarrier wait)
    for name in ("multi_device_wait.cu", "multi_device_wait_good.cu"):
        res = check_file(str(ROOT / "fixtures" / "parallel" / name), CheckOptions())
        [c] = [c for c in res.coverage if c.kernel == "exchange"]
        assert c.obligations == c.obligations_decided == 3, name
        assert c.sync_ops == c.sync_ops_modelled == 7, name


def test_unknowns_are_located_in_the_users_code():
    # an undecided obligation of the lcf template's own protocol is told at the user's code, never
    # at a line of tkcheck's protocol files (knowledge/protocols/*.cu), which the user cannot act
    # on (round 11 decided the template's finish handshake; its progress is still open)
    res = check_file(str(ROOT / "corpus" / "hopper" / "gemm_lcf.cu"), CheckOptions())
    [c] = [c for c in res.coverage if c.kernel == "gemm_template"]
    assert c.unknowns, "the template's progress is undecided today: this test needs an unknown"
    for u in c.unknowns:
        assert "knowledge/protocols" not in u.location and u.location.startswith(str(ROOT / "corpus")), u


def test_an_unknown_at_a_template_step_is_told_at_the_users_line():
    # the place and words `coverage._user_place` gives an unknown whose site is a line of a
    # protocol file: the innermost caller in the user's code (else the user's struct), with the
    # template's step named
    from types import SimpleNamespace

    from tkcheck.coverage import _user_place
    from tkcheck.knowledge.protocols import HERE
    from tkcheck.model.ir import Location

    step = Location(str(HERE / "lcf.cu"), 120, 9)
    user = Location(str(ROOT / "corpus" / "hopper" / "gemm_lcf.cu"), 45, 1)
    model = SimpleNamespace(kind="lcf", location=user)
    place, why = _user_place(step, model, "wait on 'finish': not established")  # type: ignore[arg-type]
    assert place == f"{user.filename}:45:1"
    assert why == "wait on 'finish': not established (in tkcheck's model of the lcf template, at its lcf.cu step)"
    call = Location(str(ROOT / "corpus" / "hopper" / "gemm_lcf.cu"), 60, 5)
    place, _ = _user_place(step, model, "x", (call, step))  # type: ignore[arg-type]
    assert place == f"{call.filename}:60:5"


def test_host_headers_of_real_builds_parse(tmp_path):
    # <cudaTypedefs.h> has a stand-in; the torch stand-in brings the C++ library as torch does
    # (std::max and std::tuple reached through <torch/library.h>)
    (tmp_path / "k.cu").write_text("""#include <cudaTypedefs.h>
#include <torch/library.h>
template <int N>
__global__ void k(int *out) { out[threadIdx.x] = std::max(N, 1); }
void launch(int *out) {
    auto pick = [](int b) -> std::tuple<int, int> { return {b, b}; };
    (void)pick;
    PFN_cuTensorMapEncodeTiled encode = nullptr;
    (void)encode;
    k<4><<<1, 32>>>(out);
}
""")
    res = check_file(str(tmp_path / "k.cu"), CheckOptions())
    assert not [f for f in res.findings if f.code == "TK000"], [f.message for f in res.findings]
    assert [c.kernel for c in res.coverage] == ["k<4>"] and res.coverage[0].analysed


ASM_TEMPLATE = """template <int G = 1>
__device__ inline void commit(int bar) {
    asm volatile("tcgen05.commit.cta_group::%2.mbarrier::arrive::one.b64 [%0], %1;" :: "r"(bar), "n"(G));
}
__global__ void k(int *out) { CALL out[threadIdx.x] = 1; }
"""


def test_an_asm_error_nvcc_defers_to_instantiation_is_no_tk000(tmp_path):
    # nvcc reports an asm string naming an operand it does not have only when the template is
    # instantiated: unused, it is a note; used by a kernel, it stops that kernel
    (tmp_path / "unused.cu").write_text(ASM_TEMPLATE.replace("CALL", ""))
    res = check_file(str(tmp_path / "unused.cu"), CheckOptions())
    assert not [f for f in res.findings if f.code == "TK000"]
    assert any("nvcc reports only on instantiation" in n for n in res.notes)
    (tmp_path / "used.cu").write_text(ASM_TEMPLATE.replace("CALL", "commit(0);"))
    res = check_file(str(tmp_path / "used.cu"), CheckOptions())
    assert [c.analysed for c in res.coverage] == [False]


def test_instances_named_in_macro_arguments_and_torch_launch_statements(tmp_path):
    # `CHECK(cudaLaunchKernelEx(cfg, k<C>, g))` inside a host template bound through pybind11, and a
    # launch statement passing torch's current stream: both found from the tree
    (tmp_path / "k.cu").write_text("""#include "kittens.cuh"
#include <torch/extension.h>
using namespace kittens;
#define CHECK(x) (x)
template <int N> struct cfg { static constexpr int V = N; };
template <typename C>
__global__ __launch_bounds__(128, 1) void body(int n) {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, C::V, 0);
    __syncthreads();
    if (laneid() == 0) arrive(bar);
    wait(bar, 0);
}
template <bool WIDE>
void dispatch(int n) {
    using C = cfg<WIDE ? 4 : 2>;
    cudaLaunchConfig_t lc{};
    CHECK(cudaLaunchKernelEx(&lc, body<C>, n));
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("a", &dispatch<false>);
    m.def("b", &dispatch<true>);
}
void go(int n) { body<cfg<8>><<<1, 128, 0, at::cuda::getCurrentCUDAStream()>>>(n); }
""")
    res = check_file(str(tmp_path / "k.cu"), CheckOptions())
    assert {c.kernel for c in res.coverage} == {"body<cfg<2>>", "body<cfg<4>>", "body<cfg<8>>"}, [
        (c.kernel, c.reason) for c in res.coverage
    ]
