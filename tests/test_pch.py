"""Precompiled TK headers under the cache: used only when the file's first lines are TK and
system includes, rebuilt when a header changes, never written with --no-cache, and never
changing a result."""

import json
import os
import subprocess
import sys
import time

from conftest import ROOT

from tkcheck.frontend.pch import prefix_includes, uses_allocation


def test_prefix_includes():
    assert prefix_includes('#include "kittens.cuh"\nusing namespace kittens;\n') == ['#include "kittens.cuh"']
    assert prefix_includes(
        '// c\n/* block\n */\n#pragma once\n#include <cstdio>\n#include "kittens.cuh"\n'
        '#include "prototype.cuh"\n#include <vector>\nint x;\n'
    ) == ['#include <cstdio>', '#include "kittens.cuh"', '#include "prototype.cuh"']
    # anything that may change what the headers mean comes first: no precompiled header
    assert prefix_includes('#define KITTENS_X 1\n#include "kittens.cuh"\n') is None
    assert prefix_includes('#include "my_config.cuh"\n#include "kittens.cuh"\n') is None
    assert prefix_includes('#include <cstdio>\nint x;\n') is None  # no TK header at all
    assert prefix_includes('#include "kittens.cuh"\n#include "mine.cuh"\n') == ['#include "kittens.cuh"']


def test_allocation_expressions_keep_the_precompiled_header_away():
    assert uses_allocation("float *p = new float[4];")
    assert uses_allocation("delete[] p;")
    assert not uses_allocation("S(const S&) = delete;  void *operator new(size_t);")


KERNEL = """#include "kittens.cuh"
using namespace kittens;
__global__ __launch_bounds__(128, 1) void k() {
    __shared__ semaphore bar;
    if (threadIdx.x == 0) init_semaphore(bar, 0, 1);
    __syncthreads();
    if (threadIdx.x == 0) tma::expect_bytes(bar, 2 * sizeof(st_bf<64, 64>));
    wait(bar, 0);
}
#if FAKE_TK_VERSION != 1
static_assert(false, "the header changed");
#endif
"""


def run(args, cwd):
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "tkcheck", "--output-format", "json", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return p.returncode, [f["message"] for f in json.loads(p.stdout or "[]")], p.stderr


def fake_tk(root, tiles):
    # a "real" TK include folder of our own: the declaration model plus one macro of ours
    inc = root / "include"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "kittens.cuh").write_text(
        f'#pragma once\n#include "tkcheck_tk_model.cuh"\n#define FAKE_TK_VERSION {tiles}\n'
    )
    return inc


def test_results_are_the_same_and_a_changed_header_is_read_again(tmp_path):
    inc = fake_tk(tmp_path / "tk", 1)
    work = tmp_path / "w"
    work.mkdir()
    (work / "k.cu").write_text(KERNEL)
    rc, nocache, _ = run(["--no-cache", "--tk-include", str(inc), "k.cu"], work)
    assert not (work / ".tkcheck_cache").exists()  # --no-cache writes nothing
    assert any("16384 bytes" in m for m in nocache), nocache
    rc, first, _ = run(["--tk-include", str(inc), "k.cu"], work)
    pch = list((work / ".tkcheck_cache" / "pch").glob("*.pch"))
    assert len(pch) == 1 and first == nocache
    (work / "k2.cu").write_text(KERNEL.replace("void k()", "void k2()"))
    rc, second, _ = run(["--tk-include", str(inc), "k2.cu"], work)  # reuses it
    assert list((work / ".tkcheck_cache" / "pch").glob("*.pch")) == pch and any("16384" in m for m in second)
    time.sleep(1.1)  # a later mtime, whatever the file system
    fake_tk(tmp_path / "tk", 2)
    (work / "k3.cu").write_text(KERNEL.replace("void k()", "void k3()"))
    rc, third, _ = run(["--tk-include", str(inc), "k3.cu"], work)
    assert rc == 2 and any("the header changed" in m for m in third), third  # the new text, not the stale


