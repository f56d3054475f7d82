"""Safe on a hostile repository: nothing a repository contains runs a program, writes outside the
cache, reads without bound or forges a result.

Each test plants one attack the way a cloned repository can (a config file, a
compile_commands.json, a planted `.tkcheck_cache/`, an include tree), runs a plain
`tkcheck`, and fails when the attack works again. Programs the attack would run are
fake tools on PATH (and named by path) that leave a marker when they run; a test
with the allow-list out of the way shows that they do run (the detector works).
The cases that used to hang run in a subprocess with a generous limit (a hang
guard, not a timing assertion).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

HANG_GUARD_S = 240
POSIX = pytest.mark.skipif(
    not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo") or not os.path.isdir("/proc/self/fd"),
    reason="needs /dev/zero, FIFOs and /proc",
)
KERNEL = '#include "kittens.cuh"\nusing namespace kittens;\n__global__ void k() { __syncthreads(); }\n'
# a kernel with a finding (TK302: 8 arrivals expected, 9 declared): a forged entry would hide it
BUGGY = """\
#include "kittens.cuh"
using namespace kittens;
__global__ __launch_bounds__(384, 1) void per_warp(int k_tiles) {
    __shared__ semaphore empty[4];
    if (threadIdx.x == 0) for (int s = 0; s < 4; s++) init_semaphore(empty[s], 9, 0);
    __syncthreads();
    if (warpgroup::groupid() > 0) {
        for (int k = 0; k < k_tiles; k++) {
            if (laneid() == 0) arrive(empty[k % 4]);
        }
    } else if (threadIdx.x == 0) {
        for (int k = 0; k < k_tiles; k++) wait(empty[k % 4], ((k / 4) % 2) ^ 1);
    }
}
"""
FAKE_TOOLS = ("nvptx-arch", "amdgpu-arch", "nvcc", "nvdisasm", "cuobjdump", "ptxas", "clang", "clang++", "cc1")


def fake_tools(tmp: Path) -> tuple[Path, Path]:
    """A folder of tools that record being run (in `markers/`), put first on PATH."""
    bin_dir, markers = tmp / "fakebin", tmp / "markers"
    bin_dir.mkdir(exist_ok=True)
    markers.mkdir(exist_ok=True)
    for name in FAKE_TOOLS:
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\necho "$0 $*" >> "{markers}/{name}"\necho sm_90\n')
        tool.chmod(0o755)
    return bin_dir, markers


def ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def tkcheck(args, cwd: Path, *, path_first: Path | None = None, timeout: float = HANG_GUARD_S):
    env = {**os.environ, "PYTHONSAFEPATH": "1", "NO_COLOR": "1"}
    for var in ("CUDA_HOME", "CUDA_PATH"):
        env.pop(var, None)
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', '')}"
    cmd = [sys.executable, "-m", "tkcheck", "--file-timeout", "120", *map(str, args)]
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tkcheck {' '.join(map(str, args))} hung (no answer in {timeout} s)")
    return p.returncode, (p.stdout + p.stderr).decode("utf-8", errors="replace")


def refused(rc: int, out: str, *words: str) -> None:
    assert rc == 2, out
    assert "Traceback" not in out and "internal error" not in out, out
    for w in words:
        assert w in out, out


# ---------------------------------------------------------------- 1. options that run a program


TOOL_OPTIONS = [
    ["--offload-arch=native"],
    ["--cuda-gpu-arch=native"],
    ["--offload-arch=sm_90a,native"],
    ["-fsyntax-only", "--offload-arch=native"],
    ["--offload-arch=native", "-fsyntax-only", "--nvptx-arch-tool=tools/arch.sh"],
    ["--nvptx-arch-tool=tools/arch.sh"],
    ["--amdgpu-arch-tool=tools/arch.sh"],
    ["--offload-arch", "native"],
    ["-Xclang", "-load", "-Xclang", "tools/x.so"],
    ["-fplugin=tools/x.so"],
    ["-ccc-install-dir", "tools"],
    ["--gcc-toolchain=tools"],
    ["-fuse-ld=tools/arch.sh"],
]


def _first_refused(args: list[str]) -> str:
    return next(a for a in args if a != "-fsyntax-only")


def _hostile_tool_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "k.cu").write_text(KERNEL)
    tool = repo / "tools" / "arch.sh"
    tool.write_text(f'#!/bin/sh\necho ran >> "{tmp / "markers"}/arch.sh"\necho sm_90\n')
    tool.chmod(0o755)
    return repo


def test_the_fake_tool_runs_when_libclang_is_given_native(tmp_path):
    """The detector: libclang's driver, given `--offload-arch=native` directly (not through
    tkcheck), runs `nvptx-arch` from PATH. The tests below fail if tkcheck lets that through."""
    bin_dir, markers = fake_tools(tmp_path)
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    code = (
        "import clang.cindex as ci\n"
        "ci.Index.create().parse('k.cu', args=['-x', 'cuda', '--cuda-device-only', '-nocudainc', "
        "'-nocudalib', '--cuda-path=/nonexistent', '--offload-arch=native'])\n"
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=HANG_GUARD_S)
    assert "nvptx-arch" in ran(markers)


@pytest.mark.parametrize("args", TOOL_OPTIONS, ids=lambda a: " ".join(a))
def test_options_that_run_a_program_are_refused_from_a_config_file(tmp_path, args):
    bin_dir, markers = fake_tools(tmp_path)
    repo = _hostile_tool_repo(tmp_path)
    (repo / "tkcheck.toml").write_text(f"clang-args = {json.dumps(args)}\n")
    rc, out = tkcheck(["k.cu"], repo, path_first=bin_dir)
    refused(rc, out, "tkcheck.toml", "clang-args", f"'{_first_refused(args)}")
    assert ran(markers) == [], out


@pytest.mark.parametrize("args", TOOL_OPTIONS[:3] + TOOL_OPTIONS[5:7], ids=lambda a: " ".join(a))
def test_options_that_run_a_program_are_refused_from_the_command_line(tmp_path, args):
    bin_dir, markers = fake_tools(tmp_path)
    repo = _hostile_tool_repo(tmp_path)
    rc, out = tkcheck(["--no-cache", "--config", f"clang-args={json.dumps(args)}", "k.cu"], repo, path_first=bin_dir)
    refused(rc, out, "--config", f"'{_first_refused(args)}")
    assert ran(markers) == [], out


def test_a_compile_commands_entry_runs_nothing(tmp_path):
    """Only -I and -D are taken from compile_commands.json (each checked); the rest of the
    command, `--offload-arch=native` included, never reaches libclang."""
    bin_dir, markers = fake_tools(tmp_path)
    repo = _hostile_tool_repo(tmp_path)
    cmd = ["clang++", "--offload-arch=native", "--nvptx-arch-tool=tools/arch.sh", "-DX=1", "-c", "k.cu"]
    (repo / "compile_commands.json").write_text(
        json.dumps([{"directory": str(repo), "file": "k.cu", "arguments": cmd}])
    )
    rc, out = tkcheck(["--no-cache", "-p", ".", "k.cu"], repo, path_first=bin_dir)
    assert rc == 0, out
    assert ran(markers) == [], out


@POSIX
def test_compile_commands_include_folder_that_is_a_device_is_refused(tmp_path):
    repo = _hostile_tool_repo(tmp_path)
    cmd = ["nvcc", "-I/dev/zero", "-c", "k.cu"]
    (repo / "compile_commands.json").write_text(
        json.dumps([{"directory": str(repo), "file": "k.cu", "arguments": cmd}])
    )
    rc, out = tkcheck(["--no-cache", "-p", ".", "k.cu"], repo)
    refused(rc, out, "compile commands", "/dev/zero", "not a folder")


def test_the_parse_refuses_a_tool_option_whoever_built_the_options(tmp_path):
    """The allow-list also guards the library entry point (ParseOptions built by a caller)."""
    from tkcheck.frontend.parse import InputError, ParseOptions, parse_source

    bin_dir, markers = fake_tools(tmp_path)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{old}"
    try:
        with pytest.raises(InputError, match="native"):
            parse_source(str(tmp_path / "k.cu"), KERNEL, ParseOptions(clang_args=("--offload-arch=native",)))
    finally:
        os.environ["PATH"] = old
    assert ran(markers) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--include=/dev/zero"],
        ["-include-pch", "x.pch"],
        ["-fsanitize-ignorelist=/dev/zero"],
        ["-fprofile-list=/dev/zero"],
        ["-ivfsoverlay", "o.yaml"],
        ["-MD", "-MF", ".git/hooks/pre-commit"],
        ["@resp.txt"],
        ["-save-temps"],
    ],
    ids=lambda a: a[0],
)
def test_options_that_read_or_write_files_are_refused(tmp_path, args):
    from tkcheck.compiler_options import UnsafeOption, check_clang_args

    with pytest.raises(UnsafeOption, match="not among the compiler options"):
        check_clang_args(args, "clang-args")


@POSIX
@pytest.mark.parametrize("args", [["-include", "/dev/zero"], ["-I", "/dev/zero"], ["-isystem", "/dev/null"]])
def test_accepted_options_with_a_special_file_are_refused(args):
    from tkcheck.compiler_options import UnsafeOption, check_clang_args

    with pytest.raises(UnsafeOption, match=args[1]):
        check_clang_args(args, "clang-args")


# ---------------------------------------------------------------- 2. cache I/O that cannot be redirected


def _cache_run(repo: Path, *args):
    return tkcheck([*args, "k.cu"], repo)


@pytest.fixture
def project(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "tkcheck.toml").write_text("")
    (repo / "k.cu").write_text(KERNEL)
    return repo


@pytest.mark.parametrize("folder", ["pch", "results", "manifests", "sass"])
def test_a_cache_folder_linked_elsewhere_is_not_written_through(project, tmp_path, folder):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".tkcheck_cache").mkdir()
    os.symlink(elsewhere, project / ".tkcheck_cache" / folder)
    rc, out = _cache_run(project, "--output-format", "full")
    assert rc == 0, out
    assert f"{folder} is a link to {elsewhere}: not used" in out, out
    assert list(elsewhere.iterdir()) == [], "the cache wrote through a link"
    assert (project / ".tkcheck_cache" / folder).is_symlink()  # refused, not followed


def test_a_planted_pch_header_link_does_not_overwrite_its_target(project, tmp_path):
    rc, out = _cache_run(project)
    assert rc == 0, out
    pch = project / ".tkcheck_cache" / "pch"
    headers = sorted(pch.glob("*.cuh"))
    assert headers, "no precompiled header was built (the test needs one)"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    for h in headers:  # the key is deterministic: a repository can plant exactly this name
        h.unlink()
        os.symlink(victim, h)
    for mac in pch.glob("*.mac"):
        mac.unlink()  # the precompiled header must be built again
    for kind in ("results", "manifests"):
        shutil.rmtree(project / ".tkcheck_cache" / kind)  # and the file parsed again
    rc, out = _cache_run(project)
    assert rc == 0, out
    assert victim.read_text() == "precious\n"
    assert all(h.is_file() and not h.is_symlink() for h in headers)


def test_a_planted_precompiled_header_is_not_loaded(project):
    """A `.pch` without this user's MAC (a repository's, or edited) is rebuilt, not handed to clang."""
    rc, out = _cache_run(project)
    assert rc == 0, out
    pchs = sorted((project / ".tkcheck_cache" / "pch").glob("*.pch"))
    assert pchs
    from tkcheck.frontend import pch as P

    key = pchs[0].stem
    assert P.verified(str(pchs[0].parent), key)
    pchs[0].write_bytes(pchs[0].read_bytes() + b"planted")
    assert not P.verified(str(pchs[0].parent), key)
    for kind in ("results", "manifests"):
        shutil.rmtree(project / ".tkcheck_cache" / kind)
    rc, out = _cache_run(project)
    assert rc == 0, out
    assert P.verified(str(pchs[0].parent), key)  # built again


@POSIX
@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "link-to-a-file"])
def test_a_special_sass_entry_is_not_read(tmp_path, kind):
    from tkcheck.sass import compile as C

    cache = tmp_path / "sass"
    key = "ab" + "0" * 62
    assert C._cache_load(cache, key, tmp_path / "k.cu", "sm_90a") is None
    C._cache_store(cache, key, {"schema": C.CACHE_SCHEMA, "sass": ""})
    entry = cache / key[:2] / f"{key}.json"
    assert entry.is_file()
    entry.unlink()
    if kind == "dev-zero":
        os.symlink("/dev/zero", entry)
    elif kind == "fifo":
        os.mkfifo(entry)
    else:
        outside = tmp_path / "outside.json"
        outside.write_text(json.dumps({"schema": C.CACHE_SCHEMA, "sass": ""}))
        os.symlink(outside, entry)
    assert C._cache_load(cache, key, tmp_path / "k.cu", "sm_90a") is None
    C._cache_store(cache, key, {"schema": C.CACHE_SCHEMA, "sass": ""})
    assert entry.is_file() and not entry.is_symlink()
    if kind == "link-to-a-file":
        assert json.loads((tmp_path / "outside.json").read_text())["sass"] == ""


def test_a_linked_sass_folder_is_not_written_through(tmp_path):
    from tkcheck.sass import compile as C

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(elsewhere, cache / "sass")
    key = "ef" + "2" * 62
    C._cache_store(cache / "sass", key, {"schema": C.CACHE_SCHEMA, "sass": ""})
    (cache / "real").mkdir()
    os.symlink(elsewhere, cache / "real" / key[:2])  # a link one level further down
    C._cache_store(cache / "real", key, {"schema": C.CACHE_SCHEMA, "sass": ""})
    assert list(elsewhere.iterdir()) == []


def test_an_unsigned_sass_entry_is_not_used(tmp_path):
    from tkcheck.sass import compile as C

    cache = tmp_path / "sass"
    key = "cd" + "1" * 62
    (cache / key[:2]).mkdir(parents=True)
    (cache / key[:2] / f"{key}.json").write_text(json.dumps({"schema": C.CACHE_SCHEMA, "sass": "", "ptx": {}}))
    assert C._cache_load(cache, key, tmp_path / "k.cu", "sm_90a") is None


# ---------------------------------------------------------------- 3. the parse itself is bounded


BYPASSES = {
    "digraph": '%:include "/dev/zero"\n',
    "raw string hiding a comment": 'const char *a = R"(/*)";\n#include "/dev/zero"\nconst char *b = R"(*/)";\n',
    "stringised macro": "#define STR(x) #x\n#define XSTR(x) STR(x)\n#include XSTR(/dev/zero)\n",
    "macro in both branches": '#if 1\n#define H "/dev/zero"\n#else\n#define H "ok.h"\n#endif\n#include H\n',
}


@POSIX
@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_no_spelling_of_an_include_reads_a_device(tmp_path, name):
    (tmp_path / "k.cu").write_text(BYPASSES[name] + "__global__ void k() {}\n")
    rc, out = tkcheck(["--no-cache", "k.cu"], tmp_path)
    refused(rc, out, "/dev/zero", "not a regular file")
    assert "stopped after" not in out and "died" not in out, out


@POSIX
def test_a_fifo_include_is_named_not_waited_for(tmp_path):
    os.mkfifo(tmp_path / "pipe.h")
    (tmp_path / "k.cu").write_text("#define S(x) #x\n#define X(x) S(x)\n#include X(pipe.h)\n__global__ void k() {}\n")
    rc, out = tkcheck(["--no-cache", "k.cu"], tmp_path)
    refused(rc, out, "pipe.h", "FIFO")
    assert "stopped after" not in out, out


@POSIX
def test_a_fifo_forced_include_through_an_include_folder_is_named(tmp_path):
    (tmp_path / "inc").mkdir()
    os.mkfifo(tmp_path / "inc" / "pre.h")
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "tkcheck.toml").write_text('include-dirs = ["inc"]\nclang-args = ["-include", "pre.h"]\n')
    rc, out = tkcheck(["--no-cache", "k.cu"], tmp_path)
    refused(rc, out, "pre.h", "FIFO")


def test_the_guard_names_what_the_parse_opens(tmp_path):
    """The guard itself, without libclang: a descriptor on a device opened while it watches."""
    from tkcheck.frontend.open_guard import ParseGuard, supported

    if not supported() or not os.path.exists("/dev/zero"):
        pytest.skip("needs /proc")
    big = tmp_path / "big.h"
    big.write_bytes(b"x" * 2048)
    import time

    for target, small_limit, word in (("/dev/zero", 1 << 20, "character device"), (str(big), 1024, "2048 bytes")):
        guard = ParseGuard(small_limit, 1 << 30)
        with guard:
            fd = os.open(target, os.O_RDONLY)
            try:
                for _ in range(12000):  # until the guard has answered (a hang guard, not a timing)
                    if guard.violation and os.readlink(f"/proc/self/fd/{fd}") == os.devnull:
                        break
                    time.sleep(0.01)
                data = os.read(fd, 16)
            finally:
                os.close(fd)
        assert guard.violation is not None and target in guard.violation and word in guard.violation
        assert data == b""  # /dev/null was put in its place: the reader sees the end of the file


# ---------------------------------------------------------------- 4. forged entries do not pass


def _forge(entry: Path, sign) -> None:
    data = json.loads(entry.read_text())
    data["payload"]["findings"] = []
    data["payload"]["notes"] = []
    data.update(sign(data))
    entry.write_text(json.dumps(data))


@pytest.mark.parametrize("how", ["sha256 checksum", "hmac with a guessed key", "no mac"])
def test_a_forged_result_does_not_pass(project, how):
    (project / "k.cu").write_text(BUGGY)
    rc, first = _cache_run(project)
    assert rc == 1 and "[TK302]" in first, first
    entries = sorted((project / ".tkcheck_cache" / "results").glob("*.json"))
    assert len(entries) == 1

    def sign(data):
        blob = json.dumps(data["payload"], sort_keys=True, separators=(",", ":")).encode()
        if how == "sha256 checksum":
            return {"checksum": hashlib.sha256(blob).hexdigest(), "mac": hashlib.sha256(blob).hexdigest()}
        if how == "hmac with a guessed key":
            canon = json.dumps([data["kind"], data["key"], data["payload"]], sort_keys=True, separators=(",", ":"))
            return {"mac": hmac.new(b"\0" * 32, canon.encode(), hashlib.sha256).hexdigest()}
        return {"mac": None}

    _forge(entries[0], sign)
    rc, again = _cache_run(project)
    assert rc == 1 and "[TK302]" in again, again


def test_entries_of_another_user_key_are_misses(project, tmp_path):
    from tkcheck import cache_io

    rc, _ = _cache_run(project)
    assert rc == 0
    entry = sorted((project / ".tkcheck_cache" / "results").glob("*.json"))[0]
    data = json.loads(entry.read_text())
    assert cache_io.read_json(entry.parent.parent, ("results",), entry.name, data["kind"], data["key"], 1 << 26)
    old = os.environ["XDG_CACHE_HOME"]
    os.environ["XDG_CACHE_HOME"] = str(tmp_path / "other-user")
    try:
        assert (
            cache_io.read_json(entry.parent.parent, ("results",), entry.name, data["kind"], data["key"], 1 << 26)
            is None
        )
    finally:
        os.environ["XDG_CACHE_HOME"] = old
    key = cache_io.key_dir() / cache_io.KEY_NAME
    assert key.is_file() and (key.stat().st_mode & 0o777) == 0o600
    assert not str(key).startswith(str(project))  # never in the repository


def test_a_planted_key_link_is_not_used(tmp_path):
    from tkcheck import cache_io

    home = tmp_path / "home"
    (home / "tkcheck").mkdir(parents=True)
    planted = tmp_path / "planted"
    planted.write_text("0" * 64)
    os.symlink(planted, home / "tkcheck" / "key")
    old = os.environ["XDG_CACHE_HOME"]
    os.environ["XDG_CACHE_HOME"] = str(home)
    try:
        assert cache_io.secret() is None  # not followed: no key, so no cache
        assert cache_io.write_json(tmp_path, ("x",), "e.json", "k", "key", {}) is False
    finally:
        os.environ["XDG_CACHE_HOME"] = old


# ---------------------------------------------------------------- 5. execution only by the user's choice


def test_a_repository_config_does_not_switch_on_nvcc(tmp_path):
    bin_dir, markers = fake_tools(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "k.cu").write_text("__global__ void k(int *p) { p[threadIdx.x] = 1; }\n")  # no TK: nvcc could build it
    (repo / "pyproject.toml").write_text("[tool.tkcheck]\nsass = true\n")
    rc, out = tkcheck(["--no-cache", "--output-format", "full", "k.cu"], repo, path_first=bin_dir)
    assert rc == 0, out
    assert ran(markers) == [], out
    assert "sass = true not honoured" in out and "--trust-config" in out, out
    # the detector: with the user's consent the setting counts, and the (fake) nvcc is run
    rc, out = tkcheck(["--no-cache", "--trust-config", "k.cu"], repo, path_first=bin_dir)
    assert "nvcc" in ran(markers), out


def test_a_repository_config_does_not_set_the_commands_confirm_runs(tmp_path):
    from tkcheck.config import load_config

    (tmp_path / "tkcheck.toml").write_text(
        'sass = true\n[confirm]\nbuild = "touch MARKER"\nrun = ["sh", "-c", "touch MARKER"]\n'
        'sanitizer-args = ["--injection-path", "x.so"]\ntimeout = 5\n'
    )
    found = load_config(tmp_path, trust=False)
    assert found.sass is None and found.confirm.build is None and found.confirm.run is None
    assert found.confirm.sanitizer_args == () and found.confirm.timeout == 5
    assert set(found.untrusted) == {"sass = true", "confirm.build", "confirm.run", "confirm.sanitizer-args"}
    trusted = load_config(tmp_path, trust=True)
    assert trusted.sass is True and trusted.confirm.build == "touch MARKER"
    # the command line is the user's: an override counts without --trust-config
    assert load_config(tmp_path, trust=False, overrides=["sass=true"]).sass is True


# ---------------------------------------------------------------- 6. a dangling link is a note


def test_a_dangling_link_in_a_scanned_folder_is_a_note(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(KERNEL)
    os.symlink("gone.cu", tmp_path / "src" / "dangling.cu")
    rc, out = tkcheck(["--no-cache", "--output-format", "full", "src"], tmp_path)
    assert rc == 0, out
    assert "dangling.cu: skipped" in out, out


# ---------------------------------------------------------------- the vectors issue 14 closed


@POSIX
@pytest.mark.parametrize(
    "files,args,words",
    [
        ({"k.cu": '#include "/dev/zero"\n'}, ["k.cu"], ["/dev/zero"]),
        ({"k.cu": '#include "/dev/stdin"\n'}, ["k.cu"], ["/dev/stdin"]),
        ({"tkcheck.toml": 'clang-args = ["-MD", "-MF", ".git/hooks/pre-commit"]\n'}, ["k.cu"], ["-MD"]),
        ({"tkcheck.toml": 'clang-args = ["-fplugin=x.so"]\n'}, ["k.cu"], ["-fplugin"]),
        ({"tkcheck.toml": 'clang-args = ["@resp.txt"]\n'}, ["k.cu"], ["@resp.txt"]),
        ({"tkcheck.toml": 'defines = ["X=1\\n#include </dev/zero>"]\n'}, ["k.cu"], ["one line"]),
        ({}, ["/dev/zero"], ["/dev/zero"]),
    ],
    ids=["dev-zero", "dev-stdin", "write-a-git-hook", "plugin", "response-file", "multiline-define", "dev-zero-arg"],
)
def test_issue_14_vectors_stay_refused(tmp_path, files, args, words):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text + ("__global__ void k() {}\n" if name.endswith(".cu") else ""))
    rc, out = tkcheck(["--no-cache", *args], tmp_path)
    refused(rc, out, *words)
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()


# ---------------------------------------------------------------- through the pre-commit hook


AUDIT = """\
import os, sys
_LOG = os.environ.get("TKCHECK_AUDIT_LOG")
def _hook(event, args):
    if _LOG and event in ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.fork"):
        if os.path.basename(sys.argv[0] if sys.argv else "") == "tkcheck":
            with open(_LOG, "a") as fh:
                fh.write(event + " " + repr(args)[:200] + "\\n")
