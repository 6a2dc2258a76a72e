// Masked cross-entropy and row argmax on the GPU. A row takes one thread where the vocabulary is
// small (v ≤ 32, as flip-flop's 8 tokens) and one warp otherwise. Each block of the
// forward also sums its rows' losses and weights, and one block adds those partial sums in a fixed
// order (a fixed stride per thread, then a fixed tree), so the same inputs give the same loss.
#include <cfloat>

#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

namespace {

constexpr int kThreads = 256;       // per block of the row kernels
constexpr int kTotalThreads = 1024;  // the one block that adds the partial sums

// Lanes per row: 1 (a thread walks its row) or 32 (a warp shares it).
int lanes_per_row(int64_t v) { return v <= 32 ? 1 : 32; }

// Blocks of kThreads covering n rows of v logits, at lanes_per_row(v) threads a row.
unsigned row_blocks(int64_t n, int64_t v) { return blocks_for(n * lanes_per_row(v), kThreads); }

template <int Lanes>
__device__ __forceinline__ float row_max(float x) {
  if constexpr (Lanes == 1) return x;
  else return warp_max(x);
}

template <int Lanes>
__device__ __forceinline__ float row_sum(float x) {
  if constexpr (Lanes == 1) return x;
  else return warp_sum(x);
}

// Row r = (global thread) / Lanes; its lanes split the vocabulary. A warp's lanes all hold one row
// or all hold rows of their own, so a row past n leaves no shuffle partner behind.
template <int Lanes>
__global__ void cross_entropy_forward_kernel(const float* logits, const int32_t* targets, const float* weights,
                                             float* probs, CrossEntropyTotals* partials, int64_t n, int64_t v) {
  __shared__ double scratch[32];
  const int64_t row = (int64_t(blockIdx.x) * kThreads + threadIdx.x) / Lanes;
  const int lane = int(threadIdx.x) % Lanes;
  double loss = 0.0, weight = 0.0;
  if (row < n) {
    const float* lr = logits + row * v;
    float* pr = probs + row * v;
    float mx = -FLT_MAX;
    for (int64_t j = lane; j < v; j += Lanes) mx = fmaxf(mx, lr[j]);
    mx = row_max<Lanes>(mx);
    float sum = 0.0f;
    for (int64_t j = lane; j < v; j += Lanes) sum += expf(lr[j] - mx);
    sum = row_sum<Lanes>(sum);
    for (int64_t j = lane; j < v; j += Lanes) pr[j] = expf(lr[j] - mx) / sum;
    if (lane == 0) {
      weight = weights[row];
      if (weight != 0.0) loss = weight * double(mx + logf(sum) - lr[targets[row]]);
    }
  }
  loss = block_sum(loss, scratch);
  weight = block_sum(weight, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = CrossEntropyTotals{loss, weight};
}

// One block: Σ of the blocks' partial sums, each thread over a fixed stride, then a fixed tree.
__global__ void cross_entropy_totals_kernel(const CrossEntropyTotals* partials, int64_t count,
                                            CrossEntropyTotals* totals) {
  __shared__ double scratch[32];
  double loss = 0.0, weight = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    loss += partials[i].loss_sum;
    weight += partials[i].weight_sum;
  }
  loss = block_sum(loss, scratch);
  weight = block_sum(weight, scratch);
  if (threadIdx.x == 0) *totals = CrossEntropyTotals{loss, weight};
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

template <int Lanes>
__global__ void argmax_rows_kernel(const float* logits, int32_t* out, int64_t n, int64_t v) {
  const int64_t row = (int64_t(blockIdx.x) * kThreads + threadIdx.x) / Lanes;
  const int lane = int(threadIdx.x) % Lanes;
  if (row >= n) return;  // whole warps when Lanes = 32
  const float* lr = logits + row * v;
  float best = -FLT_MAX;
  int64_t best_j = v;  // the first index of the largest value; v when the lane saw nothing
  for (int64_t j = lane; j < v; j += Lanes)
    if (best_j == v || lr[j] > best) best = lr[j], best_j = j;
  for (int offset = Lanes / 2; offset > 0; offset >>= 1) {
    const float other = __shfl_xor_sync(kFullWarp, best, offset);
    const int64_t other_j = __shfl_xor_sync(kFullWarp, best_j, offset);
    if (other_j != v && (best_j == v || other > best || (other == best && other_j < best_j))) best = other, best_j = other_j;
  }
  if (lane == 0) out[row] = int32_t(best_j);
}

}  // namespace

int64_t cross_entropy_blocks(int64_t n, int64_t v) { return row_blocks(n, v); }

void cross_entropy_forward(const float* logits, const int32_t* targets, const float* weights, float* probs,
                           CrossEntropyTotals* partials, CrossEntropyTotals* totals, int64_t n, int64_t v,
                           cudaStream_t stream) {
  const unsigned blocks = row_blocks(n, v);
  const auto kernel = lanes_per_row(v) == 1 ? cross_entropy_forward_kernel<1> : cross_entropy_forward_kernel<32>;
  kernel<<<blocks, kThreads, 0, stream>>>(logits, targets, weights, probs, partials, n, v);
  PATHBENCH_CUDA_CHECK_LAUNCH("cross_entropy_forward_kernel");
  cross_entropy_totals_kernel<<<1, kTotalThreads, 0, stream>>>(partials, blocks, totals);
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
  const auto kernel = lanes_per_row(v) == 1 ? argmax_rows_kernel<1> : argmax_rows_kernel<32>;
  kernel<<<row_blocks(n, v), kThreads, 0, stream>>>(logits, out, n, v);
  PATHBENCH_CUDA_CHECK_LAUNCH("argmax_rows_kernel");
}

}  // namespace pathbench::cuda
