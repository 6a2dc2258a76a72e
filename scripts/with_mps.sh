#!/usr/bin/env bash
# Runs a command with NVIDIA's Multi-Process Service (MPS) daemon in front of the GPUs, so that the
# kernels of several worker processes (`pathbench run --jobs N`) run at the same time instead of
# taking turns. The daemon is private to this script (its pipe and log folders under /tmp), changes
# no GPU setting, and is stopped when the command ends, however it ends. Without MPS on the machine
# the command runs as it is, and the script says so. Under MPS, killing one CUDA process mid-kernel
# can fault the others (seen on an H200): stop a sweep with SIGTERM (its runs checkpoint), not SIGKILL.
# Usage: scripts/with_mps.sh COMMAND [ARGS...]
set -uo pipefail
if ! command -v nvidia-cuda-mps-control > /dev/null; then
  echo "with_mps: nvidia-cuda-mps-control not found; running without MPS" >&2
  exec "$@"
fi
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/pathbench-mps/pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/pathbench-mps/log}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
if ! nvidia-cuda-mps-control -d; then
  echo "with_mps: the MPS daemon did not start; running without MPS" >&2
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  exec "$@"
fi
trap 'echo quit | nvidia-cuda-mps-control; tail -5 "$CUDA_MPS_LOG_DIRECTORY/control.log" 2>/dev/null' EXIT
echo "with_mps: MPS daemon started" >&2
"$@"
