"""SASS front end: compile the kernels in tests/sass_kernels/ and check the parsed facts.

Tests that need nvcc skip when no CUDA compiler + disassembler is found; parser tests
run everywhere.  Compiles are cached in one temporary directory for the whole module.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tkcheck.sass import (
    FactKind,
    SassResult,
    Skipped,
    SourceLoc,
    arrive_sites,
    compile_and_disassemble,
    fence_sites,
    find_toolchain,
    has_tensor_core_ops,
    mma_shapes,
    named_barriers,
    parse_ptx,
    parse_ptxas_log,
    parse_sass,
    setmaxnreg_ignored,
    spills,
    summary,
)
from tkcheck.sass import toolchain as toolchain_mod
from tkcheck.sass.toolchain import ToolchainNotFound

KERNELS = Path(__file__).parent / "sass_kernels"
REPO = Path(__file__).resolve().parent.parent


def tagged_line(path: Path, tag: str) -> int:
    """1-based line of the `// L:<tag>` marker in a test kernel."""
    for no, line in enumerate(path.read_text().splitlines(), 1):
        if re.search(rf"//\s*L:{re.escape(tag)}\b", line):
            return no
    raise AssertionError(f"no tag {tag} in {path}")


def lines(kernel, kind, **kw) -> set[int]:
    return {loc.line for loc in kernel.lines_for(kind, **kw)}


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def toolchain():
    try:
        return find_toolchain()
    except ToolchainNotFound as exc:
        pytest.skip(f"no CUDA toolchain: {exc}")


@pytest.fixture(scope="module")
def build(toolchain, tmp_path_factory):
    cache = tmp_path_factory.mktemp("sass_cache")
    memo: dict[tuple[str, str], SassResult | Skipped] = {}

    def _build(name: str, arch: str = "sm_90a") -> SassResult:
        key = (name, arch)
        if key not in memo:
            memo[key] = compile_and_disassemble(KERNELS / f"{name}.cu", arch=arch, cache_dir=cache, toolchain=toolchain)
        result = memo[key]
        if isinstance(result, Skipped):
            if result.kind == "compile-failed" and arch.startswith("sm_100"):
                pytest.skip(f"this nvcc cannot build {arch}: {result.reason}")
            pytest.fail(result.reason + "\n" + result.detail[-2000:])
        return result

    return _build


def only_kernel(result: SassResult):
    assert len(result.kernels) == 1, list(result.kernels)
    return next(iter(result.kernels.values()))


# ---------------------------------------------------------------------------- compiled kernels


def test_mbarrier_and_bulk_copy_facts(build):
    src = KERNELS / "mbarrier_bulk.cu"
    k = only_kernel(build("mbarrier_bulk"))
    assert k.short_name == "mbarrier_bulk_kernel"
    assert lines(k, FactKind.MBARRIER_INIT) == {tagged_line(src, "init")}

    arrives = k.facts_of(FactKind.MBARRIER_ARRIVE)
    assert [(f.get("arrivals"), f.get("tx")) for f in arrives] == [(1, "expect")]
    assert arrives[0].loc.line == tagged_line(src, "expect_tx")
    assert set(arrive_sites(k)) == {SourceLoc(str(src.resolve()), tagged_line(src, "expect_tx"))}

    # The try-wait loop: ptxas peels a first probe and tags it with an earlier line, so
    # the tagged line must be among the wait lines (not the only one).
    waits = k.facts_of(FactKind.MBARRIER_WAIT)
    assert waits and all(not f.get("test_only") for f in waits)
    assert tagged_line(src, "try_wait") in lines(k, FactKind.MBARRIER_WAIT)

    copies = {(f.instruction.base, f.get("direction"), f.loc.line) for f in k.facts_of(FactKind.BULK_COPY)}
    assert copies == {
        ("UBLKCP", "load", tagged_line(src, "bulk_load")),
        ("UTMALDG", "load", tagged_line(src, "tma_load")),
        ("UTMASTG", "store", tagged_line(src, "tma_store")),
        ("UBLKCP", "store", tagged_line(src, "bulk_store")),
    }
    assert {f.get("dims") for f in k.facts_of(FactKind.BULK_COPY) if f.get("tensor")} == {2}
    assert lines(k, FactKind.BULK_COMMIT) == {tagged_line(src, "commit")}

    assert lines(k, FactKind.FENCE_PROXY_ASYNC) == {tagged_line(src, "fence_proxy")}
    assert [f.get("space") for f in fence_sites(k)[SourceLoc(str(src.resolve()), tagged_line(src, "fence_proxy"))]] == [
        "S"
    ]

    bars = {(b.kind, b.barrier_id, b.thread_count, b.loc.line) for b in named_barriers(k)}
    assert bars == {
        (FactKind.BARRIER_SYNC, 0, None, tagged_line(src, "syncthreads")),
        (FactKind.BARRIER_SYNC, 1, 128, tagged_line(src, "bar_sync")),
        (FactKind.BARRIER_ARRIVE, 2, 256, tagged_line(src, "bar_arrive")),
    }
    assert not has_tensor_core_ops(k)
    assert k.resources.registers and k.resources.shared_bytes == 4104
    assert k.resources.spill_store_bytes == 0 and spills(k) is None


def test_wgmma_takes_tensor_core_path_only_on_sm90a(build):
    src = KERNELS / "wgmma.cu"
    k90a = only_kernel(build("wgmma", "sm_90a"))
    assert has_tensor_core_ops(k90a)
    assert mma_shapes(k90a) == {(64, 8, 16)}
    [mma] = k90a.facts_of(FactKind.MMA_ASYNC)
    assert mma.instruction.opcode == "HGMMA.64x8x16.F32.BF16"
    assert mma.get("family") == "wgmma" and mma.get("types") == "F32.BF16"
    # ptxas schedules the HGMMA after address math of later lines and the line table
    # then gives it their line (seen here and in TK's GEMM): only the file is certain.
    kernel_lines = range(tagged_line(src, "wgmma_fence") - 3, len(src.read_text().splitlines()) + 1)
    assert mma.loc.file.endswith("wgmma.cu") and mma.loc.line in kernel_lines
    assert lines(k90a, FactKind.WARPGROUP_ARRIVE) == {tagged_line(src, "wgmma_fence")}
    [wait] = k90a.facts_of(FactKind.WARPGROUP_WAIT)
    assert wait.get("pending") == 0 and wait.loc.line == tagged_line(src, "wgmma_wait")

    k90 = only_kernel(build("wgmma", "sm_90"))
    assert not has_tensor_core_ops(k90, include_sync_mma=True)
    assert not k90.facts_of(FactKind.WARPGROUP_ARRIVE, FactKind.WARPGROUP_WAIT)


def test_setmaxnreg_with_and_without_register_cap(build):
    src = KERNELS / "setmaxnreg.cu"
    result = build("setmaxnreg")
    capped = result.kernel("capped_kernel")
    uncapped = result.kernel("uncapped_kernel")
    assert capped is not None and uncapped is not None

    regs = {
        (f.get("action"), f.get("count"), f.instruction.call_site.line) for f in capped.facts_of(FactKind.SETMAXNREG)
    }
    assert regs == {("inc", 232, tagged_line(src, "capped_inc")), ("dec", 40, tagged_line(src, "capped_dec"))}
    # inline chain: innermost frame is the asm in the helper template, outermost the call
    for f in capped.facts_of(FactKind.SETMAXNREG):
        assert len(f.instruction.inline_chain) >= 2
    assert capped.ptx is not None and capped.ptx.maxntid == (384, 1, 1)
    assert capped.ptx.minnctapersm == 1

    assert not uncapped.facts_of(FactKind.SETMAXNREG)
    assert any(m.code == "C7508" for m in result.messages)
    [ignored] = setmaxnreg_ignored(result)
    assert ignored.kernel == uncapped.mangled
    assert ignored.message is not None and ignored.message.code == "C7508"
    call_sites = {(s.action, s.inline_chain[-1].line) for s in ignored.sites}
    assert call_sites == {("inc", tagged_line(src, "uncapped_inc")), ("dec", tagged_line(src, "uncapped_dec"))}
    assert all(Path(s.inline_chain[-1].file).name == "setmaxnreg.cu" for s in ignored.sites)


def test_spilling_kernel(build):
    src = KERNELS / "spill.cu"
    k = only_kernel(build("spill"))
    report = spills(k)
    assert report is not None
    assert report.spill_store_bytes > 0 and report.spill_load_bytes > 0
    assert report.local_loads > 0 and report.local_stores > 0
    assert k.resources.registers is not None and k.resources.registers <= 32
    n_lines = len(src.read_text().splitlines())
    assert report.sites and all(1 <= s.line <= n_lines and s.file.endswith("spill.cu") for s in report.sites)


def test_tcgen05_on_sm100a(build):
    src = KERNELS / "tcgen05.cu"
    k = only_kernel(build("tcgen05", "sm_100a"))
    assert has_tensor_core_ops(k)
    [mma] = k.facts_of(FactKind.MMA_ASYNC)
    assert mma.instruction.base == "UTCHMMA" and mma.get("family") == "tcgen05"
    assert mma.loc.line == tagged_line(src, "tc_mma")
    ops = {(f.get("op"), f.loc.line) for f in k.facts_of(FactKind.TCGEN05)}
    assert ("alloc", tagged_line(src, "tc_alloc")) in ops
    assert ("dealloc", tagged_line(src, "tc_dealloc")) in ops
    assert ("commit", tagged_line(src, "tc_commit")) in ops
    assert ("ld", tagged_line(src, "tc_ld")) in ops
    assert tagged_line(src, "tc_init") in lines(k, FactKind.MBARRIER_INIT)
    # The same source without the sm_100a feature macro has no tensor-core work.
    k90 = only_kernel(build("tcgen05", "sm_90a"))
    assert not has_tensor_core_ops(k90) and not k90.facts_of(FactKind.TCGEN05)


def test_warm_hit_reuses_the_recorded_headers(toolchain, tmp_path):
    """A warm hit does not run `nvcc -MM` again while the source, its headers and the folders a
    header lookup reads are unchanged; a header added next to the source makes it ask again."""
    import dataclasses
    import os
    import stat

    log = tmp_path / "nvcc.log"
    wrapper = tmp_path / "nvcc"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{toolchain.nvcc}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    tc = dataclasses.replace(toolchain, nvcc=str(wrapper))
    work = tmp_path / "k"
    work.mkdir()
    (work / "consts.cuh").write_text("#define SCALE 2.0f\n")
    src = work / "k.cu"
    src.write_text('#include "consts.cuh"\n__global__ void k(float *p) { p[threadIdx.x] *= SCALE; }\n')
    cache = tmp_path / "cache"

    def mm_runs():
        return sum(1 for ln in log.read_text().splitlines() if ln.startswith("-MM")) if log.exists() else 0

    first = compile_and_disassemble(src, arch="sm_90a", cache_dir=cache, toolchain=tc)
    assert isinstance(first, SassResult) and not first.cache_hit and mm_runs() == 1
    second = compile_and_disassemble(src, arch="sm_90a", cache_dir=cache, toolchain=tc)
    assert isinstance(second, SassResult) and second.cache_hit and mm_runs() == 1
    (work / "other.cuh").write_text("// a new header in the source's folder\n")
    st = os.stat(work)
    os.utime(work, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # coarse-mtime file systems
    third = compile_and_disassemble(src, arch="sm_90a", cache_dir=cache, toolchain=tc)
    assert isinstance(third, SassResult) and third.cache_hit and mm_runs() == 2
    (work / "consts.cuh").write_text("#define SCALE 3.0f\n")  # a header change must miss
    fourth = compile_and_disassemble(src, arch="sm_90a", cache_dir=cache, toolchain=tc)
    assert isinstance(fourth, SassResult) and not fourth.cache_hit and mm_runs() == 3
    # -I roots: a header of the same relative name appearing under an earlier root shadows it
    a, b = tmp_path / "a", tmp_path / "b"
    (b / "sub").mkdir(parents=True)
    a.mkdir()
    (b / "sub" / "v.cuh").write_text("#define V 1.0f\n")
    src2 = work / "k2.cu"
    src2.write_text('#include "sub/v.cuh"\n__global__ void k2(float *p) { p[threadIdx.x] *= V; }\n')
    kw = dict(arch="sm_90a", cache_dir=cache, toolchain=tc, include_dirs=[str(a), str(b)])
    assert not compile_and_disassemble(src2, **kw).cache_hit and mm_runs() == 4
    assert compile_and_disassemble(src2, **kw).cache_hit and mm_runs() == 4
    (a / "sub").mkdir()
    (a / "sub" / "v.cuh").write_text("#define V 2.0f\n")
    shadowed = compile_and_disassemble(src2, **kw)
    assert isinstance(shadowed, SassResult) and not shadowed.cache_hit and mm_runs() == 5


def test_cache_hit_and_invalidation(toolchain, tmp_path):
    work = tmp_path / "k"
    work.mkdir()
    header = work / "consts.cuh"
    header.write_text("#define SCALE 2.0f\n")
    src = work / "k.cu"
    src.write_text('#include "consts.cuh"\n__global__ void k(float *p) { p[threadIdx.x] *= SCALE; }\n')
    cache = tmp_path / "cache"
    first = compile_and_disassemble(src, arch="sm_90a", cache_dir=cache, toolchain=toolchain)
    assert isinstance(first, SassResult) and not first.cache_hit
    second = compile_and_disassemble(src, arch="sm_90a", cache_dir=cache, toolchain=toolchain)
    assert isinstance(second, SassResult) and second.cache_hit
    assert summary(only_kernel(second)) == summary(only_kernel(first))
    assert [i.opcode for i in only_kernel(second).instructions] == [i.opcode for i in only_kernel(first).instructions]
    header.write_text("#define SCALE 3.0f\n")  # a header change must miss
    third = compile_and_disassemble(src, arch="sm_90a", cache_dir=cache, toolchain=toolchain)
    assert isinstance(third, SassResult) and not third.cache_hit
    other_arch = compile_and_disassemble(src, arch="sm_100a", cache_dir=cache, toolchain=toolchain)
    assert not (isinstance(other_arch, SassResult) and other_arch.cache_hit)


def test_bad_input_is_skipped_not_raised(toolchain, tmp_path):
    missing = compile_and_disassemble(tmp_path / "nope.cu", cache_dir=None, toolchain=toolchain)
    assert isinstance(missing, Skipped) and missing.kind == "bad-input" and not missing
    bad_arch = compile_and_disassemble(
        KERNELS / "spill.cu", arch="sm_90a; rm -rf /", cache_dir=None, toolchain=toolchain
    )
    assert isinstance(bad_arch, Skipped) and bad_arch.kind == "bad-input"
    garbage = tmp_path / "garbage.cu"
    garbage.write_bytes(b"\xff\xfe this is not CUDA {{{ \x00\n")
    failed = compile_and_disassemble(garbage, cache_dir=tmp_path / "c", toolchain=toolchain)
    assert isinstance(failed, Skipped) and failed.kind == "compile-failed"
    assert "\n" not in failed.reason


# ---------------------------------------------------------------------------- no toolchain


def test_no_toolchain_is_one_informational_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(toolchain_mod, "CONVENTIONAL_DIRS", ())
    monkeypatch.setattr(toolchain_mod.sys, "path", [str(tmp_path)])
    with pytest.raises(ToolchainNotFound):
        find_toolchain()
    result = compile_and_disassemble(KERNELS / "spill.cu", cache_dir=None)
    assert isinstance(result, Skipped) and result.kind == "no-toolchain"
    assert result.reason.startswith("SASS pass skipped") and "\n" not in result.reason


# ---------------------------------------------------------------------------- parsers (no nvcc)

NVDISASM_SAMPLE = """\
//--------------------- .text._Z1kPf --------------------------
        .other          _Z1kPf,@"STO_CUDA_ENTRY STV_DEFAULT"
