// Masked cross-entropy and row argmax on the GPU: one warp per row; the loss total is summed in a
// fixed order by one block.
#include <cfloat>

#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

namespace {

constexpr int kRowsPerBlock = 8;
constexpr int kTotalThreads = 1024;

__global__ void cross_entropy_forward_kernel(const float* logits, const int32_t* targets, const float* weights,
                                             float* probs, double* row_loss, int64_t n, int64_t v) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= n) return;
  const float* lr = logits + row * v;
  float* pr = probs + row * v;
  float mx = -FLT_MAX;
  for (int64_t j = lane; j < v; j += 32) mx = fmaxf(mx, lr[j]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int64_t j = lane; j < v; j += 32) sum += expf(lr[j] - mx);
  sum = warp_sum(sum);
  for (int64_t j = lane; j < v; j += 32) pr[j] = expf(lr[j] - mx) / sum;
  if (lane == 0)
    row_loss[row] = weights[row] != 0.0f ? double(weights[row]) * double(mx + logf(sum) - lr[targets[row]]) : 0.0;
}

// One block: Σ row_loss and Σ weights, each thread over a fixed stride, then a fixed tree.
__global__ void cross_entropy_totals_kernel(const double* row_loss, const float* weights, CrossEntropyTotals* totals,
                                            int64_t n) {
  __shared__ double scratch[32];
  double loss = 0.0, wsum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    loss += row_loss[i];
    wsum += double(weights[i]);
  }
  loss = block_sum(loss, scratch);
  wsum = block_sum(wsum, scratch);
  if (threadIdx.x == 0) *totals = CrossEntropyTotals{loss, wsum};
}

__global__ void cross_entropy_backward_kernel(const float* probs, const int32_t* targets, const float* weights,
                                              const CrossEntropyTotals* totals, float dloss, float* dlogits,
                                              bf16* dlogits16, int64_t n, int64_t v) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * v) return;
  const int64_t row = i / v, j = i - row * v;
  const double wsum = totals->weight_sum;
  const float scale = wsum > 0 ? float(double(dloss) / wsum) : 0.0f;
  const float w = weights[row] * scale;
  store_float_or_bf16(dlogits, dlogits16, i, w * probs[i] - (j == targets[row] ? w : 0.0f));
}

__global__ void argmax_rows_kernel(const float* logits, int32_t* out, int64_t n, int64_t v) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= n) return;
  const float* lr = logits + row * v;
  float best = -FLT_MAX;
  int64_t best_j = v;  // the first index of the largest value; v when the lane saw nothing
  for (int64_t j = lane; j < v; j += 32)
    if (best_j == v || lr[j] > best) best = lr[j], best_j = j;
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_xor_sync(kFullWarp, best, offset);
    const int64_t other_j = __shfl_xor_sync(kFullWarp, best_j, offset);
    if (other_j != v && (best_j == v || other > best || (other == best && other_j < best_j))) best = other, best_j = other_j;
  }
  if (lane == 0) out[row] = int32_t(best_j);
}

}  // namespace

void cross_entropy_forward(const float* logits, const int32_t* targets, const float* weights, float* probs,
                           double* row_loss, CrossEntropyTotals* totals, int64_t n, int64_t v, cudaStream_t stream) {
  cross_entropy_forward_kernel<<<blocks_for(n, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream>>>(
      logits, targets, weights, probs, row_loss, n, v);
  PATHBENCH_CUDA_CHECK_LAUNCH("cross_entropy_forward_kernel");
  cross_entropy_totals_kernel<<<1, kTotalThreads, 0, stream>>>(row_loss, weights, totals, n);
  PATHBENCH_CUDA_CHECK_LAUNCH("cross_entropy_totals_kernel");
}

void cross_entropy_backward(const float* probs, const int32_t* targets, const float* weights,
                            const CrossEntropyTotals* totals, float dloss, float* dlogits, int64_t n, int64_t v,
                            cudaStream_t stream, bf16* dlogits16) {
  cross_entropy_backward_kernel<<<blocks_for(n * v), 256, 0, stream>>>(probs, targets, weights, totals, dloss,
                                                                        dlogits, dlogits16, n, v);
  PATHBENCH_CUDA_CHECK_LAUNCH("cross_entropy_backward_kernel");
}

void argmax_rows(const float* logits, int32_t* out, int64_t n, int64_t v, cudaStream_t stream) {
  argmax_rows_kernel<<<blocks_for(n, kRowsPerBlock), 32 * kRowsPerBlock, 0, stream>>>(logits, out, n, v);
  PATHBENCH_CUDA_CHECK_LAUNCH("argmax_rows_kernel");
}

}  // namespace pathbench::cuda
