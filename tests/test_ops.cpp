// Every basic op: forward against a float64 brute-force version, backward against central finite
// differences in float64 (odd sizes included); and the host-side decisions of GPU launches that
// need no GPU (matrix product shapes, when elementwise kernels take their vector path).
#include <catch2/catch.hpp>

#include "core/error.h"

#include "core/ops/activations.h"
#include "core/ops/cross_entropy.h"
#include "core/ops/embedding.h"
#include "core/cuda/gemm_shape.h"
#include "core/cuda/vector_access.h"
#include "core/ops/linear.h"
#include "core/ops/rmsnorm.h"
#include "tests/test_support.h"

using namespace pathbench;
using namespace pathbench::testing;

TEST_CASE("linear forward and backward", "[ops]") {
  for (auto [n, in, out] : {std::tuple{1, 1, 1}, {5, 3, 7}, {13, 8, 4}}) {
    auto x = random_vector(n * in, 1), w = random_vector(out * in, 2), dy = random_vector(n * out, 3);
    std::vector<double> y(n * out);
    linear_forward(x.data(), w.data(), y.data(), n, in, out);
    for (int r = 0; r < n; ++r)
      for (int o = 0; o < out; ++o) {
        double s = 0;
        for (int i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
        REQUIRE(y[r * out + o] == Approx(s).epsilon(1e-12));
      }
    std::vector<double> dx(n * in), dw(out * in, 0.0);
    linear_backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), n, in, out);
    auto loss = [&]() {
      std::vector<double> yy(n * out);
      linear_forward(x.data(), w.data(), yy.data(), n, in, out);
      return dot(yy, dy);
    };
    CHECK(relative_error(dx, finite_difference(x, loss)) < 1e-8);
    CHECK(relative_error(dw, finite_difference(w, loss)) < 1e-8);
  }
}

TEST_CASE("rmsnorm forward and backward", "[ops]") {
  for (auto [n, c] : {std::pair{1, 1}, {3, 5}, {7, 16}}) {
    auto x = random_vector(n * c, 4), g = random_vector(c, 5), dy = random_vector(n * c, 6);
    const double eps = 1e-2;  // large enough that the C = 1 case has a well-conditioned gradient
    std::vector<double> y(n * c), rstd(n);
    rmsnorm_forward(x.data(), g.data(), y.data(), rstd.data(), n, c, eps);
    for (int r = 0; r < n; ++r) {
      double ms = 0;
      for (int j = 0; j < c; ++j) ms += x[r * c + j] * x[r * c + j] / c;
      for (int j = 0; j < c; ++j) REQUIRE(y[r * c + j] == Approx(x[r * c + j] / std::sqrt(ms + eps) * g[j]).epsilon(1e-12));
    }
    std::vector<double> dx(n * c, 0.0), dg(c, 0.0);
    rmsnorm_backward(x.data(), g.data(), rstd.data(), dy.data(), dx.data(), dg.data(), n, c);
    auto loss = [&]() {
      std::vector<double> yy(n * c), rr(n);
      rmsnorm_forward(x.data(), g.data(), yy.data(), rr.data(), n, c, eps);
      return dot(yy, dy);
    };
    CHECK(relative_error(dx, finite_difference(x, loss)) < 1e-7);
    CHECK(relative_error(dg, finite_difference(g, loss)) < 1e-7);
  }
}

TEST_CASE("swiglu and gelu forward and backward", "[ops]") {
  const int n = 11;
  auto a = random_vector(n, 7, 2.0), b = random_vector(n, 8), dh = random_vector(n, 9);
  std::vector<double> h(n), da(n), db(n);
  swiglu_forward(a.data(), b.data(), h.data(), n);
  for (int i = 0; i < n; ++i) REQUIRE(h[i] == Approx(a[i] / (1 + std::exp(-a[i])) * b[i]).epsilon(1e-12));
  swiglu_backward(a.data(), b.data(), dh.data(), da.data(), db.data(), n);
  auto swiglu_loss = [&]() {
    std::vector<double> hh(n);
    swiglu_forward(a.data(), b.data(), hh.data(), n);
    return dot(hh, dh);
  };
  CHECK(relative_error(da, finite_difference(a, swiglu_loss)) < 1e-8);
  CHECK(relative_error(db, finite_difference(b, swiglu_loss)) < 1e-8);

  gelu_forward(a.data(), h.data(), n);
  for (int i = 0; i < n; ++i) REQUIRE(h[i] == Approx(0.5 * a[i] * std::erfc(-a[i] / std::sqrt(2.0))).epsilon(1e-12));
  gelu_backward(a.data(), dh.data(), da.data(), n);
  auto gelu_loss = [&]() {
    std::vector<double> hh(n);
    gelu_forward(a.data(), hh.data(), n);
    return dot(hh, dh);
  };
  CHECK(relative_error(da, finite_difference(a, gelu_loss)) < 1e-8);
}

