#!/usr/bin/env bash
# Stages the source of fla (fla-org/flash-linear-attention) at one commit into DEST/fla with the
# commit in DEST/COMMIT, for `scripts/bench_sdpa.py --fla DEST` on a machine without network (the
# GPU machine: DEST inside the carried .deps folder). SRC is any clone of fla, bare or not. The
# default commit is the one the project's fla figures were measured at (docs/design.md §7).
# Usage: scripts/stage_fla.sh SRC [COMMIT] [DEST]   (defaults: bc3b101d, .deps/fla)
set -euo pipefail
src=${1:?usage: scripts/stage_fla.sh SRC [COMMIT] [DEST]}
commit=${2:-bc3b101d}
dest=${3:-.deps/fla}
full=$(git -C "$src" rev-parse --verify --quiet "$commit^{commit}") ||
  { echo "stage_fla: $src has no commit $commit" >&2; exit 1; }
rm -rf "$dest" && mkdir -p "$dest"
git -C "$src" archive "$full" fla | tar -x -C "$dest"
echo "$full" > "$dest/COMMIT"
echo "stage_fla: fla at $full in $dest ($(du -sh "$dest" | cut -f1))"
