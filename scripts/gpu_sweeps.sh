#!/usr/bin/env bash
# Runs sweeps on a GPU machine in one call and packs their results for the trip back: for each
# NAME:CONFIG:JOBS argument, `pathbench run CONFIG --out runs/NAME --jobs JOBS` (extra `pathbench
# run` arguments from SWEEP_ARGS), timed, with the GPUs' utilization sampled once a second; then
# runs/NAME goes to $OUT/NAME.tar.gz with the sweep's log and utilization CSV inside (checkpoints
# stay behind in runs/: they can exceed what a call brings back, and a later call on the same
# machine resumes from them). A fourth field SECONDS stops that sweep after so long with SIGTERM
# (its runs checkpoint after their current step; the finished ones still come back). A summary
# line per sweep is printed last. Expects ./build/pathbench (scripts/gpu_build.sh).
# Usage: scripts/gpu_sweeps.sh NAME:CONFIG:JOBS[:SECONDS] [...]
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" runs
summary=()
for spec in "$@"; do
  IFS=':' read -r name config jobs seconds <<< "$spec"
  dir=runs/$name
  mkdir -p "$dir"
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 \
    > "$dir/gpu-utilization.csv" 2>/dev/null &
  sampler=$!
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout -k 60 "${seconds:-86400}" ./build/pathbench run "$config" --out "$dir" --jobs "$jobs" ${SWEEP_ARGS:-} > "$dir/sweep.log" 2>&1
  status=$?
  wall=$(( $(date +%s) - start ))
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  util=$(awk -F', ' '{s += $3; n++} END {if (n) printf "%.0f", s / n; else print "?"}' "$dir/gpu-utilization.csv")
  done_runs=$(grep -l '"status": *"done"' "$dir"/*.json 2>/dev/null | wc -l)
  echo "sweep $name: exit $status, ${wall} s wall, jobs $jobs, mean GPU utilization ${util}%, $done_runs done" \
    | tee "$dir/summary.txt"
  tar -czf "$OUT/$name.tar.gz" --exclude='*.safetensors' -C runs "$name"
  summary+=("$(cat "$dir/summary.txt")")
  tail -3 "$dir/sweep.log"
done
printf '%s\n' "${summary[@]}"
