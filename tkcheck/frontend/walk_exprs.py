"""Expressions to model values: names, members, assignments, element access, phase bitfields."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr
from .value_types import (
    Allocator,
    ChoicePtr,
    DsmemPtr,
    Func,
    GroupScope,
    Lambda,
    NamedBar,
    Obj,
    Rec,
    StructType,
    TypeVal,
    UnknownPtr,
)
from .walk_env import CK, Ctx, loc_of, tokens_of, value_names
from .walk_arith import _ArrVal, _tile_attr, _to_bool, convert_int, shared_copy
from .walker_core import ExprWalker


class ExprEvaluation:
    """The walker's part for expressions: names, members, assignments, element access and phase
    bitfields become model values; it numbers the ops the walk emits."""

    def __init__(self, walker: ExprWalker):
        self.w = walker
        self._order = 0  # ops emitted so far (an op's `order`)
        self._no_elem_access = 0  # > 0 while evaluating an lvalue or an address (`&x[i]`)
        self._memory_only = 0  # > 0 while a dry-walked condition's memory events are emitted
        self._array_base = 0  # > 0 while evaluating the array of `a[i]` (a use of `a` that is no escape)
        self._address_of: list[cexpr.Node] = []  # the operands of the `&` being evaluated, innermost last
        # in such a condition: the Var of the last read of each `__shared__` scalar (`read_value`)
        self._scalar_reads: dict[str, E.Var] = {}
        # the names declared with a pointer type (kernel parameters, local variables): a global
        # address held by one of them is a pointer the loop and branch passes follow (loop_pointers)
        self.pointer_vars: set[str] = set()
        # the local variables declared by value from a shared element (`float m = part[i];`):
        # a copy, whose address `&m` is a local's, no memory the model follows (`declare`):
        # name -> the scope that declared it (a parameter or another variable of that name in
        # another scope is no copy)
        self.value_copies: dict[str, object] = {}
        # the Vars that stand for addresses in global memory (`&C[i]`, a local `float *c` set from
        # it): Var name -> the kernel pointer parameter the address is computed from
        self._global_ptrs: dict[str, str] = {}
        # of those, the ones that are `&p[i]` of a kernel pointer parameter itself: Var name -> i
        # (a flag raised or polled through a helper, `st_release(&flag[b], v)`, names its element)
        self._global_elems: dict[str, Expr] = {}

    # and the warp collectives (`if (__any_sync(m, p))`, `if (lane < 16 && elect_one())`): they
    # synchronise their lanes wherever they are evaluated
    _MEMORY_KINDS = (
        ir.SMEM_ACCESS,
        ir.GLOBAL_LOAD,
        ir.GLOBAL_STORE,
        ir.GLOBAL_SIGNAL,
        ir.WARP_COLL,
        ir.UNKNOWN_ACCESS,
    )

    @contextmanager
    def memory_only(self):
        """Emit only memory events (loads, stores, atomics) inside: a condition walked dry once."""
        self._memory_only += 1
        try:
            yield
        finally:
            self._memory_only -= 1

    @contextmanager
    def address_only(self):
        """Evaluate an object's address inside, not its value: no load of the shared element or
        scalar it names (a pointer handed on to a callee)."""
        self._no_elem_access += 1
        try:
            yield
        finally:
            self._no_elem_access -= 1

    def global_base(self, v) -> str | None:
        """The kernel pointer parameter a value points into: the parameter itself, or an address
        computed from it (`&p[i]`); None when the value is no known global address."""
        if isinstance(v, E.Bin) and v.op in ("+", "-"):
            # `p + off` in an address (a helper's `ldg(ptr + col)`; `ws + g * S + s`, round 10):
            # the memory p points into
            return self.global_base(v.a) if isinstance(v.a, (E.Var, E.Bin)) else None
        if not isinstance(v, E.Var):
            return None
        if v.name in self._global_ptrs:
            return self._global_ptrs[v.name]
        return v.name if v.kind == E.PARAM else None

    def pointer_value(self, v) -> bool:
        """v is an address in global memory held by a pointer: `_global_pointer`, and its root a
        name declared as a pointer or an address the walk computed (an int parameter is not)."""
        if not isinstance(v, Expr) or not self._global_pointer(v):
            return False
        while isinstance(v, E.Bin):
            v = v.a
        return isinstance(v, E.Var) and (v.name in self.pointer_vars or v.name in self._global_ptrs)

    def element_index(self, v) -> Expr | None:
        """The element i of a kernel pointer parameter p that an address value is `&p[i]` of (also
        through a cast, `*(volatile unsigned *)&flag[b]`); None when not known."""
        return self._global_elems.get(v.name) if isinstance(v, E.Var) else None

    def one_word(self, v) -> bool:
        """Is v a kernel pointer parameter itself (or a local holding it: `volatile Acc *a = acc`),
        so that `*v`, `v->f` and an atomic on v name one address for every thread of the grid?"""
        return (
            isinstance(v, E.Var) and v.kind == E.PARAM and not v.name.startswith("?") and self.global_base(v) == v.name
        )

    def _global_pointer(self, v) -> bool:
        """Does v point into global memory (a kernel pointer parameter or an address computed
        from one, `&p[i]`, or `p + off`: a local `const float *row = in + r * COLS`)? A `*v` or
        `v[i]` through it is a global access."""
        if isinstance(v, E.Bin) and v.op in ("+", "-") and isinstance(v.a, E.Var):
            return v.a.name in self._global_ptrs or (v.a.kind == E.PARAM and not v.a.name.startswith("?"))
        if isinstance(v, E.Bin) and v.op in ("+", "-") and isinstance(v.a, E.Bin) and v.a.op in ("+", "-"):
            # `p + a + b` (round 10: `CUtensorMap *gmap = ws + g * SPLIT + s`)
            return self._global_pointer(v.a)
        return isinstance(v, E.Var) and (v.kind == E.PARAM or v.name in self._global_ptrs)

    def emit(self, op: ir.Op, ctx: Ctx):
        if ctx.dry or self.w.model is None:
            return
        if self._memory_only and op.kind not in self._MEMORY_KINDS:
            return
        self._order += 1
        op.order = self._order
        if op.kind == ir.MBAR_WAIT and op.parity is not None and op.parity in self.w.phasebit_reads:
            if op.phasebit is None:
                op.phasebit = self.w.phasebit_reads[op.parity]
        op.callers = ctx.callers
        op.role_hint = ctx.role_hint
        if op.barrier is not None and self.w.stmts._ring_walks:
            from .ring_walk import visit

            visit(self.w.stmts, op, ctx)
        self.w.model.ops.append(op)

    # ========================================================== evaluation
    def ev(self, node: cexpr.Node, ctx: Ctx, cursor=None):
        try:
            return self._ev(node, ctx, cursor)
        except RecursionError:
            return E.opaque("deep")

    def targ_int(self, targs, ctx, i) -> int | None:
        """The `i`th template argument as an integer constant, if it is one."""
        if not targs or len(targs) <= i:
            return None
        v = self.ev(targs[i], replace(ctx, dry=True))
        c = v.const() if isinstance(v, Expr) else None
        return c if isinstance(c, int) and not isinstance(c, bool) else None

    def tk_barrier_type(self, segments: Any, ctx: Ctx) -> tuple[bool, int | None]:
        """Whether a type name is TK's `barrier<num_warps>` (`kittens::barrier<8>`; not a user
        type of that name), and its number of warps when evaluated."""
        segs = [sg for sg in segments if sg.name != "kittens"]
        if len(segs) != 1 or segs[0].name != "barrier" or not segs[0].targs:
            return False, None
        if "barrier" in self.w.mb.structs or ctx.env.lookup("barrier") is not None:
            return False, None
        n = self.targ_int(segs[0].targs, ctx, 0)
        return True, (n if n is not None and n > 0 else None)

    def named_bar(self, segments: Any, id_value: Any, ctx: Ctx) -> NamedBar | None:
        """The value of a `barrier<N>` object made from `id_value` (None: not that type)."""
        is_bar, warps = self.tk_barrier_type(segments, ctx)
        if not is_bar:
            return None
        return NamedBar(id_value if isinstance(id_value, Expr) else None, warps)

    def _ev(self, node: cexpr.Node, ctx: Ctx, cursor):
        match node:
            case cexpr.Num(value) | cexpr.Bool(value):
                return E.Const(value)
            case cexpr.LambdaExpr(index):
                lam = self._lambda_value(index, ctx, cursor)
                return lam if lam is not None else E.opaque("lambda")
            case cexpr.Float():
                return E.opaque("float")
            case cexpr.Str():
                return E.opaque("str")
            case cexpr.Null():
                return E.opaque("null")
            case cexpr.Name():
                v = self._ev_name(node, ctx)
                if _is_shared_scalar(v) and not self._no_elem_access:
                    self.scalar_access(v, "read", ctx, cursor)
                return v
            case cexpr.Bin(op, na, nb):
                a = self.read_value(self.ev(na, ctx, cursor))
                if op in ("&&", "||"):
                    a = _shared_flag(a)
                if op in ("&&", "||") and isinstance(a, E.Const) and bool(a.value) == (op == "||"):
                    return E.Const(op == "||")  # short-circuit: the right operand is not evaluated
                bctx = ctx
                if op in ("&&", "||") and isinstance(a, Expr) and not ctx.dry:
                    # the right operand runs only where the left one let it (`lane < 16 &&
                    # elect_one()`): the events it emits are guarded by that
                    st = self.w.stmts
                    cls, cexp = st._classify(_to_bool(a), ctx)
                    bctx = replace(ctx, guard=st._branch_guard(ctx.guard, cls, cexp, op == "&&"))
                b = self.read_value(self.ev(nb, bctx, cursor))
                if op in ("&&", "||"):
                    b = _shared_flag(b)
                if isinstance(a, Expr) and isinstance(b, Expr):
                    if op in ("&&", "||"):
                        a, b = _to_bool(a), _to_bool(b)
                    return E.binop(op, a, b)
                if op == "+" and isinstance(b, _ArrVal) and isinstance(a, Expr):
                    a, b = b, a
                if op == "+" and isinstance(a, _ArrVal) and isinstance(b, Expr) and _shared_array(a):
                    # `bars + i`: a pointer to the element, as `&bars[i]` is
                    return _element_pointer(a.index(b, cexpr.render(node)))
                if op in ("+", "-"):
                    moved = _moved_pointer(node, op, a, b)
                    if moved is not None:
                        return moved
                return self.opaque_from(node, (a, b))
            case cexpr.Un(op, inner):
                return self._ev_unary(node, op, inner, ctx, cursor)
            case cexpr.Cond(nc, na, nb):
                c = self.ev(nc, ctx, cursor)
                if isinstance(c, E.Const):
                    # only the chosen operand is evaluated (a constexpr recursion ends here)
                    return self.ev(na if c.value else nb, ctx, cursor)
                actx = bctx = ctx
                if isinstance(c, Expr) and not ctx.dry:
                    # each operand runs only where the condition picks it (`t < 128 ?
                    # __syncthreads_count(p) : 0`): the events it emits are guarded by that
                    st = self.w.stmts
                    cls, cexp = st._classify(_to_bool(c), ctx)
                    actx = replace(ctx, guard=st._branch_guard(ctx.guard, cls, cexp, True))
                    bctx = replace(ctx, guard=st._branch_guard(ctx.guard, cls, cexp, False))
                a, b = self.ev(na, actx, cursor), self.ev(nb, bctx, cursor)
                if isinstance(b, Expr) and _element_value(a):
                    # `c ? shared_max[l] : 0`: a number (the other operand is one), so the
                    # element is read (its load emitted above, under c), not pointed to
                    a = self.opaque_from(na, (a,))
                elif isinstance(a, Expr) and _element_value(b):
                    b = self.opaque_from(nb, (b,))
                chosen = self._chosen_pointer(node, c, a, b, ctx)
                if chosen is not None:
                    return chosen
                if isinstance(c, Expr) and isinstance(a, Expr) and isinstance(b, Expr):
                    return E.ite(_to_bool(c), a, b)
                return self.opaque_from(node, (c, a, b))
            case cexpr.Assign():
                return self.assign(node, ctx, cursor)
            case cexpr.Post(op, target):
                old = self.ev(target, ctx, cursor)
                self.assign(cexpr.Assign("+=" if op == "++" else "-=", target, cexpr.Num(1)), ctx, cursor)
                return old
            case cexpr.Cast(tnode, inner_node):
                return self._ev_cast(tnode, self.ev(inner_node, ctx, cursor), ctx)
            case cexpr.Sizeof(inner):
                return self._ev_sizeof(inner, ctx)
            case cexpr.Index(nbase, nidx):
                return self._ev_index(node, nbase, nidx, ctx, cursor)
            case cexpr.Member():
                return self._ev_member(node, ctx, cursor)
            case cexpr.MemberPtr(nobj, nptr):
                ptr = self.ev(nptr, replace(ctx, dry=True), cursor)
                if isinstance(ptr, tuple) and ptr and ptr[0] == "memptr":
                    return self._ev_member(cexpr.Member(nobj, ptr[1], False), ctx, cursor)
                return self.opaque_from(node, (self.ev(nobj, ctx, cursor), ptr))
            case cexpr.Call():
                return self.w.calls.ev_call(node, ctx, cursor)
            case cexpr.Init(items):
                return tuple(self.ev(x, ctx, cursor) for x in items)
            case cexpr.Comma(na, nb):
                self.ev(na, ctx, cursor)
                return self.ev(nb, ctx, cursor)
            case cexpr.TypeWords():
                return self.w.resolve_type(node, ctx.env)
            case cexpr.Value(value):
                return value
        return E.opaque("unknown")

    def _ev_unary(self, node: cexpr.Un, op: str, inner: cexpr.Node, ctx: Ctx, cursor):
        if op == "&" and isinstance(inner, cexpr.Name) and len(inner.segments) >= 2:
            # `&Globals::field`: a pointer to a data member (a template argument of an op)
            owner = self.w.resolve_type(cexpr.Name(inner.segments[:-1]), ctx.env)
            fld = inner.segments[-1].name
            if isinstance(owner, StructType) and getattr(owner.members.get(fld), "kind", None) == CK.FIELD_DECL:
                return ("memptr", fld)
        if (
            op == "*"
            and isinstance(inner, cexpr.Cast)
            and isinstance(inner.type, cexpr.TypeWords)
            and "volatile" in inner.type.words
            and self.global_target(inner.a, ctx, cursor, bare_param=True)
        ):
            # `*(volatile int *)&g.Bar[{...}]`: a volatile (relaxed, not acquiring) load of global memory;
            # its value a Var the load names (a spin loop's condition reads it)
            loaded = E.opaque(cexpr.render(node)[:60])
            if cursor is not None:
                with self.address_only():
                    addr = self.ev(inner.a, replace(ctx, dry=True), cursor)
                self.emit(
                    ir.Op(
                        ir.GLOBAL_LOAD,
                        "volatile load",
                        loc_of(cursor, self.w.filename),
                        ctx.guard,
                        ctx.loops,
                        global_access=ir.GlobalAccessFacts(
                            "volatile",
                            cexpr.render(node)[:80],
                            result=loaded.name,
                            form="volatile",
                            base=self.address_base(inner.a, ctx, cursor),
                            index=self.element_index(addr),
                        ),
                    ),
                    ctx,
                )
            return loaded
        if op == "&" and isinstance(inner, cexpr.Name) and len(inner.segments) == 1:
            name = inner.segments[0].name
            if name in self.value_copies and _declaring_scope(ctx.env, name) is self.value_copies[name]:
                # `&m` of a copy of a shared element: a local's address (registers or local
                # memory), through which no access the model follows is made
                return E.opaque(f"&{name}")
        if op == "&" and (
            isinstance(inner, (cexpr.Index, cexpr.Name)) or (isinstance(inner, cexpr.Member) and inner.arrow)
        ):
            # the address of an element (or of a `__shared__` scalar) is no access to it
            self._no_elem_access += 1
            self._address_of.append(inner)
            try:
                return _element_pointer(self.ev(inner, ctx, cursor))
            finally:
                self._no_elem_access -= 1
                self._address_of.pop()
        a = self.ev(inner, ctx, cursor)
        if op == "*" and isinstance(a, ChoicePtr):
            a = self._each_option(a, inner, ctx, lambda c: self._ev_unary(node, op, inner, c, cursor))
            if a is None:
                return self.opaque_from(node, ())
        if op == "*" and isinstance(a, UnknownPtr):
            if self._no_elem_access:
                return a
            self.unknown_access(a, "read", ctx, cursor)
            return self.opaque_from(node, ())
        if op == "*" and not self._no_elem_access and cursor is not None and self._global_pointer(a):
            # `*c` of a pointer into global memory (a kernel parameter, `float *c = &C[i]`): a
            # plain (weak) load
            # its value the Var it names (a spin on the word tests it: round 16)
            value = self.opaque_from(node, (a,))
            self.global_load(
                node,
                ctx,
                cursor,
                base=self.global_base(a),
                where="" if self.one_word(a) else None,
                value=value.name if isinstance(value, E.Var) else E.per_iteration_name(value),
            )
            return value
        if op == "*" and isinstance(a, Obj) and a.kind in ("shared", "smem_data"):
            # `*(float2 *)&vec[c]`, `*p` of `p = &x[i]`: a load of the shared element the pointer
            # addresses (its first element when the pointer type is wider)
            self._elem_access(a, "read", ctx, cursor)
            return a
        if op == "&" or op == "*":
            return a  # address-of / dereference keep the object
        a = self.read_value(a)  # `!ready` in a spin's condition: the loaded value
        if isinstance(a, Expr):
            return E.unop(op, _to_bool(a) if op == "!" else a)
        return self.opaque_from(node, (a,))

    def _ev_cast(self, tnode: cexpr.Node, inner, ctx: Ctx):
        if isinstance(inner, Obj) and inner.elem_ptr:
            # a pointer to an element cast to a pointer of a size known (`(float2 *)&z_s[8]`)
            # stays one, stepping by that size; to anything else it is no such pointer
            pb = _pointee_bytes(cexpr.Cast(tnode, cexpr.Num(0)))
            inner = replace(inner, elem_ptr=pb is not None, pointee_bytes=pb)
        words = tnode.words if isinstance(tnode, cexpr.TypeWords) else None
        if isinstance(inner, Obj) and words is not None and words[:1] == ("?",):
            arr = self._array_ref_cast(list(words[1:]), inner, ctx)
            if arr is not None:
                return arr
        if isinstance(inner, Obj):
            t = self.w.resolve_type(tnode, ctx.env)
            if isinstance(t, StructType):
                t = self.w.stmts.struct_tile_type(t)
            if isinstance(t, ir.TileType) and t.kind in ("st", "sv", "struct") and inner.type != t:
                return Obj(inner.kind, inner.ref, t, reinterpreted_from=inner.type)
        if words is not None and "bool" in words and isinstance(inner, Expr):
            return _to_bool(inner)
        if words is not None and isinstance(inner, E.Const):
            return convert_int(inner, " ".join(words))
        return inner

    def _ev_sizeof(self, inner: cexpr.Node, ctx: Ctx):
        if _is_clc_handle(inner, self.w, ctx):
            return E.Const(K.CLC_RESPONSE_BYTES)  # `uint4 internal_value` (util.cuh)
        t = self.w.resolve_type(inner, ctx.env) if isinstance(inner, (cexpr.Name, cexpr.TypeWords)) else None
        if isinstance(t, StructType):
            t = self.w.stmts.struct_tile_type(t)
        if isinstance(t, ir.TileType):
            s = t.size_bytes() if t.kind != "scalar" else E.Const(t.dtype_bytes or 4)
            if s is not None:
                return s
        v = self.ev(inner, replace(ctx, dry=True))
        count: Expr = E.Const(1)
        while isinstance(v, _ArrVal):
            # `sizeof(tiles)` of an array of tiles: the element's size times the extent
            d = v.dims[0] if v.dims else None
            if not isinstance(d, Expr) or d.is_opaque():
                return E.opaque("sizeof")
            count = E.binop("*", count, d)
            v = v.obj if len(v.dims) <= 1 else _ArrVal(v.obj, v.dims[1:])
        if isinstance(v, Obj) and v.type is not None:
            s = v.type.size_bytes()
            if s is not None:
                return E.binop("*", count, s) if count != E.Const(1) else s
        return E.opaque("sizeof")

    def _ev_index(self, node: cexpr.Index, nbase: cexpr.Node, nidx: cexpr.Node, ctx: Ctx, cursor):
        if isinstance(nbase, cexpr.Member) and nbase.arrow:
            # `p->arr[i]`: the field is the array's address, no load of its own
            with self.address_only():
                base = self.ev(nbase, ctx, cursor)
        else:
            self._array_base += 1
            try:
                base = self.ev(nbase, ctx, cursor)
            finally:
                self._array_base -= 1
        idx = self.ev(nidx, ctx, cursor)
        if isinstance(base, ChoicePtr):
            # `p[i]` of a pointer holding one of a few values, each under a block-uniform
            # condition (a rotated pointer): one access per option, under its condition
            base = self._each_option(base, nbase, ctx, lambda c: self._ev_index(node, nbase, nidx, c, cursor))
            if base is None:
                return self.opaque_from(node, (idx,))
        if isinstance(base, UnknownPtr):
            # `p[i]` of a pointer whose target the walk does not follow: an access of unknown
            # location (coverage), and `&p[i]` an address as unknown as p
            if self._no_elem_access:
                return base
            self.unknown_access(base, "read", ctx, cursor)
            return self.opaque_from(node, (idx,))
        if isinstance(base, NamedBar):  # TK's barrier<N>::operator[]: barrier(id + i)
            return NamedBar(
                E.binop("+", base.id, idx) if isinstance(base.id, Expr) and isinstance(idx, Expr) else None,
                base.warps,
            )
        if self.w.mk_op is not None and isinstance(base, (Obj, E.Var)) and isinstance(idx, E.Const):
            code = self._mk_opcode_read(base, idx)
            if code is not None:
                return code
        if isinstance(base, DsmemPtr):
            # `peer[e]` of `peer = cluster.map_shared_rank(&x[i][0], r)`: element x[i][0 + e] of
            # CTA r's shared memory (distributed shared memory)
            t = base.target
            off = idx if isinstance(idx, Expr) else E.opaque("index")
            last = t.ref.index[-1]
            index = t.ref.index[:-1] + ((E.binop("+", last, off) if isinstance(last, Expr) else E.opaque("index")),)
            res = Obj(t.kind, ir.Ref(t.ref.name, index, cexpr.spelled(node)), t.type, cta=base.cta)
            self._elem_access(res, "read", ctx, cursor)
            return res
        if (
            isinstance(base, Obj)
            and base.kind == "buffer"
            and base.type is not None
            and base.type.kind == "sv"
            and base.type.dtype
            and isinstance(idx, Expr)
        ):
            # `vec[i]` of a shared vector (TK's `sv::operator[]`): element i of its data, as `vec.data[i]`
            base = Obj(
                "smem_data",
                base.ref,
                ir.TileType("scalar", base.type.dtype, dtype=base.type.dtype, dtype_bytes=base.type.dtype_bytes),
                cta=base.cta,
            )
        stepped = _pointer_subscript(nbase, base, idx)
        if stepped is not None:
            # `p[i]` of a pointer into a `__shared__` array of scalars (`&z_s[8]`, `z_s + 8`, or
            # the array itself cast to `float4 *`): the element i steps of the pointee's size
            # further on, in the array's own elements (its first one for a wider pointee)
            res = stepped
            self._elem_access(res, "read", ctx, cursor)
            return res
        if isinstance(base, Obj):
            et = base.type.element if (base.type is not None and base.type.kind == "array") else base.type
            res = base.at(idx if isinstance(idx, Expr) else E.opaque("index"), et, cexpr.spelled(node))
            self._elem_access(res, "read", ctx, cursor)
            if (
                res.kind == "struct"
                and et is not None
                and et.kind == "scalar"
                and not self._no_elem_access
                and isinstance(idx, Expr)
                and not idx.depends_on(E.THREAD)
                and not idx.is_opaque()
            ):
                # a word of a shared struct (an instruction slot's `instructions[3]`), read at one
                # address by every thread: one block-uniform value
                return E.Var(f"?{res.ref}", E.PARAM)
            return res
        if isinstance(base, _ArrVal):
            res = base.index(idx if isinstance(idx, Expr) else E.opaque("index"), cexpr.spelled(node))
            self._elem_access(res, "read", ctx, cursor)
            return res
        # a read of memory at a loop-dependent index is a value per iteration; so is a local
        # array's element read inside a loop (`_local_element`)
        value = self.opaque_from(node, (base, idx), read=not self._no_elem_access and not _local_array(base))
        if _local_array(base) and isinstance(value, E.Var) and self.w.model is not None:
            # an element of a local array of scalars (`key[j]`): what it holds is what the walk
            # stored into the array (`KernelModel.local_array_stores`, read through its name:
            # `local_array_reads`); `&key[j]` lets it escape
            if self._address_of and self._address_of[-1] is node:
                self.w.model.local_array_escapes.add(base.name)
            else:
                self.w.model.local_array_reads[value.name] = base.name
                value = _local_element(value, idx, ctx)
        if self._global_pointer(base) and not self._no_elem_access and cursor is not None:
            # `p[i]` of a pointer the kernel received: a plain (weak) load of global memory; its
            # value the Var it names (a lane's input: checks/warp_collectives.py `lane_input`)
            self.global_load(
                node,
                ctx,
                cursor,
                base=self.global_base(base),
                index=self._param_index(base, idx),
                value=value.name if isinstance(value, E.Var) else E.per_iteration_name(value),
            )
        if self._global_pointer(base):
            # `&p[i]`: an address in the memory p points into (also a row `p->a[i]` of a
            # two-dimensional field, indexed again: `p->a[i][lane]`)
            b = self.global_base(base)
            if b is not None and isinstance(value, E.Var):
                self._global_ptrs[value.name] = b
                if (pi := self._param_index(base, idx)) is not None:
                    self._global_elems[value.name] = pi
        return value

    def _mk_opcode_read(self, base: Obj | E.Var, idx: E.Const):
        """In the model of one MK op, the opcode word of an instruction slot (knowledge/mk.py:
        `instructions[0]` in Megakernels) reads as that op's opcode."""
        from ..knowledge import mk

        name = base.ref.name if isinstance(base, Obj) else base.name
        fld = name.rsplit(".", 1)[-1].rstrip("()")
        if fld not in mk.OPCODE_FIELDS or mk.OPCODE_FIELDS[fld] != idx.value:
            return None
        v = self.member_static(self.w.mk_op, "opcode", None, Ctx(env=self.w.mk_op.env, guard=ir.Guard(), dry=True))
        return v if isinstance(v, E.Const) else None

    def global_target(self, node: cexpr.Node, ctx: Ctx, cursor, bare_param: bool = False) -> bool:
        """`&g.layout[{...}]` / `&ptr[i]`: an address in global memory (an element of a global
        layout, or of a pointer the kernel received)."""
        addr_of = isinstance(node, cexpr.Un) and node.op == "&"
        if isinstance(node, cexpr.Un) and node.op == "&":
            node = node.a
        if addr_of and self.device_var(node, ctx) is not None:
            return True  # `&count` of a `__device__` variable: one word of global memory
        if addr_of and isinstance(node, cexpr.Member) and node.arrow:
            # `&p->f`: a field of a record a kernel pointer points to
            return self._global_pointer(self.ev(node.obj, replace(ctx, dry=True), cursor))
        if not isinstance(node, cexpr.Index):
            # a pointer into global memory held in a variable (`int *c = &sem[t]`; `atomicAdd(c, 1)`);
            # with `bare_param`, a kernel pointer parameter itself (`*(volatile int *)flag`). `&x`
            # of a variable is no such address. (An atomic on a bare parameter stays an unmodelled
            # call, a block-uniform unknown, as before: the scheduler loops the progress engine
            # unrolls read its old value as data.)
            if addr_of or not isinstance(node, cexpr.Name):
                return False
            v = self.ev(node, replace(ctx, dry=True), cursor)
            return self._global_pointer(v) if bare_param else isinstance(v, E.Var) and v.name in self._global_ptrs
        base = self.ev(node.obj, replace(ctx, dry=True), cursor)
        if isinstance(base, Obj):
            return base.kind == "gl"
        return self._global_pointer(base)

    def device_var(self, node: cexpr.Node, ctx: Ctx) -> str | None:
        """The name of a mutable `__device__` variable of the file that node names (`__device__
        unsigned retire_count;`): global memory, one word (or array) for the whole grid, whose
        address `&retire_count` an atomic takes. None for anything else (a local, a `const` or
        `__constant__` variable, a `__shared__` one)."""
        ident = node.ident() if isinstance(node, cexpr.Name) else None
        if ident is None:
            return None
        v = ctx.env.lookup(ident)
        if not (isinstance(v, tuple) and len(v) == 2 and v[0] == "var_decl"):
            return None
        c = v[1]
        kinds = {ch.kind for ch in c.get_children()}
        if CK.CUDADEVICE_ATTR not in kinds or kinds & {CK.CUDASHARED_ATTR, CK.CUDACONSTANT_ATTR}:
            return None
        if c.type.is_const_qualified() or "constexpr" in tokens_of(c):
            return None
        return ident

    def word_of(self, node: cexpr.Node, ctx: Ctx, cursor) -> str | None:
        """GlobalAccessFacts.where of an address: "" for a kernel pointer itself (`lock`), "->f"
        for `&p->f` of one, None when it is not one address for every thread (`&p[i]`)."""
        addr_of = isinstance(node, cexpr.Un) and node.op == "&"
        inner = node.a if isinstance(node, cexpr.Un) and addr_of else node
        if addr_of and self.device_var(inner, ctx) is not None:
            return ""
        if addr_of and isinstance(inner, cexpr.Member) and inner.arrow:
            return f"->{inner.field}" if self.one_word(self.ev(inner.obj, replace(ctx, dry=True), cursor)) else None
        if addr_of:
            return None
        return "" if self.one_word(self.ev(node, replace(ctx, dry=True), cursor)) else None

    def address_base(self, node: cexpr.Node, ctx: Ctx, cursor) -> str | None:
        """The kernel pointer parameter an address expression (`&p[i]`, `p`, `c`) points into (or
        the `__device__` variable `&count` names)."""
        if isinstance(node, cexpr.Un) and node.op == "&" and (dv := self.device_var(node.a, ctx)) is not None:
            return dv
        if isinstance(node, cexpr.Un) and node.op == "&" and isinstance(node.a, cexpr.Member) and node.a.arrow:
            return self.global_base(self.ev(node.a.obj, replace(ctx, dry=True), cursor))
        self._no_elem_access += 1
        try:
            v = self.ev(
                node.a if isinstance(node, cexpr.Un) and node.op == "&" else node, replace(ctx, dry=True), cursor
            )
        finally:
            self._no_elem_access -= 1
        if isinstance(node, cexpr.Un) and node.op == "&" and isinstance(v, E.Var) and v.name not in self._global_ptrs:
            return None  # `&x` of a scalar: no address in global memory
        return self.global_base(v)

    def atomic_element(self, node: cexpr.Node, ctx: Ctx, cursor) -> Expr | None:
        """The element i of `&p[i]`, an atomic's address on a kernel pointer parameter p (evaluated
        dry: the address is no access of its own); None when the address is not such an element."""
        if not (isinstance(node, cexpr.Un) and node.op == "&"):
            return None
        self._no_elem_access += 1
        try:
            v = self.ev(node.a, replace(ctx, dry=True), cursor)
        finally:
            self._no_elem_access -= 1
        return self.element_index(v)

    def _array_ref_cast(self, toks: list, inner: Obj, ctx: Ctx):
        """`reinterpret_cast<T(&)[N]>(x)` (also `T(*)[N]` dereferenced later): x's storage read as
        an array of N tiles of type T, the same storage (TK kernels split a wide tile in halves
        this way). None when the words are not that shape or T is not a shared tile type."""
        if "(" not in toks:
            return None
        i = toks.index("(")
        if toks[i + 1 : i + 3] not in (["&", ")"], ["*", ")"]):
            return None
        elem, rest = toks[:i], toks[i + 3 :]
        dims = []
        while rest[:1] == ["["] and "]" in rest:
            j = rest.index("]")
            d = self.ev(cexpr.parse_expression(rest[1:j], value_names(ctx.env)), replace(ctx, dry=True))
            if not isinstance(d, Expr):
                return None
            dims.append(d)
            rest = rest[j + 1 :]
        if rest or not dims or not elem:
            return None
        t = self.w.types.resolve_type_spelling(" ".join(elem), ctx.env)
        if isinstance(t, StructType):
            t = self.w.stmts.struct_tile_type(t)
        if not isinstance(t, ir.TileType) or t.kind not in ("st", "sv"):
            return None
        return _ArrVal(Obj(inner.kind, inner.ref, t, reinterpreted_from=inner.type), dims)

    def _lambda_value(self, index: int, ctx: Ctx, cursor):
        """The Lambda of LambdaExpr(index): the index-th outermost lambda expression under the
        cursor of the statement being evaluated."""
        if cursor is None:
            return None
        found = []

        def visit(c):
            for ch in c.get_children():
                if ch.kind == CK.LAMBDA_EXPR:
                    found.append(ch)
                else:
                    visit(ch)

        if cursor.kind == CK.LAMBDA_EXPR:
            found.append(cursor)
        else:
            visit(cursor)
        found.sort(key=lambda c: (c.extent.start.line, c.extent.start.column))
        if index >= len(found):
            return None
        lam = found[index]
        toks = tokens_of(lam)
        caps = toks[1 : toks.index("]")] if "]" in toks else []
        by_value = bool(caps) and ("=" in caps or "&" not in caps)
        return Lambda(lam, ctx.env, by_value)

    def opaque_from(self, node: cexpr.Node, parts, read: bool = False) -> Expr:
        """An unknown value; it is uniform when everything it is computed from is. `read`: the
        value of a memory read (`p[i]`), which is a value per iteration when its index depends
        on loop counters (an address or any other unknown keeps one name, which the ops that
        use it -- a poll's address, a load's result -- refer to)."""
        kinds = set()
        alike = set()  # kinds of unknowns every thread holds alike (`E.uniform_unknown`)
        for p in parts:
            if isinstance(p, Expr):
                kinds |= {v.kind for v in p.free_vars() if not v.name.startswith(E.UNIFORM_UNKNOWN)}
                alike |= {v.kind for v in p.free_vars() if v.name.startswith(E.UNIFORM_UNKNOWN)}
            elif isinstance(p, Obj):
                for ix in p.ref.index:
                    kinds |= {v.kind for v in ix.free_vars() if not v.name.startswith(E.UNIFORM_UNKNOWN)}
                    alike |= {v.kind for v in ix.free_vars() if v.name.startswith(E.UNIFORM_UNKNOWN)}
            elif isinstance(p, (Rec, StructType, TypeVal, Allocator, ir.TileType)):
                pass  # uniform objects
            elif p is not None:
                kinds.add(E.OPAQUE)
        if E.THREAD in kinds or E.OPAQUE in kinds:
            unknown = E.opaque(cexpr.render(node))
            if read and E.LOOP in kinds and E.OPAQUE in kinds and not self._array_base:
                # an element of memory the walk does not follow (a `gl`'s `raw_ptr[t]`) read at a
                # loop-dependent index: still an unknown that may differ between threads, and one
                # per iteration. (A thread's own element of a pointer parameter, `p[tid + 128 *
                # t]`, keeps one name for the loop: the input-data readers -- `checks/inputs.py`,
                # the warp-collective leaders -- do not follow a per-iteration value yet; round 17
                # lead, idioms8 warp_match_aggregate lost three races with it)
                return E.per_iteration(unknown, _loop_counters(parts))
            return unknown
        if alike:
            # computed from values every thread holds alike, one of them unknown: so is this
            return E.uniform_unknown(cexpr.render(node))
        # numbered in walk order (not by object identity): the same input gives
        # the same names, so output that mentions them is deterministic
        var = E.Var(f"?{cexpr.render(node)[:40]}#{E.fresh_number()}", E.PARAM)
        if read and E.LOOP in kinds:
            # read at an index that depends on loop counters (`tile = order[t]`): a value per
            # iteration, an uninterpreted function of those counters (one PARAM would be the
            # same value in every iteration)
            counters = _loop_counters(parts)
            if counters:
                return E.App(var.name, counters)
        scalars = tuple(p.ref.name for p in parts if isinstance(p, Obj) and p.kind == "shared" and not p.ref.index)
        if scalars and self.w.model is not None:
            self.w.model.shared_scalar_unknowns[var.name] = scalars
        return var

    def _each_option(self, p: ChoicePtr, name_node: cexpr.Node, ctx: Ctx, walk) -> UnknownPtr | None:
        """An access through a pointer holding one of a few values, each under a block-uniform
        condition: `walk` once per option, with the pointer's name bound to it under its condition
        (None). A pointer not named plainly, or an address only, stands for the unknown pointer
        it may be (returned)."""
        name = _plain_name(name_node)
        if name is None or self._no_elem_access:
            return _unknown_choice(p)
        for cond, v in p.options:
            walk(_bound(ctx, name, v, cond))
        return None

    # -- names --------------------------------------------------------------
    def _ev_name(self, node: cexpr.Name, ctx: Ctx):
        segs = list(node.segments)
        q = self.w.types.qualified_decl(segs, ctx.env)
        if q is not None:
            cur = self.deref(q[0], segs[0].name, ctx, q[1])
            for seg, sargs in q[2]:
                cur = self.member_static(cur, seg, sargs, ctx)
                if cur is None:
                    return E.Var(f"?{cexpr.render(node)}", E.PARAM)
            return cur
        while len(segs) > 1 and segs[0].name in self.w.ns_names:
            segs = segs[1:]
        head, targs = segs[0]
        if len(segs) == 1:
            if head == "size_bytes" and targs is not None:
                return self._size_bytes(targs, ctx)
            v = ctx.env.lookup(head)
            if v is not None:
                if not self._array_base and _local_array(v) and self.w.model is not None:
                    self.w.model.local_array_escapes.add(v.name)  # used as a whole (a call's argument)
                return self.deref(v, head, ctx)
            if head in self.w.mb.macros:
                # a macro whose value is a constant is evaluated once per file: `#define M1 (M0 + M0)`
                # chains stay linear instead of doubling at every level
                known = self.w.mb.macro_constants.get(head)
                if known is not None:
                    return known
                toks = self.w.mb.macros[head]
                sub = cexpr.parse_expression(toks, ctx.env.has)
                val = self.ev(sub, ctx)
                if isinstance(val, E.Const):
                    self.w.mb.macro_constants[head] = val
                return val
            if head in K.CONSTANTS:
                return E.Const(K.CONSTANTS[head])
            if head in ("threadIdx", "blockIdx", "blockDim", "gridDim", "clusterIdx", "clusterDim"):
                return ("builtin", head)
            if head in K.TILE_ALIASES and targs is not None:
                return self.w.types.tile_from_alias(head, targs, ctx.env)
            if head in self.w.mb.functions:
                return Func(head, self.w.mb.functions[head])
            if head in self.w.mb.structs:
                return self.w.types.type_of_value(("struct_decl", self.w.mb.structs[head]), targs, ctx.env)
            if head in K.DTYPE_BYTES:
                return ir.TileType("scalar", head, dtype=head, dtype_bytes=K.DTYPE_BYTES[head])
            return E.opaque(head) if head[:1].islower() else E.Var(f"?{head}", E.PARAM)
        # qualified: a struct's static member, a type's member, a group scope...
        base = ctx.env.lookup(head)
        if base is None and head in self.w.mb.structs:
            base = ("struct_decl", self.w.mb.structs[head])
        if head in K.TILE_ALIASES:
            base = self.w.types.tile_from_alias(head, targs or (), ctx.env)
        cur = self.deref(base, head, ctx, targs) if base is not None else None
        if cur is None and head in K.CONSTANTS:
            return E.Const(K.CONSTANTS[head])
        for seg, sargs in segs[1:]:
            cur = self.member_static(cur, seg, sargs, ctx)
            if cur is None:
                if seg in K.CONSTANTS:
                    return E.Const(K.CONSTANTS[seg])
                return E.Var(f"?{cexpr.render(node)}", E.PARAM)
        return cur

    def deref(self, v, name, ctx: Ctx, targs=None):
        if isinstance(v, tuple) and v and v[0] == "var_decl":
            return self._global_var_value(v[1])
        if isinstance(v, tuple) and v and v[0] in ("alias_decl", "struct_decl"):
            t = self.w.types.type_of_value(v, targs, ctx.env)
            return t
        return v

    def _global_var_value(self, cursor):
        key = ("var", cursor.hash)
        if key in self.w.struct_cache:
            return self.w.struct_cache[key]
        self.w.struct_cache[key] = E.Var(f"?{cursor.spelling}", E.PARAM)
        toks = tokens_of(cursor)
        env = self.w.types.env_for_decl(cursor)
        val = None
        if cursor.spelling in toks:
            rest = toks[toks.index(cursor.spelling) + 1 :]
            if rest and rest[0] == "=":
                node = cexpr.parse_expression(rest[1:], env.has)
                val = self.ev(node, Ctx(env=env, guard=ir.Guard(), dry=True))
            elif rest and rest[0] == "{":
                node = cexpr.parse_expression(rest[1:-1], env.has)
                val = self.ev(node, Ctx(env=env, guard=ir.Guard(), dry=True))
        if not isinstance(val, Expr):
            val = E.Var(f"?{cursor.spelling}", E.PARAM)
        self.w.struct_cache[key] = val
        return val

    def member_static(self, cur, seg, sargs, ctx: Ctx):
        if isinstance(cur, StructType):
            m = cur.env.vars.get(seg)
            if m is None:
                return None
            if isinstance(m, Func):
                return m
            return self.deref(m, seg, Ctx(env=cur.env, guard=ctx.guard, dry=True), sargs)
        if isinstance(cur, ir.TileType):
            return _tile_attr(cur, seg)
        if isinstance(cur, GroupScope):
            return ("groupfn", cur.warps, seg, sargs)
        return None

    def _size_bytes(self, targs, ctx: Ctx) -> Expr:
        total: Expr = E.Const(0)
        for a in targs:
            t = self.w.resolve_type(a, ctx.env)
            if isinstance(t, StructType):
                t = self.w.stmts.struct_tile_type(t)
            s = t.size_bytes() if isinstance(t, ir.TileType) else None
            if s is None:
                return E.opaque("size_bytes")
            total = E.binop("+", total, s)
        return total

    # -- members -------------------------------------------------------------
    def _ev_member(self, node: cexpr.Member, ctx: Ctx, cursor):
        obj = self.ev(node.obj, ctx, cursor)
        field_name = node.field
        if isinstance(obj, NamedBar) and field_name == "barrier_id":
            return obj.id if obj.id is not None else E.opaque("barrier_id")
        if isinstance(obj, tuple) and obj and obj[0] == "builtin":
            b = obj[1]
            dims = self.w.model.block_dims if self.w.model is not None else None
            if dims is not None and field_name in ("x", "y", "z"):
                return _position_in_block(b, field_name, dims)
            if b in ("threadIdx", "blockDim") and field_name in ("y", "z") and self.w.model is not None:
                self.w.model.reads_yz_without_shape = self.w.model.reads_yz_without_shape or f"{b}.{field_name}"
            if b == "threadIdx":
                return {"x": E.TID, "y": E.TID_Y, "z": E.TID_Z}.get(field_name, E.opaque("threadIdx"))
            if (
                b == "blockDim"
                and field_name == "x"
                and self.w.model is not None
                and self.w.model.block_threads is not None
            ):
                return self.w.model.block_threads
            if b == "blockDim" and field_name in ("y", "z"):
                return E.Const(1)
            return E.Var(f"{b}.{field_name}", E.PARAM)
        if isinstance(obj, Rec):
            if obj.path is not None and field_name in obj.scalars and ctx.env.has(f"{obj.path}.{field_name}"):
                return ctx.env.lookup(f"{obj.path}.{field_name}")
            v = obj.fields.get(field_name)
            return v if v is not None else E.Var(f"?{obj.type_name}.{field_name}", E.PARAM)
        if isinstance(obj, Obj):
            t = obj.type
            if t is not None and t.kind == "struct":
                for mname, mtype, count in t.members:
                    if mname == field_name:
                        kind = (
                            "barrier"
                            if mtype.kind == "semaphore"
                            else ("buffer" if mtype.kind in ("st", "sv") else obj.kind)
                        )
                        sub = Obj(
                            kind,
                            ir.Ref(f"{obj.ref.name}.{mname}", obj.ref.index),
                            ir.TileType("array", mtype.spelling, element=mtype, count=count)
                            if count is not None
                            else mtype,
                        )
                        return sub
            if t is not None and t.kind == "gl":
                if field_name in ("rows", "cols", "batch", "depth"):
                    # TK before 2025-03 spelled the sizes as members (`g.a.cols`): the same
                    # uniform value as the later `g.a.cols()`
                    return E.Var(f"{obj.ref}.{field_name}()", E.PARAM)
                return ("glmethod", obj, field_name)
            if field_name == "data" and obj.kind == "buffer" and t is not None and t.kind in ("st", "sv") and t.dtype:
                # the raw element array of a shared tile/vector: `colpart[w].data[i]`
                return Obj(
                    "smem_data", obj.ref, ir.TileType("scalar", t.dtype, dtype=t.dtype, dtype_bytes=t.dtype_bytes)
                )
            if t is not None:
                a = _tile_attr(t, field_name)
                if a is not None:
                    return a
            if obj.kind == "regtile":
                # a part of a register tile (`reg.tiles[0][i].data[0]`): registers of the thread,
                # no memory (a uniform unknown here would be taken for a global pointer)
                return Obj("regtile", ir.Ref(f"{obj.ref.name}.{field_name}", obj.ref.index))
            return E.Var(f"?{obj.ref}.{field_name}", E.PARAM)
        if isinstance(obj, Allocator):
            return ("allocmethod", obj, field_name, node.targs)
        if isinstance(obj, Expr):
            gp = node.arrow and self._global_pointer(obj)
            if gp and not self._no_elem_access and cursor is not None:
                # `p->field` of a pointer into global memory (a kernel's struct pointer, `volatile
                # Acc *a = acc; a->sum`): a plain load of that field (volatile is no acquire)
                where = f"->{field_name}" if self.one_word(obj) else None
                self.global_load(node, ctx, cursor, base=self.global_base(obj), where=where)
            value = self.opaque_from(node, (obj,))
            gb = self.global_base(obj) if gp else None
            if gb is not None and isinstance(value, E.Var):
                # an array (or pointer) field of the record, indexed later (`q->seq[slot]`): the
                # memory `p->field` names, one base per field whatever the index's uniformity
                self._global_ptrs[value.name] = f"{gb}->{field_name}"
            return value
        if (
            isinstance(obj, tuple)
            and field_name in ("x", "y", "z", "w")
            and obj
            and all(isinstance(v, Expr) for v in obj)
        ):
            # a CUDA vector value built by a braced list (`int2 rc = {r, c}; rc.x`)
            i = "xyzw".index(field_name)
            return obj[i] if i < len(obj) else E.opaque(cexpr.render(node))
        if isinstance(obj, _ArrVal):
            return obj
        return E.opaque(cexpr.render(node))

    # -- assignment ----------------------------------------------------------
    def _overloaded_update(self, node: cexpr.Assign, ctx: Ctx, cursor) -> Rec | None:
        """`++pos`, `pos++`, `pos += k` on a local object of a user struct whose struct defines
        that operator (a pipeline state's `operator++` advancing slot and phase): the operator's
        body inlined on the object, so its fields change as the method changes them. None when
        the target is no such object (the update is arithmetic)."""
        assert isinstance(node.target, cexpr.Name)
        obj = ctx.env.lookup(node.target.segments[0].name)
        if not isinstance(obj, Rec) or obj.struct is None:
            return None
        members = obj.struct.env.vars
        f, args = None, [node.value]
        if node.op in ("+=", "-=") and isinstance(node.value, cexpr.Num) and node.value.value == 1:
            # the parser spells `++x` / `x++` as `x += 1`: the struct's own increment first
            f, args = members.get("operator++" if node.op == "+=" else "operator--"), []
        if not isinstance(f, Func):
            f, args = members.get(f"operator{node.op}"), [node.value]
        if not isinstance(f, Func):
            return None
        self.w.inline.expand(f, args, ctx, cursor, None, this=obj)
        return obj

    def assign(self, node: cexpr.Assign, ctx: Ctx, cursor, value: Any = None):
        op, lhs, rhs = node.op, node.target, node.value
        if op != "=" and isinstance(lhs, cexpr.Name) and len(lhs.segments) == 1:
            rec = self._overloaded_update(node, ctx, cursor)
            if rec is not None:
                return rec
        # `value`: the right-hand side evaluated already (a store through each option of a ChoicePtr)
        val = self.ev(rhs, ctx, cursor) if value is None else value
        arr = ctx.env.lookup(name) if isinstance(lhs, cexpr.Index) and (name := _plain_name(lhs.obj)) else None
        if _local_array(arr) and isinstance(lhs, cexpr.Index):
            # `key[j] = v` into a local array of scalars: no memory event; the value is remembered
            # for the array's reads (an expression, a compound update: a value not known)
            if not ctx.dry:
                with self.memory_only():
                    self.ev(lhs.index, ctx, cursor)  # the index is read
            if self.w.model is not None:
                stored = (val.name if isinstance(val, E.Var) else E.per_iteration_name(val)) if op == "=" else None
                self.w.model.local_array_stores.setdefault(arr.name, []).append(stored)
            return val
        if isinstance(lhs, (cexpr.Index, cexpr.Un)) and (lhs.op == "*" if isinstance(lhs, cexpr.Un) else True):
            pnode = lhs.obj if isinstance(lhs, cexpr.Index) else lhs.a
            choice = self.ev(pnode, replace(ctx, dry=True), cursor)
            name = _plain_name(pnode)
            if isinstance(choice, ChoicePtr) and name is not None:
                # `p[i] = v` through a pointer of a few values: a store through each, under its condition
                for cond, v in choice.options:
                    self.assign(node, _bound(ctx, name, v, cond), cursor, value=val)
                return val
        if op == "=" and isinstance(val, tuple) and val and val[0] == "tmem_tile" and not ctx.dry:
            if self._assign_tmem_tile(lhs, val, ctx, cursor):
                return val
        if (
            isinstance(lhs, cexpr.Name)
            and len(lhs.segments) == 1
            and _is_shared_scalar(ctx.env.lookup(lhs.segments[0].name))
        ):
            # a store to a `__shared__` scalar: memory, not a value the walk binds to the name
            target = ctx.env.lookup(lhs.segments[0].name)
            if op != "=":
                self.scalar_access(target, "read", ctx, cursor)
            self.scalar_access(target, "write", ctx, cursor, value=val if isinstance(val, Expr) else None)
            return val
        if _is_shared_scalar(val):
            val = shared_copy(cexpr.render(lhs)[:30], val)  # a copy of a `__shared__` scalar
        if isinstance(lhs, cexpr.Name) and len(lhs.segments) == 1:
            name = lhs.segments[0].name
            if op != "=":
                old = ctx.env.lookup(name)
                if isinstance(old, Expr) and isinstance(val, Expr):
                    val = E.binop(op[:-1], old, val)
                elif isinstance(old, Expr) and _is_shared_element(val):
                    # `sum += counts[g]`: as `sum + counts[g]` is (`opaque_from`), an unknown that
                    # is block-uniform where the element's index is
                    val = self.opaque_from(node, (old, val))
                else:
                    val = E.opaque(f"{name}{op}")
            old = ctx.env.lookup(name)
            new = val
            if op == "=":
                self.note_phasebit_set(name, new, ctx, cursor)
            if not ctx.env.assign(name, new):
                ctx.env.define(name, new)
            return new
        if isinstance(lhs, (cexpr.Index, cexpr.Un)) and (lhs.op == "*" if isinstance(lhs, cexpr.Un) else True):
            through = self.ev(lhs.obj if isinstance(lhs, cexpr.Index) else lhs.a, replace(ctx, dry=True), cursor)
            if isinstance(through, ChoicePtr):
                through = _unknown_choice(through)
            if isinstance(through, UnknownPtr):
                # `p[i] = v` / `*p = v` through a pointer whose target the walk does not follow
                if isinstance(lhs, cexpr.Index) and not ctx.dry:
                    with self.memory_only():
                        self.ev(lhs.index, ctx, cursor)
                if op != "=":
                    self.unknown_access(through, "read", ctx, cursor)
                self.unknown_access(through, "write", ctx, cursor)
                return val
        if isinstance(lhs, cexpr.Index):
            # a store into a shared array element (`x[i] = v`, `tile.data[i] += v`)
            self._no_elem_access += 1
            try:
                target = self.ev(lhs, replace(ctx, dry=True), cursor)
            finally:
                self._no_elem_access -= 1
            if not ctx.dry:
                # the index is read (`out[tile * n + i] = v` loads the shared `tile`)
                with self.memory_only():
                    self.ev(lhs.index, ctx, cursor)
            if op != "=":
                self._elem_access(target, "read", ctx, cursor)
            self._elem_access(target, "write", ctx, cursor, value=val if op == "=" and isinstance(val, Expr) else None)
            if self.global_target(lhs, ctx, cursor):
                base = self.address_base(lhs.obj, ctx, cursor)
                index = pointer = element = None
                if not ctx.dry and cursor is not None:
                    obj = self.ev(lhs.obj, replace(ctx, dry=True), cursor)
                    idx = self.ev(lhs.index, replace(ctx, dry=True), cursor)
                    index = self._param_index(obj, idx)
                    if isinstance(obj, Expr) and isinstance(idx, Expr):
                        pointer, element = obj, idx
                if op != "=" and not ctx.dry and cursor is not None:
                    # `p[i] += x` reads p[i] first (the index is not evaluated twice); the
                    # element it reads is the one it stores
                    self.global_load(lhs, ctx, cursor, base=base, index=index)
                self.global_store(lhs, ctx, cursor, base=base, index=index, pointer=pointer, element=element)
            return val
        if isinstance(lhs, cexpr.Un) and lhs.op == "*":
            # `*p = v` through a pointer the kernel received (or an address computed from one,
            # `float *c = &C[i]`): a plain store to global memory
            ptr = self.ev(lhs.a, replace(ctx, dry=True), cursor)
            if op == "=" and not ctx.dry and _vector_width(lhs.a, ptr):
                # `*reinterpret_cast<uint4 *>(&a_s[r][c]) = v`: a store of the elements the vector
                # covers, lowered to its first element's (knowledge/ops.VECTOR_TYPE_BYTES), as a
                # wide load is (`_ev_unary`)
                self._elem_access(ptr, "write", ctx, cursor)
                return val
            if self._global_pointer(ptr):
                if op != "=" and not ctx.dry:
                    self.ev(lhs, ctx, cursor)  # `*c += v` reads *c
                self.global_store(
                    lhs,
                    ctx,
                    cursor,
                    base=self.global_base(ptr),
                    where="" if self.one_word(ptr) else None,
                    value=val if op == "=" and isinstance(val, Expr) else None,
                    pointer=ptr if isinstance(ptr, Expr) else None,
                    element=E.Const(0),
                    index=self.element_index(ptr),
                )
            return val
        if isinstance(lhs, cexpr.Member):
            # record fields written by callbacks: `args.num_iters = ...`
            obj = self.ev(lhs.obj, replace(ctx, dry=True), cursor)
            if lhs.arrow and isinstance(obj, Expr) and self._global_pointer(obj):
                # `p->field = v` through a pointer into global memory: a plain store of the field
                if op != "=" and not ctx.dry:
                    self.ev(lhs, ctx, cursor)  # `p->f += v` reads p->f
                self.global_store(
                    lhs, ctx, cursor, base=self.global_base(obj), where=f"->{lhs.field}" if self.one_word(obj) else None
                )
                return val
            if (
                isinstance(obj, Rec)
                and obj.path is not None
                and lhs.field in obj.scalars
                and ctx.env.has(f"{obj.path}.{lhs.field}")
            ):
                key = f"{obj.path}.{lhs.field}"
                if op != "=":
                    old = ctx.env.lookup(key)
                    val = (
                        E.binop(op[:-1], old, val) if isinstance(old, Expr) and isinstance(val, Expr) else E.opaque(key)
                    )
                elif "." + lhs.field in self.w.mb.phase_bitfields():
                    # a phase bitfield kept in a record (`regs.phasebits = 0xFFFF0000`)
                    self.note_phasebit_set(key, val, ctx, cursor, known=True)
                ctx.env.assign(key, val)
                return val
            if isinstance(obj, Rec):
                if op != "=":
                    old = obj.fields.get(lhs.field)
                    val = (
                        E.binop(op[:-1], old, val)
                        if isinstance(old, Expr) and isinstance(val, Expr)
                        else E.opaque(lhs.field)
                    )
                obj.fields[lhs.field] = val
        return val

    def _assign_tmem_tile(self, lhs: cexpr.Node, val, ctx: Ctx, cursor) -> bool:
        """`d = tm.allocate<TT>(col)` / `d[i] = tm.allocate<TT>(col)` into a declared TMEM tile (an
        array filled by a loop of constant trip: one element per iteration)."""
        m = self.w.model
        if m is None:
            return False
        _, alloc, t, lane, col = val
        if isinstance(lhs, cexpr.Name) and len(lhs.segments) == 1:
            name = lhs.segments[0].name
            old = ctx.env.lookup(name)
            if isinstance(old, Obj) and old.kind == "tmem" and not old.ref.index:
                loc = loc_of(cursor, self.w.filename) if cursor is not None else m.location
                m.tmem_tiles[name] = ir.TmemTile(name, old.type or t, alloc, ((lane, col),), (), loc)
                return True
            return False
        if not (isinstance(lhs, cexpr.Index) and isinstance(lhs.obj, cexpr.Name) and len(lhs.obj.segments) == 1):
            return False
        name = lhs.obj.segments[0].name
        tile = m.tmem_tiles.get(name)
        if tile is None or len(tile.dims) != 1:
            return False
        idx = self.ev(lhs.index, replace(ctx, dry=True), cursor)
        if not isinstance(idx, Expr):
            return False
        elems = list(tile.elements)
        points: list[dict] = [{}]
        loop_vars = [v for v in idx.free_vars() if v.kind == E.LOOP]
        if loop_vars:
            if len(loop_vars) != 1 or not ctx.loops:
                return False
            lp = m.loops.get(ctx.loops[-1])
            trip = lp.trip.eval({}) if lp is not None and lp.trip is not None else None
            if lp is None or lp.counter.name != loop_vars[0].name or not isinstance(trip, int) or trip > 64:
                return False
            points = [{lp.counter.name: E.Const(j)} for j in range(trip)]
        for env in points:
            i = E.substitute(idx, env).eval({})
            if not isinstance(i, int) or not 0 <= i < len(elems):
                return False
            elems[i] = (
                E.substitute(lane, env) if isinstance(lane, Expr) else lane,
                E.substitute(col, env) if isinstance(col, Expr) else col,
            )
        m.tmem_tiles[name] = ir.TmemTile(
            name, tile.type or t, alloc or tile.allocator, tuple(elems), tile.dims, tile.location
        )
        return True

    def _elem_access(self, v, access: str, ctx: Ctx, cursor, value: Expr | None = None):
        """A generic load/store of one element of shared memory: an element of a
        `__shared__ T x[...]` array or of a tile's `.data[...]`, as an SMEM_ACCESS op
        whose buffer Ref carries the per-thread index expressions."""
        if self._no_elem_access and access == "read":
            return
        if isinstance(v, Obj) and v.kind == "local" and v.ref.index and cursor is not None:
            # an element of a local register array (`acc[i]`): a register access
            self.emit(
                ir.Op(
                    ir.REG_ACCESS,
                    "register write" if access == "write" else "register read",
                    loc_of(cursor, self.w.filename),
                    ctx.guard,
                    ctx.loops,
                    buffer=v.ref,
                    access=ir.AccessFacts(access, via="local", tile_type=v.type),
                ),
                ctx,
            )
            return
        if (
            not isinstance(v, Obj)
            or v.kind not in ("shared", "smem_data")
            or v.type is None
            or v.type.kind != "scalar"
            or not v.ref.index
            or cursor is None
        ):
            return
        self.emit(
            ir.Op(
                ir.SMEM_ACCESS,
                "shared store" if access == "write" else "shared load",
                loc_of(cursor, self.w.filename),
                ctx.guard,
                ctx.loops,
                buffer=v.ref,
                access=ir.AccessFacts(
                    access, via="element", tile_type=v.type, cta=v.cta, volatile=v.volatile, value=value
                ),
            ),
            ctx,
        )

    def _chosen_pointer(self, node: cexpr.Node, c, a, b, ctx: Ctx) -> ChoicePtr | UnknownPtr | None:
        """`c ? x : y` of two different pointers (`float *p = odd ? ping : pong;`): under a
        block-uniform condition a ChoicePtr of the two (an access through it is one per option,
        under its condition), under any other an UnknownPtr; None when no operand is a pointer."""
        from . import loop_pointers

        spaces = {loop_pointers.pointer_space(v, self) for v in (a, b)}
        if spaces == {None} or a == b:
            return None
        if None in spaces and any(_element_read(v) for v in (a, b)):
            # `c ? part[i] : 0.0f`: an element beside a value that is no pointer is read, and the
            # expression is that value (C++: an lvalue beside a prvalue is a prvalue), no object
            return None
        name = cexpr.render(node)[:40]
        if isinstance(c, Expr) and None not in spaces and len(spaces) == 1:
            cls, cexp = self.w.stmts._classify(_to_bool(c), ctx)
            if cls == "uniform" and isinstance(cexp, Expr):
                return ChoicePtr(name, ((cexp, a), (E.negate(cexp), b)))
        merged = loop_pointers.merged(name, a, b, self)
        if merged is None:
            return None
        return replace(merged, why=f"`{name}` chooses its object by a condition that is not block-uniform")

    def unknown_access(self, ptr: UnknownPtr, access: str, ctx: Ctx, cursor) -> None:
        """A load or store through a pointer whose target is not followed (`UnknownPtr`): an
        UNKNOWN_ACCESS event at the user's line, so the memory engine leaves what it may touch
        undecided (never no event, never a finding)."""
        if cursor is None:
            return
        verb = "store" if access == "write" else "load"
        self.emit(
            ir.Op(
                ir.UNKNOWN_ACCESS,
                f"{ptr.space} {verb} through `{ptr.name}`",
                loc_of(cursor, self.w.filename),
                ctx.guard,
                ctx.loops,
                buffer=ir.Ref(ptr.name),
                operands=tuple(ir.Ref(c) for c in ptr.candidates),
                access=ir.AccessFacts(access, via=f"{ptr.space} pointer"),
            ),
            ctx,
        )
        if self.w.model is not None and not ctx.dry:
            self.w.model.pointer_unknowns[ptr.name] = ptr.why

    def read_value(self, v):
        """In a condition walked for its memory events (`_memory_only`), a `__shared__` scalar read
        there stands for the value it loaded: the Var its SMEM_ACCESS names (`AccessFacts.result`),
        so a spin's condition `while (i - head >= N)` is an Expr over it. Anything else: v."""
        if self._memory_only and _is_shared_scalar(v):
            return self._scalar_reads.get(v.ref.name, v)
        return v

    def scalar_access(
        self,
        v,
        access: str,
        ctx: Ctx,
        cursor,
        atomic: str | None = None,
        value: Expr | None = None,
        order: str | None = None,
        scope: str | None = None,
        result: str | None = None,
        old: str | None = None,
        operand: Expr | None = None,
    ):
        """A generic load/store (or an atomic) of a `__shared__` scalar variable: an SMEM_ACCESS op
        via "scalar", its buffer Ref the variable's name."""
        if cursor is None or ctx.dry or self.w.model is None:
            return
        if self._memory_only and access == "read" and atomic is None:
            loaded = E.Var(f"?{v.ref.name}#{E.fresh_number()}", E.PARAM)
            self._scalar_reads[v.ref.name] = loaded
            result = loaded.name
        self.emit(
            ir.Op(
                ir.SMEM_ACCESS,
                f"shared {'store' if access == 'write' else 'load'} {v.ref.name}" if atomic is None else atomic,
                loc_of(cursor, self.w.filename),
                ctx.guard,
                ctx.loops,
                buffer=v.ref,
                access=ir.AccessFacts(
                    access,
                    via="scalar",
                    tile_type=v.type,
                    atomic=atomic,
                    value=value,
                    volatile=getattr(v, "volatile", False),
                    result=result,
                    order=order,
                    scope=scope,
                    old=old,
                    operand=operand,
                ),
            ),
            ctx,
        )

    def global_load(
        self, node, ctx, cursor, *, base: str | None, index=None, where: str | None = None, value: str | None = None
    ):
        """A plain (weak) load of global memory: `p[i]`, `*p`, `p->field`, the read of `p[i] += x`;
        `value`: the Var the load's value is (where the caller made one)."""
        self.emit(
            ir.Op(
                ir.GLOBAL_LOAD,
                "load",
                loc_of(cursor, self.w.filename),
                ctx.guard,
                ctx.loops,
                global_access=ir.GlobalAccessFacts(
                    "weak", cexpr.render(node)[:80], form="plain", base=base, index=index, where=where, value=value
                ),
            ),
            ctx,
        )

    def global_store(
        self,
        lhs: cexpr.Node,
        ctx: Ctx,
        cursor,
        base: str | None = None,
        index=None,
        where: str | None = None,
        value=None,
        pointer: Expr | None = None,
        element: Expr | None = None,
    ):
        """A plain (weak) store to global memory: `p[i] = v`, `g.layout[{...}] = v`, `*p = v`
        (`pointer` / `element`: p and i, round 10)."""
        if cursor is None:
            return
        self.emit(
            ir.Op(
                ir.GLOBAL_STORE,
                "store",
                loc_of(cursor, self.w.filename),
                ctx.guard,
                ctx.loops,
                global_access=ir.GlobalAccessFacts(
                    "weak",
                    cexpr.render(lhs)[:80],
                    form="plain",
                    base=base,
                    index=index,
                    where=where,
                    operands=(value,) if value is not None else (),
                    pointer=pointer,
                    element=element,
                ),
            ),
            ctx,
        )

    def _param_index(self, base, idx) -> Expr | None:
        """`p[i]` of a kernel pointer parameter itself (not of a pointer computed from one): i;
        `q[i]` of a local pointer `q = p + off` (a block's slice, `mine = v + blockIdx.x * SLICE`):
        off + i."""
        if (
            isinstance(base, E.Bin)
            and base.op == "+"
            and isinstance(idx, Expr)
            and not idx.is_opaque()
            and not base.b.is_opaque()
            and not base.b.depends_on(E.OPAQUE)
        ):
            inner = self._param_index(base.a, base.b)
            return None if inner is None else E.binop("+", inner, idx)
        if (
            isinstance(base, E.Var)
            and base.kind == E.PARAM
            and not base.name.startswith("?")
            and base.name not in self._global_ptrs
            and isinstance(idx, Expr)
            and not idx.is_opaque()
        ):
            return idx
        return None

    def bitfield_name(self, node, ctx: Ctx, cursor) -> str | None:
        """The name a phase bitfield argument stands for: a variable (`bits`), or a scalar field of
        a record variable (`regs.phasebits`, also inside the functions it is passed to by
        reference: the record's own path)."""
        if isinstance(node, cexpr.Name) and len(node.segments) == 1:
            return node.segments[0].name
        if isinstance(node, cexpr.Member):
            obj = self.ev(node.obj, replace(ctx, dry=True), cursor)
            if isinstance(obj, Rec) and obj.path is not None and node.field in obj.scalars:
                return f"{obj.path}.{node.field}"
        return None

    def note_phasebit_set(self, name, value, ctx: Ctx, cursor, known: bool = False):
        """A phase bitfield (re)initialised to a constant: an op, so that phase
        reasoning across nested loops can find where the bits were last set."""
        if ctx.dry or self.w.model is None or cursor is None:
            return
        if not known and name not in self.w.mb.phase_bitfields():
            return
        if not isinstance(value, E.Const) or not isinstance(value.value, int) or isinstance(value.value, bool):
            return
        self.emit(
            ir.Op(
                ir.PHASEBIT_SET,
                "phasebit",
                loc_of(cursor, self.w.filename),
                ctx.guard,
                ctx.loops,
                phasebit=ir.PhasebitFacts(name, value=value.value),
            ),
            ctx,
        )


