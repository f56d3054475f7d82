"""Which kernels a clang error stops.

A clang error in the user's code stops the analysis of the kernels whose code it is in:
the kernel's own body, a device function the kernel reaches (by name, transitively), or a
declaration at file scope (a type alias, a struct of tiles: any kernel may use it). An error
inside a host-only function (a harness's `main`, a PyTorch binding) stops nothing: kernels are
device code, and host code is not analysed. Errors clang recovers from the way nvcc reads the
code (`nvcc_compat.RECOVERED_ERRORS`) are not errors here at all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import clang.cindex as ci

from .parse import Diagnostic, ParsedFile, top_level

CK = ci.CursorKind

_FUNCTION_KINDS = (
    CK.FUNCTION_DECL,
    CK.FUNCTION_TEMPLATE,
    CK.CXX_METHOD,
    CK.CONSTRUCTOR,
    CK.DESTRUCTOR,
    CK.CONVERSION_FUNCTION,
)
_SCOPE_KINDS = (
    CK.NAMESPACE,
    CK.STRUCT_DECL,
    CK.CLASS_DECL,
    CK.CLASS_TEMPLATE,
    CK.LINKAGE_SPEC,
    CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
    CK.UNION_DECL,
)

HOST, DEVICE, GLOBAL, DECL = "host", "device", "global", "decl"
_DECL_KINDS = (
    CK.STRUCT_DECL,
    CK.CLASS_DECL,
    CK.CLASS_TEMPLATE,
    CK.TYPE_ALIAS_DECL,
    CK.TYPEDEF_DECL,
    CK.TYPE_ALIAS_TEMPLATE_DECL,
    CK.ENUM_DECL,
    CK.UNION_DECL,
    CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
)


@dataclass
class FunctionSpan:
    """A function with a body, a host function's declaration, a host variable at namespace
    scope, or a named type declaration (struct, alias): the code an error inside it belongs to."""

    name: str
    space: str  # host | device | global | decl (a type: it stops the kernels using it)
    file: str  # absolute path
    start: tuple[int, int]
    end: tuple[int, int]
    cursor: object

    def contains(self, file: str, line: int, col: int) -> bool:
        return file == self.file and self.start <= (line, col) <= self.end

    def size(self) -> tuple[int, int]:
        return (self.end[0] - self.start[0], self.end[1] - self.start[1])


@dataclass
class ErrorMap:
    """The user's clang errors, each placed in the function (or file scope) it belongs to."""

    functions: list[FunctionSpan] = field(default_factory=list)
    placed: list[tuple[Diagnostic, FunctionSpan | None]] = field(default_factory=list)  # None: file scope

    def host_errors(self) -> list[Diagnostic]:
        return [d for d, f in self.placed if f is not None and f.space == HOST]

    def unreached(self, blocking_keys: set) -> list[Diagnostic]:
        """Errors in device code or types that stop no kernel."""
        return [d for d, f in self.placed if f is not None and f.space != HOST and id(d) not in blocking_keys]

    def deferred(self, d: Diagnostic) -> bool:
        """An error nvcc makes only when the function template it is in is instantiated (an asm
        string naming an operand it does not have): in a template no kernel reaches, not an
        error of the code nvcc compiles."""
        if not d.message.startswith("invalid operand number in inline asm string"):
            return False
        f = next((f for e, f in self.placed if e is d), None)
        return f is not None and getattr(f.cursor, "kind", None) == CK.FUNCTION_TEMPLATE

    def file_errors(self) -> list[Diagnostic]:
        return [d for d, f in self.placed if f is None]

    def blocking(self, root_cursor, tokens_of) -> list[Diagnostic]:
        """Errors that stop the analysis of the kernel (or template struct) at `root_cursor`:
        file-scope errors, and errors in its own code or in device code it reaches by name."""
        out = list(self.file_errors())
        in_functions = [(d, f) for d, f in self.placed if f is not None and f.space != HOST]
        if not in_functions:
            return out
        root = _span_of(root_cursor)
        reach_names: set[str] = set()
        todo = [root_cursor]
        seen_cursors: set = set()
        by_name: dict[str, list[FunctionSpan]] = {}
        for f in self.functions:
            if f.space != HOST and f.name:
                by_name.setdefault(f.name, []).append(f)
        while todo:
            cur = todo.pop()
            key = (
                cur.extent.start.file.name if cur.extent.start.file else "",
                cur.extent.start.line,
                cur.extent.start.column,
            )
            if key in seen_cursors:
                continue
            seen_cursors.add(key)
            for t in tokens_of(cur):
                if t in by_name and t not in reach_names:
                    reach_names.add(t)
                    todo.extend(f.cursor for f in by_name[t])
        for d, f in in_functions:
            if (root is not None and _inside(f, root)) or f.name in reach_names:
                out.append(d)
        return out


