// RoPE rotation kernel, CUDA: blocks of positions of one slice, one or two tensors per pass, in place
// or into other buffers.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/attention/cuda/tiles.cuh"
#include "core/attention/rope/cuda/rope_kernels.h"
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

// One block per kRopePositions positions of one [T, D] slice; thread (r, m) = (tid / half, tid % half)
// rotates pair m of positions r, r + 128 / half, … (so no index is divided per element). θ_m in
// double per block (shared), then per element: the angle in double, reduced to [−π, π] in double, its
// sine and cosine in float (accurate to a few ulp, like the CPU's double values rounded), applied to
// every tensor of the job.
template <typename S>
__global__ void rope_kernel(RopeTensors<S> job, int length, int half, double base, float sign,
                            int64_t position_offset) {
  __shared__ double theta[64];
  for (int m = int(threadIdx.x); m < half; m += blockDim.x) theta[m] = pow(base, -2.0 * double(m) / double(2 * half));
  __syncthreads();
  constexpr double kTwoPi = 6.283185307179586;
  const int position_blocks = (length + kRopePositions - 1) / kRopePositions;
  const int64_t slice = blockIdx.x / position_blocks;
  const int first = int(blockIdx.x % position_blocks) * kRopePositions;
  const int end = min(length, first + kRopePositions), stride = int(blockDim.x) / half;
  const int m = int(threadIdx.x) % half, r = int(threadIdx.x) / half;
  if (r >= stride) return;  // threads past the last whole row of pairs (when half does not divide blockDim)
  for (int t = first + r; t < end; t += stride) {
    const double angle = double(t + position_offset) * theta[m];
    float sf, cf;
    sincosf(float(fma(-rint(angle / kTwoPi), kTwoPi, angle)), &sf, &cf);
    sf *= sign;
    const int64_t row = slice * length + t;
    for (int i = 0; i < job.count; ++i) {
      const S* xr = job.x[i] + row * (2 * half);
      const float a = tiles::to_float(xr[m]), b = tiles::to_float(xr[m + half]);
      S* yr = job.out[i] + row * (2 * half);
      yr[m] = tiles::from_float<S>(a * cf - b * sf);
      yr[m + half] = tiles::from_float<S>(a * sf + b * cf);
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
  launch_kernel(rope_kernel<S>, dim3(unsigned(blocks)), 0, stream, "rope_kernel", job, int(length),
                int(head_dim / 2), base, inverse ? -1.f : 1.f, position_offset);
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
