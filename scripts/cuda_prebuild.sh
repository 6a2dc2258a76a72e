#!/usr/bin/env bash
# Builds the CUDA binaries (pathbench and pathbench_tests: sm_90a, Release, header dependencies and
# header-only fmt from the staged .deps folder) here, for a GPU machine whose own build would cost
# minutes of its time. The two binaries and their stamp SOURCE_COMMIT are also packed into
# build-cuda/prebuilt.tar.xz (≈ 9 MB against 44 MB unpacked: xz's largest window finds the kernels
# the two binaries share; ≈ 16 MB at its default level): carry that file there, and
# scripts/gpu_build.sh unpacks it and uses the binaries instead of building when SOURCE_COMMIT
# names the commit given by PATHBENCH_GIT_COMMIT. The binaries need only glibc,
# libstdc++, libgomp and the CUDA runtime libraries (a newer system than this one runs them).
# Refuses a tree whose tracked files differ from HEAD, so the stamp always names what was built.
# Usage (from the repository root): scripts/cuda_prebuild.sh [deps_dir]
set -euo pipefail
deps=${1:-$PWD/.deps}
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "cuda_prebuild: tracked files differ from HEAD; commit first so that the binaries name a commit" >&2
  exit 1
fi
[ -d "$deps/include" ] || { echo "cuda_prebuild: no staged headers in $deps (stage them first)" >&2; exit 1; }
commit=$(git rev-parse HEAD)
rm -f build-cuda/SOURCE_COMMIT build-cuda/prebuilt.tar.xz
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DPATHBENCH_DEPS_DIR="$deps" -DPATHBENCH_CUDA=ON \
  -DPATHBENCH_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES=90a > /dev/null
ninja -C build-cuda pathbench pathbench_tests
echo "$commit" > build-cuda/SOURCE_COMMIT
XZ_OPT="-9e -T0" tar -cJf build-cuda/prebuilt.tar.xz.tmp -C build-cuda pathbench pathbench_tests SOURCE_COMMIT
mv build-cuda/prebuilt.tar.xz.tmp build-cuda/prebuilt.tar.xz
echo "built $commit; carry build-cuda/prebuilt.tar.xz ($(du -h build-cuda/prebuilt.tar.xz | cut -f1))"
