"""The layout contract: every accessor of a shared buffer maps each logical element to the byte
the buffer's writers put it at.  Queries over the KernelModel that call the decision procedures of
``layout_proofs`` (z3 bit-vectors over all elements and all admissible bases).

Accessors and the layout each one assumes (see CONTRACTS.md "Layouts"):

* TMA load/store: the tensor map registered on the ``gl`` for the op's tile type
  (``TmaBoxLayout``); the shared address must be 128-byte aligned.
* wgmma operand: TK's ``st_descriptor`` of the tile type at the MMA call (``WgmmaOperandView``,
  K- or MN-major from the API spelling).
* ``reinterpret_cast<View&>(buf[i])``: the view's layout over the buffer's tiles laid back to back.
* hand-written address math (``__cvta_generic_to_shared(&tile)`` plus an XOR swizzle, consumed
  by raw ``st.shared`` / ``ld.shared`` / ``ldmatrix``): the kernel's own function.

``layout_facts(an)`` computes everything once per kernel (``an.fact('layout', ...)``, so the
proof time shows in the timings) as typed facts (``LayoutMismatch`` and its kinds); each layout
rule selects its kinds with ``mismatches(an, kinds)`` and words the finding.  A fact only when a
proof gives a counterexample (or, for an alignment, a violating address); Unknown (unmodelled,
symbolic, timeout) gives nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import z3

from ..knowledge.layouts import (
    ADDR_BITS,
    SharedTileLayout,
    TmaBoxLayout,
    WgmmaOperandView,
    swizzle_for,
)
from ..model import expr as E
from ..model import ir
from . import layout_proofs as _lp
from .layout_proofs import Counterexample, Equivalent, check_alignment


def _small_base_first(proc):
    """Run ``proc`` with the base pinned to its smallest admissible values first (0, then the
    alignment itself) so that a counterexample names a readable base; the unpinned proof decides
    equivalence."""

    def run(*args, **kw):
        align = kw.get("base_alignment", 128)
        for pin in (0, align):
            res = proc(*args, **{**kw, "base_constraint": (lambda b, pin=pin: b == pin)})
            if isinstance(res, Counterexample):
                return res
        return proc(*args, **kw)

    return run


prove_same_map = _small_base_first(_lp.prove_same_map)
prove_reinterpret = _small_base_first(_lp.prove_reinterpret)
prove_handwritten = _small_base_first(_lp.prove_handwritten)

TMA_ALIGN = 128


# ------------------------------------------------------------------ facts ----
# One class per kind of disagreement; every one carries the op (the accessor) and the shared buffer
# it reaches, and those proved by z3 the counterexample (an element, the two byte offsets, the two
# swizzle modes, the tile base).


@dataclass(frozen=True, eq=False)
class LayoutMismatch:
    op: ir.Op
    buffer: ir.SharedBuffer


@dataclass(frozen=True, eq=False)
class TmaMisaligned(LayoutMismatch):
    """The shared address of a TMA tensor copy is not guaranteed the alignment TMA needs."""

    required: int
    guaranteed: int
    witness_base: int  # an address the model admits that breaks the requirement


@dataclass(frozen=True, eq=False)
class DescriptorSwizzleMismatch(LayoutMismatch):
    """A TMA copy uses the descriptor registered on its ``gl`` for another swizzle than its tile's."""

    gl: str  # the global layout, as spelled
    descriptor: ir.TileType  # the tile type the descriptor was built for
    descriptor_layout: SharedTileLayout
    tile: ir.TileType  # the copy's tile type
    tile_layout: SharedTileLayout
    cx: Counterexample


@dataclass(frozen=True, eq=False)
class ViewMismatch(LayoutMismatch):
    """An accessor reads a buffer through a tile type other than the buffer's own (a
    ``reinterpret_cast`` view, a wgmma descriptor of another type)."""

    accessor: str  # what reads the view ("the K-major wgmma descriptor of operand A")
    ref: ir.Ref
    view: ir.TileType
    view_layout: SharedTileLayout
    declared: ir.TileType  # the buffer's tile type
    declared_layout: SharedTileLayout
    cx: Counterexample


@dataclass(frozen=True, eq=False)
class ViewSwizzleMismatch(ViewMismatch):
    """The view has the buffer's geometry but another swizzle mode."""


@dataclass(frozen=True, eq=False)
class ViewLayoutMismatch(ViewMismatch):
    """A differently shaped view over ``tiles`` of the buffer's tiles, side by side or stacked."""

    tiles: int = 1
    side_by_side: bool = True


