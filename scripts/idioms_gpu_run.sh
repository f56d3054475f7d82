#!/bin/bash
# GPU ground truth for one set of issue-25 idiom kernels (corpus/idiomsN): writes the set's clean
# kernels and every planted bug of its mutations*.toml as stand-alone programs, builds them in
# parallel (nvcc, sm_90a), runs each once under a timeout (a hang is a timeout), runs each one that
# passed STRESS more times, then compute-sanitizer racecheck and synccheck on the variants SAN_PAT
# chooses while time is left. Replaces the per-set scripts idioms6_gpu_run.sh / idioms7_gpu_run.sh
# (same steps, same outputs).
#
#   bash scripts/idioms_gpu_run.sh corpus/idioms8     (from the repository root, on an H100/H200)
#
# Needs nvcc (CUDA 12.8+ / 13: the sets use <cuda/ptx>, st.async, tensormap.replace, ...), the
# driver library (every variant links -lcuda, for the sets that encode a TMA descriptor on the
# host), python3 >= 3.11 (tomllib, to apply the mutations; no tkcheck import) and compute-sanitizer.
# Writes under $OUT (default results/): log.txt, results.tsv, stress.tsv, sanitizer.tsv. Knobs:
# RUN_TIMEOUT (6 s), STRESS (3), SAN_PAT (a regex over variant names; default: every variant),
# SAN_TIMEOUT (30 s a sanitizer run), DEADLINE (470 s after the start no stress or sanitizer run
# starts, so that the whole script ends within 540 s: the last sanitizer run ends by DEADLINE +
# SAN_TIMEOUT + 2), JOBS (16 parallel builds), WORK (scratch folder for sources and binaries,
# default a fresh mktemp -d), EXTRA_FLAGS (more nvcc flags).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SET=${1:?usage: idioms_gpu_run.sh corpus/<set folder>}
SET=$(cd "$SET" && pwd) || exit 2
START=$(date +%s)
OUT=${OUT:-results}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
WORK=${WORK:-$(mktemp -d)}; mkdir -p "$WORK/variants" "$WORK/bin"
LOG=$OUT/log.txt
{ date -u; echo "set $(basename "$SET")"; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nvcc --version | tail -1; uname -r; } > "$LOG" 2>&1

# the variants: each clean kernel under its own name, each mutant under its id
python3 - "$SET" "$WORK/variants" >> "$LOG" 2>&1 <<'PY' || { echo "variant generation failed" | tee -a "$LOG"; exit 2; }
import sys, tomllib, pathlib
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
n = 0
for k in sorted(src.glob("*.cu")):
    (dst / k.name).write_text(k.read_text()); n += 1
for spec in sorted(src.glob("mutations*.toml")):
    for m in tomllib.loads(spec.read_text())["mutation"]:
        text = (src / m["kernel"]).read_text()
        assert text.count(m["find"]) == 1, f"{m['id']}: find must occur exactly once"
        (dst / f"{m['id']}.cu").write_text(text.replace(m["find"], m["replace"], 1)); n += 1
print(f"{n} variants")
PY

