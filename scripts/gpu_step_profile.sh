#!/usr/bin/env bash
# Where the GPU time of one training step (or, with PHASE=evaluation, of one evaluation batch:
# forward, loss and argmax) goes: runs `pathbench bench --device cuda --phase PHASE` for one
# encoding and model shape without graph capture (so every kernel launch is seen) under Nsight
# Compute, timing each launch (gpu__time_duration), and prints each kernel's time per step or batch
# (the mean of the two it runs, a warm-up and a timed one) and its share, largest first; the
# per-launch CSV goes to $OUT/step-profile.csv.
# Runs ./build/pathbench (scripts/gpu_build.sh), or the binary PATHBENCH names (e.g. another
# commit's, to compare). Extra arguments go to `pathbench bench`.
# Usage (on the device machine): [PHASE=training|evaluation] [PATHBENCH=binary] scripts/gpu_step_profile.sh ENCODING [bench args...]
#   e.g. scripts/gpu_step_profile.sh path --layers 2 --width 256 --heads 4 --mlp swiglu --length 17 \
#        --batch 256 --precision tf32
#        PHASE=evaluation scripts/gpu_step_profile.sh nope --eval-batch 64
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 ENCODING [pathbench bench args...]" >&2
  exit 2
fi
ENCODING=$1
shift
OUT=${OUT:-$PWD/gpu-out}
PHASE=${PHASE:-training}
PATHBENCH=${PATHBENCH:-./build/pathbench}
[ -x "$PATHBENCH" ] || { echo "$0: no pathbench binary at $PATHBENCH (build one, or set PATHBENCH)" >&2; exit 2; }
case "$PHASE" in
  training) UNIT="step" ;;
  evaluation) UNIT="evaluation batch" ;;
  *) echo "$0: PHASE must be training or evaluation, not '$PHASE'" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
timeout 300 ncu --clock-control none --csv --page raw --metrics gpu__time_duration.sum \
  "$PATHBENCH" bench --device cuda --encodings "$ENCODING" --cuda-graph false --attention false \
  --phase "$PHASE" --warmup 1 --steps 1 --out /tmp/step-profile-bench.json "$@" > "$OUT/step-profile.csv" \
  2> /tmp/step-profile.err
status=$?
if [ $status -ne 0 ]; then tail -20 /tmp/step-profile.err; exit $status; fi
python3 "$(dirname "$0")/kernel_times.py" "$OUT/step-profile.csv" --units 2 --unit "$UNIT"
