// PaTH's convolution backward on the GPU (path_conv_backward: the input gradient dy and the kernel
// gradient dconv in one pass over rows) against a float64 brute force, at row counts where each of
// its threads walks one row, several rows, and rows of two sequences, and channel counts that do and
// do not fill its 32-channel blocks. Run with `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>

#include <vector>

#include "core/attention/path/cuda/projection_kernels.h"
#include "core/attention/path/path_projection.h"
#include "core/cuda/context.h"
#include "core/ops/cuda/ops.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using namespace cuda_testing;

// z[b, t, ch] = Σ_k conv[ch, k] · y[b, t − 2 + k, ch] (positions inside the sequence): dy = ∂/∂y of
// Σ dz ⊙ z, and dconv (added to) = ∂/∂conv of the same.
void conv_backward_reference(const std::vector<double>& y, const std::vector<double>& conv,
                             const std::vector<double>& dz, std::vector<double>& dy, std::vector<double>& dconv,
                             int64_t batch, int64_t length, int64_t channels) {
  constexpr int64_t kw = kPathConvWidth;
  std::fill(dy.begin(), dy.end(), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t)
      for (int64_t k = 0; k < kw; ++k) {
        const int64_t src = t - (kw - 1) + k;
        if (src < 0) continue;
        for (int64_t ch = 0; ch < channels; ++ch) {
          const double g = dz[(b * length + t) * channels + ch];
          dy[(b * length + src) * channels + ch] += conv[ch * kw + k] * g;
          dconv[ch * kw + k] += y[(b * length + src) * channels + ch] * g;
        }
      }
}

TEST_CASE("GPU PaTH convolution backward matches a float64 brute force", "[cuda][sanitize]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  // {batch, length, channels}: 90 rows (one row a thread or none), 1,350 (two rows a thread, some
  // across a sequence's end), 3,000 (three), 5 rows of 7 channels.
  const int64_t shapes[][3] = {{2, 45, 40}, {30, 45, 40}, {3, 1000, 96}, {1, 5, 7}};
  uint64_t seed = 40;
  for (const auto& shape : shapes) {
    const int64_t batch = shape[0], length = shape[1], channels = shape[2], n = batch * length * channels;
    const int64_t nk = channels * kPathConvWidth;
    const auto y = randn(n, ++seed), conv = randn(nk, ++seed, 0.5), dz = randn(n, ++seed), dconv0 = randn(nk, ++seed);
    std::vector<double> dy_ref(n), dconv_ref = to_double(dconv0);
    conv_backward_reference(to_double(y), to_double(conv), to_double(dz), dy_ref, dconv_ref, batch, length, channels);

    auto yd = to_device(y, s), convd = to_device(conv, s), dzd = to_device(dz, s), dconvd = to_device(dconv0, s);
    auto dy = poisoned(n, s), scratch = poisoned(cuda::kColumnScratchPerColumn * nk, s);
    auto dy16 = poisoned_as<cuda::bf16>(size_t(n), s);
    cuda::path_conv_backward(yd.data(), convd.data(), dzd.data(), dy.data(), dy16.data(), dconvd.data(),
                             scratch.data(), batch, length, channels, s);
    INFO("batch " << batch << ", length " << length << ", channels " << channels);
    const std::vector<float> dy_host = to_host(dy, n, s);
    CHECK(relative_error(dy_host, dy_ref) <= kFp32Tolerance);
    CHECK(relative_error(to_host(dconvd, nk, s), dconv_ref) <= kFp32Tolerance);
    CHECK(to_host_float(dy16, size_t(n), s) == bf16_rounded(dy_host));
  }
}

}  // namespace
}  // namespace pathbench

#endif  // PATHBENCH_WITH_CUDA
