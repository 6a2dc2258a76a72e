#!/usr/bin/env bash
# The quick CPU demo: installs what is missing, builds, trains every position encoding on
# configs/demo.json (a few minutes on 2 cores), prints the table and writes the figures to
# results/demo/plots. Extra arguments go to `pathbench run` (e.g. --threads 4). Rerunning skips
# finished runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
./build/pathbench run configs/demo.json --out results/demo "$@"
./build/pathbench table results/demo
./build/pathbench plot results/demo
