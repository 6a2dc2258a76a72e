#!/usr/bin/env bash
# Builds pathbench for an H100/H200 (sm_90, Release, header dependencies from a staged .deps
# folder: ../shared/tools/stage-deps.sh) on a machine without Debian's packages, such as the GPU
# machine; prints the build time. Usage (from the repository root): scripts/gpu_build.sh [deps_dir]
set -uo pipefail
deps=${1:-$PWD/.deps}
start=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPATHBENCH_DEPS_DIR="$deps" -DPATHBENCH_CUDA=ON \
  -DPATHBENCH_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES=90 > /tmp/build.log 2>&1 &&
  ninja -C build -j"$(nproc)" >> /tmp/build.log 2>&1
status=$?
if [ $status -ne 0 ]; then tail -60 /tmp/build.log; exit $status; fi
echo "build: $(( $(date +%s) - start )) s on $(nproc) cores"
