// GPU twins of core/ops/head_layout.h: conversions between projection rows [B, T, (…,) H·D] and the per-head
// layout [B, H, T, D], optionally converting fp32 ↔ bf16 on the way (bf16 mode keeps attention
// tensors in bf16). Device pointers; queued on `stream`. Implemented in head_layout.cu.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace pathbench::cuda {

// src: rows of src_stride elements, row (b, t) at src + (b·T + t)·src_stride, head h at column h·D;
// dst: [B, H, T, D]. (src_stride = H·D for a plain projection, 3·H·D inside a fused q/k/v one.)
// With parts P > 1, one launch does P of these: part p reads the H·D columns after p·H·D of each
// row and writes the [B, H, T, D] tensor at dst + p·B·H·T·D (q, k and v of a fused projection).
template <typename In, typename Out>
void split_heads(const In* src, int64_t src_stride, Out* dst, int64_t b, int64_t t, int64_t h, int64_t d,
                 cudaStream_t stream, int parts = 1);

// src: [B, H, T, D] (P of them back to back); dst: rows of dst_stride elements as above.
template <typename In, typename Out>
void merge_heads(const In* src, Out* dst, int64_t dst_stride, int64_t b, int64_t t, int64_t h, int64_t d,
                 cudaStream_t stream, int parts = 1);

}  // namespace pathbench::cuda