@dataclass(frozen=True, eq=False)
class HandwrittenMismatch(LayoutMismatch):
    """Hand-written address math on a tile differs from the tile type's layout (``cx``)."""

    address: str  # the address math, described ("the hand-written address (...)")
    smem: ir.SmemAddress  # where the kernel took the tile's shared address
    tile: ir.TileType
    tile_layout: SharedTileLayout
    guaranteed: int  # the alignment the model guarantees the tile base
    cx: Counterexample


@dataclass(frozen=True, eq=False)
class HandwrittenNeedsAlignment(HandwrittenMismatch):
    """... but agrees with it once the base is aligned to the swizzle repeat ``required``."""

    required: int = 0


@dataclass(frozen=True, eq=False)
class HandwrittenDiffers(HandwrittenMismatch):
    """... at every alignment that was proved (``repeat``: the swizzle repeat, 0 when unswizzled)."""

    repeat: int = 0


@dataclass
class LayoutFacts:
    mismatches: list[LayoutMismatch] = field(default_factory=list)
    proofs: int = 0
    unknown: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ model -> layouts ----


def _int(e) -> int | None:
    if e is None:
        return None
    v = e.eval({}) if isinstance(e, E.Expr) else e
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def tile_layout(t: ir.TileType | None) -> SharedTileLayout | None:
    """The TK layout of a shared tile type, or None when its shape/dtype is not constant."""
    if t is None or t.kind != "st" or not t.dtype_bytes:
        return None
    rows, cols = _int(t.rows), _int(t.cols)
    if rows is None or cols is None:
        return None
    swizzle, sb = True, 0
    if t.swizzle_bytes is not None:
        v = _int(t.swizzle_bytes)
        if v is None:
            return None
        if v == 0:
            swizzle = False
        else:
            sb = v
    try:
        swizzle_for(t.dtype_bytes, rows, cols, swizzle=swizzle, swizzle_bytes=sb)
    except ValueError:
        return None
    lay = SharedTileLayout.tk(t.dtype_bytes, rows, cols, swizzle, sb)
    return SharedTileLayout(lay.dtype_bytes, lay.rows, lay.cols, lay.swizzle_bytes, name=t.spelling)


def element_type(buf: ir.SharedBuffer) -> ir.TileType:
    t = buf.type
    while t.kind == "array" and t.element is not None:
        t = t.element
    return t


def _sizeof(t: ir.TileType) -> int | None:
    s = _int(t.size_bytes())
    if s is None:
        return None
    return (s + 127) // 128 * 128 if t.kind in ("st", "sv") else s


def _strides(buf: ir.SharedBuffer) -> tuple[int | None, ...]:
    if buf.strides and len(buf.strides) == len(buf.dims):
        return buf.strides
    es = _sizeof(element_type(buf))
    out, acc = [], es
    for d in reversed(buf.dims):
        out.append(acc)
        n = _int(d)
        acc = acc * n if (acc is not None and n is not None) else None
    return tuple(reversed(out))


def element_alignment(buf: ir.SharedBuffer, ref: ir.Ref) -> tuple[int, int] | None:
    """(g, o): the element ``ref`` of ``buf`` lives at ``k*g + o`` for some k (g a power of
    two, 0 <= o < g); None when a stride is unknown."""
    g = buf.alignment or 16
    o = buf.base_offset
    strides = _strides(buf)
    for i, idx in enumerate(ref.index[: len(strides)]):
        st = strides[i]
        if st is None:
            return None
        v = _int(idx)
        if v is not None:
            o += v * st
        elif st:
            g = math.gcd(g, st)
    g = g & -g if g else 1  # largest power of two dividing g
    return g, o % g


def _mn_major(mma: ir.MmaFacts | None, role: str) -> bool | None:
    """Whether the MMA reads operand `role` MN-major: A given transposed (`At`), B not (`B`, an
    N-major K x N tile); None where the name does not say. The cta_group::2 names (`mma2_*`,
    `mm2_*`) are not checked here (not modelled yet)."""
    if mma is None or mma.ncta != 1 or mma.transpose_a is None or mma.transpose_b is None:
        return None
    return mma.transpose_a if role == "a" else not mma.transpose_b


def _same_geometry(a: SharedTileLayout, b: SharedTileLayout) -> bool:
    return (a.dtype_bytes, a.rows, a.cols) == (b.dtype_bytes, b.rows, b.cols)


