#!/usr/bin/env bash
# One device-machine session for the CUDA attention kernels: build (sm_90a, or the carried prebuilt
# binaries: scripts/gpu_build.sh), the [cuda] conformance tests, the two ceilings of METHOD.md (copy
# bandwidth, bf16 matrix rate), `pathbench bench-attention` and PyTorch SDPA at the same shapes
# (and fla's kernels where scripts/stage_fla.sh staged their source into deps_dir/fla),
# compute-sanitizer memcheck and racecheck on the small case, and a per-kernel time breakdown
# (Nsight Compute) of chosen encodings and shapes. Logs and JSON go to $OUT (default ./gpu-out, at
# most 8 files); a summary table is printed last.
# SPAN_SWEEP="2 4 16" also times PaTH's backward with those chunks per span (bench.log).
# Set PATHBENCH_GIT_COMMIT (the device copy has no .git) so that the bench JSON names the commit.
# Usage (from the repository root): [NCU_CASES="path 4x4096x16x64;nope 8x2048x16x64"] [SPAN_SWEEP=…] \
#   scripts/gpu_attention_run.sh [deps_dir]
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
DEPS=${1:-$PWD/.deps}
mkdir -p "$OUT"
log() { echo "=== $* ($(date +%T))"; }

log "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
log "build"
scripts/gpu_build.sh "$DEPS" || exit 1

log "tests [cuda]"
timeout 300 ./build/pathbench_tests --require-gpu "[cuda]" > "$OUT/tests.log" 2>&1
echo "tests exit code $?" >> "$OUT/tests.log"
tail -40 "$OUT/tests.log" | grep -vE "^\s*$" | tail -25

log "ceilings"
timeout 60 python3 - <<'PY' 2>&1 | tee "$OUT/ceilings.log"
import torch
x = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
e0.record(); [y.copy_(x) for _ in range(10)]; e1.record(); torch.cuda.synchronize()
print(f"copy bandwidth (read+write) {2 * x.numel() * 10 / (e0.elapsed_time(e1) / 1e3) / 1e12:.2f} TB/s")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
for _ in range(3): a @ b
e0.record(); [a @ b for _ in range(10)]; e1.record(); torch.cuda.synchronize()
print(f"bf16 matmul 8192^3 {2 * 8192**3 * 10 / (e0.elapsed_time(e1) / 1e3) / 1e12:.0f} TFLOP/s")
PY

log "bench-attention"
timeout 240 ./build/pathbench bench-attention --out "$OUT/bench-attention.json" > "$OUT/bench.log" 2>&1
echo "bench-attention exit code $?" >> "$OUT/bench.log"
for span in ${SPAN_SWEEP:-}; do
  log "bench-attention path, $span chunks per span"
  timeout 120 ./build/pathbench bench-attention --encodings path --path-span-chunks "$span" \
    --out "/tmp/bench-span-$span.json" >> "$OUT/bench.log" 2>&1
done
log "bench_sdpa.py"
# fla's kernels too where their source is staged (scripts/stage_fla.sh; Triton compiles them first)
fla=(); [ -d "$DEPS/fla/fla" ] && fla=(--fla "$DEPS/fla")
PYTHONUNBUFFERED=1 timeout $(( ${#fla[@]} ? 360 : 120 )) python3 scripts/bench_sdpa.py "${fla[@]}" \
  --out "$OUT/bench-sdpa.json" >> "$OUT/bench.log" 2>&1
echo "bench_sdpa exit code $?" >> "$OUT/bench.log"
log "compute-sanitizer"
{
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 ./build/pathbench_tests --require-gpu "[sanitize]"
  echo "memcheck exit code $?"
  timeout 200 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 9 \
    ./build/pathbench_tests --require-gpu "[sanitize]"
  echo "racecheck exit code $?"
} > "$OUT/sanitizer.log" 2>&1
grep -E "exit code|ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$OUT/sanitizer.log" | head -12

log "per-kernel times (ncu, one forward+backward)"
IFS=';' read -ra ncu_cases <<< "${NCU_CASES:-path 4x4096x16x64;path 4x4096x8x128;nope 4x4096x16x64;sba 4x4096x16x64}"
for args in "${ncu_cases[@]}"; do
  set -- $args
  echo "--- $1 $2"
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
    ./build/pathbench bench-attention --encodings "$1" --shapes "$2" --warmup 0 --repeats 1 --sets 1 \
    --out /tmp/ncu.json 2>&1 | grep -E "kernel|gpu__time_duration" |
    sed -E 's/void pathbench::cuda::([a-z]+::)?\(anonymous namespace\)::|\(pathbench::.*|\(const .*//g' | cut -c1-140 | head -60
done > "$OUT/ncu.log" 2>&1
cat "$OUT/bench.log" "$OUT/ncu.log"
