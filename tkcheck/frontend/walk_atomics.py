"""libcu++ / C++ atomic objects as the IR's global memory events (knowledge/ops.py ATOMIC_*).

`cuda::atomic_ref<T, cuda::thread_scope_X> a(x)`, `cuda::atomic<T, scope>` objects (a kernel's
`cuda::atomic<int, ...> *flags`), `cuda::std::atomic` / `atomic_ref` (system scope), and
`cuda::atomic_thread_fence(order, scope)` / `cuda::std::atomic_thread_fence(order)` are the same
events as CUDA's `atomicAdd`, PTX `red` / `atom` / `ld.acquire` / `st.release` and
`__threadfence()`: a GLOBAL_SIGNAL (read-modify-writes and stores), a GLOBAL_LOAD (`load`), a
FENCE, each with its order and scope. Both are read from the syntax tree, never from names:

* the scope is the type's template argument (libclang's template argument of the object's
  canonical type, so aliases and the declaration's default -- `thread_scope_system` -- count);
* the order is the call's `memory_order` argument (an enumerator, or a `constexpr` variable
  whose initialiser is one), else the method's default argument (seq_cst).

The address is the object the atomic refers to: `atomic_ref`'s constructor argument (`sem[t]`),
or the object itself reached through a kernel pointer (`flags[i].load()`, `f->store(1)`); its
kernel pointer parameter is the event's `base`, as for `atomicAdd(&sem[t], 1)`. An atomic_ref of
a `__shared__` scalar is an atomic access of that scalar. What is not modelled (the blocking
`wait` / `notify_*`, operators, an object whose address is not known, an order not evaluated)
is recorded as such at the user's line (`wait(old, order)` is the spin `while (load(order) == old)
{}`, `notify_*` no event: knowledge/ops.py ATOMIC_WAIT_METHODS); the declaration of an object with modelled calls counts
as a modelled census site (`KernelModel.atomic_sites`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from . import cexpr
from .value_types import Obj
from .walk_env import CK, Ctx, loc_of

_SCOPE_NAME = re.compile(r"\bthread_scope_(\w+)")


@dataclass(frozen=True)
class AtomicType:
    """An atomic object's type: which template, its value type, its scope (`THREAD_SCOPES` value)."""

    template: str  # atomic | atomic_ref
    dtype: str | None
    scope: str | None  # sys | gpu | cta | cluster | thread; None: not read


@dataclass(frozen=True)
class AtomicCall:
    """One member call on an atomic object, as libclang sees it."""

    type: AtomicType
    order: str | None  # relaxed | consume | acquire | release | acq_rel | seq_cst; None: not read
    order_index: int | None  # the position of the memory_order parameter
    decl: Any  # the declaration of the object the call is made on (a variable, a parameter), or None


def _strip(c: Any) -> Any:
    while c is not None and c.kind == CK.UNEXPOSED_EXPR:
        kids = list(c.get_children())
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _namespace_of(decl: Any) -> list[str]:
    out = []
    p = decl.semantic_parent
    while p is not None and p.kind == CK.NAMESPACE:
        out.append(p.spelling)
        p = p.semantic_parent
    return out


def _scope_names(ns: Any) -> dict[int, str]:
    """value -> enumerator name of the `thread_scope` enum declared in namespace cursor ns
    (remembered for this check: a cursor's hash names it in its own translation unit only)."""
    from .. import solver

    _ENUMS = solver.memo("walk_atomics.enums")
    key = ns.hash
    if key not in _ENUMS:
        names: dict[int, str] = {}
        for c in ns.get_children():
            if c.kind == CK.ENUM_DECL and c.spelling == "thread_scope":
                for e in c.get_children():
                    if e.kind == CK.ENUM_CONSTANT_DECL:
                        names[e.enum_value] = e.spelling
        _ENUMS[key] = names
    return _ENUMS[key]


