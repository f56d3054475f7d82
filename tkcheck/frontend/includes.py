"""Before libclang reads a file's includes: every file it would open must be a regular, bounded file.

libclang reads `#include "/dev/zero"` until memory runs out, blocks on a FIFO,
and reads the terminal for `#include "/dev/stdin"`. This scan follows the
includes the way clang's search does (the includer's folder for quoted names,
then -iquote, -I, -isystem, -idirafter folders in order; absolute names as
they are), takes the first candidate that exists as clang would, and refuses
the parse with an InputError when that candidate is a FIFO, a device or a
socket, or larger than the limit, or when all included files together pass
the total limit. It recurses into every user header it finds (not into
tkcheck's own declaration model).

The scan reads directives from the text (comments removed); a computed
`#include MACRO` is followed when MACRO is an object-like macro of the files
scanned or of the -D values, naming a header. One that cannot be resolved this
way is left to libclang (the checking process then still has its time limit
and reads no terminal).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from ..safe_io import NotReadable, kind_of, read_regular

MAX_HEADER_BYTES = 8_000_000  # one included file
MAX_TOTAL_INCLUDE_BYTES = 96_000_000  # everything one parse includes
MAX_HEADERS = 20_000

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_DIRECTIVE = re.compile(r'^[ \t]*#[ \t]*(include|include_next|import|define)\b[ \t]*(.*)$', re.M)
_HEADER_NAME = re.compile(r'^\s*(?:"([^"\n]+)"|<([^>\n]+)>)')
_IDENT = re.compile(r"^\s*([A-Za-z_]\w*)\s*$")


class IncludeError(Exception):
    """An include that must not be read; the message names the includer, the line and the file."""


@dataclass
class SearchPath:
    quote: list[str] = field(default_factory=list)  # -iquote
    angle: list[str] = field(default_factory=list)  # -I, then -isystem, then -idirafter
    forced: list[str] = field(default_factory=list)  # -include / -imacros files
    defines: dict[str, str] = field(default_factory=dict)


def search_path_of(args: list[str], cwd: str) -> SearchPath:
    """The include search of a clang argument list (only what decides which file is opened)."""
    sp = SearchPath()
    dash_i: list[str] = []
    system: list[str] = []
    after: list[str] = []
    i = 0

    def take(flag: str) -> str | None:
        nonlocal i
        a = args[i]
        if a == flag and i + 1 < len(args):
            i += 1
            return args[i]
        if a.startswith(flag) and len(a) > len(flag):
            v = a[len(flag) :]
            return v[1:] if v.startswith("=") else v
        return None

    while i < len(args):
        a = args[i]
        for flag, target in (
            ("-iquote", sp.quote),
            ("-isystem", system),
            ("-idirafter", after),
            ("-include", sp.forced),
            ("-imacros", sp.forced),
            ("-I", dash_i),
            ("--include-directory", dash_i),
        ):
            if a.startswith(flag):
                v = take(flag)
                if v is not None:
                    target.append(v if os.path.isabs(v) or target is sp.forced else os.path.join(cwd, v))
                break
        else:
            if a.startswith("-D"):
                v = a[2:] if len(a) > 2 else (args[i + 1] if i + 1 < len(args) else "")
                if len(a) == 2:
                    i += 1
                name, _, value = v.partition("=")
                if "(" not in name:
                    sp.defines[name] = value or "1"
        i += 1
    sp.angle = dash_i + system + after
    return sp


def _directives(text: str):
    """(line, kind, rest) of each #include / #define, outside comments."""

    def blank(m):  # keep strings (header names are in quotes) and line numbers
        t = m.group()
        return t if t[0] in "\"'" else "\n" * t.count("\n") + " "

    text = text.replace("\\\r\n", "").replace("\\\n", "")
    clean = _COMMENT_OR_STRING.sub(blank, text)
    for m in _DIRECTIVE.finditer(clean):
        yield clean.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)


class _Scan:
    def __init__(self, sp: SearchPath, skip_dirs: tuple[str, ...]):
        self.sp = sp
        self.skip = tuple(os.path.normpath(d) + os.sep for d in skip_dirs)
        self.seen: set[str] = set()
        self.total = 0
        self.macros = dict(sp.defines)

    def resolve(self, name: str, angled: bool, includer_dir: str) -> str | None:
        if os.path.isabs(name):
            cands = [name]
        else:
            dirs = ([] if angled else [includer_dir] + self.sp.quote) + self.sp.angle
            cands = [os.path.join(d, name) for d in dirs]
        for c in cands:
            try:
                st = os.stat(c)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                continue  # clang looks further
            return c
        return None

    def header_name(self, rest: str) -> tuple[str, bool] | None:
        for _ in range(8):
            m = _HEADER_NAME.match(rest)
            if m:
                return (m.group(1), False) if m.group(1) is not None else (m.group(2), True)
            m = _IDENT.match(rest)
            if not m or m.group(1) not in self.macros:
                return None
            rest = self.macros[m.group(1)]
        return None

    def file(self, path: str, text: str):
        for line, kind, rest in _directives(text):
            if kind == "define":
                m = re.match(r"([A-Za-z_]\w*)(?!\()\s*(.*)", rest)
                if m:
                    self.macros[m.group(1)] = m.group(2).strip()
                continue
            found = self.header_name(rest)
            if found is None:
                continue
            name, angled = found
            target = self.resolve(name, angled, os.path.dirname(path))
            if target is not None:
                self.visit(
                    target, f"{path}:{line}: #{kind} {'<' if angled else chr(34)}{name}{'>' if angled else chr(34)}"
                )

    def visit(self, target: str, why: str):
        key = os.path.realpath(target)
        if key in self.seen:
            return
        self.seen.add(key)
        if len(self.seen) > MAX_HEADERS:
            raise IncludeError(f"{why}: more than {MAX_HEADERS} included files")
        try:
            st = os.stat(target)
        except OSError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise IncludeError(
                f"{why} names {target}, which is {kind_of(st.st_mode)}, not a regular file; "
                "tkcheck reads only regular files"
            )
        if st.st_size > MAX_HEADER_BYTES:
            raise IncludeError(
                f"{why} names {target} of {st.st_size} bytes; tkcheck reads included files "
                f"up to {MAX_HEADER_BYTES} bytes"
            )
        self.total += st.st_size
        if self.total > MAX_TOTAL_INCLUDE_BYTES:
            raise IncludeError(f"{why}: the included files pass {MAX_TOTAL_INCLUDE_BYTES} bytes in all")
        if key.startswith(self.skip) or os.path.normpath(target).startswith(self.skip):
            return
        try:
            data = read_regular(target, MAX_HEADER_BYTES)
        except NotReadable as e:
            raise IncludeError(f"{why} names {target}: {e}") from None
        self.file(target, data.decode("utf-8", errors="replace"))


def check_includes(main_path: str, text: str, args: list[str], *, cwd: str, trusted_dirs: tuple[str, ...] = ()) -> None:
    """Raise IncludeError when the parse would open a non-regular or oversized file.

    `trusted_dirs`: folders whose headers are tkcheck's own (checked, not scanned).
    """
    sp = search_path_of(args, cwd)
    scan = _Scan(sp, trusted_dirs)
    scan.seen.add(os.path.realpath(main_path))
    for forced in sp.forced:
        target = scan.resolve(forced, False, cwd)
        if target is not None:
            scan.visit(target, f"-include {forced}")
    scan.file(main_path, text)


__all__ = ["IncludeError", "check_includes", "search_path_of", "MAX_HEADER_BYTES"]
