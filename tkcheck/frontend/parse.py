"""Running libclang on a kernel file, independent of any installed CUDA toolkit.

The file is parsed in CUDA device mode with `-nocudainc -nocudalib` and a CUDA
path that does not exist, so neither clang's CUDA wrapper headers (absent from
the libclang wheel) nor the machine's CUDA headers (whose version may be newer
than libclang knows) are read. tkcheck's own declaration model provides the
CUDA builtins and, unless real ThunderKittens headers are given, the TK API:
`#include "kittens.cuh"` / `"prototype.cuh"` are mapped to the model through
libclang's unsaved files, so no file named like a TK header exists here.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..findings import Location

MODEL_INCLUDE = Path(__file__).resolve().parent.parent / "knowledge" / "include"
BUILTINS_HEADER = "tkcheck_cuda_builtins.h"
MAX_FILE_BYTES = 2_000_000

# Header names users include for TK, mapped to the model's headers.
TK_HEADER_MAP = {
    "kittens.cuh": "tkcheck_tk_model.cuh",
    "prototype.cuh": "tkcheck_tk_prototype_model.cuh",
}


class InputError(Exception):
    """Bad input: the CLI reports it as TK000 / exit 2, never a traceback."""


@dataclass
class ParseOptions:
    arch: str = "sm_90a"
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    clang_args: tuple[str, ...] = ()
    tk_include: str | None = None          # real ThunderKittens include/ folder
    tk_version: str = "auto"               # auto | thread-scope | lane-guarded


@dataclass
class Diagnostic:
    severity: str            # "error" | "fatal" | "warning"
    message: str
    location: Location | None


@dataclass
class ParsedFile:
    path: str                # as given by the user (used in findings)
    text: str
    tu: object               # clang.cindex.TranslationUnit
    diagnostics: list[Diagnostic]
    headers: str             # "model" | "real"
    tk_semantics: str        # "thread-scope" | "lane-guarded"
    notes: list[str] = field(default_factory=list)
    abs_path: str = ""

    def errors_in_main(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics
                if d.severity in ("error", "fatal") and d.location is not None
                and d.location.filename == self.path]


_clang_index = None
_patched = False


def _tolerate_unknown_kinds():
    """libclang may report cursor kinds newer than its Python bindings know
    (`ValueError: Unknown ... kind 155`); treat those as unexposed nodes."""
    global _patched
    if _patched:
        return
    import clang.cindex as ci
    orig = ci.CursorKind.from_id

    def from_id(kind_id, _orig=orig):
        try:
            return _orig(kind_id)
        except ValueError:
            return ci.CursorKind.UNEXPOSED_STMT
    ci.CursorKind.from_id = staticmethod(from_id)
    _patched = True


def _index():
    global _clang_index
    if _clang_index is None:
        import clang.cindex as ci
        _tolerate_unknown_kinds()
        _clang_index = ci.Index.create()
    return _clang_index


def detect_tk_semantics(tk_include: str | None, setting: str) -> tuple[str, str]:
    """Which meaning `tma::expect_bytes`/`load_async`/`store_async` have.

    Returns (semantics, how it was decided). With real headers the body of
    `tma::expect_bytes` tells: a `laneid() == 0` guard inside means the old,
    lane-guarded semantics.
    """
    if setting in ("thread-scope", "lane-guarded"):
        return setting, f"tk-version = {setting} (configured)"
    if not tk_include:
        return "thread-scope", "TK thread-scope tma semantics assumed (late-2025 headers; no real headers given)"
    cand = Path(tk_include) / "ops" / "thread" / "util" / "tma.cuh"
    if not cand.exists():
        cand = Path(tk_include) / "ops" / "warp" / "memory" / "util" / "tma.cuh"
    try:
        text = cand.read_text(errors="replace")
    except OSError:
        return "thread-scope", "TK thread-scope tma semantics assumed (tma.cuh not found in the given headers)"
    m = re.search(r"void\s+expect_bytes\s*\(\s*semaphore\s*&[^)]*\)\s*\{(.{0,400})", text, re.S)
    if m and re.search(r"laneid\s*\(\s*\)\s*==\s*0", m.group(1)):
        return "lane-guarded", "TK lane-guarded tma semantics detected in the given headers (expect_bytes guards lane 0)"
    return "thread-scope", "TK thread-scope tma semantics detected in the given headers"


def build_args(opts: ParseOptions, main_dir: str) -> list[str]:
    # libclang 18 refuses --cuda-gpu-arch=sm_100a: Blackwell sources are parsed
    # in sm_90a mode with __CUDA_ARCH__ set to 1000 and TK's Blackwell macro.
    blackwell = opts.arch.startswith("sm_10") or opts.arch.startswith("sm_12")
    args = [
        "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
        "--cuda-path=/nonexistent-cuda", "--cuda-gpu-arch=sm_90a",
        "-Wno-unknown-cuda-version", "-std=c++20", "-D__CUDACC__",
        "-ferror-limit=50", "-Wno-everything",
        # only tkcheck's stand-in system headers: the machine's libstdc++ must
        # not mix with them (and may not exist at all)
        "-nostdinc", "-nostdinc++",
    ]
    if blackwell:
        args += ["-U__CUDA_ARCH__", "-D__CUDA_ARCH__=1000", "-DKITTENS_BLACKWELL"]
    else:
        args += ["-DKITTENS_HOPPER"]
    args += ["-I", main_dir]
    for d in opts.include_dirs:
        args += ["-I", d]
    if opts.tk_include:
        args += ["-I", opts.tk_include]
        proto = Path(opts.tk_include).parent / "prototype"
        if proto.is_dir():
            args += ["-I", str(proto)]
    args += ["-I", str(MODEL_INCLUDE), "-isystem", str(MODEL_INCLUDE / "std")]
    args += ["-include", BUILTINS_HEADER]
    for d in opts.defines:
        args += [f"-D{d}"]
    args += list(opts.clang_args)
    return args


def read_source(path: str) -> str:
    """The text of a source file: a regular file (a FIFO, a device or a link to one is refused
    without blocking) of at most MAX_FILE_BYTES, not binary."""
    from ..safe_io import NotReadable, read_regular
    try:
        data = read_regular(path, MAX_FILE_BYTES)
    except NotReadable as e:
        raise InputError(f"cannot read {path}: {e}") from None
    return decode_source(path, data)


_LONE_CR = re.compile(r"\r(?!\n)")


def decode_source(path: str, data: bytes) -> str:
    if b"\x00" in data[:65536]:
        raise InputError(f"{path}: binary file (contains NUL bytes), not CUDA source")
    # clang ends lines at a lone CR as at LF and CRLF; the model's line-based helpers read LF:
    # the same number of characters, so every offset, row and column stays as clang counts it
    return _LONE_CR.sub("\n", data.decode("utf-8", errors="replace"))


def parse_source(path: str, text: str, opts: ParseOptions) -> ParsedFile:
    import clang.cindex as ci

    if len(text.encode("utf-8", errors="replace")) > MAX_FILE_BYTES:
        raise InputError(f"{path}: file is larger than {MAX_FILE_BYTES} bytes")
    abs_path = os.path.abspath(path)
    main_dir = os.path.dirname(abs_path)
    args = build_args(opts, main_dir)
    unsaved = [(abs_path, text)]
    headers = "real" if opts.tk_include else "model"
    if headers == "model":
        # `#include "kittens.cuh"` resolves against the model include dir
        for user_name, model_name in TK_HEADER_MAP.items():
            unsaved.append((str(MODEL_INCLUDE / user_name), f'#pragma once\n#include "{model_name}"\n'))
    from .includes import IncludeError, check_includes
    try:   # libclang would read a FIFO, a device or a huge file without end: refuse before it starts
        check_includes(abs_path, text, args, cwd=os.getcwd(), trusted_dirs=(str(MODEL_INCLUDE),))
    except IncludeError as e:
        raise InputError(str(e)) from None
    semantics, how = detect_tk_semantics(opts.tk_include, opts.tk_version)
    flags = (ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD
             | 0x200)  # CXTranslationUnit_KeepGoing: keep parsing after a missing include
    try:
        tu = _index().parse(abs_path, args=args, unsaved_files=unsaved, options=flags)
    except ci.TranslationUnitLoadError as e:
        raise InputError(f"{path}: libclang could not parse the file ({e})") from None
    diags: list[Diagnostic] = []
    for d in tu.diagnostics:
        if d.severity < ci.Diagnostic.Error and d.severity != ci.Diagnostic.Warning:
            continue
        sev = {ci.Diagnostic.Warning: "warning", ci.Diagnostic.Error: "error",
               ci.Diagnostic.Fatal: "fatal"}.get(d.severity, "error")
        loc = None
        if d.location.file is not None:
            fname = d.location.file.name
            shown = path if os.path.abspath(fname) == abs_path else fname
            loc = Location(shown, max(d.location.line, 1), max(d.location.column, 1))
        diags.append(Diagnostic(sev, d.spelling, loc))
    return ParsedFile(path=path, text=text, tu=tu, diagnostics=diags, headers=headers,
                      tk_semantics=semantics, notes=[how], abs_path=abs_path)