def atomic_type(t: Any) -> AtomicType | None:
    """The atomic object type of libclang type t (a pointer's pointee too), or None."""
    try:
        t = t.get_canonical()
        if t.kind.name in ("POINTER", "LVALUEREFERENCE"):
            t = t.get_pointee().get_canonical()
        d = t.get_declaration()
        if d is None or d.spelling not in K.ATOMIC_OBJECT_TEMPLATES:
            return None
        ns = _namespace_of(d)
        if not ns or ns[-1] not in ("cuda", "std"):
            return None
        n = d.get_num_template_arguments()
        dtype = d.get_template_argument_type(0).get_canonical().spelling if n >= 1 else None
        if ns[-1] == "std" or n < 2:
            return AtomicType(d.spelling, dtype, K.THREAD_SCOPES["system"])  # cuda::std::atomic: system scope
        m = _SCOPE_NAME.search(t.spelling.split(",", 1)[1] if "," in t.spelling else "")
        name = m.group(1) if m else None
        if name is None:
            # the default argument (elided in the spelling): the enumerator of the value
            value = d.get_template_argument_value(1)
            full = _scope_names(d.semantic_parent).get(value)
            name = full[len("thread_scope_") :] if full and full.startswith("thread_scope_") else None
        return AtomicType(d.spelling, dtype, K.THREAD_SCOPES.get(name) if name else None)
    except (ValueError, AttributeError):
        return None


def _order_of(c: Any, depth: int = 0) -> str | None:
    """The memory order an expression (or a variable's initialiser) names: the enumerator it
    refers to, through `constexpr` variables (`cuda::std::memory_order_acquire`)."""
    if c is None or depth > 4:
        return None
    for x in c.walk_preorder():
        if x.kind != CK.DECL_REF_EXPR:
            continue
        r = x.referenced
        if r is None or r.kind == CK.ENUM_CONSTANT_DECL:
            # an enumerator (a default argument of a class template's member is not instantiated:
            # its reference is spelled, not resolved)
            spelled = r.spelling if r is not None else x.spelling
            name = spelled[len("memory_order_") :] if spelled.startswith("memory_order_") else spelled
            return name if name in K.MEMORY_ORDERS else None
        if r.kind == CK.VAR_DECL:
            return _order_of(r, depth + 1)
    return None


def _calls_with_member(cursor: Any, mname: str) -> Iterator[tuple[Any, list[Any]]]:
    """(member ref, the call's arguments) of each call `obj.mname(...)` under cursor."""
    todo = [cursor]
    while todo:
        c = todo.pop()
        kids = list(c.get_children())
        if kids and kids[0].kind == CK.MEMBER_REF_EXPR and kids[0].spelling == mname:
            yield kids[0], kids[1:]
        todo.extend(reversed(kids))


def _object_decl(member: Any) -> Any:
    """The variable or parameter declaration of the object a member call is made on."""
    kids = list(member.get_children())
    c = _strip(kids[0]) if kids else None
    while c is not None and c.kind in (CK.ARRAY_SUBSCRIPT_EXPR, CK.UNARY_OPERATOR, CK.PAREN_EXPR):
        inner = list(c.get_children())
        c = _strip(inner[0]) if inner else None
    if c is not None and c.kind == CK.DECL_REF_EXPR and c.referenced is not None:
        if c.referenced.kind in (CK.VAR_DECL, CK.PARM_DECL):
            return c.referenced
    return None


def atomic_calls(cursor: Any, mname: str) -> list[AtomicCall]:
    """The calls `obj.mname(...)` on atomic objects in the statement at cursor."""
    out: list[AtomicCall] = []
    if cursor is None:
        return out
    try:
        for member, args in _calls_with_member(cursor, mname):
            kids = list(member.get_children())
            at = atomic_type(kids[0].type) if kids else None
            if at is None:
                continue
            method = member.referenced
            params = list(method.get_arguments()) if method is not None else []
            idx = next(
                (i for i, p in enumerate(params) if p.type.get_canonical().spelling.endswith("memory_order")), None
            )
            order = None
            if idx is not None:
                # an argument the call does not spell (libclang shows a default argument as an
                # expression without tokens) takes the method's declared default
                spelled = idx < len(args) and next(iter(args[idx].get_tokens()), None) is not None
                order = _order_of(args[idx]) if spelled else _order_of(params[idx]) if idx < len(params) else None
            out.append(AtomicCall(at, order, idx, _object_decl(member)))
    except (ValueError, AttributeError):
        return []
    return out


