"""Which compiler options tkcheck accepts from configuration (static mode never writes or loads code).

Static mode parses with libclang and, with `--sass`, compiles with nvcc. Options
that reach those compilers from a tkcheck.toml, a pyproject.toml, `--config`,
compile_commands.json or the command line pass through `check_compiler_options`
first: an option that makes the compiler write a file (`-MD`, `-MF`, `-o`,
`-save-temps`, `-ftime-trace`, `-serialize-diagnostics`, ...), load code
(`-fplugin`, `-Xclang -load`, `-fpass-plugin`), keep a module cache
(`-fmodules-cache-path`, `-fmodules`), or read more options from a file (`@file`,
`--config`) is refused with a message naming it; the CLI exits 2.

`-D` values and `-I` folders are data, never options: a define must be
`NAME`, `NAME=VALUE` or `NAME(ARGS)=VALUE` on one line, a folder one line of
text. What nvcc's driver would hand to a shell is dealt with where nvcc is
started (tkcheck/sass/compile.py): defines go into a generated header there, and
a path a shell would expand skips the SASS pass (`shell_unsafe`).
"""

from __future__ import annotations

import re
from typing import Iterable


class UnsafeOption(ValueError):
    """A compiler option or value that static mode refuses; the message names it."""


# Options (and option prefixes) that write files, load code, or read options from elsewhere.
_WRITES = (
    "-M",  # -M -MM -MD -MMD -MF -MT -MQ -MJ -MG -MP -MV: dependency output
    "--write-dependencies",
    "--write-user-dependencies",
    "--dependencies",
    "--user-dependencies",
    "-dependency-file",
    "-dependency-dot",
    "-module-dependency-dir",
    "-header-include-file",
    "-o",
    "--output",
    "-save-temps",
    "--save-temps",
    "-ftime-trace",
    "-fproc-stat-report",
    "-fsave-optimization-record",
    "-foptimization-record-file",
    "-serialize-diagnostics",
    "--serialize-diagnostics",
    "-fcrash-diagnostics",
    "-gen-reproducer",
    "-index-store-path",
    "-emit-",
    "--emit-",
    "-stats-file",
    "-arcmt-",
    "-ccc-",
    "-fmodule",
    "-fimplicit-module",
    "-fcxx-modules",
    "-fbuild-session",
    "-fprebuilt-module",
)
_LOADS = ("-fplugin", "-fpass-plugin", "-plugin", "-add-plugin", "-load", "-B", "--prefix")
_READS_OPTIONS = ("--config", "-config", "--driver-mode")
# Options whose next argument (or comma-separated rest) is handed to another tool.
_FORWARD_NEXT = (
    "-Xclang",
    "-Xpreprocessor",
    "-Xassembler",
    "-Xlinker",
    "-Xanalyzer",
    "-mllvm",
    "-Xcuda-ptxas",
    "-Xcuda-fatbinary",
    "-Xopenmp-target",
    "-Xarch_device",
    "-Xarch_host",
)
_FORWARD_COMMA = ("-Wp,", "-Wa,", "-Wl,")

_DEFINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\([A-Za-z0-9_,.\s]*\))?(=.*)?$", re.S)
# Inside the double quotes nvcc puts around the arguments of the commands it
# runs through a shell, these characters still mean something to that shell.
_SHELL_SPECIAL = ("$", "`", '"', "\\", "\n", "\r")


def _refusal(arg: str, forwarded_by: str | None) -> str | None:
    """Why `arg` is refused, or None."""
    text = arg.split("=", 1)[0] if arg.startswith("--") else arg
    via = f" (passed through {forwarded_by})" if forwarded_by else ""
    if arg.startswith("@"):
        return f"'{arg}' is a response file: tkcheck does not read compiler options from files{via}"
    for p in _READS_OPTIONS:
        if text == p or arg.startswith(p + "="):
            return f"'{arg}' reads compiler options from a file, which tkcheck does not check{via}"
    for p in _LOADS:
        if arg.startswith(p):
            return f"'{arg}' makes the compiler load code{via}; static mode never runs anything"
    for p in _WRITES:
        if arg.startswith(p):
            return f"'{arg}' makes the compiler write files{via}; static mode writes only its cache"
    return None


def check_clang_args(args: Iterable[str], where: str = "clang-args") -> tuple[str, ...]:
    """`args` unchanged, or UnsafeOption naming the first option that writes, loads or forwards one."""
    args = tuple(args)
    i = 0
    while i < len(args):
        a = args[i]
        if not isinstance(a, str):
            raise UnsafeOption(f"{where}: {a!r} is not a string")
        if "\x00" in a:
            raise UnsafeOption(f"{where}: {a!r} contains a NUL character")
        why = _refusal(a, None)
        if why is None and a.startswith(_FORWARD_COMMA):
            for piece in a.split(",")[1:]:
                why = _refusal(piece, a.split(",", 1)[0]) or why
        if why is None and (a in _FORWARD_NEXT or a.startswith("-Xarch_")):
            if i + 1 >= len(args):
                raise UnsafeOption(f"{where}: '{a}' needs an argument")
            why = _refusal(args[i + 1], a)
            i += 1
        elif why is None and a.startswith(("-Xclang=", "-Xarch_device=", "-Xarch_host=")):
            why = _refusal(a.split("=", 1)[1], a.split("=", 1)[0])
        if why is not None:
            raise UnsafeOption(f"{where}: {why}")
        i += 1
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
    text = str(folder)
    if not text or any(c in text for c in "\n\r\x00"):
        raise UnsafeOption(f"{where}: {text!r} is not a folder name")
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
]
