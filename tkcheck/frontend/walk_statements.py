"""Statements: blocks, declarations, branches (guards), returns, loops and their carried variables."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from typing import Any, Callable

from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr, loop_pointers, walk_ptxns
from .poll_helpers import polled_probe
from .value_types import Allocator, CgGroup, NamedBar, Obj, Rec, StructType
from .macros import expand_fn_macros
from .walk_env import CK, BranchEnv, Ctx, ThisEnv, loc_of, tokens_of, value_names
from ..recurrence import _is_opaque_form, flat_base, solve_guarded
from .walk_arith import (
    _ArrVal,
    shared_copy,
    _TK_TYPE_ALIGN,
    _arr,
    _const_strides,
    _is_ident,
    _is_tmem_init,
    _member_offsets,
    _positive_uniform,
    _sizeof_align,
    _step_of,
    _strip_declarator_words,
    _to_bool,
    convert_int,
    solve_recurrence,
)
from .walker_core import StatementWalker

# the element types of a local register array that raw-PTX wgmma may accumulate into (`"+f"`)
_REGISTER_FLOATS = frozenset({"float"})


def _is_array_type(t) -> bool:
    """A C array type (`float x[4][8]`), not a pointer to one (`float (*p)[8]`)."""
    try:
        return t.get_canonical().kind.spelling == "ConstantArray"
    except (ValueError, AttributeError):  # a type kind this libclang does not name
        return False


def _token_counters(env: Any) -> list[str]:
    """r12-token: the `<shared scalar>.ptx_arrivals` counters the scope sees (its own, its
    parents', the inlining callers')."""
    out: list[str] = []
    todo, seen = [env], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out.extend(n for n in e.vars if n.endswith(".ptx_arrivals") and n not in out)
        todo += [e.parent, getattr(e, "dynamic", None)]
    return out


class _Slot:
    """Where a loop-carried value lives: a variable of the scope (`name`), or a scalar field
    of a record (`rec.fields[name]`, e.g. `regs.stage` of a struct passed by reference)."""

    __slots__ = ("name", "rec", "field")

    def __init__(self, name: str, rec: Rec | None = None):
        self.name = name
        self.rec = rec
        self.field = name if rec is not None else None

    @property
    def label(self) -> str:
        return f"{self.rec.type_name or 'rec'}.{self.name}" if self.rec is not None else self.name

    def __hash__(self):
        return hash((self.name, id(self.rec)))

    def __eq__(self, other):
        return isinstance(other, _Slot) and other.name == self.name and other.rec is self.rec

    def __repr__(self):
        return f"_Slot({self.label})"

    @staticmethod
    def of(node: cexpr.Node, walker, ctx: Ctx) -> "_Slot | None":
        """The slot of an lvalue node: a plain name, or `obj.field` of a record."""
        if isinstance(node, cexpr.Name) and len(node.segments) == 1:
            return _Slot(node.segments[0].name)
        if isinstance(node, cexpr.Member) and not node.arrow:
            obj = walker.ev(node.obj, replace(ctx, dry=True))
            if isinstance(obj, Rec) and obj.path is not None and node.field in obj.scalars:
                return _Slot(f"{obj.path}.{node.field}")  # a local object's scalar: a variable of the scope
            if isinstance(obj, Rec):
                return _Slot(node.field, obj)
        return None

    def get(self, env):
        return self.rec.fields.get(self.name) if self.rec is not None else env.lookup(self.name)

    def set(self, env, value, define: bool = False):
        if self.rec is not None:
            self.rec.fields[self.name] = value
        elif define:
            env.define(self.name, value)
        else:
            env.assign(self.name, value)


def _leaves_early(body) -> bool:
    """A body that may leave its iteration or the loop before its end (`break`, `continue`,
    `return`, `goto`): its pointers' values per iteration are not the rotation's alone."""
    return body is None or bool({"break", "continue", "return", "goto"} & set(tokens_of(body)))


class _System:
    """A loop's update of its carried slots, as seen by the enclosing loop's analysis."""

    __slots__ = ("lid", "trip", "starts", "ends", "v0s", "after")

    def __init__(self, lid, trip, starts, ends, v0s, after):
        self.lid, self.trip, self.starts, self.ends, self.v0s, self.after = lid, trip, starts, ends, v0s, after


def _signature(sysrec: _System, system) -> tuple:
    """The update of `system` (slots) with its start values renamed by position: equal for
    the same update seen from two walks."""
    order = sorted(system, key=lambda sl: sl.label)
    ren = {sysrec.starts[sl].name: E.Var(f"@s{i}", E.LOOP) for i, sl in enumerate(order)}
    out = []
    for sl in order:
        e = sysrec.ends.get(sl)
        out.append((sl.label, str(E.substitute(e, ren)) if isinstance(e, Expr) else None))
    return tuple(out)


def _extent(c) -> tuple:
    e = c.extent
    import os

    f = os.path.abspath(e.start.file.name) if e.start.file is not None else ""
    return (f, (e.start.line, e.start.column), (e.end.line, e.end.column))


# declared types whose variable is no copy of its initialiser (a pointer, a reference, an array)
_NOT_A_COPY = frozenset({"POINTER", "LVALUEREFERENCE", "RVALUEREFERENCE", "CONSTANTARRAY", "INCOMPLETEARRAY"})


def _distinct_static_name(barriers: dict, name: str, loc: ir.Location, decl) -> str:
    """The model's name of a `__shared__` barrier declared at `loc`: its own name, unless a
    barrier of that name was declared elsewhere (another function's local `__shared__` variable:
    a distinct object), then qualified by its function (`comp_sm::inputs_arrived`), as C++
    scopes it. One declaration walked again (a function inlined twice) keeps its name."""
    old = barriers.get(name)
    if old is None or _same_place(old.location, loc):
        return name
    parent = getattr(decl, "semantic_parent", None)
    fn = getattr(parent, "spelling", "") or f"line {loc.row}"
    qualified = f"{fn}::{name}"
    n, out = 2, qualified
    while out in barriers and not _same_place(barriers[out].location, loc):
        out, n = f"{qualified}#{n}", n + 1
    return out


def _same_place(a: ir.Location, b: ir.Location) -> bool:
    return (a.filename, a.row, a.column) == (b.filename, b.row, b.column)


def _conjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, E.Bin) and e.op == "&&":
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def _negated(x: Expr) -> Expr:
    """-x, without a double negation (`0 - (0 - e)` is e, `0 - (a - b)` is b - a)."""
    if isinstance(x, E.Bin) and x.op == "-":
        return x.b if x.a == E.Const(0) else E.binop("-", x.b, x.a)
    return E.binop("-", E.Const(0), x)


class StatementWalk:
    """The walker's part for statements: blocks, declarations, branches (guards), returns, loops
    and the variables they carry (solved into closed forms over the loop counter)."""

    def __init__(self, walker: StatementWalker):
        self.w = walker
        self._loop_ids = 0  # loops walked so far (a loop's id)
        # the constant trip counts of the loops being walked, by counter name (a geometric loop's
        # start or bound over them is run at each of their iterations: `_geometric_trip`)
        self._const_trips: dict[str, int] = {}
        # the closed form `_geometric_trip` found last (counter -> Expr)
        self._geometric_form: Callable[[Expr], Expr] | None = None
        self._loop_breaks: list = []  # `break`s seen in the loop being walked (its trip is then unknown)
        # per `break` of the loop being walked: what lets an iteration go on past it, over the
        # Vars the condition's memory events name (SpinFacts.goes_on); None: not known
        self._break_goes_on: list = []
        # per `break` of the loop being walked: (the guard at its `if`, the condition under which
        # it breaks) for an `if` over the thread or uniform values, else None (`_break_trip`)
        self._break_at: list = []
        self._system_logs: list = []  # per loop being analysed: the updates of its nested loops
        self._flat_registry: dict = {}  # closed forms of flat sequences (persistent rings) -> origin
        self._last_system: tuple | None = None  # the carried-variable system of the loop walked last
        # the pointer variables of the loop walked last: name -> (value before, end of the dry pass)
        self._last_pointers: dict = {}
        self._last_uniform: set = set()  # its slots whose unknown values are block-uniform
        self._fresh_slots = 0  # carried-variable systems solved so far (names their start values)
        self._carried_trip_of: Expr | None = None  # the trip count of the loop whose carried values are solved next
        # values a loop left in its carried slots -> (loop id, trip, closed form, update): a later
        # loop starting from them with the same update continues the sequence
        self._seq_registry: dict = {}
        self._last_continued: int | None = None  # the loop the loop walked last continues
        self._seq_walks = 0  # loop walks registered in _seq_registry
        # ring walks (`ring_walk`): the task loops being walked whose ring state is one visit
        # counter, innermost last; the walk the loop solved last hands to `_walk_loop`
        self._ring_walks: list = []
        self._ring_walk_count = 0
        self._last_ring_walk: list | None = None

    def walk(self, c, ctx: Ctx) -> str | None:
        """Walk a statement. Returns 'return'/'break'/'continue' when the
        statement always leaves that way, else None."""
        k = c.kind
        try:
            if k == CK.COMPOUND_STMT:
                kids = list(c.get_children())
                if self._recovered_rows(c):
                    return self._walk_block_recovered(c, kids, ctx)
                return self._walk_block(kids, ctx)
            if k == CK.DECL_STMT:
                stmt_toks = tokens_of(c)
                first_type = None
                for d in c.get_children():
                    if d.kind == CK.VAR_DECL:
                        if d.type.get_canonical().kind.name == "POINTER":
                            self.w.exprs.pointer_vars.add(d.spelling)
                        first_type = self.declare(d, ctx, stmt_toks, first_type)
                    elif d.kind in (CK.TYPE_ALIAS_DECL, CK.TYPEDEF_DECL):
                        t = self.w.types.local_alias(d, ctx.env)
                        ctx.env.define(d.spelling, t if t is not None else ("alias_decl", d))
                    elif d.kind in (CK.STRUCT_DECL, CK.CLASS_DECL):
                        ctx.env.define(d.spelling, ("struct_decl", d))
                return None
            if k == CK.IF_STMT:
                return self._walk_if(c, ctx)
            if k == CK.DO_STMT and _runs_once(c):
                # `do { ... } while (0)`, the statement macros' wrapper: its body, once
                kids = list(c.get_children())
                return self.walk(kids[0], ctx) if kids else None
            if k in (CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT, CK.CXX_FOR_RANGE_STMT):
                self._walk_loop(c, ctx)
                return None
            if k == CK.RETURN_STMT:
                self._walk_return(c, ctx)
                return "return"
            if k == CK.BREAK_STMT:
                return "break"
            if k == CK.CONTINUE_STMT:
                return "continue"
            if k in (CK.ASM_STMT, CK.MS_ASM_STMT):
                self.w.asm.walk(c, ctx)
                return None
            if k in (CK.NULL_STMT, CK.CASE_STMT, CK.DEFAULT_STMT, CK.LABEL_STMT, CK.GOTO_STMT):
                if k == CK.GOTO_STMT:
                    ctx.guard = ctx.guard.inexact()
                for ch in c.get_children():
                    if ch.kind.is_statement():
                        self.walk(ch, ctx)
                return None
            if k == CK.SWITCH_STMT:
                # a `break` in a switch leaves the switch, not the loop: no trip from it
                n_at = len(self._break_at)
                try:
                    return self._walk_switch(c, ctx)
                finally:
                    self._break_at[n_at:] = [None] * (len(self._break_at) - n_at)
            if k == CK.UNEXPOSED_STMT:
                # `#pragma unroll` before a loop: clang's AttributedStmt, unexposed in libclang
                kids = [ch for ch in c.get_children() if ch.kind.is_statement()]
                if len(kids) == 1 and kids[0].kind in (
                    CK.FOR_STMT,
                    CK.WHILE_STMT,
                    CK.DO_STMT,
                    CK.CXX_FOR_RANGE_STMT,
                    CK.COMPOUND_STMT,
                ):
                    return self.walk(kids[0], ctx)
            if k.is_expression() or k == CK.UNEXPOSED_STMT:
                self.exec_expr(c, ctx)
                return None
            for ch in c.get_children():
                if ch.kind.is_statement() or ch.kind.is_expression():
                    self.walk(ch, ctx)
        except RecursionError:
            ctx.guard = ctx.guard.inexact()
        return None

    def _recovered_rows(self, c) -> set:
        """Rows of this block where clang reported an error it recovered from the way nvcc reads
        the code (nvcc_compat.RECOVERED_ERRORS): clang may have dropped the statement there."""
        ext = c.extent
        if ext.start.file is None:
            return set()
        import os

        fname = os.path.abspath(ext.start.file.name)
        cache = self.w.mb.__dict__.setdefault("_recovered_by_file", {})
        if not cache:
            for d in self.w.mb.parsed.diagnostics:
                if d.recovered and d.abs_file and d.location is not None:
                    cache.setdefault(d.abs_file, set()).add(d.location.row)
            cache.setdefault("", set())
        rows = cache.get(fname, set())
        return {r for r in rows if ext.start.line <= r <= ext.end.line}

    def _walk_block_recovered(self, c, kids, ctx: Ctx) -> str | None:
        """A block with a statement clang dropped after a recovered error (a member template named
        without 'template' in a template argument): the statements are its children, and in the
        gaps between them the text's own statements, read from the tokens."""
        from .lexer import lex
        from .walk_env import _text_for

        src = _text_for(c.extent.start.file.name)
        if src is None:
            return self._walk_block(kids, ctx)
        rows = self._recovered_rows(c)
        pos = (c.extent.start.line, c.extent.start.column + 1)  # after '{'
        items: list = []
        for ch in kids:
            st = (ch.extent.start.line, ch.extent.start.column)
            if any(pos[0] <= r <= st[0] for r in rows):
                items.append(("text", pos, st))
            items.append(("stmt", ch))
            pos = (ch.extent.end.line, ch.extent.end.column)
        end = (c.extent.end.line, c.extent.end.column - 1)
        if any(pos[0] <= r <= end[0] for r in rows):
            items.append(("text", pos, end))
        for it in items:
            if it[0] == "stmt":
                r = self.walk(it[1], ctx)
                if r is not None:
                    return r
                continue
            toks = lex(src.slice(it[1][0], it[1][1], it[2][0], it[2][1]))
            depth, cur = 0, []
            for t in toks:
                if t in ("(", "[", "{"):
                    depth += 1
                elif t in (")", "]", "}"):
                    depth -= 1
                if t == ";" and depth == 0:
                    self._exec_tokens(cur, ctx, c)
                    cur = []
                    continue
                cur.append(t)
        return None

    def _exec_tokens(self, toks, ctx: Ctx, c):
        if not toks or toks[0] in ("if", "for", "while", "return", "else", "do", "switch"):
            return None
        node = cexpr.parse_expression(toks, value_names(ctx.env))
        if isinstance(node, cexpr.Unknown):
            self.note_unmodelled(c, "statement clang dropped (after an error it recovered from) not understood")
            return None
        return self.w.ev(node, ctx, cursor=c)

    def _walk_block(self, stmts, ctx: Ctx) -> str | None:
        for s in stmts:
            r = self.walk(s, ctx)
            if r is not None:
                return r
        return None

    def exec_expr(self, c, ctx: Ctx):
        toks = tokens_of(c)
        if not toks:
            return None
        node = cexpr.parse_expression(toks, value_names(ctx.env))
        if isinstance(node, cexpr.Unknown):
            if toks[0] in ("new", "::") and self.w.libcu.placement_new(c, ctx):
                return None  # `new (mem) cuda::latch<...>(n)`: the latch's init (walk_libcu)
            self.note_unmodelled(c, "expression not understood")
            return None
        return self.w.ev(node, ctx, cursor=c)

    def _do_condition(self, cond_c, bctx: Ctx, head: Expr, lid: int) -> Expr:
        """A do-while's condition as the end of its body leaves it: evaluated dry with the body's
        values, kept when every unknown it reads is the old value of a memory event of the loop
        (and the condition read at the head names none: it loads nothing of its own)."""
        results = {
            o.global_access.result
            for o in (self.w.model.ops if self.w.model is not None else [])
            if lid in o.loops and o.global_access is not None and o.global_access.result
        }
        if any(v.name in results for v in head.free_vars()):
            return head
        after = self.exec_expr(cond_c, replace(bctx, dry=True))
        if not isinstance(after, Expr):
            return head
        fv = after.free_vars()
        if not any(v.name in results for v in fv) or any(v.kind == E.OPAQUE and v.name not in results for v in fv):
            return head
        return _to_bool(after)

    def condition_memory(self, c, ctx: Ctx):
        """The memory events of a condition (`if (am_last)`, `while (*(volatile int *)f != 1)`,
        `if (atomicAdd(&c[t], 1) == n - 1)`), which the walk evaluates dry: evaluated once more,
        keeping only the loads, stores and atomics it emits (a user function it calls is inlined
        once more: `while (ld_acquire(&f) != v)` polls with the helper's `ld.acquire`). Returns the
        condition's value, the loaded values in it as the Vars the loads name."""
        if c is None or ctx.dry or self.w.model is None:
            return
        # in a scope whose writes are dropped: the dry walk already applied the condition's
        # side effects (`if (++s == S)` advances s once, not twice)
        with self.w.exprs.memory_only():
            return self.exec_expr(c, replace(ctx, env=BranchEnv(ctx.env)))

    def note_unmodelled(self, c, why: str):
        if self.w.model is not None:
            self.w.model.unmodelled.append((loc_of(c, self.w.filename), why))

    def unmodelled_use(self, vals, ctx: Ctx, cursor, what: str):
        """A call tkcheck does not model received an mbarrier: it may arrive on
        it, wait on it or re-initialise it. Record that, so no count or phase
        of that barrier is claimed (an unknown is never a finding)."""
        for v in _barriers_in(vals):
            if isinstance(v, Obj) and v.kind == "barrier":
                loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
                self.w.emit(
                    ir.Op(ir.CALL, what, loc, ctx.guard, ctx.loops, barrier=v.ref, unmodelled_barrier_use=True), ctx
                )

    # -- declarations -----------------------------------------------------
    def declare(self, d, ctx: Ctx, stmt_toks=None, first_type=None):
        """Declare one variable. Tokens come from the whole declaration
        statement (a declarator's own extent can be empty when the statement
        starts with a macro such as `__shared__`); later declarators of
        `T a, b;` reuse the first one's type tokens. Returns the type tokens."""
        name = d.spelling
        toks = self._declarator_tokens(name, stmt_toks, first_type) if stmt_toks else tokens_of(d)
        is_shared = any(ch.kind == CK.CUDASHARED_ATTR for ch in d.get_children()) or "__shared__" in toks
        is_ref = "&" in d.type.spelling or (toks and "&" in toks[: toks.index(name)] if name in toks else False)
        init_node = None
        if name in toks:
            i = toks.index(name)
            rest = toks[i + 1 :]
            # skip array declarators: name[...][...]
            dims_nodes = []
            while rest and rest[0] == "[":
                depth, j = 0, 0
                while j < len(rest):
                    if rest[j] == "[":
                        depth += 1
                    elif rest[j] == "]":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                dims_nodes.append(cexpr.parse_expression(rest[1:j], value_names(ctx.env)))
                rest = rest[j + 1 :]
            if rest and rest[0] == ")":  # `T (&name)[N] = ...`
                rest = rest[1:]
                while rest and rest[0] == "[":
                    j = rest.index("]")
                    dims_nodes.append(cexpr.parse_expression(rest[1:j], value_names(ctx.env)))
                    rest = rest[j + 1 :]
            if rest and rest[0] == "=":
                init_node = cexpr.parse_expression(rest[1:], value_names(ctx.env))
            elif rest and rest[0] in ("{", "("):
                init_node = cexpr.parse_expression(["__ctor"] + rest, value_names(ctx.env))
        else:
            dims_nodes = []
        # the declared type, from the tokens before the name
        type_toks = toks[: toks.index(name)] if name in toks else []
        type_toks = _strip_declarator_words(type_toks)
        # drop `__align__(N)` / `alignas(N)` arguments
        align = None
        mm = re.search(r"(?:__align__|alignas)\s*\(\s*(\d+)\s*\)", " ".join(toks))
        if mm:
            align = int(mm.group(1))
            type_toks = [t for t in type_toks if t != mm.group(1)]
            while type_toks and type_toks[0] == ")":
                type_toks = type_toks[1:]
        tnode = cexpr.parse_expression(type_toks, lambda s: False) if type_toks else None
        t = self.w.resolve_type(tnode, ctx.env) if tnode is not None else None
        dims = []
        for dn in dims_nodes:
            v = self.w.ev(dn, replace(ctx, dry=True)) if not isinstance(dn, cexpr.Unknown) else None
            dims.append(v if isinstance(v, Expr) else E.opaque("dim"))
        loc = loc_of(d, self.w.filename)
        m = self.w.model
        value: Any = None
        copied = False  # a copy of a shared element (`float m = part[i];`)
        nbar = (
            self.w.exprs.named_bar(tnode.segments, None, ctx)
            if isinstance(tnode, cexpr.Name) and not is_shared and not dims
            else None
        )
        if nbar is not None:
            # `barrier<8> b(2);` / `= barrier<8>(2)`: TK's named-barrier object (its id, 32*N threads)
            v = self.w.ev(init_node, ctx, cursor=d) if init_node is not None else None
            value = v if isinstance(v, NamedBar) else NamedBar(v if isinstance(v, Expr) else None, nbar.warps)
        elif not is_shared and not dims and (ref := self.w.atomics.declared(d, init_node, ctx)) is not None:
            # `cuda::atomic_ref<T, S> a(x)`: the address of x (walk_atomics)
            value = ref
        elif is_shared and (libcu := self.w.libcu.shared_object(name, d.type.get_canonical().spelling, dims, loc, ctx)):
            # libcu++'s cuda::barrier / pipeline_shared_state (walk_libcu)
            value = libcu
        elif is_shared and not dims and re.search(r"\bCUtensorMap(_st)?\b", d.type.get_canonical().spelling):
            # a tensor map in shared memory (round 10): one 128-byte object the tensormap.* PTX
            # patches and copies whole (walk_asm._tensormap_access), a shared scalar of the model
            value = Obj(
                "shared", ir.Ref(name), ir.TileType("scalar", "CUtensorMap", dtype="CUtensorMap", dtype_bytes=128)
            )
        elif is_shared and isinstance(t, ir.TileType):
            if t.kind == "semaphore":
                # a `__shared__` semaphore of another function with the same name (a kernel that
                # runs `comm_sm()` on some blocks and `comp_sm()` on the others, each declaring its
                # own `inputs_arrived`) is another object: its own barrier in the model
                bname = _distinct_static_name(m.barriers, name, loc, d)
                m.barriers[bname] = ir.Barrier(bname, tuple(dims), loc, "static")
                value = Obj("barrier", ir.Ref(bname), t)
            elif t.kind in ("st", "sv"):
                m.buffers[name] = ir.SharedBuffer(
                    name, t, tuple(dims), loc, alignment=max(align or 0, _TK_TYPE_ALIGN), storage="static"
                )
                value = Obj("buffer", ir.Ref(name), t)
            else:
                value = Obj("shared", ir.Ref(name), t, volatile=_volatile_type(d.type))
                if not dims and t.kind == "scalar" and t.dtype_bytes == 8:
                    # r12-token: a 64-bit scalar raw PTX may use as an mbarrier: the thread's count
                    # of its state-token arrivals on it (walk_asm._arrival_tokens)
                    ctx.env.define(f"{name}.ptx_arrivals", E.Const(0))
                if dims:
                    # its elements' addresses may name mbarriers in raw PTX (`&bars[i]`)
                    self.w.asm.shared_dims[name] = tuple(dims)
            if dims:
                value = _arr(value, dims)
        elif is_shared and isinstance(t, StructType):
            value = self._register_struct_buffer(name, t, tuple(dims), loc, "static", max(align or 0, _TK_TYPE_ALIGN))
        elif (
            not is_shared
            and not is_ref
            and dims
            and isinstance(t, ir.TileType)
            and t.kind == "scalar"
            and t.dtype in _REGISTER_FLOATS
            and _is_array_type(d.type)
        ):
            # `float acc[32];`: a local array of floating-point registers, which raw-PTX wgmma may
            # take as its accumulator (`"+f"(acc[i])`): its element reads and writes are register
            # accesses (REG_ACCESS via "local"; the builder keeps those of accumulators only)
            value = _arr(Obj("local", ir.Ref(name), t), dims)
        elif init_node is not None:
            v = self.w.ev(init_node, ctx, cursor=d)
            if (
                isinstance(v, Obj)
                and v.kind in ("buffer", "barrier")
                and isinstance(t, (ir.TileType, StructType))
                and v.ref.name not in m.buffers
                and v.ref.name not in m.barriers
                and v.ref.name.startswith("@alloc")
            ):
                value = self._bind_allocation(name, v, t, dims, loc)
            elif isinstance(v, Allocator):
                value = v
            elif _is_tmem_init(v) and (t is None or (isinstance(t, ir.TileType) and t.kind == "tt")):
                value = self.w.tmem.bind_tile(name, v, t, dims, loc)
            elif isinstance(v, tuple) and v and v[0] == "alloc":
                value = self._bind_allocation(name, Obj("buffer", ir.Ref("@alloc"), None, None), t, dims, loc, alloc=v)
            elif v is None and isinstance(t, ir.TileType) and t.kind in ("rt", "rv"):
                m.reg_tiles[name] = t
                value = Obj("regtile", ir.Ref(name), t)
            elif isinstance(t, ir.TileType) and t.kind == "tt" and not isinstance(v, Obj):
                # `tt<float, 128, N> d = tm_alloc.allocate<...>(col)`: a TMEM tile
                value = Obj("tmem", ir.Ref(name), t)
            elif (
                isinstance(t, StructType)
                and not is_ref
                and not dims
                and isinstance(v, tuple)
                and not (v and isinstance(v[0], str))
            ):
                # `state<config> mks{slots, arrived, finished, 0, 0, ...}`: an object of a user struct
                value = self._object_record(t, name, v, ctx)
            elif not is_ref and isinstance(v, Obj) and v.kind == "shared" and not v.ref.index:
                # `const int tile = tile_s;`: a copy of a `__shared__` scalar (read once, here)
                value = shared_copy(name, v)
            elif not is_ref and not dims and isinstance(t, ir.TileType) and t.kind == "scalar" and _gl_element(v):
                # `const int n = g[{0, 0, 0, t}];`: the value of an element of a TK global layout,
                # read here (the object reference kept it unknown as a whole): an unknown read
                # anew in every iteration of the loops around (the coordinate may move with them,
                # the memory may change between them), never one value for the whole loop
                value = E.per_iteration(E.opaque(f"{v.ref.name}[...]"), _counters(ctx.loops))
            elif (
                not is_ref
                and not is_shared
                and not dims
                and d.type.get_canonical().kind.name not in _NOT_A_COPY
                and isinstance(v, Obj)
                and v.kind == "shared"
                and v.ref.index
                and not v.elem_ptr
                and v.type is not None
                and v.type.kind == "scalar"
            ):
                # `float m = part[i];`: a copy of the element (read here, once), a value of its own:
                # never the element itself, whose address `&m` is not (a local's address is
                # local memory) and whose later assignments in a loop are no pointer's
                value = self.w.exprs.opaque_from(init_node, (v,), read=True)
                copied = True
            else:
                value = v
                if isinstance(t, ir.TileType) and t.kind == "scalar" and isinstance(v, Expr) and t.dtype in ("bool",):
                    value = v
        elif isinstance(t, ir.TileType) and t.kind in ("rt", "rv"):
            m.reg_tiles[name] = t
            value = Obj("regtile", ir.Ref(name), t)
            if dims:
                value = _arr(value, dims)
        elif isinstance(t, ir.TileType) and t.kind == "tt":
            # `tt<...> d[N];` assigned later element by element (`d[i] = tm.allocate<TT>(col)`)
            n = dims[0].eval({}) if len(dims) == 1 else None
            if isinstance(n, int) and 0 < n <= 64 and m is not None:
                m.tmem_tiles[name] = ir.TmemTile(name, t, None, (None,) * n, tuple(dims), loc)
            value = Obj("tmem", ir.Ref(name), t)
            if dims:
                value = _arr(value, dims)
        elif isinstance(t, ir.TileType) and t.kind == "scalar":
            value = E.opaque(f"uninit {name}")
        elif isinstance(t, StructType):
            value = (
                self._object_record(t, name, (), ctx) if not dims and not is_ref else self._local_struct_record(t, name)
            )
        if type_toks and type_toks[0] in ("shared_allocator", "tma_allocator", "tma_swizzle_allocator"):
            value = Allocator(1024)
        tt0 = [x for x in type_toks if x not in ("kittens", "::")]
        if tt0 and tt0[0] in ("tensor_allocator", "tm_allocator") and not is_ref and self.w.model is not None:
            value = self.w.tmem.allocator(name, tt0, ctx, loc)
        if not dims and not isinstance(value, CgGroup):
            # a cooperative-groups group, by its C++ type (`cg::grid_group grid = cg::this_grid();`)
            g = K.cg_group_type(d.type.get_canonical().spelling)
            if g is not None:
                value = CgGroup(*g)
        if isinstance(value, E.Const):
            value = convert_int(value, d.type.spelling)
        if copied:
            self.w.exprs.value_copies[name] = ctx.env
        else:
            self.w.exprs.value_copies.pop(name, None)  # (the name declared anew as something else)
        value = self.w.libcu.bind(name, value, ctx)
        self.w.exprs.note_phasebit_set(name, value, ctx, d)
        ctx.env.define(name, value)
        return toks[: toks.index(name)] if name in toks else first_type

    @staticmethod
    def _declarator_tokens(name, stmt_toks, first_type):
        """`<type tokens> name <declarator and initialiser>` for one variable."""
        depth = 0
        idx = None
        for i, t in enumerate(stmt_toks):
            if t in ("<", "(", "[", "{"):
                depth += 1
            elif t in (">", ")", "]", "}"):
                depth -= 1
            elif t == ">>":
                depth -= 2
            if (
                t == name
                and (
                    depth == 0
                    or (
                        depth == 1
                        and i > 0
                        and stmt_toks[i - 1] in ("&", "*", "(")
                        and stmt_toks[i - 2 : i - 1] == ["("]
                    )
                )
                or (t == name and i > 0 and stmt_toks[i - 1] in ("&", "*") and depth <= 1)
            ):
                if i + 1 < len(stmt_toks) and stmt_toks[i + 1] == "::":
                    continue
                idx = i
                break
        if idx is None:
            return [name]
        # the declarator runs to the next top-level ',' or ';'
        depth, end = 0, len(stmt_toks)
        for j in range(idx, len(stmt_toks)):
            t = stmt_toks[j]
            if t in ("(", "[", "{", "<"):
                depth += 1
            elif t in (")", "]", "}", ">"):
                depth = max(depth - 1, 0)  # `(&name)` closes a paren opened before the name
            elif t == ">>":
                depth = max(depth - 2, 0)
            if depth == 0 and t in (",", ";"):
                end = j
                break
        type_toks = stmt_toks[:idx]
        if first_type is not None and (not type_toks or type_toks[-1] == ","):
            type_toks = list(first_type)
        elif first_type is not None and "," in type_toks:
            type_toks = list(first_type)
        return type_toks + stmt_toks[idx:end]

    def _object_record(self, st: StructType, name: str, init: tuple, ctx: Ctx) -> Rec:
        """A local object of a user struct: fields bound in declaration order from a braced
        initializer; scalar fields become the variables `name.field` of this scope (so loops
        and branches carry them), object fields (references to barriers, tiles) stay fields."""
        rec = self._local_struct_record(st, name)
        rec.struct, rec.path = st, name
        fields = [(fn, cur) for fn, cur in st.members.items() if cur.kind == CK.FIELD_DECL]
        scalars = []
        for i, (fn, cur) in enumerate(fields):
            if fn in rec.fields:
                continue
            v = init[i] if i < len(init) else self._member_default(st, cur, ctx)
            if isinstance(v, _ArrVal) or isinstance(v, (Obj, Rec, Allocator)) or (isinstance(v, tuple) and v):
                rec.fields[fn] = v
                continue
            ft = self.w.types.resolve_type_spelling(cur.type.spelling, st.env) if "[" not in cur.type.spelling else None
            if isinstance(v, Expr) or isinstance(ft, ir.TileType) and ft.kind == "scalar":
                scalars.append(fn)
                ctx.env.define(f"{name}.{fn}", v if isinstance(v, Expr) else E.opaque(f"{name}.{fn}"))
        rec.scalars = tuple(scalars)
        return rec

    def _member_default(self, st: StructType, cur: Any, ctx: Ctx) -> Any:
        """The default member initializer of a scalar field (`int index = 0;`, `uint32_t phase{0};`),
        evaluated in the struct's scope: the value a field of an object declared without an
        initializer for it starts from (None: no initializer, or not a scalar's)."""
        toks = tokens_of(cur)
        if cur.spelling not in toks or "[" in cur.type.spelling:
            return None
        rest = toks[toks.index(cur.spelling) + 1 :]
        if rest[-1:] == [";"]:
            rest = rest[:-1]
        if len(rest) >= 2 and rest[0] == "=":
            expr = rest[1:]
        elif len(rest) >= 3 and rest[0] == "{" and rest[-1] == "}":
            expr = rest[1:-1]
        else:
            return None
        if "," in expr or "{" in expr:
            return None
        v = self.w.ev(cexpr.parse_expression(expr, st.env.has), Ctx(env=st.env, guard=ctx.guard, dry=True))
        return v if isinstance(v, Expr) and not v.free_vars() else None

    def _local_struct_record(self, st: StructType, prefix: str) -> Rec:
        """A local variable of user struct type (lcf's `consumer_state`): its register-tile
        members become register tiles named `prefix.field`, so accumulators kept in a
        state struct are tracked like local ones."""
        rec = Rec(type_name=st.name, stype=st)
        for fname, cur in st.members.items():
            if cur.kind != CK.FIELD_DECL:
                continue
            ft = self.w.types.resolve_type_spelling(cur.type.spelling, st.env)
            if isinstance(ft, ir.TileType) and ft.kind in ("rt", "rv") and self.w.model is not None:
                self.w.model.reg_tiles[f"{prefix}.{fname}"] = ft
                rec.fields[fname] = Obj("regtile", ir.Ref(f"{prefix}.{fname}"), ft)
        return rec

    def _register_struct_buffer(self, name, st: StructType, dims, loc, storage, align) -> Obj:
        t = self.struct_tile_type(st)
        m = self.w.model
        offsets, ssize = _member_offsets(t) if t else ({}, None)
        outer = _const_strides(dims, ssize)
        for mname, mtype, count in t.members if t else ():
            mdims = dims + ((count,) if count is not None else ())
            if mtype.kind in ("st", "sv"):
                inner = (_sizeof_align(mtype) or (None,))[0] if count is not None else None
                strides = outer + ((inner,) if count is not None else ()) if outer is not None else ()
                m.buffers[f"{name}.{mname}"] = ir.SharedBuffer(
                    f"{name}.{mname}",
                    mtype,
                    mdims,
                    loc,
                    alignment=align,
                    storage=storage,
                    base_offset=offsets.get(mname, 0),
                    strides=strides,
                )
            elif mtype.kind == "semaphore":
                m.barriers[f"{name}.{mname}"] = ir.Barrier(f"{name}.{mname}", mdims, loc, storage)
        obj = Obj("struct", ir.Ref(name), t)
        return _arr(obj, dims) if dims else obj

    def struct_tile_type(self, st: StructType) -> ir.TileType | None:
        """A user struct of tiles (lcf's input_block) as a TileType with members,
        so `size_bytes` and member access work. `T a[M], b[N];` declares two
        fields whose second declarator has no type tokens of its own."""
        key = ("struct_tile", id(st))
        if key in self.w.struct_cache:
            return self.w.struct_cache[key]
        self.w.struct_cache[key] = None
        members = []
        prev_type = None
        sctx = Ctx(env=st.env, guard=ir.Guard(), dry=True)
        for ch in st.cursor.get_children():
            if ch.kind != CK.FIELD_DECL:
                continue
            toks = tokens_of(ch)
            if ch.spelling not in toks:
                continue
            i = toks.index(ch.spelling)
            type_toks = [t for t in toks[:i] if t not in ("const", ",")]
            if (not type_toks or _top_level_comma(toks[:i])) and prev_type:
                # a later declarator of `T a, b;`: its tokens may start with the whole
                # declaration (`T a , b`), so the type is the previous field's
                type_toks = prev_type
            prev_type = type_toks
            tnode = cexpr.parse_expression(type_toks, lambda s: False)
            mt = self.w.resolve_type(tnode, st.env)
            count = None
            rest = toks[i + 1 :]
            while rest and rest[0] == "[":
                j = rest.index("]")
                cv = self.w.ev(cexpr.parse_expression(rest[1:j], st.env.has), sctx)
                cv = cv if isinstance(cv, Expr) else E.opaque("count")
                count = cv if count is None else E.binop("*", count, cv)
                rest = rest[j + 1 :]
            if isinstance(mt, StructType):
                mt = self.struct_tile_type(mt)
            if isinstance(mt, ir.TileType):
                members.append((ch.spelling, mt, count))
        t = ir.TileType("struct", st.name, members=tuple(members)) if members else None
        self.w.struct_cache[key] = t
        return t

    def _bind_allocation(self, name, v, t, dims, loc, alloc=None):
        """`st_bf<64,64> (&a)[N] = al.allocate<st_bf<64,64>, N>();`"""
        m = self.w.model
        align = 1024
        atype, adims = t, tuple(dims)
        if alloc is not None:
            _, atype2, adims2, align = alloc
            atype = atype2 if atype2 is not None else t
            adims = adims2 if adims2 else adims
        if isinstance(atype, StructType):
            return self._register_struct_buffer(name, atype, adims, loc, "allocator", align)
        if isinstance(atype, ir.TileType):
            if atype.kind == "semaphore":
                m.barriers[name] = ir.Barrier(name, adims, loc, "allocator")
                obj = Obj("barrier", ir.Ref(name), atype)
            else:
                m.buffers[name] = ir.SharedBuffer(name, atype, adims, loc, alignment=align, storage="allocator")
                obj = Obj("buffer", ir.Ref(name), atype)
            return _arr(obj, adims) if adims else obj
        return None

    # -- control flow -----------------------------------------------------
    def _classify(self, cond: Expr | Any, ctx: Ctx) -> tuple[str, Expr | None]:
        """('const', c) | ('thread', c) | ('uniform', c) | ('unknown', None)."""
        if not isinstance(cond, Expr):
            return "unknown", None
        if isinstance(cond, E.Const):
            return "const", cond
        fv = cond.free_vars()
        if E.alike_for_all(cond) and any(v.kind == E.OPAQUE for v in fv):
            return "uniform", cond  # over unknowns every thread holds alike (`E.uniform_unknown`)
        if any(v.kind == E.OPAQUE for v in fv):
            return "unknown", cond
        if any(v.kind == E.THREAD for v in fv):
            return "thread", cond
        return "uniform", cond

    def _branch_guard(self, guard: ir.Guard, cls: str, cond: Expr | None, positive: bool) -> ir.Guard:
        if cls == "thread" and positive:
            # `if (threadIdx.x == 0 && tile + 1 < num_tiles)`: the block-uniform conjuncts are
            # uniform conditions, so the thread predicate (who issues) stays a set of threads
            thread_part, uniform_part = [], []
            for c in _conjuncts(cond):
                (thread_part if c.depends_on(E.THREAD) else uniform_part).append(c)
            g = guard
            for c in thread_part:
                g = g.with_thread(c)
            for c in uniform_part:
                g = g.with_uniform(c)
            return g
        if cls == "thread":
            return guard.with_thread(E.negate(cond))
        if cls == "uniform":
            return guard.with_uniform(cond if positive else E.negate(cond))
        if isinstance(cond, Expr) and positive and len(_conjuncts(cond)) > 1:
            # `if (am_last && t < 128)`: the conjuncts over known values keep their places (the
            # thread predicate, the uniform conditions); only the unknown ones make it inexact (a
            # conjunct over unknowns every thread holds alike is a uniform condition, as a whole
            # condition over them is: `_classify`)
            g = guard
            for c in _conjuncts(cond):
                fv = c.free_vars()
                if any(v.kind == E.OPAQUE for v in fv) and not E.alike_for_all(c):
                    g = g.inexact(c)
                elif any(v.kind == E.THREAD for v in fv):
                    g = g.with_thread(c)
                else:
                    g = g.with_uniform(c)
            return g
        if isinstance(cond, Expr):
            return guard.inexact(cond if positive else E.negate(cond))
        return guard.inexact()

    def _walk_if(self, c, ctx: Ctx) -> str | None:
        kids = list(c.get_children())
        # children: [init-statement], condition, then, [else]
        while kids and kids[0].kind in (CK.DECL_STMT, CK.VAR_DECL) and len(kids) > 2:
            if kids[0].kind == CK.DECL_STMT:
                self.walk(kids[0], ctx)
            kids = kids[1:]
        cond_cursor = kids[0] if kids else None
        stmts = kids[1:]
        toks = tokens_of(c)
        is_constexpr = len(toks) > 1 and toks[1] == "constexpr"
        cond = self.exec_expr(cond_cursor, replace(ctx, dry=True)) if cond_cursor is not None else None
        mem_cond = None
        if not is_constexpr:
            mem_cond = self.condition_memory(cond_cursor, ctx)
        if isinstance(cond, Obj) and cond.kind == "shared" and not cond.ref.index:
            # `if (am_last)`: a `__shared__` flag, an unknown value named for what it reads
            cond = E.Var(f"?shared:{cond.ref.name}", E.OPAQUE)
        if isinstance(cond, Expr) and not isinstance(cond, E.Const):
            cond = _to_bool(cond)
        then_s = stmts[0] if stmts else None
        else_s = stmts[1] if len(stmts) > 1 else None
        cls, cexp = self._classify(cond, ctx)
        if cls in ("thread", "uniform") and not is_constexpr:
            # a condition no thread satisfies (`if (warpgroup::warpid() < 0)`), proved from what
            # is known of thread ids, loop counters and launch values: that branch never runs.
            # (A condition that only contradicts the enclosing guard -- an issuer outside its
            # role -- stays: its ops run on no thread, which the single-issuer rule reports.)
            if self._never(ir.Guard(), cexp):
                cls, cexp = "const", E.Const(False)
            elif self._never(ir.Guard(), E.negate(cexp)):
                cls, cexp = "const", E.Const(True)
        if cls == "thread" and not is_constexpr and ctx.loops and _leaves_loop(then_s, else_s):
            # `if (rowcol.x == -1) break;` with `rowcol` a function of the warpgroup's index whose
            # -1 case names no thread: the exit test every running thread answers alike
            u = self._alike_for_runners(ctx.guard, cexp)
            if u is not None:
                cls, cexp = "uniform", u
        if cls == "const" and isinstance(cexp, E.Const):
            taken = then_s if cexp.value else else_s
            dead = else_s if cexp.value else then_s
            if dead is not None and self.w.model is not None:
                # code this kernel never runs (`if constexpr` not taken): out of its coverage census
                self.w.model.dead_code.add(_extent(dead))
            return self.walk(taken, ctx) if taken is not None else None
        if is_constexpr and cls != "const":
            # unknown `if constexpr`: exactly one branch exists in the instantiation
            cls = "unknown"
        results = []
        envs = []
        guards = []
        # records (struct instances) are per thread too: each branch starts from the fields
        # as they were, and they are merged after the `if` like variables
        recs = self._reachable_records(ctx.env)
        snap = [(r, dict(r.fields)) for r in recs]
        branch_fields = []
        for stmt, positive in ((then_s, True), (else_s, False)):
            for r, f in snap:
                r.fields.clear()
                r.fields.update(f)
            g = self._branch_guard(ctx.guard, cls, cexp, positive)
            sub = replace(ctx, guard=g, env=BranchEnv(ctx.env))
            r = self.walk(stmt, sub) if stmt is not None else None
            results.append(r)
            envs.append(sub.env)
            guards.append(sub.guard)
            branch_fields.append([dict(rec.fields) for rec, _ in snap])
        self._merge_envs(ctx, envs, cexp if cls in ("thread", "uniform") else None, results)
        self._merge_fields(snap, branch_fields, cexp if cls in ("thread", "uniform") else None, results)
        if results[0] is not None and results[1] is not None:
            return results[0] if results[0] == results[1] else "return"
        # a branch that falls through under a narrower guard than it was entered with (an exit
        # nested in it: `if (t < s) { if (v == 0) continue; }`): the code after the `if` runs
        # only where some branch falls through (`_fall_through_guard`)
        entry = [self._branch_guard(ctx.guard, cls, cexp, positive) for positive in (True, False)]
        narrowed = [results[i] is None and guards[i] != entry[i] for i in (0, 1)]
        # one branch always leaves (return/break/continue): later code runs only
        # under the other branch's condition
        at_if = ctx.guard
        for r, positive in ((results[0], True), (results[1], False)):
            if r is not None:
                ctx.guard = self._branch_guard(ctx.guard, cls, cexp, not positive)
                if r == "break":
                    self._break_at.append(
                        (at_if, cexp if positive else E.negate(cexp)) if cls in ("thread", "uniform") else None
                    )
                    # what lets an iteration go on past this break (None: not a uniform condition)
                    self._loop_breaks.append(None if cls != "uniform" else E.negate(cexp) if positive else cexp)
                    mc = (
                        _to_bool(mem_cond) if isinstance(mem_cond, Expr) and not isinstance(mem_cond, E.Const) else None
                    )
                    self._break_goes_on.append(None if mc is None else E.negate(mc) if positive else mc)
                if cls == "uniform":
                    _refine_after_exit(ctx.env, E.negate(cexp) if positive else cexp)
        if any(narrowed):
            falls = [guards[i] for i in (0, 1) if results[i] is None]
            ctx.guard = falls[0] if len(falls) == 1 else _fall_through_guard(at_if, falls)
        return None

    def _walk_switch(self, c, ctx: Ctx) -> str | None:
        """`switch (e) { case a: ...; break; case b: ... default: ... }` as one branch per group of
        labels (a group ends at a `break`; without one it falls into the next group's code), each
        under `e == a || ...` (default: no label matches). Other shapes: walked inexactly."""
        kids = list(c.get_children())
        body = kids[-1] if kids else None
        sel = self.exec_expr(kids[0], replace(ctx, dry=True)) if len(kids) >= 2 else None
        stmts = list(body.get_children()) if body is not None and body.kind == CK.COMPOUND_STMT else []
        groups: list[list] = []  # [labels (Expr or "default"), statements]
        cur = None
        ok = isinstance(sel, Expr) and bool(stmts)
        for st in stmts:
            labels = []
            while st is not None and st.kind in (CK.CASE_STMT, CK.DEFAULT_STMT):
                ch = list(st.get_children())
                if st.kind == CK.CASE_STMT:
                    v = self.exec_expr(ch[0], replace(ctx, dry=True)) if ch else None
                    if not isinstance(v, Expr):
                        ok = False
                    labels.append(v)
                    st = ch[1] if len(ch) > 1 else None
                else:
                    labels.append("default")
                    st = ch[0] if ch else None
            if labels:
                cur = [labels, []]
                groups.append(cur)
            if st is not None:
                if cur is None:
                    ok = False
                    break
                cur[1].append(st)
        if not ok:
            inner = replace(ctx, guard=ctx.guard.inexact(), env=ctx.env.child())
            if body is not None:
                self.walk(body, inner)
            return None
        all_labels = [lb for g in groups for lb in g[0] if lb != "default"]

        def cond_of(labels):
            if "default" in labels:
                return E.negate(E.disj(*[E.binop("==", sel, lb) for lb in all_labels])) if all_labels else E.TRUE
            return E.disj(*[E.binop("==", sel, lb) for lb in labels])

        carried = None  # the condition falling into this group (no break before)
        for labels, body_stmts in groups:
            cond = cond_of(labels)
            if carried is not None:
                cond = E.binop("||", carried, cond)
            cls, cexp = self._classify(cond, ctx)
            if cls == "const" and isinstance(cexp, E.Const) and not cexp.value:
                carried = None
                continue
            g = ctx.guard if cls == "const" else self._branch_guard(ctx.guard, cls, cexp, True)
            sub = replace(ctx, guard=g, env=BranchEnv(ctx.env))
            r = None
            for st in body_stmts:
                r = self.walk(st, sub)
                if r is not None:
                    break
            carried = None if r is not None else cond
        return None

    def _alike_for_runners(self, guard: ir.Guard, cond: Expr | None) -> Expr | None:
        """A thread-dependent condition every thread that evaluates it (the threads of `guard`)
        answers alike, as a block-uniform condition: the condition of the first such thread t0,
        proved by z3 equal to the condition of every other one for all values of the loop
        counters and launch values (under the guard's uniform conditions). None when the
        threads are not known by their index alone or the proof fails."""
        from .. import solver
        from ..model.threads import threads_satisfying

        if cond is None or self.w.model is None:
            return None
        n = self.w.model.num_threads()
        if n is None or n > 1024:
            return None
        fv = cond.free_vars() | guard.thread.free_vars()
        if any(v.kind == E.OPAQUE or (v.kind == E.THREAD and v != E.TID) for v in fv):
            return None
        if guard.thread.free_vars() - {E.TID}:
            return None  # who runs it depends on more than the thread's index
        runners = threads_satisfying(guard.thread, n)
        if not runners:
            return None
        u = E.substitute(cond, {E.TID.name: E.Const(min(runners))})
        if u.depends_on(E.THREAD):
            return None
        same = E.binop("||", E.binop("&&", cond, u), E.binop("&&", E.negate(cond), E.negate(u)))
        pred = E.binop("||", E.negate(E.conj(E.binop("<", E.TID, E.Const(n)), guard.thread)), same)
        return u if solver.always(pred, 500, assume=tuple(guard.uniform)) is True else None

    def _never(self, guard: ir.Guard, cond: Expr) -> bool:
        """True when no thread under `guard` satisfies `cond` (for any value of the loop
        counters and launch values it mentions): enumerated over the block when
        the condition is over thread ids only, else proved by z3 over thread ids, loop counters
        and launch values (kernel arguments can be anything: a condition over them is never
        decided here). Unknown is False: the branch is kept."""
        if not guard.exact:
            return False
        pred = E.conj(guard.thread, *guard.uniform, cond)
        fv = pred.free_vars()
        if any(v.kind == E.OPAQUE for v in fv):
            return False
        n = self.w.model.num_threads() if self.w.model is not None else None
        if n is not None and n > 1024:
            return False  # a block that cannot launch (the engine does not analyse it): no enumeration
        if n is not None and all(v.kind == E.THREAD for v in fv):
            from ..model.threads import threads_satisfying

            sat = threads_satisfying(pred, n)
            return sat is not None and not sat
        known = {
            "blockIdx.x",
            "blockIdx.y",
            "blockIdx.z",
            "gridDim.x",
            "gridDim.y",
            "gridDim.z",
            "clusterIdx.x",
            "clusterDim.x",
            "cta_rank",
        }
        if not all(v.kind in (E.THREAD, E.LOOP) or v.name in known for v in fv):
            return False
        if any(v.kind == E.LOOP and not (v.name.startswith("k") and v.name[1:].isdigit()) for v in fv):
            return False  # symbolic start values of carried variables: no sign known
        from .. import solver
        from ..model.ground import satisfied_somewhere

        assume = []
        if n is not None:
            assume.append(E.binop("<", E.TID, E.Const(n)))
        asked = E.negate(pred)
        # a thread and iteration that satisfy `pred` (the solver's own semantics, model/ground.py)
        # make the solver's answer "no" or "unknown": both False here, so no solver is asked
        # (bitonic shift closed forms spent its whole budget for that unknown, ~3 s a question)
        if satisfied_somewhere(E.Un("!", asked), n):
            return False
        return solver.always(asked, 500, assume=tuple(assume)) is True

    @staticmethod
    def _merge_fields(snap, branch_fields, cond, results):
        """Record fields after an `if`: `cond ? then : else` where the branches differ."""
        for i, (rec, before) in enumerate(snap):
            a = branch_fields[0][i] if results[0] is None else None
            b = branch_fields[1][i] if results[1] is None else None
            rec.fields.clear()
            if a is None and b is None:
                rec.fields.update(before)
                continue
            if a is None or b is None:
                rec.fields.update(a if a is not None else b)
                continue
            for name in list(dict.fromkeys(list(a) + list(b))):
                x, y = a.get(name, before.get(name)), b.get(name, before.get(name))
                if x is y or x == y:
                    rec.fields[name] = x
                elif isinstance(x, Expr) and isinstance(y, Expr):
                    rec.fields[name] = E.ite(cond, x, y) if cond is not None else E.opaque(f"{name}@branch")
                elif x is None or y is None:
                    rec.fields[name] = x if y is None else y
                else:
                    rec.fields[name] = E.opaque(f"{name}@branch") if isinstance(x, Expr) or isinstance(y, Expr) else x

    def _merge_envs(self, ctx: Ctx, envs: list, cond: Expr | None, results):
        """Variables assigned in a branch get `cond ? then : else` afterwards.
        A branch that always leaves (return/break/continue) contributes nothing:
        code after the `if` runs only on the other path."""
        then_w = envs[0].writes if results[0] is None else None
        else_w = envs[1].writes if results[1] is None else None
        names = set(then_w or ()) | set(else_w or ())
        for name in sorted(names):
            old = ctx.env.lookup(name)
            a = then_w.get(name, old) if then_w is not None else None
            b = else_w.get(name, old) if else_w is not None else None
            if then_w is None:
                new = b
            elif else_w is None:
                new = a
            elif (up := self._merged_pointer(name, a, b, cond)) is not None:
                new = up  # a pointer each branch points elsewhere: not one branch's value
            elif isinstance(a, Expr) and isinstance(b, Expr):
                new = E.ite(cond, a, b) if cond is not None else (a if a == b else E.opaque(f"{name}@branch"))
            else:
                new = a if a is b else (E.opaque(f"{name}@branch") if isinstance(a, Expr) or isinstance(b, Expr) else a)
            ctx.env.assign(name, new)

    def _merged_pointer(self, name: str, a, b, cond):
        """A pointer variable the two branches of an `if` leave at different values: unknown
        (loop_pointers.merged), unless both are global addresses whose `cond ? a : b` is one."""
        ex = self.w.exprs
        if isinstance(a, Expr) and isinstance(b, Expr):
            if name not in ex.pointer_vars or not (ex.pointer_value(a) or ex.pointer_value(b)):
                return None
            if cond is not None and ex._global_pointer(E.ite(cond, a, b)):
                return None
        return loop_pointers.merged(name, a, b, ex)

    @staticmethod
    def _try_wait_loop(c, kids) -> Any:
        """The asm statement of a `while (!x) asm(...)` / `do asm(...); while (!x)` / `x == 0`
        loop whose only statement is an mbarrier `try_wait.parity` / `test_wait.parity` that
        writes `x` (its output operand): the loop repeats the test until the phase completed.
        None for any other loop."""
        parts = _cond_and_body(c, kids)
        if parts is None:
            return None
        cond_c, body = parts
        while body.kind == CK.COMPOUND_STMT:
            stmts = [ch for ch in body.get_children() if ch.kind != CK.NULL_STMT]
            if len(stmts) != 1:
                return None
            body = stmts[0]
        if body.kind not in (CK.ASM_STMT, CK.MS_ASM_STMT):
            return None
        toks = tokens_of(body)
        ptx = " ".join(t for t in toks if t.startswith('"'))
        if not re.search(r"mbarrier\.(try|test)_wait\.parity", ptx):
            return None
        outs = [toks[k + 2] for k, t in enumerate(toks[:-3]) if re.fullmatch(r'"[=+]r"', t) and toks[k + 1] == "("]
        ctoks = [t for t in tokens_of(cond_c) if t not in ("(", ")")]
        if len(outs) != 1 or not re.fullmatch(r"[A-Za-z_]\w*", outs[0]):
            return None
        x = outs[0]
        if ctoks in (["!", x], [x, "==", "0"], ["0", "==", x], [x, "==", "0u"], [x, "!=", "1"]):
            return body
        return None

    def _walk_return(self, c, ctx: Ctx):
        kids = list(c.get_children())
        if ctx.frame is not None:
            if ctx.frame.records:
                ctx.frame.record_returns.append((ctx.guard, ctx.loops, [dict(r.fields) for r in ctx.frame.records]))
            if kids:
                v = self.exec_expr(kids[0], ctx)
                ctx.frame.returns.append((ctx.guard, v))
            else:
                ctx.frame.returns.append((ctx.guard, None))
            return
        if not ctx.dry:
            self.w.emit(ir.Op(ir.EXIT, "return", loc_of(c, self.w.filename), ctx.guard, ctx.loops), ctx)

    def _ptx_wait_loop(self, c, kids, ctx: Ctx) -> tuple[str, tuple[cexpr.Node, ...]] | None:
        """The wrapper name and arguments of a `while (!cuda::ptx::mbarrier_try_wait_parity(...))`
        loop with an empty body (or `do {} while (!...)`; `test_wait_parity` alike): the loop
        repeats the test until the phase completed. None for any other loop."""
        parts = _cond_and_body(c, kids)
        if parts is None:
            return None
        cond_c, body = parts
        if body.kind not in (CK.COMPOUND_STMT, CK.NULL_STMT) or any(
            ch.kind != CK.NULL_STMT for ch in body.get_children()
        ):
            return None
        toks = tokens_of(cond_c)
        if not any(t in walk_ptxns.WAITS for t in toks):
            return None
        try:
            node = cexpr.parse_expression(toks, value_names(ctx.env))
        except cexpr.ParseError:
            return None
        while isinstance(node, cexpr.Cast):
            node = node.a
        if not (isinstance(node, cexpr.Un) and node.op == "!" and isinstance(node.a, cexpr.Call)):
            return None
        callee = node.a.callee
        if not isinstance(callee, cexpr.Name) or callee.segments[-1].name not in walk_ptxns.WAITS:
            return None
        base = callee.segments[-1].name
        if not walk_ptxns.is_cuda_ptx_call(cond_c, base, [sg.name for sg in callee.segments[:-1]]):
            return None
        return base, node.a.args

    def _walk_loop(self, c, ctx: Ctx):
        kids = list(c.get_children())
        wait = self._try_wait_loop(c, kids)
        if wait is not None:
            # `while (!done) asm("mbarrier.try_wait.parity ... p; selp.u32 %0, 1, 0, p;" : "=r"(done) ...)`:
            # the loop is the wait, as a try_wait that branches back on itself is
            self.w.asm.walk(wait, ctx, looped=True)
            return
        polled = polled_probe(c, kids)
        if polled is not None:
            # `while (!phase_done(bar, ph)) {}` over a helper whose inline PTX probes the phase
            # once and returns the answer: the loop is the wait the probe's operands name
            cond_c, probe = polled
            with self.w.asm.polling(probe):
                self.exec_expr(cond_c, ctx)
            return
        call = self._ptx_wait_loop(c, kids, ctx)
        if call is not None:
            # `while (!cuda::ptx::mbarrier_try_wait_parity(&bar, p)) {}`: the same wait, written
            # with libcu++'s wrapper of the instruction
            self.w.ptxns.call(call[0], call[1], ctx, c, looped=True)
            return
        toks = tokens_of(c)
        loc = loc_of(c, self.w.filename)
        env = ctx.env.child()
        lctx = replace(ctx, env=env)
        init_s = cond_c = inc_c = body = None
        if c.kind == CK.FOR_STMT:
            # which of init/cond/inc are present: look at the header tokens
            depth, semis, j = 0, [], 0
            for j, t in enumerate(toks):
                if t == "(":
                    depth += 1
                elif t == ")":
                    depth -= 1
                    if depth == 0:
                        break
                elif t == ";" and depth == 1:
                    semis.append(j)
            if len(semis) == 2:
                has_init = semis[0] > 2
                has_cond = semis[1] > semis[0] + 1
                has_inc = j > semis[1] + 1
                it = iter(kids)
                init_s = next(it) if has_init else None
                cond_c = next(it) if has_cond else None
                inc_c = next(it) if has_inc else None
                body = next(it, None)
            else:
                body = kids[-1] if kids else None
        elif c.kind == CK.WHILE_STMT:
            cond_c, body = (kids[0], kids[-1]) if len(kids) >= 2 else (None, kids[-1] if kids else None)
        elif c.kind == CK.DO_STMT:
            body, cond_c = (kids[0], kids[-1]) if len(kids) >= 2 else (kids[0] if kids else None, None)
        else:  # range-for: opaque trip count
            body = kids[-1] if kids else None
        if init_s is not None:
            if init_s.kind == CK.DECL_STMT:
                self.walk(init_s, replace(lctx, dry=True))
            else:
                self.exec_expr(init_s, replace(lctx, dry=True))
        self._loop_ids += 1
        lid = self._loop_ids
        # induction variable: `for (int i = a; i < b; i += s)`, also a struct field
        # (`for (regs.task = regs.first; regs.task < regs.n; regs.task += regs.stride)`)
        var, init_v, step, trip, infinite = self._induction(init_s, cond_c, inc_c, lctx)
        geometric, self._geometric_form = self._geometric_form, None
        ivar = _Slot.of(var, self.w, lctx) if var is not None else None
        var_name = ivar.name if ivar is not None and ivar.rec is None else None
        shown = var_name if var_name is not None else (cexpr.render(var) if var is not None else None)
        # the iteration counter, printed in the user's words (`k`, `(k - 1)`, `((k - 2) / 4)`)
        counter = E.Var(f"k{lid}", E.LOOP, label=_counter_label(shown, init_v, step, loc))
        # the induction variable as a function of the counter, visible to the
        # dry pass below (`const int stage = k % STAGES` in the body)
        if ivar is not None and init_v is not None and step is not None:
            ivar.set(env, E.binop("+", init_v, E.binop("*", step, counter)), define=True)
        elif ivar is not None and geometric is not None:
            ivar.set(env, geometric(counter), define=True)
        if isinstance(trip, E.Const) and type(trip.value) is int:
            self._const_trips[counter.name] = trip.value
        # loop-carried variables: solve their per-iteration closed forms
        self._last_system = None
        self._last_continued = None
        self._carried_trip_of = trip
        self._last_uniform = set()
        carried = self._carried_variables(
            body, inc_c, lctx, exclude={var_name} if var_name else set(), counter=counter, ivar=ivar
        )
        uniform_slots, self._last_uniform = self._last_uniform, set()
        pointer_sys, self._last_pointers = self._last_pointers, {}
        system = self._last_system
        self._last_system = None
        continued, self._last_continued = self._last_continued, None
        rwalks, self._last_ring_walk = self._last_ring_walk or [], None
        loop = ir.Loop(
            lid, var_name, counter, init_v, step, trip, loc, ctx.loops[-1] if ctx.loops else None, infinite=infinite
        )
        loop.carried_from = continued
        if geometric is not None:
            loop.form = geometric(counter)
        if trip is not None and trip.depends_on(E.THREAD):
            loop.uniform = False
        if self.w.model is not None and not ctx.dry:
            self.w.model.loops[lid] = loop
        bctx = replace(lctx, loops=ctx.loops + (lid,), env=env.child())
        if ivar is not None and init_v is not None and step is not None:
            ivar.set(env, E.binop("+", init_v, E.binop("*", step, counter)), define=True)
        elif ivar is not None and geometric is not None:
            ivar.set(env, geometric(counter), define=True)
        elif ivar is not None:
            ivar.set(env, E.opaque(f"{cexpr.render(var)}@loop"), define=True)
        heads = {slot: _uniform_unknown(closed(counter), slot in uniform_slots) for slot, closed in carried.items()}
        for slot, v in heads.items():
            slot.set(env, v)
        # pointers the body changes that the walk does not solve: unknown in the loop and after
        unknown_ptrs, rotation = self._unknown_pointers(pointer_sys, carried, heads, system, loc)
        for name, up in unknown_ptrs.items():
            env.assign(name, up)
        if rotation is not None and (infinite or _leaves_early(body)):
            rotation = None
        if rotation is not None:
            # a rotation the walk follows: at iteration k each pointer holds the value of
            # residue k mod p (loop_pointers.values_at), an option per residue
            for name, up in loop_pointers.choices(rotation[0], rotation[1], counter).items():
                env.assign(name, up)
        saved_breaks = self._loop_breaks
        self._loop_breaks = []
        saved_goes_on = self._break_goes_on
        self._break_goes_on = []
        saved_break_at = self._break_at
        self._break_at = []
        for rw in rwalks:
            rw.loop_id = lid
            self._ring_walks.append(rw)
        if cond_c is not None and trip is None and var is None and carried:
            ct = self._carried_trip(cond_c, bctx, counter)
            if ct is not None:
                trip, loop.init = ct
                loop.trip, loop.step = trip, E.Const(1)
        entry = replace(bctx)  # before the condition: every thread that reaches the loop evaluates it
        if cond_c is not None and trip is None:
            cond = self.exec_expr(cond_c, replace(bctx, dry=True))
            cls, cexp = self._classify(_to_bool(cond) if isinstance(cond, Expr) else cond, bctx)
            if cls == "thread":
                bctx.guard = bctx.guard.with_thread(cexp)
                loop.uniform = False
            elif cls == "uniform":
                bctx.guard = bctx.guard.with_uniform(cexp)
                loop.cond = cexp  # holds in every iteration that runs
            elif cls == "unknown":
                # a condition over values the model does not follow (`more = delta > TOL`): each
                # thread may leave at an iteration of its own, a trip count N(t) of its own
                bctx.guard = bctx.guard.exit_inexact(lid)
                loop.thread_exit = True
        spin: ir.Op | None = None
        if (c.kind in (CK.WHILE_STMT, CK.DO_STMT) or infinite) and loop.trip is None and not ctx.dry:
            # a loop left when a value allows it: a spin on a flag where that value is loaded
            # (the memory events of its condition are in each iteration)
            spin = ir.Op(ir.SPIN, "spin loop", loc, entry.guard, entry.loops)
            if self.w.model is not None:
                self.w.emit(spin, entry)
            if cond_c is not None:
                cv = self.condition_memory(cond_c, entry)
                cv = self.w.exprs.read_value(cv)  # `while (!ready)` / `while (flag)`: the loaded value
                # the condition with the values its polls load as Vars (the progress engine asks
                # which loaded values let the loop end)
                spin.spin = ir.SpinFacts(_to_bool(cv) if isinstance(cv, Expr) else None, empty=_empty_body(body))
        real_ends = None  # the carried values at the end of the body this walk saw (`_simulated`)
        body_guard = bctx.guard
        r = None
        if body is not None:
            r = self.walk(body, bctx)
            if r is None and not ctx.dry:
                real_ends = {sl: sl.get(env) for sl in carried}
            if inc_c is not None and r is None and not ctx.dry:
                # the increment runs at the end of every iteration: its operations too
                # (`for (...; ...; mks.next_instruction())` arrives on the slot's barrier)
                saved_vals = {sl: sl.get(env) for sl in carried}
                self.exec_expr(inc_c, replace(bctx, env=bctx.env.child()))
                real_ends = {sl: sl.get(env) for sl in carried}
                for sl, v in saved_vals.items():
                    sl.set(env, v)
        for rw in rwalks:
            self._ring_walks.remove(rw)
        if spin is not None and self._loop_breaks:
            one = self._break_goes_on[0] if len(self._break_goes_on) == 1 and len(self._loop_breaks) == 1 else None
            spin.spin = replace(spin.spin or ir.SpinFacts(), breaks=True, goes_on=one if cond_c is None else None)
        if (
            spin is not None
            and c.kind == CK.DO_STMT
            and spin.spin is not None
            and spin.spin.cond is not None
            and real_ends is not None
        ):
            # `do { old = atomicCAS(l, 0, 1); } while (old != 0);`: the condition is evaluated
            # after the body, over the values the body's events name (the walk above read it at
            # the head, with the carried value); kept only when the condition loads nothing itself
            spin.spin = replace(spin.spin, cond=self._do_condition(cond_c, bctx, spin.spin.cond, lid))
        if spin is not None and spin.spin is not None and spin.spin.cond is not None and system is not None:
            spin.spin = replace(spin.spin, carried=_carried_polls(spin.spin.cond, system[1], real_ends))
        break_trip = None
        if self._loop_breaks and trip is not None:
            loop.trip = None
            if r is None and not infinite and len(self._break_at) == 1 and self._break_at[0] is not None:
                break_trip = self._break_trip(trip, counter, body_guard, *self._break_at[0])
        if infinite and self._loop_breaks and all(b is not None for b in self._loop_breaks):
            loop.continues = tuple(self._loop_breaks)
        elif (
            not infinite
            and not self._loop_breaks
            and loop.trip is None
            and loop.cond is not None
            and not loop.cond.depends_on(E.LOOP)
            and not loop.cond.is_opaque()
        ):
            loop.data_cond = True  # `while (next_tile >= 0)`: ends on data
        uniform_exit = _uniform_exit(loop, bool(self._loop_breaks), body)
        self._loop_breaks = saved_breaks
        self._break_goes_on = saved_goes_on
        self._break_at = saved_break_at
        # after the loop: carried variables hold their value after `trip`
        # iterations when the trip count is known, else an unknown
        after = {}
        for slot, closed in carried.items():
            if loop.trip is not None:
                after[slot] = _uniform_unknown(closed(loop.trip), slot in uniform_slots)
            elif uniform_exit and _uniform_value(_uniform_unknown(closed(counter), slot in uniform_slots)):
                # every thread that runs the loop leaves it at the same iteration N (a uniform
                # test, no break) and holds the value of iteration N's head then, the same for
                # all of them: a block-uniform unknown (the persistent task index after the
                # tasks of one group, `for (; task < n; task += stride)`)
                after[slot] = E.uniform_unknown(f"{slot.label}@after-loop")
            else:
                after[slot] = E.opaque(f"{slot.label}@after-loop")
            slot.set(ctx.env, after[slot])
        for name, up in unknown_ptrs.items():
            ctx.env.assign(name, up)
        if rotation is not None and loop.trip is not None:
            # after the loop (no early exit: `_leaves_early`) the rotation is where the trip count
            # leaves it: a known count names the values, a count of the launch's values an option
            # per residue of it
            sigma, v0s = rotation
            n_trip = loop.trip.eval({})
            if isinstance(n_trip, int) and n_trip >= 0:
                for name, v in loop_pointers.values_at(sigma, v0s, n_trip % loop_pointers.period(sigma)).items():
                    ctx.env.assign(name, v)
            elif not loop.trip.is_opaque() and not loop.trip.depends_on(E.THREAD) and not loop.trip.depends_on(E.LOOP):
                for name, up in loop_pointers.choices(sigma, v0s, loop.trip).items():
                    ctx.env.assign(name, up)
        if system is not None and real_ends is not None:
            loop.simulated = _simulated(heads, after, system[2], real_ends)
        if system is not None and loop.trip is not None and not loop.trip.depends_on(E.THREAD):
            self._register_sequence(lid, loop.trip, carried, system, after, ctx.dry)
        if self._system_logs and system is not None:
            # what the enclosing loop's analysis may need: this loop's update of its carried
            # values (a ring advanced here across the tasks of a persistent loop)
            self._system_logs[-1].append(_System(lid, loop.trip, system[0], system[1], system[2], after))
        if ivar is not None and ivar.field is not None:
            # a field used as the induction variable keeps its last value
            ivar.set(
                ctx.env,
                E.binop("+", init_v, E.binop("*", step, loop.trip))
                if loop.trip is not None and init_v is not None and step is not None
                else E.opaque(f"{ivar.label}@after-loop"),
            )
        if break_trip is not None:
            # the iterations each thread starts (the values after the loop stay unknowns above:
            # the breaking iteration does not finish)
            loop.trip = break_trip
            if break_trip.depends_on(E.THREAD):
                loop.uniform = False

    def _break_trip(self, trip: Expr, counter: E.Var, body_guard: ir.Guard, at_if: ir.Guard, cond: Expr):
        """The iterations a thread starts in a loop of `trip` iterations left by its one `break`
        under `if (c)` directly in the body (the guard at the `if` is the body's): c is
        `a == b` with a - b = f0 +- k over the loop's counter k (proved by z3), so the thread
        breaks in iteration e = -+f0 when 0 <= e < trip, and starts e + 1 iterations; else trip.
        A c over the thread and kernel values only (no loop counter, no unknown: the same in
        every iteration, `if (lane != 0) break;`) breaks in the first iteration: the thread
        starts one iteration when c holds and the loop runs at all, else trip (round 16).
        None when the break is not of that form (the trip count stays unknown)."""
        if at_if != body_guard or not body_guard.exact:
            return None
        if (
            not cond.is_opaque()
            and not cond.depends_on(E.LOOP)
            and all(v.kind in (E.THREAD, E.PARAM) and not v.name.startswith("?") for v in cond.free_vars())
        ):
            first = E.binop("&&", cond, E.binop(">", trip, E.Const(0)))
            return E.ite(first, E.Const(1), trip)
        if not (isinstance(cond, E.Bin) and cond.op == "=="):
            return None
        f = E.binop("-", cond.a, cond.b)
        if f.is_opaque() or any(v.kind == E.LOOP and v != counter for v in f.free_vars()):
            return None
        if counter not in f.free_vars():
            return None
        from .. import solver

        f0 = E.substitute(f, {counter.name: E.Const(0)})
        for sign in (1, -1):
            lin = E.binop("+" if sign == 1 else "-", f0, counter)
            if solver.always(E.binop("==", f, lin), 500) is True:
                e = f0 if sign == -1 else _negated(f0)
                inside = E.binop("&&", E.binop(">=", e, E.Const(0)), E.binop("<", e, trip))
                return E.ite(inside, E.binop("+", e, E.Const(1)), trip)
        return None

    def _carried_trip(self, cond_c, ctx: Ctx, counter: E.Var):
        """`x < n` where the carried x is `x0 + k` (an object's index advanced by a member
        function, a counter a previous loop advanced): (the trip count n - x0, x0)."""
        node = cexpr.parse_expression(tokens_of(cond_c), value_names(ctx.env))
        if not isinstance(node, cexpr.Bin) or node.op != "<":
            return None
        lhs = self.w.ev(node.a, replace(ctx, dry=True))
        bound = self.w.ev(node.b, replace(ctx, dry=True))
        if not isinstance(lhs, Expr) or not isinstance(bound, Expr) or bound.depends_on(E.LOOP) or bound.is_opaque():
            return None
        x0: Expr | None = None
        if lhs == counter:
            x0 = E.Const(0)
        elif isinstance(lhs, E.Bin) and lhs.op == "+" and counter in (lhs.a, lhs.b):
            x0 = lhs.b if lhs.a == counter else lhs.a
        if x0 is None or x0.depends_on(E.LOOP) or x0.is_opaque():
            return None
        t = E.binop("-", bound, x0)
        return (
            E.ite(E.binop("<", t, E.Const(0)), E.Const(0), t)
            if not isinstance(t, E.Const)
            else E.Const(max(t.value, 0))
        ), x0

    def _induction(self, init_s, cond_c, inc_c, ctx: Ctx):
        """(induction lvalue node, start value, step, trip count, infinite)."""
        var: cexpr.Node | None = None
        init_v = step = trip = None
        infinite = cond_c is None
        if init_s is not None:
            toks = tokens_of(init_s)
            if init_s.kind == CK.DECL_STMT:
                for i, tok in enumerate(toks):
                    if tok == "=" and i > 0:
                        var = cexpr.Name.simple(toks[i - 1])
                        break
                var = _declared_induction(init_s, cond_c, inc_c) or var
            else:
                node = cexpr.parse_expression(toks, ctx.env.has)
                if isinstance(node, cexpr.Comma):
                    node = node.a
                if (
                    isinstance(node, cexpr.Assign)
                    and node.op == "="
                    and isinstance(node.target, (cexpr.Name, cexpr.Member))
                ):
                    var = node.target
            if var is not None:
                slot = _Slot.of(var, self.w, ctx)
                v = slot.get(ctx.env) if slot is not None else None
                init_v = v if isinstance(v, Expr) else None
                if slot is None:
                    var = None
        if inc_c is not None and var is not None:
            node = cexpr.parse_expression(tokens_of(inc_c), value_names(ctx.env))
            step = _step_of(node, var, lambda n: self.w.ev(n, replace(ctx, dry=True)))
        if isinstance(var, cexpr.Member) and step is None:
            var = init_v = None  # advanced by a member function: a carried variable
        if cond_c is not None and var is not None and step is not None and init_v is not None:
            node = cexpr.parse_expression(tokens_of(cond_c), value_names(ctx.env))
            if isinstance(node, cexpr.Bin) and node.a == var:
                bound = self.w.ev(node.b, replace(ctx, dry=True))
                if isinstance(bound, Expr):
                    op = node.op
                    s = step
                    if op == "<":
                        span = E.binop("-", bound, init_v)
                    elif op == "<=":
                        span = E.binop("+", E.binop("-", bound, init_v), E.Const(1))
                    elif op == "!=":
                        span = E.binop("-", bound, init_v)
                    else:
                        span = None
                    if span is not None and isinstance(s, E.Const) and s.value > 0:
                        t = E.binop("/", E.binop("+", span, E.Const(s.value - 1)), s)
                        trip = (
                            E.ite(E.binop("<", t, E.Const(0)), E.Const(0), t)
                            if not isinstance(t, E.Const)
                            else E.Const(max(t.value, 0))
                        )
                    elif (
                        span is not None
                        and op == "<"
                        and (
                            _positive_uniform(s)
                            or (
                                isinstance(s, Expr)
                                and not s.free_vars() - {v for v in s.free_vars() if v.kind == E.PARAM}
                                and s.free_vars()
                            )
                        )
                    ):
                        # a grid-stride / block-stride loop: `task += gridDim.x`; also a block-uniform
                        # stride (`regs.task_stride`): a stride below 1 would never end the loop
                        # a grid-stride / block-stride loop: `task += gridDim.x` (the step is >= 1)
                        t = E.binop("/", E.binop("-", E.binop("+", span, s), E.Const(1)), s)
                        trip = E.ite(E.binop("<=", span, E.Const(0)), E.Const(0), t)
            elif isinstance(node, cexpr.Bin) and node.op == "&&":
                trip = None
        self._geometric_form = None
        if cond_c is not None and var is not None and step is None and init_v is not None and inc_c is not None:
            trip = self._geometric_trip(var, init_v, cond_c, inc_c, ctx)
        if cond_c is not None and (
            var is None
            or not re.search(
                r"(?<![\w.])" + re.escape(cexpr.render(var)) + r"\b", " ".join(tokens_of(cond_c)).replace(" . ", ".")
            )
        ):
            # `for (;;)`, `while (true)`: a condition constant without the induction variable
            # (evaluated with its start value, `p < PARTS` would look constant)
            cv = self.exec_expr(cond_c, replace(ctx, dry=True))
            if isinstance(cv, E.Const) and cv.value:
                infinite = True
        return var, init_v, step, trip, infinite

    _GEOMETRIC_MAX = 64  # iterations run to find the trip count of a halving / doubling loop
    _GEOMETRIC_TABLE = 256  # iterations of the enclosing loops a geometric trip count is run at

    def _geometric_trip(self, var, init_v: E.Expr, cond_c, inc_c, ctx: Ctx) -> E.Expr | None:
        """The trip count of a loop whose variable is shifted, halved or doubled by a constant
        (`for (int off = 16; off > 0; off >>= 1)`, the tree reduction of a warp shuffle;
        `for (j = k >> 1; j > 0; j >>= 1)` inside `for (k = 2; k <= N; k <<= 1)`, a bitonic
        network) against a bound, found by running it (at most _GEOMETRIC_MAX iterations). The
        start and the bound are constants or expressions over the counters of enclosing loops
        with constant trip counts: the trip is run at each of their iterations and given as a
        linear form of them when one fits, else as a table (`_GEOMETRIC_TABLE` entries at most).
        Sets `self._geometric_form` to the variable's closed form at the loop's counter
        (`start << (c k)`, `start >> (c k)`; a multiply or divide by 2^p as a shift by p k) when
        the update is a shift or a power of two. None for any other shape (the induction
        variable stays opaque)."""
        dry = replace(ctx, dry=True)
        inc = cexpr.parse_expression(tokens_of(inc_c), value_names(ctx.env))
        upd = None
        if isinstance(inc, cexpr.Assign) and inc.target == var and inc.op in (">>=", "<<=", "/=", "*="):
            upd, rhs = inc.op[:-1], inc.value
        elif (
            isinstance(inc, cexpr.Assign)
            and inc.target == var
            and inc.op == "="
            and isinstance(inc.value, cexpr.Bin)
            and inc.value.op in (">>", "<<", "/", "*")
            and inc.value.a == var
        ):
            upd, rhs = inc.value.op, inc.value.b
        if upd is None:
            return None
        c = self.w.ev(rhs, dry)
        cond = cexpr.parse_expression(tokens_of(cond_c), value_names(ctx.env))
        if not (isinstance(cond, cexpr.Bin) and cond.a == var and cond.op in ("<", "<=", ">", ">=", "!=")):
            return None
        bound = self.w.ev(cond.b, dry)
        if not (isinstance(c, E.Const) and type(c.value) is int) or not isinstance(bound, E.Expr):
            return None
        if not isinstance(init_v, E.Expr):
            return None
        k = c.value
        if (upd in ("/", "*") and k < 2) or (upd in (">>", "<<") and not 0 < k < 32):
            return None
        # the enclosing loops' counters the start and the bound read, each with a constant trip
        outer: dict[str, int] = {}
        outer_vars: dict[str, E.Var] = {}
        for v in init_v.free_vars() | bound.free_vars():
            t = self._const_trips.get(v.name) if v.kind == E.LOOP else None
            if t is None:
                return None
            outer[v.name], outer_vars[v.name] = t, v
        names = sorted(outer)
        points = list(itertools.product(*(range(outer[n]) for n in names)))
        if len(points) > self._GEOMETRIC_TABLE:
            return None
        tests = {
            "<": lambda v, b: v < b,
            "<=": lambda v, b: v <= b,
            ">": lambda v, b: v > b,
            ">=": lambda v, b: v >= b,
            "!=": lambda v, b: v != b,
        }
        trips: list[int] = []
        for pt in points:
            env = dict(zip(names, pt))
            x, b = init_v.eval(env), bound.eval(env)
            if not (type(x) is int and type(b) is int):
                return None
            n = None
            for i in range(self._GEOMETRIC_MAX + 1):
                if not tests[cond.op](x, b):
                    n = i
                    break
                q = abs(x) // k
                x = {">>": x >> k, "<<": x << k, "/": q if x >= 0 else -q, "*": x * k}[upd]
                if abs(x) >= 1 << 62:
                    return None
            if n is None:
                return None
            trips.append(n)
        trip = _fit_trip([outer_vars[n] for n in names], points, trips)
        # the closed form: shifts compose (`(x >> a) >> b == x >> (a + b)`, arithmetic or not);
        # a multiply / truncating divide by 2^p is a shift by p while no bit is lost (`*`: the
        # values run stay below 2^62, checked above; `/` of a negative value is not a shift)
        p = k.bit_length() - 1 if upd in ("/", "*") and k & (k - 1) == 0 else None
        shift = {"<<": "<<", ">>": ">>", "*": "<<" if p else None, "/": ">>" if p else None}[upd]
        per = k if upd in ("<<", ">>") else p
        nonneg = all(
            type(init_v.eval(dict(zip(names, pt)))) is int and init_v.eval(dict(zip(names, pt))) >= 0 for pt in points
        )
        if shift is not None and (upd != "/" or nonneg):
            self._geometric_form = lambda counter: E.binop(shift, init_v, E.binop("*", E.Const(per), counter))
        return trip

    def _assigned_names(self, body, inc_c, env=None) -> list[str]:
        names = []
        for cur in (body, inc_c):
            if cur is None:
                continue
            toks = expand_fn_macros(tokens_of(cur), getattr(self.w.mb, "fn_macros", {}))
            for i, t in enumerate(toks):
                if (
                    env is not None
                    and t == "."
                    and 0 < i
                    and i + 2 < len(toks)
                    and _is_ident(toks[i - 1])
                    and (i < 2 or toks[i - 2] not in (".", "->"))
                ):
                    rec = env.lookup(toks[i - 1])
                    if isinstance(rec, Rec) and rec.path is not None:
                        if toks[i + 2] == "(":
                            # a member function of an object: it may write any of its scalar fields
                            names.extend(f"{rec.path}.{f}" for f in rec.scalars)
                        elif toks[i + 1] in rec.scalars and (
                            toks[i + 2] in cexpr._ASSIGN
                            or toks[i + 2] in ("++", "--")
                            or (i >= 2 and toks[i - 2] in ("++", "--"))
                        ):
                            names.append(f"{rec.path}.{toks[i + 1]}")
                if (
                    t in cexpr._ASSIGN
                    and i > 0
                    and _is_ident(toks[i - 1])
                    and (i < 2 or toks[i - 2] not in (".", "->", "]"))
                ):
                    names.append(toks[i - 1])
                elif t in ("++", "--"):
                    if i > 0 and _is_ident(toks[i - 1]):
                        names.append(toks[i - 1])
                    elif i + 1 < len(toks) and _is_ident(toks[i + 1]):
                        names.append(toks[i + 1])
                elif t == "update_phasebit" and i + 1 < len(toks):
                    j = toks.index("(", i)
                    if j + 1 < len(toks) and _is_ident(toks[j + 1]):
                        names.append(toks[j + 1])
        out = []
        for n in names:
            if n not in out:
                out.append(n)
        return out

    def _reachable_records(self, env) -> list:
        """Records (struct instances, callback args) reachable from the scope: their scalar
        fields may be carried by a loop (`regs.stage` advanced inside a called function)."""
        out, seen = [], set()

        def add(v):
            if isinstance(v, Rec) and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
                for f in v.fields.values():
                    add(f)

        e = env
        while e is not None:
            for v in e.vars.values():
                add(v)
            if isinstance(e, BranchEnv):
                for v in e.writes.values():
                    add(v)
            e = e.parent
        return out

    def _unknown_pointers(self, pointer_sys, carried, heads, system, loc) -> tuple[dict, tuple[dict, dict] | None]:
        """The pointer variables a loop changes and the walk does not solve, as UnknownPtr
        (loop_pointers): shared pointers (objects) the body assigns, and pointers into global
        memory (scalars here) whose value at the head of an iteration is no global address.
        With them, the rotation (sigma, values before the loop) when the body permutes them in a
        cycle of at most MAX_PERIOD (`_walk_rotated`), else None."""
        where = f"line {loc.row}"
        out = loop_pointers.unknown_heads(pointer_sys, self.w.exprs, where)
        allp = dict(pointer_sys)
        if system is None:
            return out, self._rotation(allp)
        start, ends, v0s = system
        gl = {}
        for slot, v in heads.items():
            v0 = v0s.get(slot)
            if slot.rec is not None or slot.name not in self.w.exprs.pointer_vars or not self.w.exprs.pointer_value(v0):
                continue
            if self.w.exprs._global_pointer(v):
                continue  # solved (`p = p + stride`: the parameter plus k strides)
            e = ends.get(slot)
            # a swap of two global pointers: the end of one is the start of the other
            gl[slot.name] = (v0, next((loop_pointers.PtrStart(o.name) for o in start if start[o] == e), e))
        for n, up in loop_pointers.unknown_heads(gl, self.w.exprs, where).items():
            out.setdefault(n, up)
        allp.update(gl)
        return out, self._rotation(allp)

    def _rotation(self, pointers: dict) -> tuple[dict, dict] | None:
        sigma = loop_pointers.permutation(pointers, self.w.exprs)
        if sigma is None or loop_pointers.period(sigma) > loop_pointers.MAX_PERIOD:
            return None
        return sigma, {n: pointers[n][0] for n in sigma}

    def _carried_variables(self, body, inc_c, ctx: Ctx, exclude: set[str], counter: E.Var | None = None, ivar=None):
        """slot -> function(counter) giving the value at the start of iteration k. Slots are
        the scalar variables the loop body assigns and the scalar fields of records it
        changes (also inside the functions it calls)."""
        self._last_pointers = {}
        # the loop's trip count (set by the caller; read before the dry pass walks inner loops)
        trip, self._carried_trip_of = self._carried_trip_of, None
        out = {}
        names = [n for n in self._assigned_names(body, inc_c, ctx.env) if n not in exclude]
        scalars = {}
        # pointers to shared memory (objects) and pointers already unknown: followed by the dry
        # pass below (loop_pointers); a pointer into global memory is a scalar here
        ptrs = {}
        for n in names:
            v = ctx.env.lookup(n)
            if isinstance(v, Expr) and ctx.env.has(n):
                scalars[_Slot(n)] = v
            elif ctx.env.has(n) and loop_pointers.pointer_space(v, self.w.exprs) is not None:
                ptrs[n] = v
        if body is None:
            return out
        # a local object's scalars live in the scope as `path.field`: an object the body hands
        # to a function (`consumer(G, sem, smem, regs)`, regs by reference) may have any of
        # them changed; the dry pass below tells which
        mentioned = set(tokens_of(body)) | (set(tokens_of(inc_c)) if inc_c is not None else set())
        handed = set()
        for rec in self._reachable_records(ctx.env):
            if rec.path is None or rec.path not in mentioned:
                continue
            for f in rec.scalars:
                n = f"{rec.path}.{f}"
                if n in exclude or _Slot(n) in scalars or not ctx.env.has(n):
                    continue
                v = ctx.env.lookup(n)
                if isinstance(v, Expr):
                    scalars[_Slot(n)] = v
                    handed.add(_Slot(n))
        for n in _token_counters(ctx.env):
            # r12-token: the thread's state-token arrival count of each 64-bit shared scalar
            # (walk_asm._arrival_tokens), changed by the asm of the functions the body calls:
            # carried where the dry pass sees it change, put back otherwise
            v = ctx.env.lookup(n)
            if n not in exclude and _Slot(n) not in scalars and isinstance(v, Expr):
                scalars[_Slot(n)] = v
                handed.add(_Slot(n))
        # record fields: every scalar field of a reachable record gets a symbolic start value;
        # the ones the body changes are carried, the others are put back as they were
        fields = {}
        for rec in self._reachable_records(ctx.env):
            for fname, v in rec.fields.items():
                if isinstance(v, Expr) and not (ivar is not None and ivar.field == fname and ivar.rec is rec):
                    fields[_Slot(fname, rec)] = v
        if not scalars and not fields and not ptrs:
            return out
        # one dry pass with symbolic start values
        self._fresh_slots += 1
        start = {}
        for sl in scalars:
            start[sl] = E.Var(f"{sl.label}@start", E.LOOP)
        for sl in fields:
            start[sl] = E.Var(f"{sl.label}@start#{self._fresh_slots}", E.LOOP)
        denv = ctx.env.child()
        for sl in scalars:
            denv.define(sl.name, start[sl])
        for sl in fields:
            sl.rec.fields[sl.name] = start[sl]
        for n in ptrs:
            denv.define(n, loop_pointers.PtrStart(n))
        dctx = replace(ctx, env=denv, dry=True)
        saved = self._loop_breaks
        self._loop_breaks = []
        saved_at = self._break_at
        self._break_at = []
        self._system_logs.append([])
        try:
            self.walk(body, replace(dctx, env=denv.child()))
            if inc_c is not None:
                self.exec_expr(inc_c, dctx)
        finally:
            self._loop_breaks = saved
            self._break_at = saved_at
            nested = self._system_logs.pop()
            ends = {sl: denv.vars.get(sl.name) for sl in scalars}
            self._last_pointers = {n: (v, denv.vars.get(n)) for n, v in ptrs.items()}
            for sl, v in fields.items():
                ends[sl] = sl.rec.fields.get(sl.name)
                sl.rec.fields[sl.name] = v
        # the symbolic states inner loops left for `ring_walk.outer` (dry_after): unknowns to
        # every other solver
        from . import ring_walk

        if not scalars and not fields:
            return out
        walk_ends, walk_nested = dict(ends), nested
        ends, nested = ring_walk.hide(ends, nested)
        # fields left as they were: their start values stand for their values before the loop
        unchanged = {start[sl].name: v for sl, v in fields.items() if ends[sl] == start[sl]}
        for sl in handed:
            if ends.get(sl) == start[sl]:
                unchanged[start[sl].name] = scalars.pop(sl)  # an object's scalar the body left alone
        slots = dict(scalars)
        for sl, v in fields.items():
            if ends[sl] != start[sl]:
                slots[sl] = v
                ends[sl] = E.substitute(ends[sl], unchanged) if isinstance(ends[sl], Expr) else ends[sl]
        for sl in scalars:
            if isinstance(ends[sl], Expr) and unchanged:
                ends[sl] = E.substitute(ends[sl], unchanged)
        for sl, v0 in slots.items():
            out[sl] = solve_recurrence(start[sl], ends[sl], v0, sl.label, counter)
            if _is_opaque_form(out[sl]):
                # advanced under a condition on the iteration that holds in all but the last
                g = solve_guarded(start[sl], ends[sl], v0, sl.label, counter, trip, solve_recurrence)
                if g is not None:
                    out[sl] = g
        # phases that flip with the ring index (`if (++s == N) { s = 0; phase ^= 1; }`,
        # TK's phase bitfield): solved once the ring index has a closed form
        from ..recurrence import solve_dependent, solve_by_simulation

        solved = {sl: f for sl, f in out.items() if not _is_opaque_form(f)}
        for sl, v0 in slots.items():
            if sl not in solved:
                f = solve_dependent(sl, start[sl], ends[sl], v0, solved, start)
                if f is not None:
                    out[sl] = f
        # the rest (masks, bitmasks, phases of such rings): run the update from constant start
        # values and prove the periodic closed form
        solved = {sl: f for sl, f in out.items() if not _is_opaque_form(f)}
        rest = {sl: (start[sl], ends[sl], v0) for sl, v0 in slots.items() if sl not in solved}
        if rest:
            out.update(solve_by_simulation(rest, solved, start, counter))
        # values carried across an inner loop that advances them (a ring and its phase bits
        # carried across the tasks of a persistent loop): one flat sequence of steps
        self._flat_outer(out, slots, start, ends, nested, counter, unchanged)
        self._flat_inner(out, slots, start, ends, counter)
        # a ring advanced before, inside and after an inner loop of each task: one walk
        self._last_ring_walk = ring_walk.outer(self, out, slots, start, walk_ends, walk_nested, counter)
        ring_walk.inner(self, out, slots, start, ends, counter)
        ring_walk.dry_after(out, slots, counter, trip, ctx.dry)
        self._continue_sequence(out, slots, start, ends)
        self._last_uniform = _uniform_unknowns(out, slots, start, ends, body, inc_c)
        self._last_system = (dict(start), dict(ends), dict(slots))
        return out

    @staticmethod
    def _updates(start, ends, slots) -> dict | None:
        """Each slot's update with the start values named by slot (comparable across loops),
        with the slots it reads; None for an update that is not an expression."""
        ren = {start[sl].name: E.Var(f"@{sl.label}", E.LOOP) for sl in slots}
        out = {}
        for sl in slots:
            e = ends.get(sl)
            if not isinstance(e, Expr):
                return None
            deps = {v.name for v in e.free_vars() if v.kind == E.LOOP}
            out[sl] = (str(E.substitute(e, ren)), deps)
        return out

    def _register_sequence(self, lid, trip, carried, system, after, dry=False):
        """Remember the values this loop leaves in its carried slots (their closed forms after
        `trip` iterations): a later loop that starts from them with the same update goes on
        with the same sequence (a drain loop continuing the main loop's counter, a ring and its
        phase continued by an epilogue loop or a second pass)."""
        from ..recurrence import _is_opaque_form

        start, ends, slots = system
        ups = self._updates(start, ends, [sl for sl in slots if sl in carried])
        if ups is None:
            return
        self._seq_walks += 1
        walk = self._seq_walks  # this walk of the loop (the dry and the real walk differ)
        for sl, closed in carried.items():
            v = after.get(sl)
            if sl not in ups or _is_opaque_form(closed) or not isinstance(v, Expr) or v.is_opaque():
                continue
            # a loop walked dry is not in the model: its id is never a Loop.carried_from
            self._seq_registry[v] = (walk, None if dry else lid, trip, sl, closed, ups[sl])

    def _continue_sequence(self, out, slots, start, ends):
        """Slots that enter this loop with the values a previous loop left (see
        `_register_sequence`) and that this loop updates as that one did (each slot's update
        alike, reading only slots continued with it): at iteration k they hold that loop's
        closed form at trip + k. The loop continued is told to `_walk_loop` (Loop.carried_from)."""
        found = {}
        for sl, v0 in slots.items():
            info = self._seq_registry.get(v0) if isinstance(v0, Expr) else None
            if info is not None and info[3] == sl:
                found[sl] = info
        if not found or len({info[0] for info in found.values()}) != 1:
            return
        ups = self._updates(start, ends, list(slots))
        if ups is None:
            return
        names = {start[sl].name for sl in found}
        for sl, info in found.items():
            text, deps = ups[sl]
            if text != info[5][0] or not deps <= names:
                return
        for sl, (_, _, trip, _, closed, _) in found.items():
            out[sl] = lambda k, closed=closed, trip=trip: closed(E.binop("+", trip, k))
        self._last_continued = next(iter(found.values()))[1]

    def _flat_outer(self, out, slots, start, ends, nested, counter, unchanged=None):
        """Slots of this (outer) loop left unknown that only a directly nested loop of an
        invariant trip count T changes, with an update that depends on nothing but the slots:
        after kO outer iterations they have taken T*kO steps of that update from their
        constant start values. Solved as one sequence over the flat step count F (simulation,
        proved), so this loop's closed form is G(T*kO) and the inner loop's G(T*kO + k)."""
        from ..recurrence import _is_opaque_form, solve_by_simulation

        if counter is None:
            return
        probe = E.Var("k@probe", E.LOOP)
        todo = [sl for sl in slots if _is_opaque_form(out[sl]) or out[sl](probe).is_opaque()]

        def fix(e):
            return E.substitute(e, unchanged) if unchanged and isinstance(e, Expr) else e

        for sysrec in nested:
            sysrec = _System(
                sysrec.lid,
                fix(sysrec.trip),
                sysrec.starts,
                {sl: fix(e) for sl, e in sysrec.ends.items()},
                {sl: fix(e) for sl, e in sysrec.v0s.items()},
                {sl: fix(e) for sl, e in sysrec.after.items()},
            )
            group = [
                sl
                for sl in todo
                if sl in sysrec.ends
                and ends.get(sl) is not None
                and sysrec.after.get(sl) is not None
                and ends[sl] == sysrec.after[sl]
                and sysrec.v0s.get(sl) == start[sl]
            ]
            if not group:
                continue
            T = sysrec.trip
            if T is None or T.depends_on(E.THREAD):
                continue
            # an inner trip count that changes from task to task (`for (k = 0; k < iters(task);
            # ++k)`): the steps taken before an outer iteration are a sum over the earlier
            # tasks, no closed form of kO; they are then one symbol B >= 0 (`flat_base`), and
            # what is proved at G(B + k) holds for every such sum
            varying = T.depends_on(E.LOOP) or T.is_opaque()
            # the closure of the group under the inner update's dependencies
            inner_start_names = {sysrec.starts[sl].name: sl for sl in sysrec.ends}
            system = list(group)
            i = 0
            ok = True
            while i < len(system):
                e = sysrec.ends[system[i]]
                if not isinstance(e, Expr):
                    ok = False
                    break
                for v in e.free_vars():
                    dep = inner_start_names.get(v.name)
                    if dep is None:
                        ok = False
                        break
                    if dep not in system:
                        if (
                            dep not in slots
                            or sysrec.v0s.get(dep) != start.get(dep)
                            or ends.get(dep) != sysrec.after.get(dep)
                        ):
                            ok = False
                            break
                        system.append(dep)
                if not ok:
                    break
                i += 1
            if not ok:
                continue
            F = E.Var(f"f{counter.name[1:]}", E.LOOP)
            unsolved = {sl: (sysrec.starts[sl], sysrec.ends[sl], slots[sl]) for sl in system}
            flat = solve_by_simulation(unsolved, {}, sysrec.starts, F)
            if len(flat) != len(system):
                continue
            signature = _signature(sysrec, system)
            B = flat_base(counter) if varying else None
            for sl in system:
                g = flat[sl]

                # bound now: a later system of this loop rebinds T and signature
                def closed(k, g=g, sl=sl, T=T, signature=signature, B=B):
                    if B is not None and k != counter:
                        # only the current outer iteration's start has a name (B); after the
                        # loop, or at another iteration, the step count is unknown
                        return E.opaque(f"{sl.label}@flat")
                    base = B if B is not None else E.binop("*", T, k)
                    v = g(base)
                    self._flat_registry[v] = (signature, sl, g, base)
                    return v

                out[sl] = closed

    def _flat_inner(self, out, slots, start, ends, counter):
        """An inner loop whose carried values enter as G(base) of a flat sequence (see
        _flat_outer) with the same update: G(base + k) at its iteration k."""
        if counter is None or not self._flat_registry:
            return
        found = {}
        for sl, v0 in slots.items():
            info = self._flat_registry.get(v0) if isinstance(v0, Expr) else None
            if info is not None:
                found[sl] = info
        if not found:
            return
        bases = {str(info[3]) for info in found.values()}
        sigs = {info[0] for info in found.values()}
        if len(bases) != 1 or len(sigs) != 1:
            return
        rec = _System(None, None, start, ends, slots, {})
        if _signature(rec, [info[1] for info in found.values()]) != sigs.pop():
            return
        for sl, (_, _, g, base) in found.items():
            out[sl] = lambda k, g=g, base=base: g(E.binop("+", base, k))

    # -- asm ---------------------------------------------------------------