# built from inside WORK with relative names, so messages name variants/X.cu (no scratch path)
cd "$WORK"
FLAGS="-std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a ${EXTRA_FLAGS:-}"
ls variants/*.cu | xargs -P "${JOBS:-16}" -I{} bash -c \
  'b=$(basename {} .cu); nvcc '"$FLAGS"' {} -o bin/$b -lcuda > bin/$b.build 2>&1 || echo "BUILD FAIL $b"' >> "$LOG" 2>&1
echo "build done $(( $(date +%s) - START )) s" >> "$LOG"

printf "variant\trc\tverdict\twall_ms\toutput\n" > "$OUT/results.tsv"
for f in variants/*.cu; do
  b=$(basename "$f" .cu)
  if [ ! -x "bin/$b" ]; then printf "%s\t-\tBUILD_FAIL\t0\t%s\n" "$b" "$(head -c 300 "bin/$b.build" | tr '\n\t' '  ')" >> "$OUT/results.tsv"; continue; fi
  t0=$(date +%s%N); timeout -k 2 "${RUN_TIMEOUT:-6}" "./bin/$b" > "bin/$b.out" 2>&1; rc=$?; t1=$(date +%s%N)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then v=HANG; elif grep -q '^PASS' "bin/$b.out"; then v=PASS; elif grep -q '^FAIL' "bin/$b.out"; then v=FAIL; else v=ERROR; fi
  printf "%s\t%s\t%s\t%s\t%s\n" "$b" $rc $v $(( (t1 - t0) / 1000000 )) "$(tr '\n\t' '  ' < "bin/$b.out" | head -c 300)" >> "$OUT/results.tsv"
done
echo "runs done $(( $(date +%s) - START )) s" >> "$LOG"

# every variant that passed, STRESS more times (timing-dependent races)
printf "variant\truns\tnot_pass\tfirst_failure\n" > "$OUT/stress.tsv"
for b in $(awk -F'\t' 'NR>1 && $3=="PASS" {print $1}' "$OUT/results.tsv"); do
  if [ $(( $(date +%s) - START )) -gt "${DEADLINE:-470}" ]; then echo "stress: out of time before $b" >> "$LOG"; break; fi
  nf=0; first=""
  for i in $(seq "${STRESS:-3}"); do
    timeout -k 2 "${RUN_TIMEOUT:-6}" "./bin/$b" > "bin/$b.stress" 2>&1; rc=$?
    if [ $rc -ne 0 ]; then nf=$((nf + 1)); [ -z "$first" ] && first="rc $rc: $(tr '\n\t' '  ' < "bin/$b.stress" | head -c 200)"; fi
  done
  printf "%s\t%s\t%s\t%s\n" "$b" "${STRESS:-3}" $nf "$first" >> "$OUT/stress.tsv"
done
echo "stress done $(( $(date +%s) - START )) s" >> "$LOG"

# sanitizer: the clean kernels first, then the chosen mutants that passed, then those that failed
# (never the hangs; ONE_REP=1: one launch each). A clean kernel's name has no '-', a mutant's id has.
SAN_PAT=${SAN_PAT:-'.'}
printf "variant\ttool\trc\tsummary\n" > "$OUT/sanitizer.tsv"
SAN_LIST=$( { awk -F'\t' 'NR>1 && $3=="PASS" && $1 !~ /-/ {print $1}' "$OUT/results.tsv";
              awk -F'\t' 'NR>1 && $3=="PASS" && $1 ~ /-/ {print $1}' "$OUT/results.tsv";
              awk -F'\t' 'NR>1 && ($3=="FAIL"||$3=="ERROR") {print $1}' "$OUT/results.tsv"; } | grep -E "$SAN_PAT")
for b in $SAN_LIST; do
  for tool in racecheck synccheck; do
    if [ $(( $(date +%s) - START )) -gt "${DEADLINE:-470}" ]; then echo "sanitizer: out of time before $tool $b" >> "$LOG"; break 2; fi
    ONE_REP=1 timeout -k 2 "${SAN_TIMEOUT:-30}" compute-sanitizer --tool $tool --print-limit 3 "./bin/$b" > "bin/$b.$tool" 2>&1; rc=$?
    s=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Barrier|error|PASS|FAIL" "bin/$b.$tool" | head -5 | tr '\n\t' '  ' | head -c 400)
    printf "%s\t%s\t%s\t%s\n" "$b" $tool $rc "$s" >> "$OUT/sanitizer.tsv"
  done
done
echo "all done $(( $(date +%s) - START )) s" >> "$LOG"
cat "$LOG"; cut -c1-220 "$OUT/results.tsv"; cat "$OUT/stress.tsv"; cut -c1-220 "$OUT/sanitizer.tsv"
