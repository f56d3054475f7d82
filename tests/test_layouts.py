"""Layout encodings (tkcheck.knowledge.layouts) and the z3 proofs over them (issue 7).

Run with ``pytest -s tests/test_layouts.py`` to see the solve time of every proof.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import z3

from tkcheck.checks.layout_proofs import (
    AlignmentReport,
    Counterexample,
    Equivalent,
    Unknown,
    check_alignment,
    prove_handwritten,
    prove_ldmatrix_rows,
    prove_reinterpret,
    prove_same_map,
)
from tkcheck.knowledge.layouts import (
    AtOffset,
    SharedTileLayout,
    SharedVecLayout,
    SubtileView,
    TmaBoxLayout,
    WgmmaOperandView,
    hw_swizzle_int,
    relative_xor_requirement,
    swizzle_for,
    tcgen05_operand_view,
    tk_swizzle_int,
)

TK_ROOT = Path(__file__).resolve().parents[1] / "third_party" / "ThunderKittens"


def st(dtype, rows, cols, swizzle=True, swizzle_bytes=0):
    return SharedTileLayout.tk(dtype, rows, cols, swizzle, swizzle_bytes)


def show(label, res):
    print(f"\n  [{res.seconds * 1000:7.1f} ms] {label}: {type(res).__name__}")
    return res


def assert_real_counterexample(res, a, b):
    """The witness must be a real disagreement when recomputed in plain Python."""
    assert isinstance(res, Counterexample), res
    pa = a.element_address(res.base, res.row, res.col)
    assert pa == res.address_a
    if res.offset_b is not None:
        pb = b.element_address(res.base, res.row, res.col)
        assert pb == res.address_b
        assert pa != pb


# ---------------------------------------------------------------------------------------------
# swizzle selection (st.cuh)
# ---------------------------------------------------------------------------------------------

# (dtype_bytes, cols) -> swizzle bytes, as read from st.cuh:
#   1 byte (TILE_COL_DIM 32): w=cols/32: 128 if w%4==0, 64 if w%2==0, else 32
#   2 bytes (TILE_COL_DIM 16): w=cols/16: same rule
#   4 bytes (TILE_COL_DIM 16): w=cols/16: 128 if w%2==0, else 64
SWIZZLE_TABLE = [
    (1, 32, 32),
    (1, 64, 64),
    (1, 96, 32),
    (1, 128, 128),
    (1, 192, 64),
    (1, 256, 128),
    (2, 16, 32),
    (2, 32, 64),
    (2, 48, 32),
    (2, 64, 128),
    (2, 96, 64),
    (2, 128, 128),
    (2, 256, 128),
    (2, 80, 32),
    (2, 192, 128),
    (4, 16, 64),
    (4, 32, 128),
    (4, 48, 64),
    (4, 64, 128),
    (4, 128, 128),
]


@pytest.mark.parametrize("dtype_bytes,cols,expected", SWIZZLE_TABLE)
def test_swizzle_selection_table(dtype_bytes, cols, expected):
    assert swizzle_for(dtype_bytes, 64, cols) == expected


def test_swizzle_explicit_and_disabled():
    assert swizzle_for(2, 64, 64, swizzle_bytes=64) == 64
    assert swizzle_for(2, 64, 64, swizzle=False) is None
    assert st("bf16", 64, 64, swizzle_bytes=32).panel_cols == 16
    assert st("fp8e4m3", 64, 128).panel_cols == 128
    assert st("float", 64, 32).panel_cols == 32
    with pytest.raises(ValueError):
        swizzle_for(2, 64, 64, swizzle_bytes=16)
    with pytest.raises(ValueError):
        swizzle_for(1, 64, 16)  # fp8 tiles need cols % 32 == 0
    with pytest.raises(ValueError):
        swizzle_for(2, 8, 64)  # rows % 16


class _CExpr:
    """Just enough of a C expression evaluator for st.cuh's swizzle_bytes ternary."""

    def __init__(self, text, env):
        self.toks = re.findall(r"\d+|[A-Za-z_]\w*|==|!=|>=|<=|[<>?:()%/*+-]", text)
        self.i, self.env = 0, env

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, t=None):
        tok = self.toks[self.i]
        assert t is None or tok == t, (tok, t)
        self.i += 1
        return tok

    def expr(self):
        c = self.cmp()
        if self.peek() == "?":
            self.take("?")
            a = self.expr()
            self.take(":")
            b = self.expr()
            return a if c else b
        return c

    def cmp(self):
        a = self.add()
        ops = {
            "==": lambda x, y: x == y,
            "!=": lambda x, y: x != y,
            ">": lambda x, y: x > y,
            "<": lambda x, y: x < y,
            ">=": lambda x, y: x >= y,
            "<=": lambda x, y: x <= y,
        }
        while self.peek() in ops:
            op, b = self.take(), self.add()
            a = ops[op](a, b)
        return a

    def add(self):
        a = self.mul()
        while self.peek() in ("+", "-"):
            op, b = self.take(), self.mul()
            a = a + b if op == "+" else a - b
        return a

    def mul(self):
        a = self.unary()
        while self.peek() in ("*", "/", "%"):
            op, b = self.take(), self.unary()
            a = a * b if op == "*" else a // b if op == "/" else a % b
        return a

    def unary(self):
        t = self.take()
        if t == "(":
            v = self.expr()
            self.take(")")
            return v
        if t == "-":
            return -self.unary()
        if t.isdigit():
            return int(t)
        return self.env[t]