def _local_array(v: Any) -> bool:
    """v is the unknown a declaration without initialiser binds to a local of a scalar type
    (`unsigned key[8];`, walk_statements: `?uninit key#N`): a local array whose elements the
    walk keeps no value of."""
    return isinstance(v, E.Var) and v.kind == E.OPAQUE and v.name.startswith("?uninit ")


def _local_element(value: E.Var, idx: Any, ctx: Ctx) -> Expr:
    """The value of a local array's element read inside loops (`n = len[t]`, `c = coord[0]` of an
    array the loop body fills anew): one value per iteration of every enclosing loop (the index
    may move with a counter, the body may store into the array each iteration), as a memory read
    at a loop-dependent index is (`E.App`). Its arguments are those loops' counters and the
    read's own unknown (an OPAQUE term): still a value the model does not know,
    that may differ between threads (a local array is each thread's own), where one name for the
    whole loop made iterations t and t + 1 read one value (a per-iteration trip count run with
    one value by the progress search). Outside every loop (and with no counter in the index) it
    keeps its one name (`E.per_iteration`: the read's unknown is the function's name and its last
    argument, so `local_array_reads` and `checks/inputs.py` find it as before)."""
    found: dict[str, E.Var] = {f"k{lid}": E.Var(f"k{lid}", E.LOOP) for lid in ctx.loops}
    for v in idx.free_vars() if isinstance(idx, Expr) else ():
        if v.kind == E.LOOP:
            found.setdefault(v.name, v)
    return E.per_iteration(value, tuple(found[n] for n in sorted(found)))


