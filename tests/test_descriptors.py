"""Shared-memory matrix descriptors (issue 25, r7-desc): the start address a descriptor value
encodes (`model.descriptors`), the op table's descriptor operands of a raw `wgmma.mma_async`,
and the stage region the checks resolve it to (`checks.descriptors`)."""

from pathlib import Path

from tkcheck.checks.analysis import Analysis
from tkcheck.checks.descriptors import descriptor_operands
from tkcheck.engine import models_of
from tkcheck.knowledge import ops as K
from tkcheck.model import expr as E
from tkcheck.model import ir
from tkcheck.model.descriptors import descriptor_start

ROOT = Path(__file__).resolve().parent.parent
A = E.Var("a", E.PARAM)
OFF = E.Var("off", E.PARAM)


def _enc(x: E.Expr) -> E.Expr:
    # the ISA's encoding of the start address field: (x & 0x3FFFF) >> 4
    return E.binop(">>", E.binop("&", x, E.Const(0x3FFFF)), E.Const(4))


def _layout(desc: E.Expr) -> E.Expr:
    # leading offset 1 (bit 16), stride 1024 >> 4 (bit 32), 128-byte swizzle (bit 62)
    for c in (1 << 16, 64 << 32, 1 << 62):
        desc = E.binop("|", desc, E.Const(c))
    return desc


def test_start_address_of_an_encoded_address_or_ed_with_layout_fields():
    assert descriptor_start(_layout(_enc(A))) == A


def test_shift_then_mask_spelling():
    d = E.binop("&", E.binop(">>", A, E.Const(4)), E.Const(0x3FFF))
    assert descriptor_start(_layout(d)) == A


def test_base_descriptor_plus_an_encoded_k_offset():
    # TK's `base_desc + matrix_descriptor_encode(off)`: the start addresses add
    d = E.binop("+", _layout(_enc(A)), _enc(OFF))
    assert descriptor_start(d) == E.binop("+", A, OFF)


def test_a_term_in_the_address_field_that_is_no_encoded_address_is_unknown():
    assert descriptor_start(_layout(E.binop("|", _enc(A), E.Const(3)))) is None
    assert descriptor_start(_layout(E.Var("x", E.PARAM))) is None
    assert descriptor_start(E.Const(1 << 62)) is None  # no address at all


def test_field_shifted_above_bit_13_is_no_address():
    d = E.binop("|", _enc(A), E.binop("<<", E.Var("lbo", E.PARAM), E.Const(16)))
    assert descriptor_start(d) == A


def test_wgmma_names_its_descriptor_operands():
    ops, _ = K.ptx_async_ops("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1}, %2, %3, p, 1, 1, 0, 0;")
    assert (ops[0].desc_a, ops[0].desc_b) == ("%2", "%3")
    ops, _ = K.ptx_async_ops("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1}, {%2, %3}, %4, p, 1, 1;")
    assert (ops[0].desc_a, ops[0].desc_b) == (None, "%4")  # A in registers


def _operands(path: str, name: str) -> list[list[str]]:
    m = next(m for m in models_of(str(ROOT / path)) if m.name.startswith(name))
    an = Analysis(m)
    regions = descriptor_operands(an)
    return [[str(r) for r in regions.get(id(o), ())] for o in m.ops if o.kind == ir.MMA]


def test_raw_wgmma_reads_the_stage_regions_the_copies_fill():
    # A at sA + s * 8192 + kk * 32, B at sB + s * 8192 + kk * 32: the two regions the TMA fills
    got = _operands("corpus/idioms3/wgmma_dual_acc.cu", "gemm_dual_kernel")
    assert len(got) == 2 and all(len(g) == 2 for g in got)
    assert [r.split("[")[0] for r in got[0]] == ["dyn+0/8192", "dyn+32768/8192"]


def test_per_warpgroup_offset_stays_inside_the_a_region():
    # warpgroup wg reads A at st + wg * 8192 + kk * 32, inside the 16384 bytes of the A copy
    got = _operands("corpus/idioms5/wgmma_ws_tmastore.cu", "gemm_two_wg_kernel")
    assert [r.split("[")[0] for r in got[0]] == ["dyn+0/24576", "dyn+16384/24576"]
