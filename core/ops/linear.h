// Linear map without bias, PyTorch layout: y[N, out] = x[N, in] · W[out, in]ᵀ.
#pragma once
#include <cstdint>

namespace pathbench {

template <typename T>
void linear_forward(const T* x, const T* w, T* y, int64_t n, int64_t in, int64_t out);

// dx[N, in] = dy · W (overwritten, or added when accumulate_dx); dw[out, in] += dyᵀ · x.
// dx may be null (input needs no gradient).
template <typename T>
void linear_backward(const T* x, const T* w, const T* dy, T* dx, T* dw, int64_t n, int64_t in, int64_t out,
                     bool accumulate_dx = false);

}  // namespace pathbench
