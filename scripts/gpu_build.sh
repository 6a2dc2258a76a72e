#!/usr/bin/env bash
# Builds pathbench for an H100/H200 (sm_90a, Release, header dependencies from a staged .deps
# folder: ../shared/tools/stage-deps.sh) on a machine without Debian's packages, such as the GPU
# machine; prints the build time. Binaries built elsewhere by scripts/cuda_prebuild.sh and carried
# along (build-cuda/prebuilt.tar.xz, or the unpacked build-cuda/ files) are used instead when their
# SOURCE_COMMIT is the commit PATHBENCH_GIT_COMMIT names and they start here.
# Usage (from the repository root): scripts/gpu_build.sh [deps_dir]
set -uo pipefail
stamp=build-cuda/SOURCE_COMMIT
archive=build-cuda/prebuilt.tar.xz
if [ -f "$archive" ] && ! tar -xJf "$archive" -C build-cuda; then
  echo "gpu_build: could not unpack $archive (is xz installed?)" >&2
fi
if [ -n "${PATHBENCH_GIT_COMMIT:-}" ] && [ -f "$stamp" ]; then
  # (--help, not --list-tags, for the tests: Catch2 v2's listings exit with the number listed)
  if [[ $(cat "$stamp") == "$PATHBENCH_GIT_COMMIT"* ]] && build-cuda/pathbench --help > /dev/null 2>&1 &&
     build-cuda/pathbench_tests --help > /dev/null 2>&1; then
    mkdir -p build && cp build-cuda/pathbench build-cuda/pathbench_tests build/
    echo "build: prebuilt binaries of $(cat "$stamp")"
    exit 0
  fi
  echo "gpu_build: build-cuda/ holds binaries of $(cat "$stamp") that do not serve $PATHBENCH_GIT_COMMIT here; building" >&2
fi
deps=${1:-$PWD/.deps}
start=$(date +%s)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPATHBENCH_DEPS_DIR="$deps" -DPATHBENCH_CUDA=ON \
  -DPATHBENCH_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES=90a > /tmp/build.log 2>&1 &&
  ninja -C build -j"$(nproc)" >> /tmp/build.log 2>&1
status=$?
if [ $status -ne 0 ]; then tail -60 /tmp/build.log; exit $status; fi
echo "build: $(( $(date +%s) - start )) s on $(nproc) cores"
