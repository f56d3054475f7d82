"""Compile one .cu to a cubin, disassemble it with line info, and build the SASS model.

`compile_and_disassemble` never raises on bad input or a missing/broken toolchain:
it returns `Skipped` with a one-line reason.  Results are cached by a hash of
everything that decides them (tool versions, arch, flags, the source bytes and the
bytes of the non-system headers `nvcc -MM` lists). The header list is remembered per
source and command and reused while the folders a header lookup reads keep their
modification times (a header added or removed there, or in the same subfolder of
another -I folder, makes `nvcc -MM` run again).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterable, Sequence

from tkcheck.sass.model import (
    PtxasMessage,
    PtxEntryInfo,
    PtxSetmaxnreg,
    ResourceUsage,
    SassKernel,
    SassResult,
    Skipped,
    SourceLoc,
)
from tkcheck.sass.parse import parse_ptx, parse_ptxas_log, parse_sass
from tkcheck import cache_io
from tkcheck.compiler_options import shell_unsafe
from tkcheck.sass.toolchain import Toolchain, ToolchainNotFound, find_toolchain

DEFAULT_CACHE_DIR = os.path.join(".tkcheck_cache", "sass")
CACHE_SCHEMA = 3
_ARCH = re.compile(r"^sm_\d{2,3}[af]?$")
_MAX_SOURCE_BYTES = 16 * 1024 * 1024


def compile_and_disassemble(
    source_path: str | os.PathLike[str],
    *,
    arch: str = "sm_90a",
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Iterable[str] = (),
    extra_flags: Sequence[str] = (),
    cache_dir: str | os.PathLike[str] | None = DEFAULT_CACHE_DIR,
    toolchain: Toolchain | None = None,
    timeout_s: float = 600.0,
) -> SassResult | Skipped:
    """Build `source_path` for `arch` and return its SASS model, or `Skipped`.

    include_dirs -> `-I`, defines -> `-D` ("NAME" or "NAME=VALUE"), extra_flags are
    passed to nvcc as given (e.g. `-std=c++20`, `--expt-relaxed-constexpr`).
    cache_dir=None disables the cache.
    """
    try:
        return _run(
            Path(source_path),
            arch=arch,
            include_dirs=[str(d) for d in include_dirs],
            defines=[str(d) for d in defines],
            extra_flags=[str(f) for f in extra_flags],
            cache_dir=None if cache_dir is None else Path(cache_dir),
            toolchain=toolchain,
            timeout_s=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:
        return Skipped("timeout", f"SASS pass skipped: {Path(exc.cmd[0]).name} timed out after {exc.timeout:.0f} s")
    except (OSError, UnicodeError, ValueError) as exc:
        return Skipped("bad-input", f"SASS pass skipped: {exc}")
    except Exception as exc:  # never a traceback from an optional pass
        return Skipped("internal-error", f"SASS pass skipped: internal error: {exc!r}"[:400])


def _run(
    src: Path,
    *,
    arch: str,
    include_dirs: list[str],
    defines: list[str],
    extra_flags: list[str],
    cache_dir: Path | None,
    toolchain: Toolchain | None,
    timeout_s: float,
) -> SassResult | Skipped:
    if not _ARCH.match(arch):
        return Skipped("bad-input", f"SASS pass skipped: unsupported arch {arch!r}")
    if not src.is_file():
        return Skipped("bad-input", f"SASS pass skipped: no such file {src}")
    if src.stat().st_size > _MAX_SOURCE_BYTES:
        return Skipped("bad-input", f"SASS pass skipped: {src} is larger than 16 MiB")
    if toolchain is None:
        try:
            toolchain = find_toolchain()
        except ToolchainNotFound as exc:
            return Skipped("no-toolchain", f"SASS pass skipped: {exc}")
    src = src.resolve()
    # nvcc's driver runs its sub-commands through a shell, each argument in double quotes:
    # a path with `$`, a backquote, `\` or `"` would be expanded there, so it never reaches nvcc
    for what, value in [("the source path", str(src))] + [("include folder", d) for d in include_dirs]:
        bad = shell_unsafe(value)
        if bad is not None:
            return Skipped(
                "unsafe-argument",
                f"SASS pass skipped: {what} {value!r} contains {bad!r}, which nvcc's driver would hand to a shell",
            )
    # what decides the result (the cache key); the defines reach nvcc through a generated header
    flags = (
        [f"-arch={arch}", "-lineinfo"]
        + [f"-I{d}" for d in include_dirs]
        + [f"-D{d}" for d in defines]
        + list(extra_flags)
    )
    with tempfile.TemporaryDirectory(prefix="tkcheck-sass-") as tmp:
        if shell_unsafe(tmp) is not None:
            return Skipped(
                "unsafe-argument",
                f"SASS pass skipped: the temporary folder {tmp!r} has characters "
                "nvcc's driver would hand to a shell (set TMPDIR)",
            )
        defines_header = Path(tmp) / "tkcheck_defines.h"
        defines_header.write_text(_defines_header(defines), encoding="utf-8")
        run_flags = (
            [f"-arch={arch}", "-lineinfo"]
            + [f"-I{d}" for d in include_dirs]
            + ["-include", str(defines_header)]
            + list(extra_flags)
        )
        return _compile(
            src,
            arch=arch,
            flags=flags,
            run_flags=run_flags,
            tmp=tmp,
            cache_dir=cache_dir,
            toolchain=toolchain,
            timeout_s=timeout_s,
        )


def _defines_header(defines: list[str]) -> str:
    """`-D` values as #define lines: the same macros, without a command line a shell would read."""
    lines = ["// generated by tkcheck: the -D values of this build"]
    for d in defines:
        name, sep, value = d.partition("=")
        if "\n" in d or "\r" in d:
            raise ValueError(f"define {d!r} spans several lines")
        lines.append(f"#define {name} {value if sep else '1'}")
    return "\n".join(lines) + "\n"


