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
import threading
from functools import lru_cache
from typing import Any
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
    "pyutils/pyutils.cuh": "tkcheck_tk_pyutils_model.cuh",
    "pyutils/torchutils.cuh": "tkcheck_tk_pyutils_model.cuh",
}


class InputError(Exception):
    """Bad input: the CLI reports it as a parse-error finding with exit 2, never a traceback."""


@dataclass
class ParseOptions:
    arch: str = "sm_90a"
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    clang_args: tuple[str, ...] = ()
    tk_include: str | None = None  # real ThunderKittens include/ folder (the one with kittens.cuh)
    tk_version: str = "auto"  # auto | thread-scope | lane-guarded
    tk_extra_dirs: tuple[str, ...] = ()  # more real TK folders (prototype/), searched after tk_include
    # True when no arch was configured: a file whose Blackwell code does not parse for sm_90a is
    # parsed again for sm_100a (and the arch used is told)
    arch_auto: bool = False

    def tk_dirs(self) -> tuple[str, ...]:
        """Every real ThunderKittens folder, in search order."""
        out = []
        if self.tk_include:
            out.append(self.tk_include)
            proto = Path(self.tk_include).parent / "prototype"
            if proto.is_dir():
                out.append(str(proto))
        for d in self.tk_extra_dirs:
            if d not in out:
                out.append(d)
        return tuple(out)


@dataclass
class Diagnostic:
    severity: str  # "error" | "fatal" | "warning"
    message: str
    location: Location | None
    abs_file: str | None = None  # the file's absolute path (None: no location)
    recovered: str | None = None  # why this clang error is not an error of the code (nvcc accepts it)

    def is_error(self) -> bool:
        return self.severity in ("error", "fatal") and self.recovered is None


@dataclass
class ParsedFile:
    path: str  # as given by the user (used in findings)
    text: str  # the text libclang parsed (nvcc-compatibility rewrites applied)
    tu: object  # clang.cindex.TranslationUnit
    diagnostics: list[Diagnostic]
    headers: str  # "model" | "real"
    tk_semantics: str  # "thread-scope" | "lane-guarded"
    notes: list[str] = field(default_factory=list)
    abs_path: str = ""
    arch: str = "sm_90a"  # the arch the file was parsed for
    tk_dirs: tuple[str, ...] = ()  # real TK folders (not the user's code)
    stopped: bool = False  # clang stopped at its error limit: the AST is incomplete
    host_stubs: tuple[str, ...] = ()  # host-only includes given empty stand-ins
    user_texts: dict[str, str] = field(default_factory=dict)  # abs path -> text parsed (rewritten headers)
    defines: tuple[str, ...] = ()  # -D NAME[=VALUE] of the build (constant evaluation uses them)
    # parsed through the index that lists only the file's own declarations (`_index(True)`):
    # read the top level through `top_level(parsed)`
    local_listing: bool = False

    def errors_in_main(self) -> list[Diagnostic]:
        return [
            d for d in self.diagnostics if d.is_error() and d.location is not None and d.location.filename == self.path
        ]

    def is_user_file(self, name: str | None) -> bool:
        """Whether a file is the user's code: not tkcheck's model or stand-ins, not a real
        ThunderKittens folder given with --tk-include. What the user passed decides, not the path's
        look (a Megakernels `include/` given with -I is the user's)."""
        if not name:
            return False
        a = os.path.abspath(name)
        if a == self.abs_path:
            return True
        if _under(a, str(MODEL_INCLUDE)):
            return False
        return not any(_under(a, d) for d in self.tk_dirs)

    def user_errors(self) -> list[Diagnostic]:
        """Errors (not recovered) located in the user's files."""
        return [d for d in self.diagnostics if d.is_error() and d.abs_file and self.is_user_file(d.abs_file)]


