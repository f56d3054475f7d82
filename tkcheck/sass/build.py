"""How a tkcheck run compiles a file for the SASS pass: the arch, defines, include folders and
flags that match the source analysis (`build_config`), and the one call that compiles and
disassembles it (`run_sass`, cached by `compile_and_disassemble`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from tkcheck.sass.compile import compile_and_disassemble
from tkcheck.sass.model import SassResult, Skipped

# The flags TK's own makefiles use (-O3 and the constexpr/lambda extensions, C++20).
BASE_FLAGS = ("-std=c++20", "-O3", "--expt-relaxed-constexpr", "--expt-extended-lambda")
_TK_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](kittens|prototype)\.cuh[>"]', re.M)


class BuildOptions(Protocol):
    """What the pass reads of the front end's ParseOptions (so that it needs no front end)."""

    @property
    def arch(self) -> str: ...
    @property
    def include_dirs(self) -> Sequence[str]: ...
    @property
    def defines(self) -> Sequence[str]: ...
    @property
    def tk_include(self) -> str | None: ...
    def tk_dirs(self) -> tuple[str, ...]: ...


def build_config(
    text: str, parse_opts: BuildOptions, sass_arch: str | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """(compile_and_disassemble keyword arguments, None) or (None, why the pass is skipped).

    `parse_opts`: the front end's ParseOptions (arch, include_dirs, defines, tk_include, tk_dirs())."""
    arch = sass_arch or parse_opts.arch
    include_dirs = list(parse_opts.include_dirs)
    defines = list(parse_opts.defines)
    if arch.startswith("sm_90"):
        defines.append("KITTENS_HOPPER")
    elif arch.startswith("sm_10"):
        defines += ["KITTENS_HOPPER", "KITTENS_BLACKWELL"]
    if parse_opts.tk_include:
        include_dirs += [d for d in parse_opts.tk_dirs() if d not in include_dirs]
    elif _TK_INCLUDE.search(text):
        return None, (
            "SASS pass skipped: the file includes ThunderKittens and compiling it needs the "
            "real headers (give --tk-include)"
        )
    return dict(arch=arch, include_dirs=include_dirs, defines=defines, extra_flags=list(BASE_FLAGS)), None


def run_sass(
    path: str, text: str, parse_opts: BuildOptions, *, sass_arch: str | None = None, cache_dir: str | None = None
) -> SassResult | Skipped:
    """Compile + disassemble one file. Returns SassResult or Skipped (never raises).

    `cache_dir` None: no cache is read or written (`--no-cache`)."""
    cfg, why = build_config(text, parse_opts, sass_arch)
    if cfg is None:
        assert why is not None  # build_config says why with every None
        return Skipped("no-headers", why)
    return compile_and_disassemble(path, cache_dir=cache_dir, **cfg)