def _span_of(cursor):
    ext = cursor.extent
    if ext.start.file is None:
        return None
    return (os.path.abspath(ext.start.file.name), (ext.start.line, ext.start.column), (ext.end.line, ext.end.column))


def _inside(f: FunctionSpan, root) -> bool:
    file, start, end = root
    return f.file == file and start <= f.start and f.end <= end


def _space(cursor) -> str:
    kinds = {ch.kind for ch in cursor.get_children()}
    if CK.CUDAGLOBAL_ATTR in kinds:
        return GLOBAL
    if CK.CUDADEVICE_ATTR in kinds:
        return DEVICE
    return HOST


def function_spans(parsed: ParsedFile) -> list[FunctionSpan]:
    """Every function with a body in the user's files (namespaces, structs and templates entered);
    computed once per parse."""
    cached = getattr(parsed, "_function_spans", None)
    if cached is not None:
        return cached
    out: list[FunctionSpan] = []
    user_file_cache: dict[str, bool] = {}

    def is_user(name: str) -> bool:
        if name not in user_file_cache:
            user_file_cache[name] = parsed.is_user_file(name)
        return user_file_cache[name]

    def visit(c, depth=0):
        if depth > 64:
            return
        if c.location.is_in_system_header:
            return
        f = c.location.file
        if f is None or not is_user(f.name):
            # a namespace opened in a TK header may hold nothing of the user's: skip it whole
            return
        if c.kind in _FUNCTION_KINDS or c.kind == CK.VAR_DECL:
            kids = list(c.get_children())
            body = any(ch.kind == CK.COMPOUND_STMT for ch in kids)
            space = _space(c)
            if c.kind == CK.VAR_DECL:
                # a variable at namespace scope is host data unless it lives on the device
                dev = {CK.CUDADEVICE_ATTR, CK.CUDASHARED_ATTR, CK.CUDACONSTANT_ATTR}
                if any(ch.kind in dev for ch in kids):
                    return
                space = HOST
            elif not body and space != HOST:
                return
            ext = c.extent
            fname = (ext.start.file or f).name
            out.append(
                FunctionSpan(
                    c.spelling,
                    space,
                    os.path.abspath(fname),
                    (ext.start.line, ext.start.column),
                    (ext.end.line, ext.end.column),
                    c,
                )
            )
            return
        if c.kind in _DECL_KINDS and c.spelling:
            ext = c.extent
            fname = (ext.start.file or f).name
            out.append(
                FunctionSpan(
                    c.spelling,
                    DECL,
                    os.path.abspath(fname),
                    (ext.start.line, ext.start.column),
                    (ext.end.line, ext.end.column),
                    c,
                )
            )
        if c.kind in _SCOPE_KINDS:
            for ch in c.get_children():
                visit(ch, depth + 1)

    for c in top_level(parsed):
        visit(c)
    parsed._function_spans = out
    return out


def place_errors(parsed: ParsedFile) -> ErrorMap:
    errs = parsed.user_errors()
    m = ErrorMap()
    if not errs:
        return m
    m.functions = function_spans(parsed)
    for d in errs:
        loc = d.location
        best = None
        for f in m.functions:
            if f.contains(d.abs_file, loc.row, loc.column) and (best is None or f.size() < best.size()):
                best = f
        m.placed.append((d, best))
    return m
