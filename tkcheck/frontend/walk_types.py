"""Types and launch shape: template parameters, struct/tile types, aliases, launch bounds."""

from __future__ import annotations

import re
from typing import Any

from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr
from .lexer import lex
from .value_types import Func, Obj, Rec, StructType, TypeVal
from .walk_env import CK, Env, Ctx, tokens_of, _same_file, _text_for
from .walk_arith import _ArrVal, _split_comma, _split_top
from .explicit_specs import explicit_spec_args
from .walker_core import TypesWalker

_UNDECIDED = object()  # an explicit specialization that may or may not be the one meant


def _values_of(env: Env):
    """For parsing a type: only names bound to values are values (`config<128, P>` is a type
    with the value P, not a comparison)."""
    return lambda name: isinstance(env.lookup(name), Expr)


def _constants_spelled(toks: list[str], consts: dict[str, int | bool]) -> list[str]:
    """Tokens with a generic lambda's constant parameters spelled as their values:
    `decltype(tag)::value`, `tag.value`, `tag()` and `tag` become the constant."""
    if not consts:
        return toks
    out: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "decltype" and toks[i + 1 : i + 2] == ["("] and toks[i + 2 : i + 3] and toks[i + 2] in consts:
            if toks[i + 3 : i + 6] == [")", "::", "value"]:
                out.append(_literal(consts[toks[i + 2]]))
                i += 6
                continue
        if t in consts and (i == 0 or toks[i - 1] not in (".", "->", "::")):
            out.append(_literal(consts[t]))
            i += 1
            if toks[i : i + 2] in ([".", "value"], ["(", ")"]):
                i += 2
            continue
        out.append(t)
        i += 1
    return out


def _literal(v: int | bool) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _show_value(v, arg) -> str:
    """A bound template argument as a kernel's name shows it: `4`, `config<128, 64>`."""
    if isinstance(v, E.Const):
        return str(v.value).lower() if isinstance(v.value, bool) else str(v.value)
    if isinstance(v, StructType):
        vals = []
        for ch in v.cursor.get_children():
            if ch.kind in (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER):
                pv = v.env.vars.get(ch.spelling)
                vals.append(_show_value(pv, arg) if isinstance(pv, (E.Const, StructType)) else "?")
        if vals and "?" not in vals:
            return f"{v.name}<{', '.join(vals)}>"
        return v.name if arg.kind == "tokens" else arg.show()
    t = getattr(v, "spelling", None) or getattr(v, "name", None)
    if arg.kind == "type":
        return arg.show()
    if isinstance(t, str) and t:
        return t.replace("kittens::", "")
    return arg.show()


