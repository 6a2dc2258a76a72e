// Device reductions with a fixed summation order (same inputs → bit-identical results): warp
// sums over xor shuffles, and column sums of an [rows, cols] expression through per-split
// partial sums finished in a fixed order. Included by .cu files only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/check.h"

namespace pathbench::cuda {

constexpr unsigned kFullWarp = 0xffffffffu;

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullWarp, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024); the result is valid in
// every thread. `scratch` is 32 elements of shared memory.
template <typename T>
__device__ T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : T(0);
  return warp_sum(v);
}

// Splits of the rows in a column sum; the partial buffer holds kColumnSplits × cols floats.
constexpr int kColumnSplits = 128;

// Block (32, 8): thread (x, y) sums value(r, col) for col = 32·blockIdx.x + x over the rows
// r = 8·blockIdx.y + y + k·8·gridDim.y, then the 8 rows of threads combine in order.
template <class F>
__global__ void column_partial_sums_kernel(F value, int64_t rows, int64_t cols, float* partial) {
  __shared__ float sums[8][33];
  const int64_t col = int64_t(blockIdx.x) * 32 + threadIdx.x;
  float acc = 0.0f;
  if (col < cols)
    for (int64_t r = int64_t(blockIdx.y) * 8 + threadIdx.y; r < rows; r += int64_t(gridDim.y) * 8) acc += value(r, col);
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float s = 0.0f;
    for (int y = 0; y < 8; ++y) s += sums[y][threadIdx.x];
    partial[int64_t(blockIdx.y) * cols + col] = s;
  }
}

// out[col] += Σ_split partial[split, col] over `splits` rows of partial sums: for each column, 32
// threads add every 32nd split (thread y from split y) in order, then their sums are added in order
// (the loads of a warp are 32 adjacent columns of one split). With a nonzero
// `group`, the columns are the entries of a [cols/group, group] matrix that out holds transposed (cols
// a multiple of group): column col = k·group + i goes to out[i·(cols/group) + k]. Only where each sum
// is written changes.
void finish_column_sums(const float* partial, int64_t splits, int64_t cols, float* out, cudaStream_t stream,
                        int64_t group = 0);

// out[col] += Σ_r value(r, col) for a device functor value(int64_t r, int64_t col) → float; `group`
// as finish_column_sums'.
template <class F>
void column_sums(F value, int64_t rows, int64_t cols, float* partial, float* out, cudaStream_t stream,
                 int64_t group = 0) {
  const dim3 grid(unsigned((cols + 31) / 32), kColumnSplits), block(32, 8);
  column_partial_sums_kernel<<<grid, block, 0, stream>>>(value, rows, cols, partial);
  PATHBENCH_CUDA_CHECK_LAUNCH("column_partial_sums_kernel");
  finish_column_sums(partial, kColumnSplits, cols, out, stream, group);
}

// column_sums' value functor for a plain row-major [rows, cols] matrix.
struct MatrixEntries {
  const float* m;
  int64_t cols;
  __device__ float operator()(int64_t r, int64_t c) const { return m[r * cols + c]; }
};

// Blocks of `threads` threads covering n elements, one element per thread (at least one block).
inline unsigned blocks_for(int64_t n, int threads = 256) { return unsigned(n > 0 ? (n + threads - 1) / threads : 1); }

}  // namespace pathbench::cuda