TEST_CASE("embedding gathers rows and scatters gradients", "[ops]") {
  const int v = 5, c = 3, n = 7;
  std::vector<int32_t> tokens = {0, 4, 4, 2, 0, 1, 4};
  auto table = random_vector(v * c, 10), dout = random_vector(n * c, 11);
  std::vector<double> out(n * c), dtable(v * c, 0.0);
  embedding_forward(tokens.data(), table.data(), out.data(), n, c);
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < c; ++j) REQUIRE(out[r * c + j] == table[tokens[r] * c + j]);
  embedding_backward(tokens.data(), dout.data(), dtable.data(), n, c);
  auto loss = [&]() {
    std::vector<double> o(n * c);
    embedding_forward(tokens.data(), table.data(), o.data(), n, c);
    return dot(o, dout);
  };
  CHECK(relative_error(dtable, finite_difference(table, loss)) < 1e-9);
}

TEST_CASE("masked cross-entropy forward and backward", "[ops]") {
  const int n = 6, v = 5;
  auto logits = random_vector(n * v, 12, 3.0);
  std::vector<int32_t> targets = {0, 4, 2, 2, 1, 3};
  std::vector<float> weights = {1, 0, 1, 1, 0, 1};
  std::vector<double> probs(n * v);
  double loss = cross_entropy_forward(logits.data(), targets.data(), weights.data(), probs.data(), n, v);
  double ref = 0;
  for (int r = 0; r < n; ++r) {
    if (!weights[r]) continue;
    double z = 0;
    for (int j = 0; j < v; ++j) z += std::exp(logits[r * v + j]);
    ref += std::log(z) - logits[r * v + targets[r]];
  }
  REQUIRE(loss == Approx(ref / 4).epsilon(1e-12));
  std::vector<double> dlogits(n * v);
  cross_entropy_backward(probs.data(), targets.data(), weights.data(), 1.0, dlogits.data(), n, v);
  auto f = [&]() {
    std::vector<double> p(n * v);
    return cross_entropy_forward(logits.data(), targets.data(), weights.data(), p.data(), n, v);
  };
  CHECK(relative_error(dlogits, finite_difference(logits, f)) < 1e-8);
  // A row with weight 0 gets no gradient, and all-zero weights give loss 0.
  for (int j = 0; j < v; ++j) CHECK(dlogits[1 * v + j] == 0.0);
  std::vector<float> none(n, 0.0f);
  CHECK(cross_entropy_forward(logits.data(), targets.data(), none.data(), probs.data(), n, v) == 0.0);
}

