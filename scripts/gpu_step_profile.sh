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
  training) UNIT="step" UNITS="steps" ;;
  evaluation) UNIT="evaluation batch" UNITS="evaluation batches" ;;
  *) echo "$0: PHASE must be training or evaluation, not '$PHASE'" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
timeout 300 ncu --clock-control none --csv --page raw --metrics gpu__time_duration.sum \
  "$PATHBENCH" bench --device cuda --encodings "$ENCODING" --cuda-graph false --attention false \
  --phase "$PHASE" --warmup 1 --steps 1 --out /tmp/step-profile-bench.json "$@" > "$OUT/step-profile.csv" \
  2> /tmp/step-profile.err
status=$?
if [ $status -ne 0 ]; then tail -20 /tmp/step-profile.err; exit $status; fi
UNIT="$UNIT" UNITS="$UNITS" python3 - "$OUT/step-profile.csv" <<'PY'
import collections, csv, os, re, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
header = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
names, data = rows[header], rows[header + 2:]  # the line after the header holds the units
name_col, time_col = names.index("Kernel Name"), names.index("gpu__time_duration.sum")
launches = [(r[name_col], float(r[time_col].replace(",", ""))) for r in data if len(r) > time_col]


def kernel_name(full):
    """e.g. "void pathbench::cuda::(anonymous namespace)::path_prep_kernel<float, 64>(…)" → path_prep_kernel;
    the full name (cut) when no such last component is found."""
    bare = re.sub(r"\(anonymous namespace\)|<unnamed>", "", full)
    parts = [p.strip() for p in re.split(r"[<(]", bare)[0].replace("void ", "").split("::") if p.strip()]
    return parts[-1] if parts and parts[-1] not in ("pathbench", "cuda", "detail") else full[:100]


total = collections.Counter()
count = collections.Counter()
for name, ns in launches:
    short = kernel_name(name)
    total[short] += ns / 2  # two steps or batches
    count[short] += 1
overall = sum(total.values())
print(f"{len(launches)} launches in two {os.environ['UNITS']}, {overall / 1e3:.1f} us of kernel time per "
      f"{os.environ['UNIT']}")
for name, ns in total.most_common(25):
    print(f"{ns / 1e3:9.1f} us {100 * ns / overall:5.1f} %  x{count[name] / 2:<5g} {name}")
PY
