"""Layout rules TK101..TK104: planted corpus bugs fire with their counterexample element, the
corpus and the clean idioms stay clean, and the model facts the proofs rest on."""

import tomllib
from pathlib import Path

import pytest

from tkcheck import registry
from tkcheck.checks import layout
from tkcheck.engine import CheckOptions, check_file
from tkcheck.model import expr as E
from tkcheck.model import ir

ROOT = Path(__file__).resolve().parent.parent
ALL = frozenset(r.code for r in registry.all_rules())
LAYOUT = frozenset({"TK101", "TK102", "TK103", "TK104"})
MUTATIONS = tomllib.loads((ROOT / "corpus" / "mutations_layout.toml").read_text())["mutation"]


def _check(path: Path, text: str | None = None):
    return check_file(str(path), CheckOptions(enabled=ALL), text=text)


@pytest.mark.parametrize("mut", MUTATIONS, ids=[m["id"] for m in MUTATIONS])
def test_planted_layout_bug_reported_with_element(mut, corpus_checks):
    src_path = ROOT / "corpus" / mut["kernel"]
    src = src_path.read_text()
    assert src.count(mut["find"]) == 1
    # the mutant as tests/test_corpus.py checks it (`tkcheck eval`'s check): one per session
    (m,) = [m for m in corpus_checks.mutations if m.id == mut["id"]]
    res = corpus_checks.mutation(m)
    got = [f for f in res.findings if f.code in LAYOUT]
    assert sorted({f.code for f in got}) == sorted(mut["rules"]), [(f.code, f.message) for f in got]
    for f in got:
        assert "element (" in f.message and "swizzle" in f.message
        assert {"row", "col", "offset_a", "offset_b"} <= set(f.witness)
    assert res.timing.get("check:layout", 0.0) < 5.0


@pytest.mark.parametrize("kernel", sorted((ROOT / "corpus").glob("*/*.cu")), ids=lambda p: p.name)
def test_corpus_layout_clean(kernel, corpus_checks):
    # the check tests/test_corpus.py makes of the kernel (its own architecture, every rule): one per session
    res = corpus_checks.clean(kernel)
    assert [f for f in res.findings if f.code in LAYOUT] == []


def test_layout_time_recorded():
    res = _check(ROOT / "fixtures" / "layout" / "wide_b_operand_clean.cu")
    assert "check:layout" in res.timing


def _buf(alignment, dims=(), strides=(), base_offset=0, t=None):
    t = t or ir.TileType("st", "st_bf<64, 64>", "bf16", 2, E.Const(64), E.Const(64))
    return ir.SharedBuffer(
        "b", t, tuple(E.Const(d) for d in dims), None, alignment=alignment, base_offset=base_offset, strides=strides
    )


def test_element_alignment():
    b = _buf(1024, dims=(4, 2))
    assert layout.element_alignment(b, ir.Ref("b", (E.Var("k", E.LOOP), E.Const(1)))) == (1024, 0)
    small = ir.TileType("st", "st_bf<16, 64>", "bf16", 2, E.Const(16), E.Const(64))
    b2 = _buf(1024, dims=(4,), t=small)  # 2048-byte tiles
    assert layout.element_alignment(b2, ir.Ref("b", (E.Var("k", E.LOOP),))) == (1024, 0)
    sv = ir.TileType("st", "st_bf<16, 16>", "bf16", 2, E.Const(16), E.Const(16))  # 512 bytes
    b3 = _buf(1024, dims=(4,), t=sv)
    assert layout.element_alignment(b3, ir.Ref("b", (E.Var("k", E.LOOP),))) == (512, 0)
    assert layout.element_alignment(b3, ir.Ref("b", (E.Const(1),))) == (1024, 512)
    assert layout.element_alignment(_buf(1024, base_offset=16384), ir.Ref("b")) == (1024, 0)


def test_tile_layout_from_model_types():
    t = ir.TileType("st", "st_bf<64, 32>", "bf16", 2, E.Const(64), E.Const(32))
    assert layout.tile_layout(t).swizzle_bytes == 64
    t2 = ir.TileType("st", "st_bf<64, 64, false>", "bf16", 2, E.Const(64), E.Const(64), E.Const(0))
    assert layout.tile_layout(t2).swizzle_bytes is None
    t3 = ir.TileType("st", "st_bf<64, 64, true, 32>", "bf16", 2, E.Const(64), E.Const(64), E.Const(32))
    assert layout.tile_layout(t3).swizzle_bytes == 32
    assert layout.tile_layout(ir.TileType("st", "st_bf<64, N>", "bf16", 2, E.Const(64), E.Var("N"))) is None


def test_split_xor_absolute_and_relative():
    X = E.Var("smem_addr(t)", E.PARAM)
    off = E.binop("*", E.Var("tid", E.THREAD), E.Const(128))

    def swz(a):
        return E.binop("^", a, E.binop("<<", E.binop(">>", E.binop("&", a, E.Const(0x380)), E.Const(7)), E.Const(4)))

    rel, fn, _ = layout._split_xor(swz(E.binop("+", X, off)), X)
    assert rel is False
    rel, fn, _ = layout._split_xor(E.binop("+", X, swz(off)), X)
    assert rel is True
    assert layout._split_xor(E.binop("+", X, off), X) is None