def _carried_polls(cond: Expr, dry_ends: dict, real_ends: dict | None) -> tuple[tuple[str, str], ...]:
    """`SpinFacts.carried`: the carried slots the condition reads whose end of the body is one
    loaded value, in the dry walk that solved the slots (the name the condition's head form gives
    the previous iteration's value) and in the real walk (the result of the load op the body
    emits): `seen = ld(C)` as the body's last assignment of `seen`."""
    if not real_ends:
        return ()
    names = {v.name for v in cond.free_vars()}
    out = []
    for sl, dry in dry_ends.items():
        real = real_ends.get(sl)
        # a value read anew per iteration of an outer loop (`E.per_iteration`) is named by its unknown
        dry, real = E.per_iteration_var(dry), E.per_iteration_var(real)
        if (
            isinstance(dry, E.Var)
            and isinstance(real, E.Var)
            and dry.kind == E.OPAQUE
            and real.kind == E.OPAQUE
            and dry.name != real.name
            and dry.name in names
        ):
            out.append((dry.name, real.name))
    return tuple(out)


def _simulated(heads: dict, after: dict, v0s: dict, ends: dict) -> tuple:
    """`Loop.simulated`: the carried slots whose value at the start of an iteration has no closed
    form (an unknown, or a form over one unknown), with their value before the loop and their value
    at the end of the body as the (non-dry) walk of the body left it: over the heads of this
    iteration and the unknowns the inner loops' own `simulated` stand for after them."""
    out = []
    for sl, h in heads.items():
        if not isinstance(h, Expr):
            continue
        # the head is the unknown itself, or a form over one unknown (`k == 0 ? v0 : x`)
        xs = [v for v in h.free_vars() if v.kind == E.OPAQUE]
        if len(xs) != 1:
            continue
        v0, end = v0s.get(sl), ends.get(sl)
        if not isinstance(v0, Expr) or not isinstance(end, Expr):
            continue
        a = after.get(sl)
        aname = a.name if isinstance(a, E.Var) and a.kind == E.OPAQUE and a != xs[0] else None
        out.append((xs[0].name, v0, end, aname, h))
    return tuple(out)