def _plain_name(n: cexpr.Node) -> str | None:
    """The variable a node names (`src`), or None."""
    return n.segments[0].name if isinstance(n, cexpr.Name) and len(n.segments) == 1 else None


def _bound(ctx: Ctx, name: str, value: Any, cond: Expr) -> Ctx:
    """ctx with `name` bound to one option of a ChoicePtr, under its condition."""
    env = ctx.env.child()
    env.define(name, value)
    return replace(ctx, env=env, guard=ctx.guard.with_uniform(cond))


def _unknown_choice(c: ChoicePtr) -> UnknownPtr:
    """A ChoicePtr reached where its options cannot be taken one by one (`&p[i]`, `(p + 1)[i]`)."""
    return UnknownPtr(
        c.name, "unknown", (), f"`{c.name}` holds one of several objects by the iteration: not followed here"
    )


def _vector_width(pnode: cexpr.Node, ptr) -> int | None:
    """How many elements of a shared array a store through `pnode` covers, where pnode is a cast
    to a pointer of a CUDA vector type (`reinterpret_cast<uint4 *>(&x[i])`, `(float4 *)&x[i]`) of
    an element of a `__shared__` array of scalars that the vector's size is a multiple of; None
    otherwise (the access is no wide one)."""
    if not (isinstance(ptr, Obj) and ptr.kind == "shared" and ptr.type is not None and ptr.type.kind == "scalar"):
        return None
    if not ptr.ref.index or not ptr.type.dtype_bytes or not isinstance(pnode, cexpr.Cast):
        return None
    # the cast's type: words (`(const uint4 *)`, one `*`) or a bare name (the parser reads
    # `reinterpret_cast<uint4 *>` as the name; the dereference makes it a pointer)
    if isinstance(pnode.type, cexpr.TypeWords):
        words = pnode.type.words
        if words.count("*") != 1 or words[-1] != "*":
            return None
    elif isinstance(pnode.type, cexpr.Name) and len(pnode.type.segments) == 1:
        words = (pnode.type.segments[0].name,)
    else:
        return None
    named = [w for w in words if w in K.VECTOR_TYPE_BYTES]
    if len(named) != 1:
        return None
    size = K.VECTOR_TYPE_BYTES[named[0]]
    if size % ptr.type.dtype_bytes or size <= ptr.type.dtype_bytes:
        return None
    return size // ptr.type.dtype_bytes


