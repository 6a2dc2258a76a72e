// Rotary position embedding: rotates each (m, m + D/2) pair of a query/key at position t by the
// angle t·θ_m with θ_m = base^(−2m/D). Relative: logits depend only on position differences.
#pragma once
#include <cstdint>
#include <string>

namespace pathbench {

// "" for an even head dimension, else why RoPE cannot pair its dimensions.
std::string rope_head_dim_problem(int64_t head_dim);

// x: [BH, T, D], rotated in place; inverse = true rotates by −angle (the backward of a rotation).
template <typename T>
void rope_rotate(T* x, int64_t batch_heads, int64_t length, int64_t head_dim, double base, bool inverse,
                 int64_t position_offset = 0);

}  // namespace pathbench
