// RMSNorm on the GPU: one warp per row, each lane moving V consecutive columns per access (four
// where C and every array allow a vector access, else one); the gain gradient through fixed-order
// column sums.
#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/cuda/vector_access.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

static_assert(kColumnScratchPerColumn == kColumnSplits, "column-sum scratch size");

namespace {

constexpr int kRowsPerBlock = 8;  // warps per block

// Also x_copy = x and y16 = bf16(y) where those are not null (see ops.h; y may be null).
template <int V>
__global__ void rmsnorm_forward_kernel(const float* x, const float* g, float* y, float* rstd, int64_t n, int64_t c,
                                       float eps, float* x_copy, bf16* y16) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= n) return;
  const float* xr = x + row * c;
  float ss = 0.0f;
  for (int64_t j = V * lane; j < c; j += 32 * V) {
    float xv[V];
    load_floats(xr + j, xv);
    for (int k = 0; k < V; ++k) ss += xv[k] * xv[k];
  }
  ss = warp_sum(ss);
  const float s = 1.0f / sqrtf(ss / float(c) + eps);
  if (lane == 0) rstd[row] = s;
  for (int64_t j = V * lane; j < c; j += 32 * V) {
    float xv[V], gv[V], out[V];
    load_floats(xr + j, xv);
    load_floats(g + j, gv);
    for (int k = 0; k < V; ++k) out[k] = xv[k] * s * gv[k];
    store_floats_or_bf16(y, y16, row * c + j, out);
    if (x_copy) store_floats(x_copy + row * c + j, xv);
  }
}

// dx_j += s·g_j·dy_j − s³/C · x_j · Σ_k dy_k g_k x_k; dx16 (where not null) = the new dx in bf16
template <int V>
__global__ void rmsnorm_backward_kernel(const float* x, const float* g, const float* rstd, const float* dy, float* dx,
                                        int64_t n, int64_t c, bf16* dx16) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= n) return;
  const float* xr = x + row * c;
  const float* dyr = dy + row * c;
  float dot = 0.0f;
  for (int64_t j = V * lane; j < c; j += 32 * V) {
    float xv[V], gv[V], dyv[V];
    load_floats(xr + j, xv);
    load_floats(g + j, gv);
    load_floats(dyr + j, dyv);
    for (int k = 0; k < V; ++k) dot += dyv[k] * gv[k] * xv[k];
  }
  dot = warp_sum(dot);
  const float s = rstd[row], coef = s * s * s * dot / float(c);
  for (int64_t j = V * lane; j < c; j += 32 * V) {
    float xv[V], gv[V], dyv[V], out[V];
    load_floats(xr + j, xv);
    load_floats(g + j, gv);
    load_floats(dyr + j, dyv);
    load_floats(dx + row * c + j, out);
    for (int k = 0; k < V; ++k) out[k] += s * gv[k] * dyv[k] - coef * xv[k];
    store_floats_or_bf16(dx, dx16, row * c + j, out);
  }
}

// dg_j = Σ_r dy_rj · x_rj · s_r
struct GainGradient {
  const float *x, *dy, *rstd;
  int64_t c;
  __device__ float operator()(int64_t r, int64_t j) const { return dy[r * c + j] * x[r * c + j] * rstd[r]; }
};

}  // namespace

void rmsnorm_forward(const float* x, const float* g, float* y, float* rstd, int64_t n, int64_t c, float eps,
                     cudaStream_t stream, float* x_copy, bf16* y16) {
  const unsigned blocks = blocks_for(n, kRowsPerBlock);
  const auto kernel =
      rows_vectorizable(c, x, g, y, x_copy, y16) ? rmsnorm_forward_kernel<kVectorWidth> : rmsnorm_forward_kernel<1>;
  kernel<<<blocks, 32 * kRowsPerBlock, 0, stream>>>(x, g, y, rstd, n, c, eps, x_copy, y16);
  PATHBENCH_CUDA_CHECK_LAUNCH("rmsnorm_forward_kernel");
}

void rmsnorm_backward(const float* x, const float* g, const float* rstd, const float* dy, float* dx, float* dg,
                      float* scratch, int64_t n, int64_t c, cudaStream_t stream, bf16* dx16) {
  const unsigned blocks = blocks_for(n, kRowsPerBlock);
  const auto kernel =
      rows_vectorizable(c, x, g, dy, dx, dx16) ? rmsnorm_backward_kernel<kVectorWidth> : rmsnorm_backward_kernel<1>;
  kernel<<<blocks, 32 * kRowsPerBlock, 0, stream>>>(x, g, rstd, dy, dx, n, c, dx16);
  PATHBENCH_CUDA_CHECK_LAUNCH("rmsnorm_backward_kernel");
  column_sums(GainGradient{x, dy, rstd, c}, n, c, scratch, dg, stream);
}

}  // namespace pathbench::cuda
