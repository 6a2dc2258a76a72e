// PaTH's whole w/β projection (path_projection.h) in one kernel each way, for bf16 mode: the
// forward reads x and the bf16 weights and writes only w and β; the backward recomputes the
// forward from x and writes dx and every parameter's gradient, keeping low, y, z, dz, dy, dlow and
// dpre in shared memory. The staged path (projection_kernels.h with cuda::linear_*) serves fp32 and
// tf32 modes and the shapes these kernels do not take. Implemented in projection_fused.cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/params/parameters.h"

namespace pathbench::cuda {

struct FusedProjectionArgs {
  const float* x = nullptr;         // [N, C] the layer input (read when x16 is null)
  const __nv_bfloat16* x16 = nullptr;  // [N, C] its bf16 copy, or null
  const __nv_bfloat16* w_down = nullptr;       // [R, C] bf16 shadows of the weights
  const __nv_bfloat16* w_up = nullptr;         // [H·D, R]
  const __nv_bfloat16* beta_weight = nullptr;  // [H, C]
  const float* conv = nullptr;                 // [H·D, 3]
  const float* beta_bias = nullptr;            // [H]
  int64_t batch = 0, length = 0, width = 0, heads = 0, head_dim = 0, rank = 0;
  double beta_clip_eps = 0.0;  // as path_projection_options()
};

// Where the five gradients lie in the flat gradient buffer, counted from path_w_down's offset: the
// backward's per-block sums are rows of `span` floats in this layout (alignment gaps stay zero).
struct ProjectionGradLayout {
  int64_t up = 0, conv = 0, beta_weight = 0, beta_bias = 0, span = 0;
};

// The layout of "<prefix>path_w_down" … "<prefix>path_beta_bias" in `params`; span 0 (which the
// fused kernels do not take) when they are not declared in that order one after another.
ProjectionGradLayout projection_grad_layout(const ParameterSet<float>& params, const std::string& prefix);

// Whether the fused kernels take this shape on the current device: width a multiple of 16, rank 16,
// 32, 48 or 64, at most 16 heads of a head dim in {16, 32, 64, 128}, the gradients laid out in
// order, and the backward's shared memory within the device's limit.
bool fused_projection_supported(int64_t width, int64_t rank, int64_t heads, int64_t head_dim,
                                const ProjectionGradLayout& grads);

// w [B, H, T, D] and β [B, H, T] (overwritten).
void fused_projection_forward(const FusedProjectionArgs& a, __nv_bfloat16* w, float* beta, cudaStream_t stream);

// Blocks of the backward (those the device keeps resident, at most one a tile): the rows of its
// partial sums buffer.
int fused_projection_backward_blocks(const FusedProjectionArgs& a, const ProjectionGradLayout& grads);

// dw [B, H, T, D], dbeta [B, H, T] → dx [N, C] += the input gradient; grads (path_w_down's gradient
// in the flat buffer) += the five parameter gradients through partial [blocks, span] and one
// fixed-order column sum: the same result run to run for the same `blocks`.
void fused_projection_backward(const FusedProjectionArgs& a, const __nv_bfloat16* dw, const float* dbeta, float* dx,
                               const ProjectionGradLayout& grads, float* grad_base, float* partial, int blocks,
                               cudaStream_t stream);

}  // namespace pathbench::cuda