def _leaves_loop(then_s, else_s) -> bool:
    """One branch of an `if` is a bare `break` (`if (c) break;`, `if (c) { break; }`)."""

    def bare(st) -> bool:
        if st is None:
            return False
        if st.kind == CK.COMPOUND_STMT:
            kids = list(st.get_children())
            return len(kids) == 1 and kids[0].kind == CK.BREAK_STMT
        return st.kind == CK.BREAK_STMT

    return bare(then_s) or bare(else_s)


def _uniform_exit(loop: ir.Loop, breaks: bool, body) -> bool:
    """A loop of unknown trip count that every thread running it leaves at the same iteration:
    its condition a block-uniform test (`Loop.cond`: no thread index, nothing unmodelled) and
    nothing else that leaves it or skips the rest of an iteration (no `break`, `continue` or
    `goto`; a `return` takes its thread out of the loop and out of what follows it)."""
    if loop.trip is not None or loop.cond is None or breaks or loop.thread_exit or not loop.uniform:
        return False
    toks = set(tokens_of(body)) if body is not None else set()
    return not toks & {"break", "continue", "goto"}


def _uniform_value(v) -> bool:
    """An expression every thread evaluates alike (`E.alike_for_all`)."""
    return isinstance(v, Expr) and E.alike_for_all(v)


