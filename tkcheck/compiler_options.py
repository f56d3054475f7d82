"""Which compiler options tkcheck passes to libclang: an allow-list (static mode never writes, loads or runs anything).

Static mode parses with libclang and, with `--sass`, compiles with nvcc. Options
that reach those compilers from a tkcheck.toml, a pyproject.toml, `--config`,
compile_commands.json or the command line pass through `check_compiler_options`
first. Only what a kernel's parse needs is accepted, each option parsed and its
value checked:

* include folders: `-I`, `-isystem`, `-iquote`, `-idirafter`,
  `--include-directory` (a path that exists must be a folder; one that does not
  exist is harmless: clang only looks into it);
* a forced include `-include FILE` (a regular file of at most MAX_FORCED_INCLUDE_BYTES);
* macros: `-D NAME[=VALUE]`, `-U NAME`;
* the language: `-x cuda|c++|c`, `-std=` a C or C++ standard, a short list of
  `-f`/`-fno-` language switches, `-ferror-limit=N`, `-O`, `-g`, `-w`, `-W` warning
  switches (not the comma forms `-Wp,` `-Wa,` `-Wl,` that forward options);
* CUDA: `--cuda-gpu-arch=`/`--offload-arch=` an arch *by name* (`sm_90a`, never
  `native`, which makes the driver run `nvptx-arch`), `--cuda-device-only`,
  `--cuda-host-only`, `-nocudainc`, `-nocudalib`, `--no-cuda-version-check`,
  `-nostdinc`, `-nostdinc++`, `-fsyntax-only`.

Everything else is refused with an UnsafeOption naming the option and where it
came from (the CLI exits 2): a deny-list cannot keep up with the driver's options
that write files (`-MF`, `-save-temps`), load code (`-fplugin`, `-Xclang -load`),
read options or files (`@file`, `--config`, `-include-pch`,
`-fsanitize-ignorelist=`, `-fprofile-list=`) or run a program
(`--offload-arch=native`, `--nvptx-arch-tool=`, `--amdgpu-arch-tool=`). The
allow-list is what guarantees that libclang's driver, which runs in-process,
starts no subprocess: none of the accepted options names a tool.

`-D` values and `-I` folders are data, never options: a define must be
`NAME`, `NAME=VALUE` or `NAME(ARGS)=VALUE` on one line, a folder one line of
text. What nvcc's driver would hand to a shell is dealt with where nvcc is
started (tkcheck/sass/compile.py): defines go into a generated header there, and
a path a shell would expand skips the SASS pass (`shell_unsafe`).
"""

from __future__ import annotations

import os
import re
import stat
from typing import Iterable


class UnsafeOption(ValueError):
    """A compiler option or value that static mode refuses; the message names it."""


MAX_FORCED_INCLUDE_BYTES = 8_000_000

_DEFINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\([A-Za-z0-9_,.\s]*\))?(=.*)?$", re.S)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Inside the double quotes nvcc puts around the arguments of the commands it
# runs through a shell, these characters still mean something to that shell.
_SHELL_SPECIAL = ("$", "`", '"', "\\", "\n", "\r")

# Options without a value.
_FLAGS = frozenset(
    {
        "--cuda-device-only",
        "--cuda-host-only",
        "-nocudainc",
        "-nocudalib",
        "--no-cuda-version-check",
        "-nostdinc",
        "-nostdinc++",
        "-nostdlibinc",
        "-fsyntax-only",
        "-w",
        "-g",
        "-pedantic",
        "-pedantic-errors",
        "-ffast-math",
        "-fno-fast-math",
    }
)
# -f / -fno- language switches (no value, nothing read, written or run).
_F_SWITCHES = frozenset(
    {
        "exceptions",
        "cxx-exceptions",
        "rtti",
        "gnu-keywords",
        "char8_t",
        "sized-deallocation",
        "aligned-allocation",
        "delayed-template-parsing",
        "ms-extensions",
        "strict-aliasing",
        "cuda-flush-denormals-to-zero",
        "gpu-flush-denormals-to-zero",
        "cuda-approx-transcendentals",
        "gpu-approx-transcendentals",
        "gpu-rdc",
        "gpu-allow-device-init",
        "cuda-allow-variadic-functions",
        "crash-diagnostics",  # only -fno-crash-diagnostics (below): fewer files written on a crash
        "signed-char",
        "unsigned-char",
        "operator-names",
        "trigraphs",
        "relaxed-template-template-args",
        "permissive",
    }
)
# Include folders: the option, then the folder (joined, after `=`, or as the next argument).
_DIR_OPTIONS = ("-isystem", "-iquote", "-idirafter", "--include-directory", "-I")
_LANGUAGES = ("cuda", "c++", "c", "cu")
_STD = re.compile(r"^(?:c|gnu)(?:\+\+)?(?:\d\d|2[a-z]|1[a-z])$")
# An arch by name (never `native`: the driver would run nvptx-arch or amdgpu-arch to find it).
_ARCH = re.compile(r"^sm_\d{2,3}[af]?$")
_WARNING = re.compile(r"^-W(?:no-)?(?:error=)?[A-Za-z0-9][A-Za-z0-9+_=-]*$")