sys.addaudithook(_hook)
"""


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        parts = os.path.relpath(dirpath, root).split(os.sep)
        if parts[0] == ".git" or ".tkcheck_cache" in parts:
            continue
        dirnames[:] = [d for d in dirnames if d != ".tkcheck_cache"]  # written only there
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                out[str(p.relative_to(root))] = "link:" + os.readlink(p)
            elif p.is_file():
                out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
            elif p.is_dir():
                out[str(p.relative_to(root))] = "dir"
            else:
                out[str(p.relative_to(root))] = "special"
    return out


@POSIX
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_hostile_clone_through_the_pre_commit_hook(tmp_path):
    pytest.importorskip("pre_commit")
    from test_precommit_hook import LIMIT_S, _deps_path, _git, _hook_repo, offline_precommit_env

    if not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout of tkcheck")
    bin_dir, markers = fake_tools(tmp_path)
    repo, rev = _hook_repo(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    work = tmp_path / "clone"
    (work / "a").mkdir(parents=True)
    (work / "b" / "inc").mkdir(parents=True)
    (work / "tools").mkdir()
    tool = work / "tools" / "arch.sh"
    tool.write_text(f'#!/bin/sh\necho ran >> "{markers}/arch.sh"\n')
    tool.chmod(0o755)
    # a/: a tkcheck.toml whose options run a program; b/: a pyproject that switches on nvcc, a
    # compile_commands.json with tool options, an include tree with every spelling of /dev/zero
    (work / "a" / "tkcheck.toml").write_text(
        'clang-args = ["--offload-arch=native", "--nvptx-arch-tool=../tools/arch.sh"]\n'
    )
    (work / "a" / "k.cu").write_text(KERNEL)
    (work / "b" / "pyproject.toml").write_text('[tool.tkcheck]\nsass = true\ncompile-commands = "."\n')
    (work / "b" / "compile_commands.json").write_text(
        json.dumps(
            [
                {
                    "directory": str(work / "b"),
                    "file": "k.cu",
                    "arguments": ["nvcc", "--offload-arch=native", "-Iinc", "-c", "k.cu"],
                }
            ]
        )
    )
    (work / "b" / "k.cu").write_text(KERNEL)
    (work / "b" / "inc" / "x.h").write_text(BYPASSES["stringised macro"])
    (work / "b" / "dev.cu").write_text('#include "inc/x.h"\n__global__ void k() {}\n')
    cache = work / "b" / ".tkcheck_cache"
    cache.mkdir()
    os.symlink(elsewhere, cache / "pch")
    os.symlink(elsewhere, cache / "sass")
    (cache / "results").mkdir()
    os.symlink(victim, cache / "results" / ("0" * 64 + ".json"))
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: tkcheck\n        args: [--output-format, full]\n"
    )
    _git("init", "-q", cwd=work)
    _git("add", "-A", cwd=work)
    audit_dir = tmp_path / "audit"
    audit_dir.mkdir()
    (audit_dir / "sitecustomize.py").write_text(AUDIT)
    env = offline_precommit_env(tmp_path)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        env.pop(var, None)
    pc = [sys.executable, "-m", "pre_commit"]
    inst = subprocess.run([*pc, "install-hooks"], cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT_S)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    env["PYTHONPATH"] = os.pathsep.join([str(audit_dir), _deps_path(tmp_path)])
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    log = tmp_path / "audit.log"
    env["TKCHECK_AUDIT_LOG"] = str(log)
    before = _snapshot(work)
    outs = []
    for files in (["a/k.cu"], ["b/k.cu", "b/dev.cu"]):
        r = subprocess.run(
            [*pc, "run", "--verbose", "--files", *files],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
        )
        outs.append((r.returncode, r.stdout + r.stderr))
    (rc_a, out_a), (rc_b, out_b) = outs
    assert rc_a != 0 and "--offload-arch=native" in out_a and "tkcheck.toml" in out_a, out_a
    assert rc_b != 0 and "/dev/zero" in out_b and "not a regular file" in out_b, out_b
    assert "Traceback" not in out_a + out_b
    assert ran(markers) == [], out_a + out_b  # no tool ran, by PATH or by path
    # the process count: the hook's tkcheck started no program (only its checking children, forks)
    events = log.read_text().splitlines() if log.exists() else []
    assert events, "the audit hook saw nothing: the count would prove nothing"
    assert [e for e in events if not e.startswith("os.fork")] == [], events
    assert len([e for e in events if e.startswith("os.fork")]) <= 3, events
    # nothing written outside .tkcheck_cache/, nothing through its links
    assert _snapshot(work) == before
    assert list(elsewhere.iterdir()) == [] and victim.read_text() == "precious\n"