def _uniform_unknown(v, uniform: bool):
    """v, or for an unknown value of a carried slot that every thread holds alike
    (`_uniform_unknowns`) a block-uniform unknown of the same name."""
    if uniform and isinstance(v, E.Var) and v.kind == E.OPAQUE and not v.name.startswith(E.UNIFORM_UNKNOWN):
        return E.uniform_unknown(v.name.lstrip("?").split("#")[0])
    return v


def _uniform_unknowns(out: dict, slots: dict, start: dict, ends: dict, body, inc_c) -> set:
    """Carried values no closed form was found for (an unknown per iteration) that every thread
    running the loop holds alike: the value before the loop and the body's update are uniform
    (`_uniform_value`), over the start values of carried values that are uniform too (a
    fixpoint), and nothing makes one thread skip an update another makes (no `break`,
    `continue` or `goto` in the body; a branch on the thread index shows in the update). Each
    iteration's value is then an unknown marked block-uniform (`E.uniform_unknown`), so a test
    of it (`for (; task < n; task += stride)` of a task index carried across groups) is a
    uniform condition (`_walk_loop` names it so; the solvers above keep the plain unknown, so
    no closed form, phase or ring reads it as one value for every iteration). Returns those
    slots."""
    toks = set(tokens_of(body)) if body is not None else set()
    if inc_c is not None:
        toks |= set(tokens_of(inc_c))
    if toks & {"break", "continue", "goto"}:
        return set()
    probe = E.Var("k@probe", E.LOOP)
    todo = {sl for sl in slots if _is_opaque_form(out[sl])}
    if not todo:
        return set()
    start_of = {start[sl].name: sl for sl in slots if sl in start}
    ok = set(todo)
    changed = True
    while changed:
        changed = False
        for sl in list(ok):
            v0, end = slots[sl], ends.get(sl)
            good = _uniform_value(v0) and _uniform_value(end)
            if good:
                for v in end.free_vars():
                    other = start_of.get(v.name)
                    if other is None or other == sl:
                        continue
                    if other in todo:
                        good = other in ok
                    else:
                        good = _uniform_value(out[other](probe))
                    if not good:
                        break
            if not good:
                ok.discard(sl)
                changed = True
    return ok