ALLOWED_SUMMARY = (
    "-I/-isystem/-iquote/-idirafter DIR, -include FILE, -D NAME[=VALUE], -U NAME, -x cuda|c++|c, "
    "-std=, -f/-fno- language switches, -ferror-limit=N, -O, -g, -w, -W warnings, "
    "--cuda-gpu-arch=/--offload-arch= sm_XX by name, --cuda-device-only, -nocudainc, -nocudalib, -nostdinc"
)


def _value_of(args: tuple[str, ...], i: int, option: str) -> tuple[str | None, int]:
    """(the value of `option` at args[i], joined, after `=`, or the next argument; next index)."""
    a = args[i]
    if a == option:
        if i + 1 >= len(args):
            return None, i + 1
        return args[i + 1], i + 2
    rest = a[len(option) :]
    return (rest[1:] if rest.startswith("=") else rest), i + 1


def _folder_problem(path: str) -> str | None:
    """Why `path` may not be an include folder: it exists and is not a folder; None when fine."""
    if not path or any(c in path for c in "\n\r\x00"):
        return "is not a folder name"
    try:
        st = os.stat(path)
    except OSError:
        return None  # a folder that does not exist is only looked into, never read
    if not stat.S_ISDIR(st.st_mode):
        from .safe_io import kind_of

        return f"is {kind_of(st.st_mode)}, not a folder"
    return None


def _file_problem(path: str) -> str | None:
    from .safe_io import regular_file_problem

    if not path or any(c in path for c in "\n\r\x00"):
        return "is not a file name"
    if not os.path.lexists(path):
        return None  # clang reports a missing file; nothing is read
    why = regular_file_problem(path, MAX_FORCED_INCLUDE_BYTES)
    return None if why is None else f"names {path}: {why}"


def _refused(arg: str, where: str, why: str | None = None) -> UnsafeOption:
    if why is None:
        why = (
            "is not among the compiler options tkcheck passes to libclang "
            f"(accepted: {ALLOWED_SUMMARY}); static mode never writes, loads or runs anything"
        )
    return UnsafeOption(f"{where}: '{arg}' {why}")