class TypeResolution:
    """The walker's part for types and launch shape: template parameters, struct and tile types,
    aliases, launch bounds. Its state is the walker's (the struct cache, the template pack, the
    arguments not understood), reached through `TypesWalker`."""

    def __init__(self, walker: TypesWalker):
        self.w = walker

    def bind_template_params(self, c, env: Env, m: ir.KernelModel | None, inst=None):
        """Bind a template kernel's parameters: to the instantiation's arguments (`inst`), else
        to their defaults, else to symbols (a kernel analysed without an instantiation)."""
        folded = []
        shown: list[str] = []  # the instantiation's arguments as its name shows them
        given = list(inst.args) if inst is not None else []
        params = [
            ch
            for ch in c.get_children()
            if ch.kind in (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER, CK.TEMPLATE_TEMPLATE_PARAMETER)
        ]
        # arguments written inside a host function template: evaluated in that instantiation
        aenv = self._host_context_env(inst.context) if inst is not None and inst.context is not None else env
        dctx = Ctx(env=aenv, guard=ir.Guard(), dry=True)
        for i, ch in enumerate(params):
            toks = tokens_of(ch)
            if "..." in toks:
                # a parameter pack takes the remaining arguments
                rest = given[i:]
                pack = tuple(self._template_arg_value(a, ch, aenv, dctx) for a in rest)
                env.define(ch.spelling, pack)
                from ..knowledge import mk

                ops = [v for v in pack if isinstance(v, StructType) and mk.is_op_struct(v)]
                if m is not None and ops:
                    self.w.op_pack = ops
                    shown.append(f"{len(pack)} ops")
                if m is not None:
                    m.template_params[ch.spelling] = None
                given = given[:i]
                break
            if i < len(given):
                v = self._template_arg_value(given[i], ch, aenv, dctx)
                shown.append(_show_value(v, given[i]))
                if v is not None:
                    env.define(ch.spelling, v)
                    if m is not None:
                        m.template_params[ch.spelling] = v if isinstance(v, Expr) else None
                    continue
                # an argument tkcheck cannot evaluate (a name of the enclosing template): this
                # instantiation is not analysed, never analysed with a made-up value
                self.w.unbound_args.append(f"{ch.spelling} = {given[i].show()}")
                continue
            if ch.kind == CK.TEMPLATE_NON_TYPE_PARAMETER:
                default = None
                if "=" in toks:
                    node = cexpr.parse_expression(toks[toks.index("=") + 1 :], env.has)
                    default = self.w.ev(node, dctx)
                if isinstance(default, Expr) and not default.is_opaque():
                    env.define(ch.spelling, default)
                    folded.append(f"{ch.spelling}={default}")
                    if m is not None:
                        m.template_params[ch.spelling] = default
                else:
                    v = E.Var(ch.spelling, E.PARAM)
                    env.define(ch.spelling, v)
                    if m is not None:
                        m.template_params[ch.spelling] = None
            elif ch.kind == CK.TEMPLATE_TYPE_PARAMETER:
                if "=" in toks:
                    node = cexpr.parse_expression(toks[toks.index("=") + 1 :], env.has)
                    t = self.resolve_type(node, env)
                    if t is not None:
                        env.define(ch.spelling, t)
                        folded.append(f"{ch.spelling}={cexpr.render(node)}")
        if folded and m is not None and inst is None:
            m.notes.append(f"template defaults assumed for '{c.spelling}': {', '.join(folded)}")
        if inst is not None and m is not None and inst.args and shown:
            m.name = f"{c.spelling}<{', '.join(shown)}>"
        if inst is not None and m is not None:
            m.instance_site, m.instance_how = inst.site, inst.how
            if inst.args and inst.launcher is None:
                how = {"launch": "launch", "explicit": "explicit instantiation"}.get(inst.how, inst.how)
                where = "" if inst.site.filename == self.w.filename else f" of {inst.site.filename}"
                m.notes.append(
                    f"'{m.name}' analysed with the template arguments of the {how} at line {inst.site.row}{where}"
                )

    def _host_context_env(self, hc) -> Env:
        """The scope of a kernel's name inside one instantiation of a host function template:
        its template parameters bound, then its local type aliases declared before the name."""
        from .instances import KernelInstance

        rewrite: dict[str, int | bool] = {}
        if hc.function.kind == CK.LAMBDA_EXPR:
            # a generic lambda: each `auto` parameter is the constant its call passes
            # (`std::integral_constant<int, 64>{}`: `tag`, `tag.value`, `decltype(tag)::value` are 64)
            henv = self.w.mb.env_for(hc.function).child()
            params = [p for p in hc.function.get_children() if p.kind == CK.PARM_DECL]
            for p, a in zip(params, hc.args):
                if a.kind in ("int", "bool"):
                    henv.define(p.spelling, E.Const(a.value))
                    rewrite[p.spelling] = a.value  # type: ignore[assignment]
                elif a.kind == "type":
                    t = self.resolve_type_spelling(str(a.value), henv)
                    if t is not None:
                        henv.define(p.spelling, t)
        else:
            henv = self.w.mb.env_for(hc.function).child()
            self.bind_template_params(
                hc.function, henv, None, KernelInstance(hc.function, hc.args, self.w.model.location, "context")
            )
        body = next((ch for ch in hc.function.get_children() if ch.kind == CK.COMPOUND_STMT), None)
        for st in body.get_children() if body is not None else ():
            if st.extent.start.line >= hc.site_line:
                break
            if st.kind != CK.DECL_STMT:
                continue
            for d in st.get_children():
                if d.kind == CK.VAR_DECL:
                    # `constexpr int W = WIDE ? 8 : 4;`: a constant of this instantiation
                    toks = _constants_spelled(tokens_of(d), rewrite)
                    if d.spelling in toks and "=" in toks[toks.index(d.spelling) :]:
                        rest = toks[toks.index(d.spelling) :]
                        v = self.w.ev(
                            cexpr.parse_expression(rest[rest.index("=") + 1 :], henv.has),
                            Ctx(env=henv, guard=ir.Guard(), dry=True),
                        )
                        if isinstance(v, Expr) and not v.is_opaque():
                            henv.define(d.spelling, v)
                    continue
                if d.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL):
                    t = self.local_alias(d, henv)
                    if t is not None:
                        henv.define(d.spelling, t)
        return henv

    def local_alias(self, d, env: Env):
        """`using G = globals<C>;` / `typedef ... T;` declared in a function body: the type in the
        scope it is declared in (the instantiation's template arguments bound), else None. Read
        from the file's scope instead (`_alias_target`), a name of the function's template
        parameters is unbound there, and so is everything that depends on it (`G::scales_t`'s
        `B[C::NB]`)."""
        toks = tokens_of(d)
        if d.kind == CK.TYPE_ALIAS_DECL and "=" in toks:
            return self.resolve_type(cexpr.parse_expression(toks[toks.index("=") + 1 :], _values_of(env)), env)
        return self.resolve_type_spelling(d.underlying_typedef_type.spelling, env)

    def _template_arg_value(self, arg, param, env: Env, dctx: Ctx):
        """A TemplateArg as the walker's value for `param`: an Expr, a type, or None."""
        if arg.kind == "int":
            return E.Const(arg.value)
        if arg.kind == "bool":
            return E.Const(bool(arg.value))
        if arg.kind == "type":
            t = self.resolve_type_spelling(arg.value, env)
            return t if t is not None else None
        node = cexpr.parse_expression(
            list(arg.value), _values_of(env) if param.kind != CK.TEMPLATE_NON_TYPE_PARAMETER else env.has
        )
        if param.kind == CK.TEMPLATE_NON_TYPE_PARAMETER:
            v = self.w.ev(node, dctx)
            return v if isinstance(v, Expr) and not v.is_opaque() else None
        return self.resolve_type(node, env)

    def launcher_shape(self, inst, env: Env, m: ir.KernelModel):
        """The launch shape a TK launcher gives the function it runs (knowledge/launchers.py)."""
        L = inst.launcher
        cfg = self.resolve_type_spelling(inst.config.value, env) if inst.config is not None else None
        dctx = Ctx(env=env, guard=ir.Guard(), dry=True)

        def member(name):
            if cfg is None or name is None:
                return None
            v = self.w.exprs.member_static(cfg, name, None, dctx)
            return v if isinstance(v, Expr) and not v.is_opaque() else None

        threads = member(L.threads_member)
        m.launch_bounds = True  # the generated kernel carries __launch_bounds__
        if threads is not None:
            m.block_threads = threads
            m.block_threads_source = f"{inst.config.show()}::{L.threads_member} ({L.name})"
        mb = member(L.min_blocks_member)
        m.min_blocks = mb if mb is not None else E.Const(L.min_blocks_default)
        cl = member(L.cluster_member)
        if cl is not None:
            m.cluster = cl
        m.notes.append(
            f"'{m.name}' analysed as the kernel {L.name} at line {inst.site.row} launches"
            + (
                f" ({m.block_threads_source})"
                if threads is not None
                else f" (block size unknown: {inst.config.show() if inst.config else 'no config'} has no "
                f"{L.threads_member})"
            )
        )

    def _attribute_text(self, c) -> str:
        """The text before the kernel's name, object-like macros expanded
        (`#define BOUNDS __launch_bounds__(256, 1)`)."""
        lines = self.w.mb.lines()
        f = c.extent.start.file
        if f is not None and not _same_file(f.name, self.w.mb.parsed.abs_path or self.w.filename):
            src = _text_for(f.name)  # a kernel of a user header the file includes
            if src is not None:
                lines = src.data.decode("utf-8", errors="replace").splitlines()
        lo = max(0, c.extent.start.line - 4)
        chunk = "\n".join(lines[lo : c.location.line])
        for _ in range(3):
            chunk = re.sub(
                r"[A-Za-z_][A-Za-z_0-9]*",
                lambda mm: " ".join(self.w.mb.macros[mm.group()]) if mm.group() in self.w.mb.macros else mm.group(),
                chunk,
            )
        return chunk

    def has_launch_bounds(self, c) -> bool | None:
        if re.search(r"__launch_bounds__\s*\(", self._attribute_text(c)):
            return True
        # an attribute libclang does not name may still be launch_bounds
        if any(ch.kind == CK.UNEXPOSED_ATTR for ch in c.get_children()):
            return None
        return False

    def cluster_dims(self, c, env) -> Expr | None:
        """`__cluster_dims__(x[, y[, z]])` on the kernel: CTAs per cluster (x * y * z), when constant."""
        chunk = self._attribute_text(c)
        for ch in c.get_children():
            toks = tokens_of(ch)
            if toks[:1] == ["__cluster_dims__"]:
                chunk = " ".join(toks)
        m = None
        for m in re.finditer(r"__cluster_dims__\s*\(", chunk):
            pass
        if m is None:
            return None
        rest = chunk[m.end() :]
        depth, j = 1, 0
        while j < len(rest) and depth:
            depth += {"(": 1, ")": -1}.get(rest[j], 0)
            j += 1
        toks = lex(rest[: j - 1])
        parts = _split_comma(cexpr.parse_expression(toks, env.has))
        total = 1
        for p in parts:
            v = self.w.ev(p, Ctx(env=env, guard=ir.Guard(), dry=True))
            c_ = v.const() if isinstance(v, Expr) else None
            if not isinstance(c_, int) or isinstance(c_, bool) or c_ <= 0:
                return None
            total *= c_
        return E.Const(total)

    def launch_config_cluster(self, c, env) -> Expr | None:
        """The cluster a kernel template is launched in by TK's host launch helper, in the file:
        `LaunchConfig<true, ...> cfg(grid, block, smem, stream, C::CLUSTER_SIZE);` then
        `cudaLaunchKernelEx(cfg, kernel<C>, ...)`. The cluster argument (the minimum cluster of
        the 6-argument form) is read when it is a constant or a member `P::M` of the launch's
        template argument P, evaluated with the kernel's own parameter in P's place. Every such
        launch of the kernel must agree; otherwise None."""
        text = self.w.mb.source()
        name = re.escape(c.spelling)
        params = [
            ch.spelling
            for ch in c.get_children()
            if ch.kind in (CK.TEMPLATE_TYPE_PARAMETER, CK.TEMPLATE_NON_TYPE_PARAMETER)
        ]
        vals = set()
        for mm in re.finditer(
            r"cudaLaunchKernelEx\s*\(\s*&?\s*([A-Za-z_]\w*)\s*,\s*&?\s*" + name + r"\s*(?:<([^;<>()]*)>)?\s*,", text
        ):
            cfg, targs = mm.group(1), [a.strip() for a in (mm.group(2) or "").split(",") if a.strip()]
            decls = list(
                re.finditer(r"LaunchConfig\s*<\s*true\b[^;<>]*>\s*" + re.escape(cfg) + r"\s*\(", text[: mm.start()])
            )
            if not decls:
                return None
            rest = text[decls[-1].end() : mm.start()]
            depth, j = 1, 0
            while j < len(rest) and depth:
                depth += {"(": 1, ")": -1}.get(rest[j], 0)
                j += 1
            args = _split_top(rest[: j - 1])
            if len(args) not in (5, 6):
                return None
            arg = args[-1].strip()
            arg = re.sub(r"^dim3\s*\(\s*([^,()]+)\s*\)$", r"\1", arg)
            mem = re.fullmatch(r"([A-Za-z_]\w*)\s*::\s*([A-Za-z_]\w*)", arg)
            if mem and mem.group(1) in targs and targs.index(mem.group(1)) < len(params):
                arg = f"{params[targs.index(mem.group(1))]}::{mem.group(2)}"
            elif not re.fullmatch(r"\d+", arg):
                return None
            toks = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\d+|::|\S", arg)
            v = self.w.ev(cexpr.parse_expression(toks, env.has), Ctx(env=env, guard=ir.Guard(), dry=True))
            cv = v.const() if isinstance(v, Expr) else None
            if not isinstance(cv, int) or isinstance(cv, bool) or cv <= 0:
                return None
            vals.add(cv)
        return E.Const(vals.pop()) if len(vals) == 1 else None

    def launch_bounds(self, c, env) -> tuple[Expr, Expr | None] | None:
        """`__launch_bounds__(threads, blocks)` before the kernel's name. The
        cursor's extent may start after the attribute, so read the text."""
        chunk = self._attribute_text(c)
        m = None
        for m in re.finditer(r"__launch_bounds__\s*\(", chunk):
            pass
        if m is None:
            return None
        rest = chunk[m.end() :]
        depth, j = 1, 0
        while j < len(rest) and depth:
            depth += {"(": 1, ")": -1}.get(rest[j], 0)
            j += 1
        inner = rest[: j - 1]
        # (C's tokens: `(D == 64) ? 2 : 1` has a `==`, which a one-character split parses as nothing)
        toks = lex(inner)
        node = cexpr.parse_expression(toks, env.has)
        parts = _split_comma(node)
        ctx = Ctx(env=env, guard=ir.Guard(), dry=True)
        n = self.w.ev(parts[0], ctx)
        mb = self.w.ev(parts[1], ctx) if len(parts) > 1 else None
        if isinstance(n, Expr) and not n.is_opaque():
            return n, mb if isinstance(mb, Expr) else None
        return None

    def launch_config_threads(self, kernel) -> int | None:
        """`kernel<<<grid, 384, smem>>>` in the same file: the block size, when constant."""
        vals = set()
        for config in self.w.mb.launch_configs().get(kernel.spelling, ()):
            parts = _split_top(config)
            if len(parts) >= 2:
                tok = parts[1].strip()
                tok = re.sub(r"^dim3\s*\(\s*([^,()]+)\s*\)$", r"\1", tok)
                v = self._fold_text(tok)
                if v is None:
                    return None
                vals.add(v)
        return vals.pop() if len(vals) == 1 else None

    def _fold_text(self, text: str) -> int | None:
        toks = lex(text)
        node = cexpr.parse_expression(toks, self.w.mb.globals_env.has)
        v = self.w.ev(node, Ctx(env=self.w.mb.globals_env, guard=ir.Guard(), dry=True))
        if isinstance(v, Expr):
            c = v.eval({})
            return c if isinstance(c, int) and not isinstance(c, bool) else None
        return None

    def param_value(self, p, env):
        t = self.resolve_type_spelling(p.type.spelling, env)
        if isinstance(t, ir.TileType) and t.kind == "gl":
            self.w.model.globals[p.spelling] = t
            return Obj("gl", ir.Ref(p.spelling), t)
        if isinstance(t, StructType):
            return self._struct_record(t, p.spelling, uniform=True)
        if isinstance(t, ir.TileType) and t.kind != "scalar":
            return Obj(t.kind, ir.Ref(p.spelling), t)
        return E.Var(p.spelling, E.PARAM)  # `int n`, pointers: uniform runtime values

    def _struct_record(self, st: StructType, prefix: str, uniform: bool) -> Rec:
        """A kernel parameter of user struct type (e.g. `globals g`): fields resolved lazily."""
        rec = Rec(type_name=st.name)
        for name, cur in st.members.items():
            if cur.kind == CK.FIELD_DECL:
                t = self.resolve_type_spelling(cur.type.spelling, st.env)
                if isinstance(t, ir.TileType) and t.kind == "gl":
                    self.w.model.globals[f"{prefix}.{name}"] = t
                    rec.fields[name] = Obj("gl", ir.Ref(f"{prefix}.{name}"), t)
                elif isinstance(t, StructType):
                    rec.fields[name] = self._struct_record(t, f"{prefix}.{name}", uniform)
                else:
                    rec.fields[name] = E.Var(f"{prefix}.{name}", E.PARAM)
        return rec

    # ================================================================ types
    def struct_type(self, cursor, targs: dict[str, Any], parent_env: Env | None = None) -> StructType:
        """A user struct with its template arguments bound. A nested struct
        (lcf's `layout::input_block`) resolves names in its enclosing struct."""
        sp = cursor.semantic_parent
        nested = sp is not None and sp.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE)
        base_env = (
            parent_env
            if (nested and parent_env is not None)
            else (self.env_for_decl(cursor) if nested else self.w.mb.env_for(cursor))
        )
        key = f"{cursor.hash}:{id(base_env)}:{sorted((k, str(v)) for k, v in targs.items())}"
        st = self.w.struct_cache.get(key)
        if st is not None:
            return st
        env = base_env.child()
        st = StructType(cursor.spelling, cursor, env)
        self.w.struct_cache[key] = st
        # template parameters: explicit args, else defaults
        tparams = [
            ch
            for ch in cursor.get_children()
            if ch.kind in (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER)
        ]
        for p in tparams:
            if p.spelling in targs:
                env.define(p.spelling, targs[p.spelling])
        rest = [p for p in tparams if p.spelling not in targs]
        if rest:
            self.bind_template_params_list(rest, env)
        for ch in cursor.get_children():
            if ch.spelling:
                st.members.setdefault(ch.spelling, ch)
            if ch.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE):
                env.define(ch.spelling, ("struct_decl", ch))
            elif ch.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL):
                env.define(ch.spelling, ("alias_decl", ch))
            elif ch.kind == CK.VAR_DECL:  # static constexpr members
                env.define(ch.spelling, ("var_decl", ch))
            elif ch.kind in (CK.CXX_METHOD, CK.FUNCTION_TEMPLATE):
                f = env.vars.get(ch.spelling)
                if isinstance(f, Func):
                    f.cursors.append(ch)
                else:
                    env.define(ch.spelling, Func(ch.spelling, [ch], st))
        # base classes (`struct downproj : MatVecAddOp<...>`): their members, unless hidden
        for ch in cursor.get_children():
            if ch.kind != CK.CXX_BASE_SPECIFIER:
                continue
            toks = [t for t in tokens_of(ch) if t not in ("public", "private", "protected", "virtual")]
            base = self.resolve_type(cexpr.parse_expression(toks, _values_of(env)), env) if toks else None
            if isinstance(base, StructType) and base is not st:
                for k, v in base.env.vars.items():
                    if k not in env.vars:
                        env.vars[k] = v
                for k, v in base.members.items():
                    st.members.setdefault(k, v)
        return st

    def bind_template_params_list(self, params, env):
        for ch in params:
            toks = tokens_of(ch)
            if "=" in toks:
                node = cexpr.parse_expression(toks[toks.index("=") + 1 :], env.has)
                if ch.kind == CK.TEMPLATE_TYPE_PARAMETER:
                    t = self.resolve_type(node, env)
                    if t is not None:
                        env.define(ch.spelling, t)
                    continue
                v = self.w.ev(node, Ctx(env=env, guard=ir.Guard(), dry=True))
                if isinstance(v, Expr) and not v.is_opaque():
                    env.define(ch.spelling, v)
                    continue
            if ch.kind == CK.TEMPLATE_NON_TYPE_PARAMETER:
                env.define(ch.spelling, E.Var(ch.spelling, E.PARAM))

    def resolve_type_spelling(self, spelling: str, env: Env):
        s = re.sub(r"\b(const|volatile|__restrict__|struct|class|typename|__grid_constant__)\b", " ", spelling)
        s = s.replace("&", " ").strip()
        if s.endswith("*"):
            return None
        toks = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|0[xX][0-9a-fA-F]+|\d+|::|<<|>>|\S", s)
        if not toks:
            return None
        node = cexpr.parse_expression(toks, _values_of(env))
        return self.resolve_type(node, env)

    def resolve_type(self, node: cexpr.Node | None, env: Env):
        """A type node -> TileType | StructType | None."""
        match node:
            case cexpr.TypeWords(words):
                kept = [w for w in words if w not in ("const", "volatile", "*", "&", "unsigned", "signed")]
                w = kept[-1] if kept else "int"
                return ir.TileType("scalar", w, dtype=w, dtype_bytes=K.DTYPE_BYTES.get(w, 4))
            case cexpr.Call(cexpr.Name(segments), (arg,)) if segments[-1].name in ("typeof", "__typeof__", "decltype"):
                # `size_bytes<typeof(q_smem[0])>`: the type of the object the expression names
                v = self.w.ev(arg, Ctx(env=env, guard=ir.Guard(), dry=True))
                if isinstance(v, _ArrVal):
                    v = v.obj
                t = getattr(v, "type", None)
                return t if isinstance(t, (ir.TileType, StructType)) else None
            case cexpr.Name(segments):
                return self._resolve_type_name(segments, env)
        return None

    def _resolve_type_name(self, segments: tuple[cexpr.Segment, ...], env: Env):
        picked = self._conditional_type(segments, env)
        if picked is not None:
            return picked
        q = self.qualified_decl(segments, env)
        if q is not None:
            cur = self.type_of_value(q[0], q[1], env)
            if cur is not None:
                return self._type_member_chain(cur, q[2], env)
        segs = [s for s in segments if s.name not in self.w.ns_names or s is segments[-1]]
        if not segs:
            return None
        head, targs = segs[0]
        cur = None
        if len(segs) == 1 or (head in K.TILE_ALIASES and targs is not None):
            if head in K.TILE_ALIASES and (targs is not None or head == "semaphore"):
                cur = self.tile_from_alias(head, targs or (), env)
                rest = segs[1:]
                return self._type_member_chain(cur, rest, env)
        val = env.lookup(head)
        if val is None and head in ("row_vec", "col_vec") and targs is not None and len(targs) == 1:
            # TK's `template <typename T> using row_vec = T::row_vec;` (types.cuh; col_vec alike):
            # `row_vec<st_fl<64, 64>>`, its argument read in the user's scope
            inner = self.resolve_type(targs[0], env)
            return self._type_member_chain(inner, [(head, None)] + list(segs[1:]), env)
        if val is None and head in self.w.mb.structs:
            val = ("struct_decl", self.w.mb.structs[head])
        cur = self.type_of_value(val, targs, env)
        if cur is None:
            if head in K.DTYPE_BYTES:
                return ir.TileType("scalar", head, dtype=K.DTYPE_CANON.get(head, head), dtype_bytes=K.DTYPE_BYTES[head])
            if head.startswith("__nv_") and len(segs) == 1 and not targs:
                # a CUDA number type tkcheck has no size for: a scalar all the same
                return ir.TileType("scalar", head, dtype=head, dtype_bytes=None)
            return None
        return self._type_member_chain(cur, segs[1:], env)

    def _conditional_type(self, segments: tuple[cexpr.Segment, ...], env: Env):
        """`std::conditional_t<B, T, F>` / `std::conditional<B, T, F>::type` (cuda::std's too):
        T or F as the constant B says; None when it is not that spelling or B is not a constant."""
        names = [sg.name for sg in segments]
        if names and names[0] == "cuda":
            names, segments = names[1:], segments[1:]
        if names[:1] == ["std"]:
            names, segments = names[1:], segments[1:]
        if not segments or segments[0].targs is None or len(segments[0].targs) != 3:
            return None
        if not (names == ["conditional_t"] or names == ["conditional", "type"]):
            return None
        cond, t, f = segments[0].targs
        v = self.w.ev(cond, Ctx(env=env, guard=ir.Guard(), dry=True))
        b = v.eval({}) if isinstance(v, Expr) else None
        if not isinstance(b, (bool, int)):
            return None
        return self.resolve_type(t if b else f, env)

    def qualified_decl(self, segs, env):
        """`ns::name...` where ns are the user's namespaces and `ns::name` was declared: (the
        declaration, its template arguments, the segments after it); else None."""
        segs = [s for s in segs if s.name != "kittens"]
        if len(segs) < 2 or segs[0].name not in self.w.mb.user_namespaces:
            return None
        j = 0
        while j < len(segs) - 1 and segs[j].name in self.w.mb.user_namespaces and segs[j].targs is None:
            j += 1
        key = "::".join(s.name for s in segs[: j + 1])
        val = self.w.mb.globals_env.vars.get(key)
        if val is None:
            return None
        return val, segs[j].targs, segs[j + 1 :]

    def type_of_value(self, val, targs, env):
        if isinstance(val, ir.TileType) or isinstance(val, StructType):
            return val
        if isinstance(val, TypeVal):
            return val.type
        if isinstance(val, tuple) and val[0] == "alias_decl":
            return self._alias_target(val[1])
        if isinstance(val, tuple) and val[0] == "struct_decl":
            bound = {}
            if targs and val[1].kind == CK.CLASS_TEMPLATE and val[1].spelling in self.w.mb.explicit_specs:
                chosen = self._explicit_specialization(val[1].spelling, targs, env)
                if chosen is _UNDECIDED:
                    return None  # which one is meant is not known: no specialization's members
                if chosen is not None:
                    return self.struct_type(chosen, {}, parent_env=env)
            if targs:
                tparams = [
                    ch
                    for ch in val[1].get_children()
                    if ch.kind in (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER)
                ]
                cctx = Ctx(env=env, guard=ir.Guard(), dry=True)
                for p, a in zip(tparams, targs):
                    if p.kind == CK.TEMPLATE_TYPE_PARAMETER:
                        t = self.resolve_type(a, env)
                        if t is not None:
                            bound[p.spelling] = t
                    else:
                        v = self.w.ev(a, cctx)
                        if isinstance(v, Expr) or (isinstance(v, tuple) and v and v[0] == "memptr"):
                            bound[p.spelling] = v
            return self.struct_type(val[1], bound, parent_env=env)
        return None

    def _explicit_specialization(self, name: str, targs, env):
        """The explicit specialization of `name` whose written arguments equal `targs`; None when
        none does (the primary template); `_UNDECIDED` when an argument cannot be compared."""
        cctx = Ctx(env=env, guard=ir.Guard(), dry=True)
        found = None
        for spec in self.w.mb.explicit_specs[name]:
            written = explicit_spec_args(spec)
            if written is None:
                return _UNDECIDED
            if len(written) != len(targs):
                continue  # fewer written than used (defaults) is compared as no match only when
                # the counts differ; C++ fills defaults before matching, tkcheck does not
            senv = self.env_for_decl(spec)
            sctx = Ctx(env=senv, guard=ir.Guard(), dry=True)
            same = True
            for a, toks in zip(targs, written):
                node = cexpr.parse_expression(toks, senv.has)
                eq = self._same_template_argument(a, cctx, env, node, sctx, senv)
                if eq is None:
                    return _UNDECIDED
                if not eq:
                    same = False
                    break
            if same:
                if found is not None:
                    return _UNDECIDED
                found = spec
        return found

    def _same_template_argument(self, a, actx, aenv, b, bctx, benv) -> bool | None:
        """Whether two template arguments are equal: constants by value, types by what they
        resolve to; None when that is not known."""
        va = self.w.ev(a, actx)
        vb = self.w.ev(b, bctx)
        if isinstance(va, E.Const) and isinstance(vb, E.Const):
            return va.value == vb.value
        if isinstance(va, Expr) and isinstance(vb, Expr):
            return None
        ta = self.resolve_type(a, aenv)
        tb = self.resolve_type(b, benv)
        if ta is not None and tb is not None:
            if ta is tb or ta == tb:
                return True
            if isinstance(ta, ir.TileType) and isinstance(tb, ir.TileType) and ta.kind == tb.kind == "scalar":
                return ta.dtype == tb.dtype if ta.dtype and tb.dtype else None
            return None
        return None

    def _alias_target(self, alias_cursor):
        # `using X = <type>;` / `typedef <type> X;` — parse the tokens after '='; when they do not
        # parse (a preprocessor conditional inside the declaration), clang's reading of the type
        toks = tokens_of(alias_cursor)
        env = self.env_for_decl(alias_cursor)
        if "=" in toks:
            body = toks[toks.index("=") + 1 :]
        elif toks and toks[0] == "typedef":
            body = toks[1:-1]
        else:
            return None
        key = ("alias", alias_cursor.hash)
        if key in self.w.struct_cache:
            return self.w.struct_cache[key]
        self.w.struct_cache[key] = None  # recursion guard
        t = None
        if "#" not in body:
            t = self.resolve_type(cexpr.parse_expression(body, _values_of(env)), env)
        if t is None:
            try:
                canon = alias_cursor.underlying_typedef_type.get_canonical().spelling
            except Exception:  # noqa: BLE001 - libclang raises on invalid types
                canon = ""
            if canon and "type-parameter" not in canon and canon != alias_cursor.spelling:
                t = self.resolve_type_spelling(canon, self.w.mb.globals_env)
        self.w.struct_cache[key] = t
        return t

    def env_for_decl(self, cursor) -> Env:
        """The environment a nested declaration's names resolve in."""
        parent = cursor.semantic_parent
        if parent is not None and parent.kind in (CK.STRUCT_DECL, CK.CLASS_DECL, CK.CLASS_TEMPLATE):
            for st in list(self.w.struct_cache.values()):
                if isinstance(st, StructType) and st.cursor == parent:
                    return st.env
            return self.struct_type(parent, {}).env
        return self.w.mb.env_for(cursor)

    def _type_member_chain(self, cur, rest, env):
        for seg, targs in rest:
            if cur is None:
                return None
            if isinstance(cur, StructType):
                m = cur.env.vars.get(seg)
                if m is None:
                    return None
                cur = self.type_of_value(m, targs, cur.env)
            elif isinstance(cur, ir.TileType):
                if seg in ("col_vec", "row_vec") and cur.kind == "rt":
                    n = cur.rows if seg == "col_vec" else cur.cols
                    cur = ir.TileType("rv", f"{cur.spelling}::{seg}", cur.dtype, cur.dtype_bytes, cols=n)
                elif seg in ("col_vec", "row_vec") and cur.kind == "st":
                    # a shared tile's vectors (TK st.cuh: `col_vec = sv<dtype, rows>`, `row_vec =
                    # sv<dtype, cols>`)
                    n = cur.rows if seg == "col_vec" else cur.cols
                    cur = ir.TileType("sv", f"{cur.spelling}::{seg}", cur.dtype, cur.dtype_bytes, cols=n)
                elif seg == "dtype":
                    cur = ir.TileType("scalar", cur.dtype or "?", dtype=cur.dtype, dtype_bytes=cur.dtype_bytes)
                else:
                    return None
        return cur

    def tile_from_alias(self, alias: str, targs, env: Env) -> ir.TileType | None:
        kind, dtype = K.TILE_ALIASES[alias]
        ctx = Ctx(env=env, guard=ir.Guard(), dry=True)
        args = list(targs)
        spelled = f"{alias}<{', '.join(cexpr.render(a) for a in args)}>" if args else alias
        if kind == "semaphore":
            return ir.TileType("semaphore", "semaphore")
        if dtype is None and kind != "gl" and args:
            dt = self._dtype_name(args.pop(0), env)
            dtype = dt
        if kind == "gl":
            dt = self._dtype_name(args[0], env) if args else None
            regs = []
            for a in args[5:]:
                t = self.resolve_type(a, env)
                if isinstance(t, ir.TileType):
                    regs.append(t)
            return ir.TileType("gl", spelled, dt, K.DTYPE_BYTES.get(dt or "", None), registered=tuple(regs))
        vals = [self.w.ev(a, ctx) for a in args]
        vals = [v if isinstance(v, Expr) else None for v in vals]
        nbytes = K.DTYPE_BYTES.get(dtype or "", None)
        if kind == "full_tt":
            kind, vals = "tt", [E.Const(K.CONSTANTS["MAX_TENSOR_ROWS"])] + vals
        if kind in ("st", "rt", "tt"):
            rows = vals[0] if len(vals) > 0 else None
            cols = vals[1] if len(vals) > 1 else None
            layout = None
            if kind == "rt" and len(args) > 2:
                layout = "col" if "col" in cexpr.render(args[2]) else "row"
            swz = None
            if kind == "st" and len(vals) > 2 and vals[2] is not None:
                # st<T, R, C, swizzle=true, swizzle_bytes=...>: explicit swizzle flags
                swz = vals[3] if len(vals) > 3 else None
                if isinstance(vals[2], E.Const) and vals[2].value in (False, 0):
                    swz = E.Const(0)
            return ir.TileType(kind, spelled, dtype, nbytes, rows, cols, swz, layout)
        if kind in ("sv", "rv"):
            n = vals[0] if vals else None
            return ir.TileType(kind, spelled, dtype, nbytes, cols=n)
        return None

    def _dtype_name(self, node: cexpr.Node, env) -> str | None:
        if isinstance(node, cexpr.TypeWords):
            w = [x for x in node.words if x not in ("const",)]
            return w[-1] if w else None
        if isinstance(node, cexpr.Name):
            name = node.segments[-1].name
            v = env.lookup(name)
            if isinstance(v, ir.TileType) and v.kind == "scalar":
                return v.dtype
            if isinstance(v, tuple) and v[0] == "alias_decl":
                t = self._alias_target(v[1])
                if isinstance(t, ir.TileType) and t.kind == "scalar":
                    return t.dtype
            return K.DTYPE_CANON.get(name, name)
        return None

    # ========================================================== statements
