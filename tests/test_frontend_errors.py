"""Which clang errors stop which kernels, and what nvcc accepts that clang does not.

A clang error stops the analysis of the kernels whose code it is in (their bodies, the device
functions and types they use, file scope); errors in host code stop nothing; errors nvcc does
not make are recovered; clang's error limit never leaves a half-parsed file analysed.
"""

from pathlib import Path

from tkcheck import registry
from tkcheck.engine import CheckOptions, check_file
from tkcheck.frontend.parse import ParseOptions

ALL = frozenset(registry.by_code())

BUGGY_KERNEL = """
__global__ __launch_bounds__(128, 1) void {name}() {{
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, 1, 0);
    __syncthreads();
    {extra}
    arrive(bar);
    wait(bar, 0);
}}
"""
HEAD = '#include "kittens.cuh"\nusing namespace kittens;\n'


def kernel(name, extra=""):
    return BUGGY_KERNEL.format(name=name, extra=extra)


def check(tmp_path: Path, text: str, name="k.cu", **parse):
    p = tmp_path / name
    p.write_text(text)
    return check_file(str(p), CheckOptions(parse=ParseOptions(**parse), enabled=ALL))


def codes(res):
    return sorted(f.code for f in res.findings)


def test_host_code_errors_do_not_stop_kernels(tmp_path):
    src = (
        HEAD
        + "#include <torch/extension.h>\n"
        + kernel("k1")
        + "at::Tensor run(at::Tensor x) { auto y = torch::empty_like(x); TORCH_CHECK(x.is_cuda()); return y; }\n"
        + "PYBIND11_MODULE(my_ext, m) { m.def(\"run\", &run); }\n"
    )
    res = check(tmp_path, src)
    assert codes(res) == ["TK302"], res.findings  # the kernel was analysed, the bug found
    assert res.kernels == ["k1"]
    assert any("host code" in n and "not analysed" in n for n in res.notes), res.notes
    assert any("torch/extension.h" in n and "stand-in" in n for n in res.notes), res.notes


def test_an_error_in_one_kernel_stops_that_kernel_only(tmp_path):
    src = HEAD + kernel("broken", extra="no_such_function(1);") + kernel("fine")
    res = check(tmp_path, src)
    assert codes(res) == ["TK000", "TK302"]
    tk000 = next(f for f in res.findings if f.code == "TK000")
    assert "no_such_function" in tk000.message and "'broken'" in tk000.help
    assert res.kernels == ["fine"]
    assert any("kernel 'broken' not analysed" in n for n in res.notes)


def test_device_helpers_errors_stop_the_kernels_that_reach_them(tmp_path):
    src = (
        HEAD
        + "__device__ void helper() { no_such_function(); }\n"
        + "__device__ void unused_helper() { other_missing_function(); }\n"
        + kernel("uses_helper", extra="helper();")
        + kernel("independent")
    )
    res = check(tmp_path, src)
    assert res.kernels == ["independent"]
    tk000 = [f for f in res.findings if f.code == "TK000"]
    assert len(tk000) == 2, tk000  # the helper's error and the unreached one
    assert any("'uses_helper'" in f.help for f in tk000)
    assert any("other_missing_function" in f.message for f in tk000)


def test_types_with_errors_stop_only_the_kernels_using_them(tmp_path):
    src = (
        HEAD
        + "struct host_state { unknown_handle_t h; };\n"
        + "struct tiles { using a = st_bf<64, no_such_constant>; };\n"
        + kernel("uses_tiles", extra="tiles::a *t = nullptr; (void)t;")
        + kernel("plain")
    )
    res = check(tmp_path, src)
    assert res.kernels == ["plain"]
    tk000 = [f for f in res.findings if f.code == "TK000"]
    assert len(tk000) == 1 and "no_such_constant" in tk000[0].message and "'uses_tiles'" in tk000[0].help


def test_file_scope_garbage_stops_everything(tmp_path):
    res = check(tmp_path, HEAD + "this is not C++ at all;\n" + kernel("k1"))
    assert "TK000" in codes(res) and res.kernels == []


