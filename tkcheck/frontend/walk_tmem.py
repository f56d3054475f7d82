"""Blackwell tensor memory: allocators, TMEM tiles and subtiles, tcgen05 MMAs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..findings import Location
from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr
from .value_types import Obj
from .walk_env import Ctx, loc_of
from .walk_arith import _arr
from .walker_core import WalkerCore


class TmemLowering:
    """The walker's part for Blackwell tensor memory: allocators, TMEM tiles and subtiles,
    tcgen05 loads/stores and MMAs."""

    def __init__(self, walker: WalkerCore):
        self.w = walker

    def allocator(self, name: str, type_toks: list[str], ctx: Ctx, loc: Location) -> Obj:
        """`tensor_allocator<nblocks_per_sm, ncta, managed> tm;`: TK's types/tensor/tensor.cuh."""
        targs: list = []
        if "<" in type_toks:
            inner = type_toks[type_toks.index("<") + 1 :]
            depth, cur = 0, []
            for tk in inner:
                if tk in ("<", "(", "{"):
                    depth += 1
                elif tk in (">", ")", "}"):
                    if depth == 0:
                        break
                    depth -= 1
                elif tk == ">>" and depth == 0:
                    break
                if tk == "," and depth == 0:
                    targs.append(cur)
                    cur = []
                    continue
                cur.append(tk)
            if cur:
                targs.append(cur)
        vals: list = []
        for ttoks in targs:
            if ttoks in (["true"], ["false"]):
                vals.append(ttoks == ["true"])
                continue
            v = self.w.ev(cexpr.parse_expression(ttoks, ctx.env.has), replace(ctx, dry=True))
            c = v.const() if isinstance(v, Expr) else None
            vals.append(c if isinstance(c, (int, bool)) else None)
        nb = vals[0] if len(vals) > 0 else None
        ncta = vals[1] if len(vals) > 1 else None
        managed = vals[2] if len(vals) > 2 else True
        if isinstance(managed, int) and not isinstance(managed, bool):
            managed = bool(managed)
        cols = ((512 // nb) // 32) * 32 if isinstance(nb, int) and not isinstance(nb, bool) and nb > 0 else None
        if not ctx.dry:
            self.w.model.tmem_allocators[name] = ir.TmemAllocator(name, nb, ncta, managed, cols, loc)
            if managed is True:
                # the managed constructor: warp 0 runs provision() (tcgen05.alloc)
                op = ir.Op(
                    ir.TMEM_OP,
                    f"{name}.tensor_allocator()",
                    loc,
                    ctx.guard.with_thread(E.binop("==", E.binop("/", E.TID, E.Const(32)), E.Const(0))),
                    ctx.loops,
                    scope="warp",
                    group_warps=1,
                    tmem=ir.TmemFacts("alloc", allocator=name, cols=cols, managed=True),
                )
                self.w.emit(op, ctx)
        return Obj("tmem_allocator", ir.Ref(name), None)

    def early_allocation(self, base: str, btargs: Any, ctx: Ctx, cursor: Any) -> Any:
        """The TMEM allocation of TK's first Blackwell API (2025): `allocate_tmem<nblocks, ncta>()`
        (January: returns a `tmem<float, 128, cols>` covering the allocation, no deallocation)
        and `allocate_tensor_memory<nblocks, ncta>()` (March: returns an allocator whose
        `cleanup()` deallocates). Both run tcgen05.alloc in warp 0, then a block barrier."""
        nb = self.w.targ_int(btargs, ctx, 0) or 1
        ncta = self.w.targ_int(btargs, ctx, 1) or 1
        cols = ((512 // nb) // 32) * 32
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        name = f"{base}@{loc.row}"
        if self.w.model is not None and not ctx.dry:
            self.w.model.tmem_allocators[name] = ir.TmemAllocator(name, nb, ncta, False, cols, loc)
            op = ir.Op(
                ir.TMEM_OP,
                f"{base}<{nb}, {ncta}>",
                loc,
                ctx.guard.with_thread(E.binop("==", E.binop("/", E.TID, E.Const(32)), E.Const(0))),
                ctx.loops,
                scope="warp",
                group_warps=1,
                tmem=ir.TmemFacts("alloc", allocator=name, cols=cols, managed=False),
            )
            self.w.emit(op, ctx)
            self.w.emit(
                ir.Op(
                    ir.SYNC,
                    f"{base} (bar.sync 0)",
                    loc,
                    ctx.guard,
                    ctx.loops,
                    scope="block",
                    sync=ir.SyncFacts("block"),
                ),
                ctx,
            )
        if base == "allocate_tmem":
            t = ir.TileType("tt", f"tmem<float, 128, {cols}>", "float", 4, E.Const(128), E.Const(cols))
            return ("tmem_tile", name, t, E.Const(0), E.Const(0))
        return Obj("tmem_allocator", ir.Ref(name), None)

    def allocator_method(self, obj: Obj, mname: str, targs: Any, args: Any, ctx: Ctx, cursor: Any) -> Any:
        name = obj.ref.name
        alloc = self.w.model.tmem_allocators.get(name) if self.w.model is not None else None
        if mname == "allocate":
            t = self.w.resolve_type(targs[0], ctx.env) if targs else None
            vals = [self.w.ev(a, ctx, cursor) for a in args]
            if not isinstance(t, ir.TileType) or t.kind != "tt" or not vals:
                return E.opaque("tmem allocate")
            col = vals[-1] if isinstance(vals[-1], Expr) else E.opaque("tmem col")
            if len(vals) == 2:  # half tiles: get_addr(superlane, col) = addr + ((superlane*16) << 16) + col
                lane = E.binop("*", vals[0], E.Const(16)) if isinstance(vals[0], Expr) else E.opaque("superlane")
            else:
                lane = E.Const(0)
            return ("tmem_tile", name, t, lane, col)
        if mname == "cleanup":
            mname = "deprovision"  # TK of March 2025: `tm_alloc.cleanup()` ran tcgen05.dealloc (warp 0)
            ctx = replace(ctx, guard=ctx.guard.with_thread(E.binop("==", E.binop("/", E.TID, E.Const(32)), E.Const(0))))
        if mname in ("provision", "deprovision"):
            vals = [self.w.ev(a, ctx, cursor) for a in args]
            loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
            op = ir.Op(
                ir.TMEM_OP,
                f"{name}.{mname}",
                loc,
                ctx.guard,
                ctx.loops,
                scope="warp",
                group_warps=1,
                tmem=ir.TmemFacts(
                    "alloc" if mname == "provision" else "dealloc",
                    allocator=name,
                    cols=alloc.cols if alloc else None,
                    managed=alloc.managed if alloc else None,
                ),
            )
            self.w.emit(op, ctx)
            return None
        for a in args:
            self.w.ev(a, ctx, cursor)
        if mname in ("get_addr",):
            return E.opaque("tmem addr")
        return None

    def bind_tile(self, name: str, v: Any, t: Any, dims: Any, loc: Location) -> Any:
        items = list(v) if isinstance(v, tuple) and v and isinstance(v[0], tuple) else [v]
        elems = []
        alloc = None
        ttype = t if isinstance(t, ir.TileType) else None
        for it in items:
            if isinstance(it, tuple) and it and it[0] == "tmem_tile":
                alloc = alloc or it[1]
                ttype = ttype or it[2]
                elems.append((it[3], it[4]))
            else:
                elems.append(None)
        if ttype is None:
            return E.opaque("tmem tile")
        if self.w.model is not None:
            self.w.model.tmem_tiles[name] = ir.TmemTile(name, ttype, alloc, tuple(elems), tuple(dims), loc)
        obj = Obj("tmem", ir.Ref(name), ttype)
        return _arr(obj, dims) if dims else obj

    def subtile(self, obj: Obj, targs: Any, args: Any, ctx: Ctx, cursor: Any) -> Obj:
        """`t.subtile<TT>(row, col)` = TT(addr + (row << 16) + col / (4 / sizeof(T))) (tt.cuh)."""
        t = self.w.resolve_type(targs[0], ctx.env) if targs else None
        vals = [self.w.ev(a, ctx, cursor) for a in args]
        lane0, col0 = obj.tmem_offset or (E.Const(0), E.Const(0))
        eb = obj.type.dtype_bytes if obj.type is not None else None
        if len(vals) == 2:
            row, col = vals
        elif len(vals) == 1:
            row, col = E.Const(0), vals[0]
        else:
            row = col = None
        if not isinstance(row, Expr):
            row = E.opaque("tmem row")
        if not isinstance(col, Expr) or not eb:
            col = E.opaque("tmem col")
        elif eb < 4:
            col = E.binop("/", col, E.Const(4 // eb))
        if not isinstance(t, ir.TileType) or t.kind != "tt":
            t = None
        return Obj("tmem", obj.ref, t, tmem_offset=(E.binop("+", lane0, row), E.binop("+", col0, col)))

    def access(self, base: str, qual: str, scope_warps: int | None, args: Any, ctx: Ctx, cursor: Any) -> None:
        vals = [self.w.ev(a, ctx, cursor) for a in args]
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        store = base.startswith("store")
        tm = vals[0] if store else vals[1]
        if not (isinstance(tm, Obj) and tm.kind == "tmem"):
            return None
        warps = scope_warps if scope_warps is not None else 1  # unqualified: TK's legacy warp scope
        op = ir.Op(ir.TMEM_OP, f"{qual}::{base}" if qual else base, loc, ctx.guard, ctx.loops, operands=(tm.ref,))
        op.scope = "warp" if warps == 1 else ("warpgroup" if warps == 4 else f"group<{warps}>")
        op.group_warps = warps if warps and warps > 0 else 0
        op.issuers_per_group = 0  # tcgen05.ld/st are .sync.aligned: every thread of each warp
        lane, _ = tm.tmem_offset or (E.Const(0), E.Const(0))
        op.tmem = ir.TmemFacts("store" if store else "load", tile_type=tm.type, lane_off=lane)
        self.w.emit(op, ctx)
        return None

    def tcgen05_mma(
        self, base: str, qual: str, btargs: Any, args: Any, ctx: Ctx, cursor: Any, group_warps: int | None = None
    ) -> None:
        """Thread-scope tcgen05 MMAs (TK ops/thread/mma/tcgen05.cuh): `mm[a][2]_{AB,ABt,AtB,AtBt}`
        and `mm[a][2]<ta, tb>`; `mm*` overwrite the accumulator, `mma*` accumulate, `*2` are
        cta_group::2; a trailing semaphore is committed (tcgen05.commit, multicast 0b11 for
        cta_group::2) after the MMA."""
        vals = [self.w.ev(a, ctx, cursor) for a in args]
        loc = loc_of(cursor, self.w.filename) if cursor is not None else self.w.model.location
        op = ir.Op(ir.MMA, f"{qual}::{base}" if qual else base, loc, ctx.guard, ctx.loops, scope="thread")
        operands: dict[str, ir.MmaOperand] = {}
        for role, v in zip(("acc", "a", "b"), vals[:3]):
            if isinstance(v, Obj):
                op.operands = op.operands + (v.ref,)
                # (a reinterpreted view is not recorded: the wgmma descriptor proofs do not apply)
                operands[role] = ir.MmaOperand(v.kind, v.type)
        last = vals[-1] if len(vals) >= 4 else None
        commit = None
        committed = isinstance(last, Obj) and last.kind == "barrier"
        op.mma = K.mma_facts(base, "tcgen05", last.ref if committed else None)
        op.mma = replace(op.mma, acc=operands.get("acc"), a=operands.get("a"), b=operands.get("b"))
        ncta = op.mma.ncta
        if committed:
            # the overload with a semaphore runs detail::tcgen05::commit<ncta>(sem) after the MMA:
            # one arrive (multicast to both CTAs of the pair for cta_group::2), like tensor_commit
            commit = ir.Op(
                ir.MBAR_ARRIVE,
                op.api,
                loc,
                ctx.guard,
                ctx.loops,
                scope="thread",
                barrier=last.ref,
                count=E.Const(1),
                mbar=ir.BarrierFacts(tcgen05_commit=True, ncta=ncta, of_mma=True),
            )
        if group_warps:
            for o in (op, commit):
                if o is not None:
                    o.scope = (
                        "warp" if group_warps == 1 else ("warpgroup" if group_warps == 4 else f"group<{group_warps}>")
                    )
                    o.group_warps = group_warps
                    o.issuers_per_group = 1
        self.w.emit(op, ctx)
        if commit is not None:
            self.w.emit(commit, ctx)
        return None
