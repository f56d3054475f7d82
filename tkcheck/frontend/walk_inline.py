"""Inlining: the user's device functions and the callbacks of TK's prototype templates."""
from __future__ import annotations

from dataclasses import replace

from ..model import expr as E
from ..model.expr import Expr
from . import cexpr
from .values import Func, Rec, StructType
from .walk_common import CK, MAX_INLINE_DEPTH, Env, Ctx, Frame, loc_of, tokens_of, _NAMESPACES


class _InlineMixin:
    """Part of `builder.KernelWalker`. Inlining: the user's device functions and the callbacks of TK's prototype templates."""

    def _resolve_callable(self, segs, ctx: Ctx):
        head = segs[0][0]
        v = ctx.env.lookup(head)
        if v is None and head in self.mb.structs:
            v = ("struct_decl", self.mb.structs[head])
        if len(segs) == 1:
            if isinstance(v, Func):
                return v
            if head in self.mb.functions:
                return Func(head, self.mb.functions[head])
            return None
        cur = self._deref(v, head, ctx, segs[0][1]) if v is not None else None
        for seg, sargs in segs[1:]:
            if isinstance(cur, StructType):
                m = cur.env.vars.get(seg)
                if isinstance(m, Func):
                    cur = m
                    continue
                cur = self._deref(m, seg, ctx, sargs) if m is not None else None
            else:
                return None
        return cur if isinstance(cur, Func) else None

    def _inline(self, f: Func, args, ctx: Ctx, cursor, targs):
        if ctx.depth >= MAX_INLINE_DEPTH:
            self._note_unmodelled(cursor, f"call to '{f.name}' not inlined (depth limit)")
            return E.opaque(f.name)
        # pick the overload with a body and a matching arity
        cands = [c for c in f.cursors if any(ch.kind == CK.COMPOUND_STMT for ch in c.get_children())]
        chosen = None
        for c in cands:
            params = [p for p in c.get_children() if p.kind == CK.PARM_DECL]
            if len(params) >= len(args):
                chosen = c
                break
        if chosen is None:
            vals = [self.ev(a, ctx, cursor) for a in args]
            self._unmodelled_use(vals, ctx, cursor, f.name)
            return self._opaque_from(("name", ((f.name, None),)), vals)
        vals = [self.ev(a, ctx, cursor) for a in args]
        parent_env = f.owner.env if f.owner is not None else self.mb.globals_env
        fenv = Env(parent_env)
        # template params of a function template: explicit args, else defaults
        tparams = [ch for ch in chosen.get_children()
                   if ch.kind in (CK.TEMPLATE_NON_TYPE_PARAMETER, CK.TEMPLATE_TYPE_PARAMETER)]
        for i, p in enumerate(tparams):
            if targs and i < len(targs):
                if p.kind == CK.TEMPLATE_TYPE_PARAMETER:
                    t = self.resolve_type(targs[i], ctx.env)
                    if t is not None:
                        fenv.define(p.spelling, t)
                else:
                    v = self.ev(targs[i], replace(ctx, dry=True))
                    fenv.define(p.spelling, v)
        missing = [p for p in tparams if p.spelling not in fenv.vars]
        if missing:
            self._bind_template_params_list(missing, fenv)
        params = [p for p in chosen.get_children() if p.kind == CK.PARM_DECL]
        for i, p in enumerate(params):
            if i < len(vals):
                fenv.define(p.spelling, vals[i])
            else:
                toks = tokens_of(p)
                if "=" in toks:
                    fenv.define(p.spelling, self.ev(cexpr.parse_expression(toks[toks.index("=") + 1:], fenv.has),
                                                    Ctx(env=fenv, guard=ctx.guard, dry=True)))
                else:
                    fenv.define(p.spelling, E.opaque(p.spelling))
        body = next(ch for ch in chosen.get_children() if ch.kind == CK.COMPOUND_STMT)
        frame = Frame()
        call_loc = loc_of(cursor, self.filename) if cursor is not None else None
        sub = replace(ctx, env=fenv, frame=frame, depth=ctx.depth + 1,
                      callers=ctx.callers + ((call_loc,) if call_loc else ()))
        self.walk(body, sub)
        # values written through reference parameters flow back
        for i, p in enumerate(params):
            if i < len(args) and "&" in p.type.spelling and args[i][0] == "name" and len(args[i][1]) == 1:
                newv = fenv.vars.get(p.spelling)
                if isinstance(newv, Expr):
                    ctx.env.assign(args[i][1][0][0], newv)
        if frame.returns:
            vals_r = [v for _, v in frame.returns]
            if len(vals_r) == 1 or all(v == vals_r[0] for v in vals_r):
                return vals_r[0]
            merged = _merge_returns(frame.returns, ctx.guard)
            return merged if merged is not None else E.opaque(f.name)
        return None

    # -- the prototype protocol's builtins -----------------------------------
    def _protocol_flag(self, args, ctx: Ctx):
        """tkcheck_flag(lcft, NAME, default): the template's optional flag, as TK's
        FLAG_GETTER resolves it (the user's static member, else the default)."""
        st = ctx.env.lookup("lcft")
        fname = args[1][1][-1][0] if args[1][0] == "name" else None
        if isinstance(st, StructType) and fname and fname in st.env.vars:
            v = self._deref(st.env.vars[fname], fname, Ctx(env=st.env, guard=ctx.guard, dry=True))
            if isinstance(v, Expr):
                if self.model is not None:
                    self.model.template_params[fname] = v
                return v
        v = self.ev(args[2], ctx)
        if self.model is not None and isinstance(v, Expr):
            self.model.template_params[fname or "?"] = v
        return v

    def _protocol_callback(self, args, ctx: Ctx, cursor):
        """tkcheck_callback(lcft::producer::load, "field", value, ...): call the
        user's callback with an `args` record built from named fields."""
        target = args[0]
        fn = None
        if target[0] == "name":
            fn = self._resolve_callable([s for s in target[1] if s[0] not in self._ns_names] or list(target[1]), ctx)
        rec = Rec(type_name="args")
        i = 1
        while i + 1 < len(args):
            key = args[i][1].strip('"') if args[i][0] == "str" else None
            val = self.ev(args[i + 1], ctx, cursor)
            if key:
                rec.fields[key] = val
            i += 2
        if fn is None:
            return rec
        role = "producer" if "producer" in cexpr.render(target) else (
            "consumer" if "consumer" in cexpr.render(target) else None)
        sub = replace(ctx, role_hint=role or ctx.role_hint)
        self._inline_with_record(fn, rec, sub, cursor)
        return rec

    def _inline_with_record(self, f: Func, rec: Rec, ctx: Ctx, cursor):
        cands = [c for c in f.cursors if any(ch.kind == CK.COMPOUND_STMT for ch in c.get_children())]
        if not cands:
            return
        chosen = cands[0]
        fenv = Env(f.owner.env if f.owner is not None else self.mb.globals_env)
        params = [p for p in chosen.get_children() if p.kind == CK.PARM_DECL]
        if params:
            fenv.define(params[0].spelling, rec)
        body = next(ch for ch in chosen.get_children() if ch.kind == CK.COMPOUND_STMT)
        call_loc = loc_of(cursor, self.filename) if cursor is not None else None
        self.walk(body, replace(ctx, env=fenv, frame=Frame(), depth=ctx.depth + 1,
                                callers=ctx.callers + ((call_loc,) if call_loc else ())))


def _merge_returns(returns, outer):
    """`if (c) return a; else return b;` as `c ? a : b` (element-wise for `return {x, y};`), when
    the returns differ from the call's guard only by block-uniform conditions, in walk order."""
    def extra(g):
        if g.thread != outer.thread or not g.exact or g.uniform[:len(outer.uniform)] != outer.uniform:
            return None
        return E.conj(*g.uniform[len(outer.uniform):])

    conds = [extra(g) for g, _ in returns]
    vals = [v for _, v in returns]
    if any(c is None for c in conds):
        return None

    def pick(items):
        if not all(isinstance(v, Expr) for v in items):
            return None
        out = items[-1]
        for c, v in zip(reversed(conds[:-1]), reversed(items[:-1])):
            out = E.ite(c, v, out)
        return out

    if all(isinstance(v, Expr) for v in vals):
        return pick(vals)
    if all(isinstance(v, tuple) and len(v) == len(vals[0]) for v in vals):
        parts = [pick([v[i] for v in vals]) for i in range(len(vals[0]))]
        return None if any(p is None for p in parts) else tuple(parts)
    return None