def test_a_file_without_tk_gets_the_forced_includes_precompiled_and_the_same_findings(tmp_path):
    # nothing from TK: the precompiled header holds only what every parse includes first (the
    # CUDA builtins), so the file's own text is read after exactly what it would be read after
    src = (ROOT / "fixtures" / "async" / "bad_wait_too_shallow.cu").read_text(encoding="utf-8")
    assert "#include" not in src
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.cu").write_text(src)
    rc, nocache, _ = run(["--no-cache", "a.cu"], work)
    assert nocache, "the fixture has a finding: an empty result would prove nothing"
    rc, first, _ = run(["a.cu"], work)
    pch = list((work / ".tkcheck_cache" / "pch").glob("*.pch"))
    assert len(pch) == 1 and first == nocache
    (work / "b.cu").write_text(src)
    rc, second, _ = run(["b.cu"], work)  # another file of the folder: the same precompiled header
    assert list((work / ".tkcheck_cache" / "pch").glob("*.pch")) == pch and second == nocache


# Run in a child: libclang reports the crash as a load error, but a crash must never reach pytest.
_ALLOCATION_ACROSS_A_PCH = r"""
import os, sys, tempfile
import clang.cindex as ci
from tkcheck.frontend.parse import ParseOptions, build_args
d = tempfile.mkdtemp()
open(os.path.join(d, "h.cuh"), "w").write("#include <new>\n")  # placement operator new declared
open(os.path.join(d, "a.cu"), "w").write("void f() { float *p = new float[4]; delete[] p; }\n")
args = build_args(ParseOptions(), d)
idx = ci.Index.create()
idx.parse(os.path.join(d, "h.cuh"), args=args, options=0x01 | 0x02 | 0x200).save(os.path.join(d, "h.pch"))
try:
    idx.parse(os.path.join(d, "a.cu"), args=args + ["-include-pch", os.path.join(d, "h.pch")], options=0x01 | 0x200)
except ci.TranslationUnitLoadError:
    sys.exit(3)
"""


def test_the_allocation_guard_is_still_needed_by_this_libclang():
    """Why files with new/delete stay off the precompiled header (pch.user_code_allocates): the
    libclang wheel in use (18.1.1) crashes parsing a new-expression across a precompiled header
    that declares any global `operator new` (`<new>`'s placement form is enough; the stand-ins
    of the C++ headers TK includes hold it). Declaring the usual allocation functions there too
    does not help: as clang's own (__host__, __device__) the crash stays, as __host__ __device__
    they are errors. When this test fails, the libclang in use no longer crashes: the guard can go."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, "-c", _ALLOCATION_ACROSS_A_PCH], capture_output=True, text=True, env=env, timeout=120
    )
    assert p.returncode == 3, (p.returncode, p.stderr[-2000:])


LISTED = """#include "kittens.cuh"
using namespace kittens;
template <int N> __device__ int twice(int x) { return N * x; }
template <typename T> struct Box { __device__ T get(T v) const { return v + 1; } };
template <> __device__ int twice<7>(int x) { return 7 + x; }
__global__ __launch_bounds__(128, 1) void k(int *p) {
    Box<int> b;
    p[threadIdx.x] = twice<3>(p[0]) + twice<7>(1) + b.get(2);
}
"""


def test_the_local_listing_of_a_precompiled_parse_lists_the_users_entities_as_the_full_one(tmp_path):
    """r10-many: with a precompiled header of TK alone the parse lists only the file's own top
    level (libclang's local-only index), where libclang adds the implicit instantiations of
    function templates and members after the file's declarations; `parse.top_level` leaves those
    out, so the user's entities are exactly the full listing's (an explicit specialization stays)."""
    from tkcheck.frontend.parse import ParseOptions, parse_source, top_level

    inc = fake_tk(tmp_path / "tk", 1)
    path = str(tmp_path / "k.cu")
    (tmp_path / "k.cu").write_text(LISTED)
    opts = ParseOptions(tk_include=str(inc))

    def users(parsed):
        return [
            (c.kind.name, c.spelling, c.location.line)
            for c in top_level(parsed)
            if c.location.file is not None and os.path.abspath(c.location.file.name) == path
        ]

    full = parse_source(path, LISTED, opts)
    local = parse_source(path, LISTED, opts, pch_dir=str(tmp_path / "pch"))
    assert not full.local_listing and local.local_listing  # the two paths, both taken
    assert users(local) == users(full)
    assert ("FUNCTION_DECL", "twice", 5) in users(full)  # the explicit specialization is the user's
    assert ("FUNCTION_DECL", "k", 6) in users(full)