def _fence_calls(cursor: Any, name: str) -> list[tuple[str | None, str | None]]:
    """(order, scope) of each call of libcu++'s / C++'s `name` (atomic_thread_fence) at cursor."""
    out: list[tuple[str | None, str | None]] = []
    try:
        for c in cursor.walk_preorder():
            if c.kind != CK.CALL_EXPR or c.spelling != name:
                continue
            f = c.referenced
            if f is None or not _namespace_of(f) or _namespace_of(f)[-1] not in ("cuda", "std"):
                continue
            # the arguments the call spells (a default argument is an expression without tokens)
            args = [a for a in c.get_arguments() if next(iter(a.get_tokens()), None) is not None]
            params = list(f.get_arguments())
            order = _order_of(args[0]) if args else (_order_of(params[0]) if params else None)
            if _namespace_of(f)[-1] == "std":
                out.append((order, K.THREAD_SCOPES["system"]))
                continue
            src = args[1] if len(args) > 1 else (params[1] if len(params) > 1 else None)
            scope = None
            if src is not None:
                for x in src.walk_preorder():
                    r = x.referenced if x.kind == CK.DECL_REF_EXPR else None
                    if r is not None and r.kind == CK.ENUM_CONSTANT_DECL and r.spelling.startswith("thread_scope_"):
                        scope = K.THREAD_SCOPES.get(r.spelling[len("thread_scope_") :])
                        break
            out.append((order, scope))
    except (ValueError, AttributeError):
        return []
    return out


