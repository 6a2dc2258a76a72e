#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through CTest. GPU tests (label `cuda`)
# run when a GPU is present and are reported as skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