def _pointee_bytes(pnode: cexpr.Node) -> int | None:
    """The size of what a cast pointer points to (`reinterpret_cast<float4 *>(x)`, `(const int2 *)p`:
    16, 8), for the CUDA vector types and the element types of knowledge/ops; None when pnode is
    no such cast."""
    if not isinstance(pnode, cexpr.Cast):
        return None
    if isinstance(pnode.type, cexpr.TypeWords):
        words = pnode.type.words
        if words.count("*") != 1 or words[-1] != "*":
            return None
        words = tuple(w for w in words[:-1] if w not in ("const", "volatile", "__restrict__"))
    elif isinstance(pnode.type, cexpr.Name) and len(pnode.type.segments) == 1:
        # the parser reads `reinterpret_cast<uint4 *>` as the name (as `_vector_width` says)
        words = (pnode.type.segments[0].name,)
    else:
        return None
    name = " ".join(words)
    return K.VECTOR_TYPE_BYTES.get(name) or K.DTYPE_BYTES.get(name)


def _element_value(v) -> bool:
    """v is an element of a `__shared__` array of scalars named as such (`x[i]`), not a pointer
    the program made (`&x[i]`, `x + i`: `Obj.elem_ptr`; a byte array's element: a region)."""
    return _is_shared_element(v) and not v.elem_ptr and (v.type.dtype_bytes or 0) > 1


