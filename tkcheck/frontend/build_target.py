"""The architecture and the TK build macros of a file's parse, settled before its first parse.

A file is parsed once, for the build its own code and the headers it is given ask for, never by
parsing it again for another arch or other macros and keeping whichever gives fewer errors (a
file whose errors come from elsewhere, e.g. host code against missing PyTorch headers, was parsed
three times for nothing):

* arch: with none configured, code (comments and strings blanked) that names what only Blackwell
  has (TMEM tiles and their allocator, tcgen05, cluster launch control, the sm_100 number
  formats) is parsed for sm_100a, unless the real ThunderKittens headers given have no Blackwell
  code at all (`KITTENS_BLACKWELL` appears in none of them): then sm_90a, the only build they have.
* `KITTENS_HOPPER` next to `KITTENS_BLACKWELL`: ThunderKittens before 2.0 built its Blackwell
  kernels with both defined (the TMA, gl and semaphore code sat under `KITTENS_HOPPER` alone);
  2.0 tests `defined(KITTENS_HOPPER) || defined(KITTENS_BLACKWELL)` for what both share. The
  headers' own conditions tell which: when their lone `KITTENS_HOPPER` tests outnumber the tests
  naming both macros, a Blackwell parse defines both.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

# Names only Blackwell code uses (see the module docstring)
BLACKWELL_MARKERS = re.compile(r"\btt\s*<|\btensor_allocator\b|\btm_allocator\b|\btcgen05\b|\bclc::|\be8m0|\bfp4e2m1")
_CONDITION = re.compile(r"^[ \t]*#[ \t]*(?:if|elif|ifdef|ifndef)\b(.*)$", re.M)
_HEADER_SUFFIXES = (".cuh", ".h", ".hpp", ".cu")
MAX_HEADERS = 4000  # a TK tree has a few hundred; a larger folder is not read whole


@dataclass(frozen=True)
class TkBuildMacros:
    """What a real ThunderKittens tree's conditional compilation says about its builds."""

    has_blackwell: bool  # some header tests KITTENS_BLACKWELL
    lone_hopper_tests: int  # conditions naming KITTENS_HOPPER and not KITTENS_BLACKWELL
    shared_tests: int  # conditions naming both

    @property
    def blackwell_needs_hopper(self) -> bool:
        return self.has_blackwell and self.lone_hopper_tests > self.shared_tests


@dataclass(frozen=True)
class BuildTarget:
    arch: str
    extra_defines: tuple[str, ...] = ()
    note: str | None = None  # told to the user when a macro was added


def uses_blackwell(code: str) -> bool:
    """Whether code (comments and strings already blanked) names what only Blackwell has."""
    return bool(BLACKWELL_MARKERS.search(code))


def tk_build_macros(tk_dirs: tuple[str, ...]) -> TkBuildMacros:
    """The build macros the headers under `tk_dirs` test (read as text). Memoised per process by
    the headers' names, sizes and modification times: a header edited while a long-lived process
    (the language server) runs is read again."""
    headers = _headers(tk_dirs)
    return _scan(tuple(headers))


def _headers(tk_dirs: tuple[str, ...]) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for root in tk_dirs:
        for folder, dirs, files in os.walk(root, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                if not name.endswith(_HEADER_SUFFIXES) or len(out) >= MAX_HEADERS:
                    continue
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                out.append((path, st.st_size, st.st_mtime_ns))
    return out


@lru_cache(maxsize=8)
def _scan(headers: tuple[tuple[str, int, int], ...]) -> TkBuildMacros:
    from ..safe_io import read_regular
    from .includes import MAX_HEADER_BYTES

    has_bw = False
    lone = shared = 0
    for path, _, _ in headers:
        try:
            text = read_regular(path, MAX_HEADER_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for m in _CONDITION.finditer(text):
            cond = m.group(1)
            hopper, blackwell = "KITTENS_HOPPER" in cond, "KITTENS_BLACKWELL" in cond
            has_bw = has_bw or blackwell
            if hopper and blackwell:
                shared += 1
            elif hopper:
                lone += 1
    return TkBuildMacros(has_bw, lone, shared)


def settle(code: str, arch: str, arch_auto: bool, tk_dirs: tuple[str, ...], defines: tuple[str, ...]) -> BuildTarget:
    """The arch and the macros added for one file's parse; `code` has comments and strings blanked."""
    from .parse import BLACKWELL_ARCH, is_blackwell

    macros = tk_build_macros(tk_dirs) if tk_dirs else None
    if arch_auto and uses_blackwell(code) and (macros is None or macros.has_blackwell):
        arch = BLACKWELL_ARCH
    if (
        is_blackwell(arch)
        and macros is not None
        and macros.blackwell_needs_hopper
        and not any(d.split("=")[0] == "KITTENS_HOPPER" for d in defines)
    ):
        return BuildTarget(
            arch,
            ("KITTENS_HOPPER",),
            "KITTENS_HOPPER defined next to KITTENS_BLACKWELL, as ThunderKittens before 2.0 builds its "
            f"Blackwell kernels (these headers test KITTENS_HOPPER alone {macros.lone_hopper_tests} times, "
            f"with KITTENS_BLACKWELL {macros.shared_tests} times)",
        )
    return BuildTarget(arch)
