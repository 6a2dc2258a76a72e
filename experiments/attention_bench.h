// The CUDA attention-kernel benchmark behind `pathbench bench-attention` and `pathbench bench
// --device cuda`: forward and forward+backward medians (device events, warm-up, repeats cycling
// through several input sets) per attention op (core/attention/op_registry.h) and B·T·H·D shape, bf16.
#pragma once
#include <string>
#include <vector>

#include "core/options.h"

namespace pathbench {

struct AttentionBenchOptions {
  std::vector<std::string> encodings;  // registered attention ops (empty: every one with a GPU implementation)
  // The anchors: head dim 64 at three lengths, 128, and the small head dims 16 and 32 (H·D = 1,024 throughout);
  // scripts/bench_sdpa.py times the same shapes, asking `bench-attention --list-shapes`.
  std::vector<std::string> shapes = {"8x2048x16x64", "4x4096x16x64",  "2x8192x16x64",
                                     "4x4096x8x128", "4x4096x64x16", "4x4096x32x32"};
  int warmup = 5, repeats = 30, sets = 3;
  int64_t path_span_chunks = 0;  // chunks per span of PaTH (0: the kernel's own choice)
  bool portable_kernels = false;  // time the portable kernels even where Hopper forms can run (core/cuda/hopper.h)
  // "random": q, k, v, dO uniform with unit variance, so s·q·k ≈ N(0, 1) and stick-breaking's weights
  // vanish about 110 keys back (its kernels skip the key blocks past that). "far-reaching": q shifted
  // by +c and k by −c (s·c²·D = 6), so s·q·k ≈ −6, sticks rarely break and every key block counts.
  std::string inputs = "random";
};

// Checks the encodings and shapes, times every pair (printing a table row each) and returns the
// JSON document: device, settings, build flags and one result per pair. Throws pathbench::Error on
// bad input, a GPU error, or in a build without the CUDA backend.
json time_attention_kernels(const AttentionBenchOptions& o);

}  // namespace pathbench
