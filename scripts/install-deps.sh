#!/usr/bin/env bash
# Installs the Debian packages pathbench needs that are missing (compiler, CMake, Ninja, Eigen,
# nlohmann/json, Catch2, fmt, CLI11, OpenMP, matplotlib). The CUDA toolkit is used when found at
# /usr/local/cuda and never required.
set -euo pipefail
packages=(g++ cmake ninja-build git libeigen3-dev nlohmann-json3-dev catch2 libfmt-dev libcli11-dev python3-matplotlib)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
