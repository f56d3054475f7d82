"""Where the kernels of a file are: every instantiation of a template kernel, every function a
TK launcher turns into a kernel, every kernel of a user header that the file uses.

libclang's Python API shows template patterns, not instantiations; the instantiations are
read where the source names them:

* a launch or a reference `k<4, 2><<<...>>>`, `cudaLaunchKernelEx(&cfg, k<2, 3>, ...)`,
  `&k<2, 3>`, `bind_kernel<k<...>>`: the cursor at the name refers to the specialization,
  whose template arguments libclang gives (integers and types, defaults filled in);
* an explicit instantiation `template __global__ void k<7, 1>(int);` (not exposed as a
  cursor): its template arguments are read from the tokens;
* a launcher (`knowledge/launchers.py`: `kittens::py::launch_kernel<Config, Globals, F>`):
  the function F becomes a kernel with the launcher's launch shape.

Each instantiation is proved with its own values. A template kernel that nothing instantiates
is not analysed (and the coverage report says so), never analysed with made-up values.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import clang.cindex as ci

from ..findings import Location
from ..knowledge.launchers import LAUNCHERS, Launcher
from .discovery import semantic_namespaces

CK = ci.CursorKind
_REF_KINDS = (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF, CK.MEMBER_REF_EXPR, CK.TEMPLATE_REF)


@dataclass(frozen=True)
class TemplateArg:
    """One template argument: an integer, a type (canonical spelling), or tokens to evaluate."""

    kind: str  # int | bool | type | tokens
    value: object  # int | bool | str | tuple[str, ...]

    def show(self) -> str:
        if self.kind == "bool":
            return "true" if self.value else "false"
        if self.kind == "tokens":
            return " ".join(self.value)
        return str(self.value).replace("kittens::", "")


@dataclass(frozen=True)
class HostContext:
    """A kernel named inside a host function template (`template <bool P> void dispatch() {
    using C = config<..., P>; kernel<C><<<...>>>(); }`): one instantiation of that function,
    whose arguments and local type aliases give the kernel's template arguments their values."""

    # the host FUNCTION_TEMPLATE cursor, or a generic lambda (LAMBDA_EXPR) held by a variable
    function: object
    # its template arguments in this instantiation (a lambda: the values its `auto` parameters
    # take in one call, `std::integral_constant<int, 64>{}` as 64)
    args: tuple[TemplateArg, ...]
    site_line: int  # aliases declared before this line are in scope

    def key(self) -> tuple:
        return (self.function.hash, self.args)


@dataclass
class KernelInstance:
    cursor: object  # the kernel function (template pattern or plain function)
    args: tuple[TemplateArg, ...]  # template arguments, in parameter order (may be shorter)
    site: Location  # where the file names it
    how: str  # launch | reference | explicit | launcher name
    launcher: Launcher | None = None
    config: TemplateArg | None = None  # the launcher's configuration type
    context: HostContext | None = None  # token arguments are evaluated in this host instantiation
    # a variadic pack's arguments beyond the named parameters stay in `args`

    def key(self) -> tuple:
        loc = self.cursor.location
        return (
            loc.file.name if loc.file else "",
            loc.line,
            loc.column,
            self.args,
            self.launcher.name if self.launcher else None,
            self.config,
            self.context.key() if self.context else None,
        )

    def label(self, name: str) -> str:
        if self.args:
            return f"{name}<{', '.join(a.show() for a in self.args)}>"
        return name


@dataclass
class Discovery:
    instances: list[KernelInstance] = field(default_factory=list)
    # template kernels no instantiation was found for: (cursor, why)
    uninstantiated: list[tuple[object, str]] = field(default_factory=list)


def _is_template(cursor) -> bool:
    return cursor.kind == CK.FUNCTION_TEMPLATE


def _template_params(cursor) -> list:
    return [
        ch
        for ch in cursor.get_children()
        if ch.kind in (CK.TEMPLATE_TYPE_PARAMETER, CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TEMPLATE_PARAMETER)
    ]


def _same_decl(a, b) -> bool:
    la, lb = a.location, b.location
    return (
        la.file is not None
        and lb.file is not None
        and os.path.abspath(la.file.name) == os.path.abspath(lb.file.name)
        and la.line == lb.line
        and la.column == lb.column
    )


