"""Shared state of the parse-tree walk: environments (scopes of names), contexts, frames, locations, tokens."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from ..findings import Location
from ..model import ir
from .lexer import SourceText, lex


CK = ci.CursorKind
# calls inlined into one another (a recursion is unrolled this deep, and unknown beyond), and
# inlined calls per kernel: past either bound a call is not modelled, and what it may do to
# the barriers it can reach is unknown (never a finding)
MAX_INLINE_DEPTH = 24
MAX_INLINED_CALLS = 5000


# ------------------------------------------------------------------ env ----


class Env:
    def __init__(self, parent: "Env | None" = None, dynamic: "Env | None" = None):
        self.vars: dict[str, Any] = {}
        self.parent = parent
        # the caller's scope of an inlined function: where the fields of the caller's objects
        # (`mks.index`, names with a '.') live when the callee reads or writes them
        self.dynamic = dynamic

    # A BranchEnv on the way up keeps the writes of its branch aside: lookups
    # and assignments from nested scopes must go through it, not around it.
    def lookup(self, name: str):
        e, dyn = self, None
        while e is not None:
            if name in e.vars:
                return e.vars[name]
            if isinstance(e, (BranchEnv, ThisEnv)):
                if dyn is not None and "." in name and not e.has(name):
                    return dyn.lookup(name)  # a caller's object field seen from a method's scope
                return e.lookup(name)
            dyn = dyn or e.dynamic
            e = e.parent
        if dyn is not None and "." in name:
            return dyn.lookup(name)
        return None

    def has(self, name: str) -> bool:
        e, dyn = self, None
        while e is not None:
            if name in e.vars:
                return True
            if isinstance(e, (BranchEnv, ThisEnv)):
                return e.has(name) or (dyn is not None and "." in name and dyn.has(name))
            dyn = dyn or e.dynamic
            e = e.parent
        return dyn is not None and "." in name and dyn.has(name)

    def define(self, name: str, value) -> None:
        self.vars[name] = value

    def assign(self, name: str, value) -> bool:
        e, dyn = self, None
        while e is not None:
            if name in e.vars:
                e.vars[name] = value
                return True
            if isinstance(e, (BranchEnv, ThisEnv)):
                if dyn is not None and "." in name and not e.has(name):
                    return dyn.assign(name, value)
                return e.assign(name, value)
            dyn = dyn or e.dynamic
            e = e.parent
        if dyn is not None and "." in name:
            return dyn.assign(name, value)
        return False

    def child(self) -> "Env":
        return Env(self)


class BranchEnv(Env):
    """The scope of one branch of an `if`: writes to outer variables are kept
    aside so that after the `if` each variable becomes `cond ? then : else`."""

    def __init__(self, parent: Env):
        super().__init__(parent)
        self.writes: dict[str, Any] = {}

    def lookup(self, name: str):
        if name in self.vars:
            return self.vars[name]
        if name in self.writes:
            return self.writes[name]
        return self.parent.lookup(name) if self.parent else None

    def has(self, name: str) -> bool:
        return name in self.vars or name in self.writes or (self.parent is not None and self.parent.has(name))

    def assign(self, name: str, value) -> bool:
        if name in self.vars:
            self.vars[name] = value
            return True
        if self.parent is not None and self.parent.has(name):
            self.writes[name] = value
            return True
        return False


class ThisEnv(Env):
    """The scope of a member function called on a record (`mks.next_instruction()`): the bare
    names of the record's fields are its fields -- scalars read and written as the caller's
    `path.field` variables -- and `this` is the record; other names resolve in the struct."""

    def __init__(self, parent: Env, rec, caller: Env):
        super().__init__(parent)
        self.rec = rec
        self.caller = caller

    def _key(self, name: str):
        if self.rec.path and name in self.rec.scalars:
            key = f"{self.rec.path}.{name}"
            if self.caller.has(key):
                return key
        return None

    def lookup(self, name: str):
        if name in self.vars:
            return self.vars[name]
        if name == "this":
            return self.rec
        k = self._key(name)
        if k is not None:
            return self.caller.lookup(k)
        if name in self.rec.fields:
            return self.rec.fields[name]
        return self.parent.lookup(name) if self.parent else None

    def has(self, name: str) -> bool:
        if name in self.vars or name == "this" or self._key(name) is not None or name in self.rec.fields:
            return True
        return self.parent is not None and self.parent.has(name)

    def assign(self, name: str, value) -> bool:
        if name in self.vars:
            self.vars[name] = value
            return True
        k = self._key(name)
        if k is not None:
            return self.caller.assign(k, value)
        return self.parent.assign(name, value) if self.parent is not None else False


@dataclass
class Ctx:
    env: Env
    guard: ir.Guard
    loops: tuple[int, ...] = ()
    callers: tuple[Location, ...] = ()
    depth: int = 0
    dry: bool = False  # evaluate effects on variables only, emit no ops
    role_hint: str | None = None
    frame: "Frame | None" = None


@dataclass
class Frame:
    """An inlined function call: collects its return value. `records`: records the callee writes
    through (a callback's `args`); `record_returns` gets, at each `return`, the guard and loops
    there and those records' fields as the return leaves them (`walk_inline._merge_record_returns`)."""

    returns: list = field(default_factory=list)
    records: tuple = ()
    record_returns: list = field(default_factory=list)


def loc_of(cursor, filename: str) -> Location:
    ext = cursor.extent
    s, e = ext.start, ext.end
    fname = filename
    if s.file is not None and not _same_file(s.file.name, filename):
        fname = s.file.name
    return Location(fname, max(s.line, 1), max(s.column, 1), max(e.line, 1), max(e.column, 1))


def _same_file(a: str, b: str) -> bool:
    # no cache: a relative name's absolute path depends on the current folder
    import os

    return a == b or os.path.abspath(a) == os.path.abspath(b)


_texts: dict[str, "SourceText | None"] = {}
_unsaved: dict[str, str] = {}


def forget_source_texts() -> None:
    """Forget the texts read so far: each check (a process checks many: a worker, the language
    server) reads the files it includes as they are now."""
    _texts.clear()


def register_text(abs_path: str, text: str) -> None:
    """The text a file was parsed from (the main file comes from memory)."""
    import os

    _texts[os.path.abspath(abs_path)] = SourceText(text)


def _text_for(fname: str) -> "SourceText | None":
    import os

    key = os.path.abspath(fname)
    if key not in _texts:
        from ..safe_io import read_regular

        try:  # a file libclang read: still only a regular file, and bounded
            _texts[key] = SourceText(read_regular(key, 8_000_000).decode("utf-8", errors="replace"))
        except OSError:
            _texts[key] = None
    return _texts[key]


def tokens_of(cursor) -> list[str]:
    """Tokens of a cursor's source range, lexed from the file text. Preprocessor directive lines
    and the code of conditional branches the preprocessor skipped (`#ifdef X ... #else ...`
    inside an initializer or a typedef) are not tokens of the range."""
    ext = cursor.extent
    s, e = ext.start, ext.end
    if s.file is None or e.file is None or s.file.name != e.file.name:
        return [t.spelling for t in cursor.get_tokens() if t.kind != ci.TokenKind.COMMENT]
    src = _text_for(s.file.name)
    if src is None:
        return [t.spelling for t in cursor.get_tokens() if t.kind != ci.TokenKind.COMMENT]
    text = src.slice(s.line, s.column, e.line, e.column)
    if s.line != e.line:
        skipped = _skipped_lines(cursor.translation_unit, s.file.name)
        if skipped and any(ln in skipped for ln in range(s.line, e.line + 1)):
            text = _drop_inactive(text, s.line, skipped)
    return lex(text)


def _drop_inactive(text: str, first_line: int, skipped: frozenset) -> str:
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        if (first_line + i) in skipped:
            lines[i] = " " * len(ln)
    return "\n".join(lines)


_skipped_cache: dict = {}


def _skipped_lines(tu, fname: str) -> frozenset:
    """Lines of `fname` inside conditional branches the preprocessor skipped in this parse."""
    import ctypes
    import os

    key = id(tu)
    entry = _skipped_cache.get(key)
    if entry is None or entry[0] is not tu:
        by_file: dict[str, set] = {}
        try:
            lib = ci.conf.lib

            class _RangeList(ctypes.Structure):
                _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(ci.SourceRange))]

            fn = lib.clang_getAllSkippedRanges
            fn.restype = ctypes.POINTER(_RangeList)
            fn.argtypes = [ctypes.c_void_p]
            lst = fn(tu.obj if hasattr(tu, "obj") else tu._as_parameter_)
            if lst:
                for i in range(lst.contents.count):
                    r = lst.contents.ranges[i]
                    a, b = r.start, r.end
                    if a.file is None:
                        continue
                    by_file.setdefault(os.path.abspath(a.file.name), set()).update(range(a.line, b.line + 1))
                dispose = lib.clang_disposeSourceRangeList
                dispose.argtypes = [ctypes.POINTER(_RangeList)]
                dispose.restype = None
                dispose(lst)
        except Exception:  # noqa: BLE001 - an old libclang without skipped ranges: directives only
            by_file = {}
        if len(_skipped_cache) > 8:
            _skipped_cache.clear()
        entry = (tu, {k: frozenset(v) for k, v in by_file.items()})
        _skipped_cache[key] = entry
    return entry[1].get(os.path.abspath(fname), frozenset())


# ------------------------------------------------------------ the model ----


def _adjacent(macro_cursor) -> bool:
    """True when a macro is function-like: '(' directly after the name."""
    toks = list(macro_cursor.get_tokens())
    if len(toks) < 2:
        return False
    a, b = toks[0].extent.end, toks[1].extent.start
    return a.line == b.line and a.column == b.column


# ----------------------------------------------------------- the walker ----

_THREAD_FUNCS_GROUP = {"laneid", "warpid", "groupid"}
_NAMESPACES = {"kittens", "std", "prototype", "lcf", "lcsf", "lcsc", "interpreter", "ducks", "cute", "cuda"}


def value_names(env: Env):
    """The parser's `is_value` for an expression: a name bound to a type, a struct, an alias, a
    function or a group scope is not a value, so `name<...>` after it is a template-id
    (`wrapper<config, ops...>::run(g)`), never a comparison."""
    from .value_types import Func, GroupScope, StructType, TypeVal

    def is_value(name: str) -> bool:
        v = env.lookup(name)
        if v is None:
            return False
        if isinstance(v, tuple) and v and v[0] in ("alias_decl", "struct_decl"):
            return False
        return not isinstance(v, (StructType, TypeVal, ir.TileType, Func, GroupScope))

    return is_value
