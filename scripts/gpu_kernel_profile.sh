#!/usr/bin/env bash
# Where one CUDA kernel spends its time: builds with line info (build-prof/), runs
# `pathbench bench-attention` for one encoding and shape (or, with SHAPE `step`, one training step of
# the flip-flop model, `pathbench bench --device cuda` without graph capture, so that the model's
# own kernels can be profiled too) under Nsight Compute's full section set,
# restricted to the kernels whose names match a pattern, and writes to $OUT (default ./gpu-out):
#   profile-details.txt  every section of every profiled launch (throughputs, occupancy, warp stall
#                        reasons, memory tables),
#   profile-stalls.txt   per kernel, the average cycles a warp spends stalled per issued instruction, by
#                        reason (largest first),
#   profile-sass.csv     per machine instruction (with its CUDA source line): instructions executed and
#                        warp stall samples.
# Environment: INPUTS (bench-attention's --inputs, default random; far-reaching makes stick-breaking
# scan every key block, as its timings with far-reaching inputs do); PATHBENCH, a pathbench binary
# built with -lineinfo elsewhere (e.g. cmake … -DCMAKE_CUDA_FLAGS=-lineinfo where the sources are),
# profiled instead of building one here.
# Usage (from the repository root, on the device machine):
#   scripts/gpu_kernel_profile.sh ENCODING SHAPE KERNEL_REGEX [deps_dir]
#   e.g. scripts/gpu_kernel_profile.sh path 4x4096x8x128 'query_chain|span_scan' .deps
#        scripts/gpu_kernel_profile.sh path step 'fused_projection_backward'
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 ENCODING SHAPE KERNEL_REGEX [deps_dir]" >&2
  exit 2
fi
ENCODING=$1 SHAPE=$2 KERNELS=$3 DEPS=${4:-$PWD/.deps}
INPUTS=${INPUTS:-random}
OUT=${OUT:-$PWD/gpu-out}
BIN=${PATHBENCH:-./build-prof/pathbench}
mkdir -p "$OUT"
if [ -n "${PATHBENCH:-}" ]; then
  [ -x "$BIN" ] || { echo "$0: PATHBENCH=$BIN is not an executable" >&2; exit 2; }
else
  echo "=== build with line info ($(date +%T))"
  cmake -S . -B build-prof -G Ninja -DCMAKE_BUILD_TYPE=Release -DPATHBENCH_DEPS_DIR="$DEPS" -DPATHBENCH_CUDA=ON \
    -DPATHBENCH_NATIVE=OFF -DCMAKE_CUDA_FLAGS=-lineinfo > /tmp/build-prof.log 2>&1 &&
    ninja -C build-prof -j16 pathbench >> /tmp/build-prof.log 2>&1
  if [ $? -ne 0 ]; then tail -50 /tmp/build-prof.log; exit 1; fi
fi

echo "=== ncu --set full, kernels matching '$KERNELS' ($(date +%T))"
if [ "$SHAPE" = step ]; then
  run=(bench --device cuda --encodings "$ENCODING" --cuda-graph false --attention false --phase training --warmup 1 --steps 1)
else
  run=(bench-attention --encodings "$ENCODING" --shapes "$SHAPE" --inputs "$INPUTS" --warmup 0 --repeats 1 --sets 1)
fi
timeout 300 ncu --clock-control none --set full --import-source yes -k "regex:$KERNELS" --launch-count 4 \
  -f -o /tmp/profile "$BIN" "${run[@]}" --out /tmp/profile.json > /tmp/ncu-run.log 2>&1
echo "ncu exit code $?"
tail -5 /tmp/ncu-run.log
ncu -i /tmp/profile.ncu-rep --page details > "$OUT/profile-details.txt" 2>&1
ncu -i /tmp/profile.ncu-rep --page raw --csv \
  --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio > /tmp/stalls.csv 2>&1
/usr/bin/env python3 - /tmp/stalls.csv > "$OUT/profile-stalls.txt" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
names, units = rows[head], rows[head + 1]
for r in rows[head + 2:]:
    kernel = r[names.index("Kernel Name")]
    stalls = sorted(((float(v.replace(",", "")), n.split("stalled_")[1].split("_per_issue")[0])
                     for n, v in zip(names, r) if "stalled_" in n and v.strip()), reverse=True)
    print(kernel[:100])
    print("  " + ", ".join(f"{reason} {cycles:.2f}" for cycles, reason in stalls if cycles >= 0.05))
PY
[ -s "$OUT/profile-stalls.txt" ] || cp /tmp/stalls.csv "$OUT/profile-stalls.csv"
ncu -i /tmp/profile.ncu-rep --page source --print-source sass --csv > "$OUT/profile-sass.csv" 2>&1
ls -l "$OUT"
