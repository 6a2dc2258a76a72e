// Linear forward and backward on the GPU: row-major products through cuda::gemm.
#include "core/ops/cuda/linear.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/cuda/blas.h"
#include "core/cuda/convert.h"

namespace pathbench::cuda {

namespace {

// The operand pointer gemm wants for this precision; slot picks the staging buffer for conversions.
const void* operand(Context& ctx, MatrixInput m, int64_t count, int slot) {
  if (ctx.precision() != Precision::bf16) {
    if (!m.f32) throw std::logic_error("linear: an fp32 operand is required outside bf16 mode");
    return m.f32;
  }
  if (m.b16) return m.b16;
  if (size_t(count) > ctx.staging_size())
    throw std::logic_error(fmt::format("linear: staging holds {} elements, {} needed", ctx.staging_size(), count));
  to_bf16(m.f32, ctx.staging(slot), count, ctx.stream());
  return ctx.staging(slot);
}

const void* weight_operand(const Context& ctx, const WeightRef& w) {
  return ctx.precision() == Precision::bf16 ? static_cast<const void*>(w.value_bf16) : w.value;
}

// dx = dy · W (dx_beta 0: overwritten, 1: added; skipped when dx is null), then dW += dyᵀ · x.
template <typename DX>
void backward_products(Context& ctx, MatrixInput x, const WeightRef& w, MatrixInput dy, DX* dx, int64_t n, int64_t in,
                       int64_t out, float dx_beta) {
  const void* dya = operand(ctx, dy, n * out, 1);
  if (dx)
    gemm(ctx, "linear_backward (input gradient)", false, false, n, in, out, 1.0f, dya, out, weight_operand(ctx, w), in,
         dx_beta, dx, in);
  const void* xa = operand(ctx, x, n * in, 0);
  gemm(ctx, "linear_backward (weight gradient)", true, false, out, in, n, 1.0f, dya, out, xa, in, 1.0f, w.grad, in);
}

}  // namespace

void linear_forward(Context& ctx, MatrixInput x, const WeightRef& w, float* y, int64_t n, int64_t in, int64_t out,
                    bool accumulate) {
  const void* xa = operand(ctx, x, n * in, 0);
  gemm(ctx, "linear_forward", false, true, n, out, in, 1.0f, xa, in, weight_operand(ctx, w), in,
       accumulate ? 1.0f : 0.0f, y, out);
}

void linear_forward(Context& ctx, MatrixInput x, const WeightRef& w, bf16* y, int64_t n, int64_t in, int64_t out) {
  const void* xa = operand(ctx, x, n * in, 0);
  gemm(ctx, "linear_forward (bf16 output)", false, true, n, out, in, 1.0f, xa, in, weight_operand(ctx, w), in, 0.0f,
       y, out);
}

void linear_forward(Context& ctx, MatrixInput x, const WeightRef& w, ActivationMatrix& y, int64_t n, int64_t in,
                    int64_t out) {
  if (y.b16())
    linear_forward(ctx, x, w, y.b16(), n, in, out);
  else
    linear_forward(ctx, x, w, y.f32(), n, in, out);
}

void linear_backward(Context& ctx, MatrixInput x, const WeightRef& w, MatrixInput dy, float* dx, int64_t n,
                     int64_t in, int64_t out, bool accumulate_dx) {
  backward_products(ctx, x, w, dy, dx, n, in, out, accumulate_dx ? 1.0f : 0.0f);
}

void linear_backward(Context& ctx, MatrixInput x, const WeightRef& w, MatrixInput dy, ActivationMatrix& dx, int64_t n,
                     int64_t in, int64_t out) {
  if (dx.b16())
    backward_products(ctx, x, w, dy, dx.b16(), n, in, out, 0.0f);
  else
    backward_products(ctx, x, w, dy, dx.f32(), n, in, out, 0.0f);
}

}  // namespace pathbench::cuda
