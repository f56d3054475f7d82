"""Static mode never executes anything from the user's files or configuration, and writes only its cache.

Each test plants a command (`touch MARKER`) or a file-writing option where a
user's configuration can put one, and checks that nothing ran or was written.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ROOT
from tkcheck.cli.cli import main
from tkcheck.compiler_options import UnsafeOption, check_clang_args, check_compiler_options, shell_unsafe

PLAIN_CUDA = """\
static_assert(X == 1 && Y == 2, "the defines reached the compiler");
__global__ void k(int *p) { p[threadIdx.x] = X + Y; }
"""


def run(args, cwd: Path):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def _have_nvcc() -> bool:
    from tkcheck.sass.toolchain import ToolchainNotFound, find_toolchain

    try:
        find_toolchain()
        return True
    except ToolchainNotFound:
        return False


needs_nvcc = pytest.mark.skipif(not _have_nvcc(), reason="no nvcc + disassembler here (the SASS pass)")


# ---------------------------------------------------------------- shell text in defines and folders


@needs_nvcc
def test_config_define_with_shell_text_runs_nothing(tmp_path):
    (tmp_path / "plain.cu").write_text(PLAIN_CUDA)
    (tmp_path / "tkcheck.toml").write_text('sass = true\ndefines = ["X=1/*$(touch MARKER)*/", "Y=2"]\n')
    r = run(["--output-format", "full", "plain.cu"], tmp_path)
    assert not (tmp_path / "MARKER").exists(), "a define's shell text ran"
    assert r.exit_code == 0, r.output
    # the defines did reach nvcc (through the generated header): the static_assert held
    assert "SASS pass skipped" not in r.output, r.output


@needs_nvcc
def test_compile_commands_define_and_folder_with_shell_text_run_nothing(tmp_path):
    (tmp_path / "plain.cu").write_text(PLAIN_CUDA)
    (tmp_path / "compile_commands.json").write_text(
        json.dumps(
            [
                {
                    "directory": str(tmp_path),
                    "file": "plain.cu",
                    "arguments": ["nvcc", "-DX=1/*`touch MARKER1`*/", "-DY=2", "-c", "plain.cu"],
                }
            ]
        )
    )
    r = run(["--sass", "--no-cache", "-p", ".", "--output-format", "full", "plain.cu"], tmp_path)
    assert not (tmp_path / "MARKER1").exists()
    assert r.exit_code == 0 and "SASS pass skipped" not in r.output, r.output

    (tmp_path / "compile_commands.json").write_text(
        json.dumps(
            [
                {
                    "directory": str(tmp_path),
                    "file": "plain.cu",
                    "arguments": ["nvcc", "-Iinc$(touch MARKER2)", "-DX=1", "-DY=2", "-c", "plain.cu"],
                }
            ]
        )
    )
    r = run(["--sass", "--no-cache", "-p", ".", "--output-format", "full", "plain.cu"], tmp_path)
    assert not (tmp_path / "MARKER2").exists()
    assert "SASS pass skipped: include folder" in r.output and "shell" in r.output, r.output


@needs_nvcc
def test_source_path_with_shell_text_skips_the_sass_pass(tmp_path):
    d = tmp_path / "k$(touch MARKER3)"
    d.mkdir()
    (d / "plain.cu").write_text(PLAIN_CUDA.replace("X == 1 && Y == 2", "true").replace("X + Y", "1"))
    r = run(["--sass", "--no-cache", "--output-format", "full", str(d / "plain.cu")], tmp_path)
    assert not (tmp_path / "MARKER3").exists() and not (d / "MARKER3").exists()
    assert "SASS pass skipped: the source path" in r.output, r.output


@needs_nvcc
def test_no_cache_writes_nothing_with_sass(tmp_path):
    (tmp_path / "plain.cu").write_text(PLAIN_CUDA)
    (tmp_path / "tkcheck.toml").write_text('sass = true\ndefines = ["X=1", "Y=2"]\n')
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run(["--no-cache", "plain.cu"], tmp_path)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no .tkcheck_cache, no sass/deps


def test_no_cache_writes_nothing(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    run(["--no-cache", "k.cu"], tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["k.cu"]


# ---------------------------------------------------------------- options that write files or load code


def test_clang_args_that_write_a_git_hook_are_refused(tmp_path):
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "tkcheck.toml").write_text(
        'clang-args = ["-MD", "-MF", ".git/hooks/pre-commit", "-MT", "x: ; touch MARKER"]\n'
    )
    r = run(["k.cu"], tmp_path)
    assert r.exit_code == 2
    assert "'-MD'" in r.output and "write" in r.output
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    assert "Traceback" not in r.output


@pytest.mark.parametrize(
    "args",
    [
        ["-MD"],
        ["-MMD"],
        ["-MF", "x.d"],
        ["-MJ", "db.json"],
        ["-M"],
        ["-o", "x.o"],
        ["-ox.o"],
        ["--output=x"],
        ["-save-temps"],
        ["-save-temps=obj"],
        ["-fplugin=./evil.so"],
        ["-fpass-plugin=e.so"],
        ["-Xclang", "-load"],
        ["-Xclang", "-plugin"],
        ["-Xclang", "-add-plugin"],
        ["-Xclang=-load"],
        ["-fmodules"],
        ["-fmodules-cache-path=/tmp/x"],
        ["-fimplicit-modules"],
        ["@args.rsp"],
        ["--config=evil.cfg"],
        ["--config", "evil.cfg"],
        ["-Wp,-MD,x.d"],
        ["-ftime-trace"],
        ["-serialize-diagnostics", "x.dia"],
        ["-fcrash-diagnostics-dir=/tmp"],
        ["-mllvm", "-stats-file=x"],
        ["-Xpreprocessor", "-MD"],
        ["-B/tmp/evil"],
        ["-Xclang", "-emit-pch"],
        ["-Xclang", "-fno-validate-pch"],
    ],
)
def test_refused_options(args):
    with pytest.raises(UnsafeOption) as e:
        check_clang_args(args)
    assert args[0].split("=")[0].split(",")[0] in str(e.value) or args[-1] in str(e.value)


@pytest.mark.parametrize(
    "args",
    [
        ["-std=c++20"],
        ["-DX=1"],
        ["-UNDEBUG"],
        ["-Wno-everything"],
        ["-I", "inc"],
        ["-isystem", "/x"],
        ["-include", "pre.h"],
        ["-fno-crash-diagnostics"],
        ["--cuda-gpu-arch=sm_90a"],
        ["-ferror-limit=0"],
        ["-fno-exceptions"],
    ],
)
def test_accepted_options(args):
    assert check_clang_args(args) == tuple(args)


@pytest.mark.parametrize(
    "key,value",
    [
        ("clang-args", '["-o", "out.o"]'),
        ("clang-args", '"-fplugin=x.so"'),
        ("defines", '["X=1\\n#include <y>"]'),
        ("defines", '["-fplugin=x.so"]'),
        ("include-dirs", '["a\\nb"]'),
    ],
)
def test_unsafe_config_values_exit_2(tmp_path, key, value):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "tkcheck.toml").write_text(f"{key} = {value}\n")
    r = run(["--no-cache", "k.cu"], tmp_path)
    assert r.exit_code == 2, r.output
    assert key in r.output and "Traceback" not in r.output


def test_unsafe_override_exits_2(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    r = run(["--no-cache", "--config", 'clang-args=["-save-temps"]', "k.cu"], tmp_path)
    assert r.exit_code == 2 and "-save-temps" in r.output


def test_compile_commands_multiline_define_exits_2(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "compile_commands.json").write_text(
        json.dumps(
            [{"directory": str(tmp_path), "file": "k.cu", "arguments": ["nvcc", "-DX=1\n#include </dev/zero>", "k.cu"]}]
        )
    )
    r = run(["--no-cache", "-p", ".", "k.cu"], tmp_path)
    assert r.exit_code == 2 and "compile commands" in r.output and "one line" in r.output


def test_one_validation_function_for_every_source():
    check_compiler_options(clang_args=["-std=c++20"], defines=["A", "B=2", "F(x)=(x)"], include_dirs=["inc"])
    with pytest.raises(UnsafeOption, match="-D"):
        check_compiler_options(defines=["-DX"], where="-D")
    assert shell_unsafe("/a/b c/d") is None
    assert shell_unsafe("/a/$(x)") == "$" and shell_unsafe("a`b`") == "`" and shell_unsafe('a"b') == '"'


# ---------------------------------------------------------------- no shell anywhere in static mode


def test_static_mode_starts_programs_with_an_argument_vector():
    """Outside `tkcheck confirm` (which runs the user's build on request), no subprocess call
    uses a shell, and nothing calls os.system / os.popen."""
    pkg = ROOT / "tkcheck"
    offenders = []
    files = [p for p in pkg.rglob("*.py") if "confirm" not in p.parts] + [ROOT / "cli.py"]
    files += sorted((ROOT / "rules").glob("*.py"))
    for p in files:
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                fn = ast.unparse(node.func)
                if fn in ("os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput"):
                    offenders.append(f"{p.name}:{node.lineno}: {fn}")
                for kw in node.keywords:
                    if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                        offenders.append(f"{p.name}:{node.lineno}: shell={ast.unparse(kw.value)}")
    assert not offenders, offenders
    assert len(files) > 20