def check_clang_args(args: Iterable[str], where: str = "clang-args") -> tuple[str, ...]:
    """`args` unchanged when every option is on the allow-list (module docstring) with a valid
    value; otherwise UnsafeOption naming the first option refused and `where` it came from."""
    args = tuple(args)
    i = 0
    while i < len(args):
        a = args[i]
        if not isinstance(a, str):
            raise UnsafeOption(f"{where}: {a!r} is not a string")
        if "\x00" in a:
            raise UnsafeOption(f"{where}: {a!r} contains a NUL character")
        if a in _FLAGS:
            i += 1
            continue
        if a.startswith(_DIR_OPTIONS) and not a.startswith(("-include", "-imacros")):
            option = next(o for o in _DIR_OPTIONS if a.startswith(o))
            if option == "--include-directory" and a not in (option,) and not a.startswith(option + "="):
                raise _refused(a, where)
            value, nxt = _value_of(args, i, option)
            if value is None:
                raise _refused(a, where, "needs a folder")
            why = _folder_problem(value)
            if why:
                raise _refused(a if a != option else f"{a} {value}", where, f"{why}")
            i = nxt
            continue
        if a == "-include" or a.startswith("-include="):
            value, nxt = _value_of(args, i, "-include")
            if value is None:
                raise _refused(a, where, "needs a file")
            why = _file_problem(value)
            if why:
                raise _refused(f"-include {value}", where, why)
            i = nxt
            continue
        if a.startswith("-D"):
            value, nxt = _value_of(args, i, "-D")
            if value is None:
                raise _refused(a, where, "needs a macro definition")
            check_define(value, where)
            i = nxt
            continue
        if a.startswith("-U"):
            value, nxt = _value_of(args, i, "-U")
            if value is None or not _NAME.match(value):
                raise _refused(a, where, "needs a macro name")
            i = nxt
            continue
        if a.startswith("-x"):
            value, nxt = _value_of(args, i, "-x")
            if value not in _LANGUAGES:
                raise _refused(a, where, f"names a language tkcheck does not parse (accepted: {', '.join(_LANGUAGES)})")
            i = nxt
            continue
        if a.startswith("-std="):
            if not _STD.match(a[5:]):
                raise _refused(a, where, "is not a C or C++ standard (e.g. -std=c++20)")
            i += 1
            continue
        if a.startswith(("--cuda-gpu-arch", "--offload-arch")):
            option = "--cuda-gpu-arch" if a.startswith("--cuda-gpu-arch") else "--offload-arch"
            if a != option and not a.startswith(option + "="):
                raise _refused(a, where)
            value, nxt = _value_of(args, i, option)
            if value is None or not all(_ARCH.match(v) for v in value.split(",")):
                raise _refused(
                    a if value is None else f"{option}={value}",
                    where,
                    "names no arch tkcheck accepts: give it by name (sm_90a, sm_100a); `native` would make "
                    "the compiler driver run a program to find the GPU",
                )
            i = nxt
            continue
        if a.startswith("-ferror-limit="):
            if not a.split("=", 1)[1].isdigit():
                raise _refused(a, where, "needs a number")
            i += 1
            continue
        if a.startswith("-ffp-contract="):
            if a.split("=", 1)[1] not in ("fast", "on", "off", "fast-honor-pragmas"):
                raise _refused(a, where, "needs fast, on or off")
            i += 1
            continue
        if a.startswith("-f"):
            name = a[5:] if a.startswith("-fno-") else a[2:]
            if name in _F_SWITCHES and (name != "crash-diagnostics" or a.startswith("-fno-")):
                i += 1
                continue
            raise _refused(a, where)
        if re.fullmatch(r"-O[0-3sz]?", a):
            i += 1
            continue
        if a.startswith("-W") and _WARNING.match(a):
            i += 1
            continue
        raise _refused(a, where)
    return args


def check_define(define: str, where: str = "defines") -> str:
    """A `-D` value: NAME, NAME=VALUE or NAME(ARGS)=VALUE, on one line."""
    if not isinstance(define, str) or not define:
        raise UnsafeOption(f"{where}: {define!r} is not a macro definition (expected NAME or NAME=VALUE)")
    if any(c in define for c in "\n\r\x00"):
        raise UnsafeOption(f"{where}: {define!r} spans several lines; a -D value is one line")
    if not _DEFINE.match(define):
        raise UnsafeOption(
            f"{where}: {define!r} is not a macro definition (expected NAME or NAME=VALUE); "
            "compiler options go in clang-args"
        )
    return define


def check_include_dir(folder: str, where: str = "include-dirs") -> str:
    """An include folder: one line of text naming a folder (or nothing yet: clang only looks in it)."""
    text = str(folder)
    if not text or any(c in text for c in "\n\r\x00"):
        raise UnsafeOption(f"{where}: {text!r} is not a folder name")
    why = _folder_problem(text)
    if why:
        raise UnsafeOption(f"{where}: '{text}' {why}")
    return text


def check_compiler_options(
    *, clang_args: Iterable[str] = (), defines: Iterable[str] = (), include_dirs: Iterable[str] = (), where: str = ""
) -> None:
    """Validate everything that goes to a compiler; raises UnsafeOption naming the first problem.

    `where` prefixes the messages (a config file, `compile_commands.json`, `-D`).
    """
    prefix = f"{where}: " if where else ""
    check_clang_args(clang_args, f"{prefix}clang-args")
    for d in defines:
        check_define(d, f"{prefix}defines")
    for d in include_dirs:
        check_include_dir(d, f"{prefix}include-dirs")


def shell_unsafe(arg: str) -> str | None:
    """The first character of `arg` that a shell would still interpret inside double quotes, or None.

    nvcc runs its sub-commands through a shell with each argument in double
    quotes, so `$(...)`, backquotes, `\\` and `"` in a path it is given would be
    expanded there.
    """
    for c in str(arg):
        if c in _SHELL_SPECIAL:
            return c
    return None


__all__ = [
    "UnsafeOption",
    "check_clang_args",
    "check_define",
    "check_include_dir",
    "check_compiler_options",
    "shell_unsafe",
    "ALLOWED_SUMMARY",
]