_Z1kPf:
\t//## File "a.cu", line 12
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "h.cuh", line 5 inlined at "g.cuh", line 9 inlined at "a.cu", line 18
\t//## File "a.cu", line 18
        /*0050*/                   WARPSYNC.ALL ;
.L_x_5:
        /*0060*/                   USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8 ;
        /*0070*/              @!P0 BAR.SYNC.DEFER_BLOCKING 0x1, 0x80 ;
\t//## File "a.cu", line 20
        /*0080*/                   MEMBAR.ALL.CTA;
        /*0090*/                   @UP1 UTCHMMA gdesc[UR10], gdesc[UR12], tmem[UR6], tmem[UR4], idesc[UR5], !UPT ;
        /*00a0*/                   BRA `(.L_x_8);
//--------------------- .text._Z6helperv --------------------------
        .other          _Z6helperv,@"STV_DEFAULT"
        /*0000*/                   RET.REL.NODEC R2 `(_Z1kPf) ;
//--------------------- SYMBOLS --------------------------
        /*0000*/                   EXIT ;
"""


def test_parse_nvdisasm_listing():
    funcs = parse_sass(NVDISASM_SAMPLE)
    assert [(f.name, f.is_entry) for f in funcs] == [("_Z1kPf", True), ("_Z6helperv", False)]
    ins = funcs[0].instructions
    assert [i.opcode for i in ins] == [
        "LDC",
        "WARPSYNC.ALL",
        "USETMAXREG.TRY_ALLOC.CTAPOOL",
        "BAR.SYNC.DEFER_BLOCKING",
        "MEMBAR.ALL.CTA",
        "UTCHMMA",
        "BRA",
    ]
    assert ins[0].loc == SourceLoc("a.cu", 12)
    assert [str(l) for l in ins[2].inline_chain] == ["h.cuh:5", "g.cuh:9", "a.cu:18"]
    assert ins[2].call_site == SourceLoc("a.cu", 18)
    assert ins[3].guard == "!P0" and ins[3].operands == ("0x1", "0x80")
    assert ins[4].loc == SourceLoc("a.cu", 20)
    assert ins[5].guard == "UP1" and len(ins[5].operands) == 6
    assert ins[6].operands == ("`(.L_x_8)",)


def test_parse_cuobjdump_listing():
    text = """