def _canonical(t) -> str | None:
    try:
        c = t.get_canonical()
        s = c.spelling
    except Exception:  # noqa: BLE001 - libclang raises on invalid types
        return None
    if not s or "type-parameter" in s or c.kind == ci.TypeKind.INVALID:
        return None
    return s


def clang_args(ref) -> tuple[TemplateArg, ...] | None:
    """The template arguments libclang gives for a referenced specialization, or None when one of
    them is of a kind it does not report (a declaration, a pack)."""
    try:
        n = ref.get_num_template_arguments()
    except Exception:  # noqa: BLE001
        return None
    if n < 0:
        return None
    out = []
    for i in range(n):
        try:
            kind = ref.get_template_argument_kind(i)
        except Exception:  # noqa: BLE001 - "Unknown template argument kind" (packs, declarations)
            return None
        if kind == ci.TemplateArgumentKind.INTEGRAL:
            out.append(TemplateArg("int", int(ref.get_template_argument_value(i))))
        elif kind == ci.TemplateArgumentKind.TYPE:
            s = _canonical(ref.get_template_argument_type(i))
            if s is None:
                return None
            out.append(TemplateArg("type", s))
        else:
            return None
    return tuple(out)


def _angle_args(toks: list[str], i: int) -> tuple[list[list[str]], int] | None:
    """Template argument token lists of `name < a , b >` with toks[i] == '<'; and the index after."""
    if i >= len(toks) or toks[i] != "<":
        return None
    depth, j, cur, args = 0, i, [], []
    paren = 0
    while j < len(toks):
        t = toks[j]
        if t in ("(", "[", "{"):
            paren += 1
        elif t in (")", "]", "}"):
            paren -= 1
        if paren == 0 and t == "<":
            depth += 1
            if depth > 1:
                cur.append(t)
        elif paren == 0 and t in (">", ">>"):
            n = 1 if t == ">" else 2
            if depth - n <= 0:
                if depth - n < 0:  # `>>` closing this list and an outer one
                    pass
                if cur:
                    args.append(cur)
                return args, j + 1
            depth -= n
            cur.append(t)
        elif paren == 0 and depth == 1 and t == ",":
            args.append(cur)
            cur = []
        else:
            cur.append(t)
        j += 1
    return None


