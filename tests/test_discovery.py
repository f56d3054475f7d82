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
