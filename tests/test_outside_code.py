"""Measured on code this project did not write (issue 13), when the checkouts are present:
Megakernels' low-latency-llama demo (MEGAKERNELS_ROOT or third_party/Megakernels, with TK at its
pinned submodule commit in its ThunderKittens/ folder) and ThunderKittens' Blackwell kernels
(TK_ROOT or third_party/ThunderKittens). Skipped cleanly when absent. The expected findings are
the ones triaged by hand in docs/BENCHMARKS.md; line numbers are not pinned (the checkouts move),
the rule ids and files are."""

import os
from pathlib import Path

import pytest

from tkcheck import registry
from tkcheck.engine import CheckOptions, check_file
from tkcheck.frontend.parse import ParseOptions

from conftest import ROOT, tk_root


def _opts(parse: ParseOptions) -> CheckOptions:
    return CheckOptions(parse=parse, enabled=frozenset(r.code for r in registry.all_rules() if "sass" not in r.tags))


def _megakernels() -> Path | None:
    cand = os.environ.get("MEGAKERNELS_ROOT")
    for p in ([Path(cand)] if cand else []) + [ROOT / "third_party" / "Megakernels"]:
        if (p / "demos" / "low-latency-llama" / "llama.cu").exists() and (
            p / "ThunderKittens" / "include" / "kittens.cuh"
        ).exists():
            return p
    return None


def test_megakernels_llama_demo_is_modelled_and_triaged():
    mk = _megakernels()
    if mk is None:
        pytest.skip("no Megakernels checkout (set MEGAKERNELS_ROOT or put one in third_party/Megakernels)")
    popts = ParseOptions(tk_include=str(mk / "ThunderKittens" / "include"), include_dirs=(str(mk / "include"),))
    cwd = os.getcwd()
    os.chdir(mk)
    try:
        res = check_file("demos/low-latency-llama/llama.cu", _opts(popts))
    finally:
        os.chdir(cwd)
    ops = [k for k in res.coverage if " [op " in k.kernel and k.analysed]
    assert len(ops) == 7, "every op of the interpreter's pack gets a model"
    total = sum(k.sync_ops for k in ops)
    modelled = sum(k.sync_ops_modelled for k in ops)
    assert total and modelled / total >= 0.8, f"{modelled}/{total} sync ops modelled"
    # the triaged findings: a relaxed global counter after the TMA store wait (TRUE), in 6 ops
    assert sorted({f.code for f in res.findings}) == ["TK407"], [f.message for f in res.findings]
    files = sorted({Path(f.location.filename).name for f in res.findings})
    assert files == [
        "attention_partial.cu",
        "attention_reduction.cu",
        "matvec_adds.cu",
        "rms_matvec_rope_append.cu",
        "upgate.cu",
    ]


BLACKWELL = [
    "kernels/attention/bf16_b300_mha_causal/bf16_b300_mha_causal.cu",
    "kernels/attention/bf16_b300_mha_noncausal/bf16_b300_mha_noncausal.cu",
    "kernels/gemm/bf16_b200/bf16_b200_gemm.cu",
    "kernels/gemm/fp8_b200/fp8_b200_gemm.cu",
    "kernels/gemm/mxfp8_b200/mxfp8_b200_gemm.cu",
    "kernels/gemm/nvfp4_b200/nvfp4_b200_gemm.cu",
]
# rules of the findings triaged TRUE on these files (docs/BENCHMARKS.md): TMA stores in flight at
# exit, remote arrives without a closing cluster barrier, tcgen05 fences around hand-offs
TRIAGED = {"TK504", "TK505", "TK205"}
# and the ones each file must keep showing (the MMA completion and the cluster are modelled)
PRESENT = {
    "bf16_b300_mha_causal.cu": {"TK504", "TK505"},
    "bf16_b300_mha_noncausal.cu": {"TK504", "TK505"},
    "bf16_b200_gemm.cu": {"TK205", "TK504"},
    "fp8_b200_gemm.cu": {"TK205", "TK504"},
    "mxfp8_b200_gemm.cu": {"TK205"},
    "nvfp4_b200_gemm.cu": {"TK205"},
}


@pytest.mark.parametrize("rel", BLACKWELL)
def test_tk_blackwell_kernel_findings_are_the_triaged_kinds(rel):
    tk = tk_root()
    if tk is None or not (tk / rel).exists():
        pytest.skip("no ThunderKittens checkout with this kernel")
    cwd = os.getcwd()
    os.chdir(tk)
    try:
        res = check_file(rel, _opts(ParseOptions(tk_include=str(tk / "include"), arch="sm_100a")))
    finally:
        os.chdir(cwd)
    assert res.coverage and any(k.analysed for k in res.coverage) and not res.input_error
    unexpected = [f for f in res.findings if f.code not in TRIAGED]
    assert not unexpected, "\n".join(f"{f.code} {f.location.row}: {f.message}" for f in unexpected)
    assert PRESENT[Path(rel).name] <= {f.code for f in res.findings}