class InstanceFinder:
    """Finds the instantiations of one file's kernels (see the module's docstring)."""

    def __init__(self, parsed, code, kernel_templates: list, header_kernels: list, device_functions: dict):
        self.parsed = parsed
        self.code = code  # discovery.UserCode: the user's declarations and the references in them
        self.tu = parsed.tu
        self.templates = kernel_templates  # FUNCTION_TEMPLATE cursors with __global__
        self.header_kernels = header_kernels  # non-template __global__ in user headers
        self.device_functions = device_functions  # name -> [cursors] (functions and templates)
        # host function templates (no __device__/__global__) a kernel may be named in
        self.host_templates = [
            c
            for cs in device_functions.values()
            for c in cs
            if c.kind == CK.FUNCTION_TEMPLATE
            and not any(ch.kind in (CK.CUDAGLOBAL_ATTR, CK.CUDADEVICE_ATTR) for ch in c.get_children())
        ]
        self._host_instances: dict = {}

    def find(self) -> Discovery:
        out = Discovery()
        names = {c.spelling for c in self.templates} | {c.spelling for c in self.header_kernels}
        watch = names | set(LAUNCHERS)
        if not watch:
            return out
        seen: dict[tuple, KernelInstance] = {}
        for name in sorted(watch):
            for ref in self.code.refs(name):
                loc = self.code.location(ref.cursor)
                for inst in self._at(name, ref, loc):
                    seen.setdefault(inst.key(), inst)
        # `template __global__ void k<7, 1>(int);`: no cursor, clang's tokens
        for name, toks, loc, _path in self.code.explicit_instantiations(names):
            target = self._kernel_named(name)
            kernel = next((k for k in target or () if _is_template(k)), None)
            got = _angle_args(toks, 0)
            if kernel is not None and got is not None:
                inst = KernelInstance(kernel, self._normalise(kernel, _token_targs(got[0])), loc, "explicit")
                seen.setdefault(inst.key(), inst)
        out.instances = list(seen.values())
        hit = {inst.cursor.hash for inst in out.instances}
        for t in self.templates:
            if t.hash not in hit and _same_file(t, self.parsed.abs_path):
                out.uninstantiated.append((t, "template kernel never instantiated in this file"))
        return out

    def _normalise(self, kernel, args: tuple[TemplateArg, ...]) -> tuple[TemplateArg, ...]:
        """Arguments of `bool` parameters as `true` / `false` (libclang reports true as -1), so
        that one instantiation reached by a launch and an explicit instantiation is one."""
        params = _template_params(kernel)
        out = []
        for i, a in enumerate(args):
            p = params[i] if i < len(params) else None
            is_bool = (
                p is not None
                and p.kind == CK.TEMPLATE_NON_TYPE_PARAMETER
                and p.type.get_canonical().kind == ci.TypeKind.BOOL
            )
            if is_bool and a.kind == "int":
                a = TemplateArg("bool", bool(a.value))
            elif is_bool and a.kind == "tokens" and a.value in (("true",), ("false",)):
                a = TemplateArg("bool", a.value == ("true",))
            out.append(a)
        return tuple(out)

    # -- one reference to a watched name ------------------------------------
    def _at(self, name, ref, loc):
        cur = ref.cursor
        if name in LAUNCHERS:
            return self._launcher(LAUNCHERS[name], cur, loc)
        target = self._kernel_named(name)
        if target is None:
            return []
        rd = cur.referenced
        kernel = next((k for k in target if rd is not None and _same_decl(k, rd)), None)
        if kernel is None and rd is not None and rd.kind == CK.FUNCTION_DECL:
            kernel = next((k for k in target if k.spelling == rd.spelling and _is_template(k)), None)
        if kernel is None:
            kernel = target[0] if len(target) == 1 and (rd is None or rd.kind == CK.OVERLOADED_DECL_REF) else None
        if kernel is None:
            return []
        if not _is_template(kernel):
            return [KernelInstance(kernel, (), loc, "reference")]
        how = "launch" if ref.launch else "reference"
        lam = self._enclosing_lambda(loc)
        if lam is not None:
            # named inside a generic lambda (`[&](auto tag) { k<decltype(tag)::value><<<...>>>(); }`):
            # one instance per call of the lambda, its `auto` parameters bound to the call's arguments
            written = self._written_args(ref.spelled or cur, cur.spelling)
            if written is None:
                return []
            out = []
            for call_args in self.code.lambda_calls(lam[1]):
                targs = tuple(_constant_of(a) for a in call_args)
                if targs and all(t is not None for t in targs):
                    ctx = HostContext(lam[0], targs, loc.row)
                    out.append(KernelInstance(kernel, self._normalise(kernel, written), loc, how, context=ctx))
            return out
        # inside a host function template the cursor at a location may be any one of that
        # function's instantiations: read the tokens and evaluate them per instantiation
        host = self._enclosing_host_template(loc)
        args = clang_args(rd) if host is None and rd is not None and rd.kind == CK.FUNCTION_DECL else None
        if args is not None:
            return [KernelInstance(kernel, self._normalise(kernel, args), loc, how)]
        args = self._written_args(ref.spelled or cur, cur.spelling)
        if args is None:
            return []
        args = self._normalise(kernel, args)
        if host is None:
            return [KernelInstance(kernel, args, loc, how)]
        # named inside a host function template: one instance per instantiation of it
        return [
            KernelInstance(kernel, args, loc, how, context=HostContext(host, hargs, loc.row))
            for hargs in self._instances_of_host(host)
        ]

    def _enclosing_lambda(self, loc: Location):
        """The innermost generic lambda held by a variable whose body holds `loc`, or None."""
        fname = self.parsed.abs_path if loc.filename == self.parsed.path else os.path.abspath(loc.filename)
        best = None
        for lam, var in self.code.generic_lambdas:
            ext = lam.extent
            if (
                ext.start.file is not None
                and os.path.abspath(ext.start.file.name) == fname
                and (ext.start.line, ext.start.column) <= (loc.row, loc.column) <= (ext.end.line, ext.end.column)
            ):
                if best is None or (ext.start.line, ext.start.column) > (
                    best[0].extent.start.line,
                    best[0].extent.start.column,
                ):
                    best = (lam, var)
        return best

    def _enclosing_host_template(self, loc: Location):
        fname = self.parsed.abs_path if loc.filename == self.parsed.path else os.path.abspath(loc.filename)
        for h in self.host_templates:
            ext = h.extent
            if (
                ext.start.file is not None
                and os.path.abspath(ext.start.file.name) == fname
                and (ext.start.line, ext.start.column) <= (loc.row, loc.column) <= (ext.end.line, ext.end.column)
            ):
                return h
        return None

    def _instances_of_host(self, host) -> list[tuple[TemplateArg, ...]]:
        """The template arguments of every instantiation of a host function template the file
        names (`&dispatch<true>`, `dispatch<false>(...)`), as libclang gives them."""
        if host.hash in self._host_instances:
            return self._host_instances[host.hash]
        out: list = []
        for r in self.code.refs(host.spelling):
            rd = r.cursor.referenced
            args = clang_args(rd) if rd is not None and rd.kind == CK.FUNCTION_DECL else None
            if args is None and (rd is None or rd.kind == CK.OVERLOADED_DECL_REF):
                # unresolved (a host signature with types tkcheck has no stand-in for): as written
                args = self._written_args(r.spelled or r.cursor, r.cursor.spelling)
            if args:
                args = self._normalise(host, args)
            if args and args not in out:
                out.append(args)
        self._host_instances[host.hash] = out
        return out

    def _kernel_named(self, name):
        out = [c for c in self.templates if c.spelling == name]
        out += [c for c in self.header_kernels if c.spelling == name]
        return out or None

    def _written_args(self, cur, name: str | None = None) -> tuple[TemplateArg, ...] | None:
        """The template arguments a reference spells (`k<4, N * 2>`), from its tokens."""
        from .walk_env import tokens_of

        toks = tokens_of(cur)
        if "<" not in toks:
            # a reference inside a macro's argument (`CUDACHECK(cudaFuncSetAttribute(k<C>, ...))`)
            # has no extent of its own: clang's tokens from the name on
            toks = self._tokens_at(cur, name or cur.spelling)
        i = toks.index("<") if "<" in toks else None
        got = _angle_args(toks, i) if i is not None and i <= 4 else None
        return _token_targs(got[0]) if got is not None else None

    def _tokens_at(self, cur, name: str) -> list[str]:
        loc = cur.location
        if loc.file is None:
            return []
        try:
            size = os.path.getsize(loc.file.name)
            ext = self.tu.get_extent(loc.file.name, (loc.offset, min(loc.offset + 2000, size)))
            toks = [t.spelling for t in self.tu.get_tokens(extent=ext) if t.kind != ci.TokenKind.COMMENT]
        except Exception:  # noqa: BLE001 - an unreadable file: nothing spelled
            return []
        # the location of a reference in a macro's argument is the macro's: from the name on
        j = next((j for j in range(len(toks) - 1) if toks[j] == name and toks[j + 1] == "<"), None)
        return toks[j:] if j is not None else []

    def _launcher(self, launcher: Launcher, cur, loc) -> list[KernelInstance]:
        ref = cur.referenced
        if ref is None or ref.kind not in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE):
            return []
        ns = semantic_namespaces(ref)
        if launcher.namespaces and tuple(ns[-len(launcher.namespaces) :]) != launcher.namespaces:
            return []
        # the launcher's template arguments as written: TYPE_REF / DECL_REF children of the reference
        kids = [k for k in cur.get_children() if k.kind not in (CK.NAMESPACE_REF,)]
        type_args = [k for k in kids if k.kind == CK.TYPE_REF]
        fn_args = [k for k in kids if k.kind in (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF, CK.UNEXPOSED_EXPR)]
        config = None
        if launcher.config_arg is not None:
            try:
                s = _canonical(ref.get_template_argument_type(launcher.config_arg))
            except Exception:  # noqa: BLE001
                s = None
            if s is None and len(type_args) > launcher.config_arg:
                s = _canonical(type_args[launcher.config_arg].type)
            if s is None:
                return []
            config = TemplateArg("type", s)
        if not fn_args:
            return []
        karg = fn_args[0]
        kref = karg.referenced
        if kref is not None and kref.kind == CK.FUNCTION_DECL:
            cands = [
                c
                for c in self.device_functions.get(kref.spelling, []) + self.templates + self.header_kernels
                if _same_decl(c, kref) or (c.spelling == kref.spelling and _is_template(c))
            ]
            kernel = next(iter(cands), None)
            args = clang_args(kref) if kernel is not None and _is_template(kernel) else ()
        else:
            fname = (kref.spelling if kref is not None else "") or karg.spelling
            cands = [c for c in self.device_functions.get(fname, []) if _is_template(c)]
            cands += [c for c in self.templates if c.spelling == fname]
            kernel = cands[0] if len(cands) == 1 else None
            args = self._ref_args(karg)
        if kernel is None or args is None:
            return []
        if not launcher.device_kernel and not any(ch.kind == CK.CUDAGLOBAL_ATTR for ch in kernel.get_children()):
            return []
        return [
            KernelInstance(
                kernel,
                tuple(args),
                loc,
                launcher.name,
                launcher=launcher if launcher.device_kernel else None,
                config=config,
            )
        ]

    def _ref_args(self, karg) -> tuple[TemplateArg, ...] | None:
        """`ns::kernel<C, 4>` as a launcher's argument: types from the TYPE_REF children
        (canonical, so a host function's local `using C = ...` is seen through), the rest tokens."""
        from .walk_env import tokens_of

        toks = tokens_of(karg)
        i = toks.index("<") if "<" in toks else None
        if i is None:
            return ()
        got = _angle_args(toks, i)
        if got is None:
            return None
        spelled, _ = got
        trefs = {}
        for k in karg.get_children():
            if k.kind == CK.TYPE_REF:
                s = _canonical(k.type)
                if s is not None:
                    trefs[k.spelling.split()[-1].split("::")[-1]] = s
        out = []
        for a in spelled:
            key = a[-1] if a else ""
            if len(a) >= 1 and key in trefs and all(t in ("::", "typename") or t.isidentifier() for t in a):
                out.append(TemplateArg("type", trefs[key]))
            else:
                out.append(TemplateArg("tokens", tuple(a)))
        return tuple(out)


