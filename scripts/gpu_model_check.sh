#!/usr/bin/env bash
# One device-machine call that checks and times the GPU model step: build (or take the carried
# prebuilt binaries, scripts/gpu_build.sh), the [cuda] conformance tests, then `pathbench bench` at
# the three model shapes that results/bench/ tracks (flip-flop width 128, the A5 shape, the MQRAR
# shape). The test log and the three JSONs go to $OUT (default ./gpu-out) packed as one file,
# model-check.tar.gz, since a device call brings back at most 8 files. Set PATHBENCH_GIT_COMMIT (the
# device copy has no .git) so that the JSON names the commit.
# Usage (from the repository root): scripts/gpu_model_check.sh
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
CHECK=$(mktemp -d)
trap 'tar -czf "$OUT/model-check.tar.gz" -C "$CHECK" . && rm -rf "$CHECK"' EXIT
log() { echo "=== $* ($(date +%T))"; }

log "build"
scripts/gpu_build.sh || exit 1
log "tests [cuda]"
timeout 300 ./build/pathbench_tests --require-gpu "[cuda]" > "$CHECK/cuda-tests.log" 2>&1
status=$?
echo "tests exit code $status" >> "$CHECK/cuda-tests.log"
tail -4 "$CHECK/cuda-tests.log"
[ $status -eq 0 ] || exit $status

bench() {  # NAME ARGS...: one bench JSON
  local name=$1
  shift
  log "bench $name"
  timeout 240 ./build/pathbench bench --device cuda --attention false "$@" --out "$CHECK/$name.json" 2>&1 | tail -8
}
bench cuda-flipflop-h200-bf16
bench cuda-a5-shape-h200-bf16 --layers 2 --width 256 --heads 4 --mlp swiglu --length 17 --precision bf16 --batch 256
bench cuda-mqrar-shape-h200-bf16 --encodings nope path --layers 2 --width 256 --heads 2 --mlp swiglu --length 768 \
  --batch 64 --precision bf16
