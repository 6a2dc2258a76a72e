#!/usr/bin/env bash
# An A/B device call for a kernel change: two builds packed by scripts/cuda_prebuild.sh (a base and
# a candidate, each a prebuilt.tar.xz renamed), carried to the device machine. The candidate's
# tests run first (a failure stops the call: no timings of kernels that compute the wrong thing);
# then `pathbench bench-attention` for both builds in ROUNDS rounds whose order alternates (base
# first in odd rounds), the flip-flop model's step (`pathbench bench --device cuda`) the same way,
# each build's per-kernel profile of a PaTH step, racecheck (and memcheck) on the candidate's
# [sanitize] case, and last, where time is left, the candidate's whole [cuda] suite. Logs and JSON
# go to $OUT as they come, so a call cut short keeps what it finished; scripts/compare_bench.py
# prints each table.
# Environment: TESTS (Catch2 test spec, default "[cuda]"; comma-separated names or patterns are
# alternatives; TESTS_LIMIT seconds, default 300: the whole [cuda] suite takes most of a call),
# ENCODINGS (default "path path_fox"; ATTENTION=0 skips bench-attention), SHAPES (BxTxHxD list,
# default the benchmark's anchors), INPUTS (bench-attention's --inputs, default random;
# far-reaching times stick-breaking's full scan), ROUNDS (default 2), FLIPFLOP (0 skips the model;
# FLIPFLOP_ARGS, default "--steps 200 --encodings nope path path_fox"), PROFILE (0 skips the step
# profiles), RACECHECK and MEMCHECK (0 skip them; memcheck is off by default), SUITE (1 adds the
# whole [cuda] suite at the end when TESTS named less).
# LIMIT (seconds, default none): the call's own budget; a stage starts only where its usual time
# fits what is left (else it is skipped, said in the log) and is stopped where the budget ends, so
# that the device's time limit never cuts the call short of its results.
# PACK (a file name, e.g. compare.tgz): the results are written to a folder of their own and packed
# into $OUT/PACK after every stage, one file for a device whose calls return few files.
# Usage (from the repository root, on the device machine): scripts/gpu_compare.sh BASE.tar.xz CANDIDATE.tar.xz
set -uo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 BASE.tar.xz CANDIDATE.tar.xz (scripts/cuda_prebuild.sh's packs)" >&2
  exit 2
fi
OUT=${OUT:-$PWD/gpu-out}
TESTS=${TESTS:-[cuda]} TESTS_LIMIT=${TESTS_LIMIT:-300} ENCODINGS=${ENCODINGS:-path path_fox} SHAPES=${SHAPES:-}
INPUTS=${INPUTS:-random} ROUNDS=${ROUNDS:-2} ATTENTION=${ATTENTION:-1}
FLIPFLOP=${FLIPFLOP:-1} FLIPFLOP_ARGS=${FLIPFLOP_ARGS:---steps 200 --encodings nope path path_fox}
PROFILE=${PROFILE:-1} RACECHECK=${RACECHECK:-1} MEMCHECK=${MEMCHECK:-0} SUITE=${SUITE:-0}
LIMIT=${LIMIT:-} PACK=${PACK:-}
PY=$(command -v python3)
start=$(date +%s)
log() { echo "=== $* ($(date +%T))"; }
# Seconds left of LIMIT (a large number without one).
left() { if [ -n "$LIMIT" ]; then echo $((LIMIT - ($(date +%s) - start))); else echo 1000000; fi; }
# Whether a stage that usually takes $1 seconds fits what is left; says so when it does not.
fits() { [ "$(left)" -ge "$1" ] && return 0; log "skipped: $2 (needs ${1} s, $(left) s left)"; return 1; }
# A stage's time limit: at most $1 seconds, and no more than is left.
cap() { local l; l=$(left); echo $(($1 < l ? $1 : l)); }
packed_out=$OUT
if [ -n "$PACK" ]; then OUT=$(mktemp -d /tmp/compare-out.XXXX); fi
mkdir -p "$OUT" "$packed_out"
pack() { if [ -n "$PACK" ]; then tar czf "$packed_out/$PACK" -C "$OUT" .; fi; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
declare -A dir
for role in base candidate; do
  build=$1; shift
  dir[$role]=$(mktemp -d "/tmp/compare-$role.XXXX")
  tar -xJf "$build" -C "${dir[$role]}" || { echo "$0: cannot unpack $build" >&2; exit 2; }
  [ -x "${dir[$role]}/pathbench" ] || { echo "$0: $build holds no pathbench binary" >&2; exit 2; }
  echo "$role: $build, commit $(cat "${dir[$role]}/SOURCE_COMMIT")" | tee -a "$OUT/gpu.txt"
done

log "candidate's tests: $TESTS"
tests_limit=$TESTS_LIMIT
[ "$(left)" -lt "$tests_limit" ] && tests_limit=$(left)
timeout "$tests_limit" "${dir[candidate]}/pathbench_tests" --require-gpu "$TESTS" > "$OUT/tests.log" 2>&1
code=$?
echo "tests exit code $code" >> "$OUT/tests.log"
grep -E "passed|failed|exit code" "$OUT/tests.log" | tail -3
pack
if [ "$code" -ne 0 ]; then
  [ "$code" -eq 124 ] && echo "$0: the tests ran past ${tests_limit} s (narrow TESTS, or raise TESTS_LIMIT or LIMIT)"
  grep -B3 -A14 "FAILED" "$OUT/tests.log" | head -60
  exit 1
fi

shape_args=()
[ -n "$SHAPES" ] && shape_args=(--shapes $SHAPES)
order() { if [ $(($1 % 2)) -eq 1 ]; then echo "base candidate"; else echo "candidate base"; fi; }
rounds_of() { ls -v "$OUT"/$1-$2-*.json 2>/dev/null || echo "$OUT/$1-$2-(none).json"; }  # round 10 after 9
if [ "$ATTENTION" != 0 ]; then
  log "bench-attention: $ENCODINGS, $INPUTS inputs, $ROUNDS rounds"
  for r in $(seq 1 "$ROUNDS"); do
    for role in $(order "$r"); do
      fits 120 "bench-attention, $role round $r" || break 2
      timeout "$(cap 200)" "${dir[$role]}/pathbench" bench-attention --encodings $ENCODINGS "${shape_args[@]}" --inputs "$INPUTS" \
        --warmup 3 --repeats 15 --out "$OUT/attention-$role-$r.json" > "$OUT/attention-$role-$r.log" 2>&1 ||
        echo "$role round $r: bench-attention failed (see attention-$role-$r.log)"
    done
  done
  $PY scripts/compare_bench.py --base $(rounds_of attention base) --candidate $(rounds_of attention candidate)
  pack
fi

if [ "$FLIPFLOP" != 0 ]; then
  log "flip-flop model, $ROUNDS rounds"
  for r in $(seq 1 "$ROUNDS"); do
    for role in $(order "$r"); do
      fits 30 "flip-flop, $role round $r" || break 2
      timeout "$(cap 90)" "${dir[$role]}/pathbench" bench --device cuda --attention false $FLIPFLOP_ARGS \
        --out "$OUT/flipflop-$role-$r.json" > "$OUT/flipflop-$role-$r.log" 2>&1 ||
        echo "$role round $r: bench failed (see flipflop-$role-$r.log)"
    done
  done
  $PY scripts/compare_bench.py --base $(rounds_of flipflop base) --candidate $(rounds_of flipflop candidate)
  pack
fi

if [ "$PROFILE" != 0 ]; then
  log "kernels of a PaTH flip-flop step, each build"
  for role in candidate base; do
    fits 45 "step profile, $role" || break
    OUT="$OUT/profile-$role" PATHBENCH="${dir[$role]}/pathbench" timeout "$(cap 90)" scripts/gpu_step_profile.sh path \
      > "$OUT/step-path-$role.txt" 2>&1 || echo "$role: step profile failed (see step-path-$role.txt)"
    head -12 "$OUT/step-path-$role.txt"
  done
  pack
fi

if [ "$RACECHECK" != 0 ] && fits 100 "racecheck"; then
  log "racecheck on the candidate's [sanitize] case"
  timeout "$(cap 200)" compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 \
    "${dir[candidate]}/pathbench_tests" --require-gpu "[sanitize]" > "$OUT/racecheck.log" 2>&1
  echo "racecheck exit code $?" >> "$OUT/racecheck.log"
  grep -E "RACECHECK SUMMARY|exit code" "$OUT/racecheck.log"
  pack
fi

if [ "$MEMCHECK" != 0 ] && fits 100 "memcheck"; then
  log "memcheck on the candidate's [sanitize] case"
  timeout "$(cap 200)" compute-sanitizer --tool memcheck --error-exitcode 9 "${dir[candidate]}/pathbench_tests" \
    --require-gpu "[sanitize]" > "$OUT/memcheck.log" 2>&1
  echo "memcheck exit code $?" >> "$OUT/memcheck.log"
  grep -E "ERROR SUMMARY|exit code" "$OUT/memcheck.log"
  pack
fi

if [ "$SUITE" != 0 ] && [ "$TESTS" != "[cuda]" ] && fits "$TESTS_LIMIT" "the whole [cuda] suite"; then
  log "the candidate's whole [cuda] suite"
  timeout "$TESTS_LIMIT" "${dir[candidate]}/pathbench_tests" --require-gpu "[cuda]" > "$OUT/cuda-suite.log" 2>&1
  echo "suite exit code $?" >> "$OUT/cuda-suite.log"
  grep -E "passed|failed|exit code" "$OUT/cuda-suite.log" | tail -2
  pack
fi
log "done after $(($(date +%s) - start)) s"
