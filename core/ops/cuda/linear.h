// GPU twin of linear.h through cuBLAS at the context's precision: y[N, out] = x[N, in] · W[out, in]ᵀ
// and its backward. In bf16 mode both operands of every product are bf16: weights from their bf16
// shadow, activations from a bf16 copy the caller already holds or converted here into the
// context's staging buffers (which must hold N · max(in, out) elements).
#pragma once
#include <cstdint>

#include "core/cuda/context.h"
#include "core/params/cuda/parameters.h"

namespace pathbench::cuda {

// An activation matrix: its fp32 values, and (optionally, bf16 mode only) a bf16 copy. fp32 and
// tf32 modes need f32; bf16 mode uses b16 when given, else converts f32.
struct MatrixInput {
  const float* f32 = nullptr;
  const bf16* b16 = nullptr;
};

// y = x · Wᵀ, overwriting y, or adding to it when accumulate.
void linear_forward(Context& ctx, MatrixInput x, const WeightRef& w, float* y, int64_t n, int64_t in, int64_t out,
                    bool accumulate = false);
// y = x · Wᵀ rounded to bf16 (bf16 mode only), for outputs that only bf16 consumers read: within one
// bf16 step of the fp32 product rounded by to_bf16 (cuBLAS may pick a kernel that sums in another
// order), without writing and reading the fp32 matrix.
void linear_forward(Context& ctx, MatrixInput x, const WeightRef& w, bf16* y, int64_t n, int64_t in, int64_t out);

// dx[N, in] = dy · W (overwritten, or added when accumulate_dx; skipped when dx is null);
// dW[out, in] += dyᵀ · x.
void linear_backward(Context& ctx, MatrixInput x, const WeightRef& w, MatrixInput dy, float* dx, int64_t n,
                     int64_t in, int64_t out, bool accumulate_dx = false);

}  // namespace pathbench::cuda
