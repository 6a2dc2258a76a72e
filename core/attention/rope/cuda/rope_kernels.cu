// RoPE rotation kernel, CUDA: blocks of positions of one slice, one or two tensors per pass, in place
// or into other buffers, a group of kVectorWidth pairs per thread where the shape and pointers allow.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/attention/cuda/tiles.cuh"
#include "core/attention/rope/cuda/rope_kernels.h"
#include "core/cuda/storage.cuh"
#include "core/cuda/vector_access.h"
#include "core/error.h"

namespace pathbench::cuda {

namespace {

constexpr int kRopePositions = 64;  // positions of one slice per block

// One or two tensors of one shape rotated by the same angles: x[i] → out[i] (out[i] = x[i]: in place).
template <typename S>
struct RopeTensors {
  const S* x[2];
  S* out[2];
  int count;
};

// One block per kRopePositions positions of one [T, D] slice; thread (r, g) = (tid / groups, tid %
// groups) rotates pairs m = g·V … g·V + V − 1 of positions r, r + rows, … (rows = blockDim / groups, so
// no index is divided per element), with V = kVectorWidth one vector access per half-row and tensor
// (rope_vectorizable), with V = 1 one element. θ_m in double per block (shared), then per element:
// the angle in double, reduced to [−π, π] in double, its sine and cosine in float (accurate to a few
// ulp, like the CPU's double values rounded), applied to every tensor of the job. The tensors are
// taken in an unrolled loop, so the job's pointers are read with constant indices (no stack copy).
template <int V, typename S>
__global__ void rope_kernel(RopeTensors<S> job, int length, int half, double base, float sign,
                            int64_t position_offset) {
  __shared__ double theta[64];
  for (int m = int(threadIdx.x); m < half; m += blockDim.x) theta[m] = pow(base, -2.0 * double(m) / double(2 * half));
  __syncthreads();
  constexpr double kTwoPi = 6.283185307179586;
  const int position_blocks = (length + kRopePositions - 1) / kRopePositions, groups = half / V;
  const int64_t slice = blockIdx.x / position_blocks;
  const int first = int(blockIdx.x % position_blocks) * kRopePositions;
  const int end = min(length, first + kRopePositions), rows = int(blockDim.x) / groups;
  const int m0 = V * (int(threadIdx.x) % groups), r = int(threadIdx.x) / groups;
  if (r >= rows) return;  // threads past the last whole row of groups (when groups do not divide blockDim)
  for (int t = first + r; t < end; t += rows) {
    float c[V], s[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const double angle = double(t + position_offset) * theta[m0 + v];
      sincosf(float(fma(-rint(angle / kTwoPi), kTwoPi, angle)), &s[v], &c[v]);
      s[v] *= sign;
    }
    const int64_t row = (slice * length + t) * (2 * half) + m0;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if (i == job.count) break;
      float a[V], b[V];
      load_floats<V>(job.x[i] + row, a);
      load_floats<V>(job.x[i] + row + half, b);
      float ya[V], yb[V];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        ya[v] = a[v] * c[v] - b[v] * s[v];
        yb[v] = a[v] * s[v] + b[v] * c[v];
      }
      store_floats<V>(job.out[i] + row, ya);
      store_floats<V>(job.out[i] + row + half, yb);
    }
  }
}

template <typename S>
void rope_launch(const RopeTensors<S>& job, int64_t batch_heads, int64_t length, int64_t head_dim, double base,
                 bool inverse, int64_t position_offset, cudaStream_t stream) {
  if (batch_heads <= 0 || length <= 0 || head_dim <= 0 || head_dim % 2 != 0 || head_dim > 128)
    throw Error("rope_rotate (cuda): bad shape BH " + std::to_string(batch_heads) + " T " + std::to_string(length) +
                " D " + std::to_string(head_dim) + " (D must be even, at most 128)");
  const int64_t blocks = batch_heads * ((length + kRopePositions - 1) / kRopePositions);
  if (length > INT32_MAX - kRopePositions || blocks > INT32_MAX)
    throw Error("rope_rotate (cuda): BH " + std::to_string(batch_heads) + " T " + std::to_string(length) +
                " is too large for one launch");
  const auto kernel = rope_vectorizable(head_dim, job.x[0], job.out[0], job.x[1], job.out[1])
                          ? rope_kernel<kVectorWidth, S>
                          : rope_kernel<1, S>;
  launch_kernel(kernel, dim3(unsigned(blocks)), 0, stream, "rope_kernel", job, int(length), int(head_dim / 2), base,
                inverse ? -1.f : 1.f, position_offset);
}

}  // namespace

template <typename S>
void rope_rotate_copy(const S* x, S* out, int64_t batch_heads, int64_t length, int64_t head_dim, double base,
                      bool inverse, int64_t position_offset, cudaStream_t stream) {
  rope_launch<S>({{x, nullptr}, {out, nullptr}, 1}, batch_heads, length, head_dim, base, inverse, position_offset,
                 stream);
}

template <typename S>
void rope_rotate_copy_pair(const S* a, S* a_out, const S* b, S* b_out, int64_t batch_heads, int64_t length,
                           int64_t head_dim, double base, bool inverse, int64_t position_offset, cudaStream_t stream) {
  rope_launch<S>({{a, b}, {a_out, b_out}, 2}, batch_heads, length, head_dim, base, inverse, position_offset, stream);
}

template <typename S>
void rope_rotate(S* x, int64_t batch_heads, int64_t length, int64_t head_dim, double base, bool inverse,
                 int64_t position_offset, cudaStream_t stream) {
  rope_rotate_copy<S>(x, x, batch_heads, length, head_dim, base, inverse, position_offset, stream);
}

template void rope_rotate<float>(float*, int64_t, int64_t, int64_t, double, bool, int64_t, cudaStream_t);
template void rope_rotate<bf16>(bf16*, int64_t, int64_t, int64_t, double, bool, int64_t, cudaStream_t);
template void rope_rotate_copy<float>(const float*, float*, int64_t, int64_t, int64_t, double, bool, int64_t,
                                      cudaStream_t);
template void rope_rotate_copy<bf16>(const bf16*, bf16*, int64_t, int64_t, int64_t, double, bool, int64_t,
                                     cudaStream_t);
template void rope_rotate_copy_pair<float>(const float*, float*, const float*, float*, int64_t, int64_t, int64_t,
                                           double, bool, int64_t, cudaStream_t);
template void rope_rotate_copy_pair<bf16>(const bf16*, bf16*, const bf16*, bf16*, int64_t, int64_t, int64_t, double,
                                          bool, int64_t, cudaStream_t);

}  // namespace pathbench::cuda
