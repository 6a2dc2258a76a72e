// When an elementwise GPU kernel may move kVectorWidth consecutive elements per thread with one
// vector load or store (a float4, or four bf16 in 8 bytes) instead of one scalar each: the base
// pointers' alignment and the shapes that keep every such group aligned. Decided on the host at
// launch, from the actual pointer values. Free of CUDA includes, so CPU builds test it too.
#pragma once
#include <cstdint>

namespace pathbench::cuda {

inline constexpr int kVectorWidth = 4;

// Whether p is a multiple of `bytes`.
inline bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Whether every pointer p starts a group of kVectorWidth elements aligned to the group's whole size
// (16 bytes of fp32, 8 of bf16), so p[kVectorWidth·i] does too. A null pointer (an output that is
// not written) passes.
template <typename... T>
bool vector_aligned(const T*... p) {
  return (aligned(p, kVectorWidth * sizeof(T)) && ...);
}

// Whether rows of `row_length` elements (or one array of that many) can be moved kVectorWidth at a
// time: the length a multiple of the group, so that no group crosses a row's end, and every base
// pointer vector-aligned (then so is every row's start).
template <typename... T>
bool rows_vectorizable(int64_t row_length, const T*... p) {
  return row_length % kVectorWidth == 0 && vector_aligned(p...);
}

// Whether a head split/merge (core/ops/cuda/head_layout.h) between rows of `stride` elements and
// [B, H, T, D] tensors can move kVectorWidth elements at a time: D and the stride multiples of it
// (then so are every part's column offset p·H·D and tensor offset p·B·H·T·D, and no group crosses
// a head), and both base pointers vector-aligned.
template <typename In, typename Out>
bool heads_permute_vectorizable(const In* src, const Out* dst, int64_t stride, int64_t d) {
  return d % kVectorWidth == 0 && stride % kVectorWidth == 0 && vector_aligned(src, dst);
}

// Whether a RoPE rotation of [BH, T, D] tensors can move kVectorWidth pairs at a time: each half-row
// (D/2 elements, rows of D) a multiple of the group, and every base pointer vector-aligned.
template <typename... T>
bool rope_vectorizable(int64_t head_dim, const T*... p) {
  return head_dim % (2 * kVectorWidth) == 0 && vector_aligned(p...);
}

}  // namespace pathbench::cuda
