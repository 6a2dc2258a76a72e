#!/usr/bin/env bash
# The attention scoreboard of one device call, every figure timed in the same call: `pathbench
# bench-attention` for nope, rope, fox, path and path_fox (random inputs) and for stick-breaking with
# far-reaching inputs (where no key block's weights vanish), then scripts/bench_sdpa.py — PyTorch's
# SDPA, and fla's kernels where FLA names a staged source tree — one shape at a time, each into its
# own JSON, so that a run stopped at the time limit keeps every shape before it (fla's Triton
# autotuning takes about a minute a shape). Last, the table of scripts/attention_table.py --ratio
# (ratios to SDPA; PaTH and PaTH-FoX to fla). Files go to $OUT/score (OUT default ./gpu-out):
# attention.json, sba-far.json, sdpa-SHAPE.json, each with its log.
# Environment: PATHBENCH (default ./build/pathbench), FLA (default .deps/fla where it holds fla/),
# LIMIT (seconds for the whole script, default 540), SHAPES (BxTxHxD list, default the binary's
# anchor shapes).
# Usage (on the device machine, from the repository root): scripts/gpu_scoreboard.sh
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
PATHBENCH=${PATHBENCH:-./build/pathbench} LIMIT=${LIMIT:-540}
FLA=${FLA:-}; [ -z "$FLA" ] && [ -d .deps/fla/fla ] && FLA=.deps/fla
[ -x "$PATHBENCH" ] || { echo "$0: no pathbench binary at $PATHBENCH (build one, or set PATHBENCH)" >&2; exit 2; }
SHAPES=${SHAPES:-$("$PATHBENCH" bench-attention --list-shapes)} || { echo "$0: $PATHBENCH lists no shapes" >&2; exit 2; }
PY=$(command -v python3)
dir=$OUT/score
mkdir -p "$dir"
start=$(date +%s)
left() { echo $((LIMIT - ($(date +%s) - start))); }
log() { echo "=== $* ($(date +%T), $(left) s left)"; }
shape_args=(--shapes $SHAPES)

log "bench-attention: nope rope fox path path_fox"
timeout 150 "$PATHBENCH" bench-attention --encodings nope rope fox path path_fox "${shape_args[@]}" --warmup 3 \
  --repeats 15 --out "$dir/attention.json" > "$dir/attention.log" 2>&1 || echo "bench-attention failed (see attention.log)"
log "bench-attention: sba, far-reaching inputs"
timeout 90 "$PATHBENCH" bench-attention --encodings sba --inputs far-reaching "${shape_args[@]}" --warmup 3 \
  --repeats 15 --out "$dir/sba-far.json" > "$dir/sba-far.log" 2>&1 || echo "sba far failed (see sba-far.log)"

fla_args=(); [ -n "$FLA" ] && fla_args=(--fla "$FLA")
sdpa_files=()
for shape in $SHAPES; do
  budget=$(( $(left) - 10 ))
  if [ "$budget" -lt 30 ]; then echo "no time left for SDPA at $shape"; continue; fi
  log "SDPA${FLA:+ and fla} at $shape"
  if timeout "$budget" "$PY" scripts/bench_sdpa.py --pathbench "$PATHBENCH" "${fla_args[@]}" --shapes "$shape" \
      --warmup 5 --repeats 20 --out "$dir/sdpa-$shape.json" > "$dir/sdpa-$shape.log" 2>&1; then
    sdpa_files+=("$dir/sdpa-$shape.json")
  else
    echo "bench_sdpa.py at $shape stopped (see sdpa-$shape.log)"
  fi
done

log "table"
if [ -f "$dir/attention.json" ] && [ ${#sdpa_files[@]} -gt 0 ]; then
  far=(); [ -f "$dir/sba-far.json" ] && far=(--far-reaching "$dir/sba-far.json")
  "$PY" scripts/attention_table.py "$dir/attention.json" "${sdpa_files[@]}" --ratio "${far[@]}"
else
  echo "no table: bench-attention or every SDPA run failed"
  exit 1
fi