@pytest.mark.skipif(
    not (TK_ROOT / "include/types/shared/st.cuh").exists(), reason="no ThunderKittens checkout in third_party/"
)
def test_swizzle_selection_matches_st_cuh():
    src = (TK_ROOT / "include/types/shared/st.cuh").read_text()
    m = re.search(r"static constexpr int swizzle_bytes\s*=\s*(.*?);", src, re.S)
    assert m, "swizzle_bytes definition not found in st.cuh"
    expr = m.group(1)
    expr = re.sub(r"//[^\n]*", "", expr)
    expr = expr.replace("kittens::TILE_COL_DIM<T>", "TCD").replace("sizeof(dtype)", "SZ")
    checked = 0
    for sz in (1, 2, 4):
        tcd = 32 if sz == 1 else 16
        for cols in range(tcd, 513, tcd):
            for explicit in (0, 32, 64, 128):
                env = {"_swizzle_bytes": explicit, "cols": cols, "TCD": tcd, "SZ": sz}
                header = _CExpr(expr, env).expr()
                assert swizzle_for(sz, 64, cols, swizzle_bytes=explicit) == header, (sz, cols, explicit)
                checked += 1
    print(f"\n  swizzle_for agrees with st.cuh on {checked} (dtype, cols, explicit) cases")


