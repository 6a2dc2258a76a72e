// RoPE rotation kernel, CUDA: one thread per (row, pair); the angle, its cosine and sine in double.
#include <cmath>
#include <string>

#include "core/attention/attention_tiles.cuh"
#include "core/attention/rope_cuda.h"
#include "core/error.h"

namespace pathbench::cuda {

namespace {

template <typename S>
__global__ void rope_kernel(S* x, int64_t rows, int length, int half, double base, double sign,
                            int64_t position_offset) {
  const int64_t n = rows * half;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = idx / half;
    const int m = int(idx % half);
    const double theta = pow(base, -2.0 * double(m) / double(2 * half));
    const double angle = double(row % length + position_offset) * theta;
    double s, c;
    sincos(angle, &s, &c);
    const float cf = float(c), sf = float(sign * s);
    S* xr = x + row * (2 * half);
    const float a = tiles::to_float(xr[m]), b = tiles::to_float(xr[m + half]);
    xr[m] = tiles::from_float<S>(a * cf - b * sf);
    xr[m + half] = tiles::from_float<S>(a * sf + b * cf);
  }
}

}  // namespace

template <typename S>
void rope_rotate(S* x, int64_t batch_heads, int64_t length, int64_t head_dim, double base, bool inverse,
                 int64_t position_offset, cudaStream_t stream) {
  if (batch_heads <= 0 || length <= 0 || head_dim <= 0 || head_dim % 2 != 0)
    throw Error("rope_rotate (cuda): bad shape BH " + std::to_string(batch_heads) + " T " + std::to_string(length) +
                " D " + std::to_string(head_dim) + " (D must be even and positive)");
  const int64_t n = batch_heads * length * (head_dim / 2);
  const int64_t blocks = std::min<int64_t>((n + tiles::kThreads - 1) / tiles::kThreads, 65536);
  launch_kernel(rope_kernel<S>, dim3(unsigned(blocks)), 0, stream, "rope_kernel", x, batch_heads * length,
                int(length), int(head_dim / 2), base, inverse ? -1.0 : 1.0, position_offset);
}

template void rope_rotate<float>(float*, int64_t, int64_t, int64_t, double, bool, int64_t, cudaStream_t);
template void rope_rotate<bf16>(bf16*, int64_t, int64_t, int64_t, double, bool, int64_t, cudaStream_t);

}  // namespace pathbench::cuda
