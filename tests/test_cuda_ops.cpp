// GPU ops against their CPU implementations (float64 references on the same float inputs, outputs
// poisoned with NaN before each run): RMSNorm, embedding, activations, masked cross-entropy and
// argmax, linear products at each precision, head split and merge, the fp32 → bf16 conversion, and
// the extra outputs of the norm, activation and cross-entropy kernels (residual copy, bf16 copies).
// Run with `pathbench_tests --require-gpu "[cuda]"`.
#ifdef PATHBENCH_WITH_CUDA
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/attention/cuda/kernel_common.h"
#include "core/cuda/context.h"
#include "core/cuda/convert.h"
#include "core/cuda/vector_access.h"
#include "core/ops/activations.h"
#include "core/ops/cross_entropy.h"
#include "core/ops/cuda/head_layout.h"
#include "core/ops/cuda/linear.h"
#include "core/ops/cuda/ops.h"
#include "core/ops/embedding.h"
#include "core/ops/head_layout.h"
#include "core/ops/linear.h"
#include "core/ops/rmsnorm.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace pathbench {
namespace {

using namespace cuda_testing;

TEST_CASE("GPU RMSNorm forward and backward match the CPU", "[cuda][sanitize]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  // C a multiple of 4: four columns per vector access; 130: one at a time. The backward sums the gain
  // gradient in its own pass (40,000 rows of 128: five per warp of its 1,024 blocks; 1,536 columns: the
  // most shared memory it takes) except for wide rows (1,540, 2,000 and 13,000 columns: a separate
  // column-sum pass).
  const std::pair<int64_t, int64_t> shapes[] = {{37, 96},   {300, 128}, {5, 1000}, {9, 130},  {40000, 128},
                                                {11, 1536}, {11, 1540}, {7, 2000}, {3, 13000}};
  uint64_t seed = 10;
  for (auto [n, c] : shapes) {
    const auto x = randn(n * c, ++seed), g = randn(c, ++seed, 0.2, 1.0), dy = randn(n * c, ++seed);
    const auto dx0 = randn(n * c, ++seed), dg0 = randn(c, ++seed);
    std::vector<double> y_ref(n * c), rstd_ref(n), dx_ref = to_double(dx0), dg_ref = to_double(dg0);
    rmsnorm_forward(to_double(x).data(), to_double(g).data(), y_ref.data(), rstd_ref.data(), n, c, 1e-5);
    rmsnorm_backward(to_double(x).data(), to_double(g).data(), rstd_ref.data(), to_double(dy).data(), dx_ref.data(),
                     dg_ref.data(), n, c);

    auto xd = to_device(x, s), gd = to_device(g, s), dyd = to_device(dy, s), dxd = to_device(dx0, s),
         dgd = to_device(dg0, s);
    auto y = poisoned(n * c, s), rstd = poisoned(n, s), scratch = poisoned(cuda::kColumnScratchPerColumn * c, s);
    cuda::rmsnorm_forward(xd.data(), gd.data(), y.data(), rstd.data(), n, c, 1e-5f, s);
    cuda::rmsnorm_backward(xd.data(), gd.data(), rstd.data(), dyd.data(), dxd.data(), dgd.data(), scratch.data(), n,
                           c, s);
    INFO("n " << n << ", c " << c);
    CHECK(relative_error(to_host(y, n * c, s), y_ref) <= kFp32Tolerance);
    CHECK(relative_error(to_host(rstd, n, s), rstd_ref) <= kFp32Tolerance);
    CHECK(relative_error(to_host(dxd, n * c, s), dx_ref) <= kFp32Tolerance);
    CHECK(relative_error(to_host(dgd, c, s), dg_ref) <= kFp32Tolerance);

    // The same pass with the residual copy and the bf16 operand: y unchanged, the copy exact, the
    // bf16 values rounded as the host rounds y.
    auto y2 = poisoned(n * c, s), rstd2 = poisoned(n, s), copy = poisoned(n * c, s);
    auto y16 = poisoned_as<cuda::bf16>(size_t(n * c), s);
    cuda::rmsnorm_forward(xd.data(), gd.data(), y2.data(), rstd2.data(), n, c, 1e-5f, s, copy.data(), y16.data());
    const std::vector<float> y_plain = to_host(y, n * c, s);
    CHECK(to_host(y2, n * c, s) == y_plain);
    CHECK(to_host(rstd2, n, s) == to_host(rstd, n, s));
    CHECK(to_host(copy, n * c, s) == x);
    CHECK(to_host_float(y16, size_t(n * c), s) == bf16_rounded(y_plain));
    // bf16 only (y null), as the norms before bf16-only products run
    auto y16_only = poisoned_as<cuda::bf16>(size_t(n * c), s);
    cuda::rmsnorm_forward(xd.data(), gd.data(), nullptr, rstd2.data(), n, c, 1e-5f, s, nullptr, y16_only.data());
    CHECK(to_host_float(y16_only, size_t(n * c), s) == bf16_rounded(y_plain));
    // an output one float past an aligned start takes the scalar path: y as the CPU's
    auto y_shifted = poisoned(n * c + 1, s);
    cuda::rmsnorm_forward(xd.data(), gd.data(), y_shifted.data() + 1, rstd2.data(), n, c, 1e-5f, s);
    const std::vector<float> shifted_host = to_host(y_shifted, n * c + 1, s);
    CHECK(relative_error(std::vector<float>(shifted_host.begin() + 1, shifted_host.end()), y_ref) <= kFp32Tolerance);

    // The backward with the bf16 copy of the updated dx: dx as in the plain call, the copy rounded.
    auto dx2 = to_device(dx0, s), dg2 = to_device(dg0, s);
    auto dx16 = poisoned_as<cuda::bf16>(size_t(n * c), s);
    cuda::rmsnorm_backward(xd.data(), gd.data(), rstd.data(), dyd.data(), dx2.data(), dg2.data(), scratch.data(), n,
                           c, s, dx16.data());
    const std::vector<float> dx_plain = to_host(dxd, n * c, s);
    CHECK(to_host(dx2, n * c, s) == dx_plain);
    CHECK(to_host(dg2, c, s) == to_host(dgd, c, s));  // the gain's sums in the same fixed order
    CHECK(to_host_float(dx16, size_t(n * c), s) == bf16_rounded(dx_plain));
  }
}

TEST_CASE("GPU embedding forward and backward match the CPU", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const int64_t shapes[][3] = {{1000, 7, 64}, {200, 300, 48}, {33, 1, 130}, {4096, 5, 128}};  // n, vocab, c
  uint64_t seed = 20;
  for (const auto& shape : shapes) {
    const int64_t n = shape[0], v = shape[1], c = shape[2];
    const auto tokens = random_tokens(n, v, ++seed);
    const auto table = randn(v * c, ++seed), dout = randn(n * c, ++seed), dtable0 = randn(v * c, ++seed);
    std::vector<double> out_ref(n * c), dtable_ref = to_double(dtable0);
    embedding_forward(tokens.data(), to_double(table).data(), out_ref.data(), n, c);
    embedding_backward(tokens.data(), to_double(dout).data(), dtable_ref.data(), n, c);

    const EmbeddingPlanLayout layout = embedding_plan_layout(n, v);
    std::vector<int32_t> plan(layout.size);
    build_embedding_plan(tokens.data(), n, v, plan.data());
    auto tokd = to_device(tokens, s), pland = to_device(plan, s);
    auto tabled = to_device(table, s), doutd = to_device(dout, s), dtabled = to_device(dtable0, s);
    auto out = poisoned(n * c, s), partial = poisoned(layout.max_segments * c, s);
    cuda::embedding_forward(tokd.data(), tabled.data(), out.data(), n, c, s);
    cuda::embedding_backward(pland.data(), doutd.data(), dtabled.data(), partial.data(), n, v, c, s);
    INFO("n " << n << ", vocab " << v << ", c " << c);
    CHECK(relative_error(to_host(out, n * c, s), out_ref) == 0.0);
    // an output one float past an aligned start: the gather moves one element at a time there
    auto shifted = poisoned(n * c + 1, s);
    cuda::embedding_forward(tokd.data(), tabled.data(), shifted.data() + 1, n, c, s);
    const std::vector<float> shifted_host = to_host(shifted, n * c + 1, s);
    CHECK(relative_error(std::vector<float>(shifted_host.begin() + 1, shifted_host.end()), out_ref) == 0.0);
    CHECK(relative_error(to_host(dtabled, v * c, s), dtable_ref) <= kFp32Tolerance);
  }
}

TEST_CASE("GPU SwiGLU matches the CPU", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const int64_t n = 37 * 269;
  const auto a = randn(n, 31, 2.0), b = randn(n, 32), dh = randn(n, 33);
  const auto ad = to_double(a), bd = to_double(b), dhd = to_double(dh);
  auto dh_d = to_device(dh, s);
  std::vector<double> h_ref(n), da_ref(n), db_ref(n);
  swiglu_forward(ad.data(), bd.data(), h_ref.data(), n);
  swiglu_backward(ad.data(), bd.data(), dhd.data(), da_ref.data(), db_ref.data(), n);
  // As the MLP lays them out: rows × cols values, a and b the two halves of each row of one
  // [rows, 2·cols] matrix (cols = 269 spans two blocks of threads), gradients in the same layout.
  const int64_t rows = 37, cols = n / rows;
  REQUIRE(rows * cols == n);
  std::vector<float> ab(2 * n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      ab[r * 2 * cols + j] = a[r * cols + j];
      ab[r * 2 * cols + cols + j] = b[r * cols + j];
    }
  auto ab_d = to_device(ab, s);
  auto h = poisoned(n, s), dab = poisoned(2 * n, s);
  cuda::swiglu_forward(ab_d.data(), ab_d.data() + cols, 2 * cols, h.data(), rows, cols, s);
  cuda::swiglu_backward(ab_d.data(), ab_d.data() + cols, 2 * cols, dh_d.data(), dab.data(), dab.data() + cols, rows,
                        cols, s);
  const auto dab_h = to_host(dab, 2 * n, s);
  std::vector<float> da(n), db(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      da[r * cols + j] = dab_h[r * 2 * cols + j];
      db[r * cols + j] = dab_h[r * 2 * cols + cols + j];
    }
  CHECK(relative_error(to_host(h, n, s), h_ref) <= kFp32Tolerance);
  CHECK(relative_error(da, da_ref) <= kFp32Tolerance);
  CHECK(relative_error(db, db_ref) <= kFp32Tolerance);
  // bf16 output only (h null), rounded as the host rounds the fp32 output
  auto h16 = poisoned_as<cuda::bf16>(size_t(n), s);
  cuda::swiglu_forward(ab_d.data(), ab_d.data() + cols, 2 * cols, nullptr, rows, cols, s, h16.data());
  CHECK(to_host_float(h16, size_t(n), s) == bf16_rounded(to_host(h, n, s)));
  auto dab16 = poisoned_as<cuda::bf16>(size_t(2 * n), s);
  cuda::swiglu_backward(ab_d.data(), ab_d.data() + cols, 2 * cols, dh_d.data(), nullptr, nullptr, rows, cols, s,
                        dab16.data(), dab16.data() + cols);
  CHECK(to_host_float(dab16, size_t(2 * n), s) == bf16_rounded(dab_h));
  // bf16 inputs (bf16 mode's pre-activations and hidden gradient): the fp32 arithmetic on the values
  // they hold, so the same bits as fp32 inputs rounded to bf16
  auto ab16_d = to_device_as<cuda::bf16>(ab, s), dh16_d = to_device_as<cuda::bf16>(dh, s);
  auto abr_d = to_device(bf16_rounded(ab), s), dhr_d = to_device(bf16_rounded(dh), s);
  auto h_from16 = poisoned(n, s), h_rounded = poisoned(n, s);
  auto dab_from16 = poisoned(2 * n, s), dab_rounded = poisoned(2 * n, s);
  cuda::swiglu_forward(ab16_d.data(), ab16_d.data() + cols, 2 * cols, h_from16.data(), rows, cols, s);
  cuda::swiglu_forward(abr_d.data(), abr_d.data() + cols, 2 * cols, h_rounded.data(), rows, cols, s);
  cuda::swiglu_backward(ab16_d.data(), ab16_d.data() + cols, 2 * cols, dh16_d.data(), dab_from16.data(),
                        dab_from16.data() + cols, rows, cols, s);
  cuda::swiglu_backward(abr_d.data(), abr_d.data() + cols, 2 * cols, dhr_d.data(), dab_rounded.data(),
                        dab_rounded.data() + cols, rows, cols, s);
  CHECK(to_host(h_from16, n, s) == to_host(h_rounded, n, s));
  CHECK(to_host(dab_from16, 2 * n, s) == to_host(dab_rounded, 2 * n, s));
}

TEST_CASE("GPU GELU matches the CPU on the vector path and the scalar fallback, ragged ends included", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const auto is_nan = [](float v) { return std::isnan(v); };
  // n: whole groups of four, ragged ends of 1 (9,953 = 37·269) and 3 elements (the last thread's
  // scalar tail), and fewer elements than one group.
  for (const int64_t n : {int64_t(4096), int64_t(37 * 269), int64_t(4099), int64_t(3)}) {
    const auto x = randn(n, 31, 2.0), dh = randn(n, 33);
    std::vector<double> h_ref(n), dx_ref(n);
    gelu_forward(to_double(x).data(), h_ref.data(), n);
    gelu_backward(to_double(x).data(), to_double(dh).data(), dx_ref.data(), n);
    std::vector<float> h_at_lead[2], dx_at_lead[2];
    // lead 0: every array as allocated (aligned), four elements per thread; lead 1: every array one
    // element in, the scalar fallback.
    for (const int64_t lead : {0, 1}) {
      INFO("n " << n << ", lead " << lead);
      const auto after_lead = [&](const std::vector<float>& v) {
        std::vector<float> padded(size_t(lead), 0.0f);
        padded.insert(padded.end(), v.begin(), v.end());
        return padded;
      };
      const auto to_device_after_lead = [&](const std::vector<float>& v) { return to_device(after_lead(v), s); };
      // Outputs: `lead` elements, the n written, then one group more that must stay NaN (no store
      // past the end).
      const size_t out_size = size_t(lead + n + cuda::kVectorWidth);
      const auto written = [&](const auto& buffer) {
        const auto all = to_host_float(buffer, out_size, s);
        CHECK(std::all_of(all.begin(), all.begin() + lead, is_nan));
        CHECK(std::all_of(all.begin() + lead + n, all.end(), is_nan));
        return std::vector<float>(all.begin() + lead, all.begin() + lead + n);
      };
      const auto x_d = to_device_after_lead(x), dh_d = to_device_after_lead(dh);
      const float *x0 = x_d.data() + lead, *dh0 = dh_d.data() + lead;
      auto h = poisoned(out_size, s), dx = poisoned(out_size, s);
      auto h16 = poisoned_as<cuda::bf16>(out_size, s), dx16 = poisoned_as<cuda::bf16>(out_size, s);
      CHECK(cuda::vector_aligned(x0, dh0, h.data() + lead, dx.data() + lead, h16.data() + lead, dx16.data() + lead) ==
            (lead == 0));

      // fp32 outputs only
      cuda::gelu_forward(x0, h.data() + lead, n, s);
      cuda::gelu_backward(x0, dh0, dx.data() + lead, n, s);
      const auto& h32 = h_at_lead[lead] = written(h);
      const auto& dx32 = dx_at_lead[lead] = written(dx);
      CHECK(relative_error(h32, h_ref) <= kFp32Tolerance);
      CHECK(relative_error(dx32, dx_ref) <= kFp32Tolerance);
      // bf16 outputs only (fp32 null), rounded as the host rounds the fp32 values
      cuda::gelu_forward(x0, nullptr, n, s, h16.data() + lead);
      cuda::gelu_backward(x0, dh0, nullptr, n, s, dx16.data() + lead);
      CHECK(written(h16) == bf16_rounded(h32));
      CHECK(written(dx16) == bf16_rounded(dx32));
      // both at once, as the MLP's forward writes them
      h = poisoned(out_size, s);
      h16 = poisoned_as<cuda::bf16>(out_size, s);
      cuda::gelu_forward(x0, h.data() + lead, n, s, h16.data() + lead);
      CHECK(written(h) == h32);
      CHECK(written(h16) == bf16_rounded(h32));
      // bf16 inputs (bf16 mode's pre-activations and hidden gradient; vector path at lead 0, scalar
      // at lead 1): the fp32 arithmetic on the values they hold, so the same bits as fp32 inputs
      // rounded to bf16
      const auto x16_d = to_device_as<cuda::bf16>(after_lead(x), s);
      const auto dh16_d = to_device_as<cuda::bf16>(after_lead(dh), s);
      const auto xr_d = to_device_after_lead(bf16_rounded(x)), dhr_d = to_device_after_lead(bf16_rounded(dh));
      CHECK(cuda::vector_aligned(x16_d.data() + lead, dh16_d.data() + lead) == (lead == 0));
      h = poisoned(out_size, s), dx = poisoned(out_size, s);
      cuda::gelu_forward(x16_d.data() + lead, h.data() + lead, n, s);
      cuda::gelu_backward(x16_d.data() + lead, dh16_d.data() + lead, dx.data() + lead, n, s);
      const auto h_from16 = written(h), dx_from16 = written(dx);
      h = poisoned(out_size, s), dx = poisoned(out_size, s);
      cuda::gelu_forward(xr_d.data() + lead, h.data() + lead, n, s);
      cuda::gelu_backward(xr_d.data() + lead, dhr_d.data() + lead, dx.data() + lead, n, s);
      CHECK(written(h) == h_from16);
      CHECK(written(dx) == dx_from16);
    }
    // The two paths compute each value with the same fp32 expression: bit-identical results.
    CHECK(h_at_lead[0] == h_at_lead[1]);
    CHECK(dx_at_lead[0] == dx_at_lead[1]);
  }
}

TEST_CASE("GPU masked cross-entropy and argmax match the CPU", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  // a thread per row (v ≤ 32) and a warp per row, each also over hundreds of blocks' partial sums
  const int64_t shapes[][2] = {{333, 7}, {64, 1000}, {9, 1}, {70001, 5}, {2050, 32}, {2050, 33}};
  uint64_t seed = 40;
  for (const auto& shape : shapes) {
    const int64_t n = shape[0], v = shape[1];
    for (bool all_zero : {false, true}) {
      auto logits = randn(n * v, ++seed, 3.0);
      // in the first rows two logits tie for the largest: the argmax is the first of them
      for (int64_t r = 0; r < std::min<int64_t>(n, 16) && v > 1; ++r)
        logits[r * v + r % (v - 1)] = logits[r * v + v - 1] = 100.0f;
      const auto targets = random_tokens(n, v, ++seed);
      std::vector<float> weights = randn(n, ++seed);
      for (auto& w : weights) w = all_zero || w < -0.5f ? 0.0f : std::fabs(w);
      std::vector<double> probs_ref(n * v), dlogits_ref(n * v);
      const double loss_ref =
          cross_entropy_forward(to_double(logits).data(), targets.data(), weights.data(), probs_ref.data(), n, v);
      cross_entropy_backward(probs_ref.data(), targets.data(), weights.data(), 1.0, dlogits_ref.data(), n, v);

      auto ld = to_device(logits, s), wd = to_device(weights, s);
      auto td = to_device(targets, s);
      auto probs = poisoned(n * v, s), dlogits = poisoned(n * v, s);
      DeviceBuffer<cuda::CrossEntropyTotals> partials(size_t(cuda::cross_entropy_blocks(n, v)), "loss partial sums");
      DeviceBuffer<cuda::CrossEntropyTotals> totals(1, "totals");
      DeviceBuffer<int32_t> argmax(n, "argmax");
      cuda::cross_entropy_forward(ld.data(), td.data(), wd.data(), probs.data(), partials.data(), totals.data(), n, v,
                                  s);
      cuda::cross_entropy_backward(probs.data(), td.data(), wd.data(), totals.data(), 1.0f, dlogits.data(), n, v, s);
      cuda::argmax_rows(ld.data(), argmax.data(), n, v, s);
      const double loss = cuda::loss_value(to_host(totals, 1, s)[0]);
      std::vector<int32_t> argmax_ref(n);
      for (int64_t r = 0; r < n; ++r)
        argmax_ref[r] = int32_t(std::max_element(logits.begin() + r * v, logits.begin() + (r + 1) * v) -
                                (logits.begin() + r * v));
      INFO("n " << n << ", v " << v << ", all weights zero " << all_zero);
      CHECK(std::fabs(loss - loss_ref) <= kFp32Tolerance * std::max(1.0, std::fabs(loss_ref)));
      CHECK(relative_error(to_host(probs, n * v, s), probs_ref) <= kFp32Tolerance);
      CHECK(relative_error(to_host(dlogits, n * v, s), dlogits_ref) <= kFp32Tolerance);
      CHECK(to_host(argmax, n, s) == argmax_ref);
      // bf16 gradients only (fp32 output null): the fp32 ones rounded as the host rounds them
      auto dlogits16 = poisoned_as<cuda::bf16>(size_t(n * v), s);
      cuda::cross_entropy_backward(probs.data(), td.data(), wd.data(), totals.data(), 1.0f, nullptr, n, v, s,
                                   dlogits16.data());
      CHECK(to_host_float(dlogits16, size_t(n * v), s) == bf16_rounded(to_host(dlogits, n * v, s)));
      // the partial sums are added in a fixed order: the same inputs give the same totals, bit for bit
      DeviceBuffer<cuda::CrossEntropyTotals> totals_again(1, "totals");
      cuda::cross_entropy_forward(ld.data(), td.data(), wd.data(), probs.data(), partials.data(), totals_again.data(),
                                  n, v, s);
      const cuda::CrossEntropyTotals first = to_host(totals, 1, s)[0], again = to_host(totals_again, 1, s)[0];
      CHECK(first.loss_sum == again.loss_sum);
      CHECK(first.weight_sum == again.weight_sum);
    }
  }
}

namespace {

// The attention kernels' row dot products (δ = rowsum(dO ∘ O)) over S inputs, from element `offset`
// on: an offset of one element misaligns the rows for vector access, as does cols = 30.
template <typename S>
void check_row_dot(int64_t rows, int64_t cols, int64_t offset, uint64_t seed) {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const size_t n = size_t(rows * cols + offset);
  const auto a = bf16_rounded(randn(n, seed)), b = bf16_rounded(randn(n, seed + 1));  // exact in S
  auto ad = to_device_as<S>(a, s), bd = to_device_as<S>(b, s);
  auto out = poisoned(size_t(rows), s);
  cuda::detail::row_dot(ad.data() + offset, bd.data() + offset, out.data(), rows, cols, s);
  std::vector<double> ref(size_t(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) ref[r] += double(a[offset + r * cols + c]) * b[offset + r * cols + c];
  INFO("rows " << rows << ", cols " << cols << ", offset " << offset << ", " << sizeof(S) << "-byte inputs");
  CHECK(relative_error(to_host(out, size_t(rows), s), ref) <= kFp32Tolerance);
}

}  // namespace

TEST_CASE("GPU row dot products and fp32-to-bf16 conversions of the attention kernels, vector and scalar paths",
          "[cuda]") {
  for (int64_t offset : {0, 1}) {
    check_row_dot<cuda::bf16>(301, 64, offset, 70);
    check_row_dot<float>(301, 64, offset, 72);
  }
  check_row_dot<cuda::bf16>(77, 30, 0, 74);
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  const auto src = randn(4096 * 5 + 3, 76, 10.0);
  auto srcd = to_device(src, s);
  // n a multiple of 4 from an aligned start (vector), then from a misaligned one and with a ragged n
  for (auto [offset, n] : {std::pair<int64_t, int64_t>{0, 4096 * 5}, {1, 4096 * 5}, {0, 4096 * 5 + 3}}) {
    const std::vector<float> part(src.begin() + offset, src.begin() + offset + n);
    auto dst = poisoned_as<cuda::bf16>(size_t(n), s);
    cuda::detail::convert_from_float(srcd.data() + offset, dst.data(), n, s);
    auto dst32 = poisoned(size_t(n), s);
    cuda::detail::convert_from_float(srcd.data() + offset, dst32.data(), n, s);
    INFO("offset " << offset << ", n " << n);
    CHECK(to_host_float(dst, size_t(n), s) == bf16_rounded(part));
    CHECK(to_host(dst32, size_t(n), s) == part);
  }
}

TEST_CASE("GPU linear forward and backward match the CPU at every precision", "[cuda]") {
  const int64_t shapes[][3] = {{70, 64, 192}, {512, 128, 8}, {33, 40, 24}};  // n, in, out
  uint64_t seed = 60;
  for (Precision precision : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    for (const auto& shape : shapes) {
      const int64_t n = shape[0], in = shape[1], out = shape[2];
      cuda::Context ctx(precision);
      cudaStream_t s = ctx.stream();
      ctx.reserve_staging(size_t(n * std::max(in, out)));
      ParameterSet<float> layout;
      const auto id = layout.add("w", {out, in});
      layout.values() = randn(out * in, ++seed, 0.1);
      cuda::CudaParameters params(layout, precision == Precision::bf16, s);
      const auto x = randn(n * in, ++seed), dy = randn(n * out, ++seed), dx0 = randn(n * in, ++seed);
      const auto xd = to_double(x), wd = to_double(layout.values()), dyd = to_double(dy);
      std::vector<double> y_ref(n * out), dx_ref = to_double(dx0), dw_ref(out * in, 0.0);
      linear_forward(xd.data(), wd.data(), y_ref.data(), n, in, out);
      linear_backward(xd.data(), wd.data(), dyd.data(), dx_ref.data(), dw_ref.data(), n, in, out, true);

      auto x_dev = to_device(x, s), dy_dev = to_device(dy, s), dx_dev = to_device(dx0, s);
      auto y = poisoned(n * out, s);
      cuda::linear_forward(ctx, {x_dev.data()}, params.weight(id), y.data(), n, in, out);
      cuda::linear_backward(ctx, {x_dev.data()}, params.weight(id), {dy_dev.data()}, dx_dev.data(), n, in, out, true);
      ParameterSet<float> back = layout;
      params.download(back);
      const double tol = product_tolerance(precision);
      INFO(precision_name(precision) << ": n " << n << ", in " << in << ", out " << out);
      CHECK(relative_error(to_host(y, n * out, s), y_ref) <= tol);
      CHECK(relative_error(to_host(dx_dev, n * in, s), dx_ref) <= tol);
      CHECK(relative_error(back.grads(), dw_ref) <= tol);

      // Outputs in an ActivationMatrix: fp32 outside bf16 mode (the same products, the same bits), bf16 in
      // it. dx is overwritten and dW added once more by each backward.
      cuda::ActivationMatrix y_op("y"), dx_op("dx");
      y_op.reserve(size_t(n * out), precision);
      dx_op.reserve(size_t(n * in), precision);
      const auto poison = [&](cuda::ActivationMatrix& m, int64_t count) {  // NaN: an output added to shows
        void* p = m.f32() ? static_cast<void*>(m.f32()) : static_cast<void*>(m.b16());
        const size_t bytes = size_t(count) * (m.f32() ? sizeof(float) : sizeof(cuda::bf16));
        PATHBENCH_CUDA_CHECK(cudaMemsetAsync(p, 0xff, bytes, s));
      };
      poison(y_op, n * out);
      poison(dx_op, n * in);
      cuda::linear_forward(ctx, {x_dev.data()}, params.weight(id), y_op, n, in, out);
      auto dx_alone = poisoned(n * in, s);
      cuda::linear_backward(ctx, {x_dev.data()}, params.weight(id), {dy_dev.data()}, dx_alone.data(), n, in, out);
      cuda::linear_backward(ctx, {x_dev.data()}, params.weight(id), {dy_dev.data()}, dx_op, n, in, out);
      ParameterSet<float> thrice = layout;
      params.download(thrice);
      std::vector<double> dw_thrice = dw_ref;
      for (double& g : dw_thrice) g *= 3;
      CHECK(relative_error(thrice.grads(), dw_thrice) <= tol);
      CHECK((y_op.f32() == nullptr) == (precision == Precision::bf16));
      CHECK((y_op.b16() == nullptr) == (precision != Precision::bf16));
      if (precision != Precision::bf16) {
        CHECK(to_host(y_op.f32(), n * out, s) == to_host(y, n * out, s));
        CHECK(to_host(dx_op.f32(), n * in, s) == to_host(dx_alone, n * in, s));
        // A bf16 output outside bf16 mode is refused.
        auto y16 = poisoned_as<cuda::bf16>(size_t(n * out), s);
        CHECK_THROWS_AS(cuda::linear_forward(ctx, {x_dev.data()}, params.weight(id), y16.data(), n, in, out),
                        std::logic_error);
        continue;
      }
      // bf16 outputs: the fp32 product rounded once, each value within one bf16 step of the fp32
      // output rounded on the host (cuBLAS may take another kernel, so the fp32 sums may differ in
      // their last bits; 2⁻²⁰ of the largest value covers values that cancel to near zero).
      const auto within_one_step = [&](const std::vector<float>& got16, const std::vector<float>& fp32) {
        const std::vector<float> rounded = bf16_rounded(fp32);
        float largest = 0.0f;
        for (float value : rounded) largest = std::max(largest, std::abs(value));
        int64_t apart = 0;
        for (size_t i = 0; i < rounded.size(); ++i)
          apart += !(std::abs(got16[i] - rounded[i]) <= std::ldexp(std::abs(rounded[i]), -7) + std::ldexp(largest, -20));
        return apart == 0;
      };
      auto y16 = poisoned_as<cuda::bf16>(size_t(n * out), s);
      cuda::linear_forward(ctx, {x_dev.data()}, params.weight(id), y16.data(), n, in, out);
      const std::vector<float> got16 = to_host_float(y16, size_t(n * out), s);
      CHECK(within_one_step(got16, to_host(y, n * out, s)));
      CHECK(relative_error(got16, y_ref) <= tol);
      CHECK(to_host_float(y_op.b16(), size_t(n * out), s) == got16);
      CHECK(within_one_step(to_host_float(dx_op.b16(), size_t(n * in), s), to_host(dx_alone, n * in, s)));
    }
  }
}

TEST_CASE("GPU head split and merge match the CPU layout on the vector path and the scalar fallback", "[cuda]") {
  cuda::Context ctx(Precision::fp32);
  cudaStream_t s = ctx.stream();
  struct Case {
    int64_t b, t, h, d;
    int64_t lead;  // elements before row 0 and before each heads tensor (1: no pointer aligned)
    int64_t pad;   // columns after q | k | v in each row
    bool vector;   // whether the kernels move four elements per thread
  };
  // Four elements per thread: H·D = 64 (16 groups of four a row: 8 rows of 32 threads a block),
  // 320 (80 groups: 2 rows of 96 threads) and 1,152 (288 groups: two column blocks of 256 threads).
  // Scalar fallback: D = 6, every pointer one element in, and rows of 3·H·D + 2 elements.
  const Case cases[] = {{3, 37, 4, 16, 0, 0, true}, {2, 9, 5, 64, 0, 0, true},   {2, 5, 9, 128, 0, 0, true},
                        {2, 7, 3, 6, 0, 0, false},  {3, 37, 4, 16, 1, 0, false}, {3, 37, 4, 16, 0, 2, false}};
  for (const Case& c : cases) {
    const int64_t b = c.b, t = c.t, h = c.h, d = c.d, hd = h * d, n = b * t, lead = c.lead;
    const int64_t stride = 3 * hd + c.pad, size = lead + n * stride;
    INFO("B " << b << ", T " << t << ", H " << h << ", D " << d << ", lead " << lead << ", row stride " << stride);
    const auto rows = randn(size, 70), rows16 = bf16_rounded(rows);  // row r at lead + r·stride: q | k | v | pad
    // CPU reference: q, k and v each split into [B, H, T, D], back to back.
    std::vector<float> part_rows(n * hd), heads_ref(3 * n * hd);
    for (int64_t part = 0; part < 3; ++part) {
      for (int64_t r = 0; r < n; ++r)
        std::copy_n(rows.begin() + lead + r * stride + part * hd, hd, part_rows.begin() + r * hd);
      split_heads(part_rows.data(), heads_ref.data() + part * n * hd, b, t, h, d);
    }
    const std::vector<float> k_ref(heads_ref.begin() + n * hd, heads_ref.begin() + 2 * n * hd);
    // Host copy of `count` elements of a device buffer from `lead` on.
    const auto after_lead = [&](const auto& buffer, int64_t count) {
      const auto all = to_host_float(buffer, size_t(lead + count), s);
      return std::vector<float>(all.begin() + lead, all.end());
    };
    // Merged rows as written: row columns [from, to) equal `want` (rows, or rows rounded to bf16),
    // every other element (lead, other parts, pad) still NaN.
    const auto merged_as_expected = [&](const auto& buffer, const std::vector<float>& want, int64_t from, int64_t to) {
      const auto got = to_host_float(buffer, size_t(size), s);
      int64_t wrong = 0;
      for (int64_t i = 0; i < size; ++i) {
        const int64_t column = (i - lead) % stride;
        const bool written = i >= lead && column >= from && column < to;
        wrong += written ? got[i] != want[i] : !std::isnan(got[i]);
      }
      return wrong == 0;
    };

    auto rows_d = to_device(rows, s);
    float* const rows0 = rows_d.data() + lead;
    auto heads = poisoned(lead + 3 * n * hd, s), merged = poisoned(size, s);
    auto heads16 = poisoned_as<cuda::bf16>(size_t(lead + 3 * n * hd), s);
    auto merged16 = poisoned_as<cuda::bf16>(size_t(size), s);
    CHECK(cuda::heads_permute_vectorizable(rows0 + hd, heads.data() + lead, stride, d) == c.vector);
    CHECK(cuda::heads_permute_vectorizable(heads16.data() + lead, merged16.data() + lead, stride, d) == c.vector);

    // One part (k, the columns after H·D) in fp32, and in bf16 merged back into fp32 rows.
    cuda::split_heads(rows0 + hd, stride, heads.data() + lead, b, t, h, d, s);
    CHECK(after_lead(heads, n * hd) == k_ref);
    cuda::merge_heads(heads.data() + lead, merged.data() + lead + hd, stride, b, t, h, d, s);
    CHECK(merged_as_expected(merged, rows, hd, 2 * hd));
    cuda::split_heads(rows0 + hd, stride, heads16.data() + lead, b, t, h, d, s);
    CHECK(after_lead(heads16, n * hd) == bf16_rounded(k_ref));
    merged = poisoned(size, s);
    cuda::merge_heads(heads16.data() + lead, merged.data() + lead + hd, stride, b, t, h, d, s);
    CHECK(merged_as_expected(merged, rows16, hd, 2 * hd));

    // Three parts in one launch: fp32 heads merged into fp32 and into bf16 rows, bf16 heads into bf16 rows.
    cuda::split_heads(rows0, stride, heads.data() + lead, b, t, h, d, s, 3);
    CHECK(after_lead(heads, 3 * n * hd) == heads_ref);
    merged = poisoned(size, s);
    cuda::merge_heads(heads.data() + lead, merged.data() + lead, stride, b, t, h, d, s, 3);
    CHECK(merged_as_expected(merged, rows, 0, 3 * hd));
    cuda::merge_heads(heads.data() + lead, merged16.data() + lead, stride, b, t, h, d, s, 3);
    CHECK(merged_as_expected(merged16, rows16, 0, 3 * hd));
    cuda::split_heads(rows0, stride, heads16.data() + lead, b, t, h, d, s, 3);
    CHECK(after_lead(heads16, 3 * n * hd) == bf16_rounded(heads_ref));
    // bf16 rows (a product's bf16 output) split into bf16 heads: the same values
    auto rows16_d = to_device_as<cuda::bf16>(rows16, s);
    heads16 = poisoned_as<cuda::bf16>(size_t(lead + 3 * n * hd), s);
    CHECK(cuda::heads_permute_vectorizable(rows16_d.data() + lead, heads16.data() + lead, stride, d) == c.vector);
    cuda::split_heads(rows16_d.data() + lead, stride, heads16.data() + lead, b, t, h, d, s, 3);
    CHECK(after_lead(heads16, 3 * n * hd) == bf16_rounded(heads_ref));
    merged16 = poisoned_as<cuda::bf16>(size_t(size), s);
    cuda::merge_heads(heads16.data() + lead, merged16.data() + lead, stride, b, t, h, d, s, 3);
    CHECK(merged_as_expected(merged16, rows16, 0, 3 * hd));
  }
}

TEST_CASE("GPU fp32 to bf16 conversion rounds each value as the host does", "[cuda]") {
  cuda::Context ctx(Precision::bf16);
  cudaStream_t s = ctx.stream();
  const auto x = randn(4101, 71);
  auto x_d = to_device(x, s);
  // whole quads and a tail, a tail only, and sources that are not 16-byte aligned
  for (const auto& [offset, n] : {std::pair<int64_t, int64_t>{0, 4096}, {0, 4099}, {0, 3}, {1, 4096}, {2, 7}}) {
    INFO("offset " << offset << ", n " << n);
    auto y = poisoned_as<cuda::bf16>(size_t(n), s);
    cuda::to_bf16(x_d.data() + offset, y.data(), n, s);
    const std::vector<float> part(x.begin() + offset, x.begin() + offset + n);
    CHECK(to_host_float(y, size_t(n), s) == bf16_rounded(part));
  }
}

}  // namespace
}  // namespace pathbench
#endif  // PATHBENCH_WITH_CUDA
