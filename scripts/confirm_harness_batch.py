#!/usr/bin/env python3
"""`tkcheck confirm` on kernels wrapped in host harnesses that are not the corpus's own.

    python scripts/confirm_harness_batch.py prepare OUT --tk <TK checkout> [--whl DIR]
    # on the GPU machine:  bash OUT/run.sh        (results: $OUT/results.tgz)
    python scripts/confirm_harness_batch.py collect RESULTS_DIR OUT/meta.json [--md FILE]

`prepare` writes, under OUT (a git-ignored folder; nothing is written into the repository):

* corpus GEMM kernels (gemm_ring, gemm_lcf), clean and with their planted bugs (corpus/mutations*.toml),
  each cut before its own host harness and wrapped in three harnesses of this script's own:
    A  `main` in a header (`tkh_main.cuh`) included after the kernel; prints
       "checked N values: M mismatches"; exit 2 on mismatches, 3 on a CUDA error;
    B  `main` in the file, after a helper header included after the kernel; prints
       `SELFCHECK PASS` / `SELFCHECK FAIL n` (n bad values) and exits 0 / 1, or
       `SELFCHECK FAIL cuda <cudaError name>` with exit 2;
    C  a header included first (`tkh_abort.cuh`): CUDA errors are printed by a macro
       (`cuda call failed: <name> (<message>) at file:line`) and end the program with abort();
       a wrong value is printed and the program aborts too;
* ThunderKittens' educational H100 GEMMs, levels 06-08 (`kernels/gemm/educational_h100` of the TK
  checkout given), copied with TK's own `launch.cu` (its `main`, included after the kernel; it
  prints "Max error" / "Error count" and always exits 0), clean and with bugs planted here by
  find/replace (EDU_BUGS);
* `list.txt` / `meta.json` (one line per variant), `run.sh` (installs the wheels in `whl/`, runs tkcheck from `pkg/`, runs `tkcheck confirm` on every variant, 16 at once, keeps each run's evidence,
  then records the processes and the GPU memory left, with ps and nvidia-smi), the TK headers
  (`tk/include`, `tk/prototype`) and tkcheck's package (`pkg/`, laid out as the wheel installs it).

`collect` reads the results into a per-bug table (markdown): the plain run, what compute-sanitizer
alone reported, and tkcheck's verdict for the planted rule with its first piece of evidence.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = {"gemm_ring": (1024, 1024, 512), "gemm_lcf": (1024, 1024, 512)}

ADAPTERS = {
    "gemm_ring": r'''
// ---- tkh adapter: how the harness launches this kernel ----
static cudaError_t tkh_launch(bf16* dA, bf16* dB, bf16* dC, int M, int N, int K) {
    gemm_globals g{mat_gl{dA, nullptr, nullptr, (size_t)M, (size_t)K}, mat_gl{dB, nullptr, nullptr, (size_t)K, (size_t)N},
                   mat_gl{dC, nullptr, nullptr, (size_t)M, (size_t)N}};
    cudaError_t e = cudaFuncSetAttribute(gemm_ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES);
    if (e != cudaSuccess) return e;
    gemm_ring_kernel<<<dim3(N / 128, M / 128), NUM_THREADS, SMEM_BYTES>>>(g);
    return cudaGetLastError();
}
''',
    "gemm_lcf": r'''
// ---- tkh adapter: how the harness launches this kernel ----
static cudaError_t tkh_launch(bf16* dA, bf16* dB, bf16* dC, int M, int N, int K) {
    using L = gemm_layout;
    L::globals g{L::a_gl{dA, nullptr, nullptr, (size_t)M, (size_t)K}, L::b_gl{dB, nullptr, nullptr, (size_t)K, (size_t)N},
                 L::c_gl{dC, nullptr, nullptr, (size_t)M, (size_t)N}};
    size_t smem = MAX_SHARED_MEMORY - 1024;
    auto kern = lcf::kernel<gemm_template>;
    cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess) return e;
    // four tasks per block: every block runs its ring through several tasks
    int tasks = (M / 128) * (N / 128), blocks = tasks / 4 > 0 ? tasks / 4 : 1;
    kern<<<blocks, prototype::detail::NUM_THREADS_v<gemm_template>, smem>>>(g);
    return cudaGetLastError();
}
''',
}

# shared by the three harnesses: inputs, a naive GPU reference, the comparison
REF = r'''#pragma once
// tkh: reference GEMM and inputs for the harnesses of scripts/confirm_harness_batch.py
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdint>
#include <cmath>
#include <vector>
__global__ void tkh_reference(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M || c >= N) return;
    float s = 0.f;
    for (int k = 0; k < K; k++) s += __bfloat162float(A[(size_t)r * K + k]) * __bfloat162float(B[(size_t)k * N + c]);
    C[(size_t)r * N + c] = s;
}
static inline float tkh_next(uint32_t& s) { s = s * 22695477u + 1u; return (float)((s >> 9) & 0xFFFF) / 65536.0f - 0.5f; }
struct tkh_data {
    int M, N, K;
    __nv_bfloat16 *A = nullptr, *B = nullptr, *C = nullptr; float* R = nullptr;
    std::vector<__nv_bfloat16> hC; std::vector<float> hR;
};
static cudaError_t tkh_setup(tkh_data& d) {
    std::vector<__nv_bfloat16> a((size_t)d.M * d.K), b((size_t)d.K * d.N);
    uint32_t s = 2024u;
    for (auto& x : a) x = __float2bfloat16(tkh_next(s));
    for (auto& x : b) x = __float2bfloat16(tkh_next(s));
    cudaError_t e;
    if ((e = cudaMalloc(&d.A, a.size() * 2)) != cudaSuccess) return e;
    if ((e = cudaMalloc(&d.B, b.size() * 2)) != cudaSuccess) return e;
    if ((e = cudaMalloc(&d.C, (size_t)d.M * d.N * 2)) != cudaSuccess) return e;
    if ((e = cudaMalloc(&d.R, (size_t)d.M * d.N * 4)) != cudaSuccess) return e;
    if ((e = cudaMemcpy(d.A, a.data(), a.size() * 2, cudaMemcpyHostToDevice)) != cudaSuccess) return e;
    if ((e = cudaMemcpy(d.B, b.data(), b.size() * 2, cudaMemcpyHostToDevice)) != cudaSuccess) return e;
    return cudaMemset(d.C, 0, (size_t)d.M * d.N * 2);
}
static cudaError_t tkh_fetch(tkh_data& d) {
    tkh_reference<<<dim3(d.N / 16, d.M / 16), dim3(16, 16)>>>(d.A, d.B, d.R, d.M, d.N, d.K);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return e;
    d.hC.resize((size_t)d.M * d.N); d.hR.resize((size_t)d.M * d.N);
    if ((e = cudaMemcpy(d.hC.data(), d.C, d.hC.size() * 2, cudaMemcpyDeviceToHost)) != cudaSuccess) return e;
    return cudaMemcpy(d.hR.data(), d.R, d.hR.size() * 4, cudaMemcpyDeviceToHost);
}
// index of the first bad value (or -1), and how many there are
static long tkh_compare(const tkh_data& d, size_t& bad, double& max_err) {
    double max_ref = 0.0; long first = -1; bad = 0; max_err = 0.0;
    for (size_t i = 0; i < d.hR.size(); i++) max_ref = fmax(max_ref, fabs(d.hR[i]));
    for (size_t i = 0; i < d.hC.size(); i++) {
        double v = __bfloat162float(d.hC[i]);
        double e = std::isfinite(v) ? fabs(v - d.hR[i]) : INFINITY;
        if (!(e <= 0.02 + 0.01 * max_ref)) { if (first < 0) first = (long)i; bad++; }
        if (e > max_err || e != e) max_err = e;
    }
    return first;
}
'''

HARNESS_A = r'''#pragma once
// tkh style A: the program's main() lives here, in a header the kernel file includes after the kernel
#include "tkh_ref.cuh"
int main() {
    tkh_data d{TKH_M, TKH_N, TKH_K};
    cudaError_t e = tkh_setup(d);
    if (e == cudaSuccess) e = tkh_launch(d.A, d.B, d.C, d.M, d.N, d.K);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = tkh_fetch(d);
    if (e != cudaSuccess) { std::fprintf(stderr, "kernel run failed: %s\n", cudaGetErrorString(e)); return 3; }
    size_t bad; double max_err;
    tkh_compare(d, bad, max_err);
    std::printf("checked %zu values: %zu mismatches (max |err| %.4g)\n", d.hC.size(), bad, max_err);
    return bad ? 2 : 0;
}
'''

MAIN_B = r'''
// ---- tkh style B: SELFCHECK PASS / SELFCHECK FAIL n, with exit codes ----
int main() {
    tkh_data d{TKH_M, TKH_N, TKH_K};
    cudaError_t e = tkh_setup(d);
    if (e == cudaSuccess) e = tkh_launch(d.A, d.B, d.C, d.M, d.N, d.K);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = tkh_fetch(d);
    if (e != cudaSuccess) { std::printf("SELFCHECK FAIL cuda %s\n", cudaGetErrorName(e)); return 2; }
    size_t bad; double max_err;
    tkh_compare(d, bad, max_err);
    if (bad) { std::printf("SELFCHECK FAIL %zu\n", bad); return 1; }
    std::printf("SELFCHECK PASS\n");
    return 0;
}
'''

HARNESS_C = r'''#pragma once
// tkh style C: included first; CUDA errors are printed by a macro and end the program with abort()
#include <cstdlib>
#include "tkh_ref.cuh"
#define TKH_CK(call) do { cudaError_t tkh_e = (call); if (tkh_e != cudaSuccess) { \
    std::fprintf(stderr, "cuda call failed: %s (%s) at %s:%d\n", cudaGetErrorName(tkh_e), \
                 cudaGetErrorString(tkh_e), __FILE__, __LINE__); std::abort(); } } while (0)
'''

MAIN_C = r'''
// ---- tkh style C: main ----
int main() {
    tkh_data d{TKH_M, TKH_N, TKH_K};
    TKH_CK(tkh_setup(d));
    TKH_CK(tkh_launch(d.A, d.B, d.C, d.M, d.N, d.K));
    TKH_CK(cudaDeviceSynchronize());
    TKH_CK(tkh_fetch(d));
    size_t bad; double max_err;
    long first = tkh_compare(d, bad, max_err);
    if (first >= 0) {
        std::fprintf(stderr, "wrong value at (%ld, %ld): got %g, want %g\n", first / d.N, first % d.N,
                     (double)__bfloat162float(d.hC[first]), (double)d.hR[first]);
        std::abort();
    }
    std::printf("all values match\n");
    return 0;
}
'''

STYLES = ("A", "B", "C")

# planted bugs of the corpus kernels wrapped in the three harnesses (ids of corpus/mutations*.toml)
CORPUS_BUGS = (
    "gemm_ring-expect-short",
    "gemm_ring-empty-count-off",
    "gemm_ring-arrive-whole-warp",
    "gemm_ring-producer-parity-fresh",
    "gemm_ring-parity-iter-mod2",
    "gemm_ring-staging-no-read-wait",
    "gemm_ring-no-sync-after-init",
    "gemm_ring-sync-inside-init-guard",
    "gemm_ring-producer-guard-dropped",
    "gemm_ring-syncwarp-before-store",
    "gemm_ring-release-before-mma-wait",
    "gemm_ring-final-store-not-waited",
    "gemm_ring-epilogue-store-sw64",
    "gemm_ring-b-operand-sw32",
    "gemm_lcf-expect-one-a-tile",
    "gemm_lcf-producer-guard-per-warp",
    "gemm_lcf-finish-no-read-wait",
    "gemm_lcf-mma-swizzle-view",
    "gemm_lcf-no-mma-wait",
)

# bugs planted in copies of TK's educational GEMMs: (id, level, rules, symptom, find, replace, what)
EDU_BUGS = (
    (
        "edu06-wait-other-parity",
        "06",
        ("TK303",),
        "stripes",
        "        wait(bar, tic);\n",
        "        wait(bar, toc);\n",
        "the consumers wait on the barrier with the other buffer's parity",
    ),
    (
        "edu06-refill-b-dropped",
        "06",
        ("TK301",),
        "hang",
        "            tma::load_async(Bs[toc], g.B, {0, 0, tile+1, col}, bar);\n",
        "",
        "the refill of the B tile is dropped; the expect still counts it",
    ),
    (
        "edu07-full-count-two",
        "07",
        ("TK302",),
        "hang",
        "init_semaphore(full[i], 0, 1);",
        "init_semaphore(full[i], 1, 1);",
        "full[i] initialised for one thread arrival plus the transaction; only the expect arrives",
    ),
    (
        "edu07-empty-count-plus-one",
        "07",
        ("TK302",),
        "hang",
        "init_semaphore(empty[i], num_consumers, 0);",
        "init_semaphore(empty[i], num_consumers + 1, 0);",
        "empty[i] initialised for one more arrival than the consumers make",
    ),
    (
        "edu07-arrive-all-lanes",
        "07",
        ("TK302",),
        "wrong",
        "            if (warpgroup::laneid() == 0) arrive(empty[qidx], 1);",
        "            arrive(empty[qidx], 1);",
        "every consumer thread arrives on empty (128 arrivals on a count-1 barrier)",
    ),
    (
        "edu07-no-prearrive",
        "07",
        ("TK303", "TK503"),
        "hang",
        "            for (int i = 0; i < QSIZE; ++i) arrive(empty[i], 1);\n",
        "            ;\n",
        "the consumers' first arrivals on the empty slots are dropped: producer and consumers wait on each other",
    ),
    (
        "edu07-release-before-mma-wait",
        "07",
        ("TK206",),
        "wrong",
        "            warpgroup::mma_async_wait();\n            if (warpgroup::laneid() == 0) arrive(empty[qidx], 1);",
        "            if (warpgroup::laneid() == 0) arrive(empty[qidx], 1);\n            warpgroup::mma_async_wait();",
        "the slot is released before the wgmma that reads it has completed",
    ),
    (
        "edu07-no-sync-after-init",
        "07",
        ("TK307",),
        "hang",
        "    }\n    __syncthreads();\n\n    if (warpgroupid == 0)",
        "    }\n\n    if (warpgroupid == 0)",
        "no barrier between thread 0's mbarrier inits and the other threads' first use",
    ),
    (
        "edu08-refill-one-a-tile",
        "08",
        ("TK301",),
        "hang",
        "                    M_BLOCK * size_bytes<typeof(As[0][0])> +",
        "                    1 * size_bytes<typeof(As[0][0])> +",
        "the refill's expect counts one A tile of the M_BLOCK loaded",
    ),
    (
        "edu08-no-sync-after-init",
        "08",
        ("TK307",),
        "hang",
        "    }\n    __syncthreads();\n\n    if (is_consumer) {",
        "    }\n\n    if (is_consumer) {",
        "no barrier between thread 0's mbarrier init (and first loads) and the other threads' first wait",
    ),
    (
        "edu08-store-no-read-wait",
        "08",
        ("TK504",),
        "wrong",
        "                tma::store_async_read_wait();\n",
        "",
        "the block exits with its TMA stores still reading shared memory",
    ),
    (
        "edu08-store-from-every-warp",
        "08",
        ("TK403",),
        "wrong",
        "        if (warpid % 4 == 0) {",
        "        {",
        "every warp of a consumer warpgroup (all 128 threads) issues the TMA stores",
    ),
)


def _kernel_part(text: str) -> str:
    """The corpus kernel without its own host harness (cut at the `// host harness` banner)."""
    i = text.index("// host harness")
    j = text.rfind("// ----", 0, i)
    return text[: j if j >= 0 and text.count("\n", j, i) <= 1 else i]


def _wrap(kernel_text: str, kernel: str, style: str) -> tuple[str, dict[str, str]]:
    m, n, k = SIZES[kernel]
    body = _kernel_part(kernel_text) + ADAPTERS[kernel] + f"#define TKH_M {m}\n#define TKH_N {n}\n#define TKH_K {k}\n"
    files = {"tkh_ref.cuh": REF}
    if style == "A":
        files["tkh_main.cuh"] = HARNESS_A
        return body + '#include "tkh_main.cuh"\n', files
    if style == "B":
        return body + '#include "tkh_ref.cuh"\n' + MAIN_B, files
    files["tkh_abort.cuh"] = HARNESS_C
    return '#include "tkh_abort.cuh"\n' + body + MAIN_C, files


def prepare(out: Path, tk: Path, whl: Path | None) -> list[dict]:
    from tkcheck import evaluate

    corpus = ROOT / "corpus"
    if out.exists():
        shutil.rmtree(out)
    (out / "v").mkdir(parents=True)
    muts = {m.id: m for m in evaluate.load_mutations(corpus)}
    meta = []

    def add(vid, path, kernel, style, rules, symptom, what):
        meta.append(
            {
                "id": vid,
                "path": str(path.relative_to(out)),
                "kernel": kernel,
                "style": style,
                "rules": list(rules),
                "symptom": symptom,
                "what": what,
            }
        )

    for kernel in ("gemm_ring", "gemm_lcf"):
        clean = (corpus / "hopper" / f"{kernel}.cu").read_text(encoding="utf-8")
        items = [(f"clean-{kernel}", clean, (), "", "clean")]
        items += [
            (mid, evaluate.mutated_text(corpus, muts[mid]), muts[mid].rules, muts[mid].symptom, muts[mid].description)
            for mid in CORPUS_BUGS
            if muts[mid].kernel == f"hopper/{kernel}.cu"
        ]
        for mid, text, rules, symptom, what in items:
            for style in STYLES:
                vid = f"{style}-{mid}"
                d = out / "v" / vid
                d.mkdir()
                body, files = _wrap(text, kernel, style)
                (d / f"{kernel}.cu").write_text(body, encoding="utf-8")
                for name, t in files.items():
                    (d / name).write_text(t, encoding="utf-8")
                add(vid, d / f"{kernel}.cu", kernel, style, rules, symptom, what)
    # TK's educational GEMMs: copied here only, bugs planted in the copies
    edu_src = tk / "kernels" / "gemm" / "educational_h100"
    edu = out / "edu"
    edu.mkdir()
    shutil.copy(tk / "kernels" / "gemm" / "common.cuh", edu / "common.cuh")
    for level in ("06", "07", "08"):
        text = (edu_src / f"level_{level}.cu").read_text(encoding="utf-8")
        items = [(f"edu{level}-clean", text, (), "", "clean")]
        for bid, lv, rules, symptom, find, replace, what in EDU_BUGS:
            if lv != level:
                continue
            if text.count(find) != 1:
                raise SystemExit(f"{bid}: the text to replace occurs {text.count(find)} times in level_{level}.cu")
            items.append((bid, text.replace(find, replace), rules, symptom, what))
        for vid, t, rules, symptom, what in items:
            d = edu / vid
            d.mkdir()
            (d / f"level_{level}.cu").write_text(t, encoding="utf-8")
            shutil.copy(edu_src / "launch.cu", d / "launch.cu")
            add(f"TK-{vid}", d / f"level_{level}.cu", f"level_{level}", "TK", rules, symptom, what)
    # what the GPU machine needs: TK's headers, tkcheck's source, the wheels
    for sub in ("include", "prototype"):
        shutil.copytree(tk / sub, out / "tk" / sub)
    # tkcheck laid out as the wheel lays it out (rules/ -> tkcheck.rules, cli.py -> tkcheck.cli.cli): no
    # build step on the GPU machine
    pkg = out / "pkg"
    files = subprocess.run(
        ["git", "ls-files", "tkcheck", "rules", "cli.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for f in files:
        dst = pkg / ("tkcheck/" + f if f.startswith("rules/") else "tkcheck/cli/cli.py" if f == "cli.py" else f)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, dst)
    if whl:
        shutil.copytree(whl, out / "whl")
    # TK's GEMMs (4096^3, three launches: the longest sanitizer runs) first, so that none is left for the end
    meta.sort(key=lambda m: m["style"] != "TK")
    (out / "list.txt").write_text("".join(f"{m['id']}\t{m['path']}\t{int(bool(m['rules']))}\n" for m in meta))
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    (out / "run.sh").write_text(RUN_SH)
    (out / "run.sh").chmod(0o755)
    return meta


RUN_SH = r'''#!/bin/bash
# generated by scripts/confirm_harness_batch.py: tkcheck confirm on every variant; results in $OUT/results.tgz
set -u
H=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$H/out}; R=$OUT/r; mkdir -p "$R"
JR=${JR:-16}; T=${T:-8}; ST=${ST:-45}; LIMIT=${LIMIT:-420}; DEADLINE=${DEADLINE:-520}
SLOTS=${SLOTS:-3}; SANI_RE=${SANI_RE:-.}   # GPU programs at once; the variants that get compute-sanitizer
SITE=/tmp/tkh-site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$H"/whl/*.whl > "$R/pip.log" 2>&1
export PYTHONPATH=$H/pkg:$SITE PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1 NO_COLOR=1
{ date; nvidia-smi; nvcc --version; compute-sanitizer --version; nproc;
  python3 -c "from tkcheck.confirm.device import probe; i = probe(); print(i.via, '|', i.describe())"; } > "$R/env.txt" 2>&1
nvidia-smi --query-gpu=memory.used --format=csv,noheader > "$R/gpu_mem_before.txt" 2>&1
one() {
  id=$1; src=$2; planted=$3; o=$R/$id; mkdir -p "$o"
  s=$(date +%s.%N)
  san=--no-sanitizer; [[ $id =~ $SANI_RE ]] && san=""
  timeout -k 10 "$LIMIT" python3 -m tkcheck confirm "$H/$src" --tk-include "$H/tk" --timeout "$T" $san \
      --sanitizer-timeout "$ST" --gpu-slots "$SLOTS" --keep "$o/keep" --output-format json > "$o/confirm.json" 2> "$o/stderr.txt"
  echo $? > "$o/rc"; echo "$s $(date +%s.%N)" > "$o/time"
  find "$o/keep" \( -name kernel.bin -o -name proto \) -prune -exec rm -rf {} + 2>/dev/null
  # a planted bug tkcheck found nothing in: its plain run, for the table (built and run here)
  if [ "$planted" = 1 ] && [ "$(tr -d ' \n' < "$o/confirm.json")" = "[]" ]; then
    p=$o/plain_only; mkdir -p "$p"; d=$(dirname "$H/$src")
    nvcc -std=c++20 -O3 --use_fast_math --expt-relaxed-constexpr --expt-extended-lambda -lineinfo -DKITTENS_HOPPER \
      -gencode arch=compute_90a,code=sm_90a -I "$H/tk/include" -I "$H/tk/prototype" -I "$d" "$H/$src" -o "$p/bin" -lcuda \
      > "$p/build.log" 2>&1 && (cd "$p" && timeout -k 2 "$T" ./bin > "$p/plain.log" 2>&1; echo $? > "$p/plain.rc")
    rm -f "$p/bin"
  fi
}
export -f one; export H R T ST LIMIT SLOTS SANI_RE
t0=$(date +%s)
# the whole batch under one deadline: at it, every confirm gets SIGTERM and ends what it started
export JR ONLY=${ONLY:-.}
timeout -k 30 "$DEADLINE" bash -c 'grep -E "$ONLY" "$H/list.txt" | xargs -P "$JR" -L 1 bash -c '"'"'one "$0" "$1" "$2"'"'"''
t1=$(date +%s); echo "confirm_s=$((t1-t0))" >> "$R/env.txt"
sleep 2
# nothing of confirm may be left: no process, no GPU memory
ps -eo pid,ppid,pgid,sid,etime,args > "$R/ps_after.txt"
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$R/gpu_apps_after.txt" 2>&1
nvidia-smi --query-gpu=memory.used --format=csv,noheader > "$R/gpu_mem_after.txt" 2>&1
grep -cE "kernel\.bin|compute-sanitizer|tkcheck confirm" "$R/ps_after.txt" > "$R/leftover_count.txt"
tar -czf "$OUT/results.tgz" -C "$OUT" r
ls -la "$OUT/results.tgz"; cat "$R/env.txt" | tail -3; cat "$R/gpu_apps_after.txt" "$R/gpu_mem_after.txt" "$R/leftover_count.txt"
'''


# ------------------------------------------------------------------ collect


def _verdict_cell(items: list[dict], rules: list[str]) -> tuple[str, str]:
    planted = [i for i in items if i["code"] in rules]
    others = [i for i in items if i["code"] not in rules]
    order = {"CONFIRMED": 0, "UNCONFIRMABLE HERE": 1, "NOT REPRODUCED": 2}
    planted.sort(key=lambda i: order.get(i["verdict"]["status"], 3))
    cells = []
    for i in planted[:2]:
        v = i["verdict"]
        st = v["status"]
        if st == "CONFIRMED":
            ev = v["evidence"][0]
        elif st == "UNCONFIRMABLE HERE":
            ev = v.get("reason", "")
        else:
            ev = v.get("why", "")
        ev = re.sub(r"\s+", " ", ev)[:150].replace("|", "/")
        cells.append(f"{i['code']}:{i['location']['row']} **{st}**" + (f" ({ev})" if ev else ""))
    if len(planted) > 2:
        cells.append(f"(+{len(planted) - 2} more of the planted rule)")
    extra = ""
    if others:
        stat = {}
        for i in others:
            stat[i["verdict"]["status"]] = stat.get(i["verdict"]["status"], 0) + 1
        extra = "others: " + ", ".join(f"{n} {s}" for s, n in sorted(stat.items()))
    if not cells and rules:
        cells = [f"no finding of {'/'.join(rules)}: the static check misses it, nothing to confirm"]
    return "<br>".join(cells) or "no finding", extra


def collect(results: Path, meta_path: Path, sanitizer_from: Path | None = None) -> tuple[str, dict]:
    from tkcheck.confirm import outcome as O
    from tkcheck.confirm import runner as R

    meta = json.loads(meta_path.read_text())
    rows = [
        "| variant | harness | planted bug: symptom | plain run | compute-sanitizer alone | tkcheck verdict "
        "for the planted rule (first evidence) | other findings |",
        "|---|---|---|---|---|---|---|",
    ]
    stats = {
        "variants": 0,
        "planted_failing": 0,
        "planted_failing_confirmed": 0,
        "other_findings_confirmed": [],
        "clean_confirmed": [],
        "not_confirmed_failing": [],
        "static_miss_failing": [],
    }
    for m in meta:
        d = results / m["id"]
        if not d.is_dir():
            continue
        stats["variants"] += 1
        try:
            items = json.loads((d / "confirm.json").read_text() or "[]")
        except json.JSONDecodeError:
            items = []
        rc = (d / "rc").read_text().strip() if (d / "rc").exists() else "?"
        keep = d / "keep"
        ev = (
            R.evidence_from_dir(keep) if (keep / "plain.rc").exists() or (keep / "unconfirmable.txt").exists() else None
        )
        po = d / "plain_only"
        if ev is None and (po / "plain.rc").exists():
            # a planted bug with no finding: confirm had nothing to run; the batch ran the plain binary
            prc = int((po / "plain.rc").read_text().strip() or 0)
            ev = R.Evidence(
                arch="sm_90",
                plain=R.Run(
                    "plain", "bin", prc, (po / "plain.log").read_text(errors="replace"), killed=prc in (124, 137)
                ),
            )
        plain = (
            R._plain_result(ev)
            if ev
            else ("no findings: nothing run" if rc == "0" and not items else f"confirm exit {rc}")
        )
        sani = R._sanitizer_result(ev) if ev else "-"
        if sanitizer_from is not None and (not ev or not ev.tools):
            # compute-sanitizer ran on this variant in another batch (see --sanitizer-from)
            k2 = sanitizer_from / m["id"] / "keep"
            if (k2 / "plain.rc").exists():
                e2 = R.evidence_from_dir(k2)
                if e2.tools:
                    sani = R._sanitizer_result(e2) + " (1st batch)"
        cell, extra = _verdict_cell(items, m["rules"])
        failing = ev is not None and ev.plain is not None and ev.plain.outcome().status != O.PASS
        if m["rules"] and failing:
            stats["planted_failing"] += 1
            if any(i["code"] in m["rules"] and i["verdict"]["status"] == "CONFIRMED" for i in items):
                stats["planted_failing_confirmed"] += 1
            elif not any(i["code"] in m["rules"] for i in items):
                stats["static_miss_failing"].append(m["id"])
            else:
                stats["not_confirmed_failing"].append(m["id"])
        for i in items:
            if i["verdict"]["status"] == "CONFIRMED" and i["code"] not in m["rules"]:
                (stats["clean_confirmed"] if not m["rules"] else stats["other_findings_confirmed"]).append(
                    f"{m['id']}: {i['code']}:{i['location']['row']} ({i['verdict']['evidence'][0][:60]})"
                )
        bug = (
            "clean"
            if not m["rules"]
            else f"{m['id'].split('-', 1)[1] if m['style'] != 'TK' else m['id'][3:]}: {m['symptom']}"
        )
        rows.append(
            f"| `{m['id']}` | {m['style']} | {bug} | {plain.replace('|', '/')[:90]} | {sani.replace('|', '/')[:120]} "
            f"| {cell} | {extra} |"
        )
    return "\n".join(rows) + "\n", stats


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/confirm_harness_batch.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("out")
    p.add_argument("--tk", required=True, help="a ThunderKittens checkout (include/, prototype/, kernels/)")
    p.add_argument("--whl", help="a folder of wheels to install on the GPU machine (libclang, z3-solver)")
    c = sub.add_parser("collect")
    c.add_argument("results", help="the r/ folder of results.tgz")
    c.add_argument("meta")
    c.add_argument("--md")
    c.add_argument(
        "--sanitizer-from",
        help="an earlier batch's r/ folder: its compute-sanitizer results for the variants this batch ran without",
    )
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        meta = prepare(Path(a.out), Path(a.tk), Path(a.whl) if a.whl else None)
        print(f"{len(meta)} variants under {a.out}")
        return 0
    table, stats = collect(Path(a.results), Path(a.meta), Path(a.sanitizer_from) if a.sanitizer_from else None)
    if a.md:
        Path(a.md).write_text(table)
    print(table)
    print(json.dumps(stats, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
