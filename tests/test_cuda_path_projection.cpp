// PaTH's convolution backward on the GPU (path_conv_backward: the input gradient dy and the kernel
// gradient dconv in one pass over rows) against a float64 brute force, at row counts where each of
// its threads walks one row, several rows, and rows of two sequences, and channel counts that do and
// do not fill its 32-channel blocks. And the fused bf16 projection (projection_fused.h: w and β
// forward, dx and the five parameter gradients backward) against the CPU PathProjection<double> on
// the same bf16-rounded inputs, at lengths that end mid-tile, with and without β's clip, reading x
// from its bf16 copy or converting it, for several backward block counts (each run twice: the same
// bits). Run with `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/attention/path/cuda/projection_fused.h"
#include "core/attention/path/cuda/projection_kernels.h"
#include "core/attention/path/path_projection.h"
#include "core/cuda/context.h"
#include "core/ops/cuda/ops.h"
#include "core/options.h"
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

// One shape of the fused projection test (rows N = batch·length).
struct FusedProjectionShape {
  int64_t batch, length, width, heads, head_dim, rank;
  double beta_clip_eps;
  bool x_from_bf16_copy;  // the kernels read x16 (else they convert x to bf16 themselves)
};

// The projection's five parameters (after the prefix), in the order PathProjection declares them.
const char* const kProjectionParameters[] = {"path_w_down", "path_w_up", "path_w_conv", "path_beta_weight",
                                             "path_beta_bias"};

