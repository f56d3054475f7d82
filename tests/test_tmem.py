"""TMEM rules (TK203, TK204, TK205): the model of tensor memory (allocators, tt tiles, tcgen05.ld/st,
tcgen05 MMAs and their commits), the planted Blackwell bugs of the corpus, and the clean kernel."""

import tomllib

import pytest

from tkcheck import registry
from tkcheck.engine import CheckOptions, ParseOptions, check_file, models_of
from tkcheck.model import ir

from conftest import ROOT

ALL = frozenset(r.code for r in registry.all_rules())
MINE = {"TK203", "TK204", "TK205"}
KERNEL = ROOT / "corpus" / "blackwell" / "gemm_tcgen05.cu"
BW = ParseOptions(arch="sm_100a")


def _mutations():
    out = []
    for m in tomllib.loads((ROOT / "corpus" / "mutations.toml").read_text())["mutation"]:
        if m["id"].startswith("tc-") and (set(m["rules"]) & MINE or "TK205" in m["description"]):
            out.append(pytest.param(m, id=m["id"]))
    return out


def _check(path, text=None, codes=ALL):
    return check_file(str(path), CheckOptions(enabled=frozenset(codes), parse=BW), text=text)


def _model(text):
    return [m for m in models_of(str(KERNEL), BW, text=text) if m.name == "gemm_tcgen05_kernel"][0]


def test_tmem_model_of_the_corpus_kernel():
    m = _model(KERNEL.read_text())
    alloc = m.tmem_allocators["tm"]
    assert (alloc.nblocks_per_sm, alloc.ncta, alloc.managed, alloc.cols) == (1, 2, False, 512)
    acc = m.tmem_tiles["acc"]
    assert [(e[0].eval({}), e[1].eval({})) for e in acc.elements] == [(0, 0), (0, 256)]
    kinds = [o.tmem.action for o in m.ops if o.kind == ir.TMEM_OP]
    assert kinds == ["alloc", "load", "wait_ld", "dealloc"]
    mmas = [o for o in m.ops if o.kind == ir.MMA]
    assert {o.api for o in mmas} == {"mm2_AB", "mma2_AB"}
    assert all(o.mma.family == "tcgen05" and o.mma.ncta == 2 and o.mma.kind_of("acc") == "tmem" for o in mmas)
    assert [o.mma.accumulate for o in mmas] == [False, True]
    assert all((o.mma.transpose_a, o.mma.transpose_b) == (False, False) for o in mmas)
    assert {o.mma.commit_barrier.name for o in mmas} == {"inputs_finished"}
    # the semaphore overload commits: an arrive on inputs_finished right after each MMA
    commits = [o for o in m.ops if o.kind == ir.MBAR_ARRIVE and o.mbar.of_mma]
    assert {o.barrier.name for o in commits} == {"inputs_finished"}
    # tma::cluster::arrive(bar, cta) / wait(bar, phase) are mbarrier ops (not the cluster barrier)
    tok = [o for o in m.ops if o.barrier is not None and o.barrier.name == "tmem_empty"]
    assert {o.kind for o in tok} == {ir.MBAR_INIT, ir.MBAR_ARRIVE, ir.MBAR_WAIT}
    # the epilogue's lane offset is 32 * warpid()
    ld = [o for o in m.ops if o.kind == ir.TMEM_OP and o.tmem.action == "load"][0]
    assert ld.tmem.lane_off.eval({"tid": 96}) == 96 and ld.guard.exact


def test_corpus_kernel_clean():
    res = _check(KERNEL, codes=MINE)
    assert not res.findings, [(f.code, f.location.row, f.message) for f in res.findings]
    assert not res.internal_errors


@pytest.mark.parametrize("m", _mutations())
def test_planted_tmem_bug_found(m, corpus_checks):
    src = KERNEL.read_text()
    assert src.count(m["find"]) == 1, m["id"]
    # the planted bug as `tkcheck eval` checks it (every rule, sm_100a): the session memo's check,
    # which test_corpus.py asks for too (issue 29: each planted bug is checked once per run)
    (spec,) = [x for x in corpus_checks.mutations if x.id == m["id"]]
    assert (ROOT / "corpus" / spec.kernel) == KERNEL
    res = corpus_checks.mutation(spec)
    want = (set(m["rules"]) & MINE) or {"TK205"}
    got = {f.code for f in res.findings}
    assert want <= got, (m["id"], [(f.code, f.message) for f in res.findings])
    for f in res.findings:
        if f.code in ("TK205",) and f.witness.get("kind") != "no_token_wait":
            assert f.related, f.message


@pytest.mark.parametrize("code", sorted(MINE))
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_rule_examples_on_both_parse_modes(code, arch, tmp_path):
    rule = registry.by_code()[code]
    for which, want in (("bad", {code}), ("good", set())):
        p = tmp_path / f"{which}.cu"
        p.write_text(getattr(rule, f"{which}_example"))
        res = check_file(str(p), CheckOptions(enabled=ALL, parse=ParseOptions(arch=arch)))
        assert {f.code for f in res.findings} == want, (which, [(f.code, f.message) for f in res.findings])


def test_lane_quarter_witness_names_warp_and_lanes(tmp_path):
    src = KERNEL.read_text().replace(
        "subtile<tt<float, 32, 64>>(32 * warp, 64 * i)", "subtile<tt<float, 32, 64>>(32 * ((warp + 1) % 4), 64 * i)"
    )
    p = tmp_path / "k.cu"
    p.write_text(src)
    fs = [f for f in _check(p, codes={"TK203"}).findings]
    assert len(fs) == 1 and fs[0].witness["warp"] == 0 and fs[0].witness["lanes"] == [32, 64]


def test_unknown_lane_offset_gives_no_finding(tmp_path):
    # the offset depends on a runtime value: unknown -> no finding
    src = KERNEL.read_text().replace(
        "subtile<tt<float, 32, 64>>(32 * warp, 64 * i)", "subtile<tt<float, 32, 64>>(32 * (g.C.rows() % 4), 64 * i)"
    )
    p = tmp_path / "k.cu"
    p.write_text(src)
    assert not _check(p, codes={"TK203"}).findings
