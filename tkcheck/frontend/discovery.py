"""What the user's code names, read from the syntax tree of the whole translation unit.

One walk over the user's declarations (the main file and the user's headers it includes, in the
order the compiler reads them) lists every reference to a declaration by the referenced name,
with the reference's parent, so discovery asks the tree, never the text:

* `refs(name)`: the references spelled `name` (a launch `k<3><<<...>>>`, `auto f = k<3>`,
  `cudaLaunchKernelEx(&cfg, k<3>, ...)`, a launcher's argument) with whether the reference is
  the callee of a `<<<...>>>` launch;
* `prototype_launches()`: the uses of TK's prototype templates (`lcf::kernel<S>`,
  `lcsc::main_kernel<config, globals, S>`, `lcsc::launch_kernel<...>`, `interpreter::kernel<config,
  op...>`, `interpreter::run<...>`, TK's first `pc<S>`), wherever they are written: the template,
  the user's struct it runs (its declaration, from the specialization's arguments) and, for lcsc,
  the config and globals types;
* `explicit_instantiations()`: `template __global__ void k<7, 1>(int);`, which libclang does not
  expose as a cursor: read from clang's own token stream of the user's files (not the text).

The walk keeps its own stack (no recursion), so code nested thousands of levels deep is walked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from ..findings import Location

CK = ci.CursorKind
REF_KINDS = (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF, CK.MEMBER_REF_EXPR, CK.TEMPLATE_REF)
PROTOTYPE_TEMPLATES = ("lcf", "lcsf", "lcsc", "pc", "interpreter")
# the functions of each template that launch it or are its kernel
_PROTOTYPE_ENTRIES = {"kernel", "main_kernel", "launch_kernel", "run"}


@dataclass
class Ref:
    cursor: Any  # the reference
    launch: bool  # the callee of a `<<<...>>>` launch
    file: str  # absolute path of the file it is written in
    # the expression that spells the reference with its template arguments: the reference, or
    # its parent where the name alone is a child (a dependent `k<W>` in a template)
    spelled: Any = None
    call: Any = None  # the `operator()` call whose object this reference is (a lambda's call)


@dataclass
class PrototypeLaunch:
    kind: str  # lcf | lcsf | lcsc | pc | interpreter
    struct: Any  # the user's template struct (None for interpreter)
    site: Location
    config: Any = None  # lcsc: the config struct; interpreter: the config type
    globals_: Any = None  # lcsc: the globals struct
    ops: list[str] = field(default_factory=list)  # interpreter: the ops as written


def semantic_namespaces(cursor) -> tuple[str, ...]:
    """The namespaces a declaration sits in, outermost first."""
    out = []
    p = cursor.semantic_parent
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.kind == CK.NAMESPACE:
            out.append(p.spelling)
        p = p.semantic_parent
    return tuple(reversed(out))


class UserCode:
    """The user's declarations of one translation unit and the references in them."""

    def __init__(self, parsed, top_level: list, in_user_code, filename: str):
        self.parsed = parsed
        self.filename = filename  # the main file as the user named it (findings' locations)
        self.decls = [c for c in top_level if in_user_code(c)]
        self._by_name: dict[str, list[Ref]] = {}
        self.using_namespaces: set[str] = set()  # `using namespace ...::lcsf;` (last component)
        # generic lambdas held by a variable (`auto go = [&](auto tag) {...}`): (lambda, variable)
        self.generic_lambdas: list[tuple[Any, str]] = []
        self.nodes = 0
        self.launches: list[Any] = []  # the `k<<<...>>>(...)` call expressions, in walk order
        self._walk()

    def _walk(self) -> None:
        # preorder with an explicit stack; a node knows whether it is (inside) a launch's callee
        stack: list[tuple[Any, bool, Any, Any]] = [(c, False, None, None) for c in reversed(self.decls)]
        by_name = self._by_name
        while stack:
            node, callee, parent, call = stack.pop()
            self.nodes += 1
            kind = node.kind
            if kind in REF_KINDS:
                f = node.location.file
                spelled = (
                    parent if parent is not None and parent.kind == CK.DECL_REF_EXPR and not parent.spelling else node
                )
                by_name.setdefault(node.spelling, []).append(
                    Ref(node, callee, os.path.abspath(f.name) if f is not None else "", spelled, call)
                )
            elif kind == CK.LAMBDA_EXPR and parent is not None and parent.kind == CK.VAR_DECL:
                if any(_is_auto_param(p) for p in node.get_children() if p.kind == CK.PARM_DECL):
                    self.generic_lambdas.append((node, parent.spelling))
            elif kind == CK.USING_DIRECTIVE:
                for ch in node.get_children():
                    if ch.kind == CK.NAMESPACE_REF:
                        self.using_namespaces.add(ch.spelling)
            kids = list(node.get_children())
            launch = kind == CK.CALL_EXPR and any(
                k.kind == CK.CALL_EXPR and k.spelling == "cudaConfigureCall" for k in kids[1:]
            )
            if launch:
                self.launches.append(node)
            lambda_call = node if kind == CK.CALL_EXPR and node.spelling == "operator()" else None
            for i in range(len(kids) - 1, -1, -1):
                # the callee of `k<<<...>>>(...)` is its first child; so is the object of `go(...)`
                stack.append(
                    (
                        kids[i],
                        (launch and i == 0) or (callee and kind != CK.CALL_EXPR),
                        node,
                        lambda_call
                        if lambda_call is not None and i == 0
                        else (call if kind == CK.UNEXPOSED_EXPR else None),
                    )
                )

    def refs(self, name: str) -> list[Ref]:
        return self._by_name.get(name, [])

    def lambda_calls(self, variable: str) -> list[list[Any]]:
        """The argument expressions of every call `variable(args...)` of a lambda variable."""
        out = []
        for r in self.refs(variable):
            call = r.call
            if call is None:
                continue
            kids = list(call.get_children())
            # operator() call: the object, the operator's reference, then the arguments
            args = [k for k in kids[1:] if not (k.spelling == "operator()" and k.kind == CK.UNEXPOSED_EXPR)]
            out.append(args)
        return out

    def location(self, cursor) -> Location:
        loc = cursor.location
        f = loc.file
        fname = self.filename
        if f is not None and os.path.abspath(f.name) != self.parsed.abs_path:
            fname = f.name
        return Location(fname, max(loc.line, 1), max(loc.column, 1))

    # -- TK's prototype templates ------------------------------------------------
    def prototype_launches(self) -> list[PrototypeLaunch]:
        out: list[PrototypeLaunch] = []
        for name in sorted(_PROTOTYPE_ENTRIES | {"pc"}):
            for r in self.refs(name):
                got = self._prototype_at(name, r.cursor)
                if got is not None:
                    out.append(got)
        return out

    def _prototype_at(self, name: str, cur) -> PrototypeLaunch | None:
        target = cur.referenced
        if target is None:
            return None
        ns = semantic_namespaces(target)
        if name == "pc":
            kind = "pc" if "prototype" in ns else None
        else:
            kind = ns[-1] if ns and ns[-1] in PROTOTYPE_TEMPLATES else None
        if kind is None:
            return None
        types = _type_args(cur)
        site = self.location(cur)
        if kind == "interpreter":
            from .instances import _angle_args
            from .walk_env import tokens_of

            toks = tokens_of(cur)
            i = toks.index("<") if "<" in toks else None
            got = _angle_args(toks, i) if i is not None else None
            if got is None or len(got[0]) < 2:
                return None
            ops = [" ".join(_joined(a)) for a in got[0][1:]]
            return PrototypeLaunch(kind, None, site, ops=ops)
        if not types:
            return None
        if kind == "lcsc" or name == "launch_kernel":
            # lcsc::main_kernel<config, globals, S>, lcsc::launch_kernel<config, globals, S>,
            # lcf::launch_kernel<..., S>: the struct is the last argument
            struct = types[-1]
            if kind == "lcsc":
                if len(types) != 3:
                    return None
                return PrototypeLaunch(kind, struct, site, config=types[0], globals_=types[1])
            return PrototypeLaunch(kind, struct, site)
        return PrototypeLaunch(kind, types[0], site)

    # -- explicit instantiations (no cursor in libclang) ------------------------------
    def explicit_instantiations(self, names: set[str]) -> list[tuple[str, list[str], Location, str]]:
        """(name, tokens after the name, location, file) of every `template ... NAME <...> (...)`
        without a parameter list (an explicit instantiation) in the user's files: clang's tokens."""
        out = []
        seen_files: set[str] = set()
        for d in self.decls:
            f = d.location.file
            if f is None:
                continue
            path = os.path.abspath(f.name)
            if path in seen_files:
                continue
            seen_files.add(path)
            tu = self.parsed.tu
            try:
                file = tu.get_file(f.name)
                size = os.path.getsize(f.name) if path != self.parsed.abs_path else len(self.parsed.text.encode())
                ext = tu.get_extent(file.name, (0, size))
                toks = [t for t in tu.get_tokens(extent=ext) if t.kind != ci.TokenKind.COMMENT]
            except Exception:  # noqa: BLE001 - an unreadable file has no instantiation to read
                continue
            sp = [t.spelling for t in toks]
            for i, t in enumerate(sp):
                if t != "template" or (i + 1 < len(sp) and sp[i + 1] == "<"):
                    continue
                # `template [specifiers] type NAME < ... > (` up to the first `<`
                j = i + 1
                while j < len(sp) and sp[j] not in ("<", ";", "{", "(") and j - i < 12:
                    j += 1
                if j >= len(sp) or sp[j] != "<" or sp[j - 1] not in names:
                    continue
                loc = toks[j - 1].location
                out.append((sp[j - 1], sp[j : j + 400], self.location_of(loc), path))
        return out

    def location_of(self, loc) -> Location:
        f = loc.file
        fname = self.filename
        if f is not None and os.path.abspath(f.name) != self.parsed.abs_path:
            fname = f.name
        return Location(fname, loc.line, loc.column)