TEST_CASE("matrix product shapes are checked before they reach cuBLAS", "[ops]") {
  using Catch::Contains;
  // y[5, 7] = x[5, 3] · W[7, 3]ᵀ and the weight gradient dW[7, 3] = dy[5, 7]ᵀ · x[5, 3], as cuda_linear calls them.
  CHECK_NOTHROW(check_gemm_shape({false, true, 5, 7, 3, 3, 3, 7}, "forward"));
  CHECK_NOTHROW(check_gemm_shape({true, false, 7, 3, 5, 7, 3, 3}, "weight gradient"));
  CHECK_NOTHROW(check_gemm_shape({false, false, 0, 7, 3, 3, 7, 7}, "empty batch"));
  CHECK_NOTHROW(check_gemm_shape({false, false, 2, 2, 2, 4, 4, 4}, "strided"));
  CHECK_THROWS_WITH(check_gemm_shape({false, true, -1, 4, 4, 4, 4, 4}, "linear_forward"),
                    Contains("linear_forward: matrix product C[-1, 4] = A[-1, 4] · Bᵀ[4, 4]") &&
                        Contains("sizes must be >= 0"));
  CHECK_THROWS_WITH(check_gemm_shape({false, false, 2, 3, int64_t(1) << 31, 1 << 30, 3, 3}, "big"),
                    Contains("sizes exceed 2147483647"));
  // Each stride must cover its stored row: A is [k, m] when transposed, B is [n, k] when transposed.
  CHECK_THROWS_WITH(check_gemm_shape({false, false, 2, 3, 4, 3, 3, 3}, "op"), Contains("lda must be >= 4"));
  CHECK_THROWS_WITH(check_gemm_shape({true, false, 5, 3, 4, 4, 3, 3}, "op"), Contains("lda must be >= 5"));
  CHECK_THROWS_WITH(check_gemm_shape({false, true, 2, 3, 4, 4, 3, 3}, "op"), Contains("ldb must be >= 4"));
  CHECK_THROWS_WITH(check_gemm_shape({false, false, 2, 3, 4, 4, 3, 2}, "op"), Contains("ldc must be >= 3"));
  CHECK_THROWS_WITH(check_gemm_shape({false, false, 2, 0, 0, 0, 1, 1}, "op"), Contains("lda must be >= 1"));
  CHECK_THROWS_AS(check_gemm_shape({false, false, 2, 3, 4, 4, 3, 2}, "op"), Error);
}

TEST_CASE("GPU elementwise kernels take the vector path only for aligned pointers and shapes", "[ops]") {
  using cuda::heads_permute_vectorizable;
  using cuda::vector_aligned;
  // uint16_t stands for bf16 (2 bytes): only the element size matters.
  alignas(16) float f[16];
  alignas(16) uint16_t h[16];
  CHECK(vector_aligned(f, f + 4, h, h + 4, h + 8));
  CHECK(vector_aligned<float>(nullptr));  // an output not written
  CHECK_FALSE(vector_aligned(f + 2));     // 8 bytes in: not a float4
  CHECK_FALSE(vector_aligned(h + 2));     // 4 bytes in: not four bf16
  CHECK_FALSE(vector_aligned(f, h + 1));
  // Rows (RMSNorm, the embedding gather, row dots, conversions): the row length a multiple of 4,
  // every array aligned (an absent output: null).
  using cuda::rows_vectorizable;
  CHECK(rows_vectorizable(128, f, f + 4, h, static_cast<const float*>(nullptr)));
  CHECK_FALSE(rows_vectorizable(130, f, f));  // a group would cross a row's end
  CHECK_FALSE(rows_vectorizable(128, f, f + 1));
  CHECK_FALSE(rows_vectorizable(128, h + 2));
  // Head permutes: D and the row stride multiples of 4, both pointers aligned (the fused q/k/v
  // split at the flip-flop shape: D = 64, stride 3·H·D = 384).
  CHECK(heads_permute_vectorizable(f, h, 384, 64));
  CHECK(heads_permute_vectorizable(f + 4, f, 12, 4));
  CHECK_FALSE(heads_permute_vectorizable(f, h, 36, 6));        // D = 6: a group would cross a head
  CHECK_FALSE(heads_permute_vectorizable(f, h, 390, 64));      // stride not a multiple of 4
  CHECK_FALSE(heads_permute_vectorizable(f + 1, h, 384, 64));  // rows from column 1
  CHECK_FALSE(heads_permute_vectorizable(f, h + 3, 384, 64));  // heads tensor 3 elements in
  // RoPE: each half-row (D/2) a multiple of 4 pairs, every tensor aligned (a second tensor absent:
  // null, as for a rotation of q alone).
  using cuda::rope_vectorizable;
  CHECK(rope_vectorizable(64, h, h + 8, h, static_cast<const uint16_t*>(nullptr)));
  CHECK(rope_vectorizable(16, f, f));
  CHECK_FALSE(rope_vectorizable(12, h, h));      // D/2 = 6: a group would cross into the other half
  CHECK_FALSE(rope_vectorizable(6, f, f));
  CHECK_FALSE(rope_vectorizable(64, h, h + 2));  // the output 2 elements in
  CHECK_FALSE(rope_vectorizable(64, f, f, f + 1, f));
}
