// The float64 brute-force references that the GPU tests hold the stick-breaking and PaTH kernels to
// (attention_reference.h), checked on the CPU: against the CPU kernels, and against central finite
// differences of their own forward, so that a GPU test failure points at the kernel, not the reference.
#include <catch2/catch.hpp>

#include "core/attention/fox/fox.h"
#include "core/attention/path/path.h"
#include "core/attention/sba/sba.h"
#include "encoding_test_support.h"
#include "tests/attention_reference.h"

namespace pathbench {
namespace {

constexpr int64_t kSlices = 2, kLength = 37, kDim = 5;  // ragged against the CPU PaTH kernels' 32-row chunks
constexpr double kScale = 0.4, kGateScale = 0.7;

TEST_CASE("the PaTH reference matches the CPU kernels, with and without the forget gate", "[encodings]") {
  const reference::AttentionShape shape{kSlices, kLength, kDim};
  const size_t n = kSlices * kLength * kDim, rows = kSlices * kLength;
  for (bool gate : {false, true}) {
    INFO("gate " << gate);
    const auto q = test::random_normal(n, 1, "q"), k = test::random_normal(n, 1, "k");
    const auto v = test::random_normal(n, 1, "v"), d_o = test::random_normal(n, 1, "do");
    const auto w = test::random_unit_rows(rows, kDim, 1, "w");
    const auto beta = test::random_uniform(rows, 0.05, 1.95, 1, "beta");
    auto cum = test::random_uniform(rows, -0.6, 0.0, 1, "gate");
    cumulative_sum(cum.data(), cum.data(), kSlices, kLength);
    const double* c = gate ? cum.data() : nullptr;

    const PathAttentionArgs<double> a{kSlices, kLength,  kDim, kScale, q.data(), k.data(),
                                      v.data(), w.data(), beta.data(), c, kGateScale};
    std::vector<double> o(n), lse(rows), dq(n), dk(n), dv(n), dw(n), dbeta(rows), dc(rows);
    path_attention_forward(a, o.data(), lse.data());
    path_attention_backward(a, o.data(), lse.data(), d_o.data(), dq.data(), dk.data(), dv.data(), dw.data(),
                            dbeta.data(), gate ? dc.data() : nullptr);

    const reference::PathInputs in{q.data(), k.data(), v.data(), w.data(), beta.data(), c, kScale, kGateScale};
    std::vector<double> ro(n), rlse(rows), rdq(n), rdk(n), rdv(n), rdw(n), rdbeta(rows), rdc(rows);
    reference::path_forward(shape, in, ro.data(), rlse.data());
    reference::path_backward(shape, in, ro.data(), rlse.data(), d_o.data(), rdq.data(), rdk.data(), rdv.data(),
                             rdw.data(), rdbeta.data(), gate ? rdc.data() : nullptr);
    CHECK(test::max_abs_diff(o, ro) < 1e-10);
    CHECK(test::max_abs_diff(lse, rlse) < 1e-10);
    CHECK(test::max_abs_diff(dq, rdq) < 1e-10);
    CHECK(test::max_abs_diff(dk, rdk) < 1e-10);
    CHECK(test::max_abs_diff(dv, rdv) < 1e-10);
    CHECK(test::max_abs_diff(dw, rdw) < 1e-10);
    CHECK(test::max_abs_diff(dbeta, rdbeta) < 1e-10);
    if (gate) CHECK(test::max_abs_diff(dc, rdc) < 1e-10);
  }
}

TEST_CASE("the stick-breaking reference matches the CPU kernel and its own finite differences", "[encodings]") {
  const reference::AttentionShape shape{kSlices, kLength, kDim};
  const size_t n = kSlices * kLength * kDim;
  for (bool remainder : {false, true}) {
    INFO("remainder_to_current " << remainder);
    // Sharp logits (sd 2), so that the stick-breaking weights are far from uniform.
    auto q = test::random_normal(n, 2, "q", 2.0), k = test::random_normal(n, 2, "k", 2.0);
    auto v = test::random_normal(n, 2, "v");
    const auto d_o = test::random_normal(n, 2, "do");
    std::vector<double> ro(n), rdq(n), rdk(n), rdv(n);
    reference::stick_breaking_forward(shape, kScale, remainder, q.data(), k.data(), v.data(), ro.data());
    reference::stick_breaking_backward(shape, kScale, remainder, q.data(), k.data(), v.data(), d_o.data(), rdq.data(),
                                       rdk.data(), rdv.data());

    const StickBreakingArgs<double> a{kSlices, kLength, kDim, kScale, q.data(), k.data(), v.data(), remainder};
    std::vector<double> o(n), dq(n), dk(n), dv(n);
    stick_breaking_forward(a, o.data());
    stick_breaking_backward(a, o.data(), d_o.data(), dq.data(), dk.data(), dv.data());
    CHECK(test::max_abs_diff(o, ro) < 1e-10);
    CHECK(test::max_abs_diff(dq, rdq) < 1e-10);
    CHECK(test::max_abs_diff(dk, rdk) < 1e-10);
    CHECK(test::max_abs_diff(dv, rdv) < 1e-10);

    auto loss = [&] {
      std::vector<double> out(n);
      reference::stick_breaking_forward(shape, kScale, remainder, q.data(), k.data(), v.data(), out.data());
      return test::dot(out, d_o);
    };
    test::check_gradient(q, rdq, loss, "reference dq");
    test::check_gradient(k, rdk, loss, "reference dk");
    test::check_gradient(v, rdv, loss, "reference dv");
  }
}

}  // namespace
}  // namespace pathbench
