"""SASS rules (TK601-TK603), the SASS evidence for TK406, and the engine's SASS hook.

The rules compare the source model with nvcc's SASS, so their documentation examples
cannot run in tests/test_rules_meta.py (which runs every rule without a compiler): the
rules are `engine_only` there and their examples are compiled here instead. Tests that
need nvcc + a disassembler skip when none is found; the skip path itself is tested
everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tkcheck import registry
from tkcheck.checks import sass_cross
from tkcheck.sass import build as sass_build
from tkcheck.checks.analysis import Analysis
from tkcheck.engine import CheckOptions, ParseOptions, check_file, models_of
from tkcheck.sass import SassKernel, SassResult, find_toolchain
from tkcheck.sass import compile as sass_compile
from tkcheck.sass.toolchain import ToolchainNotFound
from tkcheck.rules import (
    tk601_tensor_core_path_not_taken as tk601,
    tk602_register_spill_in_specialized_kernel as tk602,
    tk603_source_sass_disagreement as tk603,
)

KERNELS = Path(__file__).parent / "sass_kernels"
ALL = frozenset(r.code for r in registry.all_rules())
SASS_RULES = ("TK601", "TK602", "TK603")


def tagged_line(path: Path, tag: str) -> int:
    for no, line in enumerate(path.read_text().splitlines(), 1):
        if re.search(rf"//\s*L:{re.escape(tag)}\b", line):
            return no
    raise AssertionError(f"no tag {tag} in {path}")


@pytest.fixture(scope="module")
def toolchain():
    try:
        return find_toolchain()
    except ToolchainNotFound as exc:
        pytest.skip(f"no CUDA toolchain: {exc}")


@pytest.fixture(scope="module")
def sass_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("sass_rules_cache"))


@pytest.fixture(scope="module")
def check(toolchain, sass_cache):
    def _check(path, *, arch=None, defines=(), enabled=ALL, **kw):
        opts = CheckOptions(
            parse=ParseOptions(defines=tuple(defines)),
            enabled=enabled,
            sass=True,
            sass_arch=arch,
            sass_cache_dir=sass_cache,
            **kw,
        )
        res = check_file(str(path), opts)
        assert not any("SASS pass skipped" in n for n in res.notes), res.notes
        return res

    return _check


def codes(res) -> list[str]:
    return sorted(f.code for f in res.findings)


# ---------------------------------------------------------------- catalog --


@pytest.mark.parametrize("mod", [tk601, tk602, tk603], ids=SASS_RULES)
def test_sass_rules_are_engine_only_with_documented_examples(mod):
    rule = mod.RULE
    assert rule.engine_only and "sass" in rule.tags and rule.check is not None
    # the examples live in the doc (the catalog test does not run them without nvcc)
    assert rule.bad_example is None and rule.good_example is None
    assert mod._BAD.strip() in rule.doc and mod._GOOD.strip() in rule.doc and mod._BAD != mod._GOOD


# SASS arch of the bad example: TK601/TK603's examples are about a build for plain sm_90.
EXAMPLE_ARCH = {"TK601": "sm_90", "TK602": None, "TK603": "sm_90"}


@pytest.mark.parametrize("mod", [tk601, tk602, tk603], ids=SASS_RULES)
def test_bad_example_fires_exactly_this_rule(mod, check, tmp_path):
    p = tmp_path / "bad.cu"
    p.write_text(mod._BAD)
    res = check(p, arch=EXAMPLE_ARCH[mod.RULE.code])
    assert sorted({f.code for f in res.findings}) == [mod.RULE.code], [
        (f.code, f.location.row, f.message) for f in res.findings
    ] + res.notes
    f = res.findings[0]
    assert re.search(r"0x[0-9a-f]{4}|sm_90", f.message), f.message  # cites SASS


@pytest.mark.parametrize("mod", [tk601, tk602, tk603], ids=SASS_RULES)
def test_good_example_is_clean(mod, check, tmp_path):
    p = tmp_path / "good.cu"
    p.write_text(mod._GOOD)
    res = check(p)
    assert res.findings == [], [(f.code, f.location.row, f.message) for f in res.findings]
    assert "sass" in res.timing and "sass_cache_hit" in res.timing


# ----------------------------------------------------------- test kernels --


def test_tk601_wgmma_compiled_out_on_sm90(check):
    src = KERNELS / "tc_path.cu"
    res = check(src, arch="sm_90")
    [f] = [f for f in res.findings if f.code == "TK601"]
    assert "wgmma.mma_async" in f.message and "sm_90" in f.message
    assert f.witness["sass_async_mma"] == 0 and f.witness["arch"] == "sm_90"
    assert tagged_line(src, "mma") in [r.location.row for r in f.related]  # the call site in the kernel
    assert codes(check(src)) == []  # sm_90a: HGMMA present


def test_tk602_spilling_warp_specialized_kernel(check):
    src = KERNELS / "ws_spill.cu"
    res = check(src)
    [f] = [f for f in res.findings if f.code == "TK602"]
    assert f.witness["spill_store_bytes"] > 0 and f.witness["registers"] == 168
    assert re.fullmatch(r"0x[0-9a-f]{4,}", f.witness["sass_address"])
    assert f.location.filename == str(src) and f.location.row > tagged_line(src, "consumer")
    assert codes(check(src, defines=["SMALL"])) == []


def test_tk603_fence_and_arrive_compiled_out(check):
    src = KERNELS / "sync_disagree.cu"
    res = check(src, arch="sm_90")
    fs = [f for f in res.findings if f.code == "TK603"]
    msgs = " | ".join(f.message for f in fs)
    assert len(fs) == 2, msgs
    fence = next(f for f in fs if "FENCE.VIEW.ASYNC" in f.message)
    assert "UBLKCP.G.S" in fence.message and fence.witness["sass_address"].startswith("0x")
    assert tagged_line(src, "fence") in [r.location.row for r in fence.related]
    assert tagged_line(src, "store") in [r.location.row for r in fence.related]
    arrive = next(f for f in fs if "arrive" in f.message and f is not fence)
    assert tagged_line(src, "arrive") in [r.location.row for r in arrive.related]
    assert codes(check(src)) == []  # sm_90a agrees


def _analysis(src: Path, result, name: str, defines=()):
    [m] = [m for m in models_of(str(src), ParseOptions(defines=tuple(defines))) if m.name == name]
    an = Analysis(m)
    sass_cross.attach(an, result, m)
    return an


def test_tk406_evidence_setmaxnreg_without_register_cap(toolchain, sass_cache):
    src = KERNELS / "setmaxnreg_nocap.cu"
    res = sass_build.run_sass(str(src), src.read_text(), ParseOptions(), cache_dir=sass_cache)
    an = _analysis(src, res, "regs_kernel")
    ev = sass_cross.setmaxnreg_sass_evidence(an)
    assert ev is not None and ev.ignored and ev.sass_sites == ()
    assert ev.message and "C7508" in ev.message and ev.maxntid is None
    assert {tagged_line(src, "down"), tagged_line(src, "up")} <= set(ev.source_lines)
    assert "ptxas dropped setmaxnreg" in ev.describe()

    capped = sass_build.run_sass(str(src), src.read_text(), ParseOptions(defines=("CAPPED",)), cache_dir=sass_cache)
    an = _analysis(src, capped, "regs_kernel", defines=("CAPPED",))
    ev = sass_cross.setmaxnreg_sass_evidence(an)
    assert ev is not None and not ev.ignored and len(ev.sass_sites) == 2 and ev.message is None


def test_sass_pass_off_by_default_runs_no_sass_rule(tmp_path):
    p = tmp_path / "bad.cu"
    p.write_text(tk601._BAD)
    res = check_file(str(p), CheckOptions(enabled=ALL))
    assert res.findings == [] and "sass" not in res.timing


# ------------------------------------------------------------- skip paths --


def test_no_toolchain_is_one_note_not_an_error(tmp_path, monkeypatch):
    def missing(*a, **k):
        raise ToolchainNotFound("no CUDA compiler found")

    monkeypatch.setattr(sass_compile, "find_toolchain", missing)
    p = tmp_path / "bad.cu"
    p.write_text(tk601._BAD)
    res = check_file(str(p), CheckOptions(enabled=ALL, sass=True, sass_cache_dir=str(tmp_path / "c")))
    sass_notes = [n for n in res.notes if "SASS" in n]
    assert sass_notes == ["SASS pass skipped: no CUDA compiler found"]
    assert res.findings == [] and not getattr(res, "internal_errors", [])


def test_tk_source_without_real_headers_is_one_note(tmp_path, monkeypatch):
    def never(*a, **k):
        raise AssertionError("must not compile without real TK headers")

    monkeypatch.setattr(sass_compile, "find_toolchain", never)
    p = tmp_path / "k.cu"
    p.write_text('#include "kittens.cuh"\nusing namespace kittens;\n__global__ void k() {}\n')
    res = check_file(str(p), CheckOptions(enabled=ALL, sass=True))
    assert [n for n in res.notes if "SASS" in n] == [
        "SASS pass skipped: the file includes ThunderKittens and compiling it needs the real headers "
        "(give --tk-include)"
    ]


def test_build_config_adds_tk_dirs_and_arch_defines(tmp_path):
    inc = tmp_path / "TK" / "include"
    (tmp_path / "TK" / "prototype").mkdir(parents=True)
    inc.mkdir()
    cfg, why = sass_build.build_config(
        '#include "kittens.cuh"\n', ParseOptions(tk_include=str(inc), defines=("X=1",)), "sm_100a"
    )
    assert why is None and cfg["arch"] == "sm_100a"
    assert cfg["include_dirs"] == [str(inc), str(tmp_path / "TK" / "prototype")]
    assert cfg["defines"] == ["X=1", "KITTENS_HOPPER", "KITTENS_BLACKWELL"]
    assert "-std=c++20" in cfg["extra_flags"]


# ---------------------------------------------------------------- matching --


class _M:
    def __init__(self, name, kind):
        self.name, self.kind = name, kind


def _result(*demangled):
    ks = {f"_Z{i}": SassKernel(mangled=f"_Z{i}", demangled=d, arch="sm_90a") for i, d in enumerate(demangled)}
    return SassResult(source_path="x.cu", arch="sm_90a", kernels=ks)


def test_match_kernel_by_name_and_lcf_instantiation():
    r = _result(
        "gemm_ring_kernel(globals)",
        "void kittens::prototype::lcf::kernel<gemm_template>(gemm_template::layout::globals)",
        "void kittens::prototype::lcf::kernel<other_template>(other_template::layout::globals)",
        "void tmpl<int, 64>(float*)",
        "void tmpl<int, 128>(float*)",
    )
    assert sass_cross.match_kernel(r, _M("gemm_ring_kernel", "global")).mangled == "_Z0"
    assert sass_cross.match_kernel(r, _M("gemm_template", "lcf")).mangled == "_Z1"
    assert sass_cross.match_kernel(r, _M("other_template", "lcf")).mangled == "_Z2"
    assert sass_cross.match_kernel(r, _M("gemm_template", "lcsf")) is None
    assert sass_cross.match_kernel(r, _M("tmpl", "global")) is None  # two instantiations
    assert sass_cross.match_kernel(r, _M("missing", "global")) is None


def test_tk406_uses_ptxas_evidence(tmp_path):
    """TK406 with --sass: the uncapped kernel is reported with ptxas's word, the capped one is clean."""
    from tkcheck.sass import ToolchainNotFound, find_toolchain

    try:
        find_toolchain()
    except ToolchainNotFound as e:
        pytest.skip(f"no CUDA toolchain: {e}")
    src = KERNELS / "setmaxnreg_nocap.cu"
    for defines, want in (((), True), (("CAPPED",), False)):
        opts = CheckOptions(
            parse=ParseOptions(defines=defines),
            enabled=frozenset({"TK406"}),
            sass=True,
            sass_cache_dir=str(tmp_path / "c"),
        )
        res = check_file(str(src), opts)
        got = [f for f in res.findings if f.code == "TK406"]
        assert bool(got) == want, (defines, [f.message for f in got], res.notes)
        if want:
            assert "ptxas" in got[0].message or "USETMAXREG" in got[0].message
