// CUDA twin of rope.h: rotates each (m, m + D/2) pair of a query/key at position t by t·θ_m,
// θ_m = base^(−2m/D). Angles are formed and reduced to [−π, π] in double, so fp32 results match the
// CPU's to rounding at any position. Conventions: kernel_common.h.
#pragma once
#include "core/attention/cuda/kernel_common.h"

namespace pathbench::cuda {

// x: [BH, T, D] device, rotated in place; inverse = true rotates by −angle (the backward).
template <typename S>
void rope_rotate(S* x, int64_t batch_heads, int64_t length, int64_t head_dim, double base, bool inverse,
                 int64_t position_offset, cudaStream_t stream);
// The same rotation written to out (x unchanged), e.g. rotated copies of the queries and keys.
template <typename S>
void rope_rotate_copy(const S* x, S* out, int64_t batch_heads, int64_t length, int64_t head_dim, double base,
                      bool inverse, int64_t position_offset, cudaStream_t stream);
// Two tensors of one shape (queries and keys, or their gradients) rotated in one pass, each angle's
// sine and cosine serving both; a_out = a, b_out = b rotates in place.
template <typename S>
void rope_rotate_copy_pair(const S* a, S* a_out, const S* b, S* b_out, int64_t batch_heads, int64_t length,
                           int64_t head_dim, double base, bool inverse, int64_t position_offset, cudaStream_t stream);

}  // namespace pathbench::cuda
