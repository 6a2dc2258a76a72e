#!/usr/bin/env bash
# The quick CPU demo: installs what is missing, builds the CPU-only pathbench binary (into
# build-cpu: no CUDA kernels, no tests, so the first table comes sooner), trains every position
# encoding on configs/demo.json (parity, under a minute on 2 cores), prints sequence- and
# token-accuracy tables per length (training words have at most 16 letters) and writes the
# figures to build-cpu/demo/plots. Extra arguments go to `pathbench run` (e.g. --threads 4).
# Rerunning skips finished runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build-cpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPATHBENCH_CUDA=OFF >/dev/null
ninja -C build-cpu -j"$(nproc)" pathbench
out=build-cpu/demo  # a fresh run of your own; the committed results/demo came from the same config
./build-cpu/pathbench run configs/demo.json --out "$out" "$@"
./build-cpu/pathbench table "$out" --cols length
./build-cpu/pathbench table "$out" --cols length --metric token_accuracy
./build-cpu/pathbench plot "$out"
