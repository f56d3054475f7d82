"""Bounded input: only regular files are read, includes too; large but valid input stays fast and
degrades to "not analysed"; line endings of every kind read alike.

Cases that used to hang run in a subprocess with a generous limit, so a
regression fails instead of blocking the suite (the limit is a hang guard,
not a timing assertion).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

HANG_GUARD_S = 240  # well above tkcheck's own --file-timeout below: load is not a hang
POSIX_SPECIAL = pytest.mark.skipif(
    not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"), reason="needs /dev/zero and FIFOs"
)
SMALL = '#include "kittens.cuh"\nusing namespace kittens;\n__global__ void k() { __syncthreads(); }\n'


def tkcheck(args, cwd: Path, *, stdin=subprocess.DEVNULL, keep_stdin_open=False):
    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "tkcheck", "--no-cache", "--file-timeout", "60", *map(str, args)]
    if keep_stdin_open:  # a pipe nobody writes to or closes: reading it would block for ever
        p = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            p.wait(timeout=HANG_GUARD_S)  # the output is a few lines: the pipe cannot fill up
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            pytest.fail(f"tkcheck {' '.join(map(str, args))} hung on an open standard input")
        finally:
            p.stdin.close()
        return p.returncode, p.stdout.read().decode("utf-8", errors="replace")
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdin=stdin, capture_output=True, timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tkcheck {' '.join(map(str, args))} hung (no answer in {HANG_GUARD_S} s)")
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", errors="replace")


def assert_refused(rc: int, out: str, *words: str):
    assert rc == 2, out
    assert "Traceback" not in out and "internal error" not in out, out
    for w in words:
        assert w in out, out


# ---------------------------------------------------------------- only regular files


@POSIX_SPECIAL
def test_dev_zero_as_an_argument(tmp_path):
    assert_refused(*tkcheck(["/dev/zero"], tmp_path), "character device", "TK000")


@POSIX_SPECIAL
def test_folder_member_linked_to_dev_zero(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "ok.cu").write_text(SMALL)
    os.symlink("/dev/zero", tmp_path / "src" / "zero.cu")
    assert_refused(*tkcheck(["src"], tmp_path), "zero.cu", "not a regular file")


@POSIX_SPECIAL
@pytest.mark.parametrize("debug", [False, True])
def test_fifo_named_like_a_source(tmp_path, debug):
    os.mkfifo(tmp_path / "x.cu")
    assert_refused(*tkcheck(["--debug"] * debug + ["x.cu"], tmp_path), "FIFO")


@POSIX_SPECIAL
@pytest.mark.parametrize("target", ["/dev/zero", "/dev/stdin", "/dev/urandom"])
def test_include_of_a_device(tmp_path, target):
    (tmp_path / "inc.cu").write_text(f'#include "{target}"\n' + SMALL)
    rc, out = tkcheck(["inc.cu"], tmp_path, keep_stdin_open=True)
    assert_refused(rc, out, target, "not a regular file")


@POSIX_SPECIAL
def test_include_of_a_fifo_and_a_link_to_a_device(tmp_path):
    os.mkfifo(tmp_path / "pipe.h")
    (tmp_path / "sub").mkdir()
    os.symlink("/dev/zero", tmp_path / "sub" / "zero.h")
    (tmp_path / "a.cu").write_text('#include "pipe.h"\n' + SMALL)
    assert_refused(*tkcheck(["a.cu"], tmp_path), "pipe.h", "FIFO")
    (tmp_path / "b.cu").write_text('#include <sub/zero.h>\n' + SMALL)
    assert_refused(
        *tkcheck(["--config", f'include-dirs=["{tmp_path}"]', "b.cu"], tmp_path), "zero.h", "character device"
    )


@POSIX_SPECIAL
def test_include_through_a_header_and_a_macro(tmp_path):
    (tmp_path / "outer.h").write_text('#pragma once\n#define WHICH "/dev/zero"\n#include WHICH\n')
    (tmp_path / "k.cu").write_text('#include "outer.h"\n' + SMALL)
    assert_refused(*tkcheck(["k.cu"], tmp_path), "outer.h:3", "/dev/zero")


def test_oversized_header(tmp_path):
    from tkcheck.frontend.includes import MAX_HEADER_BYTES

    with open(tmp_path / "big.h", "wb") as fh:  # sparse: no disk space, no time
        fh.truncate(MAX_HEADER_BYTES + 1)
    (tmp_path / "k.cu").write_text('#include "big.h"\n' + SMALL)
    assert_refused(*tkcheck(["k.cu"], tmp_path), "big.h", str(MAX_HEADER_BYTES))


def test_commented_include_is_not_followed(tmp_path):
    (tmp_path / "k.cu").write_text('// #include "/dev/zero"\n/* #include "/dev/zero" */\n' + SMALL)
    rc, out = tkcheck(["k.cu"], tmp_path)
    assert rc == 0, out


def test_unbounded_standard_input(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("needs /dev/zero")
    with open("/dev/zero", "rb") as zero:
        rc, out = tkcheck(["-"], tmp_path, stdin=zero)
    assert_refused(rc, out, "standard input is larger")


# ---------------------------------------------------------------- large but valid input


def test_launch_bounds_of_a_billion_threads_is_not_analysed(tmp_path):
    (tmp_path / "lb.cu").write_text(
        '#include "kittens.cuh"\nusing namespace kittens;\n'
        "__global__ __launch_bounds__(1<<30, 1) void huge() {\n"
        "    __shared__ semaphore bar;\n    if (threadIdx.x == 0) init_semaphore(bar, 1, 0);\n"
        "    __syncthreads();\n    if (threadIdx.x == 0) arrive(bar);\n    wait(bar, 0);\n}\n"
    )
    rc, out = tkcheck(["--output-format", "full", "lb.cu"], tmp_path)
    assert rc == 0, out
    assert "kernel 'huge' not analysed" in out and "1024 threads per block" in out


def _nested_loops(n: int) -> str:
    s = '#include "kittens.cuh"\nusing namespace kittens;\n__global__ __launch_bounds__(128, 1) void deep(int n) {\n'
    s += "".join(f"for (int i{i} = 0; i{i} < n; i{i}++) {{\n" for i in range(n))
    return s + "if (threadIdx.x < 32) __syncthreads();\n" + "}\n" * n + "}\n"


def test_deep_nesting_is_analysed_without_a_traceback(tmp_path):
    # 250 nested loops (nvcc compiles them): past clang's default bracket depth of 256 with the
    # kernel's own braces, and deeper than libclang's parse thread and Python's default
    # recursion limit hold; the check runs on a deep stack and finds the planted barrier
    (tmp_path / "deep.cu").write_text(_nested_loops(250))
    rc, out = tkcheck(["--output-format", "full", "deep.cu"], tmp_path)
    assert "Traceback" not in out and "Exception ignored" not in out and "internal error" not in out, out
    assert "died with signal" not in out and "TK000" not in out, out
    assert rc == 1 and "TK501" in out, out


def test_sixteen_thousand_term_expression_does_not_crash(tmp_path):
    # one expression of 16,000 terms (nvcc compiles it): libclang's recursion used to overflow
    # its parse thread's stack (SIGSEGV, the checking process gone, "no kernels found")
    body = "".join(f" + x * {i % 7}" for i in range(16000))
    src = (
        "__device__ int wide(int x) { return x" + body + "; }\n"
        "__global__ __launch_bounds__(128, 1) void k(int *p) {\n"
        "  __shared__ int s[128];\n  s[threadIdx.x] = wide(threadIdx.x);\n"
        "  if (threadIdx.x < 32) __syncthreads();\n  p[threadIdx.x] = s[127 - threadIdx.x];\n}\n"
    )
    (tmp_path / "wide.cu").write_text(src)
    rc, out = tkcheck(["--output-format", "concise", "wide.cu"], tmp_path)
    assert "Traceback" not in out and "died with signal" not in out and "TK000" not in out, out
    assert rc == 1 and "TK501" in out, out


def test_ifs_nested_past_clangs_bracket_depth(tmp_path):
    # clang stops at 256 nested brackets (TK000); nvcc goes on: tkcheck parses with a deeper limit
    n = 300
    src = "__global__ __launch_bounds__(128, 1) void k(int *p, int x) {\n"
    src += "".join(f"if (x > {i}) {{\n" for i in range(n)) + "p[0] = 1;\n" + "}\n" * n
    src += "if (threadIdx.x < 32) __syncthreads();\n}\n"
    (tmp_path / "ifs.cu").write_text(src)
    rc, out = tkcheck(["--output-format", "concise", "ifs.cu"], tmp_path)
    assert "Traceback" not in out and "died with signal" not in out and "bracket nesting" not in out, out
    assert rc == 1 and "TK501" in out, out


def test_moderate_nesting_is_still_analysed(tmp_path):
    (tmp_path / "deep.cu").write_text(_nested_loops(60))
    rc, out = tkcheck(["deep.cu"], tmp_path)
    assert rc == 1 and "TK501" in out, out


class _CountingParsed:
    """A ParsedFile that counts reads of the whole source text."""

    def __init__(self, parsed):
        self._parsed = parsed
        self.text_reads = 0

    def __getattr__(self, name):
        if name == "text":
            self.text_reads += 1
        return getattr(self._parsed, name)


def test_model_building_reads_the_whole_file_a_constant_number_of_times(monkeypatch):
    """Each whole-file search (launch configs, attribute text, phase-bit names) runs once per file,
    not once per kernel: the number of whole-text reads does not grow with the kernels."""
    from tkcheck import engine

    counted: list[_CountingParsed] = []

    def counting_parse(*args, **kw):
        counted.append(_CountingParsed(real_parse(*args, **kw)))
        return counted[-1]

    real_parse = engine.parse_source
    monkeypatch.setattr(engine, "parse_source", counting_parse)

    def reads(n: int) -> tuple[int, int]:
        text = '#include "kittens.cuh"\nusing namespace kittens;\n' + "".join(
            f"__global__ __launch_bounds__(128, 1) void k{i}(int n) {{\n"
            f"    __shared__ semaphore bar;\n    if (threadIdx.x == 0) init_semaphore(bar, 1, 0);\n"
            f"    __syncthreads();\n"
            f"    for (int j = 0; j < n; j++) {{ if (threadIdx.x == 0) arrive(bar); wait(bar, j % 2); }}\n}}\n"
            for i in range(n)
        )
        models = engine.models_of(str(ROOT / "many.cu"), text=text)
        return len(models), counted[-1].text_reads

    (n_small, few), (n_large, many) = reads(3), reads(30)
    assert (n_small, n_large) == (3, 30) and len(counted) == 2  # models_of parsed each text once
    assert many == few, f"{few} whole-text reads for 3 kernels, {many} for 30"


# ---------------------------------------------------------------- line endings


@pytest.mark.parametrize("ending", ["\r\n", "\r"])
def test_line_endings_give_the_same_findings(tmp_path, ending):
    src = (ROOT / "fixtures" / "core" / "arrival_count.cu").read_text()
    (tmp_path / "lf.cu").write_bytes(src.encode())
    (tmp_path / "other.cu").write_bytes(src.replace("\n", ending).encode())
    rc_lf, lf = tkcheck(["--output-format", "concise", "lf.cu"], tmp_path)
    rc, other = tkcheck(["--output-format", "concise", "other.cu"], tmp_path)
    assert rc_lf == rc == 1
    assert lf.count("[TK302]") >= 2
    assert other.replace("other.cu", "lf.cu") == lf
