"""The parsed ThunderKittens headers, kept across runs: a precompiled header under the cache.

Parsing TK's headers is most of a check's parse (about 0.5 s of 0.55 s for a GEMM with the real
headers). A file whose first lines are only `#include`s of TK headers (kittens.cuh,
prototype.cuh, pyutils/...) and of system headers gets those includes from a precompiled header
(a libclang translation unit of just those lines, saved), built once per set of includes, parse
flags and header contents and reused by every later parse (`-include-pch`).

Soundness: the precompiled includes must be exactly what the file itself would include first,
with nothing before them that could change their meaning, so a file qualifies only when its
text before the last precompiled include is comments, blank lines, `#pragma once` and those
includes (no `#define`, no `#if`, no user header). The key covers the include lines, every
parse flag (arch, defines, include folders, TK folders, clang arguments) and the tool's version;
clang itself records every header the precompiled header read and rejects it when one has
changed (then it is built again). Only used with a cache folder: `--no-cache` writes nothing.
A precompiled header is used only when its MAC (keyed by the user's secret, tkcheck/cache_io.py)
checks: one a repository planted in `.tkcheck_cache/pch/` is rebuilt, never loaded.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from pathlib import Path

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]\s*(?://.*|/\*.*\*/\s*)?$')
_SKIP = re.compile(r"^\s*(?://.*|#\s*pragma\s+once\s*|)$")
TK_HEADERS = ("kittens.cuh", "prototype.cuh")
TK_HEADER_DIRS = ("pyutils/",)
PCH_FORMAT = "2"  # bump when what goes into a precompiled header (or how it is built) changes


def prefix_includes(text: str) -> list[str] | None:
    """The include lines a precompiled header may stand for (see the module docstring), or None.
    Stops at the first line that is not a comment, a blank, `#pragma once` or an include; the
    includes taken are the leading ones of TK headers and system (<...>) headers, and at least
    one TK header must be among them."""
    out: list[str] = []
    in_block = False
    for line in text.splitlines():
        s = line.strip()
        if in_block:
            if "*/" in s:
                in_block = False
                s = s[s.index("*/") + 2 :].strip()
                if not s:
                    continue
            else:
                continue
        if s.startswith("/*"):
            if "*/" not in s:
                in_block = True
                continue
            s = s[s.index("*/") + 2 :].strip()
        if _SKIP.match(s):
            continue
        m = _INCLUDE.match(s)
        if not m:
            break
        kind, name = m.group(1), m.group(2)
        tk = name in TK_HEADERS or any(name.startswith(d) for d in TK_HEADER_DIRS)
        if kind == '"' and not tk:
            break  # a user header: it may define what TK's headers read
        out.append(f'#include {kind}{name}{">" if kind == "<" else chr(34)}')
    if not any(any(h in line for h in TK_HEADERS) for line in out):
        return None
    # up to the last TK include: system headers after it are the file's own business
    last = max(i for i, line in enumerate(out) if any(h in line for h in TK_HEADERS + TK_HEADER_DIRS))
    return out[: last + 1]


def key_of(includes: list[str], args: list[str], version: str, libclang: str) -> str:
    h = hashlib.sha256()
    for part in [PCH_FORMAT, version, libclang, *includes, "\0", *args]:
        h.update(part.encode("utf-8", errors="replace"))
        h.update(b"\0")
    return h.hexdigest()[:32]


MAX_PCH_BYTES = 1 << 30


def _mac_material(key: str, data: bytes) -> bytes:
    return f"tkcheck-pch:{PCH_FORMAT}:{key}\0".encode() + data


def verified(pch_dir: str, key: str) -> bool:
    """Whether `pch_dir/<key>.pch` is a regular file (no link) that this user's tkcheck built: its
    MAC (tkcheck/cache_io.py, keyed by the per-user secret) is in `<key>.pch.mac` beside it. A
    precompiled header planted by a repository is never handed to clang."""
    from .. import cache_io

    stamp = _stamp(pch_dir, key)
    if stamp is not None and stamp in _VERIFIED:
        return True
    base, part = os.path.split(os.path.normpath(pch_dir))
    tag = cache_io.read_file(base, (part,), f"{key}.pch.mac", 256)
    if tag is None:
        return False
    data = cache_io.read_file(base, (part,), f"{key}.pch", MAX_PCH_BYTES)
    ok = data is not None and cache_io.mac_ok(_mac_material(key, data), tag.decode("ascii", "replace"))
    if ok and stamp is not None and stamp == _stamp(pch_dir, key):
        if len(_VERIFIED) > 64:
            _VERIFIED.clear()
        _VERIFIED.add(stamp)
    return ok


# the precompiled headers this process authenticated, by their files' identity (device, inode,
# size, modification time of the header and of its MAC): a worker that checks many files with one
# header reads and hashes it once (a TK header is tens of MB), not once per file; a header
# replaced or rewritten since has another identity and is authenticated again
_VERIFIED: set[tuple] = set()


def _stamp(pch_dir: str, key: str) -> tuple | None:
    out: list = [os.path.abspath(pch_dir), key]
    for name in (f"{key}.pch", f"{key}.pch.mac"):
        try:
            st = os.lstat(os.path.join(pch_dir, name))
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        out += [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    return tuple(out)


def build(pch_dir: str, key: str, includes: list[str], args: list[str], unsaved, index) -> str | None:
    """The precompiled header for `key`, built if absent or not authenticated (None when it cannot
    be built or saved). Every file goes through tkcheck/cache_io.py: no folder or entry is
    followed through a link, each is written through a new temporary file and a rename."""
    from .. import cache_io

    folder = Path(pch_dir)
    target = folder / f"{key}.pch"
    if verified(pch_dir, key):
        return str(target)
    if cache_io.secret() is None:
        return None
    base, part = os.path.split(os.path.normpath(pch_dir))
    text = "\n".join(includes) + "\n"
    if not cache_io.write_file(base, (part,), f"{key}.cuh", text.encode("utf-8")):
        return None  # a link in the way, or an unwritable folder
    tmp = folder / f".{key}.{secrets.token_hex(8)}.tmp"
    try:
        # PARSE_INCOMPLETE: a header, to be completed by the file that includes it; the detailed
        # preprocessing record as the file's own parse has it (libclang refuses a mismatch)
        from .includes import MAX_HEADER_BYTES, MAX_TOTAL_INCLUDE_BYTES
        from .open_guard import ParseGuard

        guard = ParseGuard(MAX_HEADER_BYTES, MAX_TOTAL_INCLUDE_BYTES, exempt_dirs=(pch_dir,))
        with guard:  # what the precompiled header reads is bounded as a parse is (open_guard.py)
            tu = index.parse(
                str(folder / f"{key}.cuh"),
                args=list(args) + ["-Xclang", "-fallow-pch-with-compiler-errors"],
                unsaved_files=unsaved,
                options=0x01 | 0x02 | 0x200,
            )
            tu.save(str(tmp))  # clang writes a temporary of its own beside it and renames it over tmp
        if guard.violation:
            return None  # the file's own parse meets the same include and says so
        data = cache_io.read_file(base, (part,), tmp.name, MAX_PCH_BYTES)
        tag = cache_io.mac(_mac_material(key, data)) if data is not None else None
        if tag is None:
            return None
        os.replace(tmp, target)  # atomic: parallel checks never read half a file
        if not cache_io.write_file(base, (part,), f"{key}.pch.mac", tag.encode("ascii")):
            return None
    except Exception:  # noqa: BLE001 - no precompiled header is a slower parse, never an error
        return None
    finally:
        cache_io.remove_file(base, (part,), tmp.name)
    return str(target)


# (path, inode, size, mtime, folders) -> whether the header read only files under the folders:
# a pure function of the file, which is authenticated before it is used (`verified`)
_READS_ONLY: dict[tuple, bool] = {}


def reads_only(pch_file: str, folders: tuple[str, ...], index) -> bool:
    """Whether every file the precompiled header `pch_file` read (its include tree, as libclang
    lists it from the saved header) lies under one of `folders`; False when that cannot be told.
    Remembered per file version for the process (a worker checks many files with one header)."""
    try:
        st = os.stat(pch_file)
    except OSError:
        return False
    key = (pch_file, st.st_ino, st.st_size, st.st_mtime_ns, folders)
    known = _READS_ONLY.get(key)
    if known is not None:
        return known
    roots = [os.path.abspath(f).rstrip(os.sep) + os.sep for f in folders]
    try:
        import clang.cindex as ci

        tu = ci.TranslationUnit.from_ast_file(pch_file, index)
        names = [inc.include.name for inc in tu.get_includes() if inc.include is not None]
        ok = bool(names) and all(os.path.abspath(n).startswith(tuple(roots)) for n in names)
    except Exception:  # noqa: BLE001 - not known: the parse lists every declaration, as before
        ok = False
    if len(_READS_ONLY) > 64:
        _READS_ONLY.clear()
    _READS_ONLY[key] = ok
    return ok


def rejected(diagnostics) -> bool:
    """clang refused the precompiled header (a header changed since it was built, other flags), or
    the parse met what libclang 18 gets wrong across one: the global allocation functions clang
    declares implicitly in CUDA mode are lost (`no matching function for call to 'operator
    new[]'`). Either way the file is parsed again without it, so results never depend on it."""
    return any(
        "precompiled header" in d.spelling
        or "PCH file" in d.spelling
        or "AST file" in d.spelling
        or "'operator new" in d.spelling
        or "'operator delete" in d.spelling
        for d in diagnostics
    )


_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def user_code_allocates(text: str, main_dir: str, include_dirs, blank) -> bool:
    """Whether the file or a user header it includes (quoted includes, found beside the including
    file or on the -I path, read as text, not followed into TK's headers) has a new/delete
    expression: libclang 18 mishandles those across a precompiled header."""
    seen: set[str] = set()
    todo = [(text, main_dir, 0)]
    while todo:
        src, here, depth = todo.pop()
        if uses_allocation(blank(src)):
            return True
        if depth >= 8:
            continue
        for name in _QUOTED_INCLUDE.findall(src):
            if name in TK_HEADERS or any(name.startswith(d) for d in TK_HEADER_DIRS):
                continue
            for d in (here, *include_dirs):
                path = os.path.normpath(os.path.join(d, name))
                if os.path.isfile(path):
                    if path not in seen and len(seen) < 200:
                        seen.add(path)
                        try:
                            if os.path.getsize(path) <= 2_000_000:
                                with open(path, "rb") as fh:
                                    todo.append(
                                        (fh.read().decode("utf-8", errors="replace"), os.path.dirname(path), depth + 1)
                                    )
                        except OSError:
                            pass
                    break
    return False


_ALLOCATION = re.compile(r"\b(?:new|delete)\b(?!\s*;)")


def uses_allocation(code: str) -> bool:
    """A new/delete expression in the file's code (comments and strings blanked): libclang 18
    crashes or loses the allocation functions across a precompiled header, so none is used."""
    return any(
        not re.search(r"operator\s*$", code[max(0, m.start() - 12) : m.start()]) for m in _ALLOCATION.finditer(code)
    )
