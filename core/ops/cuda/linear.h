// GPU twin of linear.h through cuBLAS at the context's precision: y[N, out] = x[N, in] · W[out, in]ᵀ
// and its backward. In bf16 mode both operands of every product are bf16: weights from their bf16
// shadow, activations from a bf16 copy the caller already holds or converted here into the
// context's staging buffers (which must hold N · max(in, out) elements).
#pragma once
#include <cstddef>
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

// An activation matrix in the storage of the context's precision: bf16 in bf16 mode (its producer
// rounds each value once as it writes it), fp32 otherwise. For matrices whose readers are products
// (which read bf16 operands in bf16 mode anyway: no conversion between producer and product) or
// elementwise kernels that take either storage (the MLP's pre-activations and hidden gradient).
class ActivationMatrix {
 public:
  explicit ActivationMatrix(const char* what) : f32_(what), b16_(what) {}
  // Room for n elements in the storage of `precision`'s products; true when it reallocated.
  bool reserve(size_t n, Precision precision) {
    in_bf16_ = precision == Precision::bf16;
    return in_bf16_ ? b16_.reserve(n) : f32_.reserve(n);
  }
  float* f32() { return in_bf16_ ? nullptr : f32_.data(); }  // null in bf16 mode
  bf16* b16() { return in_bf16_ ? b16_.data() : nullptr; }   // null outside it
  MatrixInput input() const { return in_bf16_ ? MatrixInput{nullptr, b16_.data()} : MatrixInput{f32_.data(), nullptr}; }

 private:
  DeviceBuffer<float> f32_;
  DeviceBuffer<bf16> b16_;
  bool in_bf16_ = false;
};

// y = x · Wᵀ, overwriting y, or adding to it when accumulate.
void linear_forward(Context& ctx, MatrixInput x, const WeightRef& w, float* y, int64_t n, int64_t in, int64_t out,
                    bool accumulate = false);
// y = x · Wᵀ rounded to bf16 (bf16 mode only), for outputs that only bf16 consumers read: within one
// bf16 step of the fp32 product rounded by to_bf16 (cuBLAS may pick a kernel that sums in another
// order), without writing and reading the fp32 matrix.
void linear_forward(Context& ctx, MatrixInput x, const WeightRef& w, bf16* y, int64_t n, int64_t in, int64_t out);
// y = x · Wᵀ into whichever storage y has (overwritten).
void linear_forward(Context& ctx, MatrixInput x, const WeightRef& w, ActivationMatrix& y, int64_t n, int64_t in,
                    int64_t out);

// dx[N, in] = dy · W (overwritten, or added when accumulate_dx; skipped when dx is null);
// dW[out, in] += dyᵀ · x.
void linear_backward(Context& ctx, MatrixInput x, const WeightRef& w, MatrixInput dy, float* dx, int64_t n,
                     int64_t in, int64_t out, bool accumulate_dx = false);
// The same with dx in whichever storage it has (overwritten; bf16: dy · W rounded once, within one
// bf16 step of the fp32 dx rounded, as for the forward's bf16 output); dW as above.
void linear_backward(Context& ctx, MatrixInput x, const WeightRef& w, MatrixInput dy, ActivationMatrix& dx, int64_t n,
                     int64_t in, int64_t out);

}  // namespace pathbench::cuda
