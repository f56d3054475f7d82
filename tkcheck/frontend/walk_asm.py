"""Inline PTX: the ops of asm statements (classified by `knowledge.ops.ptx_ops`) and the shared
addresses their operands are built from."""

from __future__ import annotations

import re
import zlib
from dataclasses import replace
from typing import Any

from ..findings import Location
from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.expr import Expr
from . import cexpr
from .value_types import Obj
from .walk_env import Ctx, loc_of, tokens_of
from .walker_core import AsmWalker


class AsmLowering:
    """The walker's part for inline PTX: the ops of mbarrier/fence/shared-memory instructions
    written as asm statements, and the shared addresses their operands are built from."""

    def __init__(self, walker: AsmWalker):
        self.w = walker

    def walk(self, c: Any, ctx: Ctx) -> None:
        """The ops of the asm statement at cursor `c`."""
        w = self.w
        text = " ".join(tokens_of(c))
        loc = loc_of(c, w.filename)
        ptx = " ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', text))
        if ctx.dry:
            return
        facts = K.classify_ptx(ptx[:200])

        def op(kind: str, api: str, **kw: Any) -> None:
            w.emit(ir.Op(kind, api, loc, ctx.guard, ctx.loops, asm=facts, **kw), ctx)

        does = K.ptx_ops(ptx)
        for p in does.ops:
            kw = p.op_fields()
            if p.kind in (ir.SYNC, ir.NAMED_ARRIVE):
                # `bar.sync %0, %1` / `bar.arrive 1, 256`: the barrier id and the thread count
                # (no count: every thread of the block)
                kw["sync_id"] = self._ptx_value(c, ctx, p.bar_id)
                kw["count"] = (
                    self._ptx_value(c, ctx, p.bar_count)
                    if p.bar_count
                    else (w.model.block_threads if w.model is not None else None)
                )
            if p.kind in (ir.CP_ASYNC, ir.CP_ASYNC_WAIT):
                kw.update(self._cp_async_operands(c, ctx, p))
            if p.kind in (ir.GLOBAL_LOAD, ir.GLOBAL_SIGNAL, ir.GLOBAL_STORE) and p.global_access is not None:
                kw["global_access"] = self._global_operands(c, ctx, p, p.global_access)
            op(p.kind, p.api, **kw)
        if does.shared_access is not None:
            self._smem_access(c, ctx, ptx, loc, facts, does.shared_access)
        if does.untracked:
            op(ir.CALL, "asm")
            w.note_unmodelled(c, "inline PTX on mbarriers/bulk copies: operands not tracked")

    def _global_operands(self, c: Any, ctx: Ctx, p: K.PtxOp, ga: ir.GlobalAccessFacts) -> ir.GlobalAccessFacts:
        """A global load's / atomic's facts with what its operands say: the kernel pointer the
        address points into (`[%1]` of `"l"(&sem[tile])`), and the loaded (old) value bound to
        its output operand as a fresh Var the facts' `result` names (a spin's condition and a
        last-arriver test compare it)."""
        base = None
        ops = self._operands(c)
        if p.addr_operand is not None and p.addr_operand < len(ops):
            node = cexpr.parse_expression(ops[p.addr_operand], ctx.env.has)
            base = self.w.exprs.address_base(node, ctx, c)
        result = None
        if p.out_operand is not None and p.out_operand < len(ops):
            toks = [t for t in ops[p.out_operand] if t not in ("(", ")")]
            if len(toks) == 1 and (toks[0][:1].isalpha() or toks[0][:1] == "_") and ctx.env.has(toks[0]):
                v = E.opaque(ga.text or p.api)
                if not ctx.env.assign(toks[0], v):
                    ctx.env.define(toks[0], v)
                result = v.name
        return replace(ga, base=base, result=result)

    def _operand_value(self, c: Any, ctx: Ctx, k: int) -> Any:
        ops = self._operands(c)
        if k >= len(ops):
            return None
        node = cexpr.parse_expression(ops[k], ctx.env.has)
        return self.w.ev(node, replace(ctx, dry=True), c)

    def _cp_async_operands(self, c: Any, ctx: Ctx, p: K.PtxOp) -> dict[str, Any]:
        """The Op fields of a cp.async / wait_group whose operands say what they do: the copy's
        destination buffer (its shared address built by `__cvta_generic_to_shared`) and size,
        the wait's count."""
        out: dict[str, Any] = {}
        if p.kind == ir.CP_ASYNC:
            out["bytes"] = E.Const(p.bytes) if p.bytes is not None else E.opaque("cp.async size")
            addr = self._operand_value(c, ctx, p.addr_operand) if p.addr_operand is not None else None
            model = self.w.model
            names = (
                sorted({v.name for v in addr.free_vars() if v.name in model.smem_addresses})
                if isinstance(addr, Expr) and model is not None
                else []
            )
            if len(names) == 1 and model is not None:
                out["buffer"] = model.smem_addresses[names[0]].buffer
            else:
                ops = self._operands(c)
                k = p.addr_operand or 0
                text = " ".join(ops[k]) if k < len(ops) else "?"
                out["copy"] = replace(p.copy or ir.CopyFacts("ptx"), dst_unknown=text)
        else:
            n: Any = p.count
            if n is None and p.count_operand is not None:
                v = self._operand_value(c, ctx, p.count_operand)
                n = v.eval({}) if isinstance(v, Expr) else None
            out["count"] = E.Const(n) if isinstance(n, int) and not isinstance(n, bool) else E.opaque("wait_group N")
        return out

    def smem_address(self, node: cexpr.Node, ctx: Ctx, cursor: Any) -> Expr | None:
        """`__cvta_generic_to_shared(&tile)` / `(&tile.data[i])`: a Var standing for the tile's
        shared address (plus i elements), recorded in `model.smem_addresses`."""
        w = self.w
        extra: Expr = E.Const(0)
        while True:
            match node:
                case cexpr.Un("&", inner) | cexpr.Cast(_, inner):
                    node = inner
                case cexpr.Index(cexpr.Member(obj, "data"), index):
                    i = w.ev(index, replace(ctx, dry=True), cursor)
                    extra = E.binop("+", extra, i if isinstance(i, Expr) else E.opaque("data index"))
                    node = obj
                case cexpr.Member(obj, "data"):
                    node = obj
                case _:
                    break
        v = w.ev(node, replace(ctx, dry=True), cursor)
        model = w.model
        if isinstance(v, Obj) and v.kind == "shared" and v.ref.index and model is not None and extra == E.Const(0):
            # an element of a `__shared__ T x[...]` array: its address names the element (the
            # name carries the index's variables: loops of a dry pass print the same)
            name = f"smem_addr({v.ref})#{zlib.crc32(repr(v.ref.index).encode()):08x}"
            if name not in model.smem_addresses:
                model.smem_addresses[name] = ir.SmemAddress(
                    name, v.ref, v.type, loc_of(cursor, w.filename) if cursor is not None else model.location
                )
            return E.Var(name, E.PARAM)
        if not isinstance(v, Obj) or v.kind != "buffer" or model is None:
            return None
        name = f"smem_addr({v.ref})"
        if name not in model.smem_addresses:
            model.smem_addresses[name] = ir.SmemAddress(
                name, v.ref, v.type, loc_of(cursor, w.filename) if cursor is not None else model.location
            )
        a: Expr = E.Var(name, E.PARAM)
        if extra != E.Const(0):
            db = v.type.dtype_bytes if v.type is not None and v.type.dtype_bytes else None
            a = E.binop("+", a, E.binop("*", extra, E.Const(db)) if db else E.opaque("data offset"))
        return a

    def _ptx_value(self, c: Any, ctx: Ctx, text: str | None) -> Expr | None:
        """An instruction operand of the asm statement at `c` as an Expr: an integer literal, or
        `%N`, the N-th operand expression of the statement; None when neither evaluates."""
        if text is None:
            return None
        if re.fullmatch(r"\d+", text):
            return E.Const(int(text))
        mm = re.fullmatch(r"%(\d+)", text)
        if not mm:
            return None
        ops = self._operands(c)
        if not ops or int(mm.group(1)) >= len(ops):
            return None
        node = cexpr.parse_expression(ops[int(mm.group(1))], ctx.env.has)
        v = self.w.ev(node, replace(ctx, dry=True), c)
        return v if isinstance(v, Expr) else None

    @staticmethod
    def _operands(c: Any) -> list[list[str]]:
        """The token lists of the asm statement's operand expressions (outputs, then inputs),
        numbered as `%N` counts them; [] without operands."""
        toks = tokens_of(c)
        colon = next((k for k, t in enumerate(toks) if t in (":", "::")), None)
        if colon is None:
            return []
        ops, i = [], colon
        while i < len(toks):
            t = toks[i]
            if t.startswith('"') and i + 1 < len(toks) and toks[i + 1] == "(":
                depth, j = 0, i + 1
                while j < len(toks):
                    depth += toks[j] == "("
                    depth -= toks[j] == ")"
                    if depth == 0:
                        break
                    j += 1
                ops.append(toks[i + 2 : j])
                i = j
            i += 1
        return ops

    def _smem_access(self, c: Any, ctx: Ctx, ptx: str, loc: Location, facts: ir.AsmFacts, kind: str) -> None:
        """Raw `st.shared` / `ld.shared` / `ldmatrix` / `stmatrix`: an SMEM_ACCESS op whose
        access facts' `addr` is the address operand (`[%N]`) as an Expr."""
        ops = self._operands(c)
        if not ops:
            return
        mm = re.search(r"\[\s*%(\d+)\s*(?:\+\s*(\d+))?\s*\]", ptx)
        if not mm or int(mm.group(1)) >= len(ops):
            return
        node = cexpr.parse_expression(ops[int(mm.group(1))], ctx.env.has)
        addr = self.w.ev(node, replace(ctx, dry=True), c)
        if not isinstance(addr, Expr):
            return
        if mm.group(2):
            addr = E.binop("+", addr, E.Const(int(mm.group(2))))
        self.w.emit(
            ir.Op(
                ir.SMEM_ACCESS,
                kind,
                loc,
                ctx.guard,
                ctx.loops,
                asm=facts,
                access=ir.AccessFacts("read" if kind.startswith("ld") else "write", via="asm", addr=addr),
            ),
            ctx,
        )
