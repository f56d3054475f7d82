"""Calls: the knowledge table's TK ops become model Ops; methods; register-tile accesses."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from clang.cindex import TypeKind

from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr, walk_libcu, walk_ptxns
from .value_types import Allocator, CgGroup, DsmemPtr, Func, GroupScope, Lambda, NamedBar, Obj, Rec, StructType
from .walk_env import CK, Ctx, Env, loc_of, tokens_of, _THREAD_FUNCS_GROUP
from .walk_arith import _ArrVal, _TMEM_ACCESS_NAMES, convert_int
from .walker_core import CallWalker

Targs = tuple[cexpr.Node, ...] | None  # a name's template arguments, as the parser gives them

# TK's parameter types (include/ops/thread/util/{sync,tma}.cuh): init_semaphore(semaphore&, int
# thread_count, int transaction_count), arrive(semaphore&, uint32_t count), expect_bytes(semaphore&,
# uint32_t bytes), wait(semaphore&, int kPhaseBit)
_ROLE_TYPES = {
    (ir.MBAR_INIT, "count"): "int",
    (ir.MBAR_INIT, "tx"): "int",
    (ir.MBAR_ARRIVE, "count"): "uint32_t",
    (ir.MBAR_EXPECT, "bytes"): "uint32_t",
    (ir.MBAR_WAIT, "parity"): "int",
    (ir.MBAR_ARRIVE, "parity"): "int",
}


class CallLowering:
    """The walker's part for calls: the knowledge table's TK ops become model Ops; methods; the MK
    interpreter's op dispatch; register-tile accesses; the user's functions, through inlining."""

    def __init__(self, walker: CallWalker):
        self.w = walker
        self._opcode_dispatchers: dict[str, bool] = {}  # class template name -> is one (Megakernels')

    def ev_call(self, node: cexpr.Call, ctx: Ctx, cursor: Any) -> Any:
        """The value of a call expression, emitting the ops it performs."""
        callee = node.callee
        args = node.args
        if isinstance(callee, cexpr.Member):
            return self._ev_method(callee, args, ctx, cursor)
        if not isinstance(callee, cexpr.Name):
            f = self.w.ev(callee, ctx, cursor)
            if isinstance(f, Lambda):  # `[&] { ... }()`
                return self.w.inline.expand_lambda(f, args, ctx, cursor)
            fo = self.w.inline.call_operator(f)
            if fo is not None:  # `F{}(bar)`
                return self.w.inline.expand(fo, args, ctx, cursor, None)
            return E.opaque("call")
        segs = list(callee.segments)
        full_segs = [sg for sg in segs if sg.name != "kittens"]
        while len(segs) > 1 and segs[0].name in self.w.ns_names:
            segs = segs[1:]
        base, btargs = segs[-1]
        quals = segs[:-1]
        # libcu++'s `cuda::ptx::` wrappers: each the one PTX instruction it writes (walk_ptxns)
        if walk_ptxns.is_cuda_ptx_call(cursor, base, [sg.name for sg in full_segs[:-1]]):
            r = self.w.ptxns.call(base, args, ctx, cursor)
            if r is not NotImplemented:
                return r
        # constructor-style declarations parsed as calls: `__ctor{...}`
        if base == "__ctor":
            fields = tuple(self.w.ev(a, ctx, cursor) for a in args)
            return fields[0] if len(fields) == 1 else fields
        if base == "barrier" and btargs and len(args) == 1:
            # `barrier<8>(id)`: a temporary of TK's named-barrier object
            nb = self.w.exprs.named_bar(full_segs, self.w.ev(args[0], ctx, cursor), ctx)
            if nb is not None:
                return nb
        # -- cooperative groups: the group factories, `cg::sync(g)` ---------------
        if base in K.CG_FACTORIES:
            g = _cg_group_of(_call_type(cursor, base))
            if g is not None:
                for arg in args:
                    self.w.ev(arg, replace(ctx, dry=True), cursor)
                return g
        if base == "sync" and len(args) == 1 and quals:
            g0 = self.w.ev(args[0], replace(ctx, dry=True), cursor)
            if isinstance(g0, CgGroup):
                return self._cg_method(g0, "sync", (), ctx, cursor, "cg::sync")
        if base == "invoke_one" and len(args) >= 2 and quals and base not in self.w.mb.functions:
            r = self._cg_invoke_one(args, ctx, cursor)
            if r is not NotImplemented:
                return r
        if base in K.CG_ASYNC_OPS and (len(args) >= 4 if base == "memcpy_async" else len(args) in (1, 2)):
            # `cg::memcpy_async(g, ...)`, `cg::wait_prior<N>(g)`, `cg::wait(g)`: a group's
            # collective copies and their waits (not the user's own function of that name)
            g0 = self.w.ev(args[0], replace(ctx, dry=True), cursor)
            if isinstance(g0, CgGroup) and not (
                base in self.w.mb.functions and _calls_user_function(cursor, base, self.w.mb)
            ):
                r = self._cg_async(g0, base, btargs, args, ctx, cursor)
                if r is not NotImplemented:
                    return r
        # scope qualifier: '', 'tma', 'warp', 'warpgroup', 'group<N>', 'everyone', user alias
        scope_warps, qual = self._qualifier(quals, ctx)
        # -- thread identity -------------------------------------------------
        if base == "warpgroupid" and not args and qual in ("", "kittens"):
            # TK's `kittens::warpgroupid()`: `threadIdx.x >> 7` (the user's own function of that
            # name is walked as written)
            if not (base in self.w.mb.functions and _calls_user_function(cursor, base, self.w.mb)):
                return E.binop("/", E.TID, E.Const(128))
        if base in _THREAD_FUNCS_GROUP and not args:
            if qual == "" or qual == "kittens":
                return (
                    E.binop("/", E.TID, E.Const(32))
                    if base == "warpid"
                    else (E.binop("%", E.TID, E.Const(32)) if base == "laneid" else E.opaque(base))
                )
            if scope_warps is not None and scope_warps <= 0:
                return E.opaque(f"{qual}::{base}")  # a group of a size tkcheck could not evaluate
            if scope_warps is not None:
                n = 32 * scope_warps
                if base == "laneid":
                    return E.binop("%", E.TID, E.Const(n))
                if base == "warpid":
                    return E.binop("/", E.binop("%", E.TID, E.Const(n)), E.Const(32))
                return E.binop("/", E.TID, E.Const(n))
        if (
            base in ("elect_one_sync", "elect_one", "elect_leader", "elect_leader_from_active")
            and not args
            and (not quals or scope_warps is not None)
            # r16-expecttx: the user's own helper of that name is walked as written (its asm's
            # `elect.sync` is the collective of its own mask, its output the election: walk_asm)
            and not (self.w.mb.functions.get(base) if not quals else None)
        ):
            # elect.sync over the full warp: one lane, the lowest (lane 0 when the warp is whole);
            # a group's elect_leader is that lane of the group's first warp
            n = 32 * (scope_warps or 1)
            if (scope_warps or 1) == 1:
                # the election is a warp collective of the full mask (of the lanes active at the
                # call, for `elect_leader_from_active`: a mask the model does not know)
                mask = None if base == "elect_leader_from_active" else E.Const(0xFFFFFFFF)
                loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
                api = f"{qual}::{base}" if qual else base
                self.w.emit(
                    ir.Op(ir.WARP_COLL, api, loc, ctx.guard, ctx.loops, warp_coll=ir.WarpCollFacts("elect.sync", mask)),
                    ctx,
                )
            return E.binop("==", E.binop("%", E.TID, E.Const(n)), E.Const(0))
        if base in ("cluster_ctarank", "block_rank_in_cluster"):
            return E.Var("cta_rank", E.PARAM)
        if base in ("clusterIdx", "clusterid", "nclusterid") and not args:
            # TK's %clusterid / %nclusterid readers (common/util.cuh): the same for every thread of
            # the block, like blockIdx
            name = "clusterIdx" if base != "nclusterid" else "nclusterid"
            return Rec({f: E.Var(f"{name}.{f}", E.PARAM) for f in "xyz"}, "int3")
        if base == "cluster_nctarank" and not args:
            return E.Var("cluster_nctarank", E.PARAM)
        if base in ("min", "max") and len(args) == 2 and not quals:
            a, b = self.w.ev(args[0], ctx, cursor), self.w.ev(args[1], ctx, cursor)
            if isinstance(a, Expr) and isinstance(b, Expr):
                return E.ite(E.binop("<" if base == "min" else ">", a, b), a, b)
            return E.opaque(base)
        if base == "get_phasebit" and len(args) == 2:
            n = self.w.targ_int(btargs, ctx, 0)
            bf, ring = self.w.ev(args[0], ctx, cursor), self.w.ev(args[1], ctx, cursor)
            if isinstance(bf, Expr) and isinstance(ring, Expr) and n is not None:
                from ..recurrence import phase_bit

                bit = phase_bit(bf, E.binop("+", ring, E.Const(16 * n)))
                if bit is not None:
                    return bit
                out = E.binop("&", E.binop(">>", bf, E.binop("+", ring, E.Const(16 * n))), E.Const(1))
                bname = self.w.exprs.bitfield_name(args[0], ctx, cursor)
                if bname is not None:
                    # which bitfield / bit a wait's parity reads (phase reasoning across nested loops)
                    self.w.phasebit_reads[out] = ir.PhasebitFacts(bname, pos=E.binop("+", ring, E.Const(16 * n)))
                return out
            return E.opaque("phasebit")
        if base == "update_phasebit" and len(args) == 2:
            n = self.w.targ_int(btargs, ctx, 0)
            ring = self.w.ev(args[1], ctx, cursor)
            if n is not None and isinstance(ring, Expr):
                flip = cexpr.Value(E.binop("<<", E.Const(1), E.binop("+", ring, E.Const(16 * n))))
                bname = self.w.exprs.bitfield_name(args[0], ctx, cursor)
                self.w.exprs.assign(cexpr.Assign("^=", args[0], flip), ctx, cursor)
                if bname is not None and cursor is not None:
                    self.w.emit(
                        ir.Op(
                            ir.PHASEBIT_FLIP,
                            "update_phasebit",
                            loc_of(cursor, self.w.filename),
                            ctx.guard,
                            ctx.loops,
                            phasebit=ir.PhasebitFacts(bname, pos=E.binop("+", ring, E.Const(16 * n))),
                        ),
                        ctx,
                    )
            return None
        if base in ("ring_advance", "ring_retreat") and args:
            s = self.w.targ_int(btargs, ctx, 0)
            r = self.w.ev(args[0], ctx, cursor)
            d = self.w.ev(args[1], ctx, cursor) if len(args) > 1 else E.Const(1)
            if s and isinstance(r, Expr) and isinstance(d, Expr):
                if base == "ring_advance":
                    return E.binop("%", E.binop("+", r, d), E.Const(s))
                return E.binop("%", E.binop("+", E.binop("-", r, d), E.Const(s)), E.Const(s))
            return E.opaque(base)
        if (
            base in K.CUDA_LOAD_HINTS
            and len(args) == 1
            and not quals
            and not (base in self.w.mb.functions and _calls_user_function(cursor, base, self.w.mb))
        ):
            # `__ldcg(&p[i])`: the weak load `p[i]` (a cache operator is no memory order); `__ldg(q)`
            # of a pointer: `*q`
            a0 = args[0]
            return self.w.ev(a0.a if isinstance(a0, cexpr.Un) and a0.op == "&" else cexpr.Un("*", a0), ctx, cursor)
        bare = (
            base in K.CUDA_ATOMICS
            and args
            and not quals
            and not self.w.exprs.global_target(args[0], ctx, cursor)
            and self.w.exprs.global_target(args[0], ctx, cursor, bare_param=True)
        )
        if base in K.CUDA_ATOMICS and args and not quals and (bare or self.w.exprs.global_target(args[0], ctx, cursor)):
            # CUDA's atomicAdd & co on global memory: relaxed read-modify-writes at gpu scope.
            # On a bare kernel pointer (`atomicAdd(count, 1)`, round 9) the event is the same; its
            # old value stays the block-uniform unknown it was before (a scheduler's ticket, data
            # the progress engine unrolls), so that only the memory event is new
            vals = [self.w.ev(a, ctx, cursor) for a in args[1:]]
            loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
            old = self._bare_atomic_value(node, vals, ctx, cursor) if bare else E.opaque(base)
            operand = vals[0] if vals and isinstance(vals[0], Expr) and base != "atomicCAS" else None
            self.w.emit(
                ir.Op(
                    ir.GLOBAL_SIGNAL,
                    base,
                    loc,
                    ctx.guard,
                    ctx.loops,
                    global_access=ir.GlobalAccessFacts(
                        "relaxed",
                        cexpr.render(node)[:80],
                        atomic=K.CUDA_ATOMICS_OP.get(base),
                        dtype=_call_type(cursor, base),
                        result=old.name if isinstance(old, E.Var) else None,
                        form="atomic",
                        base=self.w.exprs.address_base(args[0], ctx, cursor),
                        scope=K.CUDA_ATOMICS_SCOPE.get(base.rsplit("_", 1)[-1]),
                        operand=operand,
                        where=self.w.exprs.word_of(args[0], ctx, cursor),
                        operands=tuple(v if isinstance(v, Expr) else None for v in vals),
                        atomic_index=self.w.exprs.atomic_element(args[0], ctx, cursor),
                    ),
                ),
                ctx,
            )
            return old
        if base in K.CUDA_ATOMICS and args and not quals:
            # an atomic on a `__shared__` scalar (or an element of a shared array of scalars)
            tgt = args[0].a if isinstance(args[0], cexpr.Un) and args[0].op == "&" else args[0]
            self.w.exprs._no_elem_access += 1
            try:
                v = self.w.ev(tgt, replace(ctx, dry=True), cursor)
            finally:
                self.w.exprs._no_elem_access -= 1
            if isinstance(v, Obj) and v.kind == "shared" and v.type is not None and v.type.kind == "scalar":
                vals = [self.w.ev(a, ctx, cursor) for a in args[1:]]
                # the old value is a Var of its own (a ticket a branch may test, checks/tickets.py)
                old = E.opaque(base)
                self.w.exprs.scalar_access(
                    v,
                    "write",
                    ctx,
                    cursor,
                    atomic=K.CUDA_ATOMICS_OP.get(base, base),
                    old=old.name if isinstance(old, E.Var) else None,
                    operand=vals[0] if vals and isinstance(vals[0], Expr) and base != "atomicCAS" else None,
                )
                return old
        if (
            base in K.MULTI_GPU_OPS
            and args
            and self._on_global_layout(args[0], ctx, cursor, len(args), K.MULTI_GPU_ARITY[base])
        ):
            # TK's multi-GPU signal / wait / barrier_all on a barrier_t: counters in global
            # memory, never an mbarrier (knowledge/ops.py)
            loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
            for kind, sem in K.MULTI_GPU_OPS[base]:
                self.w.emit(
                    ir.Op(
                        kind,
                        base,
                        loc,
                        ctx.guard,
                        ctx.loops,
                        global_access=ir.GlobalAccessFacts(sem, cexpr.render(node)[:80]),
                    ),
                    ctx,
                )
            return None
        if base == "tkcheck_dispatch":
            return self._mk_dispatch_role(args[1:], ctx, cursor)
        if len(segs) >= 2 and segs[-2].name in self.w.mb.partial_specs and self._is_opcode_dispatcher(segs[-2].name):
            return self._mk_dispatch_template(segs[-2].targs or (), args, ctx, cursor, segs[-2].name)
        if base == "tkcheck_block_threads" and args:
            v = self.w.ev(args[0], ctx)
            if isinstance(v, Expr) and self.w.model is not None and not ctx.dry:
                self.w.model.block_threads = v
                self.w.model.block_threads_source = "template flags"
            return None
        if base == "tkcheck_sequential_duties":
            # a template protocol that polls two producer duties, modelled as two loops in sequence
            if self.w.model is not None and not ctx.dry:
                self.w.model.progress_approx = (
                    "the template polls its producer duties (loads and stores) in one loop; "
                    "tkcheck's model of it runs them one after the other"
                )
            return None
        if base == "tkcheck_group_sync" and len(args) == 2:
            # group<N>::sync(id) of a template protocol whose N is one of its flags
            n = self.w.ev(args[0], replace(ctx, dry=True))
            call = cexpr.Call(
                cexpr.Name((cexpr.Segment("group", (cexpr.Value(n),)), cexpr.Segment("sync", None))), (args[1],)
            )
            return self.ev_call(call, ctx, cursor) if isinstance(n, Expr) else E.opaque("group sync")
        if base == "tkcheck_uniform":
            return E.Var(cexpr.render(args[0]) if args else "uniform", E.PARAM)
        if base == "tkcheck_flag" and len(args) == 3:
            return self.w.inline.protocol_flag(args, ctx)
        if base == "tkcheck_callback":
            return self.w.inline.protocol_callback(args, ctx, cursor)
        if base == "__cvta_generic_to_shared" and len(args) == 1:
            a = self.w.asm.smem_address(args[0], ctx, cursor)
            if a is not None:
                return a
        # -- TMEM (Blackwell): tcgen05.ld/st of a tt, thread-scope tcgen05 MMAs --
        if base in _TMEM_ACCESS_NAMES and len(args) == 2 and "tma" not in qual.split("::"):
            probe = [self.w.ev(a, replace(ctx, dry=True), cursor) for a in args]
            if any(isinstance(v, Obj) and v.kind == "tmem" for v in probe):
                return self.w.tmem.access(base, qual, scope_warps, args, ctx, cursor)
        if (
            K.tcgen05_mma_name(base)
            and (scope_warps is None and qual in ("", "kittens") or scope_warps is not None and scope_warps > 0)
            and len(args) >= 3
        ):
            # a group's spelling (`warp::mm_ABt(d, a, b, sem)` of TK's 2025 headers): lane 0 of the
            # group issues the thread-scope MMA and its commit
            probe0 = self.w.ev(args[0], replace(ctx, dry=True), cursor)
            if isinstance(probe0, Obj) and probe0.kind == "tmem":
                return self.w.tmem.tcgen05_mma(base, qual, btargs, args, ctx, cursor, group_warps=scope_warps)
        if base in ("allocate_tmem", "allocate_tensor_memory") and not args and qual in ("", "kittens"):
            return self.w.tmem.early_allocation(base, btargs, ctx, cursor)
        # -- tcgen05 commits, cluster launch control, PDL -----------------------
        qparts = [p for p in qual.split("::") if p not in ("kittens",)] if qual else []
        if base == "commit" and qparts[-1:] == ["tcgen05"] and args:
            return self._emit_tcgen05_commit(btargs, args, ctx, cursor, f"{qual}::{base}")
        if base == "tensor_commit" and not [p for p in qparts if p not in ("warp", "warpgroup")] and args:
            return self._emit_tcgen05_commit(btargs, args, ctx, cursor, f"{qual}::{base}" if qual else base)
        if (
            base in ("load_mxnv_scale_async", "load_mxnv_scale_async2")
            and len(args) in (2, 3)
            and not [p for p in qparts if p not in ("warp",)]
        ):
            return self._emit_scale_copy(base, btargs, args, ctx, cursor, f"{qual}::{base}" if qual else base)
        if qparts[-1:] == ["clc"] and base in ("schedule", "query"):
            return self._emit_clc(base, args, ctx, cursor, f"{qual}::{base}")
        if qparts[-1:] == ["pdl"] and base in K.PDL_OPS and not args:
            loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
            op = ir.Op(ir.PDL, f"{qual}::{base}", loc, ctx.guard, ctx.loops, pdl=K.PDL_OPS[base])
            if scope_warps is not None and scope_warps > 0:
                op.scope = (
                    "warp" if scope_warps == 1 else ("warpgroup" if scope_warps == 4 else f"group<{scope_warps}>")
                )
                op.group_warps, op.issuers_per_group = scope_warps, 0
            self.w.emit(op, ctx)
            return None
        # -- TK / CUDA operations --------------------------------------------
        if base in ("mm", "mma") and btargs and len(btargs) == 2 and scope_warps is not None:
            # warpgroup::mm<transpose::N, transpose::T>(d, a, b): TK dispatches to mm_ABt
            ts = [self._transpose_value(t, ctx) for t in btargs]
            if ts[0] is not None and ts[1] is not None:
                base = K.transposed_mma_name(base, ts[0], ts[1])
        if (
            not quals
            and (base in K.THREAD_OPS or base in K.LIBCU_FUNCTIONS or base in K.REGISTER_OPS)
            and _calls_user_function(cursor, base, self.w.mb)
        ):
            # the user's own `arrive` / `wait` / `init` (PTX helpers named as TK's calls are, free
            # functions or members of the user's class: a pipeline class's private static `wait`):
            # the compiler calls the user's definition, so its body is walked, never TK's op
            own = self.w.inline.resolve_callable(segs, ctx)
            if isinstance(own, Func):
                return self.w.inline.expand(own, args, ctx, cursor, btargs, this=_same_object(own, segs, ctx))
        if base in ("atomic_thread_fence", "atomic_signal_fence") and base not in self.w.mb.functions:
            r = self.w.atomics.fence(base, args, ctx, cursor)
            if r is not NotImplemented:
                return r
        if base in K.LIBCU_FUNCTIONS:
            # libcu++'s pipeline / barrier / memcpy_async (walk_libcu: it takes the call when its
            # arguments are libcu++'s objects)
            r = self.w.libcu.call(base, qual, btargs, args, ctx, cursor)
            if r is not NotImplemented:
                return r
        if not quals and base in K.WARP_COLLECTIVE_CALLS and base not in self.w.mb.functions:
            # `__shfl_down_sync(mask, v, d)`, `__ballot_sync(mask, p)`, ...: a warp collective
            # with its member mask (argument 0); the value it returns stays unknown
            vals = [self.w.ev(a, ctx, cursor) for a in args]
            mask = convert_int(vals[0], "unsigned int") if vals and isinstance(vals[0], Expr) else None
            instr = K.WARP_COLLECTIVE_CALLS[base]
            loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
            value = self.w.exprs.opaque_from(node, vals)
            facts = ir.WarpCollFacts(
                instr,
                mask,
                result=value.name if isinstance(value, E.Var) else None,
                operands=tuple(v for v in vals[1:] if isinstance(v, Expr)),
            )
            self.w.emit(ir.Op(ir.WARP_COLL, base, loc, ctx.guard, ctx.loops, warp_coll=facts), ctx)
            self.w.stmts.unmodelled_use(vals, ctx, cursor, cexpr.render(callee))
            return value
        if not quals and base == "__ffs" and len(args) == 1 and base not in self.w.mb.functions:
            # `__ffs(m)`: one plus the lowest set bit of m; of a member mask computed at run time,
            # the lowest lane it names (the model keeps which mask: a group's leader)
            arg = self.w.ev(args[0], ctx, cursor)
            value = E.opaque(cexpr.render(node))
            if isinstance(arg, E.Var) and arg.is_opaque():
                self.w.model.lowest_lane_of[value.name] = arg.name
            return value
        if not quals and base == "__activemask" and not args and base not in self.w.mb.functions:
            # `__activemask()`: the lanes of the warp executing it now (no collective: it waits for
            # none). An event whose value names them (checks/warp_collectives.py `MaskValue`)
            loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
            value = E.opaque(cexpr.render(node))
            facts = ir.WarpCollFacts(K.ACTIVEMASK, None, result=value.name)
            self.w.emit(ir.Op(ir.WARP_COLL, base, loc, ctx.guard, ctx.loops, warp_coll=facts), ctx)
            return value
        spec, scope, gwarps = self._lookup_op(qual, base, scope_warps, len(args))
        if (
            spec is None
            and scope == "group"
            and base == "arrive_and_wait"
            and len(args) == 1
            and isinstance(self.w.ev(args[0], replace(ctx, dry=True), cursor), NamedBar)
        ):
            spec = K.TK_BARRIER_SYNC  # group<N>::arrive_and_wait(barrier<N>): bar.sync id, 32*N
        if spec is not None:
            return self._emit_op(spec, scope, gwarps, qual, base, btargs, args, ctx, cursor, node)
        # register-tile operations (accumulator accesses)
        if base in K.REGISTER_OPS:
            vals = [self.w.ev(a, ctx, cursor) for a in args]
            if base == "store" and vals and isinstance(vals[0], Obj) and vals[0].kind == "gl" and not ctx.dry:
                # `warpgroup::store(gl, tile, coord)`: plain stores of every thread of the group to global memory
                gop = ir.Op(
                    ir.GLOBAL_STORE,
                    f"{qual}::{base}" if qual else base,
                    loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location,
                    ctx.guard,
                    ctx.loops,
                    global_access=ir.GlobalAccessFacts("weak", cexpr.render(node)[:80], form="tk"),
                )
                if qual:
                    gop.scope = qual.split("::")[-1]
                self.w.emit(gop, ctx)
            if any(isinstance(v, Obj) and v.kind == "regtile" for v in vals):
                self._emit_reg_access(base, qual, vals, ctx, cursor)
                return None
            if base in ("store", "load") and any(isinstance(v, Obj) and v.kind == "buffer" for v in vals):
                self._emit_reg_access(base, qual, vals, ctx, cursor)
                return None
        # -- the user's own functions: inline ---------------------------------
        target: Func | Lambda | None = None
        if len(full_segs) > 1 and full_segs[0].name in self.w.mb.user_namespaces:
            key = "::".join(sg.name for sg in full_segs)
            if key in self.w.mb.functions:
                target = Func(base, self.w.mb.functions[key])
        if target is None:
            target = self.w.inline.resolve_callable(segs, ctx)
        if isinstance(target, Func):
            return self.w.inline.expand(target, args, ctx, cursor, btargs, this=_same_object(target, segs, ctx))
        if isinstance(target, Lambda):
            return self.w.inline.expand_lambda(target, args, ctx, cursor)
        # unknown call: evaluate args (for side effects), result opaque
        vals = [self.w.ev(a, ctx, cursor) for a in args]
        self.w.stmts.unmodelled_use(vals, ctx, cursor, cexpr.render(callee))
        if not args:
            # a function of nothing may read who calls it (an election, a lane id): not uniform
            return E.opaque(cexpr.render(node))
        return self.w.exprs.opaque_from(node, vals)

    # -- the MK interpreter's op dispatch (knowledge/mk.py) -------------------
    def _is_opcode_dispatcher(self, name: str) -> bool:
        """A class template recursing over a pack of ops with a partial specialization whose code
        compares the opcode with `op::opcode` (Megakernels' `dispatch_op`)."""
        if name not in self._opcode_dispatchers:
            found = False
            for c in self.w.mb.partial_specs.get(name, ()):
                toks = tokens_of(c)
                if "opcode" in toks and "..." in toks:
                    found = True
            self._opcode_dispatchers[name] = found
        return self._opcode_dispatchers[name]

    def _mk_op_role_struct(self, role: str) -> StructType | None:
        op = self.w.mk_op
        if op is None:
            return None
        v = op.env.vars.get(role)
        if isinstance(v, tuple) and v and v[0] == "struct_decl":
            return self.w.types.struct_type(v[1], {}, parent_env=op.env)
        return v if isinstance(v, StructType) else None

    def _mk_dispatch_role(self, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """`tkcheck_dispatch(opcode, g, s)` in tkcheck's worker loop: the model's op's ROLE::run."""
        role = self.w.mk_role
        rs = self._mk_op_role_struct(role) if role else None
        f = rs.env.vars.get("run") if rs is not None else None
        if not isinstance(f, Func):
            if cursor is not None:
                self.w.note_unmodelled(cursor, f"MK op dispatch of the {role} role not resolved")
            return None
        return self.w.inline.expand(f, args, ctx, cursor, None)

    def _mk_dispatch_template(
        self, targs: tuple[cexpr.Node, ...], args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any, name: str
    ) -> Any:
        """`dispatch_op<D, ops...>::run<...>(opcode, g, a...)`: in the model of op S, `D<S>::run(g, a...)`,
        D being a member template `A<...>::dispatcher` whose parameter is the op."""
        if self.w.mk_op is None or not targs:
            vals = [self.w.ev(a, ctx, cursor) for a in args]
            if cursor is not None:
                self.w.note_unmodelled(cursor, f"{name}: an op dispatch outside a per-op model")
            self.w.stmts.unmodelled_use(vals, ctx, cursor, name)
            return E.opaque(name)
        d = targs[0]
        target = None
        if isinstance(d, cexpr.Name) and len(d.segments) >= 2:
            outer = self.w.resolve_type(cexpr.Name(d.segments[:-1]), ctx.env)
            inner = outer.env.vars.get(d.segments[-1].name) if isinstance(outer, StructType) else None
            if isinstance(inner, tuple) and inner and inner[0] == "struct_decl":
                tps = [ch for ch in inner[1].get_children() if ch.kind == CK.TEMPLATE_TYPE_PARAMETER]
                if tps:
                    target = self.w.types.struct_type(inner[1], {tps[0].spelling: self.w.mk_op}, parent_env=outer.env)
        f = target.env.vars.get("run") if target is not None else None
        if not isinstance(f, Func):
            if cursor is not None:
                self.w.note_unmodelled(cursor, f"{name}: dispatcher {cexpr.render(d)} not resolved")
            return E.opaque(name)
        return self.w.inline.expand(f, args[1:], ctx, cursor, None)

    def _transpose_value(self, targ: Any, ctx: Ctx) -> int | None:
        """A `transpose::N` / `transpose::T` template argument as 0 / 1 (or a constant)."""
        if isinstance(targ, cexpr.Name) and len(targ.segments) >= 2 and targ.segments[-2].name == "transpose":
            return K.TRANSPOSE_VALUES.get(targ.segments[-1].name)
        v = self.w.ev(targ, replace(ctx, dry=True)) if isinstance(targ, cexpr.Node) else targ
        c = v.const() if isinstance(v, Expr) else None
        return c if c in (0, 1) else None

    def _bare_atomic_value(self, node, vals, ctx: Ctx, cursor) -> Expr:
        """The old value of an atomic on a bare kernel pointer: the block-uniform unknown it always
        was (`opaque_from`), named once per call site and caller chain, so that the dry walk of a
        condition (`if (atomicAdd(count, 1) == n - 1)`, the guard) and the walk that emits the
        event (`condition_memory`) name the same value (the event's `result`)."""
        v = self.w.exprs.opaque_from(node, vals)
        if cursor is None or not isinstance(v, E.Var) or v.kind != E.PARAM:
            return v
        loc = loc_of(cursor, self.w.filename)
        key = (loc.filename, loc.row, loc.column, ctx.callers, ctx.loops)
        memo = self.__dict__.setdefault("_bare_atomics", {})
        if key not in memo:
            memo[key] = v
        return memo[key]

    def _on_global_layout(self, node: cexpr.Node, ctx: Ctx, cursor: Any, nargs: int, arity: int) -> bool:
        """The first argument is a global layout (a gl / pgl, e.g. TK's `barrier_t`), not an
        mbarrier: a gl value, or a value that is no barrier in the multi-GPU signature's arity
        (`wait(bar, coord, dev_idx, expected)`: an mbarrier wait takes two arguments)."""
        v = self.w.ev(node, replace(ctx, dry=True), cursor)
        if isinstance(v, Obj):
            return v.kind == "gl"
        return nargs == arity

    def _emit_tcgen05_commit(
        self, btargs: Targs, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any, api: str, ncta: int | None = None
    ) -> None:
        """`detail::tcgen05::commit<ncta>(sem[, mask])` / `tensor_commit<ncta>(sem)`: one arrival on
        `sem` once this thread's earlier tcgen05 operations complete; for ncta == 2 on the copy of
        `sem` in both CTAs of the pair (multicast mask 0b11 unless given)."""
        ncta = ncta or self.w.targ_int(btargs, ctx, 0) or 1
        vals = [self.w.ev(a, ctx, cursor) for a in args]
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        op = ir.Op(ir.MBAR_ARRIVE, api, loc, ctx.guard, ctx.loops, scope="thread", count=E.Const(1))
        b = vals[0]
        if isinstance(b, _ArrVal):
            b = b.obj
        if isinstance(b, Obj) and b.kind in ("barrier", "struct", "buffer"):
            op.barrier = b.ref
        else:
            op.barrier_unknown = cexpr.render(args[0])
        mask = vals[1] if ncta == 2 and len(vals) > 1 and isinstance(vals[1], Expr) else None
        op.mbar = ir.BarrierFacts(tcgen05_commit=True, ncta=ncta, multicast=ncta == 2, mask=mask)
        self.w.emit(op, ctx)
        return None

    def _emit_scale_copy(
        self, base: str, btargs: Targs, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any, api: str
    ) -> None:
        """`load_mxnv_scale_async[2]<ncta>(tt, st[, sem])` (TK ops/thread/memory/tile/shared_to_tensor.cuh):
        tcgen05.cp of a scale tile from shared memory into TMEM, then with a semaphore
        `detail::tcgen05::commit<ncta>(sem)` and `tensor_before_thread_sync()`."""
        ncta = 2 if base.endswith("2") else (self.w.targ_int(btargs, ctx, 0) or 1)
        vals = [self.w.ev(a, ctx, cursor) for a in args[:2]]
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        op = ir.Op(ir.TMEM_OP, api, loc, ctx.guard, ctx.loops, scope="thread", tmem=ir.TmemFacts("cp"))
        for v in vals:
            if isinstance(v, Obj):
                op.operands = op.operands + (v.ref,)
        self.w.emit(op, ctx)
        if len(args) == 3:
            self._emit_tcgen05_commit(None, args[2:], ctx, cursor, api, ncta=ncta)
            self.w.emit(ir.Op(ir.FENCE, api, loc, ctx.guard, ctx.loops, fence=ir.FenceFacts("tcgen05_before")), ctx)
        return None

    def _emit_clc(self, base: str, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any, api: str) -> Rec | None:
        """Cluster launch control: `clc::schedule(h, sem)` requests the next cluster's first block
        (try_cancel; its 16-byte response completes tx bytes on `sem` in every CTA of the
        cluster); `clc::query(h)` reads the response: {success, x, y, z}, the same for the block."""
        vals = [self.w.ev(a, ctx, cursor) for a in args]
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        if base == "query":
            h = vals[0] if vals else None
            name = str(h.ref) if isinstance(h, Obj) else (cexpr.render(args[0]) if args else "clc")
            return Rec(
                {f: E.Var(f"clc:{name}.{f}#{E.fresh_number()}", E.PARAM) for f in ("success", "x", "y", "z")},
                "clc::result",
            )
        op = ir.Op(
            ir.TMA_LOAD,
            api,
            loc,
            ctx.guard,
            ctx.loops,
            scope="thread",
            bytes=E.Const(K.CLC_RESPONSE_BYTES),
            mbar=ir.BarrierFacts(clc=True, multicast=True),
        )
        if vals and isinstance(vals[0], Obj):
            op.buffer = vals[0].ref
        b = vals[1] if len(vals) > 1 else None
        if isinstance(b, _ArrVal):
            b = b.obj
        if isinstance(b, Obj) and b.kind in ("barrier", "struct", "buffer"):
            op.barrier = b.ref
        else:
            op.barrier_unknown = cexpr.render(args[1]) if len(args) > 1 else "?"
        self.w.emit(op, ctx)
        return None

    def _qualifier(self, quals: Sequence[cexpr.Segment], ctx: Ctx) -> tuple[int | None, str]:
        """(warps of the group scope or None, normalised qualifier text)."""
        if not quals:
            return None, ""
        names = []
        warps = None
        for seg, targs in quals:
            if seg == "group" and targs:
                v = self.w.ev(targs[0], replace(ctx, dry=True))
                w = v.const() if isinstance(v, Expr) else None
                warps = w if isinstance(w, int) else -1
                names.append("group")
                continue
            if seg in K.GROUP_SCOPES_WARPS:
                warps = K.GROUP_SCOPES_WARPS[seg]
                names.append(seg)
                continue
            v = ctx.env.lookup(seg)
            if isinstance(v, tuple) and v and v[0] == "alias_decl":
                v = self._group_alias(v[1], ctx)
            if isinstance(v, GroupScope):
                warps = v.warps
                names.append("group")
                continue
            names.append(seg)
        return warps, "::".join(names)

    def _group_alias(self, alias_cursor: Any, ctx: Ctx) -> GroupScope | None:
        toks = tokens_of(alias_cursor)
        if "=" in toks:
            body = toks[toks.index("=") + 1 :]
            body = [t for t in body if t not in ("kittens", "::")] if body[:2] == ["kittens", "::"] else body
            if body and body[0] == "group" and len(body) >= 4 and body[1] == "<":
                node = cexpr.parse_expression(body[2 : body.index(">")] if ">" in body else [], ctx.env.has)
                local = alias_cursor.semantic_parent.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD)
                v = self.w.ev(
                    node, replace(ctx, dry=True, env=ctx.env if local else self.w.types.env_for_decl(alias_cursor))
                )
                if isinstance(v, Expr) and isinstance(v.const(), int):
                    return GroupScope(v.const())
                return GroupScope(-1)
            if body and body[0] in K.GROUP_SCOPES_WARPS:
                return GroupScope(K.GROUP_SCOPES_WARPS[body[0]])
        return None

    def _lookup_op(
        self, qual: str, base: str, scope_warps: int | None, nargs: int = 0
    ) -> tuple[K.OpSpec | None, str, int | None]:
        parts = qual.split("::") if qual else []
        parts = [p for p in parts if p not in ("kittens",)]
        q = "::".join(parts)
        if q in ("", "kittens"):
            spec = K.THREAD_OPS.get(base)
            return spec, "thread", 0
        if q == "tma":
            spec = K.TMA_OPS.get(base)
            return spec, "thread", 0
        if q in ("tma::cluster", "everyone::tma::cluster") or (
            q.endswith("tma::cluster")
            and (base in K.CLUSTER_OPS or (base == "store_async" and nargs in K.CLUSTER_COPY_OPS))
        ):
            if base in ("arrive", "wait") and nargs >= 2:
                # TK's tma::cluster::arrive(semaphore&, int dst_cta[, count]) (a remote mbarrier
                # arrive, mapa + mbarrier.arrive.release.cluster) and tma::cluster::wait(semaphore&,
                # int phase) (mbarrier.try_wait.parity.acquire.cluster); without arguments
                # these names are the cluster barrier (barrier.cluster.arrive / wait)
                spec = K.TMA_OPS.get("arrive") if base == "arrive" else K.THREAD_OPS.get("wait")
                if spec is not None and scope_warps is not None:
                    return spec, "group", scope_warps
                return spec, "thread", 0
            if base in K.CLUSTER_OPS:
                return K.CLUSTER_OPS[base], "cluster", 0
            if base == "store_async" and nargs in K.CLUSTER_COPY_OPS:
                spec = K.CLUSTER_COPY_OPS[nargs]
                return (spec, "group", scope_warps) if scope_warps is not None else (spec, "thread", 0)
            spec = K.TMA_OPS.get(base)
            if spec is not None and scope_warps is not None:
                return spec, "group", scope_warps
            return spec, "thread", 0
        if q == "everyone" and base == "sync":
            return K.EVERYONE_SYNC, "block", 0
        if scope_warps is not None:
            if parts and parts[-1] == "tma" or "tma" in parts:
                spec = K.GROUP_TMA_OPS.get(base)
                return spec, "group", scope_warps
            spec = K.GROUP_OPS.get(base)
            if spec is not None and not (base == "wait" and nargs != 2):
                return spec, "group", scope_warps
            return None, "group", scope_warps
        return None, "thread", 0

    def _emit_op(
        self,
        spec: K.OpSpec,
        scope: str,
        gwarps: int | None,
        qual: str,
        base: str,
        btargs: Targs,
        args: Sequence[cexpr.Node],
        ctx: Ctx,
        cursor: Any,
        node: cexpr.Call,
    ) -> Any:
        vals = [self.w.ev(a, ctx, cursor) for a in args]
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        api = f"{qual}::{base}" if qual else base
        if base in ("arrive", "arrive_and_wait") and len(vals) == 1 and isinstance(vals[0], NamedBar):
            # TK's arrive(barrier<N>) / arrive_and_wait(barrier<N>) and their group forms:
            # `bar.arrive id, 32*N` / `bar.sync id, 32*N` in every thread that runs them (the
            # hardware counts warps); a named barrier, never an mbarrier
            spec = K.TK_BARRIER_ARRIVE if base == "arrive" else K.TK_BARRIER_SYNC
        op = ir.Op(spec.kind, api, loc, ctx.guard, ctx.loops)
        # scope: who issues the PTX
        if scope == "group":
            op.scope = "warp" if gwarps == 1 else ("warpgroup" if gwarps == 4 else f"group<{gwarps}>")
            op.group_warps = gwarps if gwarps and gwarps > 0 else 0
            op.issuers_per_group = 1 if spec.group_elects else 0
        elif scope in ("block", "cluster"):
            op.scope = scope
        else:
            op.scope = "thread"
            if spec.tma_lane_guarded and self.w.tk_lane_guarded:
                # old TK: the thread-scope spelling itself guarded lane 0
                op.scope = "warp"
                op.group_warps = 1
                op.issuers_per_group = 1
        roles = list(spec.args)
        tiles = []
        # the arguments' facts, by role
        tx: Expr | None = None
        mask: Expr | None = None
        cta: Expr | None = None
        mbar_cta: Expr | None = None
        coord: tuple[Expr, ...] = ()
        gl: Obj | None = None
        transferred: Obj | None = None
        reinterpreted: ir.TileType | None = None
        mma_operands: dict[str, ir.MmaOperand] = {}
        # the C++ parameter types of TK's signatures: integral conversion of constants
        vals = [
            convert_int(v, _ROLE_TYPES.get((spec.kind, roles[i]))) if i < len(roles) else v for i, v in enumerate(vals)
        ]
        for i, v in enumerate(vals):
            role = roles[i] if i < len(roles) else (roles[-1] if roles and roles[-1].startswith("*") else None)
            if role is None:
                continue
            if role.startswith("*"):
                tiles.append(v)
                continue
            if role == "barrier":
                if isinstance(v, Obj) and v.kind in ("barrier", "struct", "buffer"):
                    op.barrier = v.ref
                else:
                    op.barrier_unknown = cexpr.render(args[i])
            elif role == "mbar_cta":
                if isinstance(v, Expr) and v.eval({}) != -1:
                    mbar_cta = v
            elif role in ("count", "tx", "bytes", "parity", "id", "mask", "cta"):
                if isinstance(v, Expr):
                    if role == "count":
                        op.count = v
                    elif role == "tx":
                        tx = v
                    elif role == "bytes":
                        op.bytes = v
                    elif role == "parity":
                        op.parity = v
                    elif role == "id":
                        op.sync_id = v
                    elif role == "mask":
                        mask = v
                    elif role == "cta":
                        cta = v
            elif role in ("dst", "src", "acc", "a", "b"):
                if isinstance(v, Obj):
                    if role in ("dst", "src"):
                        op.buffer = v.ref
                        transferred = v
                        reinterpreted = v.reinterpreted_from or reinterpreted
                    else:
                        mma_operands[role] = ir.MmaOperand(v.kind, v.type, v.reinterpreted_from)
                    op.operands = op.operands + (v.ref,)
            elif role == "coord":
                items = v if isinstance(v, tuple) else (v,)
                coord = tuple(x if isinstance(x, Expr) else E.opaque("coord") for x in items)
            elif role == "gl":
                if isinstance(v, Obj):
                    gl = v
        # derived numbers
        if spec.kind == ir.MBAR_INIT:
            count = op.count if op.count is not None else E.opaque("count")
            op.count = E.binop(
                "+", count, tx if tx is not None else E.Const(0)
            )  # TK sums thread_count + transaction_count
        elif spec.kind == ir.MBAR_ARRIVE:
            if op.count is None:
                op.count = E.Const(1) if len(vals) <= (1 if not spec.remote else 2) else E.opaque("count")
            if spec.and_wait:
                op.parity = vals[1] if len(vals) > 1 and isinstance(vals[1], Expr) else None
                op.count = E.Const(1)
        elif spec.kind == ir.MBAR_EXPECT:
            if base == "expect":
                if tiles and isinstance(tiles[0], Expr) and "cluster" in (qual or ""):
                    # `tma::cluster::expect(bar, dst_cta, tiles...)` (TK before mid-2025): the
                    # arrive.expect_tx lands on CTA dst_cta's copy of the barrier
                    cta = tiles[0]
                    tiles = tiles[1:]
                total: Expr = E.Const(0)
                for t in tiles:
                    s = t.type.size_bytes() if isinstance(t, Obj) and t.type is not None else None
                    if s is None:
                        total = E.opaque("expect bytes")
                        break
                    total = E.binop("+", total, s)
                op.bytes = total
            elif op.bytes is None:
                op.bytes = E.opaque("bytes")
        elif spec.kind in (ir.TMA_LOAD, ir.TMA_STORE):
            t = transferred.type if transferred is not None else None
            op.bytes = t.size_bytes() if isinstance(t, ir.TileType) else None
            if op.bytes is None:
                op.bytes = E.opaque("tile bytes")
        elif spec.kind in (ir.MMA_WAIT, ir.TMA_STORE_WAIT, ir.CP_ASYNC_WAIT) and "count" not in roles:
            n = self.w.targ_int(btargs, ctx, 0)
            op.count = E.Const(n if n is not None else 0)
        elif spec.kind == ir.CP_ASYNC_WAIT and op.count is None:
            op.count = E.opaque("wait_prior N")
        elif spec.kind == ir.SETMAXNREG:
            n = self.w.targ_int(btargs, ctx, 0)
            if n is None:
                n = spec.registers
            op.count = E.Const(n) if n is not None else None
        sync_kind = spec.sync_kind
        if spec.kind == ir.SYNC:
            if sync_kind == "group":
                if base == "sync" and not args and gwarps == 1:
                    sync_kind = "warp"
                else:
                    sync_kind = "named"
                    op.count = E.Const(32 * gwarps) if gwarps and gwarps > 0 else None
                    if op.sync_id is None and btargs:
                        n = self.w.targ_int(btargs, ctx, 0)
                        op.sync_id = E.Const(n) if n is not None else None
            elif sync_kind == "block_named":
                sync_kind = "block"
                op.count = self.w.model.block_threads
        if spec.tk_barrier and vals and isinstance(vals[0], NamedBar):
            nbar = vals[0]
            op.sync_id = nbar.id
            op.count = E.Const(32 * nbar.warps) if nbar.warps is not None else None
            if nbar.warps is not None:
                # `bar.sync id, 32*N`: the barrier of a group of N warps, as group<N>::sync(id)
                op.group_warps = nbar.warps
        # the kind's facts
        if spec.kind == ir.SYNC and sync_kind is not None:
            op.sync = ir.SyncFacts(
                sync_kind, mask, syncthreads=spec.syncthreads, everyone=spec.sync_kind == "block_named"
            )
        elif spec.kind == ir.FENCE and spec.fence_kind is not None:
            op.fence = ir.FenceFacts(spec.fence_kind)
        elif spec.kind == ir.TMEM_OP and spec.tmem is not None:
            op.tmem = ir.TmemFacts(spec.tmem)
        elif spec.kind == ir.MMA:
            op.mma = K.mma_facts(base, "wgmma")
            if op.mma is not None:
                op.mma = replace(op.mma, acc=mma_operands.get("acc"), a=mma_operands.get("a"), b=mma_operands.get("b"))
        elif spec.kind == ir.SETMAXNREG:
            op.increase = spec.increase
        elif spec.kind == ir.PDL:
            op.pdl = spec.pdl
        elif spec.kind == ir.TMA_STORE_WAIT:
            op.read_only = spec.read_only
        if spec.kind in (ir.TMA_LOAD, ir.TMA_STORE):
            op.transfer = ir.TransferFacts(
                tile_type=transferred.type if transferred is not None else None,
                reinterpreted_from=reinterpreted,
                coord=coord,
                gl=gl.ref.name if gl is not None else None,
                gl_type=gl.type if gl is not None else None,
                proxy_fence=spec.proxy_fence,
            )
        if spec.kind in (ir.MBAR_ARRIVE, ir.MBAR_EXPECT, ir.MBAR_WAIT, ir.TMA_LOAD):
            op.mbar = ir.BarrierFacts(
                remote=spec.remote,
                cta=cta,
                mbar_cta=mbar_cta,
                mask=mask,
                multicast=spec.kind == ir.TMA_LOAD and mask is not None,
                tcgen05_commit=spec.tcgen05_commit,
                and_wait=spec.and_wait,
            )
        if (
            spec.kind == ir.MBAR_ARRIVE
            and op.barrier is None
            and base == "arrive"
            and scope == "group"
            and vals
            and isinstance(vals[0], Expr)
        ):
            # group<N>::arrive(int id): a named-barrier arrive, not an mbarrier (its id argument
            # is no mbarrier the op failed to resolve: the kernel's mbarrier accounts stay decided)
            op.kind = ir.NAMED_ARRIVE
            op.mbar = None
            op.barrier_unknown = None
            op.sync_id = vals[0]
            op.count = E.Const(32 * gwarps) if gwarps and gwarps > 0 else None
        if spec.kind == ir.CP_ASYNC:
            if op.bytes is None and transferred is not None and isinstance(transferred.type, ir.TileType):
                op.bytes = transferred.type.size_bytes()
            op.copy = ir.CopyFacts(spec.copy_via or "tk", None if op.buffer is not None else cexpr.render(args[0]))
        self.w.emit(op, ctx)
        if spec.commits:  # TK's load_async closes its own group
            self.w.emit(replace(op, kind=ir.CP_ASYNC_COMMIT, buffer=None, operands=(), bytes=None, copy=None), ctx)
        if spec.then_sync is not None:
            # TK's load_async_wait: __syncwarp(), or the group's named barrier `sync(bar_id)`
            named = spec.then_sync == "group" and op.sync_id is not None
            self.w.emit(
                replace(
                    op,
                    kind=ir.SYNC,
                    count=E.Const(32 * gwarps) if named and gwarps else None,
                    sync=ir.SyncFacts("named" if named else "warp"),
                    issuers_per_group=0,
                ),
                ctx,
            )
        if spec.uniform_result:
            # a block-wide reduction: one unknown value, the same for every thread of the block
            return E.Var(f"?{base}#{E.fresh_number()}", E.PARAM)
        return None

    def _emit_reg_access(self, base: str, qual: str, vals: list[Any], ctx: Ctx, cursor: Any) -> None:
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        written = K.REGISTER_OPS.get(base)
        for i, v in enumerate(vals):
            if isinstance(v, Obj) and v.kind in ("regtile", "buffer"):
                access = "write" if written == i else "read"
                if base == "zero" or base in ("one", "neg_infty"):
                    access = "zero" if i == 0 else access
                if v.kind == "regtile":
                    op = ir.Op(
                        ir.REG_ACCESS,
                        f"{qual}::{base}" if qual else base,
                        loc,
                        ctx.guard,
                        ctx.loops,
                        buffer=v.ref,
                        access=ir.AccessFacts(access, tile_type=v.type),
                    )
                else:
                    op = ir.Op(
                        ir.SMEM_ACCESS,
                        f"{qual}::{base}" if qual else base,
                        loc,
                        ctx.guard,
                        ctx.loops,
                        buffer=v.ref,
                        # `store(dst, src, ..)`: the shared tile is written only as the
                        # destination; `warp::store(gl, st, coord)` reads it (smem to global)
                        access=ir.AccessFacts(
                            "write" if base == "store" and i == 0 else "read",
                            tile_type=v.type,
                            reinterpreted_from=v.reinterpreted_from,
                        ),
                    )
                if qual:
                    op.scope = qual.split("::")[-1]
                self.w.emit(op, ctx)

    def _ev_method(self, callee: cexpr.Member, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        mname = callee.field
        if mname in K.ATOMIC_METHODS or mname in K.ATOMIC_OTHER_METHODS:
            # a libcu++ / C++ atomic object's member (walk_atomics: it takes the call when
            # libclang types its object as one)
            r = self.w.atomics.method(callee, args, ctx, cursor)
            if r is not NotImplemented:
                return r
        if mname in K.LIBCU_UNLOWERED_SYNC_METHODS:
            # a latch the walk constructed (a one-phase mbarrier), a binary semaphore in global
            # memory (a spin lock's events): walk_libcu. Before the object is evaluated: a call
            # on it does not load it
            r = self.w.libcu.latch_method(mname, args, ctx, cursor)
            if r is NotImplemented:
                r = self.w.libcu.semaphore_method(callee, args, ctx, cursor)
            if r is not NotImplemented:
                return r
        obj = self.w.ev(callee.obj, ctx, cursor)
        targs = callee.targs
        if not isinstance(obj, CgGroup) and mname in _CG_METHODS:
            # a group the walk holds no value for (a member of a struct, an opaque parameter):
            # libclang's type of the object the method is called on
            g = _cg_group_of(_member_object_type(cursor, mname))
            if g is not None:
                obj = g
        if isinstance(obj, CgGroup):
            res = self._cg_method(obj, mname, args, ctx, cursor, f"{_CG_API[obj.kind]}::{mname}")
            if res is not _NOT_CG:
                return res
        if isinstance(obj, Allocator) and mname == "allocate":
            t = None
            dims = []
            if targs:
                t = self.w.resolve_type(targs[0], ctx.env)
                for a in targs[1:]:
                    v = self.w.ev(a, replace(ctx, dry=True))
                    dims.append(v if isinstance(v, Expr) else E.opaque("dim"))
            return ("alloc", t, tuple(dims), obj.alignment)
        if isinstance(obj, tuple) and obj and obj[0] == "glmethod":
            return E.Var(f"{obj[1].ref}.{mname}()", E.PARAM)
        if isinstance(obj, Obj) and obj.kind == "gl":  # g.A.rows(), g.C.cols(): uniform sizes
            return E.Var(f"{obj.ref}.{mname}()", E.PARAM)
        if isinstance(obj, Obj) and obj.kind == "tmem_allocator":
            return self.w.tmem.allocator_method(obj, mname, targs, args, ctx, cursor)
        if isinstance(obj, Obj) and obj.kind == "tmem" and mname == "subtile":
            return self.w.tmem.subtile(obj, targs, args, ctx, cursor)
        if isinstance(obj, Obj) and mname in ("subtile",):
            return obj
        if isinstance(obj, Rec) and obj.type_name in (walk_libcu.PIPELINE, walk_libcu.BARRIER):
            r = self.w.libcu.method(obj, mname, args, ctx, cursor)
            if r is not NotImplemented:
                return r
        if isinstance(obj, StructType):
            f = obj.env.vars.get(mname)
            if isinstance(f, Func):
                return self.w.inline.expand(f, args, ctx, cursor, targs)
        if isinstance(obj, Rec) and obj.struct is not None and self.w.mk_op is not None and len(args) == 1:
            from ..knowledge import mk

            if mname in mk.PAGE_ID_METHODS and "page_finished" in obj.fields:
                v = self.w.ev(args[0], ctx, cursor)
                if isinstance(v, Expr) and self.w.model is not None:
                    if mk.PAGE_ID_NOTE not in self.w.model.notes:
                        self.w.model.notes.append(mk.PAGE_ID_NOTE)
                    return v
        if isinstance(obj, Rec) and obj.struct is not None:
            f = obj.struct.env.vars.get(mname)
            if isinstance(f, Func):
                return self.w.inline.expand(f, args, ctx, cursor, targs, this=obj)
        vals = [self.w.ev(a, ctx, cursor) for a in args]
        self.w.stmts.unmodelled_use(vals, ctx, cursor, cexpr.render(callee))
        if mname in K.LIBCU_UNLOWERED_SYNC_METHODS and not ctx.dry:
            t = _member_object_type(cursor, mname)
            if t is not None and K.LIBCU_UNLOWERED_SYNC_TYPES.search(t):
                # a cuda::latch / cuda::counting_semaphore method: a synchronisation the model
                # does not lower (knowledge/ops.py): an opaque CALL, so the engines go blind here
                api = cexpr.render(callee)
                loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
                self.w.emit(ir.Op(ir.CALL, api, loc, ctx.guard, ctx.loops), ctx)
                self.w.note_unmodelled(cursor, f"`{api}`: a libcu++ latch / semaphore method, not modelled")
        return self.w.exprs.opaque_from(callee, [obj] + vals)

    # -- cooperative groups ------------------------------------------------------
    def _cg_method(self, g: CgGroup, mname: str, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any, api: str) -> Any:
        """A method of a cooperative-groups group (knowledge/ops.py, "Cooperative groups"): its
        barriers as SYNC ops, its ranks and sizes as the values they are, `map_shared_rank` as a
        pointer into a peer CTA's shared memory. _NOT_CG: a method the model has no meaning for."""
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        spec = K.CG_SYNC_OPS.get(g.kind) if mname == "sync" and not args else None
        if g.kind == "cluster" and mname in K.CG_CLUSTER_OPS and not args:
            spec = K.CG_CLUSTER_OPS[mname]
        if mname == "sync" and not args and spec is None:
            self.w.note_unmodelled(cursor, f"{api}: a barrier of a group whose kind is not known")
            return None
        if spec is not None:
            assert spec.sync_kind is not None
            mask: Expr | None = None
            if g.kind == "tile":
                if g.size is None or g.size > 32 or g.size & (g.size - 1):
                    self.w.note_unmodelled(cursor, f"{api}: a tile of {g.size} threads (its barrier is not modelled)")
                    return None
                if g.size < 32:
                    # __syncwarp over the tile's lanes: the N lanes from (lane / N) * N
                    first = E.binop(
                        "*", E.binop("/", E.binop("%", E.TID, E.Const(32)), E.Const(g.size)), E.Const(g.size)
                    )
                    mask = E.binop("<<", E.Const((1 << g.size) - 1), first)
            elif g.kind == "coalesced":
                mask = E.opaque("coalesced_group lanes")
            op = ir.Op(ir.SYNC, api, loc, ctx.guard, ctx.loops)
            op.scope = "cluster" if g.kind == "cluster" else "thread"
            op.sync = ir.SyncFacts(spec.sync_kind, mask, syncthreads=spec.syncthreads)
            self.w.emit(op, ctx)
            return None
        if mname == "map_shared_rank" and g.kind == "cluster" and len(args) == 2:
            self.w.exprs._no_elem_access += 1
            try:
                p = self.w.ev(args[0], ctx, cursor)
            finally:
                self.w.exprs._no_elem_access -= 1
            r = self.w.ev(args[1], ctx, cursor)
            if isinstance(p, Obj) and p.kind == "shared" and p.ref.index and isinstance(r, Expr):
                return DsmemPtr(p, r)
            self.w.note_unmodelled(cursor, f"{api}: an address in a peer CTA's shared memory the model does not follow")
            return E.opaque("map_shared_rank")
        if mname in K.CG_VALUE_METHODS and not args:
            return _cg_value(g, mname, self.w.model.block_threads, self.w.model.cluster)
        return _NOT_CG

    def _cg_invoke_one(self, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """`cg::invoke_one(g, fn, args...)`: one thread of g calls fn(args...) -- a branch of that
        one thread, walked as `if (g.thread_rank() == 0) fn(args...)`. Which thread is the
        implementation's choice (an election for a warp-sized tile); the model takes rank 0, as
        it takes lane 0 for an election (walk_asm._elected_lane). NotImplemented (an unmodelled
        call, as before) when g is no group the model knows or fn no callable it follows."""
        g = self.w.ev(args[0], replace(ctx, dry=True), cursor)
        if not isinstance(g, CgGroup):
            return NotImplemented
        rank = _cg_value(g, "thread_rank", self.w.model.block_threads, self.w.model.cluster)
        fn = self.w.ev(args[1], replace(ctx, dry=True), cursor)
        if not isinstance(fn, (Lambda, Func)) or rank.is_opaque():
            return NotImplemented
        st = self.w.stmts
        cls, cexp = st._classify(E.binop("==", rank, E.Const(0)), ctx)
        if cls == "unknown":
            return NotImplemented
        one = replace(ctx, guard=st._branch_guard(ctx.guard, cls, cexp, True))
        if isinstance(fn, Lambda):
            self.w.inline.expand_lambda(fn, args[2:], one, cursor)
        else:
            self.w.inline.expand(fn, args[2:], one, cursor, None)
        return None

    def _cg_async(self, g: CgGroup, base: str, btargs: Targs, args: Sequence[cexpr.Node], ctx: Ctx, cursor: Any) -> Any:
        """A group's collective async copy or its wait (knowledge/ops.py CG_ASYNC_OPS) as the cp.async
        events: the copy is a CP_ASYNC of every thread of the group (its chunks, CollectiveCopy)
        closed by a CP_ASYNC_COMMIT; a wait is a CP_ASYNC_WAIT N followed by the group's barrier.
        NotImplemented: libcu++'s `cuda::memcpy_async(group, dst, src, size, pipe | bar)`."""
        api = f"cg::{base}"
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        if base in ("wait", "wait_prior"):
            if len(args) != 1:
                # the deprecated forms with an nvcuda::experimental::pipeline
                self.w.note_unmodelled(cursor, f"{api}: the form with a pipeline object is not modelled")
                return None
            n = 0 if base == "wait" else self.w.targ_int(btargs, ctx, 0)
            op = ir.Op(ir.CP_ASYNC_WAIT, api, loc, ctx.guard, ctx.loops)
            op.count = E.Const(n) if n is not None else E.opaque("wait_prior N")
            self.w.emit(op, ctx)
            return self._cg_method(g, "sync", (), ctx, cursor, api)
        if len(args) == 5:
            last = self.w.ev(walk_libcu.LibcuLowering._unwrap(args[4]), replace(ctx, dry=True), cursor)
            if isinstance(last, Rec) and last.type_name in (walk_libcu.PIPELINE, walk_libcu.BARRIER):
                return NotImplemented
        if len(args) not in (4, 5):
            self.w.note_unmodelled(cursor, f"{api}: the form with a pipeline object is not modelled")
            return None
        dst = self._cg_copy_destination(args[1], ctx, cursor)
        size_node = args[3]
        if len(args) == 5:
            # the datum form `memcpy_async(g, dst, dst_count, src, src_count)`: min(counts) elements
            a, b = (
                self.w.ev(args[2], replace(ctx, dry=True), cursor),
                self.w.ev(args[4], replace(ctx, dry=True), cursor),
            )
            n_el = E.ite(E.binop("<", a, b), a, b) if isinstance(a, Expr) and isinstance(b, Expr) else None
            eb = dst[1] if dst is not None else None  # the element size
            nbytes: Expr = E.binop("*", n_el, E.Const(eb)) if n_el is not None and eb else E.opaque("copy size")
            size_node = args[2]
        else:
            nbytes = self.w.libcu._size(args[3], ctx, cursor)
        op = ir.Op(ir.CP_ASYNC, api, loc, ctx.guard, ctx.loops)
        op.bytes = nbytes
        src_global = self._global_source(args[3] if len(args) == 5 else args[2], ctx, cursor)
        if (
            dst is None
            or not src_global
            or g.kind not in K.CG_COPY_GROUPS
            or (g.kind == "tile" and not _pow2_tile(g.size))
        ):
            # a destination the model does not follow, a source not known to be global memory
            # (CUDA copies shared or local memory synchronously, `inline_copy`), or a group whose
            # ranks it does not know: a copy of unknown words (its reads stay undecided)
            what = (
                cexpr.render(args[1])
                if dst is None
                else f"{cexpr.render(args[1])} (its source is not known to be global memory: CUDA copies "
                "any other source synchronously)"
                if not src_global
                else f"{_CG_API[g.kind]} of {g.size or '?'} threads"
            )
            op.copy = ir.CopyFacts("cg", what)
        else:
            ref, eb, extents, dtype = dst
            size = g.size if g.kind == "tile" else _int_const(self.w.model.block_threads)
            hint = self._cg_copy_alignment(size_node, ctx, cursor)
            if hint is None and dtype in K.DTYPE_BYTES:
                # a call in a template, dependent on its parameters: the destination array's
                # element type (a CUDA number or vector type: alignof is its size)
                hint = K.DTYPE_BYTES[dtype]
            if size is None:
                op.copy = ir.CopyFacts("cg", f"{cexpr.render(args[1])} (the block size is not known)")
            else:
                op.buffer, op.operands = ref, (ref,)
                rank = E.binop("%", E.TID, E.Const(size)) if g.kind == "tile" else E.TID
                op.copy = ir.CopyFacts(
                    "cg",
                    collective=ir.CollectiveCopy(
                        size,
                        rank,
                        K.cg_copy_chunk(hint) if hint is not None else None,
                        eb,
                        extents,
                        tile_tail=g.kind == "tile" and size > 1,
                    ),
                )
        self.w.emit(op, ctx)
        self.w.emit(ir.Op(ir.CP_ASYNC_COMMIT, api, loc, ctx.guard, ctx.loops), ctx)
        return None

    def _cg_copy_destination(
        self, node: cexpr.Node, ctx: Ctx, cursor: Any
    ) -> tuple[ir.Ref, int | None, tuple[int, ...] | None, str | None] | None:
        """A collective copy's destination: the first element it writes (all indices of the
        `__shared__` array: a row `buf[s]` is `buf[s][0]`), the array's element bytes and the
        extents of its dims after the first, and its element type's name; None: not a
        `__shared__` array the walk follows."""
        self.w.exprs._no_elem_access += 1
        try:
            v = self.w.ev(node, ctx, cursor)
        finally:
            self.w.exprs._no_elem_access -= 1
        pad = 0
        if isinstance(v, _ArrVal) and isinstance(v.obj, Obj):
            pad = len(v.dims)
            v = v.obj
        if not (isinstance(v, Obj) and v.kind == "shared") or v.reinterpreted_from is not None:
            return None  # (a cast pointer's indices are not the declared array's elements)
        # the array's declared dims (recorded at its declaration: a helper's parameter names it
        # under another name)
        known = self.w.asm.shared_dims.get(v.ref.name)
        root = ctx.env.lookup(v.ref.name)
        dims = (
            list(known)
            if known
            else list(root.dims)
            if isinstance(root, _ArrVal) and root.obj.ref.name == v.ref.name
            else []
            if not v.ref.index and not pad
            else None
        )
        extents: tuple[int, ...] | None = None
        if dims is not None and len(dims) == len(v.ref.index) + pad:
            ints = [_int_const(d) for d in dims[1:]]
            extents = tuple(i for i in ints if i is not None) if all(i is not None for i in ints) else None
        ref = ir.Ref(v.ref.name, v.ref.index + (E.Const(0),) * pad, v.ref.spelling)
        scalar = v.type is not None and v.type.kind == "scalar"
        eb = v.type.dtype_bytes if scalar and v.type is not None else None
        return ref, eb, extents, v.type.dtype if scalar and v.type is not None else None

    def _global_source(self, node: cexpr.Node, ctx: Ctx, cursor: Any) -> bool:
        """Whether a collective copy's source is known to be global memory: an address computed
        from a kernel pointer parameter (`x + off`, through locals and helpers). CUDA's
        `accelerated_async_copy` copies any other source (shared or local memory) with plain
        loads and stores, at once: no async copy, no group to wait for."""
        self.w.exprs._no_elem_access += 1
        try:
            v = self.w.ev(node, replace(ctx, dry=True), cursor)
        finally:
            self.w.exprs._no_elem_access -= 1
        while isinstance(v, E.Bin) and v.op in ("+", "-"):
            v = v.a  # `p + off`: the memory p points into
        return self.w.exprs._global_pointer(v)

    def _cg_copy_alignment(self, size_node: cexpr.Node, ctx: Ctx, cursor: Any) -> int | None:
        """The static alignment hint of a collective copy: the N of a `cuda::aligned_size_t<N>(n)`
        size, else alignof the element type the call deduces (libclang's parameter type of the
        destination); None: not known."""
        if (
            isinstance(size_node, cexpr.Call)
            and isinstance(size_node.callee, cexpr.Name)
            and size_node.callee.segments[-1].name == "aligned_size_t"
        ):
            n = self.w.targ_int(size_node.callee.segments[-1].targs, ctx, 0)
            if n is not None:
                return n
        hints = set()
        try:
            for c in _calls_named(cursor, "memcpy_async"):
                # the callee's parameter types; in a template the call may be dependent: then
                # the types of the arguments as written, when they are not dependent themselves
                ref = c.referenced
                params = list(ref.type.argument_types()) if ref is not None else []
                if len(params) < 4:
                    params = [a.type for a in c.get_arguments()]
                if len(params) < 4:
                    return None
                m = re.search(r"aligned_size_t<\s*(\d+)", params[-1].get_canonical().spelling)
                if m:
                    hints.add(int(m.group(1)))
                    continue
                t = params[1].get_canonical()
                elem = t.get_pointee() if t.kind == TypeKind.POINTER else t.element_type
                if elem.kind == TypeKind.VOID:
                    hints.add(1)
                elif elem.kind not in (TypeKind.INVALID, TypeKind.DEPENDENT, TypeKind.UNEXPOSED):
                    hints.add(elem.get_align())
                else:
                    return None
        except (ValueError, AttributeError):
            return None
        h = hints.pop() if len(hints) == 1 else None
        return h if h is not None and h > 0 else None

    # -- TMEM (Blackwell) ------------------------------------------------------


def _enclosing_this(env: Env | None) -> Rec | None:
    """The record a member function runs on, when `env` is (inside) one's scope."""
    from .walk_env import ThisEnv

    e = env
    while e is not None:
        if isinstance(e, ThisEnv):
            return e.rec
        e = e.parent
    return None


def _same_object(target: Func, segs: list, ctx: Ctx) -> Rec | None:
    """A member function calling another member of the same object by its bare name: the same
    `this` (None for a free function or a member of another struct)."""
    this = _enclosing_this(ctx.env) if target.owner is not None and len(segs) == 1 else None
    if (
        this is not None
        and this.struct is not None
        and target.owner is not None
        and this.struct.cursor.hash != target.owner.cursor.hash
    ):
        return None
    return this


def _calls_named(cursor, name: str):
    """The `CALL_EXPR` cursors of `name(...)` in the statement at `cursor` (none without one)."""
    if cursor is None:
        return
    for c in cursor.walk_preorder():
        if c.kind == CK.CALL_EXPR and c.spelling == name:
            yield c


def _calls_user_function(cursor, name: str, mb) -> bool:
    """Whether every call `name(...)` in the statement at `cursor` is resolved by the compiler
    (libclang's referenced declaration) to a function of the user's own files; False when a
    call is unresolved (a dependent call in a template) or resolves elsewhere (TK's headers)."""
    seen = False
    try:
        for c in _calls_named(cursor, name):
            ref = c.referenced
            if (
                ref is None
                or ref.kind not in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE, CK.CXX_METHOD)
                or not mb._in_user_code(ref)
            ):
                return False
            seen = True
    except (ValueError, AttributeError):
        return False
    return seen


def _call_type(cursor, name: str) -> str | None:
    """The value type of the call `name(...)` in the statement at `cursor` (libclang's type of
    the call: `float` for a float atomicAdd); None when the statement has no such call or several
    calls of different types."""
    try:
        types = {c.type.get_canonical().spelling for c in _calls_named(cursor, name)}
    except (ValueError, AttributeError):
        return None
    return types.pop() if len(types) == 1 else None


# cooperative groups: the methods the walk gives a meaning (the others: unknown calls)
_CG_METHODS = frozenset(("sync", "map_shared_rank") + tuple(K.CG_CLUSTER_OPS) + tuple(K.CG_VALUE_METHODS))
_CG_API = {
    "block": "thread_block",
    "tile": "thread_block_tile",
    "coalesced": "coalesced_group",
    "cluster": "cluster_group",
    "grid": "grid_group",
    "group": "thread_group",
}
_NOT_CG = object()


def _int_const(e: Any) -> int | None:
    v = e.eval({}) if isinstance(e, Expr) else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _pow2_tile(size: int | None) -> bool:
    """A thread_block_tile whose ranks the model knows: 1 .. 32 threads, a power of two."""
    return size is not None and 0 < size <= 32 and not size & (size - 1)


def _cg_group_of(type_spelling: str | None) -> CgGroup | None:
    g = K.cg_group_type(type_spelling) if type_spelling else None
    return CgGroup(*g) if g is not None else None


def _cg_value(g: CgGroup, mname: str, block_threads: Expr | None, cluster: Expr | None) -> Expr:
    """The value of a group's rank or size (1-D blocks, as the model's threads are)."""
    n = g.size
    rank = E.Var("cta_rank", E.PARAM)
    if g.kind == "block":
        if mname == "thread_rank":
            return E.TID
        if mname in ("num_threads", "size") and block_threads is not None:
            return block_threads
    elif g.kind == "tile" and n is not None and 0 < n <= 32 and not n & (n - 1):
        if mname == "thread_rank":
            return E.binop("%", E.TID, E.Const(n))
        if mname == "meta_group_rank":
            return E.binop("/", E.TID, E.Const(n))
        if mname in ("num_threads", "size"):
            return E.Const(n)
        if mname == "meta_group_size" and block_threads is not None:
            return E.binop("/", block_threads, E.Const(n))
    elif g.kind == "cluster":
        if mname == "block_rank":
            return rank
        if mname == "num_blocks":
            return cluster if cluster is not None else E.Var("cluster_nctarank", E.PARAM)
        if mname == "thread_rank" and block_threads is not None:
            return E.binop("+", E.binop("*", rank, block_threads), E.TID)
    elif g.kind == "grid":
        # the block's linear rank in the grid: the same for every thread of the block, another
        # for each block (a block-dependent value, like blockIdx)
        if mname == "block_rank":
            return E.Var("grid.block_rank", E.PARAM)
        if mname == "num_blocks":
            return E.Var("grid.num_blocks", E.PARAM)
        if mname == "thread_rank" and block_threads is not None:
            return E.binop("+", E.binop("*", E.Var("grid.block_rank", E.PARAM), block_threads), E.TID)
    return E.opaque(f"{_CG_API[g.kind]}::{mname}")


def _member_object_type(cursor, mname: str) -> str | None:
    """The canonical type of the object of the member call `obj.mname(...)` in the statement at
    `cursor`; None when there is no such call or several of different types."""
    if cursor is None:
        return None
    types = set()
    try:
        for c in cursor.walk_preorder():
            if c.kind == CK.MEMBER_REF_EXPR and c.spelling == mname:
                kids = list(c.get_children())
                if not kids:
                    continue
                # below the implicit derived-to-base conversion to `thread_group` (the class that
                # declares sync()): the object's own type
                obj = kids[0]
                spelling = obj.type.get_canonical().spelling
                while obj.kind == CK.UNEXPOSED_EXPR:
                    inner = list(obj.get_children())
                    if len(inner) != 1:
                        break
                    obj = inner[0]
                    g = K.cg_group_type(obj.type.get_canonical().spelling)
                    if g is not None and g[0] != "group":
                        spelling = obj.type.get_canonical().spelling
                        break
                types.add(spelling)
    except (ValueError, AttributeError):
        return None
    return types.pop() if len(types) == 1 else None
