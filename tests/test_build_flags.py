"""Build flags reach the analysis: -D in constant evaluation, -I, repeated --tk-include, and the
TK version detected on every header layout TK has had."""

import json
from pathlib import Path

import pytest

from conftest import cli
from tkcheck.frontend.parse import detect_tk_semantics, find_tk_include

KERNEL = """#include "kittens.cuh"
using namespace kittens;
#ifndef EXPECT_TILES
#define EXPECT_TILES 2
#endif
__global__ __launch_bounds__(128, 1) void k() {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) { init_semaphore(bar, 0, 1); }
    __syncthreads();
    if (threadIdx.x == 0) tma::expect_bytes(bar, EXPECT_TILES * sizeof(st_bf<64, 64>));
    wait(bar, 0);
}
"""


def run(args, cwd):
    """The CLI in this process (conftest.cli): what `python -m tkcheck` answers, without its start-up."""
    p = cli(["--no-cache", "--output-format", "json", *args], cwd)
    return p.returncode, p.stdout, p.stderr


def messages(out):
    return [f["message"] for f in json.loads(out)]


@pytest.mark.parametrize(
    "flag, tiles",
    [([], 2), (["-D", "EXPECT_TILES=1"], 1), (["-DEXPECT_TILES=3"], 3), (["--define", "EXPECT_TILES=4"], 4)],
)
def test_defines_reach_constant_evaluation(tmp_path, flag, tiles):
    (tmp_path / "k.cu").write_text(KERNEL)
    rc, out, err = run([*flag, "k.cu"], tmp_path)
    assert rc == 1, err
    assert any(f"expect_tx of {tiles * 8192} bytes" in m for m in messages(out)), out


def test_config_defines_reach_constant_evaluation(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    (tmp_path / "tkcheck.toml").write_text('defines = ["EXPECT_TILES=1"]\n')
    rc, out, _ = run(["k.cu"], tmp_path)
    assert any("expect_tx of 8192 bytes" in m for m in messages(out)), out


def test_a_bad_define_is_a_usage_error(tmp_path):
    (tmp_path / "k.cu").write_text(KERNEL)
    rc, _, err = run(["-D", "1BAD=2", "k.cu"], tmp_path)
    assert rc == 2 and "-D 1BAD=2" in err and "Traceback" not in err


def test_include_dir_option(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "tiles.cuh").write_text("#pragma once\n#define EXPECT_TILES 3\n")
    (tmp_path / "k.cu").write_text('#include "tiles.cuh"\n' + KERNEL)
    rc, out, err = run(["k.cu"], tmp_path)
    assert rc == 2 and "TK000" in out  # the header is not found without -I
    for flags in (["-I", "inc"], ["-Iinc"], ["--include-dir", "inc"]):
        rc, out, err = run([*flags, "k.cu"], tmp_path)
        assert rc == 1, (flags, out, err)
        assert any("expect_tx of 24576 bytes" in m for m in messages(out)), out


# ------------------------------------------------------------ TK layouts (fake trees of our own)

GUARDED = (
    "__device__ static inline void expect_bytes(semaphore& bar, uint32_t bytes) {\n"
    "    if (::kittens::laneid() == 0) { asm volatile(\"mbarrier.arrive.expect_tx\"); }\n}\n"
)
THREAD = (
    "__device__ static inline void expect_bytes(semaphore& bar, uint32_t bytes) {\n"
    "    asm volatile(\"mbarrier.arrive.expect_tx\");\n}\n"
)
GUARDED_LOAD = (
    "template<typename ST> __device__ static inline void load_async(ST &dst, void const* const m, "
    "barrier& bar, int r, int c=0) {\n    if (::kittens::laneid() == 0) { asm volatile(\"cp\"); }\n}\n"
)


def fake_tk(root: Path, layout: str, body: str) -> Path:
    inc = root / ("src" if layout == "src" else "include")
    rel = {
        "src": "ops/warp/memory/tma.cuh",
        "warp": "ops/warp/memory/util/tma.cuh",
        "thread-memory": "ops/thread/memory/util/tma.cuh",
        "thread": "ops/thread/util/tma.cuh",
    }[layout]
    f = inc / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f"namespace kittens {{ namespace tma {{\n{body}}} }}\n")
    (inc / "kittens.cuh").write_text("#pragma once\n")
    (root / "prototype").mkdir(exist_ok=True)
    (root / "prototype" / "prototype.cuh").write_text("#pragma once\n")
    return root


@pytest.mark.parametrize(
    "layout, body, expected",
    [
        ("src", GUARDED_LOAD, "lane-guarded"),  # 2024: src/, load_async guards lane 0
        ("warp", GUARDED, "lane-guarded"),
        ("warp", THREAD, "thread-scope"),
        ("thread-memory", THREAD, "thread-scope"),  # 2025
        ("thread", THREAD, "thread-scope"),  # 2026
        ("thread", GUARDED, "lane-guarded"),
    ],
)
def test_tk_version_detected_on_every_layout(tmp_path, layout, body, expected):
    root = fake_tk(tmp_path / "tk", layout, body)
    inc = find_tk_include(root)
    assert inc is not None and Path(inc).name == ("src" if layout == "src" else "include")
    sem, how = detect_tk_semantics(inc, "auto")
    assert sem == expected, how


def test_tk_include_accepts_a_root_and_repeats(tmp_path):
    root = fake_tk(tmp_path / "tk", "thread", THREAD)
    (tmp_path / "k.cu").write_text('#include "kittens.cuh"\n#include "prototype.cuh"\n__global__ void k() {}\n')
    rc, out, err = run(["k.cu"], tmp_path)
    assert rc == 0, out + err  # the model stands in for both headers
    # root: include/ and prototype/ found; include + prototype given separately: the same
    for args in (
        ["--tk-include", str(root)],
        ["--tk-include", str(root / "include"), "--tk-include", str(root / "prototype")],
    ):
        rc, out, err = run([*args, "k.cu"], tmp_path)
        assert rc == 0, (args, out, err)
    rc, out, err = run(["--tk-include", str(root / "include"), "k.cu"], tmp_path)
    assert rc == 0, out + err  # prototype/ beside include/ is found too
    (root / "prototype").rename(root / "proto_elsewhere")
    rc, out, err = run(["--tk-include", str(root / "include"), "k.cu"], tmp_path)
    assert rc == 2 and "prototype.cuh" in out  # not found: TK000, not a silent pass
    rc, out, err = run(
        ["--tk-include", str(root / "include"), "--tk-include", str(root / "proto_elsewhere"), "k.cu"], tmp_path
    )
    assert rc == 0, out + err
    # two different TK include folders: a usage error, not a silent replacement
    other = fake_tk(tmp_path / "tk2", "thread", THREAD)
    rc, out, err = run(["--tk-include", str(root), "--tk-include", str(other), "k.cu"], tmp_path)
    assert rc == 2 and "second ThunderKittens" in err
