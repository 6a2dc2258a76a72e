// The flat parameter buffers: which tensors start aligned, that adjacent declarations stay adjacent
// (the GPU layers' fused products rely on it), and that the alignment gaps hold zeros and are not
// counted as parameters; the diagnosis that names the tensors with non-finite gradients.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/model/transformer.h"
#include "core/params/non_finite.h"
#include "tests/model_checks.h"

using namespace pathbench;

TEST_CASE("parameter tensors whose size is a multiple of 8 start 8-aligned, the others follow at once",
          "[model]") {
  ParameterSet<float> p;
  const auto bias = p.add("bias", {3}, false);   // 3 values at 0
  const auto w = p.add("w", {4, 6});             // 24 values: aligned to 8
  const auto odd1 = p.add("odd1", {5});          // 5 values: right after w
  const auto odd2 = p.add("odd2", {7});          // right after odd1, so odd1 | odd2 stay adjacent
  const auto last = p.add("last", {16});         // aligned again
  CHECK(p.entry(bias).offset == 0);
  CHECK(p.entry(w).offset == 8);
  CHECK(p.entry(odd1).offset == 32);
  CHECK(p.entry(odd2).offset == 37);
  CHECK(p.entry(last).offset == 48);
  CHECK(p.count() == 64);
  CHECK(p.parameter_count() == 3 + 24 + 5 + 7 + 16);
  // Every entry written through its own pointer covers its values and leaves the gaps at 0.
  for (const auto id : {bias, w, odd1, odd2, last})
    for (size_t i = 0; i < p.entry(id).size; ++i) p.value(id)[i] = 1.0f;
  for (size_t i = 0; i < p.count(); ++i) {
    const bool gap = (i >= 3 && i < 8) || (i >= 44 && i < 48);
    INFO("element " << i);
    CHECK(p.values()[i] == (gap ? 0.0f : 1.0f));
  }
}

TEST_CASE("every matrix of a PaTH-FoX model starts 8-aligned despite its per-head biases", "[model]") {
  ModelConfig config = testing::tiny_config("path_fox");
  Transformer<double> model(config);
  const ParameterSet<double>& p = model.params();
  int aligned_matrices = 0;
  for (const ParameterEntry& e : p.entries()) {
    INFO(e.name << " (" << e.size << " values at " << e.offset << ")");
    if (e.size % ParameterSet<double>::kAlignment == 0) {
      CHECK(e.offset % ParameterSet<double>::kAlignment == 0);
      ++aligned_matrices;
    }
  }
  CHECK(aligned_matrices > 8);
  size_t declared = 0;
  for (const ParameterEntry& e : p.entries()) declared += e.size;
  CHECK(p.parameter_count() == declared);
}

TEST_CASE("the weights the GPU layers multiply as one matrix are adjacent: wq | wk | wv and w_gate | w_up",
          "[model]") {
  // widths and hidden sizes whose matrices are, and are not, multiples of the alignment
  for (const auto& [width, hidden] : {std::pair<int64_t, int64_t>{8, 12}, {20, 30}, {36, 7}, {64, 171}}) {
    for (const std::string encoding : {"nope", "path_fox"}) {
      ModelConfig c = testing::tiny_config(encoding);
      c.d_model = width;
      c.mlp_hidden = hidden;
      c = ModelConfig::from_json(c.to_json(), "test model");
      const Transformer<double> model(c);
      const ParameterSet<double>& p = model.params();
      auto follows = [&](const std::string& first, const std::string& next) {
        const ParameterEntry& a = p.entry(p.find(first));
        return p.entry(p.find(next)).offset == a.offset + a.size;
      };
      for (int64_t l = 0; l < c.n_layers; ++l) {
        const std::string prefix = "layers." + std::to_string(l) + ".";
        INFO("width " << width << ", hidden " << hidden << ", " << encoding << ", layer " << l);
        CHECK(follows(prefix + "attn.wq", prefix + "attn.wk"));
        CHECK(follows(prefix + "attn.wk", prefix + "attn.wv"));
        CHECK(follows(prefix + "mlp.w_gate", prefix + "mlp.w_up"));
      }
    }
  }
}

TEST_CASE("the non-finite gradient diagnosis names the tensors nearest the output, with their counts", "[model]") {
  ParameterSet<float> p;
  const auto embed = p.add("embed", {4, 2});
  const auto mid = p.add("mid", {3});
  const auto late = p.add("late", {2, 4});  // 8 values: aligned, after a gap of 5 behind mid
  const auto head = p.add("head", {5});
  CHECK(describe_non_finite_gradients(p).empty());
  // The alignment gaps are not part of any tensor: a NaN there is not reported.
  p.grads()[p.entry(mid).offset + 3] = std::nanf("");
  CHECK(describe_non_finite_gradients(p).empty());

  p.grads()[p.entry(embed).offset + 7] = std::numeric_limits<float>::infinity();
  p.grads()[p.entry(mid).offset] = std::nanf("");
  p.grads()[p.entry(late).offset + 1] = -std::numeric_limits<float>::infinity();
  p.grads()[p.entry(late).offset + 3] = std::nanf("");
  CHECK(describe_non_finite_gradients(p) ==
        "non-finite gradients in 3 of 4 tensors; nearest the output: late (2 of 8), mid (1 of 3), embed (1 of 8)");
  CHECK(describe_non_finite_gradients(p, 1) == "non-finite gradients in 3 of 4 tensors; nearest the output: late (2 of 8), …");
  p.grads()[p.entry(head).offset + 4] = std::nanf("");
  CHECK(describe_non_finite_gradients(p, 2) ==
        "non-finite gradients in 4 of 4 tensors; nearest the output: head (1 of 5), late (2 of 8), …");
}
