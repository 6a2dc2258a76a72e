#!/usr/bin/env bash
# An A/B device call for a kernel change: two builds packed by scripts/cuda_prebuild.sh (a base and
# a candidate, each a prebuilt.tar.xz renamed), carried to the device machine. The candidate's
# [cuda] tests run first (a failure stops the call: no timings of kernels that compute the wrong
# thing); then `pathbench bench-attention` for both builds in ROUNDS rounds whose order alternates
# (base first in odd rounds), the flip-flop model's step (`pathbench bench --device cuda`) the same
# way, and racecheck on the candidate's [sanitize] case. Logs and JSON go to $OUT as they come, so a
# call cut short keeps what it finished; scripts/compare_bench.py prints each table.
# Environment: TESTS (Catch2 test spec, default "[cuda]"; TESTS_LIMIT seconds, default 300: the
# whole [cuda] suite takes most of a call), ENCODINGS (default "path path_fox"),
# SHAPES (BxTxHxD list, default the benchmark's anchors), INPUTS (bench-attention's --inputs, default
# random; far-reaching times stick-breaking's full scan), ROUNDS (default 2), FLIPFLOP (0 skips
# the model), RACECHECK (0 skips it).
# Usage (from the repository root, on the device machine): scripts/gpu_compare.sh BASE.tar.xz CANDIDATE.tar.xz
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BASE.tar.xz CANDIDATE.tar.xz (scripts/cuda_prebuild.sh's packs)" >&2
  exit 2
fi
OUT=${OUT:-$PWD/gpu-out}
TESTS=${TESTS:-[cuda]} TESTS_LIMIT=${TESTS_LIMIT:-300} ENCODINGS=${ENCODINGS:-path path_fox} SHAPES=${SHAPES:-}
INPUTS=${INPUTS:-random} ROUNDS=${ROUNDS:-2}
FLIPFLOP=${FLIPFLOP:-1} RACECHECK=${RACECHECK:-1}
PY=$(command -v python3)
mkdir -p "$OUT"
log() { echo "=== $* ($(date +%T))"; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
declare -A dir
for role in base candidate; do
  pack=$1; shift
  dir[$role]=$(mktemp -d "/tmp/compare-$role.XXXX")
  tar -xJf "$pack" -C "${dir[$role]}" || { echo "$0: cannot unpack $pack" >&2; exit 2; }
  [ -x "${dir[$role]}/pathbench" ] || { echo "$0: $pack holds no pathbench binary" >&2; exit 2; }
  echo "$role: $pack, commit $(cat "${dir[$role]}/SOURCE_COMMIT")"
done

log "candidate's tests: $TESTS"
timeout "$TESTS_LIMIT" "${dir[candidate]}/pathbench_tests" --require-gpu "$TESTS" > "$OUT/tests.log" 2>&1
code=$?
echo "tests exit code $code" >> "$OUT/tests.log"
grep -E "passed|failed|exit code" "$OUT/tests.log" | tail -3
if [ "$code" -ne 0 ]; then
  [ "$code" -eq 124 ] && echo "$0: the tests ran past ${TESTS_LIMIT} s (narrow TESTS or raise TESTS_LIMIT)"
  grep -B3 -A14 "FAILED" "$OUT/tests.log" | head -60
  exit 1
fi

shape_args=()
[ -n "$SHAPES" ] && shape_args=(--shapes $SHAPES)
order() { if [ $(($1 % 2)) -eq 1 ]; then echo "base candidate"; else echo "candidate base"; fi; }
log "bench-attention: $ENCODINGS, $INPUTS inputs, $ROUNDS rounds"
for r in $(seq 1 "$ROUNDS"); do
  for role in $(order "$r"); do
    timeout 200 "${dir[$role]}/pathbench" bench-attention --encodings $ENCODINGS "${shape_args[@]}" --inputs "$INPUTS" \
      --warmup 3 --repeats 15 --out "$OUT/attention-$role-$r.json" > "$OUT/attention-$role-$r.log" 2>&1 ||
      echo "$role round $r: bench-attention failed (see attention-$role-$r.log)"
  done
done
rounds_of() { ls -v "$OUT"/$1-$2-*.json 2>/dev/null || echo "$OUT/$1-$2-(none).json"; }  # round 10 after 9
$PY scripts/compare_bench.py --base $(rounds_of attention base) --candidate $(rounds_of attention candidate)

if [ "$FLIPFLOP" != 0 ]; then
  log "flip-flop model, $ROUNDS rounds"
  for r in $(seq 1 "$ROUNDS"); do
    for role in $(order "$r"); do
      timeout 120 "${dir[$role]}/pathbench" bench --device cuda --attention false --out "$OUT/flipflop-$role-$r.json" \
        > "$OUT/flipflop-$role-$r.log" 2>&1 || echo "$role round $r: bench failed (see flipflop-$role-$r.log)"
    done
  done
  $PY scripts/compare_bench.py --base $(rounds_of flipflop base) --candidate $(rounds_of flipflop candidate)
fi

if [ "$RACECHECK" != 0 ]; then
  log "racecheck on the candidate's [sanitize] case"
  timeout 200 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 \
    "${dir[candidate]}/pathbench_tests" --require-gpu "[sanitize]" > "$OUT/racecheck.log" 2>&1
  echo "racecheck exit code $?" >> "$OUT/racecheck.log"
  grep -E "RACECHECK SUMMARY|exit code" "$OUT/racecheck.log"
fi
log "done"