def top_level(parsed: ParsedFile) -> list:
    """The top-level cursors of the parse's translation unit (declarations and preprocessing
    entities), listed once per parse: what the builder, `diagnostics.function_spans` and
    discovery read. Parsed with a precompiled header through the local-only index
    (`_Parse._parse_tu_here`), the listing holds the file's own entities and not the header's,
    and libclang lists there, after the file's declarations, the implicit instantiations of
    function templates and of class templates' member functions (the declarations clang's
    consumer is handed at the end of the file), which the full listing never shows: those are
    left out, so that the user's entities are listed as the full listing lists them
    (checked file by file over the corpus, the fixtures and TK's kernels, docs/BENCHMARKS.md
    round 10 `r10-many`)."""
    cached = getattr(parsed, "_top_level", None)
    if cached is not None:
        return cached
    kids = list(parsed.tu.cursor.get_children())  # type: ignore[attr-defined]
    if parsed.local_listing:
        kids = [c for c in kids if not _implicit_instantiation(c)]
    parsed._top_level = kids  # type: ignore[attr-defined]
    return kids


_FUNCTION_CURSOR_KINDS = frozenset(("FUNCTION_DECL", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR", "CONVERSION_FUNCTION"))


def _implicit_instantiation(c) -> bool:
    """A function made from a template (a function template's, a class template's member): it
    is a specialization whose declaration is its template's own (an explicit specialization the
    user wrote has a place of its own)."""
    if c.kind.name not in _FUNCTION_CURSOR_KINDS:
        return False
    import clang.cindex as ci

    tmpl = ci.conf.lib.clang_getSpecializedCursorTemplate(c)
    if tmpl is None:
        return False
    a, b = c.location, tmpl.location
    return a.file is not None and b.file is not None and a.file.name == b.file.name and a.offset == b.offset


def _under(path: str, folder: str) -> bool:
    folder = os.path.abspath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


_clang_index = None
_local_index = None
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


# The stack libclang parses on. clang's parser and semantic analysis recurse once per level of
# an expression or a statement: its own parse thread (8 MiB) overflows -- SIGSEGV, the checking
# process gone -- on code nvcc compiles (a 16,000-term sum, 3,000 nested ifs). The parse runs on
# a thread of this size instead (address space reserved, pages used as the recursion goes), with
# LIBCLANG_NOTHREADS so that libclang parses on the calling thread.
DEEP_STACK_BYTES = 512 << 20
# nvcc follows brackets (parentheses, braces, square brackets) far deeper than clang's default of
# 256; set by tkcheck itself (as a parse option, never by the repository being checked)
BRACKET_DEPTH = 16384
# Python's recursion limit while on that stack (the walk recurses once per level as well)
DEEP_RECURSION_LIMIT = 60000


_ON_DEEP_STACK = threading.local()  # `yes` on a thread `on_deep_stack` started


def on_deep_stack(fn, *args):
    """fn(*args) on a thread with a DEEP_STACK_BYTES stack (its result, or its exception raised
    here); in this thread, libclang on its own thread, when such a thread cannot be made."""
    if getattr(_ON_DEEP_STACK, "yes", False):
        # already on such a thread (the parse inside a check's walk): its stack serves, and no
        # thread is started for it (the check and its parse used to take two per file)
        return fn(*args)
    out: dict[str, Any] = {}

    def run():
        _ON_DEEP_STACK.yes = True
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # re-raised in the caller's thread
            out["error"] = e

    import sys

    old_limit = sys.getrecursionlimit()
    # the walk recurses in Python (through libclang's child visitor) once per level too
    sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
    try:
        return _on_thread(run, out, fn, args)
    finally:
        sys.setrecursionlimit(old_limit)


def _on_thread(run, out: dict, fn, args):
    import threading

    old_env = os.environ.get("LIBCLANG_NOTHREADS")
    os.environ["LIBCLANG_NOTHREADS"] = "1"
    try:
        old_size = threading.stack_size()
        try:
            # the size applies to the threads started while it is set
            threading.stack_size(DEEP_STACK_BYTES)
            t = threading.Thread(target=run, name="tkcheck-deep-stack")
            t.start()
        except (ValueError, RuntimeError, MemoryError):
            t = None
        finally:
            threading.stack_size(old_size)
        if t is None:
            if old_env is None:
                os.environ.pop("LIBCLANG_NOTHREADS", None)
            return fn(*args)
        t.join()
    finally:
        if old_env is None:
            os.environ.pop("LIBCLANG_NOTHREADS", None)
        else:
            os.environ["LIBCLANG_NOTHREADS"] = old_env
    if "error" in out:
        raise out["error"]
    return out["value"]


def _index(local_only: bool = False):
    """libclang's index (one per process). `local_only`: the index whose translation units list,
    as the children of their cursor, only the declarations and preprocessing entities parsed
    from the file's own text, not those of a precompiled header it was given (libclang's
    `excludeDeclarationsFromPCH`); see `_Parse._parse_tu_here`."""
    global _clang_index, _local_index
    if _clang_index is None:
        import clang.cindex as ci

        _tolerate_unknown_kinds()
        _clang_index = ci.Index.create()
        _local_index = ci.Index.create(excludeDecls=True)
    return _local_index if local_only else _clang_index


def detect_tk_semantics(tk_include: str | None, setting: str) -> tuple[str, str]:
    """Which meaning `tma::expect_bytes`/`load_async`/`store_async` have.

    Returns (semantics, how it was decided). With real headers the bodies tell: a
    `laneid() == 0` guard inside the thread-level (not group) `tma::` functions means the old,
    lane-guarded semantics. Every layout TK has had is searched: the 2024 `src/` tree,
    `ops/warp/memory/util/tma.cuh` (2024-2025), `ops/thread/memory/util/tma.cuh` (2025) and
    `ops/thread/util/tma.cuh` (2026).
    """
    if setting in ("thread-scope", "lane-guarded"):
        return setting, f"tk-version = {setting} (configured)"
    if not tk_include:
        return "thread-scope", "TK thread-scope tma semantics assumed (late-2025 headers; no real headers given)"
    files = tk_tma_files(tk_include)
    if not files:
        return "thread-scope", "TK thread-scope tma semantics assumed (tma.cuh not found in the given headers)"
    guarded = []
    for f in files:
        from ..safe_io import read_regular
        from .includes import MAX_HEADER_BYTES

        try:  # a regular file of bounded size, as every header read
            text = read_regular(f, MAX_HEADER_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        for fn in ("expect_bytes", "set_barrier_bytes", "load_async", "store_async"):
            for m in re.finditer(r"\bvoid\s+" + fn + r"\s*\([^;{]*\)\s*\{", text):
                body = text[m.end() : m.end() + 600]
                body = body[: _body_end(body)]
                if re.search(r"laneid\s*\(\s*\)\s*==\s*0", body):
                    guarded.append(fn)
                    break
    if guarded:
        return "lane-guarded", (
            "TK lane-guarded tma semantics detected in the given headers "
            f"({', '.join(sorted(set(guarded)))} guard lane 0)"
        )
    return "thread-scope", "TK thread-scope tma semantics detected in the given headers"


def tk_tma_files(tk_include: str) -> list[Path]:
    """The thread/warp-level (not group-level) TMA headers of a TK include folder, any layout."""
    root = Path(tk_include)
    out = []
    for rel in (
        "ops/thread/util/tma.cuh",
        "ops/thread/memory/util/tma.cuh",
        "ops/thread/memory/tile/tma.cuh",
        "ops/warp/memory/util/tma.cuh",
        "ops/warp/memory/tile/tma.cuh",
        "ops/warp/memory/tma.cuh",
    ):
        if (root / rel).is_file():
            out.append(root / rel)
    return out


def _body_end(body: str) -> int:
    depth = 1
    for i, ch in enumerate(body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth == 0:
            return i
    return len(body)


def find_tk_include(folder: str | os.PathLike) -> str | None:
    """The include folder (holding kittens.cuh) of a TK checkout root, include/ or src/ folder."""
    p = Path(folder)
    for cand in (p, p / "include", p / "src"):
        if (cand / "kittens.cuh").is_file():
            return str(cand)
    return None


BLACKWELL_ARCH = "sm_100a"
STUB_DIR = MODEL_INCLUDE / "host_stubs"  # virtual: host-only stand-ins live in unsaved files
# Which code is parsed for sm_100a (and with which TK macros): build_target.py


def is_blackwell(arch: str) -> bool:
    return arch.startswith("sm_10") or arch.startswith("sm_11") or arch.startswith("sm_12")


# `#include <iostream>`, `<vector>`, ...: a C++ standard header (not a C or CUDA one)
_CXX_STD_INCLUDE = re.compile(r"^\s*#\s*include\s*<(?!cuda)[a-z_]+>", re.M)


def build_args(opts: ParseOptions, main_dir: str, arch: str | None = None, std_common: bool = False) -> list[str]:
    # libclang 18 refuses --cuda-gpu-arch=sm_100a: Blackwell sources are parsed
    # in sm_90a mode with __CUDA_ARCH__ set to 1000 and TK's Blackwell macro.
    arch = arch or opts.arch
    args = [
        "-x",
        "cuda",
        "--cuda-device-only",
        "-nocudainc",
        "-nocudalib",
        "--cuda-path=/nonexistent-cuda",
        "--cuda-gpu-arch=sm_90a",
        "-Wno-unknown-cuda-version",
        "-std=c++20",
        "-D__CUDACC__",
        # no error limit: clang stops at its limit and drops the rest of the file (statements
        # of later kernels included), which would be analysed as if they were not there
        "-ferror-limit=0",
        f"-fbracket-depth={BRACKET_DEPTH}",
        "-Wno-everything",
        # only tkcheck's stand-in system headers: the machine's libstdc++ must
        # not mix with them (and may not exist at all)
        "-nostdinc",
        "-nostdinc++",
    ]
    if is_blackwell(arch):
        args += ["-U__CUDA_ARCH__", "-D__CUDA_ARCH__=1000", "-DKITTENS_BLACKWELL"]
    else:
        args += ["-DKITTENS_HOPPER"]
    args += ["-I", main_dir]
    for d in opts.include_dirs:
        args += ["-I", d]
    for d in opts.tk_dirs():
        # ThunderKittens as system headers: not the user's code, and telling a cursor's place
        # from that is one call (clang_Location_isInSystemHeader), not a file lookup
        args += ["-isystem", d]
    args += ["-I", str(MODEL_INCLUDE), "-isystem", str(MODEL_INCLUDE / "std"), "-I", str(STUB_DIR)]
    args += ["-include", BUILTINS_HEADER]
    if std_common:
        # a real standard library's headers include one another (libstdc++'s <iostream> reaches
        # <chrono> on some versions) and code nvcc compiles may rely on it: with any C++ standard
        # header included, the stand-ins of all of them are visible
        args += ["-include", "tkcheck_std_common"]
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


def parse_source(path: str, text: str, opts: ParseOptions, pch_dir: str | None = None) -> ParsedFile:
    """Parse a file as nvcc would read it (see `nvcc_compat`): rewrites that keep positions,
    stand-ins for missing host-only libraries, clang errors nvcc does not make marked as
    recovered; the arch and TK's build macros are settled before the first parse
    (build_target.py)."""
    from . import nvcc_compat

    if len(text.encode("utf-8", errors="replace")) > MAX_FILE_BYTES:
        raise InputError(f"{path}: file is larger than {MAX_FILE_BYTES} bytes")
    abs_path = os.path.abspath(path)
    from ..compiler_options import UnsafeOption, check_compiler_options

    try:  # the allow-list, whoever built `opts`: libclang's driver is given no option that runs a tool
        check_compiler_options(clang_args=opts.clang_args, defines=opts.defines, include_dirs=opts.include_dirs)
    except UnsafeOption as e:
        raise InputError(str(e)) from None
    fixed, rewrites = nvcc_compat.rewrite(text)
    from .includes import IncludeError, check_includes

    try:  # libclang would read a FIFO, a device or a huge file without end: refuse before it starts
        check_includes(
            abs_path,
            fixed,
            build_args(opts, os.path.dirname(abs_path)),
            cwd=os.getcwd(),
            trusted_dirs=(str(MODEL_INCLUDE),),
        )
    except IncludeError as e:
        raise InputError(str(e)) from None
    semantics, how = detect_tk_semantics(opts.tk_include, opts.tk_version)
    notes = [how]
    for line, what in rewrites:
        notes.append(f"{path}:{line}: read as nvcc reads it: {what}")
    stubs = set(nvcc_compat.COMMON_HOST_HEADERS)
    # the arch and the TK build macros, settled before the first parse (build_target.py): one
    # parse per file, for the build its code and its headers ask for
    from .build_target import settle
    from .lexer import blank_comments_and_strings

    target = settle(blank_comments_and_strings(fixed), opts.arch, opts.arch_auto, opts.tk_dirs(), opts.defines)
    if target.extra_defines:
        from dataclasses import replace as _replace

        opts = _replace(opts, defines=opts.defines + target.extra_defines)
        notes.append(target.note or "")
    arch = target.arch
    state = _Parse(path, abs_path, fixed, opts, semantics, pch_dir)
    parsed = state.run(arch, stubs)
    # host-only includes not named in advance: stand-ins, and parse once more
    more = {
        inc
        for d in parsed.diagnostics
        if (inc := nvcc_compat.missing_include(d.message)) and nvcc_compat.is_host_only(inc) and inc not in stubs
    }
    # user headers that need the same rewrites as the main file
    if more or state.rewrite_user_headers(parsed):
        stubs |= more
        parsed = state.run(arch, stubs)
    alias = nvcc_compat.alias_template_fixes(parsed.diagnostics, abs_path, fixed)
    if alias is not None:
        # one more parse with `Alias<>` where the file names a defaulted alias template bare
        fixed = alias[0]
        state.text = fixed
        parsed = state.run(arch, stubs)
        notes.append(
            f"{path}: read as nvcc reads it: an alias template with default arguments named "
            f"without '<>' (line{'s' if len(alias[1]) > 1 else ''} {', '.join(map(str, alias[1][:6]))})"
        )
    if parsed.arch != opts.arch:
        notes.append(f"arch {parsed.arch} assumed: the file uses what only Blackwell has (set arch / --arch to choose)")
    used = sorted(s for s in stubs if any(s == inc for inc in state.included_names(parsed)))
    if used:
        notes.append("host-only headers given empty stand-ins (host code is not analysed): " + ", ".join(used))
    recovered = sorted({d.recovered for d in parsed.diagnostics if d.recovered and parsed.is_user_file(d.abs_file)})
    for why in recovered:
        rows = sorted({d.location.row for d in parsed.diagnostics if d.recovered == why and d.location})
        notes.append(
            f"clang rejects what nvcc accepts, read as nvcc does: {why} (line{'s' if len(rows) > 1 else ''} "
            f"{', '.join(map(str, rows[:6]))}{', ...' if len(rows) > 6 else ''})"
        )
    parsed.notes = notes + parsed.notes
    parsed.host_stubs = tuple(used)
    return parsed


@lru_cache(maxsize=1)
def _libclang_version() -> str:
    """The installed libclang's version (its package metadata, read once per process: reading it
    parses the package's METADATA file, a few ms that every parse with a cache paid)."""
    try:
        from importlib.metadata import version

        return version("libclang")
    except Exception:  # noqa: BLE001
        return "?"


_DIGEST: list[str] = []


def _tool_digest() -> str:
    """tkcheck's version and the contents of its declaration model (the stand-ins a precompiled
    header may hold), hashed once per process."""
    if not _DIGEST:
        import hashlib
        from .. import __version__

        h = hashlib.sha256(__version__.encode())
        for p in sorted(MODEL_INCLUDE.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(MODEL_INCLUDE)).encode())
                h.update(p.read_bytes())
        _DIGEST.append(h.hexdigest()[:16])
    return _DIGEST[0]


_PROTOCOL_TUS: dict[str, object] = {}


def protocol_function(kind: str):
    """The cursor of the function modelling TK template `kind`'s protocol (a pseudo-CUDA file
    of knowledge/protocols), parsed once per process; None when tkcheck has no model of it."""
    from ..knowledge import protocols

    path = protocols.protocol_file(kind)
    if path is None:
        return None
    tu = _PROTOCOL_TUS.get(str(path))  # by file: one file may hold two protocols (interpreter)
    if tu is None:
        import clang.cindex as ci

        args = build_args(ParseOptions(), str(path.parent))
        tu = ci.Index.create().parse(str(path), args=args, options=0x200)
        _PROTOCOL_TUS[str(path)] = tu
    want = protocols.protocol_function_name(kind)
    for c in tu.cursor.get_children():
        if c.spelling == want and any(ch.kind.name == "COMPOUND_STMT" for ch in c.get_children()):
            return c
    return None


@lru_cache(maxsize=1)
def _model_header_files() -> tuple[tuple[str, str], ...]:
    """The unsaved files that map TK's header names to the model's headers (the same for every
    parse: made once per process)."""
    return tuple(
        (str(MODEL_INCLUDE / user_name), f'#pragma once\n#include "{model_name}"\n')
        for user_name, model_name in TK_HEADER_MAP.items()
    )


@lru_cache(maxsize=256)
def _stub_path(name: str) -> str:
    return str(STUB_DIR / name)


class _Parse:
    """One file's parse, repeatable with other stand-ins or another arch."""

    def __init__(self, path, abs_path, text, opts: ParseOptions, semantics, pch_dir: str | None = None):
        self.path, self.abs_path, self.text, self.opts, self.semantics = path, abs_path, text, opts, semantics
        self.header_texts: dict[str, str] = {}
        self.pch_dir = pch_dir
        self.pch_used: str | None = None
        self.local_listing = False  # the last parse went through the local-only index

    def run(self, arch: str, stubs: set[str]) -> ParsedFile:
        import clang.cindex as ci
        from . import nvcc_compat

        args = build_args(
            self.opts,
            os.path.dirname(self.abs_path),
            arch=arch,
            # real TK headers include C++ standard headers themselves
            std_common=bool(self.opts.tk_include) or bool(_CXX_STD_INCLUDE.search(self.text)),
        )
        unsaved = [(self.abs_path, self.text)] + list(self.header_texts.items())
        headers = "real" if self.opts.tk_include else "model"
        if headers == "model":
            # `#include "kittens.cuh"` resolves against the model include dir
            unsaved.extend(_model_header_files())
        stub = nvcc_compat.stub_text()
        for name in sorted(stubs):
            unsaved.append((_stub_path(name), stub))
        flags = (
            ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | 0x200
        )  # CXTranslationUnit_KeepGoing: keep parsing after a missing include
        pch_file = self._pch(args, unsaved, stubs)
        from .includes import MAX_HEADER_BYTES, MAX_TOTAL_INCLUDE_BYTES
        from .open_guard import ParseGuard

        # every file the parse opens is checked while it runs (open_guard.py): no spelling of an
        # include reads a device, a FIFO or gigabytes
        guard = ParseGuard(MAX_HEADER_BYTES, MAX_TOTAL_INCLUDE_BYTES, exempt=(pch_file,) if pch_file else ())
        with guard:
            tu, pch_file = self._parse_tu(args, unsaved, flags, pch_file)
        if guard.violation:
            raise InputError(f"{self.path}: {guard.violation}")
        self.pch_used = pch_file
        parsed = ParsedFile(
            local_listing=self.local_listing,
            path=self.path,
            text=self.text,
            tu=tu,
            diagnostics=[],
            headers=headers,
            tk_semantics=self.semantics,
            notes=[],
            abs_path=self.abs_path,
            arch=arch,
            tk_dirs=self.opts.tk_dirs(),
            user_texts=dict(self.header_texts),
            defines=tuple(self.opts.defines),
        )
        for d in tu.diagnostics:
            if d.severity < ci.Diagnostic.Error and d.severity != ci.Diagnostic.Warning:
                continue
            sev = {ci.Diagnostic.Warning: "warning", ci.Diagnostic.Error: "error", ci.Diagnostic.Fatal: "fatal"}.get(
                d.severity, "error"
            )
            loc = None
            fname = None
            if d.location.file is not None:
                fname = os.path.abspath(d.location.file.name)
                shown = self.path if fname == self.abs_path else d.location.file.name
                loc = Location(shown, max(d.location.line, 1), max(d.location.column, 1))
            if "too many errors emitted" in d.spelling:
                parsed.stopped = True
            rec = nvcc_compat.recovered(d.spelling) if sev == "error" else None
            parsed.diagnostics.append(Diagnostic(sev, d.spelling, loc, fname, rec))
        return parsed

    def _parse_tu(self, args, unsaved, flags, pch_file):
        """libclang's parse (on a thread with a deep stack: see `on_deep_stack`)."""
        return on_deep_stack(self._parse_tu_here, args, unsaved, flags, pch_file)

    def _parse_tu_here(self, args, unsaved, flags, pch_file):
        """libclang's parse, with the precompiled header when there is one (parsed again without it
        when libclang fails with it or rejects it); (translation unit, the header used)."""
        import clang.cindex as ci

        # With a precompiled header that holds nothing of the user's (only tkcheck's model and
        # stand-ins and the real TK folders), the parse goes through the index that lists only
        # the file's own top-level declarations: every reader of the translation unit's children
        # (the builder's collection, `diagnostics.function_spans`, discovery) keeps only the
        # user's code, and listing the header's thousands of declarations (a libclang callback
        # each, then their locations) was most of a small file's check. A header holding a user
        # file (a `<config.h>` found through -I) keeps the full listing.
        local = bool(pch_file) and self._pch_is_foreign(pch_file)
        try:
            try:
                tu = _index(local).parse(
                    self.abs_path,
                    args=args + (["-include-pch", pch_file] if pch_file else []),
                    unsaved_files=unsaved,
                    options=flags,
                )
            except ci.TranslationUnitLoadError:
                if not pch_file:
                    raise
                # libclang failed with the precompiled headers: the file is parsed without them, and
                # they are built again next time (an unusable one must not cost every later parse)
                try:
                    os.unlink(pch_file)
                except OSError:
                    pass
                pch_file = None
                tu = _index().parse(self.abs_path, args=args, unsaved_files=unsaved, options=flags)
            if pch_file:
                from . import pch

                if pch.rejected(tu.diagnostics):
                    # a header changed since it was built (clang checks): parse without, build anew later
                    if not any("operator new" in d.spelling or "operator delete" in d.spelling for d in tu.diagnostics):
                        try:
                            os.unlink(pch_file)
                        except OSError:
                            pass
                    pch_file = None
                    tu = _index().parse(self.abs_path, args=args, unsaved_files=unsaved, options=flags)
        except ci.TranslationUnitLoadError as e:
            raise InputError(f"{self.path}: libclang could not parse the file ({e})") from None
        self.local_listing = local and pch_file is not None
        return tu, pch_file

    def _pch_is_foreign(self, pch_file: str) -> bool:
        """Whether every file the precompiled header read is tkcheck's model or a real TK folder
        (none is the user's: `ParsedFile.is_user_file` is false for each)."""
        from . import pch

        return pch.reads_only(pch_file, (str(MODEL_INCLUDE), *self.opts.tk_dirs()), _index())

    def _pch(self, args, unsaved, stubs) -> str | None:
        """The precompiled TK headers for this parse (frontend/pch.py), or None."""
        if not self.pch_dir:
            return None
        from . import pch
        from .lexer import blank_comments_and_strings

        # the file's leading TK includes, or none: the forced includes (the CUDA builtins header,
        # the standard stand-ins) come before any text of the file, so a precompiled header of
        # them alone is the prefix of every file, also of one that includes nothing from TK
        includes = pch.prefix_includes(self.text) or []
        if pch.user_code_allocates(
            self.text, os.path.dirname(self.abs_path), self.opts.include_dirs, blank_comments_and_strings
        ):
            return None
        key = pch.key_of(includes, args + sorted(stubs), _tool_digest(), _libclang_version())
        return pch.build(self.pch_dir, key, includes, args, [u for u in unsaved if u[0] != self.abs_path], _index())

    def included_names(self, parsed: ParsedFile) -> set[str]:
        """Include names (as spelled relative to the stand-in folder) the parse read from STUB_DIR."""
        out = set()
        try:
            for inc in parsed.tu.get_includes():
                name = inc.include.name if inc.include is not None else ""
                if _under(os.path.abspath(name), str(STUB_DIR)):
                    out.add(os.path.relpath(os.path.abspath(name), str(STUB_DIR)))
        except Exception:  # noqa: BLE001 - libclang raises on odd include records
            pass
        return out

    def rewrite_user_headers(self, parsed: ParsedFile) -> bool:
        """Apply the position-keeping rewrites to the user's headers; True when one changed."""
        from . import nvcc_compat

        changed = False
        try:
            includes = list(parsed.tu.get_includes())
        except Exception:  # noqa: BLE001
            return False
        for inc in includes:
            if inc.include is None:
                continue
            name = os.path.abspath(inc.include.name)
            if (
                name == self.abs_path
                or name in self.header_texts
                or not parsed.is_user_file(name)
                or _under(name, str(STUB_DIR))
            ):
                continue
            from ..safe_io import read_regular

            try:
                text = read_regular(name, MAX_FILE_BYTES).decode("utf-8", errors="replace")
            except OSError:
                continue
            new, changes = nvcc_compat.rewrite(text)
            if changes:
                self.header_texts[name] = new
                changed = True
        return changed