def _joined(toks: list[str]) -> list[str]:
    """Tokens of a type as the user wrote it, `::` and `<`/`>` glued: `ns::op<16>`."""
    s = ""
    for t in toks:
        if s and (t in ("::", "<", ">", ",", ">>") or s.endswith(("::", "<"))):
            s += t
        else:
            s += (" " if s else "") + t
    return [s]


def _type_args(cur) -> list:
    """The declarations of the type arguments a template reference names, in order: from the
    specialization libclang resolved, else from the reference's type children."""
    out = []
    target = cur.referenced
    try:
        n = target.get_num_template_arguments()
    except Exception:  # noqa: BLE001
        n = -1
    for i in range(max(n, 0)):
        try:
            if target.get_template_argument_kind(i) != ci.TemplateArgumentKind.TYPE:
                out = []
                break
            decl = target.get_template_argument_type(i).get_canonical().get_declaration()
        except Exception:  # noqa: BLE001 - packs, declarations: not reported by libclang
            out = []
            break
        if decl is None or decl.kind == CK.NO_DECL_FOUND:
            out = []
            break
        out.append(decl)
    if out:
        return out
    return [k.referenced for k in cur.get_children() if k.kind == CK.TYPE_REF and k.referenced is not None]


def _is_auto_param(p) -> bool:
    """A lambda parameter declared `auto` (a generic lambda's)."""
    return (
        any(ch.kind == CK.TYPE_REF and ch.spelling == "auto" for ch in p.get_children())
        or "auto" in (p.type.spelling or "").split()
    )