def _element_pointer(v):
    """`&x[i]` / `x + i` of a `__shared__` array of scalars: the element, marked as a pointer the
    program made (`Obj.elem_ptr`); anything else as it is. A byte array (`extern __shared__
    uint8_t dyn[]`) is carved into regions that keep their own element index (`dyn[off][i]`: the
    region at byte `off`, as the proxy and staging checks read it): no such pointer."""
    t = v.type if isinstance(v, Obj) else None
    if isinstance(v, Obj) and v.kind == "shared" and v.ref.index and t is not None and t.kind == "scalar":
        if (t.dtype_bytes or 0) > 1:
            return replace(v, elem_ptr=True, pointee_bytes=None)
    return v


def _declaring_scope(env, name: str):
    """The innermost scope whose own variables hold `name` (None: none does)."""
    e = env
    while e is not None:
        if name in getattr(e, "vars", {}):
            return e
        e = getattr(e, "parent", None)
    return None


def _element_read(v) -> bool:
    """An element of a `__shared__` array of scalars wider than a byte that no `&` made a
    pointer (`part[i]`, not `&part[i]`): where it is an operand of a value, the value read."""
    t = v.type if isinstance(v, Obj) else None
    return (
        isinstance(v, Obj)
        and v.kind == "shared"
        and bool(v.ref.index)
        and not v.elem_ptr
        and t is not None
        and t.kind == "scalar"
        and (t.dtype_bytes or 0) > 1
    )


