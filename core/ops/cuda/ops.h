// The GPU twins of the CPU ops of core/ops (embedding.h, rmsnorm.h, activations.h,
// cross_entropy.h) and the small elementwise helpers of the GPU model. Same shapes and semantics as
// the CPU functions; all pointers are device pointers, the work is queued on `stream`, and every
// launch is checked (a failure throws pathbench::Error). Sums run in a fixed order, so results are
// bit-reproducible run to run. Implemented in this folder's .cu files, one per CPU .cpp file.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/ops/embedding_plan.h"

namespace pathbench::cuda {

using bf16 = __nv_bfloat16;

// Scratch for the column sums of the backward passes (parameter gradients of norms and encodings):
// floats per column, one per partial sum (rmsnorm.cu's blocks, reduce.cuh's splits).
constexpr int64_t kColumnScratchPerColumn = 1024;

// ---- embedding.cu ----------------------------------------------------------------------------------
// out[N, C] = table[tokens[n], :]
void embedding_forward(const int32_t* tokens, const float* table, float* out, int64_t n, int64_t c,
                       cudaStream_t stream);

// dtable[V, C] += the rows of dout[N, C] summed per token, in the order of `plan` (the host's
// build_embedding_plan, core/ops/embedding_plan.h, uploaded); partial: [layout.max_segments, C] scratch.
void embedding_backward(const int32_t* plan, const float* dout, float* dtable, float* partial, int64_t n,
                        int64_t vocab, int64_t c, cudaStream_t stream);

// ---- rmsnorm.cu ------------------------------------------------------------------------------------
// x, y: [N, C]; g: [C]; rstd: [N]. In the same pass, where not null: x_copy[N, C] = x (the start of
// the next residual stream) and y16[N, C] = y rounded to bf16 as to_bf16 does (the next product's
// operand in bf16 mode); y may be null when only y16 is needed. The row sums' order follows the
// vector path (C a multiple of 4 and every array aligned) or the scalar one, so rstd and y may differ
// in the last bit between calls whose arrays are aligned differently; a model's buffers always are
// the same way.
void rmsnorm_forward(const float* x, const float* g, float* y, float* rstd, int64_t n, int64_t c, float eps,
                     cudaStream_t stream, float* x_copy = nullptr, bf16* y16 = nullptr);
// dx[N, C] += gradient; dg[C] += gradient; scratch: kColumnScratchPerColumn · C floats. dx16 (where
// not null) [N, C] = the updated dx rounded to bf16, the operand of the products that read it next.
void rmsnorm_backward(const float* x, const float* g, const float* rstd, const float* dy, float* dx, float* dg,
                      float* scratch, int64_t n, int64_t c, cudaStream_t stream, bf16* dx16 = nullptr);

// ---- activations.cu --------------------------------------------------------------------------------
// Forward activations write h and/or, where h16 is not null, h rounded to bf16 as to_bf16 does (h
// may be null when only the bf16 copy is needed); the backward passes likewise write their input
// gradients in fp32 and/or bf16 (the d…16 outputs). SwiGLU works on [rows, cols] matrices whose inputs
// a, b (and their gradients da, db) have rows in_stride elements apart, so that a and b can be the two
// halves of each row of one fused product [rows, 2·cols] (a = p, b = p + cols, in_stride = 2·cols);
// h, h16 and dh are dense [rows, cols].
// The inputs (a, b, x and dh; In = float or bf16) are read as fp32: bf16 mode keeps the MLP's
// pre-activations and hidden gradient in bf16, as its products write them.
template <typename In>
void swiglu_forward(const In* a, const In* b, int64_t in_stride, float* h, int64_t rows, int64_t cols,
                    cudaStream_t stream, bf16* h16 = nullptr);
template <typename In>
void swiglu_backward(const In* a, const In* b, int64_t in_stride, const In* dh, float* da, float* db, int64_t rows,
                     int64_t cols, cudaStream_t stream, bf16* da16 = nullptr, bf16* db16 = nullptr);
// GELU on n contiguous values.
template <typename In>
void gelu_forward(const In* x, float* h, int64_t n, cudaStream_t stream, bf16* h16 = nullptr);
template <typename In>
void gelu_backward(const In* x, const In* dh, float* dx, int64_t n, cudaStream_t stream, bf16* dx16 = nullptr);

// ---- cross_entropy.cu ------------------------------------------------------------------------------
// Σ_n w_n · (−log p_n[target_n]) and Σ_n w_n, in device memory; the loss is their ratio (0 when the
// weight sum is 0).
struct CrossEntropyTotals {
  double loss_sum;
  double weight_sum;
};
inline float loss_value(const CrossEntropyTotals& t) { return t.weight_sum > 0 ? float(t.loss_sum / t.weight_sum) : 0.0f; }
// logits: [N, V]; targets, weights: [N]. Writes probs [N, V] and totals; partials:
// [cross_entropy_blocks(N, V)] scratch, the per-block sums that totals adds in a fixed order.
void cross_entropy_forward(const float* logits, const int32_t* targets, const float* weights, float* probs,
                           CrossEntropyTotals* partials, CrossEntropyTotals* totals, int64_t n, int64_t v,
                           cudaStream_t stream);
int64_t cross_entropy_blocks(int64_t n, int64_t v);
// dlogits[N, V] = dloss · w_n (probs − onehot) / Σ w (overwritten), Σ w read from totals; written in
// fp32 to dlogits and/or rounded to bf16 to dlogits16, whichever is not null.
void cross_entropy_backward(const float* probs, const int32_t* targets, const float* weights,
                            const CrossEntropyTotals* totals, float dloss, float* dlogits, int64_t n, int64_t v,
                            cudaStream_t stream, bf16* dlogits16 = nullptr);
// out[N] = index of the largest logit of each row (the first one on ties).
void argmax_rows(const float* logits, int32_t* out, int64_t n, int64_t v, cudaStream_t stream);

}  // namespace pathbench::cuda