def _constant_of(arg) -> TemplateArg | None:
    """A generic lambda's argument as the value its `auto` parameter stands for: the constant of
    a `std::integral_constant<T, v>` (any class whose last template argument is a literal:
    `std::bool_constant<true>`), else its type."""
    from .lexer import lex

    s = _canonical(arg.type)
    if s is None:
        return None
    toks = lex(s)
    if "<" in toks:
        got = _angle_args(toks, toks.index("<"))
        if got is not None and got[0] and got[1] == len(toks) and "integral_constant" in toks:
            last = got[0][-1]
            if last in (["true"], ["false"]):
                return TemplateArg("bool", last == ["true"])
            neg = last[:1] == ["-"]
            lit = last[1:] if neg else last
            if len(lit) == 1 and lit[0].rstrip("uUlL").isdigit():
                v = int(lit[0].rstrip("uUlL"))
                return TemplateArg("int", -v if neg else v)
    return TemplateArg("type", s)


def _int_literal(tok: str) -> int | None:
    """A decimal or hexadecimal integer token's value."""
    if tok.isdigit():
        return int(tok)
    if tok[:2] in ("0x", "0X") and len(tok) > 2 and all(c in "0123456789abcdefABCDEF" for c in tok[2:]):
        return int(tok, 16)
    return None


def _token_targs(args: list[list[str]]) -> tuple[TemplateArg, ...]:
    out = []
    for a in args:
        v = _int_literal(a[0]) if len(a) == 1 else None
        out.append(TemplateArg("int", v) if v is not None else TemplateArg("tokens", tuple(a)))
    return tuple(out)


def _same_file(cursor, abs_path: str) -> bool:
    f = cursor.location.file
    return f is not None and os.path.abspath(f.name) == abs_path
