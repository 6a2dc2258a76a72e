// Token embedding on the GPU: gather forward; backward sums each token's rows in a fixed order
// (host-built plan of rows grouped by token, per-segment partial sums, then per-token sums).
#include <algorithm>

#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/cuda/vector_access.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

namespace {

constexpr int kColumnsPerBlock = 128;

// V consecutive elements of one row per thread (C a multiple of V where V > 1).
template <int V>
__global__ void embedding_forward_kernel(const int32_t* tokens, const float* table, float* out, int64_t n, int64_t c) {
  const int64_t i = V * (int64_t(blockIdx.x) * blockDim.x + threadIdx.x);
  if (i >= n * c) return;
  const int64_t row = i / c, col = i - row * c;
  float x[V];
  load_floats(table + int64_t(tokens[row]) * c + col, x);
  store_floats(out + i, x);
}

// Block (segment, column chunk): partial[segment, col] = Σ of dout over the segment's rows, in order.
__global__ void embedding_segment_sums_kernel(const int32_t* plan, EmbeddingPlanLayout layout, const float* dout,
                                              float* partial, int64_t c) {
  const int64_t segment = blockIdx.x, col = int64_t(blockIdx.y) * kColumnsPerBlock + threadIdx.x;
  if (segment >= plan[0] || col >= c) return;
  const int32_t* order = plan + layout.order;
  const int32_t begin = plan[layout.segment_begin + segment], end = plan[layout.segment_begin + segment + 1];
  float acc = 0.0f;
  for (int32_t i = begin; i < end; ++i) acc += dout[int64_t(order[i]) * c + col];
  partial[segment * c + col] = acc;
}

// Block (run, column chunk): dtable[token, col] += Σ of the run's segment sums, in order.
__global__ void embedding_run_sums_kernel(const int32_t* plan, EmbeddingPlanLayout layout, const float* partial,
                                          float* dtable, int64_t c) {
  const int64_t run = blockIdx.x, col = int64_t(blockIdx.y) * kColumnsPerBlock + threadIdx.x;
  if (run >= plan[1] || col >= c) return;
  const int32_t first = plan[layout.run_segment + run], last = plan[layout.run_segment + run + 1];
  float acc = 0.0f;
  for (int32_t s = first; s < last; ++s) acc += partial[int64_t(s) * c + col];
  dtable[int64_t(plan[layout.run_token + run]) * c + col] += acc;
}

}  // namespace

void embedding_forward(const int32_t* tokens, const float* table, float* out, int64_t n, int64_t c,
                       cudaStream_t stream) {
  // kVectorWidth elements per thread where rows hold whole groups and both arrays are vector-aligned
  const bool vector = rows_vectorizable(c, table, out);
  const auto kernel = vector ? embedding_forward_kernel<kVectorWidth> : embedding_forward_kernel<1>;
  kernel<<<blocks_for(n * c / (vector ? kVectorWidth : 1)), 256, 0, stream>>>(tokens, table, out, n, c);
  PATHBENCH_CUDA_CHECK_LAUNCH("embedding_forward_kernel");
}

void embedding_backward(const int32_t* plan, const float* dout, float* dtable, float* partial, int64_t n,
                        int64_t vocab, int64_t c, cudaStream_t stream) {
  const EmbeddingPlanLayout l = embedding_plan_layout(n, vocab);
  const unsigned col_blocks = unsigned((c + kColumnsPerBlock - 1) / kColumnsPerBlock);
  embedding_segment_sums_kernel<<<dim3(unsigned(l.max_segments), col_blocks), kColumnsPerBlock, 0, stream>>>(
      plan, l, dout, partial, c);
  PATHBENCH_CUDA_CHECK_LAUNCH("embedding_segment_sums_kernel");
  embedding_run_sums_kernel<<<dim3(unsigned(std::max<int64_t>(1, l.max_runs)), col_blocks), kColumnsPerBlock, 0,
                              stream>>>(plan, l, partial, dtable, c);
  PATHBENCH_CUDA_CHECK_LAUNCH("embedding_run_sums_kernel");
}

}  // namespace pathbench::cuda
