// RMSNorm on the GPU: a warp per row at a time, each lane moving V consecutive columns per access (four
// where C and every array allow a vector access, else one); the gain gradient summed in the
// backward's pass (per-warp rows of shared memory, per-block partial sums) and finished in a fixed
// order, or for wide rows (C > 1,536) through a separate column-sum pass.
#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/cuda/vector_access.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

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

// Blocks of the backward that sum the gain gradient in its pass, each into its own row of partial
// sums (kColumnScratchPerColumn rows of scratch): enough blocks of kRowsPerBlock warps to keep every
// SM full, as the backward without the gain sums does (four rows per warp at the flip-flop step's
// 32,768 rows, against one; an earlier try with 128 blocks of up to 16 warps left too few rows in
// flight and was slower than two passes).
constexpr int kGainBlocks = 1024;
static_assert(kColumnScratchPerColumn >= kGainBlocks && kColumnScratchPerColumn >= kColumnSplits,
              "column-sum scratch size");

// Whether a block's warps' rows of gain sums (kRowsPerBlock rows of C floats) fit the default 48 KB
// of shared memory (C ≤ 1,536); wider rows take a separate column-sum pass.
bool gain_in_backward_pass(int64_t c) { return kRowsPerBlock * c * int64_t(sizeof(float)) <= 48 * 1024; }

// dx_j += s·g_j·dy_j − s³/C · x_j · Σ_k dy_k g_k x_k; dx16 (where not null) = the new dx in bf16.
// Block b takes the rows [b·R, b·R + R), R = ⌈N / gridDim.x⌉, its warps every blockDim.x/32-th row of
// them. Where gain_partial is not null, each warp also sums dy_j·x_j·s over its rows into its own row
// of shared memory (a lane only ever touches its own columns; rows of C floats keep a vector path's
// groups aligned), and the block adds its warps' rows in warp order into gain_partial[b, C]: the gain
// gradient's per-block partial sums, in a fixed order.
template <int V>
__global__ void rmsnorm_backward_kernel(const float* x, const float* g, const float* rstd, const float* dy, float* dx,
                                        int64_t n, int64_t c, bf16* dx16, float* gain_partial) {
  extern __shared__ __align__(16) float warp_gain[];  // [warps, C] where gain_partial is not null
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float* gain = warp_gain + int64_t(warp) * c;
  if (gain_partial)
    for (int64_t j = V * lane; j < c; j += 32 * V) {
      const float zeros[V] = {};
      store_floats(gain + j, zeros);
    }
  const int64_t rows_per_block = (n + gridDim.x - 1) / gridDim.x;
  const int64_t first = int64_t(blockIdx.x) * rows_per_block;
  const int64_t end = first + rows_per_block < n ? first + rows_per_block : n;
  for (int64_t row = first + warp; row < end; row += warps) {
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
      if (gain_partial) {
        float acc[V];
        load_floats(gain + j, acc);
        for (int k = 0; k < V; ++k) acc[k] += dyv[k] * xv[k] * s;
        store_floats(gain + j, acc);
      }
    }
  }
  if (!gain_partial) return;
  __syncthreads();
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    float sum = 0.0f;
    for (int w = 0; w < warps; ++w) sum += warp_gain[int64_t(w) * c + j];
    gain_partial[int64_t(blockIdx.x) * c + j] = sum;
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
  if (n == 0 || c == 0) return;
  const auto kernel =
      rows_vectorizable(c, x, g, dy, dx, dx16) ? rmsnorm_backward_kernel<kVectorWidth> : rmsnorm_backward_kernel<1>;
  const unsigned threads = 32 * kRowsPerBlock;
  if (gain_in_backward_pass(c)) {
    const size_t shared = size_t(kRowsPerBlock) * c * sizeof(float);
    kernel<<<kGainBlocks, threads, shared, stream>>>(x, g, rstd, dy, dx, n, c, dx16, scratch);
    PATHBENCH_CUDA_CHECK_LAUNCH("rmsnorm_backward_kernel");
    finish_column_sums(scratch, kGainBlocks, c, dg, stream);
  } else {
    kernel<<<blocks_for(n, kRowsPerBlock), threads, 0, stream>>>(x, g, rstd, dy, dx, n, c, dx16, nullptr);
    PATHBENCH_CUDA_CHECK_LAUNCH("rmsnorm_backward_kernel");
    column_sums(GainGradient{x, dy, rstd, c}, n, c, scratch, dg, stream);
  }
}

}  // namespace pathbench::cuda
