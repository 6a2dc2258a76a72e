// Token embedding on the GPU: gather forward; backward sums each token's rows in a fixed order
// (host-built plan of rows grouped by token, per-segment partial sums, then per-token sums).
#include <algorithm>
#include <vector>

#include "core/cuda/reduce.cuh"
#include "core/cuda/storage.cuh"
#include "core/cuda/vector_access.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

namespace {

constexpr int64_t kSegmentRows = 64;
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

EmbeddingPlanLayout embedding_plan_layout(int64_t n, int64_t vocab) {
  EmbeddingPlanLayout l;
  l.rows = n;
  l.max_runs = std::min(n, vocab);
  l.max_segments = (n + kSegmentRows - 1) / kSegmentRows + l.max_runs;
  l.order = 2;
  l.segment_begin = l.order + size_t(n);
  l.run_token = l.segment_begin + size_t(l.max_segments) + 1;
  l.run_segment = l.run_token + size_t(l.max_runs);
  l.size = l.run_segment + size_t(l.max_runs) + 1;
  return l;
}

void build_embedding_plan(const int32_t* tokens, int64_t n, int64_t vocab, int32_t* plan) {
  const EmbeddingPlanLayout l = embedding_plan_layout(n, vocab);
  std::vector<int32_t> start(vocab + 1, 0);  // counting sort: start[v] = first slot of token v
  for (int64_t i = 0; i < n; ++i) ++start[tokens[i] + 1];
  for (int64_t v = 0; v < vocab; ++v) start[v + 1] += start[v];
  std::vector<int32_t> next(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < n; ++i) plan[l.order + next[tokens[i]]++] = int32_t(i);
  int32_t segments = 0, runs = 0;
  for (int64_t v = 0; v < vocab; ++v) {
    if (start[v] == start[v + 1]) continue;
    plan[l.run_token + runs] = int32_t(v);
    plan[l.run_segment + runs] = segments;
    ++runs;
    for (int32_t b = start[v]; b < start[v + 1]; b += int32_t(kSegmentRows)) plan[l.segment_begin + segments++] = b;
  }
  plan[l.segment_begin + segments] = int32_t(n);
  plan[l.run_segment + runs] = segments;
  plan[0] = segments;
  plan[1] = runs;
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