\tcode for sm_90a
\t\tFunction : _Z1kPf
        /*0000*/                   LDC R1, c[0x0][0x28] ;                /* 0x00000a00ff017b82 */
                                                                          /* 0x000fe20000000800 */
        /*0010*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;  /* 0x0 */
"""
    [f] = parse_sass(text)
    assert f.name == "_Z1kPf" and [i.opcode for i in f.instructions] == ["LDC", "HGMMA.64x256x16.F32.BF16"]
    assert f.instructions[1].operands[-1] == "gsb0"


@pytest.mark.parametrize("text", ["", "garbage\n\x00\x01", "/*zz*/ FOO ;", "//## File", "{{{"])
def test_parsers_are_total(text):
    assert isinstance(parse_sass(text), list)
    assert parse_ptxas_log(text).resources == {}
    assert parse_ptx(text) == {}


def test_parse_ptxas_log():
    log = """\
ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry.
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5spillPf' for 'sm_90a'
ptxas info    : Function properties for _Z5spillPf
    1088 bytes stack frame, 1112 bytes spill stores, 1228 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 1088 bytes cumulative stack size, 4104 bytes smem
ptxas info    : Compile time = 57.475 ms
ptxas warning : Registers are spilled to local memory in function '_Z5spillPf', 1112 bytes spill stores, 1228 bytes spill loads
"""
    rep = parse_ptxas_log(log)
    r = rep.resources["_Z5spillPf"]
    assert (r.registers, r.barriers, r.shared_bytes, r.cumulative_stack_bytes) == (32, 1, 4104, 1088)
    assert (r.stack_frame_bytes, r.spill_store_bytes, r.spill_load_bytes) == (1088, 1112, 1228)
    codes = [(m.severity, m.code, m.function) for m in rep.messages]
    assert codes == [("info", "C7508", None), ("warning", None, "_Z5spillPf")]


def test_parse_ptx_resolves_files_declared_late():
    ptx = """\