def _declared_induction(init_s, cond_c, inc_c) -> cexpr.Name | None:
    """The induction variable of `for (int a = x, b = 0, i = 0; i < n; i++)`: of the variables
    the header declares, the one the increment names (of several, the one the condition names
    too; the first declared one when that is not one variable). Taking the first would make `a` the
    counter, and the condition `i < n`, read at `i`'s start value, a constant: an infinite loop."""
    if inc_c is None:
        return None
    names = [d.spelling for d in init_s.get_children() if d.kind == CK.VAR_DECL and d.spelling]
    if len(names) < 2:
        return None
    inc_toks = set(tokens_of(inc_c))
    named = [n for n in names if n in inc_toks]
    if len(named) > 1 and cond_c is not None:
        cond_toks = set(tokens_of(cond_c))
        named = [n for n in named if n in cond_toks]
    if len(named) != 1 or named[0] == names[0]:
        return None
    return cexpr.Name.simple(named[0])


def _counter_label(var, init_v, step, loc) -> str:
    """How a loop's iteration counter reads in the user's terms."""
    if (
        var
        and isinstance(init_v, E.Const)
        and isinstance(step, E.Const)
        and isinstance(init_v.value, int)
        and isinstance(step.value, int)
        and step.value != 0
    ):
        base = (
            var
            if init_v.value == 0
            else f"({var} - {init_v.value})"
            if init_v.value > 0
            else f"({var} + {-init_v.value})"
        )
        return base if step.value == 1 else f"({base} / {step.value})"
    if var:
        return f"iteration of the '{var}' loop"
    return f"iteration of the loop at line {loc.row}" if loc is not None else "iteration"


