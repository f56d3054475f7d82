"""Inline PTX: the ops of asm statements (classified by `knowledge.ops.ptx_ops`) and the shared
addresses their operands are built from."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import clang.cindex as ci

from ..findings import Location
from ..knowledge import ops as K
from ..model import expr as E
from ..model import ir
from ..model.descriptors import descriptor_start
from ..model.expr import Expr
from . import cexpr
from .lexer import lex
from .value_types import Obj
from .walk_arith import _ArrVal
from .macros import ASM_WORDS, asm_of_macro
from .walk_env import Ctx, loc_of, tokens_of
from .walker_core import AsmWalker

CK = ci.CursorKind


class AsmLowering:
    """The walker's part for inline PTX: the ops of mbarrier/fence/shared-memory instructions
    written as asm statements, and the shared addresses their operands are built from."""

    def __init__(self, walker: AsmWalker):
        self.w = walker
        # Var name -> (the `__shared__` array or scalar, its dims, its element bytes): the shared
        # address `__cvta_generic_to_shared(x)` of a whole array or scalar that is not a TK tile,
        # where raw PTX may keep its mbarriers (`[x + 8*i]`)
        self.bases: dict[str, tuple[ir.Ref, tuple[Expr, ...], int | None]] = {}
        # `__shared__` array (not a TK type) -> its declared dims: the dims of the mbarrier an
        # element's address (`__cvta_generic_to_shared(&bars[i])`) names
        self.shared_dims: dict[str, tuple[Expr, ...]] = {}
        # the Var a `mapa.shared::cluster` output holds -> (the local shared address it maps,
        # the CTA of the cluster it maps it into)
        self.mapped: dict[str, tuple[Expr, Expr]] = {}
        # the `__shared__` object of each `smem_base(...)` Var of `bases` (its type, volatility)
        self.base_objs: dict[str, Obj] = {}
        # asm statements (by their place in the source) a caller's loop is polling now: the probe
        # of a bool-returning try-wait helper (`poll_helpers.polled_probe`) is walked as the wait
        self._polled: set[tuple[str, int]] = set()
        # the operand expressions of the wrapper call being lowered (walk_instruction), None
        # while an asm statement is walked (its operands are read from its tokens)
        self._synthetic: list[cexpr.Node] | None = None
        self._api: str | None = None
        # the tokens of each asm statement (by its place); a macro's expansion read once
        self._tokens_memo: dict[tuple[str, int], list[str] | None] = {}
        self._from_macro: set[tuple[str, int]] = set()  # the places of asm statements macros wrote
        # r12-token: the sites (place, callers, loops) of state-token arrivals on each barrier,
        # the token waits emitted on it, and the barriers whose tokens are not followed
        self._token_sites: dict[str, set[tuple]] = {}
        self._token_waits: dict[str, list[ir.Op]] = {}
        self._token_several: set[str] = set()

    @contextmanager
    def polling(self, asm: Any) -> Iterator[None]:
        """While the caller's loop that polls the probe `asm` is walked, `asm` is a wait (as a
        try_wait that branches back on itself is)."""
        key = _place(asm)
        added = key not in self._polled
        self._polled.add(key)
        try:
            yield
        finally:
            if added:
                self._polled.discard(key)

    def walk(self, c: Any, ctx: Ctx, looped: bool = False) -> None:
        """The ops of the asm statement at cursor `c`; `looped`: a C++ loop repeats it until its
        `try_wait` succeeds (the wait is the loop, as in a try_wait that branches back)."""
        looped = looped or _place(c) in self._polled
        toks = self._asm_tokens(c)
        m = self.w.model
        before = len(m.ops) if m is not None else 0
        try:
            self._walk_tokens(c, ctx, toks, looped)
        finally:
            if m is not None and not ctx.dry and _place(c) in self._from_macro and len(m.ops) > before:
                # a coverage site of its own where it made ops or could not be read (the census
                # reads text, and this statement's text is the macro's)
                loc = loc_of(c, self.w.filename)
                if loc not in m.macro_asm:
                    m.macro_asm.append(loc)

    def _walk_tokens(self, c: Any, ctx: Ctx, toks: list[str] | None, looped: bool) -> None:
        if toks is None:
            # an asm statement written by a macro tkcheck could not expand: its instruction is
            # unknown, so any barrier its operands name is used in a way no account may claim
            self.w.note_unmodelled(c, "asm statement in a macro expansion tkcheck could not read")
            if not ctx.dry and self.w.model is not None:
                # its operands' barrier where they name one, else a barrier not known: no account
                # of the kernel is claimed (as a helper past the inlining bound)
                dry = replace(ctx, dry=True)
                vals = [
                    self.w.ev(cexpr.parse_expression(tokens_of(ch), ctx.env.has), dry, ch) for ch in c.get_children()
                ]
                before = len(self.w.model.ops)
                self.w.stmts.unmodelled_use(vals, ctx, c, "asm")
                if len(self.w.model.ops) == before:
                    loc = loc_of(c, self.w.filename)
                    why = "asm statement of a macro not read"
                    self.w.emit(ir.Op(ir.CALL, "asm", loc, ctx.guard, ctx.loops, barrier_unknown=why), ctx)
            return
        ptx = " ".join(re.findall(r'"((?:[^"\\]|\\.)*)"', " ".join(toks)))
        self._walk_ptx(c, ctx, ptx, looped)

    def _asm_tokens(self, c: Any) -> list[str] | None:
        """The tokens of the asm statement at `c`, from `asm` to its closing parenthesis. A
        statement a macro wrote (`#define TMA_LOAD(d, m, b) asm volatile("cp.async.bulk..." ::
        ...)`) has the macro's invocation as its extent: its tokens are the definition's body with
        the invocation's arguments put in for the parameters (through macros that expand to
        macros). None when that cannot be read exactly (`#`, `##`, `__VA_ARGS__`, several asm
        statements in one expansion, an unknown macro)."""
        key = _place(c)
        if key not in self._tokens_memo:
            toks = tokens_of(c)
            if toks and toks[0] in ASM_WORDS:
                self._tokens_memo[key] = toks
            else:
                self._from_macro.add(key)
                self._tokens_memo[key] = asm_of_macro(toks, self.w.mb.macros, self.w.mb.fn_macros)
        return self._tokens_memo[key]

    def walk_instruction(
        self, c: Any, ctx: Ctx, ptx: str, operands: list[cexpr.Node], api: str, looped: bool = False
    ) -> None:
        """The ops of one PTX instruction written by a wrapper call at cursor `c` (libcu++'s
        `cuda::ptx::` functions, frontend/walk_ptxns.py) rather than an asm statement: `%N` of
        `ptx` is `operands[N]`, every one an input. The instruction has exactly the semantics
        it has in inline PTX; its ops are named `api` (the wrapper, as the user spelled the call)."""
        saved = self._synthetic, self._api
        self._synthetic, self._api = list(operands), api
        try:
            self._walk_ptx(c, ctx, ptx, looped)
        finally:
            self._synthetic, self._api = saved

    def _walk_ptx(self, c: Any, ctx: Ctx, ptx: str, looped: bool) -> None:
        w = self.w
        loc = loc_of(c, w.filename)
        self._outputs(c, ctx, ptx)
        if ctx.dry:
            return
        ptx = self._immediates(c, ctx, ptx)
        facts = K.classify_ptx(ptx[:200])

        def op(kind: str, api: str, **kw: Any) -> None:
            w.emit(ir.Op(kind, self._api or api, loc, ctx.guard, ctx.loops, asm=facts, **kw), ctx)

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
        for mode, space, atext in K.ptx_tensormap_accesses(ptx):
            # round 10: a patch of a map (`tensormap.replace`) writes the whole map object, the
            # publication's copy (`tensormap.cp_fenceproxy`) reads all of the shared one; before
            # the collective's op, which orders no lane's memory before another's
            self._tensormap_access(c, ctx, loc, facts, mode, space, atext)
        for instr, mtext in K.ptx_warp_collectives(ptx):
            # a warp collective and its member mask (checks/warp_collectives.py); bar.warp.sync
            # is `__syncwarp(mask)`, a SYNC of the mask's lanes
            mask = self._mask_value(c, ctx, mtext)
            if instr == "bar.warp.sync":
                op(ir.SYNC, instr, sync=ir.SyncFacts("warp", mask))
            else:
                op(
                    ir.WARP_COLL,
                    instr,
                    warp_coll=ir.WarpCollFacts(instr, mask, effect_unmodelled=instr in K.ALIGNED_UNMODELLED),
                )
        for what, atext in K.ptx_tensormap_orders(ptx):
            # the tensormap proxy's release (cp_fenceproxy) / acquire fence at a global map
            addr = self._ptx_value(c, ctx, atext) if atext is not None else None
            op(ir.FENCE, what, fence=ir.FenceFacts(what, address=addr if isinstance(addr, Expr) else None))
        asyncs, understood = K.ptx_async_ops(ptx, looped=looped)
        for a in asyncs:
            self._async_op(c, ctx, a, loc, facts)
        remote = self._dsmem_accesses(c, ctx, ptx, loc, facts)
        self._ordered_shared(c, ctx, ptx)
        if does.shared_access is not None and not remote:
            self._smem_access(c, ctx, ptx, loc, facts, does.shared_access)
        blind = [a for a in asyncs if a.unmodelled]
        if blind:
            # i7model: each instruction the table does not model on a barrier it names is an
            # unmodelled use of that barrier (emitted by _async_op): coverage, never a pass
            w.note_unmodelled(c, f"`{blind[0].api}` on an mbarrier: not modelled (its account is unknown)")
        elif (does.untracked or facts.mbarrier) and not understood:
            op(ir.CALL, "asm")
            w.note_unmodelled(c, "inline PTX on mbarriers/bulk copies: operands not tracked")

    def _global_operands(self, c: Any, ctx: Ctx, p: K.PtxOp, ga: ir.GlobalAccessFacts) -> ir.GlobalAccessFacts:
        """A global load's / atomic's facts with what its operands say: the kernel pointer the
        address points into (`[%1]` of `"l"(&sem[tile])`), and the loaded (old) value bound to
        its output operand as a fresh Var the facts' `result` names (a spin's condition and a
        last-arriver test compare it)."""
        base = index = operand = None
        ops = self._operands(c)
        if p.addr_operand is not None and p.addr_operand < len(ops):
            node = self._operand_node(c, ctx, p.addr_operand)
            base = self.w.exprs.address_base(node, ctx, c)
            if base is not None:
                # `[%0]` of `"l"(&flag[b])`: the element of the kernel pointer it names (an
                # epoch flag's owner, checks/epochs.py)
                index = self.w.exprs.element_index(self._ptx_value(c, ctx, f"%{p.addr_operand}"))
        if p.value_operand is not None:
            operand = self._ptx_value(c, ctx, f"%{p.value_operand}")
        result = None
        if p.out_operand is not None and p.out_operand < len(ops):
            toks = [t for t in ops[p.out_operand] if t not in ("(", ")")]
            if len(toks) == 1 and (toks[0][:1].isalpha() or toks[0][:1] == "_") and ctx.env.has(toks[0]):
                v = E.opaque(ga.text or p.api)
                if not ctx.env.assign(toks[0], v):
                    ctx.env.define(toks[0], v)
                result = v.name
        operands = ga.operands
        if p.value_operand is not None and p.value_operand < len(ops):
            # the value a flag store writes (a spin on the word waits for one of them)
            stored = self._ptx_value(c, ctx, f"%{p.value_operand}")
            if stored is not None:
                operands = (stored,)
        return replace(
            ga,
            base=base,
            result=result,
            index=index,
            operands=operands,
            operand=operand if ga.operand is None else ga.operand,
        )

    def _outputs(self, c: Any, ctx: Ctx, ptx: str) -> None:
        """The variables the asm statement writes (`"=r"(x)`, `"+r"(x)`) take what it leaves in
        them: the election of `elect.sync` (lane 0 of the warp, as TK's elect_one_sync is
        modelled) where the output is the elected predicate or set to 1 under it from 0, an
        unknown value otherwise (never the value they held before)."""
        cons = self._constraints(c)
        if not any(k.startswith(("=", "+")) for k in cons):
            return
        ops = self._operands(c)
        elected = self._elected_outputs(ptx)
        tokens = self._arrival_tokens(c, ctx, ptx)
        flat = ptx.replace("\\n", " ").replace("\\t", " ")
        # `mov.u32 %k, %%cluster_ctarank;`: the CTA's rank in its cluster
        ranks = {int(m.group(1)) for m in re.finditer(r"\bmov\.[us]32\s+%(\d+)\s*,\s*%%cluster_ctarank\s*;", flat)}
        # `mapa.shared::cluster.u32 %k, %a, %r;`: address a of this CTA's shared memory in CTA r
        maps = {
            int(m.group(1)): (m.group(2), m.group(3))
            for m in re.finditer(r"\bmapa\.shared::cluster\.u32\s+%(\d+)\s*,\s*(%\d+)\s*,\s*(%\d+|\d+)\s*;", flat)
        }
        for k, (con, toks) in enumerate(zip(cons, ops)):
            if not con.startswith(("=", "+")) or len(toks) != 1 or not re.fullmatch(r"[A-Za-z_]\w*", toks[0]):
                continue
            name = toks[0]
            old = ctx.env.lookup(name)
            if not isinstance(old, Expr) and old is not None:
                continue  # not a plain value (an object the walk tracks)
            value: Expr = E.opaque(f"asm output {name}")
            if k in tokens:
                value = tokens[k]
            elif k in elected and (con.startswith("=") or (isinstance(old, Expr) and old.eval({}) == 0)):
                value = E.binop("==", E.binop("%", E.TID, E.Const(32)), E.Const(self._elected_lane(c, ctx, ptx)))
            elif k in ranks and len(ptx.split(";")) <= 2:
                value = E.Var("cta_rank", E.PARAM)
            elif k in maps and len(ptx.split(";")) <= 2:
                a, r = (self._ptx_value(c, ctx, t) for t in maps[k])
                if a is not None and r is not None and isinstance(value, E.Var):
                    self.mapped[value.name] = (a, r)
            if not ctx.env.assign(name, value):
                ctx.env.define(name, value)

    def _arrival_tokens(self, c: Any, ctx: Ctx, ptx: str) -> dict[int, Expr]:
        """r12-token: the outputs that receive the state token of an `mbarrier.arrive` (`%k` of
        `mbarrier.arrive.b64 %k, [b]`), each the parity of the phase the thread arrives in, and
        the thread's arrival count on the barrier advanced. That parity is the thread's count of
        its earlier arrivals on the barrier, mod 2 (`<bar>.ptx_arrivals`, set to 0 where the
        `__shared__` scalar is declared and carried by loops like any variable): exact while each
        phase gets one arrival of each participant, which the barrier account checks.
        Where a thread arrives at two sites of one loop body (two phases a round), on an element
        of an array of barriers, or on a barrier whose count is not followed, the token is
        unknown: its waits stay undecided (as libcu++'s `cuda::barrier` tokens, walk_libcu)."""
        out: dict[int, Expr] = {}
        asyncs, _ = K.ptx_async_ops(ptx)
        for a in asyncs:
            if a.kind != ir.MBAR_ARRIVE or a.token is None or a.barrier is None:
                continue
            k = int(a.token.lstrip("%"))
            addr = self._addr_value(c, ctx, a.barrier)
            ref = self.mbarrier_at(addr, c) if addr is not None else None
            key = f"{ref.name}.ptx_arrivals" if ref is not None and not ref.index else None
            n = ctx.env.lookup(key) if key is not None else None
            if ref is None or key is None or not isinstance(n, Expr):
                out[k] = E.opaque("mbarrier token")
                continue
            if not ctx.dry:
                sites = self._token_sites.setdefault(ref.name, set())
                sites.add((_place(c), ctx.callers, ctx.loops))
                if ctx.loops and sum(1 for (_, _, lp) in sites if lp == ctx.loops) > 1:
                    self._token_several.add(ref.name)
                    for w in self._token_waits.get(ref.name, []):
                        w.parity = E.opaque("mbarrier token")
            ctx.env.assign(key, E.binop("+", n, E.Const(1)))
            out[k] = E.opaque("mbarrier token") if ref.name in self._token_several else E.binop("%", n, E.Const(2))
        return out

    def _elected_lane(self, c: Any, ctx: Ctx, ptx: str) -> int:
        """The lane `elect.sync` elects: the lowest lane of its member mask when the mask is a
        constant (r16-expecttx: `elect.sync _|P, 0xffff0000` run by the upper half elects lane
        16); lane 0 otherwise, as TK's elect_one_sync is modelled."""
        mm = re.search(
            r"\belect\.sync\s+[^|;]*\|\s*%*\w+\s*,\s*([^;]+?)\s*;", ptx.replace("\\n", " ").replace("\\t", " ")
        )
        mask = self._mask_value(c, ctx, mm.group(1)) if mm else None
        v = mask.eval({}) if isinstance(mask, Expr) else None
        if isinstance(v, int) and not isinstance(v, bool) and v & 0xFFFFFFFF:
            v &= 0xFFFFFFFF
            return (v & -v).bit_length() - 1
        return 0

    @staticmethod
    def _elected_outputs(ptx: str) -> set[int]:
        """The operands an `elect.sync` statement sets to its election: `elect.sync _|%k, mask`
        (k a predicate output), `elect.sync _|P, mask; @P mov.* %k, 1` or `... selp.* %k, 1, 0, P`."""
        out: set[int] = set()
        preds: set[str] = set()
        text = ptx.replace("\\n", " ").replace("\\t", " ")
        for mm in re.finditer(r"\belect\.sync\s+[^|;]*\|\s*(%*\w+)", text):
            p = mm.group(1)
            if re.fullmatch(r"%\d+", p):
                out.add(int(p[1:]))
            else:
                preds.add(p.lstrip("%"))
        for mm in re.finditer(r"@(%*\w+)\s+mov\.[a-z0-9.]+\s+%(\d+)\s*,\s*1\s*;", text):
            if mm.group(1).lstrip("%") in preds:
                out.add(int(mm.group(2)))
        # r16-expecttx: `selp.u32 %k, 1, 0, P;` (TK's elect_leader, cute's elect_one_sync): 1 on
        # the elected lane, 0 on the others
        for mm in re.finditer(r"\bselp\.[a-z0-9]+\s+%(\d+)\s*,\s*1\s*,\s*0\s*,\s*(%*\w+)\s*;", text):
            if mm.group(2).lstrip("%") in preds:
                out.add(int(mm.group(1)))
        return out

    def _immediates(self, c: Any, ctx: Ctx, ptx: str) -> str:
        """The PTX with each `%N` of an immediate operand (`"n"(CTA_GROUP)`) replaced by its
        value, as nvcc writes it into the instruction (`.cta_group::%2` -> `.cta_group::1`)."""
        cons = self._constraints(c)
        if "n" not in cons:
            return ptx

        def value(mm: re.Match) -> str:
            k = int(mm.group(2))
            if k >= len(cons) or cons[k] != "n":
                return mm.group(0)
            v = self._ptx_value(c, ctx, f"%{k}")
            n = v.eval({}) if isinstance(v, Expr) else None
            return mm.group(1) + str(n) if isinstance(n, int) and not isinstance(n, bool) else mm.group(0)

        return re.sub(r"(^|[^%])%(\d+)", value, ptx)

    def _async_op(self, c: Any, ctx: Ctx, a: K.PtxAsyncOp, loc: Location, facts: ir.AsmFacts) -> None:
        """The model op of one mbarrier / bulk-copy / tcgen05 / wgmma instruction, its operands
        evaluated: the mbarrier its address names, the counts, bytes and parity."""
        w = self.w
        op = ir.Op(a.kind, self._api or a.api, loc, ctx.guard, ctx.loops, asm=facts)
        remote = False
        mapped_cta: Expr | None = None
        if a.barrier is not None:
            addr = self._addr_value(c, ctx, a.barrier)
            masked: list[Expr] = []

            def unmask(x: Expr) -> Expr | None:
                # `addr & 0xFEFFFFFF` (also of the base, then offset): the same barrier in another
                # CTA of the cluster (its shared::cluster address): the barrier is known, the CTA
                # is not followed
                if isinstance(x, E.Bin) and x.op == "&" and isinstance(x.b, E.Const):
                    masked.append(x)
                    return x.a
                return None

            cta = None
            if isinstance(addr, E.Var) and addr.name in self.mapped:
                # an address `mapa` mapped into CTA r of the cluster: r's copy of the barrier
                addr, cta = self.mapped[addr.name]
            if addr is not None:
                addr = E.rewrite(addr, unmask)
                remote = bool(masked)
            ref = self.mbarrier_at(addr, c) if addr is not None else None
            if ref is not None:
                op.barrier = ref
                mapped_cta = cta
            else:
                op.barrier_unknown = self._operand_text(c, a.barrier)
        if a.unmodelled:
            # an instruction the model does not know on this barrier (ptx_async_ops): it may
            # arrive, complete bytes or re-arm; unresolved barrier: barrier_unknown (every account)
            op.unmodelled_barrier_use = True
        if a.buffer is not None and a.kind in (ir.TMA_LOAD, ir.TMA_STORE):
            addr = self._addr_value(c, ctx, a.buffer)
            model = w.model
            names = (
                sorted({v.name for v in addr.free_vars() if v.name in model.smem_addresses})
                if isinstance(addr, Expr) and model is not None
                else []
            )
            if len(names) == 1 and model is not None:
                op.buffer = model.smem_addresses[names[0]].buffer
            elif not names and a.kind == ir.TMA_LOAD and isinstance(addr, Expr):
                op.buffer = self._region_stage(addr)
            elif not names and a.kind == ir.TMA_STORE and isinstance(addr, Expr):
                op.buffer = self._store_source(addr)
        if a.kind == ir.TMA_LOAD and a.mbar is not None and a.mbar.remote_store and a.buffer is not None:
            # st.async: the element of the (peer) CTA's array its mapped address names; the
            # CTA is the mapped barrier's (checked equal below, or the delivery is unknown)
            addr = self._addr_value(c, ctx, a.buffer)
            el = self._mapped_element(addr) if addr is not None else None
            op.buffer = el[0] if el is not None else None
            if el is not None:
                # round 10: its data is a write of that element in that CTA's shared memory, a
                # memory event like a `map_shared_rank` store (happens_before._dsmem); the bytes'
                # complete_tx on the barrier is relaxed (PTX), no release of the writer's own ops
                w.emit(
                    ir.Op(
                        ir.SMEM_ACCESS,
                        self._api or a.api,
                        loc,
                        ctx.guard,
                        ctx.loops,
                        asm=facts,
                        buffer=el[0],
                        access=ir.AccessFacts("write", via="element", cta=el[1], complete_tx=True),
                    ),
                    ctx,
                )
            if el is None or mapped_cta is None or el[1] != mapped_cta:
                if el is not None and mapped_cta is not None and op.barrier is not None:
                    # both mapped, to CTAs not shown equal: kept for the CTA question (PTX: the
                    # destination and the mbarrier of st.async must be in the same CTA)
                    a = replace(a, mbar=replace(a.mbar, store_cta=el[1], store_bar=op.barrier))
                op.barrier, op.barrier_unknown = None, self._operand_text(c, a.barrier or "?")
                op.unmodelled_barrier_use = True
                w.note_unmodelled(c, f"`{a.api}`: its address or barrier not mapped to one CTA's `__shared__` element")
        if a.kind in (ir.TMA_LOAD, ir.TMA_STORE):
            op.transfer = ir.TransferFacts()
            if a.tensor_map is not None and not self._grid_constant_map(c, ctx, a.tensor_map):
                # a map in global memory (tensormap proxy): the device may patch and publish it
                # (`tensormap.replace`, `tensormap.cp_fenceproxy`), and the copy's descriptor read
                # must be ordered after that in the tensormap proxy -- not modelled: the copy's
                # site stays unmodelled (coverage), never taken as ordered
                mv = self._ptx_value(c, ctx, a.tensor_map)
                op.transfer = ir.TransferFacts(map_unordered=True, map_addr=mv if isinstance(mv, Expr) else None)
                w.note_unmodelled(
                    c,
                    f"`{a.api}` through a tensor map not a `__grid_constant__` parameter "
                    f"(`{self._operand_text(c, a.tensor_map)}`): its descriptor read's order after the "
                    "map's writes (tensormap proxy) not modelled",
                )

        def num(text: str | None, what: str) -> Expr:
            v = self._ptx_value(c, ctx, text) if text is not None else None
            return v if isinstance(v, Expr) else E.opaque(what)

        if a.kind == ir.MBAR_INIT:
            op.count = num(a.count, "count")
        elif a.kind == ir.MBAR_ARRIVE:
            op.count = num(a.count, "count")
        elif a.kind == ir.MBAR_EXPECT:
            op.bytes = num(a.bytes, "bytes")
        elif a.kind == ir.MBAR_WAIT and a.token is not None:
            # r12-token: the wait for the phase of the arrival that produced the token (its
            # parity, _arrival_tokens)
            op.parity = num(a.token, "mbarrier token")
            if op.barrier is not None:
                if op.barrier.name in self._token_several:
                    op.parity = E.opaque("mbarrier token")
                self._token_waits.setdefault(op.barrier.name, []).append(op)
        elif a.kind == ir.MBAR_WAIT:
            op.parity = num(a.parity, "parity")
        elif a.kind == ir.TMA_LOAD:
            # a tensor copy's size is the tensor map's box, which the kernel does not show: the
            # host code that encodes the map passed to this parameter does (tensor_maps.py)
            op.bytes = num(a.bytes, "tensor map box bytes")
            if a.tensor_map is not None:
                m = self._ptx_value(c, ctx, a.tensor_map)
                box = w.tensor_boxes.get(m.name) if isinstance(m, E.Var) and m.kind == E.PARAM else None
                if box is not None:
                    op.bytes = E.Const(box)
        elif a.kind == ir.TMA_STORE:
            op.bytes = E.opaque("bulk store bytes")
        elif a.kind in (ir.TMA_STORE_WAIT, ir.MMA_WAIT):
            op.count = num(a.count, "wait_group N")
            op.read_only = a.read_only
        if a.mbar is not None:
            mask = self._ptx_value(c, ctx, a.mask) if a.mask is not None else None
            op.mbar = replace(a.mbar, mask=mask if isinstance(mask, Expr) else None)
        if remote:
            op.mbar = replace(op.mbar or ir.BarrierFacts(), remote=True)
        if mapped_cta is not None:
            op.mbar = replace(op.mbar or ir.BarrierFacts(), cta=mapped_cta)
        if a.fence is not None:
            op.fence = a.fence
        if a.tmem is not None:
            cols = self._ptx_value(c, ctx, a.cols) if a.cols is not None else None
            n = cols.eval({}) if isinstance(cols, Expr) else None
            op.tmem = ir.TmemFacts(a.tmem, cols=n if isinstance(n, int) and not isinstance(n, bool) else None)
            if a.tmem in ("alloc", "dealloc", "load", "store", "wait_ld", "wait_st"):
                # .sync.aligned: every thread of the warp
                op.scope, op.group_warps, op.issuers_per_group = "warp", 1, 0
        if a.mma is not None:
            op.mma = a.mma
            if a.mma.family == "wgmma" and a.kind == ir.MMA:
                acc = self._wgmma_accumulator(c, ctx)
                if acc is not None:
                    op.operands = (acc[0],)
                    op.mma = replace(a.mma, acc=ir.MmaOperand("regtile", acc[1]))
                else:
                    w.note_unmodelled(c, "wgmma.mma_async: accumulator operands not followed")
                da, db = self._wgmma_descriptors(c, ctx, a)
                op.mma = replace(op.mma, a=da, b=db)
        if a.sync is not None:
            op.sync = a.sync
        if a.warpgroup:
            op.scope, op.group_warps, op.issuers_per_group = "warpgroup", 4, 0
        w.emit(op, ctx)

    def _grid_constant_map(self, c: Any, ctx: Ctx, text: str) -> bool:
        """The tensor-map operand `text` of a raw tensor copy is (the address of) a kernel
        parameter of type `CUtensorMap` (a `__grid_constant__` map the host encoded: the device
        cannot have patched it)."""
        m = self._ptx_value(c, ctx, text)
        return isinstance(m, E.Var) and m.kind == E.PARAM and m.name in self.w.tensor_map_params

    def _wgmma_accumulator(self, c: Any, ctx: Ctx) -> tuple[ir.Ref, ir.TileType | None] | None:
        """The accumulator of a raw `wgmma.mma_async`: the local register array its `"+f"` /
        `"=f"` operands are elements of (`d[0]` ... `d[31]` of `float (&d)[32]` bound to the
        caller's `acc0`), as a Ref with the index prefix every operand shares (`acc[m]` for
        `"+f"(acc[m][j][0])` ...). None: an operand is not such an element, or two arrays."""
        cons = self._constraints(c)
        refs: list[ir.Ref] = []
        etype = None
        for k, con in enumerate(cons):
            if con not in ("+f", "=f"):
                continue
            v = self._operand_value(c, ctx, k)
            if not isinstance(v, Obj) or v.kind != "local" or not v.ref.index:
                return None
            refs.append(v.ref)
            etype = v.type
        if not refs or len({r.name for r in refs}) != 1:
            return None
        prefix: list[Expr] = []
        for ixs in zip(*(r.index for r in refs)):
            if any(x != ixs[0] for x in ixs[1:]):
                break
            prefix.append(ixs[0])
        if len(prefix) == len(refs[0].index) and len(refs) > 1:
            return None  # every operand names one element: not an accumulator fragment
        return ir.Ref(refs[0].name, tuple(prefix)), etype

    def _wgmma_descriptors(
        self, c: Any, ctx: Ctx, a: K.PtxAsyncOp
    ) -> tuple[ir.MmaOperand | None, ir.MmaOperand | None]:
        """The A / B operands of a raw `wgmma.mma_async` given as shared-memory descriptors: the
        start address each encodes (`descriptor_start`), as MmaFacts fields. A descriptor whose
        start address is not an encoded shared address (loaded from memory, a field we cannot
        place) is noted unmodelled: its reads are not followed, never taken as none."""
        out: dict[str, ir.MmaOperand] = {}
        for role, text in (("a", a.desc_a), ("b", a.desc_b)):
            if text is None:
                continue
            v = self._ptx_value(c, ctx, text)
            start = descriptor_start(v) if isinstance(v, Expr) else None
            if start is None or start.is_opaque():
                self.w.note_unmodelled(
                    c, f"wgmma.mma_async: the {role.upper()} descriptor's start address not followed"
                )
                continue
            out[role] = ir.MmaOperand("descriptor", address=start)
        return out.get("a"), out.get("b")

    def _region_stage(self, addr: Expr) -> ir.Ref | None:
        """A raw load destination carved from a `__shared__` array by hand (`sB + s * TILE`,
        `sB = base + STAGES * TILE`, `base` the aligned address of `dyn`): the region at that
        constant offset from the array's (aligned) address, indexed by the stage s whose stride is
        the constant TILE. None for any other shape (one term over the array's base, constant
        terms, and exactly one term `s * TILE` whose s moves with a loop)."""
        terms: list[Expr] = []

        def split(e: Expr) -> None:
            if isinstance(e, E.Bin) and e.op == "+":
                split(e.a)
                split(e.b)
            else:
                terms.append(e)

        split(addr)
        anchors = [t for t in terms if any(v.name in self.bases for v in t.free_vars())]
        if len(anchors) != 1 or any(v.kind != E.PARAM for v in anchors[0].free_vars()):
            return None
        offset, stage, stride = 0, None, None
        for t in terms:
            if t is anchors[0]:
                continue
            k = t.eval({})
            if isinstance(k, int) and not isinstance(k, bool):
                offset += k
                continue
            if stage is not None or not (isinstance(t, E.Bin) and t.op == "*"):
                return None
            for x, y in ((t.a, t.b), (t.b, t.a)):
                n = y.eval({})
                if isinstance(n, int) and not isinstance(n, bool) and n > 0 and x.depends_on(E.LOOP):
                    stage, stride = x, n
                    break
            if stage is None or stage.is_opaque():
                return None
        if stage is None or stride is None or not 0 <= offset:
            return None
        base = sorted(v.name for v in anchors[0].free_vars() if v.name in self.bases)[0]
        array = self.bases[base][0].name
        name = f"{array}+{offset}/{stride}"
        if self.w.model is not None:
            self.w.model.regions.setdefault(name, ir.SharedRegion(name, array, anchors[0], offset, stride))
        return ir.Ref(name, (stage,), f"{self.bases[base][0].name} + {offset} + {ir._bare(str(stage))} * {stride}")

    def _store_source(self, addr: Expr) -> ir.Ref | None:
        """What a bulk or tensor store reads, from a source address built on the base of a
        `__shared__` array (`smem_base(x)`: x decayed to its first element): the whole array at
        offset 0 (the store reads from its first element on); for a byte array (dynamic shared
        memory carved by hand), x[d] with d = addr - base, the byte offset, which is the form the
        walk gives a pointer carved from it (`reinterpret_cast<float *>(dyn + d)[i]` is
        dyn[d][i]), so the store's source is a prefix of its writers' elements; for a
        one-dimensional array of wider elements, the element of a constant offset. None for any
        other shape (the store's reads stay unpaired)."""
        bases = sorted({v.name for v in addr.free_vars() if v.name in self.bases})
        if len(bases) != 1:
            return None
        ref, dims, elem = self.bases[bases[0]]
        base = E.Var(bases[0], E.PARAM)
        if addr == base:
            return ref
        d = E.binop("-", addr, base)
        k = d.eval({})
        if elem == 1 and len(dims) <= 1:
            return ir.Ref(ref.name, (E.Const(k) if isinstance(k, int) and not isinstance(k, bool) else d,))
        if elem and len(dims) == 1 and isinstance(k, int) and not isinstance(k, bool) and k >= 0 and k % elem == 0:
            return ir.Ref(ref.name, (E.Const(k // elem),))
        return None

    def _mapped_element(self, addr: Expr) -> tuple[ir.Ref, Expr] | None:
        """The `__shared__` element a `mapa`-mapped address plus a byte offset names, and the CTA
        it was mapped into: `mapa(smem(recv), r) + 4*(t + 256*k)` -> (recv[t + 256*k], r) for a
        one-dimensional array of 4-byte elements (also `mapa(smem(&x[i]), r)` + a multiple of
        its element size). None for any other shape."""
        model = self.w.model
        if model is None:
            return None
        terms: list[tuple[int, Expr]] = []

        def split(e: Expr, sign: int) -> None:
            if isinstance(e, E.Bin) and e.op in ("+", "-"):
                split(e.a, sign)
                split(e.b, sign if e.op == "+" else -sign)
            else:
                terms.append((sign, e))

        split(addr, 1)
        mapped = [(s, t) for s, t in terms if isinstance(t, E.Var) and t.name in self.mapped]
        if len(mapped) != 1 or mapped[0][0] != 1:
            return None
        local, cta = self.mapped[mapped[0][1].name]  # type: ignore[union-attr]
        if not isinstance(local, E.Var):
            return None
        if local.name in self.bases:
            ref, dims, elem = self.bases[local.name]
            if len(dims) != 1 or not elem or ref.index:
                return None
            index: Expr = E.Const(0)
        elif local.name in model.smem_addresses:
            sa = model.smem_addresses[local.name]
            t = sa.tile_type
            if t is None or t.kind != "scalar" or not t.dtype_bytes or not sa.buffer.index:
                return None
            elem = t.dtype_bytes
            ref = ir.Ref(sa.buffer.name, sa.buffer.index[:-1])
            index = sa.buffer.index[-1]
        else:
            return None
        for sgn, term in terms:
            if term is mapped[0][1]:
                continue
            q = _div_by(term, elem)
            if q is None:
                return None
            index = E.binop("+" if sgn > 0 else "-", index, q)
        return ir.Ref(ref.name, ref.index + (index,)), cta

    def _addr_value(self, c: Any, ctx: Ctx, text: str) -> Expr | None:
        """An address operand's inside (`%0`, `%0+8`, `%1 + 16`) as an Expr."""
        mm = re.fullmatch(r"\s*(%\d+|\d+)\s*(?:\+\s*(\d+))?\s*", text)
        if not mm:
            return None
        v = self._ptx_value(c, ctx, mm.group(1))
        if v is None:
            return None
        return E.binop("+", v, E.Const(int(mm.group(2)))) if mm.group(2) else v

    def _operand_text(self, c: Any, text: str) -> str:
        """What the user wrote for an address operand (`mbar_addr` for `%0`), for messages."""
        mm = re.fullmatch(r"\s*%(\d+)\s*(.*)", text)
        ops = self._operands(c)
        if mm and int(mm.group(1)) < len(ops):
            return " ".join(ops[int(mm.group(1))]) + (f" {mm.group(2)}" if mm.group(2) else "")
        return text

    def mbarrier_at(self, addr: Expr, cursor: Any) -> ir.Ref | None:
        """The mbarrier a shared address names: the base address of a `__shared__` array (or
        scalar, or element) plus a constant multiple of 8 bytes, `[mbars + 8*i]` -> mbars[i].
        The barrier is recorded in the model on first use. None: the address is not of that
        shape (another CTA's address through a mask, an address read from memory)."""
        model = self.w.model
        if model is None:
            return None
        terms: list[tuple[int, Expr]] = []

        def split(e: Expr, sign: int) -> None:
            if isinstance(e, E.Bin) and e.op == "+":
                split(e.a, sign)
                split(e.b, sign)
            elif isinstance(e, E.Bin) and e.op == "-":
                split(e.a, sign)
                split(e.b, -sign)
            else:
                terms.append((sign, e))

        split(addr, 1)
        bases = [
            (s, t)
            for s, t in terms
            if isinstance(t, E.Var) and (t.name in self.bases or t.name in model.smem_addresses)
        ]
        if len(bases) != 1 or bases[0][0] != 1:
            return None
        base = bases[0][1]
        assert isinstance(base, E.Var)
        index: Expr = E.Const(0)
        for s, t in terms:
            if t is base:
                continue
            q = _div8(t)
            if q is None:
                return None
            index = E.binop("+" if s > 0 else "-", index, q)
        if base.name in self.bases:
            ref, dims, elem = self.bases[base.name]
        else:
            sa = model.smem_addresses[base.name]
            elem = sa.tile_type.dtype_bytes if sa.tile_type is not None and sa.tile_type.kind == "scalar" else None
            if not sa.buffer.index or elem != 8:
                return None
            ref = ir.Ref(sa.buffer.name, sa.buffer.index[:-1])
            index = E.binop("+", sa.buffer.index[-1], index)
            # an element of an array: the barrier is the array (its declared last dim; a member
            # array of a struct, whose dims are not recorded: slots of unknown number)
            known = self.shared_dims.get(sa.buffer.name)
            dims = known if known and len(known) == len(sa.buffer.index) else (E.opaque("mbarrier slots"),)
        if elem != 8:
            # a byte array carved by hand (dynamic shared memory): its 8-byte slots
            dims = (E.opaque("mbarrier slots"),)
        if ref.name not in model.barriers:
            model.barriers[ref.name] = ir.Barrier(
                ref.name, dims, loc_of(cursor, self.w.filename) if cursor is not None else model.location, "static"
            )
        if not dims and not ref.index:
            return ref if index == E.Const(0) else None
        return ir.Ref(ref.name, ref.index + (index,))

    def _operand_value(self, c: Any, ctx: Ctx, k: int) -> Any:
        ops = self._operands(c)
        if k >= len(ops):
            return None
        return self.w.ev(self._operand_node(c, ctx, k), replace(ctx, dry=True), c)

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
        if (
            isinstance(v, _ArrVal)
            and isinstance(v.obj, Obj)
            and v.obj.kind == "shared"
            and v.obj.ref.index
            and model is not None
            and extra == E.Const(0)
        ):
            # a row of a multi-dimensional `__shared__` array (`out_s[b]` of `float out_s[2][CH]`,
            # decaying to its first element): a bulk copy's source or destination is that row
            row = v.obj.ref
            name = f"smem_addr({row})#{zlib.crc32(repr(row.index).encode()):08x}"
            if name not in model.smem_addresses:
                model.smem_addresses[name] = ir.SmemAddress(
                    name, row, v.obj.type, loc_of(cursor, w.filename) if cursor is not None else model.location
                )
            return E.Var(name, E.PARAM)
        base = v.obj if isinstance(v, _ArrVal) and isinstance(v.obj, Obj) else v
        if (
            isinstance(base, Obj)
            and base.kind == "shared"
            and not base.ref.index
            and model is not None
            and extra == E.Const(0)
        ):
            # a whole `__shared__` array (`mbars`, decaying to its first element) or a scalar
            # (`&bar`) that is not a TK tile: its base address, where raw PTX may address mbarriers
            dims = tuple(d if isinstance(d, Expr) else E.opaque("dim") for d in v.dims) if v is not base else ()
            t = base.type
            elem = t.dtype_bytes if t is not None and t.kind == "scalar" else None
            name = f"smem_base({base.ref})"
            self.bases[name] = (base.ref, dims, elem)
            self.base_objs[name] = base
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

    def _mask_value(self, c: Any, ctx: Ctx, text: str | None) -> Expr | None:
        """A member mask operand: a hexadecimal or decimal literal, or `%N` (`_ptx_value`)."""
        if text is not None and re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
            return E.Const(int(text, 16))
        return self._ptx_value(c, ctx, text)

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
        v = self.w.ev(self._operand_node(c, ctx, int(mm.group(1))), replace(ctx, dry=True), c)
        return v if isinstance(v, Expr) else None

    def _operand_node(self, c: Any, ctx: Ctx, k: int) -> cexpr.Node:
        """The expression of operand `%k`: the wrapper call's argument, or the asm statement's
        operand tokens parsed."""
        if self._synthetic is not None:
            return self._synthetic[k]
        return cexpr.parse_expression(self._operands(c)[k], ctx.env.has)

    def _constraints(self, c: Any) -> list[str]:
        """The constraint letters of the asm statement's operands (`"=r"` -> `r`, `"n"` -> `n`),
        numbered as `%N` counts them (a wrapper call's: every one an input, `r`)."""
        if self._synthetic is not None:
            return ["r"] * len(self._synthetic)
        toks = self._asm_tokens(c) or []
        colon = next((k for k, t in enumerate(toks) if t in (":", "::")), None)
        if colon is None:
            return []
        return [
            t.strip('"').replace("&", "")
            for k, t in enumerate(toks[colon:], colon)
            if t.startswith('"') and k + 1 < len(toks) and toks[k + 1] == "("
        ]

    def _operands(self, c: Any) -> list[list[str]]:
        """The token lists of the asm statement's operand expressions (outputs, then inputs),
        numbered as `%N` counts them; [] without operands (a wrapper call's: its arguments)."""
        if self._synthetic is not None:
            return [lex(cexpr.render(n)) for n in self._synthetic]
        toks = self._asm_tokens(c) or []
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
        node = self._operand_node(c, ctx, int(mm.group(1)))
        addr = self.w.ev(node, replace(ctx, dry=True), c)
        if not isinstance(addr, Expr):
            return
        if (
            kind in ("ldmatrix", "stmatrix")
            and not mm.group(2)
            and self._matrix_rows(addr, ptx, ctx, c, loc, facts, kind)
        ):
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

    # ---- tensor-map objects as memory (issue 25, round 10) ----
    def _tensormap_access(
        self, c: Any, ctx: Ctx, loc: Location, facts: ir.AsmFacts, mode: str, space: str, atext: str
    ) -> None:
        """A generic-proxy access of a whole tensor map (`K.ptx_tensormap_accesses`). In shared
        memory: an SMEM_ACCESS of the `__shared__` object its address is the base of
        (`__cvta_generic_to_shared(&tm_s)`), via "scalar" (the 128-byte map is one location:
        every replace writes the whole object, the copy reads all of it), named by the
        instruction. In global memory (`tensormap.replace ... .global [gmap]`): a GLOBAL_STORE
        whose `pointer` is the map's address, element 0. An address not known emits nothing (the
        site stays unmodelled in the census)."""
        model = self.w.model
        if model is None:
            return
        addr = self._ptx_value(c, ctx, atext)
        api = "tensormap.replace" if mode == "write" else "tensormap.cp_fenceproxy"
        if space == "shared":
            if not isinstance(addr, E.Var):
                return
            obj = self.base_objs.get(addr.name)
            if obj is None or obj.ref.index or self.bases[addr.name][1]:
                return  # an element of an array of maps, a carved byte array: not one object
            self.w.emit(
                ir.Op(
                    ir.SMEM_ACCESS,
                    api,
                    loc,
                    ctx.guard,
                    ctx.loops,
                    asm=facts,
                    buffer=obj.ref,
                    access=ir.AccessFacts(mode, via="scalar", tile_type=obj.type),
                ),
                ctx,
            )
            return
        if addr is None or addr.is_opaque():
            return
        self.w.emit(
            ir.Op(
                ir.GLOBAL_STORE,
                api,
                loc,
                ctx.guard,
                ctx.loops,
                asm=facts,
                global_access=ir.GlobalAccessFacts(
                    "weak", api, form="ptx", base=self.w.exprs.global_base(addr), pointer=addr, element=E.Const(0)
                ),
            ),
            ctx,
        )

    def _matrix_rows(
        self, addr: Expr, ptx: str, ctx: Ctx, c: Any, loc: Location, facts: ir.AsmFacts, kind: str
    ) -> bool:
        """`ldmatrix` / `stmatrix` `.x1` / `.x2` / `.x4` at the shared address of an element of a
        `__shared__` array of scalars (`__cvta_generic_to_shared(&a_s[r][c])`): each row-naming
        lane's 16-byte row, lowered to a read (write) of its first element, as a wide load is
        (knowledge/ops.MATRIX_ROW_BYTES). The lane that names a row stands for the warp's
        collective access of it; `.x1` / `.x2` read the addresses of lanes 0-7 / 0-15 only (the
        access is guarded by that lane range). False (the access stays address math) for an
        address that is no such element."""
        model = self.w.model
        mx = re.search(r"\.x([124])\b", ptx)
        if model is None or not mx or not isinstance(addr, E.Var):
            return False
        sa = model.smem_addresses.get(addr.name)
        t = sa.tile_type if sa is not None else None
        if sa is None or t is None or t.kind != "scalar" or not sa.buffer.index or not t.dtype_bytes:
            return False
        if K.MATRIX_ROW_BYTES % t.dtype_bytes:
            return False
        mode = "read" if kind == "ldmatrix" else "write"
        guard = ctx.guard
        rows = K.MATRIX_ROWS_PER_PIECE * int(mx.group(1))
        if rows < 32:  # only the lanes that name a row
            lane = E.binop("%", E.TID, E.Const(32))
            guard = replace(guard, thread=E.conj(guard.thread, E.binop("<", lane, E.Const(rows))))
        self.w.emit(
            ir.Op(
                ir.SMEM_ACCESS,
                kind,
                loc,
                guard,
                ctx.loops,
                asm=facts,
                buffer=sa.buffer,
                access=ir.AccessFacts(mode, via="element", tile_type=t),
            ),
            ctx,
        )
        return True

    # ---- ordered shared accesses (issue 25, round 9) ----
    def _ordered_shared(self, c: Any, ctx: Ctx, ptx: str) -> None:
        """`ld.acquire.{scope}.shared::cta` / `st.release.{scope}.shared::cta` (and `.relaxed`,
        `.volatile`) of a `__shared__` scalar or of an element of a `__shared__` array of scalars,
        its address `__cvta_generic_to_shared(&x)` / `(&x[i])`: the same SMEM_ACCESS as a libcu++
        `atomic_ref<T, scope>` load / store of it (atomic "load" / "st", its order and scope; a
        load's value a fresh Var bound to the output operand and named by `result`, a store's the
        stored operand's value). An address not known emits nothing (the asm stays unmodelled)."""
        found = K.ptx_shared_ordered(ptx)
        model = self.w.model
        if not found or model is None:
            return
        ops = self._operands(c)
        for a in found:
            if a.addr_operand >= len(ops):
                continue
            node = self._operand_node(c, ctx, a.addr_operand)
            addr = self.w.ev(node, replace(ctx, dry=True), c)
            if not isinstance(addr, E.Var):
                continue
            loaded: Expr | None = None
            stored: Expr | None = None
            if a.mode == "read" and a.value_operand is not None and a.value_operand < len(ops):
                toks = [t for t in ops[a.value_operand] if t not in ("(", ")")]
                loaded = E.opaque(a.api)
                if len(toks) == 1 and (toks[0][:1].isalpha() or toks[0][:1] == "_") and ctx.env.has(toks[0]):
                    if not ctx.env.assign(toks[0], loaded):
                        ctx.env.define(toks[0], loaded)
                else:
                    loaded = None
            elif a.mode == "write" and a.value_operand is not None:
                stored = self._operand_value(c, ctx, a.value_operand)
                stored = stored if isinstance(stored, Expr) else None
            result = loaded.name if isinstance(loaded, E.Var) else None
            obj = self.base_objs.get(addr.name)
            if obj is not None and not obj.ref.index and not self.bases[addr.name][1]:
                self.w.exprs.scalar_access(
                    obj,
                    a.mode,
                    ctx,
                    c,
                    atomic="load" if a.mode == "read" else "st",
                    value=stored,
                    order=a.order,
                    scope=a.scope,
                    result=result,
                )
                continue
            sa = model.smem_addresses.get(addr.name)
            t = sa.tile_type if sa is not None else None
            if sa is None or t is None or t.kind != "scalar" or not sa.buffer.index:
                continue
            self.w.emit(
                ir.Op(
                    ir.SMEM_ACCESS,
                    a.api,
                    loc_of(c, self.w.filename),
                    ctx.guard,
                    ctx.loops,
                    buffer=sa.buffer,
                    access=ir.AccessFacts(
                        a.mode,
                        via="element",
                        tile_type=t,
                        atomic="load" if a.mode == "read" else "st",
                        value=stored,
                        order=a.order,
                        scope=a.scope,
                        result=result,
                    ),
                ),
                ctx,
            )

    # ---- dsmem: peer shared memory through `mapa` (issue 25, round 5) ----
    def _dsmem_accesses(self, c: Any, ctx: Ctx, ptx: str, loc: Location, facts: ir.AsmFacts) -> bool:
        """`ld/st/red/atom.shared::cluster [%N]` whose address a `mapa.shared::cluster` made from
        the shared address of a `__shared__` element (`mapa %r, smem_u32(&x[i]), rank`): an
        SMEM_ACCESS of x[i] in CTA `rank`'s shared memory, the op `cluster.map_shared_rank(&x[i],
        rank)[0]` is. True when every such access of the statement was emitted so; False (the
        generic shared access is emitted instead) when one's address is not known."""
        accesses = K.ptx_dsmem_accesses(ptx)
        model = self.w.model
        if not accesses or model is None:
            return False
        ops = self._operands(c)
        emitted: list[ir.Op] = []
        for a in accesses:
            if a.mapa is not None:
                # mapped in the same statement: `mapa.shared::cluster.u32 ra, %1, %2; ld [ra]`
                lv, cv = (self._ptx_value(c, ctx, t) for t in a.mapa)
                if lv is None or cv is None:
                    return False
                local, cta = lv, cv
            else:
                if a.addr_operand is None or a.addr_operand >= len(ops):
                    return False
                node = self._operand_node(c, ctx, a.addr_operand)
                addr = self.w.ev(node, replace(ctx, dry=True), c)
                if not isinstance(addr, E.Var) or addr.name not in self.mapped:
                    return False
                local, cta = self.mapped[addr.name]
            sa = model.smem_addresses.get(local.name) if isinstance(local, E.Var) else None
            t = sa.tile_type if sa is not None else None
            if sa is None or t is None or t.kind != "scalar" or not sa.buffer.index or not t.dtype_bytes:
                return False
            value = None
            if a.value_operand is not None and a.value_operand < len(ops) and a.sync in ("relaxed", "release"):
                v = self._operand_value(c, ctx, a.value_operand)
                value = v if isinstance(v, Expr) else None
            ref = sa.buffer
            if a.offset:
                if a.offset % t.dtype_bytes:
                    return False
                last = ref.index[-1]
                ref = ir.Ref(ref.name, ref.index[:-1] + (E.binop("+", last, E.Const(a.offset // t.dtype_bytes)),))
            emitted.append(
                ir.Op(
                    ir.SMEM_ACCESS,
                    a.api,
                    loc,
                    ctx.guard,
                    ctx.loops,
                    asm=facts,
                    buffer=ref,
                    access=ir.AccessFacts(
                        a.mode,
                        via="element",
                        tile_type=t,
                        atomic=a.sync,
                        cta=cta,
                        # an ordered ld / st (`st.release.cluster.shared::cluster`): its order and
                        # scope, and a store's value (a flag of a cluster hand-off,
                        # checks/cluster_handoff.py)
                        order=a.sync if a.sync in ("relaxed", "acquire", "release") else None,
                        scope=a.scope,
                        value=value,
                    ),
                )
            )
        for op in emitted:
            self.w.emit(op, ctx)
        return True


def _place(c: Any) -> tuple[str, int]:
    """Where a statement starts in its file: the same asm statement of a helper at every call."""
    start = c.extent.start
    return (start.file.name if start.file is not None else "", start.offset)


def _div_by(t: Expr, n: int) -> Expr | None:
    """t / n for a term that is a multiple of n by its shape (`4`, `4u * (t + 256 * k)`,
    `x << 2`); None otherwise."""
    if n == 1:
        return t
    if isinstance(t, E.Const) and isinstance(t.value, int) and not isinstance(t.value, bool):
        return E.Const(t.value // n) if t.value % n == 0 else None
    if isinstance(t, E.Bin) and t.op == "*":
        for k, x in ((t.b, t.a), (t.a, t.b)):
            if (
                isinstance(k, E.Const)
                and isinstance(k.value, int)
                and not isinstance(k.value, bool)
                and k.value % n == 0
            ):
                return x if k.value == n else E.binop("*", x, E.Const(k.value // n))
    if isinstance(t, E.Bin) and t.op == "<<" and isinstance(t.b, E.Const) and isinstance(t.b.value, int):
        sh = n.bit_length() - 1
        if 1 << sh == n and t.b.value >= sh:
            return E.binop("<<", t.a, E.Const(t.b.value - sh)) if t.b.value > sh else t.a
    return None


def _div8(t: Expr) -> Expr | None:
    """t / 8 for a term that is a multiple of 8 by its shape (`8`, `x * 16`, `x << 3`); None
    otherwise."""
    if isinstance(t, E.Const) and isinstance(t.value, int) and not isinstance(t.value, bool):
        return E.Const(t.value // 8) if t.value % 8 == 0 else None
    if isinstance(t, E.Bin) and t.op == "*":
        for k, x in ((t.b, t.a), (t.a, t.b)):
            if isinstance(k, E.Const) and isinstance(k.value, int) and k.value % 8 == 0:
                return E.binop("*", x, E.Const(k.value // 8))
            q = _div8(k)
            if q is not None:
                return E.binop("*", x, q)
    if isinstance(t, E.Bin) and t.op == "<<" and isinstance(t.b, E.Const) and isinstance(t.b.value, int):
        if t.b.value >= 3:
            return E.binop("<<", t.a, E.Const(t.b.value - 3))
    return None