class AtomicLowering:
    """The walker's part for libcu++ / C++ atomic objects and atomic_thread_fence."""

    def __init__(self, walker: Any):
        self.w = walker

    # -- declarations ----------------------------------------------------------
    def declared(self, d: Any, init_node: cexpr.Node | None, ctx: Ctx) -> Any:
        """`cuda::atomic_ref<T, S> a(x)` / `= cuda::atomic_ref<T, S>(x)`: the address of x (the
        value the walk binds `a` to); None when d is no atomic_ref bound to an address."""
        at = atomic_type(d.type)
        if at is None or at.template != "atomic_ref" or not isinstance(init_node, cexpr.Call):
            return None
        if len(init_node.args) != 1:
            return None
        v = self._address(init_node.args[0], ctx, d)
        return v if self._known(v) else None

    # -- member calls ----------------------------------------------------------
    def method(self, callee: cexpr.Member, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """`obj.fetch_add(v, order)` & co on an atomic object: its event; NotImplemented when obj
        is no atomic object (libclang's type of the call's object)."""
        mname = callee.field
        calls = atomic_calls(cursor, mname)
        if not calls:
            return NotImplemented
        facts = {(c.type, c.order, c.order_index) for c in calls}
        what = f"{calls[0].type.template}::{mname}"
        if mname in K.ATOMIC_NOTIFY_METHODS:
            # a notify wakes the waiters and orders nothing (the store before it is the release):
            # no event, a modelled site
            for a in args:
                self.w.ev(a, ctx, cursor)
            if not args:
                self._note_site(calls[0].decl)
                return None
            return self._unmodelled([], ctx, cursor, f"{what}: not modelled (arguments)")
        if mname in K.ATOMIC_WAIT_METHODS:
            return self._wait(callee, args, ctx, cursor, calls, what)
        if mname not in K.ATOMIC_METHODS:
            return self._unmodelled(args, ctx, cursor, f"{what}: not modelled (a blocking wait or a notify)")
        if len(facts) != 1:
            return self._unmodelled(args, ctx, cursor, f"{what}: calls of different orders or scopes in one statement")
        call = calls[0]
        kind, rmw = K.ATOMIC_METHODS[mname]
        table = (
            K.ATOMIC_LOAD_ORDER
            if kind == ir.GLOBAL_LOAD
            else K.ATOMIC_STORE_ORDER
            if rmw == "st"
            else K.ATOMIC_RMW_ORDER
        )
        sem = table.get(call.order) if call.order is not None else None
        if sem is None or call.type.scope is None:
            return self._unmodelled(args, ctx, cursor, f"{what}: its memory order or scope is not known")
        target = callee.obj
        temporary = False
        if isinstance(target, cexpr.Call) and len(target.args) == 1 and not callee.arrow:
            target = target.args[0]  # a temporary `cuda::atomic_ref<T, S>(x)`
            temporary = True
        v = self._address(target, ctx, cursor)
        if not self._known(v):
            return self._unmodelled(args, ctx, cursor, f"{what}: an atomic object whose address is not known")
        vals = [self.w.ev(a, ctx, cursor) for i, a in enumerate(args) if i != call.order_index]
        self._note_site(call.decl)
        if temporary and call.decl is None and cursor is not None:
            # the temporary's site is the call's statement (no declaration names the object)
            self._note_row(loc_of(cursor, self.w.filename), call.type.template)
        if isinstance(v, Obj):
            # an atomic_ref of a `__shared__` scalar: an atomic access of it, with its order and
            # scope (atomics do not race with each other; the order is a release / acquire of a
            # hand-off index, checks/shared_handoff.py); a load's value is the Var it returns
            access = "read" if kind == ir.GLOBAL_LOAD else "write"
            loaded = E.opaque(what)
            stored = vals[0] if rmw == "st" and vals and isinstance(vals[0], E.Expr) else None
            self.w.exprs.scalar_access(
                v,
                access,
                ctx,
                cursor,
                atomic=rmw or "load",
                value=stored,
                order=sem,
                scope=call.type.scope,
                result=loaded.name if kind == ir.GLOBAL_LOAD else None,
                old=loaded.name if kind != ir.GLOBAL_LOAD and rmw not in ("st", "cas") else None,
                operand=vals[0] if rmw not in ("st", "cas") and vals and isinstance(vals[0], E.Expr) else None,
            )
            return loaded
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        old = E.opaque(what)
        self.w.emit(
            ir.Op(
                kind,
                f"cuda::{what}",
                loc,
                ctx.guard,
                ctx.loops,
                global_access=ir.GlobalAccessFacts(
                    sem,
                    cexpr.render(cexpr.Call(callee, tuple(args)))[:80],
                    atomic=rmw,
                    dtype=call.type.dtype,
                    result=old.name if rmw not in ("st", "cas") else None,
                    form="object",
                    base=self.w.exprs.global_base(v),
                    scope=call.type.scope,
                    # `atomic_ref a(*p)`: one address for every thread of the grid
                    where="" if self.w.exprs.one_word(v) else None,
                    # `atomic_ref a(p[i])`: the element, as PTX's `ld.acquire` / `st.release` of
                    # `&p[i]` give it (round 16); a read-modify-write's is not recorded
                    index=self.w.exprs.element_index(v) if rmw in (None, "st") else None,
                    # a store's value (a spin on the word may wait for it)
                    operands=(vals[0],) if rmw == "st" and vals and isinstance(vals[0], E.Expr) else (),
                    # a read-modify-write's amount, as for CUDA's atomicAdd (round 13)
                    operand=vals[0] if rmw not in ("st", "cas") and vals and isinstance(vals[0], E.Expr) else None,
                ),
            ),
            ctx,
        )
        return old

    def _wait(
        self, callee: cexpr.Member, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any, calls: list, what: str
    ) -> Any:
        """`a.wait(old, order)`: blocks while the value equals `old` (spurious wake-ups allowed), so
        it is the spin `while (a.load(order) == old) {}` -- a loop of its own (data-bounded), its
        SPIN head with that condition, and the poll: a GLOBAL_LOAD of the word with the wait's
        order (an atomic load of a `__shared__` scalar for an atomic_ref of one)."""
        if len({(c.type, c.order, c.order_index) for c in calls}) != 1:
            return self._unmodelled(args, ctx, cursor, f"{what}: calls of different orders or scopes in one statement")
        call = calls[0]
        sem = K.ATOMIC_LOAD_ORDER.get(call.order) if call.order is not None else None
        if sem is None or call.type.scope is None:
            return self._unmodelled(args, ctx, cursor, f"{what}: its memory order or scope is not known")
        target = callee.obj
        temporary = False
        if isinstance(target, cexpr.Call) and len(target.args) == 1 and not callee.arrow:
            target = target.args[0]  # a temporary `cuda::atomic_ref<T, S>(x)`
            temporary = True
        v = self._address(target, ctx, cursor)
        if not self._known(v):
            return self._unmodelled(args, ctx, cursor, f"{what}: an atomic object whose address is not known")
        vals = [self.w.ev(a, ctx, cursor) for i, a in enumerate(args) if i != call.order_index]
        if len(vals) != 1 or not isinstance(vals[0], E.Expr):
            return self._unmodelled([], ctx, cursor, f"{what}: its old value is not evaluated")
        self._note_site(call.decl)
        if temporary and call.decl is None and cursor is not None:
            # the temporary's site is the call's statement (no declaration names the object)
            self._note_row(loc_of(cursor, self.w.filename), call.type.template)
        m = self.w.model
        loc = loc_of(cursor, self.w.filename) if cursor is not None else m.location
        st = self.w.stmts
        st._loop_ids += 1
        lid = st._loop_ids
        loaded = E.opaque(f"{what}: the value loaded")
        cond = E.binop("==", loaded, vals[0])
        counter = E.Var(f"k{lid}", E.LOOP, label=f"iteration of the wait at line {loc.row}")
        loop = ir.Loop(lid, None, counter, None, None, None, loc, ctx.loops[-1] if ctx.loops else None)
        loop.cond, loop.data_cond = cond, True
        if not ctx.dry and m is not None:
            m.loops[lid] = loop
        lctx = replace(ctx, loops=ctx.loops + (lid,))
        spin = ir.Op(ir.SPIN, f"cuda::{what}", loc, lctx.guard, lctx.loops)
        spin.spin = ir.SpinFacts(cond, empty=True)
        self.w.emit(spin, lctx)
        if isinstance(v, Obj):
            self.w.exprs.scalar_access(
                v, "read", lctx, cursor, atomic="load", order=sem, scope=call.type.scope, result=loaded.name
            )
            return None
        self.w.emit(
            ir.Op(
                ir.GLOBAL_LOAD,
                f"cuda::{what}",
                loc,
                lctx.guard,
                lctx.loops,
                global_access=ir.GlobalAccessFacts(
                    sem,
                    cexpr.render(cexpr.Call(callee, tuple(args)))[:80],
                    dtype=call.type.dtype,
                    result=loaded.name,
                    form="object",
                    base=self.w.exprs.global_base(v),
                    scope=call.type.scope,
                    where="" if self.w.exprs.one_word(v) else None,
                    index=self.w.exprs.element_index(v),
                ),
            ),
            lctx,
        )
        return None

    # -- fences ----------------------------------------------------------------
    def fence(self, base: str, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """`cuda::atomic_thread_fence(order, scope)` / `cuda::std::atomic_thread_fence(order)`: a
        FENCE of its scope (libcu++ emits `fence.acq_rel` / `fence.sc` at that scope for every
        order but relaxed); a relaxed fence, a thread-scope fence and atomic_signal_fence order
        nothing between threads (no event). NotImplemented: not libcu++'s / C++'s function."""
        found = set(_fence_calls(cursor, base)) if cursor is not None else set()
        if not found:
            return NotImplemented
        if len(found) != 1:
            return self._unmodelled(args, ctx, cursor, f"{base}: fences of different orders or scopes in one statement")
        order, scope = found.pop()
        if order is None or (scope is None and base == "atomic_thread_fence"):
            return self._unmodelled(args, ctx, cursor, f"{base}: its memory order or scope is not known")
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        kind = K.ATOMIC_FENCE_KIND.get(scope or "") if base == "atomic_thread_fence" and order != "relaxed" else None
        if kind is None:
            self._note_row(loc, base)
            return None
        op = ir.Op(ir.FENCE, f"cuda::{base}", loc, ctx.guard, ctx.loops)
        op.fence = ir.FenceFacts(kind)
        self.w.emit(op, ctx)
        return None

    # -- helpers ---------------------------------------------------------------
    def _address(self, node: cexpr.Node, ctx: Ctx, cursor: Any) -> Any:
        """The value of an lvalue as an address: a Var of a global address (the kernel pointer
        it points into is `global_base`), or a `__shared__` scalar's Obj."""
        ex = self.w.exprs
        ex._no_elem_access += 1
        try:
            return self.w.ev(node, replace(ctx, dry=True), cursor)
        finally:
            ex._no_elem_access -= 1

    def _known(self, v: Any) -> bool:
        if isinstance(v, Obj):
            return v.kind == "shared" and v.type is not None and v.type.kind == "scalar"
        return self.w.exprs.global_base(v) is not None

    def _unmodelled(self, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any, why: str) -> Any:
        for a in args:
            self.w.ev(a, ctx, cursor)
        if cursor is not None and not ctx.dry:
            self.w.note_unmodelled(cursor, why)
        return E.opaque(why.split(":", 1)[0])

    def _note_site(self, decl: Any) -> None:
        if decl is not None and self.w.model is not None:
            at = atomic_type(decl.type)
            if at is not None:
                self._note_row(loc_of(decl, self.w.filename), at.template)

    def _note_row(self, loc: ir.Location, name: str) -> None:
        if self.w.model is not None:
            self.w.model.atomic_sites.add((loc.filename, loc.row, name))
