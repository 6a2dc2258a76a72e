// Activations: SwiGLU (silu(a)·b), SiLU and GELU (exact, erf form), elementwise over n values.
#pragma once
#include <cstdint>

namespace pathbench {

// h = silu(a) · b
template <typename T>
void swiglu_forward(const T* a, const T* b, T* h, int64_t n);
// da = dh · b · silu'(a), db = dh · silu(a) (overwritten)
template <typename T>
void swiglu_backward(const T* a, const T* b, const T* dh, T* da, T* db, int64_t n);

// h = silu(a) = a · σ(a)
template <typename T>
void silu_forward(const T* a, T* h, int64_t n);
// da = dh · silu'(a) (overwritten)
template <typename T>
void silu_backward(const T* a, const T* dh, T* da, int64_t n);

// h = x · Φ(x)
template <typename T>
void gelu_forward(const T* x, T* h, int64_t n);
// dx = dh · (Φ(x) + x · φ(x)) (overwritten)
template <typename T>
void gelu_backward(const T* x, const T* dh, T* dx, int64_t n);

}  // namespace pathbench
