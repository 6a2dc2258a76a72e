#!/usr/bin/env bash
# Runs sweeps on a GPU machine in one call and packs their results for the trip back: for each
# NAME:CONFIG:JOBS argument, `pathbench run CONFIG --out runs/NAME --jobs JOBS` (extra `pathbench
# run` arguments from SWEEP_ARGS), timed, with the GPUs' utilization sampled once a second; then
# runs/NAME goes to $OUT/NAME.tar.gz with the sweep's logs and utilization CSVs inside (checkpoints,
# training.save_model's models and the held-out starts cache stay behind in runs/: they can exceed
# what a call brings back, and a later call on the same machine resumes from them; a call that
# starts a fresh machine finds no runs/, so a sweep that must come back whole has to finish within
# its call, or the results that came back are put in runs/NAME here and carried, and the same
# command skips the done runs and re-runs the failed ones). A fourth field stops that sweep with
# SIGTERM (its runs checkpoint after their current step; the finished ones still come back):
# SECONDS after it starts, or @SECONDS after CALL_START (epoch seconds; default: when this script
# started), so that several invocations in one call, each with its own SWEEP_ARGS, share one
# deadline. A sweep run again in the same folder
# (a resume) keeps the earlier sweep.log, gpu-utilization.csv and summary.txt as sweep-1.log, … .
# A summary line per sweep is printed last. Builds ./build/pathbench first (scripts/gpu_build.sh,
# which takes carried prebuilt binaries) when it is not there, as on a freshly started machine.
# Usage: [CALL_START=$(date +%s)] [SWEEP_ARGS='--set …'] scripts/gpu_sweeps.sh NAME:CONFIG:JOBS[:[@]SECONDS] [...]
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
CALL_START=${CALL_START:-$(date +%s)}
mkdir -p "$OUT" runs
summary=()
if [ ! -x build/pathbench ]; then
  scripts/gpu_build.sh || { echo "gpu_sweeps: no build/pathbench and the build failed" >&2; exit 1; }
fi

keep_earlier_logs() {  # DIR: sweep.log → sweep-K.log (and the CSV and summary) for the first unused K
  local dir=$1 k=1
  [ -f "$dir/sweep.log" ] || return 0
  while [ -e "$dir/sweep-$k.log" ]; do k=$((k + 1)); done
  mv "$dir/sweep.log" "$dir/sweep-$k.log"
  [ -f "$dir/gpu-utilization.csv" ] && mv "$dir/gpu-utilization.csv" "$dir/gpu-utilization-$k.csv"
  [ -f "$dir/summary.txt" ] && mv "$dir/summary.txt" "$dir/summary-$k.txt"
  return 0
}

for spec in "$@"; do
  IFS=':' read -r name config jobs limit <<< "$spec"
  if ! [[ $limit =~ ^(@?[0-9]+)?$ ]]; then
    echo "gpu_sweeps: '$spec': the limit must be SECONDS or @SECONDS" >&2
    exit 2
  fi
  dir=runs/$name
  mkdir -p "$dir"
  keep_earlier_logs "$dir"
  seconds=86400
  if [[ $limit == @* ]]; then
    seconds=$(( ${limit#@} - ($(date +%s) - CALL_START) ))
  elif [ -n "$limit" ]; then
    seconds=$limit
  fi
  if [ "$seconds" -le 0 ]; then
    echo "sweep $name: not started, its deadline ($limit) has passed" | tee "$dir/summary.txt"
    summary+=("$(cat "$dir/summary.txt")")
    continue
  fi
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 \
    > "$dir/gpu-utilization.csv" 2>/dev/null &
  sampler=$!
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout -k 60 "$seconds" ./build/pathbench run "$config" --out "$dir" --jobs "$jobs" ${SWEEP_ARGS:-} > "$dir/sweep.log" 2>&1
  status=$?
  wall=$(( $(date +%s) - start ))
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  util=$(awk -F', ' '{s += $3; n++} END {if (n) printf "%.0f", s / n; else print "?"}' "$dir/gpu-utilization.csv")
  done_runs=$(grep -l '"status": *"done"' "$dir"/*.json 2>/dev/null | wc -l)
  cut_runs=$(grep -l '"status": *"interrupted"' "$dir"/*.json 2>/dev/null | wc -l)
  echo "sweep $name: exit $status, ${wall} s wall (limit ${seconds} s), jobs $jobs, mean GPU utilization ${util}%, $done_runs done, $cut_runs interrupted" \
    | tee "$dir/summary.txt"
  tar -czf "$OUT/$name.tar.gz" --exclude='*.safetensors' --exclude='.held-out-starts' -C runs "$name"
  summary+=("$(cat "$dir/summary.txt")")
  tail -3 "$dir/sweep.log"
done
printf '%s\n' "${summary[@]}"
