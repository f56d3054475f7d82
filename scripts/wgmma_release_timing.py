"""Timing copy of `attn_fwd-release-v-in-flight`: when does the released V tile stop being read?

The planted bug releases `kv_empty` right after issuing the P.V wgmma (before its wait). This
script writes `tkcheck confirm`'s widened copy of that variant plus four globaltimer probes
(block 0): each consumer warpgroup's arrive, each one's wgmma-wait return, the producer's wake
from its `kv_empty` wait and the end of its poisoning of `v_s`. `main` prints them per iteration,
relative to the last arrive. docs/BENCHMARKS.md quotes an H200 run:

    python scripts/wgmma_release_timing.py OUT_DIR
    nvcc -std=c++20 -O3 --use_fast_math --expt-relaxed-constexpr --expt-extended-lambda \\
         -DKITTENS_HOPPER -gencode arch=compute_90a,code=sm_90a -I TK/include -I TK/prototype \\
         OUT_DIR/diag.cu -o OUT_DIR/diag -lcuda && OUT_DIR/diag
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tkcheck.confirm.instrument import instrument  # noqa: E402
from tkcheck.confirm.widen import plan_for, widening  # noqa: E402
from tkcheck.evaluate import check_mutation, load_mutations, mutated_text  # noqa: E402

MID = "attn_fwd-release-v-in-flight"
B0 = "blockIdx.x==0&&blockIdx.y==0&&blockIdx.z==0&&kv<64"
PROBES = """__device__ unsigned long long dg_wake[64], dg_pois[64], dg_arr[2][64], dg_done[2][64];
static __device__ __forceinline__ unsigned long long dg_now() {
    unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
"""
REPORT = """    CUDA_CHECK(cudaDeviceSynchronize());
    { unsigned long long w[64], pz[64], a[2][64], d[2][64];
      cudaMemcpyFromSymbol(w, dg_wake, sizeof w); cudaMemcpyFromSymbol(pz, dg_pois, sizeof pz);
      cudaMemcpyFromSymbol(a, dg_arr, sizeof a); cudaMemcpyFromSymbol(d, dg_done, sizeof d);
      for (int j = 0; j + 2 < 16; j++) {
        unsigned long long last = a[0][j] > a[1][j] ? a[0][j] : a[1][j];
        printf("DIAG kv=%d arrive0=%lld arrive1=%lld | producer wake(kv+2)=%lld poisoned=%lld | "
               "wgmma done0=%lld done1=%lld (ns rel. to last arrive)\\n", j, (long long)(a[0][j] - last),
               (long long)(a[1][j] - last), (long long)(w[j + 2] - last), (long long)(pz[j + 2] - last),
               (long long)(d[0][j] - last), (long long)(d[1][j] - last)); } }"""


def timing_copy() -> str:
    corpus = ROOT / "corpus"
    m = next(m for m in load_mutations(corpus) if m.id == MID)
    text = mutated_text(corpus, m)
    with tempfile.TemporaryDirectory() as td:
        findings = [f for f in check_mutation(corpus, m, Path(td)).findings if f.code != "TK000"]
    w = widening(findings, text, "attn_fwd.cu")
    out = instrument(text, "attn_fwd.cu", plan_for(w)).text
    edits = [
        (
            r"::tkcheck_poison\(v_s\[s\]\), ::tkcheck_poison_fence\(\)\);",
            f"({B0} ? (void)(dg_wake[kv] = dg_now()) : (void)0), ::tkcheck_poison(v_s[s]), ::tkcheck_poison_fence(), "
            f"({B0} ? (void)(dg_pois[kv] = dg_now()) : (void)0));",
        ),
        (
            r"if \(laneid\(\) == 0\) arrive\(kv_empty\[tic\]\);",
            f"if (laneid() == 0) {{ if ({B0} && threadIdx.x % 128 == 0) dg_arr[c][kv] = dg_now(); arrive(kv_empty[tic]); }}",
        ),
        (
            r"(arrive\(kv_empty\[tic\]\); \}\n\s*)warpgroup::mma_async_wait\(\);",
            f"\\1warpgroup::mma_async_wait(); if ({B0} && threadIdx.x % 128 == 0) dg_done[c][kv] = dg_now();",
        ),
    ]
    for pat, rep in edits:
        out, n = re.subn(pat, rep, out, count=1)
        if n != 1:
            raise SystemExit(f"the widened copy changed shape: no match for {pat}")
    k = out.index("// ---- end of tkcheck prelude ----")
    out = out[:k] + PROBES + out[k:]
    return out.replace("    CUDA_CHECK(cudaDeviceSynchronize());", REPORT, 1)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    d = Path(argv[0])
    d.mkdir(parents=True, exist_ok=True)
    (d / "diag.cu").write_text(timing_copy(), encoding="utf-8")
    print(d / "diag.cu")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
