#!/usr/bin/env bash
# Samples the GPUs' utilization and memory once a second into FILE until killed, for sweep
# benchmarks (nvidia-smi's CSV). Usage: scripts/gpu_utilization.sh FILE &
set -u
exec nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 > "$1"