def _top_level_comma(toks) -> bool:
    """A comma outside brackets: `T a, b` declares b with a's type; the comma of
    `st_bf<64, ktile::rows> b` is the template's own."""
    depth = 0
    for t in toks:
        if t in ("<", "(", "["):
            depth += 1
        elif t in (">", ")", "]"):
            depth -= 1
        elif t == ">>":
            depth -= 2
        elif t == "," and depth <= 0:
            return True
    return False


def _fall_through_guard(at: ir.Guard, falls: list[ir.Guard]) -> ir.Guard:
    """The guard after an `if` entered under `at` whose branches fall through under `falls` (each
    `at` narrowed by the branch's condition and by exits nested in it): `at` with the disjunction
    of what each branch added -- in the thread predicate (a uniform condition where it names no
    thread) when every branch stays exact, else as
    one opaque condition (exactly the guard, so a data test stays a data test); blind when a
    branch's guard is no narrowing of `at` that these fields can say (an unmodelled exit)."""
    parts = []
    opaque = False
    nu, no = len(at.uniform), len(at.opaque)
    for g in falls:
        if g.blind or g.uniform[:nu] != at.uniform or g.opaque[:no] != at.opaque:
            return at.inexact()
        opaque = opaque or len(g.opaque) > no
        parts.append(E.conj(g.thread, *g.uniform[nu:], *g.opaque[no:]))
    either = E.disj(*parts)
    if opaque:
        return at.inexact(either)
    if not either.depends_on(E.THREAD):
        # block-uniform as a whole (`if (mode) { if (past_end) return; }`): a uniform condition
        return replace(at, uniform=at.uniform + (either,))
    return replace(at, thread=either)