def _compile(
    src: Path,
    *,
    arch: str,
    flags: list[str],
    run_flags: list[str],
    tmp: str,
    cache_dir: Path | None,
    toolchain: Toolchain,
    timeout_s: float,
) -> SassResult | Skipped:
    key = None
    if cache_dir is not None:
        # the header list of the last build, while nothing it depends on has changed, saves the
        # `nvcc -MM` run (most of a warm hit's time); otherwise ask nvcc again
        deps = _recorded_dependencies(cache_dir, toolchain, src, arch, flags)
        cached = None
        if deps is not None:
            key = _cache_key(toolchain, src, arch, flags, deps)
            cached = _cache_load(cache_dir, key, src, arch)
        if cached is None:
            deps = [
                d
                for d in _dependencies(toolchain, src, run_flags, timeout_s)
                if not d.startswith(str(Path(tmp).resolve()))
            ]
            key = _cache_key(toolchain, src, arch, flags, deps)
            cached = _cache_load(cache_dir, key, src, arch)
            _record_dependencies(cache_dir, toolchain, src, arch, flags, deps)
        if cached is not None:
            return cached

    cubin = Path(tmp) / "kernel.cubin"
    cmd = [toolchain.nvcc, "-cubin", *run_flags, "-Xptxas", "-v", "-keep", "-keep-dir", tmp, "-o", str(cubin), str(src)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout_s)
    compile_s = time.perf_counter() - t0
    log = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode != 0 or not cubin.is_file():
        first = next(
            (l for l in log.splitlines() if "error" in l.lower()), log.strip().splitlines()[0] if log.strip() else ""
        )
        return Skipped(
            "compile-failed", f"SASS pass skipped: nvcc failed for {arch}: {first.strip()}"[:400], detail=log
        )
    ptx_text = ""
    for p in sorted(Path(tmp).glob("*.ptx")):
        ptx_text += p.read_text(errors="replace") + "\n"
    t1 = time.perf_counter()
    sass, disassembler, err = _disassemble(toolchain, cubin, timeout_s)
    disasm_s = time.perf_counter() - t1
    if sass is None:
        return Skipped("disassembly-failed", f"SASS pass skipped: {err}"[:400], detail=err)

    payload = {
        "schema": CACHE_SCHEMA,
        "sass": sass,
        "ptxas_log": log,
        "ptx": _ptx_to_json(parse_ptx(ptx_text)),
        "disassembler": disassembler,
        # as the user would type it: the defines as -D, not the generated header's temporary path
        "command": [Path(cmd[0]).name, "-cubin", *flags, "-Xptxas", "-v", str(src)],
        "compile_seconds": compile_s,
        "disassemble_seconds": disasm_s,
    }
    names = [f.name for f in parse_sass(sass)]
    payload["demangled"] = toolchain.demangle(names)
    result = _build(payload, src, arch, cache_hit=False)
    if cache_dir is not None and key is not None:
        _cache_store(cache_dir, key, payload)
    return result