template <typename T>
std::vector<T> entry_slice(const std::vector<T>& flat, const ParameterEntry& e) {
  return std::vector<T>(flat.begin() + e.offset, flat.begin() + e.offset + e.size);
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Declares the projection's parameters (prefix "l.") into a float64 set, returning the CPU projection
// that reads them, and into a float set of the same layout (that of the GPU's flat buffers), and
// fills both with the same seeded values: the weights the kernels read as bf16 shadows (w_down, w_up,
// β weight) rounded to bf16, the convolution and β bias fp32. The gradients start at the same seeded
// values g0 in both sets (zero in the alignment gaps), so the test sees the backward add into them.
std::unique_ptr<PathProjection<double>> make_fused_test_projection(const FusedProjectionShape& sh,
                                                                   ParameterSet<double>& cpu_params,
                                                                   ParameterSet<float>& float_params,
                                                                   uint64_t seed) {
  const json options = resolve_options(path_projection_options(),
                                       {{"rank", sh.rank}, {"beta_clip_eps", sh.beta_clip_eps}}, "test");
  AttentionDims dims;
  dims.heads = sh.heads;
  dims.head_dim = sh.head_dim;
  dims.width = sh.width;
  auto cpu = std::make_unique<PathProjection<double>>(EncodingSetup<double>{options, dims, "l.", &cpu_params, 0.02});
  PathProjection<float> float_layout(EncodingSetup<float>{options, dims, "l.", &float_params, 0.02});
  REQUIRE(cpu_params.count() == float_params.count());
  std::fill(float_params.values().begin(), float_params.values().end(), 0.0f);
  std::fill(float_params.grads().begin(), float_params.grads().end(), 0.0f);
  for (const char* name : kProjectionParameters) {
    const ParameterEntry& e = float_params.entry(float_params.find(std::string("l.") + name));
    const std::string n = name;
    const bool bf16_shadow = n == "path_w_down" || n == "path_w_up" || n == "path_beta_weight";
    const double scale = bf16_shadow ? 0.3 : 0.5;  // β bias ±0.5: β spread around 1, some clipped
    std::vector<float> v = randn(e.size, ++seed, scale);
    if (bf16_shadow) v = bf16_rounded(v);
    std::copy(v.begin(), v.end(), float_params.values().begin() + e.offset);
    const std::vector<float> g0 = randn(e.size, ++seed);
    std::copy(g0.begin(), g0.end(), float_params.grads().begin() + e.offset);
  }
  for (size_t i = 0; i < float_params.count(); ++i) {
    cpu_params.values()[i] = float_params.values()[i];
    cpu_params.grads()[i] = float_params.grads()[i];
  }
  return cpu;
}

TEST_CASE("GPU fused PaTH projection matches the CPU projection", "[cuda][sanitize]") {
  cuda::Context ctx(Precision::bf16);
  cudaStream_t s = ctx.stream();
  // Lengths that are no multiple of the kernels' row tiles; β unclipped and clipped at 2 − 0.99 and
  // 2 − 0.5; ranks 16 to 64, head dims 16 to 128.
  const FusedProjectionShape shapes[] = {{2, 45, 32, 2, 16, 16, 0.0, true},
                                         {3, 130, 128, 2, 64, 32, 0.99, true},
                                         {1, 390, 64, 4, 32, 48, 0.0, false},
                                         {2, 100, 64, 1, 128, 64, 0.5, true}};
  uint64_t seed = 70;
  for (const auto& sh : shapes) {
    INFO("batch " << sh.batch << ", length " << sh.length << ", width " << sh.width << ", heads " << sh.heads
                  << ", head_dim " << sh.head_dim << ", rank " << sh.rank << ", beta_clip_eps " << sh.beta_clip_eps
                  << (sh.x_from_bf16_copy ? ", x from x16" : ", x converted"));
    const int64_t rows = sh.batch * sh.length, n_w = rows * sh.heads * sh.head_dim, n_beta = rows * sh.heads;
    ParameterSet<double> cpu_params;
    ParameterSet<float> float_params;
    auto cpu = make_fused_test_projection(sh, cpu_params, float_params, seed += 20);
    const std::vector<double> g0 = to_double(float_params.grads());
    // Inputs as the kernels see them: x and dw in bf16, dβ and dx fp32.
    const auto x = bf16_rounded(randn(size_t(rows * sh.width), ++seed));
    const auto dw = bf16_rounded(randn(size_t(n_w), ++seed));
    const auto dbeta = randn(size_t(n_beta), ++seed);
    const auto dx0 = randn(size_t(rows * sh.width), ++seed);

    // The CPU reference in float64: w, β, and the increments of dx and of each parameter gradient.
    AttentionDims dims;
    dims.batch = sh.batch;
    dims.length = sh.length;
    dims.heads = sh.heads;
    dims.head_dim = sh.head_dim;
    dims.width = sh.width;
    const std::vector<double> x_d = to_double(x), dw_d = to_double(dw), dbeta_d = to_double(dbeta);
    std::vector<double> dx_cpu = to_double(dx0);
    cpu->forward(cpu_params, x_d.data(), dims);
    const std::vector<double> w_ref(cpu->w(), cpu->w() + n_w), beta_ref(cpu->beta(), cpu->beta() + n_beta);
    cpu->backward(cpu_params, x_d.data(), dims, dw_d.data(), dbeta_d.data(), dx_cpu.data());
    std::vector<double> dx_ref(dx_cpu.size());
    for (size_t i = 0; i < dx_ref.size(); ++i) dx_ref[i] = dx_cpu[i] - double(dx0[i]);

    // The gradient layout the kernels use, checked against the parameter set's own offsets.
    const cuda::ProjectionGradLayout layout = cuda::projection_grad_layout(float_params, "l.");
    const auto offset_of = [&](const char* name) {
      return int64_t(float_params.entry(float_params.find(std::string("l.") + name)).offset);
    };
    const int64_t base = offset_of("path_w_down");
    REQUIRE(layout.up == offset_of("path_w_up") - base);
    REQUIRE(layout.conv == offset_of("path_w_conv") - base);
    REQUIRE(layout.beta_weight == offset_of("path_beta_weight") - base);
    REQUIRE(layout.beta_bias == offset_of("path_beta_bias") - base);
    REQUIRE(layout.span >= layout.beta_bias + sh.heads);
    REQUIRE(base + layout.span <= int64_t(float_params.count()));
    REQUIRE(cuda::fused_projection_supported(sh.width, sh.rank, sh.heads, sh.head_dim, layout));
    // The gradient buffer's start values (g0 at each parameter's place, zeros between) and which of
    // its elements are alignment gaps.
    const std::vector<float> grad0(float_params.grads().begin() + base,
                                   float_params.grads().begin() + base + layout.span);
    std::vector<bool> gap(size_t(layout.span), true);
    for (const char* name : kProjectionParameters) {
      const ParameterEntry& e = float_params.entry(float_params.find(std::string("l.") + name));
      std::fill(gap.begin() + (int64_t(e.offset) - base), gap.begin() + (int64_t(e.offset + e.size) - base), false);
    }

    // Device inputs: x in fp32 and as its bf16 copy, the bf16 weight shadows (exact: the values are
    // bf16-rounded), conv and β bias fp32.
    const auto values = [&](const char* name) {
      return entry_slice(float_params.values(), float_params.entry(float_params.find(std::string("l.") + name)));
    };
    auto xd = to_device(x, s);
    auto x16 = to_device_as<cuda::bf16>(x, s);
    auto w_down = to_device_as<cuda::bf16>(values("path_w_down"), s);
    auto w_up = to_device_as<cuda::bf16>(values("path_w_up"), s);
    auto beta_weight = to_device_as<cuda::bf16>(values("path_beta_weight"), s);
    auto conv = to_device(values("path_w_conv"), s), beta_bias = to_device(values("path_beta_bias"), s);
    auto dw16 = to_device_as<cuda::bf16>(dw, s);
    auto dbetad = to_device(dbeta, s);
    cuda::FusedProjectionArgs args;
    args.x = xd.data();
    args.x16 = sh.x_from_bf16_copy ? x16.data() : nullptr;
    args.w_down = w_down.data();
    args.w_up = w_up.data();
    args.beta_weight = beta_weight.data();
    args.conv = conv.data();
    args.beta_bias = beta_bias.data();
    args.batch = sh.batch;
    args.length = sh.length;
    args.width = sh.width;
    args.heads = sh.heads;
    args.head_dim = sh.head_dim;
    args.rank = sh.rank;
    args.beta_clip_eps = sh.beta_clip_eps;

    // Forward into NaN-poisoned outputs. w: bf16 products and a bf16 result, within the bf16
    // tolerance. β: its pre-activation's products are exact in fp32 (bf16 operands, the CPU's
    // rounded inputs), so only the fp32 summation order differs: 1e-4.
    auto w16 = poisoned_as<cuda::bf16>(size_t(n_w), s);
    auto beta = poisoned(size_t(n_beta), s);
    cuda::fused_projection_forward(args, w16.data(), beta.data(), s);
    ctx.synchronize();
    CHECK(relative_error(to_host_float(w16, size_t(n_w), s), w_ref) <= product_tolerance(Precision::bf16));
    CHECK(relative_error(to_host(beta, size_t(n_beta), s), beta_ref) <= 1e-4);

    // Backward from dx = dx0 and the gradients at g0, through a NaN-poisoned partial-sums buffer of
    // `blocks` rows: returns the gradient buffer and dx afterwards.
    struct BackwardResult {
      std::vector<float> grads, dx;
    };
    const auto run_backward = [&](int blocks) {
      auto grads = to_device(grad0, s);
      auto dx = to_device(dx0, s);
      auto partial = poisoned(size_t(blocks) * size_t(layout.span), s);
      cuda::fused_projection_backward(args, dw16.data(), dbetad.data(), dx.data(), layout, grads.data(),
                                      partial.data(), blocks, s);
      ctx.synchronize();
      return BackwardResult{to_host(grads, size_t(layout.span), s), to_host(dx, dx0.size(), s)};
    };
    const int resident = cuda::fused_projection_backward_blocks(args, layout);
    REQUIRE(resident >= 1);
    for (const int blocks : {1, 3, resident}) {
      INFO("blocks " << blocks << " (resident " << resident << ")");
      const BackwardResult got = run_backward(blocks);
      // What the backward added, against the CPU's increments: dx, and each parameter gradient on its
      // own (a total with g0 in it would hide a small gradient's errors), within the bf16 tolerance.
      std::vector<double> dx_added(got.dx.size());
      for (size_t i = 0; i < dx_added.size(); ++i) dx_added[i] = double(got.dx[i]) - double(dx0[i]);
      CHECK(relative_error(dx_added, dx_ref) <= product_tolerance(Precision::bf16));
      for (const char* name : kProjectionParameters) {
        INFO(name);
        const ParameterEntry& e = float_params.entry(float_params.find(std::string("l.") + name));
        std::vector<double> added(e.size), want(e.size);
        for (size_t i = 0; i < e.size; ++i) {
          added[i] = double(got.grads[e.offset - base + i]) - g0[e.offset + i];
          want[i] = cpu_params.grads()[e.offset + i] - g0[e.offset + i];
        }
        CHECK(relative_error(added, want) <= product_tolerance(Precision::bf16));
      }
      // The alignment gaps between the parameters stay exactly zero.
      int64_t gaps_written = 0;
      for (int64_t i = 0; i < layout.span; ++i) gaps_written += gap[size_t(i)] && got.grads[size_t(i)] != 0.0f;
      CHECK(gaps_written == 0);
      // Deterministic: the same blocks give the same bits.
      const BackwardResult again = run_backward(blocks);
      CHECK(bit_identical(again.grads, got.grads));
      CHECK(bit_identical(again.dx, got.dx));
    }
  }
}

}  // namespace
}  // namespace pathbench

#endif  // PATHBENCH_WITH_CUDA