.visible .entry _Z1kPf(
\t.param .u64 _Z1kPf_param_0
)
.maxntid 384, 1, 1
.minnctapersm 1
{
\t.loc\t1 27 9
\t.loc\t2 8 5, function_name $L__info_string0, inlined_at 1 27 9
\tsetmaxnreg.dec.sync.aligned.u32 40;
}
.visible .entry _Z2k2v()
{
\tret;
}
\t.file\t1 "k.cu"
\t.file\t2 "regs.cuh", 1700000000, 100
"""
    info = parse_ptx(ptx)
    assert info["_Z1kPf"].maxntid == (384, 1, 1) and info["_Z1kPf"].minnctapersm == 1
    [site] = info["_Z1kPf"].setmaxnreg
    assert (site.action, site.count) == ("dec", 40)
    assert [str(l) for l in site.inline_chain] == ["regs.cuh:8", "k.cu:27"]
    assert info["_Z2k2v"].setmaxnreg == () and info["_Z2k2v"].maxntid is None


def test_classify_mbarrier_arrive_variants():
    from tkcheck.sass.facts import classify
    from tkcheck.sass.parse import parse_instruction_text

    def fact(text):
        f = classify(parse_instruction_text(0, text))
        return f.kind, f.get("arrivals"), f.get("tx")

    assert fact("SYNCS.ARRIVE.TRANS64 RZ, [UR5], R0") == (FactKind.MBARRIER_ARRIVE, 1, "expect")
    assert fact("SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R0+UR4], RZ") == (FactKind.MBARRIER_ARRIVE, 1, None)
    assert fact("SYNCS.ARRIVE.TRANS64.RED.A0TR RZ, [R0+UR4], R3") == (FactKind.MBARRIER_ARRIVE, 0, "expect")
    assert fact("SYNCS.ARRIVE.TRANS64.RED.A0TX RZ, [R0+UR4], R9") == (FactKind.MBARRIER_ARRIVE, 0, "complete")
    assert classify(parse_instruction_text(0, "HFMA2.MMA R5, -RZ, RZ, 2, 0")) is None
    assert classify(parse_instruction_text(0, "BAR.SYNC.DEFER_BLOCKING R4")).get("barrier_id") is None


# ---------------------------------------------------------------------------- a real TK kernel


def _tk_root() -> Path | None:
    env = os.environ.get("TK_ROOT")
    for cand in ([Path(env)] if env else []) + [REPO / "third_party" / "ThunderKittens"]:
        if (cand / "include" / "kittens.cuh").is_file():
            return cand
    return None


def test_real_thunderkittens_gemm(toolchain, tmp_path):
    tk = _tk_root()
    if tk is None:
        pytest.skip("no ThunderKittens checkout (set TK_ROOT or use third_party/ThunderKittens)")
    src = tk / "kernels" / "gemm" / "bf16_h100" / "bf16_h100_gemm.cu"
    if not src.is_file():
        pytest.skip(f"{src.name} not in this ThunderKittens checkout")
    result = compile_and_disassemble(
        src,
        arch="sm_90a",
        include_dirs=[tk / "include", tk / "prototype"],
        defines=["NDEBUG", "KITTENS_HOPPER"],
        extra_flags=["-std=c++20", "-O3", "--use_fast_math", "--expt-extended-lambda", "--expt-relaxed-constexpr"],
        cache_dir=tmp_path / "cache",
        toolchain=toolchain,
        timeout_s=300,
    )
    if isinstance(result, Skipped):
        pytest.skip(f"this ThunderKittens checkout does not build here: {result.reason}")
    gemm = [k for k in result.kernels.values() if has_tensor_core_ops(k)]
    assert gemm, [k.name for k in result.kernels.values()]
    k = gemm[0]
    kinds = k.facts_by_kind()
    for kind in (
        FactKind.BULK_COPY,
        FactKind.MBARRIER_INIT,
        FactKind.MBARRIER_ARRIVE,
        FactKind.MBARRIER_WAIT,
        FactKind.WARPGROUP_ARRIVE,
        FactKind.WARPGROUP_WAIT,
        FactKind.SETMAXNREG,
    ):
        assert kinds.get(kind), kind
    assert all(m == 64 for m, _, _ in mma_shapes(k))
    # facts map back into the kernel's own file through the inline chains
    assert k.lines_for(FactKind.MMA_ASYNC, str(src))
    assert not setmaxnreg_ignored(result)
