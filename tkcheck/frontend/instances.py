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
import re
from dataclasses import dataclass, field

import clang.cindex as ci

from ..findings import Location
from ..knowledge.launchers import LAUNCHERS, Launcher
from .lexer import blank_comments_and_strings, lex

CK = ci.CursorKind
_REF_KINDS = (CK.DECL_REF_EXPR, CK.OVERLOADED_DECL_REF, CK.MEMBER_REF_EXPR, CK.TEMPLATE_REF)


@dataclass(frozen=True)
class TemplateArg:
    """One template argument: an integer, a type (canonical spelling), or tokens to evaluate."""

    kind: str  # int | type | tokens
    value: object  # int | str | tuple[str, ...]

    def show(self) -> str:
        if self.kind == "tokens":
            return " ".join(self.value)
        return str(self.value).replace("kittens::", "")


@dataclass(frozen=True)
class HostContext:
    """A kernel named inside a host function template (`template <bool P> void dispatch() {
    using C = config<..., P>; kernel<C><<<...>>>(); }`): one instantiation of that function,
    whose arguments and local type aliases give the kernel's template arguments their values."""

    function: object  # the host FUNCTION_TEMPLATE cursor
    args: tuple[TemplateArg, ...]  # its template arguments in this instantiation
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


def _semantic_namespaces(cursor) -> tuple[str, ...]:
    out = []
    p = cursor.semantic_parent
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.kind == CK.NAMESPACE:
            out.append(p.spelling)
        p = p.semantic_parent
    return tuple(reversed(out))


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

    def __init__(self, parsed, kernel_templates: list, header_kernels: list, device_functions: dict):
        self.parsed = parsed
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

    def texts(self):
        """(absolute path, text) of the main file and the user's headers it includes."""
        yield self.parsed.abs_path, self.parsed.text
        seen = {self.parsed.abs_path}
        try:
            includes = list(self.tu.get_includes())
        except Exception:  # noqa: BLE001
            includes = []
        for inc in includes:
            if inc.include is None:
                continue
            name = os.path.abspath(inc.include.name)
            if name in seen or not self.parsed.is_user_file(name):
                continue
            seen.add(name)
            text = self.parsed.user_texts.get(name)
            if text is None:
                try:
                    if os.path.getsize(name) > 2_000_000:
                        continue
                    with open(name, "rb") as fh:
                        text = fh.read().decode("utf-8", errors="replace")
                except OSError:
                    continue
            yield name, text

    def find(self) -> Discovery:
        out = Discovery()
        names = {c.spelling for c in self.templates} | {c.spelling for c in self.header_kernels}
        watch = names | set(LAUNCHERS)
        if not watch:
            return out
        pat = re.compile(r"\b(" + "|".join(sorted(map(re.escape, watch), key=len, reverse=True)) + r")\b")
        seen: dict[tuple, KernelInstance] = {}
        for fname, text in self.texts():
            file = self.tu.get_file(fname)
            if file is None:
                continue
            for m in pat.finditer(blank_comments_and_strings(text)):
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                loc = Location(self.parsed.path if fname == self.parsed.abs_path else fname, line, col)
                try:
                    cur = ci.Cursor.from_location(self.tu, self.tu.get_location(file.name, (line, col)))
                except Exception:  # noqa: BLE001
                    continue
                name = m.group(1)
                for inst in self._at(name, cur, text, m.end(), loc):
                    seen.setdefault(inst.key(), inst)
        out.instances = list(seen.values())
        hit = {inst.cursor.hash for inst in out.instances}
        for t in self.templates:
            if t.hash not in hit and _same_file(t, self.parsed.abs_path):
                out.uninstantiated.append((t, "template kernel never instantiated in this file"))
        return out

    # -- one occurrence of a watched name ------------------------------------
    def _at(self, name, cur, text, end, loc):
        if cur is None:
            return []
        if name in LAUNCHERS and cur.kind in _REF_KINDS:
            return self._launcher(LAUNCHERS[name], cur, loc)
        target = self._kernel_named(name)
        if target is None:
            return []
        if cur.kind in _REF_KINDS:
            ref = cur.referenced
            kernel = next((k for k in target if ref is not None and _same_decl(k, ref)), None)
            if kernel is None and ref is not None and ref.kind == CK.FUNCTION_DECL:
                kernel = next((k for k in target if k.spelling == ref.spelling and _is_template(k)), None)
            if kernel is None:
                kernel = target[0] if len(target) == 1 else None
            if kernel is None:
                return []
            if not _is_template(kernel):
                return [KernelInstance(kernel, (), loc, "reference")]
            how = "launch" if re.match(r"\s*(<[^;]*?>)?\s*<<<", text[end : end + 400]) else "reference"
            # inside a host function template the cursor at a location may be any one of that
            # function's instantiations: read the tokens and evaluate them per instantiation
            host = self._enclosing_host_template(loc)
            args = clang_args(ref) if host is None and ref is not None and ref.kind == CK.FUNCTION_DECL else None
            if args is not None:
                return [KernelInstance(kernel, args, loc, how)]
            args = self._token_args(text, end)
            if args is None:
                return []
            if host is None:
                return [KernelInstance(kernel, args, loc, how)]
            # named inside a host function template: one instance per instantiation of it
            return [
                KernelInstance(kernel, args, loc, how, context=HostContext(host, hargs, loc.row))
                for hargs in self._instances_of_host(host)
            ]
        # `template __global__ void k<7, 1>(int);`: no cursor, read the tokens
        before = text[max(0, loc_offset(text, loc) - 200) : loc_offset(text, loc)]
        if re.search(r"\btemplate\s+(?:(?:__global__|__device__|__host__|static|inline|void|extern)\s+)*$", before):
            kernel = next((k for k in target if _is_template(k)), None)
            args = self._token_args(text, end)
            if kernel is not None and args is not None:
                return [KernelInstance(kernel, args, loc, "explicit")]
        return []

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
        pat = re.compile(r"\b" + re.escape(host.spelling) + r"\s*<")
        for fname, text in self.texts():
            file = self.tu.get_file(fname)
            if file is None:
                continue
            for m in pat.finditer(blank_comments_and_strings(text)):
                line = text.count("\n", 0, m.start()) + 1
                col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
                try:
                    cur = ci.Cursor.from_location(self.tu, self.tu.get_location(file.name, (line, col)))
                except Exception:  # noqa: BLE001
                    continue
                ref = cur.referenced if cur is not None and cur.kind in _REF_KINDS else None
                args = (
                    clang_args(ref)
                    if ref is not None and ref.kind == CK.FUNCTION_DECL and ref.spelling == host.spelling
                    else None
                )
                if args is None and (cur is None or cur.kind not in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE)):
                    # unresolved (a host signature with types tkcheck has no stand-in for): tokens
                    args = self._token_args(text, m.end() - 1)
                if args and args not in out:
                    out.append(args)
        self._host_instances[host.hash] = out
        return out

    def _kernel_named(self, name):
        out = [c for c in self.templates if c.spelling == name]
        out += [c for c in self.header_kernels if c.spelling == name]
        return out or None

    def _token_args(self, text, end) -> tuple[TemplateArg, ...] | None:
        toks = lex(text[end : end + 2000])
        got = _angle_args(toks, 0)
        if got is None:
            return None
        args, _ = got
        return tuple(
            TemplateArg("int", int(a[0], 0))
            if len(a) == 1 and re.fullmatch(r"\d+|0[xX][0-9a-fA-F]+", a[0])
            else TemplateArg("tokens", tuple(a))
            for a in args
        )

    def _launcher(self, launcher: Launcher, cur, loc) -> list[KernelInstance]:
        ref = cur.referenced
        if ref is None or ref.kind not in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE):
            return []
        ns = _semantic_namespaces(ref)
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


def loc_offset(text: str, loc: Location) -> int:
    off = 0
    for _ in range(loc.row - 1):
        off = text.index("\n", off) + 1
    return off + loc.column - 1


def _same_file(cursor, abs_path: str) -> bool:
    f = cursor.location.file
    return f is not None and os.path.abspath(f.name) == abs_path
