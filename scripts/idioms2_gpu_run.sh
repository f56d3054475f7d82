#!/bin/bash
# Batched ground truth for a set of issue-25 idiom kernels (corpus/idioms2, corpus/idioms3, ...):
# build every variant, run each under timeout, then compute-sanitizer (racecheck, synccheck) on the
# ones that did not hang. Layout of the folder this script sits in: variants/
# (`scripts/idioms2_variants.py variants SET` writes it) and, for sets that use ThunderKittens,
# tk/include, tk/prototype (a ThunderKittens checkout's folders; a set of plain CUDA needs none).
# PAT: a regex choosing variants (matched against variants/NAME.cu); RUN_TIMEOUT: seconds before a run counts as a hang (10);
# STRESS, SAN_PAT: see below; DEADLINE: seconds after which no more sanitizer runs start. Results under $OUT (default results/).
# Keep only the two TSVs and the log under $OUT: the device tool brings back a limited number of files.
cd "$(dirname "$0")"
START=$(date +%s)
OUT=${OUT:-results}; mkdir -p "$OUT" bin
LOG=$OUT/log.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nvcc --version | tail -1; uname -r; } > $LOG 2>&1
FLAGS="-std=c++20 -O3 --expt-relaxed-constexpr --expt-extended-lambda -DKITTENS_HOPPER -gencode arch=compute_90a,code=sm_90a -I tk/include -I tk/prototype"
# PREBUILT=1: bin/NAME were built elsewhere (nvcc 13.0 for sm_90a) and travel with the folder
[ -n "$PREBUILT" ] || ls variants/*.cu | grep -E "${PAT:-.}" | xargs -P 16 -I{} bash -c 'b=$(basename {} .cu); nvcc '"$FLAGS"' {} -o bin/$b -lcuda > bin/$b.build 2>&1 || echo "BUILD FAIL $b"' >> $LOG 2>&1
echo "build done $(( $(date +%s) - START )) s" >> $LOG
printf "variant\trc\tverdict\twall_ms\toutput\n" > $OUT/results.tsv
for f in $(ls variants/*.cu | grep -E "${PAT:-.}"); do
  b=$(basename $f .cu)
  if [ ! -x bin/$b ]; then printf "%s\t-\tBUILD_FAIL\t0\t%s\n" $b "$(head -c 300 bin/$b.build | tr '\n\t' '  ')" >> $OUT/results.tsv; continue; fi
  t0=$(date +%s%N); timeout -k 2 ${RUN_TIMEOUT:-10} ./bin/$b > bin/$b.out 2>&1; rc=$?; t1=$(date +%s%N)
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then v=HANG; elif grep -q '^PASS' bin/$b.out; then v=PASS; elif grep -q '^FAIL' bin/$b.out; then v=FAIL; else v=ERROR; fi
  printf "%s\t%s\t%s\t%s\t%s\n" $b $rc $v $(( (t1 - t0) / 1000000 )) "$(tr '\n\t' '  ' < bin/$b.out | head -c 300)" >> $OUT/results.tsv
done
echo "runs done $(( $(date +%s) - START )) s" >> $LOG
# STRESS=N: run every variant that passed N more times (timing-dependent races), count the failures
if [ -n "$STRESS" ]; then
  printf "variant\truns\tnot_pass\tfirst_failure\n" > $OUT/stress.tsv
  for b in $(awk -F'\t' 'NR>1 && $3=="PASS" {print $1}' $OUT/results.tsv); do
    nf=0; first=""
    for i in $(seq $STRESS); do
      timeout -k 2 ${RUN_TIMEOUT:-10} ./bin/$b > bin/$b.stress 2>&1; rc=$?
      if [ $rc -ne 0 ]; then nf=$((nf + 1)); [ -z "$first" ] && first="rc $rc: $(tr '\n\t' '  ' < bin/$b.stress | head -c 200)"; fi
    done
    printf "%s\t%s\t%s\t%s\n" $b $STRESS $nf "$first" >> $OUT/stress.tsv
  done
  echo "stress done $(( $(date +%s) - START )) s" >> $LOG
fi
# sanitizer on every variant that did not hang, while time is left (deadline 500 s)
printf "variant\ttool\trc\tsummary\n" > $OUT/sanitizer.tsv
# SAN_PAT: a regex choosing the variants the sanitizer runs on (default: all that did not hang)
# order: the clean kernels (names without '-'), then the variants that passed, then the rest
# SAN_TIMEOUT: seconds one sanitizer run may take (40)
SAN_LIST=$( { awk -F'\t' 'NR>1 && $3=="PASS" && $1 !~ /-/ {print $1}' $OUT/results.tsv;
              awk -F'\t' 'NR>1 && $3=="PASS" && $1 ~ /-/ {print $1}' $OUT/results.tsv;
              awk -F'\t' 'NR>1 && ($3=="FAIL"||$3=="ERROR") {print $1}' $OUT/results.tsv; } | grep -E "${SAN_PAT:-.}")
for b in $SAN_LIST; do
  for tool in racecheck synccheck; do
    if [ $(( $(date +%s) - START )) -gt ${DEADLINE:-500} ]; then echo "sanitizer: out of time before $tool $b" >> $LOG; break 2; fi
    ONE_REP=1 timeout -k 2 ${SAN_TIMEOUT:-40} compute-sanitizer --tool $tool --print-limit 3 ./bin/$b > bin/$b.$tool 2>&1; rc=$?
    s=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Barrier|error" bin/$b.$tool | head -4 | tr '\n\t' '  ' | head -c 400)
    printf "%s\t%s\t%s\t%s\n" $b $tool $rc "$s" >> $OUT/sanitizer.tsv
  done
done
tar czf $OUT/sanitizer_logs.tgz bin/*.racecheck bin/*.synccheck 2>/dev/null
echo "all done $(( $(date +%s) - START )) s" >> $LOG
cat $LOG; cut -c1-200 $OUT/results.tsv; cat $OUT/stress.tsv 2>/dev/null; cut -c1-200 $OUT/sanitizer.tsv