# ------------------------------------------------------------------ the check ----


class _Checker:
    def __init__(self, an):
        self.an = an
        self.m: ir.KernelModel = an.model
        self.facts = LayoutFacts()
        self.timeout = getattr(an, "solver_timeout_ms", 2000)

    def add(self, fact: LayoutMismatch):
        self.facts.mismatches.append(fact)

    def note_unknown(self, res, what):
        if not isinstance(res, (Equivalent, Counterexample)):
            self.facts.unknown.append(f"{what}: {res}")

    def run(self) -> LayoutFacts:
        for op in self.m.ops:
            try:
                if op.kind in (ir.TMA_LOAD, ir.TMA_STORE):
                    self.tma(op)
                elif op.kind == ir.MMA:
                    self.mma(op)
                elif op.kind == ir.SMEM_ACCESS:
                    acc = op.access
                    if acc is None:
                        continue
                    if acc.via == "asm" and isinstance(acc.addr, E.Expr):
                        self.handwritten(op, acc.addr)
                    elif acc.reinterpreted_from is not None and op.buffer is not None:
                        v = tile_layout(acc.tile_type)
                        if v is not None:
                            self.view(
                                op, op.buffer, acc.tile_type, v, acc.reinterpreted_from, f"{op.api} of {op.buffer}"
                            )
            except (NotImplementedError, ValueError, z3.Z3Exception) as e:
                self.facts.unknown.append(f"{op.api} at line {op.location.row}: {e}")
        return self.facts

    def _buffer(self, ref: ir.Ref | None) -> ir.SharedBuffer | None:
        return None if ref is None else self.m.buffers.get(ref.name)

    def _proof_alignment(self, buf, ref) -> int | None:
        ea = element_alignment(buf, ref)
        if ea is None:
            return None
        g, o = ea
        a = g if o == 0 else (o & -o)
        return max(a, 16) if a >= 16 else None

    # -- TMA ----------------------------------------------------------------------------
    def tma(self, op: ir.Op):
        buf = self._buffer(op.buffer)
        tr = op.transfer
        vt = tr.tile_type if tr is not None else None
        if buf is None or tr is None or not isinstance(vt, ir.TileType):
            return
        # the shared address of a TMA copy must be 128-byte aligned
        ea = element_alignment(buf, op.buffer)
        if ea is not None and vt.kind in ("st", "sv"):
            g, o = ea
            rep = check_alignment(g, ["tma_tensor"], o)
            if not rep.ok:
                v = rep.violations[0]
                self.add(TmaMisaligned(op, buf, v.required, v.guaranteed, v.witness_base))
        view = tile_layout(vt)
        if view is None:
            return
        align = self._proof_alignment(buf, op.buffer) or TMA_ALIGN
        # the descriptor registered on the gl vs the tile type of the copy
        glt = tr.gl_type
        regs = [r for r in (glt.registered if isinstance(glt, ir.TileType) else ()) if r.kind == "st"]
        reg_layouts = [(r, tile_layout(r)) for r in regs]
        reg_layouts = [(r, l) for r, l in reg_layouts if l is not None]
        if reg_layouts and not any(
            l == view or (_same_geometry(l, view) and l.swizzle_bytes == view.swizzle_bytes) for _, l in reg_layouts
        ):
            cand = [(r, l) for r, l in reg_layouts if _same_geometry(l, view)]
            if cand:
                r, l = cand[0]
                desc = TmaBoxLayout(l)
                res = prove_same_map(desc, view, base_alignment=align, timeout_ms=self.timeout)
                self.facts.proofs += 1
                self.note_unknown(res, op.api)
                if isinstance(res, Counterexample):
                    gl = tr.gl if tr.gl is not None else "the global layout"
                    self.add(DescriptorSwizzleMismatch(op, buf, gl, r, l, vt, view, res))
        rf = tr.reinterpreted_from
        if rf is not None:
            self.view(op, op.buffer, vt, TmaBoxLayout(view), rf, f"{op.api} into '{op.buffer}'")

    # -- MMA ----------------------------------------------------------------------------
    def mma(self, op: ir.Op):
        if op.mma is None:
            return
        for i, role in enumerate(("a", "b")):
            operand = op.mma.operand(role)
            if operand is None or operand.kind != "buffer":
                continue
            vt = operand.type
            ref = None
            refs = [r for r in op.operands if r.name in self.m.buffers]
            # operands: (acc, a, b) or (a, b) -- pick by position among buffer refs
            nbuf = sum(1 for rr in ("a", "b") if op.mma.kind_of(rr) == "buffer")
            if nbuf == 2:
                ref = refs[i] if len(refs) == 2 else None
            elif refs:
                ref = refs[0]
            view = tile_layout(vt) if isinstance(vt, ir.TileType) else None
            mn = _mn_major(op.mma, role)
            if ref is None or view is None or mn is None:
                continue
            buf = self._buffer(ref)
            declared = operand.reinterpreted_from
            if declared is None and buf is not None:
                et = element_type(buf)
                dl = tile_layout(et)
                if (
                    dl is not None
                    and dl != view
                    and not (_same_geometry(dl, view) and dl.swizzle_bytes == view.swizzle_bytes)
                ):
                    declared = et
            if declared is None:
                continue
            consumer = WgmmaOperandView(view, mn, arch=self.an.arch)
            if consumer.supported:
                consumer = view
            self.view(
                op,
                ref,
                vt,
                consumer,
                declared,
                f"the {'MN' if mn else 'K'}-major wgmma descriptor of operand {role.upper()}",
            )

    # -- reinterpretations ----------------------------------------------------------------
    def view(self, op, ref: ir.Ref, vt: ir.TileType, consumer, declared: ir.TileType, what: str):
        buf = self._buffer(ref)
        dl = tile_layout(declared)
        vl = tile_layout(vt)
        if buf is None or dl is None or vl is None or dl.dtype_bytes != vl.dtype_bytes:
            return
        align = self._proof_alignment(buf, ref) or TMA_ALIGN
        if _same_geometry(dl, vl):
            if dl.swizzle_bytes == vl.swizzle_bytes:
                return
            res = prove_same_map(consumer, dl, base_alignment=align, timeout_ms=self.timeout)
            self.facts.proofs += 1
            self.note_unknown(res, what)
            if isinstance(res, Counterexample):
                self.add(ViewSwizzleMismatch(op, buf, what, ref, vt, vl, declared, dl, res))
            return
        # a differently shaped view: tiles side by side (wider) or stacked (taller)
        if vl.cols > dl.cols and vl.rows <= dl.rows:
            k, grid_of = -(-vl.cols // dl.cols), (lambda n: (1, n))
        elif vl.rows > dl.rows and vl.cols <= dl.cols:
            k, grid_of = -(-vl.rows // dl.rows), (lambda n: (n, 1))
        elif vl.rows <= dl.rows and vl.cols <= dl.cols:
            k, grid_of = 1, (lambda n: (1, 1))
        else:
            return
        strides = _strides(buf)
        avail, stride = 1, _sizeof(declared)
        if buf.dims and len(ref.index) == len(buf.dims):
            last = _int(ref.index[-1])
            n = _int(buf.dims[-1])
            if k > 1 and (last is None or n is None):
                self.facts.unknown.append(f"{what}: symbolic index {ref}")
                return
            avail = (n - last) if (n is not None and last is not None) else 1
            stride = strides[-1] if strides and strides[-1] else stride
        elif buf.dims:
            return
        n_t = min(k, avail)
        res = prove_reinterpret(
            [dl] * n_t, consumer, base_alignment=align, grid=grid_of(n_t), stride_bytes=stride, timeout_ms=self.timeout
        )
        self.facts.proofs += 1
        self.note_unknown(res, what)
        if isinstance(res, Counterexample):
            self.add(
                ViewLayoutMismatch(
                    op, buf, what, ref, vt, vl, declared, dl, res, tiles=n_t, side_by_side=grid_of(2) == (1, 2)
                )
            )

    # -- hand-written address math ------------------------------------------------------
    def handwritten(self, op: ir.Op, addr: E.Expr):
        names = [v.name for v in addr.free_vars() if v.name in self.m.smem_addresses]
        if len(set(names)) != 1:
            return
        sa = self.m.smem_addresses[names[0]]
        X = E.Var(names[0], E.PARAM)
        buf = self._buffer(sa.buffer)
        tt = (
            sa.tile_type
            if (sa.tile_type is not None and sa.tile_type.kind == "st")
            else (element_type(buf) if buf is not None else None)
        )
        lay = tile_layout(tt)
        if buf is None or lay is None:
            return
        parsed = _split_xor(addr, X)
        if parsed is None:
            self.facts.unknown.append(f"{op.api} at line {op.location.row}: address math not recognised")
            return
        relative, fn, xor_text = parsed
        ea = element_alignment(buf, sa.buffer)
        if ea is None:
            return
        g, o = ea
        guaranteed = g if o == 0 else (o & -o)
        guaranteed = max(guaranteed, 1)
        text = f"the hand-written address ({'buffer-relative' if relative else 'absolute'} XOR {xor_text})"
        res = prove_handwritten(
            fn, lay, base_alignment=guaranteed, relative=relative, text=text, timeout_ms=self.timeout
        )
        self.facts.proofs += 1
        self.note_unknown(res, text)
        if not isinstance(res, Counterexample):
            return
        rep = lay.swizzle_repeat
        if rep and guaranteed < rep:
            res2 = prove_handwritten(fn, lay, base_alignment=rep, relative=relative, text=text, timeout_ms=self.timeout)
            self.facts.proofs += 1
            if isinstance(res2, Equivalent):
                self.add(HandwrittenNeedsAlignment(op, buf, text, sa, tt, lay, guaranteed, res, required=rep))
                return
            if isinstance(res2, Counterexample):
                res = res2
            else:
                # unknown whether alignment alone explains it or not: no guess
                self.note_unknown(res2, text)
                return
        self.add(HandwrittenDiffers(op, buf, text, sa, tt, lay, guaranteed, res, repeat=rep))


# ------------------------------------------------------------------ address math ----


def _contains(e: E.Expr, sub: E.Expr) -> bool:
    return any(x == sub for x in E.subexprs(e))


def _bv(e: E.Expr, hole: E.Expr, x: z3.BitVecRef) -> z3.BitVecRef:
    """``e`` as a 32-bit bit-vector function of ``x`` standing for the subterm ``hole``."""
    if e == hole:
        return x
    if isinstance(e, E.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return z3.BitVecVal(e.value & 0xFFFFFFFF, ADDR_BITS)
    if isinstance(e, E.Bin):
        a, b = _bv(e.a, hole, x), _bv(e.b, hole, x)
        f = {
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "&": lambda: a & b,
            "|": lambda: a | b,
            "^": lambda: a ^ b,
            "<<": lambda: a << b,
            ">>": lambda: z3.LShR(a, b),
            "/": lambda: z3.UDiv(a, b),
            "%": lambda: z3.URem(a, b),
        }.get(e.op)
        if f is None:
            raise ValueError(f"operator {e.op} in address math")
        return f()
    if isinstance(e, E.Un) and e.op == "~":
        return ~_bv(e.a, hole, x)
    raise ValueError(f"term {e} in address math")


def _addends(e: E.Expr) -> list:
    if isinstance(e, E.Bin) and e.op == "+":
        return _addends(e.a) + _addends(e.b)
    return [e]


def _split_xor(addr: E.Expr, X: E.Var):
    """Recognise ``F(X + off)`` (absolute swizzle) or ``X + F(off)`` (buffer-relative), F built
    from its argument with constants and a XOR.  Returns (relative, fn, text) or None."""

    def xor_fn(node):
        # node = P ^ G(P) (either order); returns (P, fn)
        if not (isinstance(node, E.Bin) and node.op == "^"):
            return None
        for p, g in ((node.a, node.b), (node.b, node.a)):
            if _contains(g, p) and not _contains(p, g):
                try:
                    _bv(node, p, z3.BitVec("x", ADDR_BITS))
                except ValueError:
                    continue
                return p, (lambda x, node=node, p=p: _bv(node, p, x)), "a ^ " + str(g).replace(str(p), "a")
        return None

    # absolute: the XOR applies to an argument containing X
    r = xor_fn(addr)
    if r is not None:
        p, fn, text = r
        terms = _addends(p)
        if terms.count(X) == 1 and not any(_contains(t, X) for t in terms if t != X):
            return False, fn, text
        return None
    # relative: X + F(off)
    terms = _addends(addr)
    if terms.count(X) == 1 and len(terms) == 2:
        q = terms[0] if terms[1] == X else terms[1]
        r = xor_fn(q)
        if r is not None and not _contains(q, X):
            return True, r[1], r[2]
    return None


def layout_facts(an) -> LayoutFacts:
    """The layout contract for one kernel, computed once (timed as 'layout')."""
    return an.fact("layout", lambda a: _Checker(a).run())


def mismatches(an, kinds: type | tuple[type, ...] = LayoutMismatch) -> list[LayoutMismatch]:
    """The kernel's layout mismatches of the given kinds (classes above), in op order."""
    return [m for m in layout_facts(an).mismatches if isinstance(m, kinds)]