def test_missing_user_header_is_an_error_of_the_file(tmp_path):
    res = check(tmp_path, HEAD + '#include "my_device_helpers.cuh"\n' + kernel("k1", extra="helper_from_header();"))
    tk000 = [f for f in res.findings if f.code == "TK000"]
    assert tk000 and res.kernels == []


def test_clang_error_limit_never_leaves_a_half_parsed_file(tmp_path):
    bad = "".join(f"__device__ void f{i}() {{ missing_{i}(); }}\n" for i in range(6))
    res = check(tmp_path, HEAD + bad + kernel("k1"), clang_args=("-ferror-limit=2",))
    assert codes(res) == ["TK000"] and res.kernels == []
    assert "error limit" in res.findings[0].message


def test_blackwell_code_is_parsed_for_sm100_when_no_arch_is_set(tmp_path):
    src = (
        HEAD
        + """
__global__ __launch_bounds__(128, 1) void bw() {
    tensor_allocator<1, 1> tm_alloc{};
    auto acc = tm_alloc.allocate<tt<float, 128, 128>>(0);
    (void)acc;
}
"""
    )
    res = check(tmp_path, src, arch_auto=True)
    assert "TK000" not in codes(res) and res.kernels == ["bw"]
    assert any("sm_100a assumed" in n for n in res.notes)
    fixed = check(tmp_path, src, name="k2.cu")  # arch given (sm_90a): no guess
    assert not any("assumed: the file uses" in n for n in fixed.notes)
    hopper = check(tmp_path, HEAD + kernel("k1"), name="k3.cu", arch_auto=True)
    assert not any("assumed: the file uses" in n for n in hopper.notes)


def test_user_headers_get_the_same_nvcc_reading(tmp_path):
    (tmp_path / "store.cuh").write_text(
        "#pragma once\n#include <cstdint>\n"
        "__device__ inline void store_u16(uint32_t addr, unsigned short v) {\n"
        "    asm volatile(\"st.shared.b16 [%0], %1;\"\n"
        "        :: \"r\"(addr)\n"
        "           \"h\"(v));\n"
        "}\n"
    )
    src = HEAD + '#include "store.cuh"\n' + kernel("k1", extra="store_u16(0, 1);")
    res = check(tmp_path, src)
    assert codes(res) == ["TK302"], res.findings


def test_host_only_headers_outside_the_prepared_list(tmp_path):
    src = HEAD + "#include <c10/util/Half.h>\n#include <pybind11/eigen.h>\n" + kernel("k1")
    res = check(tmp_path, src)
    assert codes(res) == ["TK302"]
    note = next(n for n in res.notes if "stand-in" in n)
    assert "c10/util/Half.h" in note and "pybind11/eigen.h" in note


def test_a_defaulted_alias_template_named_bare_is_read_as_nvcc_reads_it(tmp_path):
    """EDG accepts `counts_t c;` for `template <int N = 128> using counts_t = ...`; clang wants `<>`.
    The kernel is analysed (its planted bug found) and the note names the line."""
    text = HEAD + "template <int N = 128> using counts_t = int[N / 128];\n" + kernel("k", extra="counts_t c; (void)c;")
    res = check(tmp_path, text)
    assert "TK000" not in codes(res) and "TK302" in codes(res)
    assert any("alias template with default arguments" in n for n in res.notes)


def test_wmma_and_container_headers_have_stand_ins(tmp_path):
    """<mma.h> (WMMA) and the queue/deque/stack headers host code uses parse (a missing one is fatal
    for clang and would cut the file short)."""
    text = (
        "#include <mma.h>\n#include <queue>\n#include <stack>\n#include <deque>\n"
        + HEAD
        + kernel("k")
        + (
            "void host() { std::queue<int> q; q.push(1); std::priority_queue<int> p; p.push(2);\n"
            "              std::stack<int> s; s.push(3); std::deque<int> d; d.push_back(q.front() + p.top() + s.top()); }\n"
        )
    )
    res = check(tmp_path, text)
    assert "TK000" not in codes(res) and "TK302" in codes(res)