def test_element_offsets_python_vs_z3():
    for t in (st("bf16", 64, 256), st("fp8e4m3", 32, 96), st("float", 16, 48), st("bf16", 32, 64, False)):
        for base in (0, 128, 384, 1024 + 256):
            for r, c in ((0, 0), (1, 3), (7, t.cols - 1), (t.rows - 1, t.cols // 2)):
                v = z3.simplify(t.byte_address(base, r, c)).as_long()
                assert v == t.element_address(base, r, c)
    # the two encodings of the swizzle agree on plain integers, too
    for sb in (32, 64, 128):
        for a in range(0, 4096, 16):
            assert tk_swizzle_int(a, sb) == hw_swizzle_int(a, sb)


# ---------------------------------------------------------------------------------------------
# reinterpret_cast
# ---------------------------------------------------------------------------------------------


def test_gemm_wide_tile_is_equivalent():
    """TK's bf16_h100 GEMM: ``base_tile b[4]`` (st_bf<64,64>, 128B swizzle: one 64-column panel
    of 64 rows x 128 B = 8 KiB each) read as ``st_bf<64,256>`` (four 64-column panels, panel p at
    p * 64*64*2 = p * 8 KiB): the same bytes, for every 128-byte-aligned base."""
    base = st("bf16", 64, 64)
    wide = st("bf16", 64, 256)
    assert wide.swizzle_bytes == 128 and wide.panel_cols == 64 and base.sizeof == 8192
    res = show("4 x st_bf<64,64> as st_bf<64,256>", prove_reinterpret([base] * 4, wide))
    assert isinstance(res, Equivalent), res
    # also as the epilogue store target, and with 128-row tiles
    res = show(
        "4 x st_bf<128,64> as st_bf<128,256>", prove_reinterpret([st("bf16", 128, 64)] * 4, st("bf16", 128, 256))
    )
    assert isinstance(res, Equivalent), res
    res = show("2 x st_bf<64,128> as st_bf<64,256>", prove_reinterpret([st("bf16", 64, 128)] * 2, wide))
    assert isinstance(res, Equivalent), res
    res = show("4 x st_bf<64,64> as st_bf<256,64> (stacked)", prove_reinterpret([base] * 4, st("bf16", 256, 64)))
    assert isinstance(res, Equivalent), res


def test_reinterpret_128B_as_64B_is_a_counterexample():
    a = st("bf16", 64, 64)
    b = st("bf16", 64, 64, swizzle_bytes=64)
    res = show("st_bf<64,64> 128B vs st_bf<64,64,true,64>", prove_same_map(a, b))
    assert_real_counterexample(res, a, b)
    assert (res.swizzle_a, res.swizzle_b) == (128, 64)
    assert (res.row, res.col) == (0, 0) and res.minimal
    print("   ", res.message())


def test_two_64B_tiles_as_one_128B_tile_differ():
    half = st("bf16", 64, 32)
    assert half.swizzle_bytes == 64
    view = st("bf16", 64, 64)
    res = show("2 x st_bf<64,32> as st_bf<64,64>", prove_reinterpret([half] * 2, view))
    assert isinstance(res, Counterexample), res
    assert_real_counterexample(res, view, _buffer(half, 2))
    print("   ", res.message())


def _buffer(tile, n):
    from tkcheck.knowledge.layouts import TiledBuffer

    return TiledBuffer((tile,) * n, (1, n))


def test_view_larger_than_buffer():
    res = prove_reinterpret([st("bf16", 64, 64)] * 4, st("bf16", 64, 512))
    assert isinstance(res, Counterexample) and res.offset_b is None and res.col == 256


# ---------------------------------------------------------------------------------------------
# hand-written address math
# ---------------------------------------------------------------------------------------------


def xor128(a):
    return a ^ (((a & 0x380) >> 7) << 4)


def test_handwritten_absolute_xor_equals_128B_swizzle():
    t = st("bf16", 64, 64)
    res = show(
        "absolute addr ^ (((addr & 0x380) >> 7) << 4), 128-aligned base",
        prove_handwritten(xor128, t, base_alignment=128, relative=False),
    )
    assert isinstance(res, Equivalent), res
    res = show(
        "same on a 64-row x 256-col tile",
        prove_handwritten(xor128, st("bf16", 64, 256), base_alignment=128, relative=False),
    )
    assert isinstance(res, Equivalent), res


def test_handwritten_relative_xor_needs_1024_alignment():
    t = st("bf16", 64, 64)
    res = show("buffer-relative XOR, 128-aligned base", prove_handwritten(xor128, t, base_alignment=128, relative=True))
    assert isinstance(res, Counterexample), res
    assert res.base % 128 == 0 and res.base % 1024 != 0
    assert res.offset_a != res.offset_b
    print("   ", res.message())
    res = show(
        "buffer-relative XOR, 1024-aligned base", prove_handwritten(xor128, t, base_alignment=1024, relative=True)
    )
    assert isinstance(res, Equivalent), res


def test_handwritten_128B_xor_on_64B_tile_differs():
    t = st("bf16", 64, 32)  # 64B swizzle
    assert t.swizzle_bytes == 64
    res = show("128B XOR on a 64B-swizzled tile", prove_handwritten(xor128, t, base_alignment=1024, relative=False))
    assert isinstance(res, Counterexample), res
    assert (res.swizzle_a, res.swizzle_b) == (64, None)
    assert t.element_address(res.base, res.row, res.col) == res.address_a
    print("   ", res.message())


def test_handwritten_with_own_row_major_pre():
    """A kernel that computes ``r*128 + c*2`` and XORs: equal to the tile for 64-col bf16."""
    t = st("bf16", 64, 64)
    res = prove_handwritten(xor128, t, 128, False, pre=lambda r, c: r * 128 + c * 2)
    assert isinstance(res, Equivalent), res
    res = prove_handwritten(xor128, st("bf16", 64, 128), 128, False, pre=lambda r, c: r * 256 + c * 2)
    assert isinstance(res, Counterexample), res  # row-major 256 B rows are not the panel layout


# ---------------------------------------------------------------------------------------------
# TMA, wgmma, tcgen05, ldmatrix
# ---------------------------------------------------------------------------------------------

MODES = [(db, sb) for db in (1, 2, 4) for sb in (32, 64, 128)]


@pytest.mark.parametrize("dtype_bytes,swizzle_bytes", MODES)
def test_tma_box_matches_tile(dtype_bytes, swizzle_bytes):
    for rows, panels in ((16, 1), (64, 2), (128, 4)):
        t = SharedTileLayout(dtype_bytes, rows, panels * swizzle_bytes // dtype_bytes, swizzle_bytes)
        res = show(f"TMA vs {t.describe()}", prove_same_map(t, TmaBoxLayout(t)))
        assert isinstance(res, Equivalent), res


def test_tma_box_mismatch_is_found():
    """A buffer TMA-loaded with a 64B descriptor and read as a 128B tile."""
    t128, t64 = st("bf16", 64, 64), st("bf16", 64, 64, swizzle_bytes=64)
    res = prove_same_map(t128, TmaBoxLayout(t64))
    assert isinstance(res, Counterexample)
    assert_real_counterexample(res, t128, TmaBoxLayout(t64))


def test_tma_unswizzled_and_vector():
    t = st("bf16", 16, 64, swizzle=False)
    assert TmaBoxLayout(t).box_dims == (64, 16)
    assert isinstance(prove_same_map(t, TmaBoxLayout(t)), Equivalent)
    v = SharedVecLayout(2, 64)
    assert v.alloc_bytes == 128 and SharedVecLayout(4, 40).alloc_bytes == 256
    assert isinstance(prove_same_map(v, TmaBoxLayout(st("bf16", 16, 64, swizzle=False))), Equivalent)


@pytest.mark.parametrize("dtype_bytes,swizzle_bytes", [m for m in MODES if m[0] != 4])
def test_wgmma_descriptor_matches_tile(dtype_bytes, swizzle_bytes):
    for rows, cols_panels in ((64, 1), (64, 4), (256, 2)):
        t = SharedTileLayout(dtype_bytes, rows, cols_panels * swizzle_bytes // dtype_bytes, swizzle_bytes)
        res = show(f"wgmma K-major vs {t.describe()}", prove_same_map(t, WgmmaOperandView(t, False)))
        assert isinstance(res, Equivalent), res
        if dtype_bytes == 2:
            res = show(f"wgmma MN-major vs {t.describe()}", prove_same_map(t, WgmmaOperandView(t, True)))
            assert isinstance(res, Equivalent), res


def test_wgmma_absolute_swizzle_and_descriptor_granularity():
    t = st("bf16", 64, 256)
    # 128- (not 1024-) aligned bases are fine because both sides swizzle absolute addresses
    assert isinstance(prove_same_map(t, WgmmaOperandView(t, False), base_alignment=128), Equivalent)
    assert isinstance(prove_same_map(t, WgmmaOperandView(t, False), base_alignment=16), Equivalent)
    # the descriptor keeps 16-byte units: an 8-byte-aligned base is read from the wrong place
    res = prove_same_map(t, WgmmaOperandView(t, False), base_alignment=8)
    assert isinstance(res, Counterexample) and res.base % 16 == 8
    # operand type at the MMA differs from the tile the data was laid out as
    wrong = st("bf16", 64, 256, swizzle_bytes=64)
    res = show("64B tile read through a 128B wgmma descriptor", prove_same_map(wrong, WgmmaOperandView(t, False)))
    assert isinstance(res, Counterexample)
    assert WgmmaOperandView(t, False).descriptor_fields == {"layout_type": 1, "lbo": 16, "sbo": 1024}
    assert WgmmaOperandView(t, True).descriptor_fields == {"layout_type": 1, "lbo": 8192, "sbo": 1024}


def test_wgmma_unsupported_is_unknown():
    f = st("float", 64, 64)
    assert isinstance(prove_same_map(f, WgmmaOperandView(f, False)), Unknown)
    u = st("bf16", 64, 64, swizzle=False)
    assert isinstance(prove_same_map(u, WgmmaOperandView(u, False)), Unknown)
    q = st("fp8e4m3", 64, 128)
    assert isinstance(prove_same_map(q, WgmmaOperandView(q, True)), Unknown)


def test_tcgen05_is_never_a_counterexample():
    t = st("bf16", 128, 128)
    ok = prove_same_map(t, tcgen05_operand_view(t, False))
    assert isinstance(ok, Equivalent) and ok.assumptions
    bad = prove_same_map(st("bf16", 128, 128, swizzle_bytes=64), tcgen05_operand_view(t, False))
    assert isinstance(bad, Unknown) and "unmeasured" in bad.reason


@pytest.mark.parametrize("dtype", ["fp8e4m3", "bf16", "float"])
def test_ldmatrix_rows_consistent(dtype):
    for cols in {"fp8e4m3": (32, 64, 128), "bf16": (16, 32, 64, 256), "float": (16, 32, 64)}[dtype]:
        t = st(dtype, 64, cols)
        res = show(f"ldmatrix rows of {t.describe()}", prove_ldmatrix_rows(t))
        assert isinstance(res, Equivalent), res


# ---------------------------------------------------------------------------------------------
# subtiles
# ---------------------------------------------------------------------------------------------


def test_subtile_symbolic_index_is_consistent():
    p = st("bf16", 128, 128)
    i, j = z3.BitVecs("i j", 32)
    view = p.subtile(32, 64, i, j)
    res = show(
        "st_subtile<32,64>({i,j}) for all i<4, j<2",
        prove_same_map(view, p.window(32, 64, i * 32, j * 64), base_constraint=z3.And(z3.ULT(i, 4), z3.ULT(j, 2))),
    )
    assert isinstance(res, Equivalent), res


def test_unswizzled_st_subtile_uses_subtile_cols():
    """st_subtile::idx for unswizzled parents strides rows by the SUBTILE's cols (st.cuh)."""
    p = st("bf16", 64, 128, swizzle=False)
    res = prove_same_map(SubtileView(p, 16, 64, 16, 64), p.window(16, 64, 16, 64))
    assert isinstance(res, Counterexample), res
    # full-width subtiles are fine
    assert isinstance(prove_same_map(SubtileView(p, 16, 128, 16, 0), p.window(16, 128, 16, 0)), Equivalent)


def test_column_subtile_reference():
    p = st("bf16", 64, 256)
    off, sub = p.column_subtile(128, 1)
    assert off == 64 * 64 * 2 * 2 and sub.swizzle_bytes == 128
    res = prove_same_map(AtOffset(sub, off), p.window(64, 128, 0, 128))
    assert isinstance(res, Equivalent), res
    with pytest.raises(ValueError):
        p.column_subtile(32, 0)


# ---------------------------------------------------------------------------------------------
# alignment and solver discipline
# ---------------------------------------------------------------------------------------------


def test_alignment_contract():
    # TK tiles are 128-aligned: TMA and absolute-address consumers are satisfied
    rep = check_alignment(128, ["tma_tensor", "bulk_copy", "wgmma_descriptor", "ldmatrix"])
    assert isinstance(rep, AlignmentReport) and rep.ok
    # a buffer-relative 128B XOR needs 1024
    rep = check_alignment(128, [relative_xor_requirement(128)])
    assert not rep.ok and rep.violations[0].required == 1024 and rep.violations[0].witness_base == 128
    assert check_alignment(1024, [relative_xor_requirement(128)]).ok
    # a TMA destination 16 bytes past a 128-byte boundary
    rep = check_alignment(128, ["tma_tensor", "bulk_copy"], base_offset=16)
    assert [v.consumer for v in rep.violations] == ["tma_tensor"] and rep.violations[0].witness_base == 16
    print("\n   ", rep.violations[0].message())


def test_timeout_is_unknown():
    res = prove_reinterpret([st("bf16", 256, 64)] * 4, st("bf16", 256, 256), timeout_ms=1)
    print(f"\n    1 ms limit on a 256x256 reinterpret: {res}")
    assert isinstance(res, (Unknown, Equivalent))  # never a Counterexample