def _disassemble(tc: Toolchain, cubin: Path, timeout_s: float) -> tuple[str | None, str, str]:
    errors = []
    if tc.nvdisasm:
        for opts in (["-gi", "-c"], ["-g", "-c"], ["-c"]):
            proc = subprocess.run(
                [tc.nvdisasm, *opts, str(cubin)], capture_output=True, text=True, errors="replace", timeout=timeout_s
            )
            if proc.returncode == 0 and proc.stdout.strip():
                return proc.stdout, "nvdisasm " + " ".join(opts), ""
            errors.append((proc.stderr or "").strip().splitlines()[:1])
    if tc.cuobjdump:
        proc = subprocess.run(
            [tc.cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, errors="replace", timeout=timeout_s
        )
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout, "cuobjdump -sass (no line information)", ""
        errors.append((proc.stderr or "").strip().splitlines()[:1])
    msg = "; ".join(e[0] for e in errors if e) or "no disassembler output"
    return None, "", f"disassembly failed: {msg}"


def _build(payload: dict, src: Path, arch: str, *, cache_hit: bool) -> SassResult:
    report = parse_ptxas_log(payload.get("ptxas_log", ""))
    ptx = _ptx_from_json(payload.get("ptx", {}))
    demangled = payload.get("demangled", {}) or {}
    kernels: dict[str, SassKernel] = {}
    for raw in parse_sass(payload.get("sass", "")):
        if not raw.is_entry or raw.name in kernels:
            continue
        kernels[raw.name] = SassKernel(
            mangled=raw.name,
            demangled=demangled.get(raw.name),
            arch=arch,
            instructions=raw.instructions,
            resources=report.resources.get(raw.name, ResourceUsage()),
            ptx=ptx.get(raw.name),
        )
    return SassResult(
        source_path=str(src),
        arch=arch,
        kernels=dict(sorted(kernels.items())),
        messages=report.messages,
        ptxas_log=payload.get("ptxas_log", ""),
        command=tuple(payload.get("command", ())),
        cache_hit=cache_hit,
        compile_seconds=float(payload.get("compile_seconds", 0.0)),
        disassemble_seconds=float(payload.get("disassemble_seconds", 0.0)),
        disassembler=payload.get("disassembler", ""),
    )


# ---------------------------------------------------------------------------- cache


def _dependencies(tc: Toolchain, src: Path, flags: list[str], timeout_s: float) -> list[str]:
    """Non-system headers of `src` per `nvcc -MM` (empty when that fails)."""
    try:
        proc = subprocess.run(
            [tc.nvcc, "-MM", *flags, str(src)], capture_output=True, text=True, errors="replace", timeout=timeout_s
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode != 0:
        return []
    text = proc.stdout.replace("\\\n", " ")
    _, _, rest = text.partition(":")
    deps = []
    for tok in rest.split():
        p = Path(tok)
        try:
            if p.is_file() and p.resolve() != src:
                deps.append(str(p.resolve()))
        except OSError:
            continue
    return sorted(set(deps))


def _digest(path: str | Path) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return "missing"
    return h.hexdigest()


def _cache_key(tc: Toolchain, src: Path, arch: str, flags: list[str], deps: list[str]) -> str:
    material = {
        "schema": CACHE_SCHEMA,
        "tools": tc.version_id,
        "disassembler": bool(tc.nvdisasm),
        "arch": arch,
        "flags": flags,
        "source": str(src),
        "source_digest": _digest(src),
        "deps": [(d, _digest(d)) for d in deps],
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _dir_stamps(src: Path, flags: list[str], deps: list[str]) -> list[tuple[str, int]]:
    """Modification times of the folders a header lookup reads: the source's, every -I folder,
    every recorded header's, and, for a header found under one -I folder, the same subfolder under
    every other -I folder (where a new header of that name would shadow it; -1 while it does not
    exist). A header added to or removed from one of them changes its stamp."""
    roots = [Path(f[2:]).resolve() for f in flags if f.startswith("-I")]
    dirs = {str(src.parent)} | {str(r) for r in roots} | {str(Path(d).parent) for d in deps}
    for d in deps:
        for r in roots:
            try:
                rel = Path(d).parent.relative_to(r)
            except ValueError:
                continue
            dirs |= {str(other / rel) for other in roots}
    out = []
    for d in sorted(dirs):
        try:
            out.append((d, os.stat(d).st_mtime_ns))
        except OSError:
            out.append((d, -1))
    return out


MAX_CACHE_ENTRY_BYTES = 64 * 1024 * 1024


def _index_key(tc: Toolchain, src: Path, arch: str, flags: list[str]) -> str:
    material = {
        "schema": CACHE_SCHEMA,
        "tools": tc.version_id,
        "arch": arch,
        "flags": flags,
        "source": str(src),
        "source_digest": _digest(src),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _recorded_dependencies(cache_dir: Path, tc: Toolchain, src: Path, arch: str, flags: list[str]) -> list[str] | None:
    """The headers `nvcc -MM` listed for this exact source and command, while every folder a header
    lookup reads is as it was then; None: unknown (ask nvcc). Entries are read and written through
    tkcheck/cache_io.py (no link followed, regular files of bounded size, authenticated)."""
    key = _index_key(tc, src, arch, flags)
    rec = cache_io.read_json(cache_dir, ("deps",), f"{key}.json", "sass-deps", key, MAX_CACHE_ENTRY_BYTES)
    if not isinstance(rec, dict):
        return None
    try:
        deps = [str(d) for d in rec["deps"]]
        if [tuple(x) for x in rec["dirs"]] != _dir_stamps(src, flags, deps):
            return None
        return deps
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _record_dependencies(
    cache_dir: Path, tc: Toolchain, src: Path, arch: str, flags: list[str], deps: list[str]
) -> None:
    key = _index_key(tc, src, arch, flags)
    record = {"deps": deps, "dirs": _dir_stamps(src, flags, deps)}
    cache_io.write_json(cache_dir, ("deps",), f"{key}.json", "sass-deps", key, record)


def _cache_load(cache_dir: Path, key: str, src: Path, arch: str) -> SassResult | None:
    payload = cache_io.read_json(cache_dir, (key[:2],), f"{key}.json", "sass", key, MAX_CACHE_ENTRY_BYTES)
    try:
        if not isinstance(payload, dict) or payload.get("schema") != CACHE_SCHEMA:
            return None
        return _build(payload, src, arch, cache_hit=True)
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return None


def _cache_store(cache_dir: Path, key: str, payload: dict) -> None:
    cache_io.write_json(cache_dir, (key[:2],), f"{key}.json", "sass", key, payload)  # only costs time when not


def _ptx_to_json(info: dict[str, PtxEntryInfo]) -> dict:
    out = {}
    for name, e in info.items():
        out[name] = {
            "maxntid": list(e.maxntid) if e.maxntid else None,
            "minnctapersm": e.minnctapersm,
            "maxnreg": e.maxnreg,
            "setmaxnreg": [
                {"action": s.action, "count": s.count, "chain": [[l.file, l.line] for l in s.inline_chain]}
                for s in e.setmaxnreg
            ],
        }
    return out


def _ptx_from_json(data: dict) -> dict[str, PtxEntryInfo]:
    out = {}
    for name, e in (data or {}).items():
        out[name] = PtxEntryInfo(
            maxntid=tuple(e["maxntid"]) if e.get("maxntid") else None,
            minnctapersm=e.get("minnctapersm"),
            maxnreg=e.get("maxnreg"),
            setmaxnreg=tuple(
                PtxSetmaxnreg(
                    action=s["action"],
                    count=s.get("count"),
                    inline_chain=tuple(SourceLoc(f, int(l)) for f, l in s["chain"]),
                )
                for s in e.get("setmaxnreg", [])
            ),
        )
    return out


__all__ = ["compile_and_disassemble", "DEFAULT_CACHE_DIR", "PtxasMessage"]