def _refine_after_exit(env, goes_on: Expr) -> None:
    """After `if (c) break;` (or return / continue) the code that follows runs only where `goes_on`
    holds: a variable holding `p ? a : b` that `goes_on` names, and whose arm b (a) would make
    `goes_on` false outright, holds a (b) there (`num_iters = task == 0 ? n : -1` past
    `if (num_iters < 0) break;` is n)."""
    seen: set[str] = set()
    e = env
    while e is not None:
        for name, v in list(e.vars.items()):
            if name in seen:
                continue
            seen.add(name)
            if not isinstance(v, E.Ite) or not any(x == v for x in E.subexprs(goes_on)):
                continue
            for keep, drop in ((v.t, v.e), (v.e, v.t)):
                if E.replace_sub(goes_on, v, drop) == E.FALSE:
                    env.assign(name, keep)
                    break
        if isinstance(e, (BranchEnv, ThisEnv)):
            break
        e = e.parent


def _cond_and_body(c, kids) -> tuple[Any, Any] | None:
    """(condition, body) of a `while` or `do ... while` statement, None for any other loop."""
    if c.kind == CK.WHILE_STMT and len(kids) == 2:
        return kids[0], kids[1]
    if c.kind == CK.DO_STMT and len(kids) == 2:
        return kids[1], kids[0]
    return None


