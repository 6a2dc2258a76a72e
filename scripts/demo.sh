#!/usr/bin/env bash
# The quick CPU demo: installs what is missing, builds, trains every position encoding on
# configs/demo.json (parity, a few minutes on 2 cores), prints sequence- and token-accuracy tables
# per length (training words have at most 16 letters) and writes the figures to
# build/demo/plots. Extra arguments go to `pathbench run` (e.g. --threads 4). Rerunning skips
# finished runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
out=build/demo  # a fresh run of your own; the committed results/demo came from the same config
./build/pathbench run configs/demo.json --out "$out" "$@"
./build/pathbench table "$out" --cols length
./build/pathbench table "$out" --cols length --metric token_accuracy
./build/pathbench plot "$out"