def _moved_pointer(node: cexpr.Node, op: str, a, b) -> Obj | None:
    """`p + i` / `i + p` / `p - i` where p is a pointer the program made to an element of a
    `__shared__` array of scalars (`Obj.elem_ptr`: `&buf[w][s][0]`, perhaps bound to a helper's
    pointer parameter): a pointer to the element i pointees further on (`p[i]`'s element, by the
    same arithmetic), still a pointer of the same pointee size. None: no such pointer."""
    if op == "+" and isinstance(a, Expr) and isinstance(b, Obj):
        a, b = b, a
    if not isinstance(a, Obj) or not a.elem_ptr or not isinstance(b, Expr):
        return None
    at = _pointer_subscript(node, a, b if op == "+" else E.binop("-", E.Const(0), b))
    return replace(at, elem_ptr=True, pointee_bytes=a.pointee_bytes) if at is not None else None


def _pointer_subscript(nbase: cexpr.Node, base, idx) -> Obj | None:
    """`p[i]` where p points into a `__shared__` array of scalars and pointer arithmetic decides
    the element: a pointer to an element (`&z_s[8]`, `z_s + 8`: z_s[8 + i], not a new dimension),
    or the array or an element cast to a pointer of another size (`reinterpret_cast<float4 *>(x_s)[i]`
    of floats: x_s[4 * i], its first element, as a wide store is lowered). A narrower pointee
    (a byte of an int) addresses part of an element: an unknown index (no two such accesses are
    claimed to meet). None: no such subscript (the plain one applies)."""
    if not isinstance(idx, Expr):
        return None
    if isinstance(base, _ArrVal):
        obj, dims = base.obj, list(base.dims)
        et = obj.type
        if obj.kind != "shared" or et is None or et.kind != "scalar" or (et.dtype_bytes or 0) <= 1 or not dims:
            return None  # (a byte array is carved into regions: `_element_pointer`)
        pb = _pointee_bytes(nbase)
        if pb is None or pb == et.dtype_bytes:
            return None  # `x[i]`: the plain subscript
        if pb % et.dtype_bytes:
            return obj.at(E.opaque("index"), et, cexpr.spelled(nbase))
        lin = E.binop("*", idx, E.Const(pb // et.dtype_bytes))
        # the linear element, split over the array's (remaining) dimensions, row-major
        sizes = [d.eval({}) if isinstance(d, Expr) else d for d in dims[1:]]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in sizes):
            return None
        parts: list[Expr] = []
        rest = 1
        for n in reversed(sizes):
            parts.append(E.binop("%", E.binop("/", lin, E.Const(rest)) if rest > 1 else lin, E.Const(n)))
            rest *= n
        parts.append(E.binop("/", lin, E.Const(rest)) if rest > 1 else lin)
        res = obj
        for ix in reversed(parts):
            res = res.at(ix, et)
        return Obj(
            res.kind, ir.Ref(res.ref.name, res.ref.index, cexpr.spelled(nbase)), et, cta=obj.cta, volatile=obj.volatile
        )
    if not isinstance(base, Obj) or base.kind != "shared" or not base.ref.index or not base.elem_ptr:
        return None
    et = base.type
    if et is None or et.kind != "scalar" or not et.dtype_bytes:
        return None
    pb = base.pointee_bytes or et.dtype_bytes
    if pb % et.dtype_bytes:
        step: Expr = E.opaque("index")
    else:
        step = E.binop("*", idx, E.Const(pb // et.dtype_bytes)) if pb != et.dtype_bytes else idx
    last = base.ref.index[-1]
    index = base.ref.index[:-1] + (E.binop("+", last, step) if isinstance(last, Expr) else E.opaque("index"),)
    return Obj(base.kind, ir.Ref(base.ref.name, index, cexpr.spelled(nbase)), et, cta=base.cta, volatile=base.volatile)


def _shared_flag(v):
    """An operand of `&&` / `||` that is a `__shared__` scalar (`if (am_last && t < 128)`): an
    unknown value named for the flag it reads, as a whole condition `if (am_last)` is
    (`StatementWalk._walk_if`). Anything else: v."""
    if isinstance(v, Obj) and v.kind == "shared" and not v.ref.index and _is_shared_scalar(v):
        return E.Var(f"?shared:{v.ref.name}", E.OPAQUE)
    return v


def _is_shared_element(v) -> bool:
    """An element of a `__shared__` scalar array (`counts[g]`), read as a value."""
    return (
        isinstance(v, Obj)
        and v.kind == "shared"
        and bool(v.ref.index)
        and v.type is not None
        and v.type.kind == "scalar"
    )


def _is_shared_scalar(v) -> bool:
    """A `__shared__` scalar variable (not an array, not a tile): `__shared__ int flag;`."""
    return (
        isinstance(v, Obj) and v.kind == "shared" and not v.ref.index and v.type is not None and v.type.kind == "scalar"
    )


def _is_clc_handle(node: cexpr.Node, walker, ctx) -> bool:
    """`sizeof(clc::handle)`, or `sizeof(h)` / `sizeof(h[i])` of a variable the file declares as
    `clc::handle h[...]` (TK's opaque 16-byte CLC response)."""
    text = cexpr.render(node).replace("kittens::", "").replace(" ", "")
    if text == "clc::handle":
        return True
    base = node
    while isinstance(base, cexpr.Index):
        base = base.obj
    if not isinstance(base, cexpr.Name):
        return False
    name = cexpr.render(base).strip()
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return False
    src = walker.mb.source()
    return re.search(r"\bclc\s*::\s*handle\s+" + re.escape(name) + r"\s*[\[;=]", src) is not None


def _shared_array(v: _ArrVal) -> bool:
    """An array of `__shared__` scalars or mbarriers (not a tile array, not a pointer's target)."""
    return isinstance(v.obj, Obj) and v.obj.kind in ("shared", "barrier")


def _position_in_block(builtin: str, axis: str, dims: tuple[int, int, int]):
    """`threadIdx.{x,y,z}` and `blockDim.{x,y,z}` in a block of known shape (X, Y, Z): the model's
    thread is the linear id t = x + X * (y + Y * z), the order in which CUDA numbers a block's
    threads into warps, so x = t % X, y = (t / X) % Y and z = t / (X * Y)."""
    x, y, z = dims
    if builtin == "blockDim":
        return E.Const({"x": x, "y": y, "z": z}[axis])
    if builtin != "threadIdx":
        return E.Var(f"{builtin}.{axis}", E.PARAM)
    if axis == "x":
        return E.TID if y * z == 1 else E.binop("%", E.TID, E.Const(x))
    if axis == "y":
        return E.Const(0) if y == 1 else E.binop("%", E.binop("/", E.TID, E.Const(x)), E.Const(y))
    return E.Const(0) if z == 1 else E.binop("/", E.TID, E.Const(x * y))


def _loop_counters(parts) -> tuple[Expr, ...]:
    """The loop counters the values `parts` are computed from, by name."""
    found: dict[str, E.Var] = {}
    for p in parts:
        exprs = [p] if isinstance(p, Expr) else list(p.ref.index) if isinstance(p, Obj) else []
        for x in exprs:
            for v in x.free_vars():
                if v.kind == E.LOOP:
                    found[v.name] = v
    return tuple(found[n] for n in sorted(found))