def _volatile_type(t) -> bool:
    """A libclang type declared volatile: the type itself, or the element type of an array of it
    (`__shared__ volatile int flags[4]`)."""
    try:
        while t.get_array_element_type().spelling:
            t = t.get_array_element_type()
        return bool(t.is_volatile_qualified())
    except Exception:  # a type libclang cannot describe: not known to be volatile
        return False


def _empty_body(body) -> bool:
    """A loop body with no statement: `{ }` or `;`."""
    if body is None:
        return False
    if body.kind == CK.NULL_STMT:
        return True
    return body.kind == CK.COMPOUND_STMT and next(iter(body.get_children()), None) is None


def _runs_once(c) -> bool:
    """A `do { asm ...; } while (0)` (or `while (false)`), a statement macro's wrapper around
    inline PTX: one pass of its body, no loop. The condition's value is clang's (a macro's
    `while (0)` has the macro's invocation as its extent, so its tokens are not the condition's).
    Only bodies of asm statements: a body that assigns (`ADVANCE(s, ph)`) stays a loop of one
    trip, as the carried-value pass that reads the enclosing loop's tokens expects."""
    kids = list(c.get_children())
    if len(kids) != 2 or _constant_int(kids[1]) != 0:
        return False
    body = kids[0]
    stmts = list(body.get_children()) if body.kind == CK.COMPOUND_STMT else [body]
    return bool(stmts) and all(x.kind in (CK.ASM_STMT, CK.MS_ASM_STMT, CK.NULL_STMT) for x in stmts)


def _constant_int(c) -> int | None:
    """clang's value of an integer constant expression at cursor `c` (libclang's
    clang_Cursor_Evaluate), None when it is not one."""
    import ctypes

    import clang.cindex as ci

    lib = ci.conf.lib
    if lib.clang_Cursor_Evaluate.restype is not ctypes.c_void_p:
        lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
        lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
        lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getKind.restype = ctypes.c_int
        lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
        lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]
    r = lib.clang_Cursor_Evaluate(c)
    if not r:
        return None
    try:
        return int(lib.clang_EvalResult_getAsLongLong(r)) if lib.clang_EvalResult_getKind(r) == 1 else None
    finally:
        lib.clang_EvalResult_dispose(r)


def _fit_trip(names: list[E.Var], points: list[tuple[int, ...]], trips: list[int]) -> E.Expr:
    """The trip counts `trips` of a loop at the iterations `points` of the enclosing loops'
    counters `names`: a constant, a linear form `a * k + b` of one counter that gives every one,
    or a table (nested `?:` over the points)."""
    if len(set(trips)) == 1:
        return E.Const(trips[0])
    if len(names) == 1 and len(points) >= 2:
        (x0,), (x1,) = points[0], points[1]
        a, b = trips[1] - trips[0], trips[0]
        if x1 - x0 == 1 and x0 == 0 and all(t == a * x + b for (x,), t in zip(points, trips)):
            return E.binop("+", E.binop("*", E.Const(a), names[0]), E.Const(b))
    out: E.Expr = E.Const(trips[-1])
    for pt, t in reversed(list(zip(points[:-1], trips[:-1]))):
        at = E.conj(*(E.binop("==", n, E.Const(v)) for n, v in zip(names, pt)))
        out = E.ite(at, E.Const(t), out)
    return out


def _gl_element(v) -> bool:
    """An element of a TK global layout (`g[{b, d, r, c}]`, walk_exprs `Obj.at` of a `gl`)."""
    return isinstance(v, Obj) and v.kind == "gl" and bool(v.ref.index)


def _counters(loops: tuple[int, ...]) -> tuple[E.Expr, ...]:
    """The counters of the loops `loops` (their ids, outermost first), as the walk names them."""
    return tuple(E.Var(f"k{lid}", E.LOOP) for lid in loops)


def _barriers_in(vals, depth: int = 0) -> list:
    """The mbarriers a call's argument values refer to: a barrier object (an element of an array
    of them: its whole array), and those a libcu++ `cuda::barrier` / `cuda::pipeline` /
    `pipeline_shared_state` record holds (walk_libcu: the record's `@bar`, its state's
    `produced` / `consumed` arrays), found through the record's fields."""
    out: list = []
    for v in vals:
        if isinstance(v, _ArrVal):
            v = v.obj
        if isinstance(v, Obj) and v.kind == "barrier":
            out.append(v)
        elif isinstance(v, Rec) and depth < 3:
            out.extend(_barriers_in(list(v.fields.values()), depth + 1))
    return out
