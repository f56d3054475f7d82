"""Shared-memory matrix descriptors (wgmma, tcgen05): the start address a 64-bit descriptor value
encodes, as an Expr of the model.

PTX ISA ("Matrix Descriptor Format"): bits 0-13 hold the operand's start address as
`(addr & 0x3FFFF) >> 4`; the leading and stride byte offsets (bits 16-29, 32-45), the base
offset (49-51) and the swizzle mode (62-63) sit above bit 13. A kernel builds the value by
or-ing (or adding) those fields, and steps through K by adding an encoded byte offset to a
base descriptor (TK's `base_desc + matrix_descriptor_encode(off)`). The start address is the
sum of the encoded addresses: a shared-window address is below 2^18 bytes and 16-byte aligned,
so `((a & 0x3FFFF) >> 4) << 4 == a`, and adding encoded offsets carries nothing out of the field
while the sum is itself such an address (which the hardware requires).

Anything else in the low 14 bits (a field we cannot place, an opaque value) makes the start
address unknown: None, never a guess.
"""

from __future__ import annotations

from . import expr as E
from .expr import Expr

FIELD_BITS = 14  # bits 0-13: the start address >> 4
_FIELD_MASK = (1 << FIELD_BITS) - 1


def _terms(e: Expr) -> list[Expr]:
    """The terms of a descriptor built with `|` and `+` (both place disjoint fields)."""
    if isinstance(e, E.Bin) and e.op in ("|", "+"):
        return _terms(e.a) + _terms(e.b)
    return [e]


def _const(e: Expr) -> int | None:
    v = e.eval({})
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _encoded_address(t: Expr) -> Expr | None:
    """`(a & 0x3FFFF) >> 4` (the ISA's and TK's encoding) or `(a >> 4) & 0x3FFF`: a."""
    if isinstance(t, E.Bin) and t.op == ">>" and _const(t.b) == 4:
        inner = t.a
        if isinstance(inner, E.Bin) and inner.op == "&":
            for x, m in ((inner.a, inner.b), (inner.b, inner.a)):
                mask = _const(m)
                if mask is not None and (mask >> 4) & _FIELD_MASK == _FIELD_MASK:
                    return x
    if isinstance(t, E.Bin) and t.op == "&":
        for x, m in ((t.a, t.b), (t.b, t.a)):
            mask = _const(m)
            if mask == _FIELD_MASK and isinstance(x, E.Bin) and x.op == ">>" and _const(x.b) == 4:
                return x.a
    return None


def _above_field(t: Expr) -> bool:
    """The term has no bit in 0-13: a constant (layout, offsets, swizzle) or a value shifted
    left by at least 14."""
    c = _const(t)
    if c is not None:
        return c & _FIELD_MASK == 0
    if isinstance(t, E.Bin) and t.op == "<<":
        s = _const(t.b)
        return s is not None and s >= FIELD_BITS
    if isinstance(t, E.Bin) and t.op == "*":
        for x in (t.a, t.b):
            c = _const(x)
            if c is not None and c > 0 and c & _FIELD_MASK == 0 and (c & -c) >= 1 << FIELD_BITS:
                return True
    return False


def descriptor_start(desc: Expr) -> Expr | None:
    """The shared address the descriptor value `desc` starts its matrix at; None when a term
    of the low 14 bits is not an encoded address (or there is none)."""
    addrs: list[Expr] = []
    for t in _terms(desc):
        a = _encoded_address(t)
        if a is not None:
            addrs.append(a)
        elif not _above_field(t):
            return None
    if not addrs:
        return None
    out = addrs[0]
    for a in addrs[1:]:
        out = E.binop("+", out, a)
    return out
