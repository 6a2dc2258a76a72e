// Whole-model checks shared by the model tests and the test that registers its own encoding: a
// tiny model and batch, the gradient of every parameter against central finite differences
// (float64), and bit-identical reruns from one seed.
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/model/transformer.h"
#include "core/optim/trainer.h"
#include "core/rng.h"
#include "tests/test_support.h"

namespace pathbench::testing {

inline ModelConfig tiny_config(const std::string& encoding, const std::string& mlp = "swiglu") {
  ModelConfig c;
  c.vocab_size = 6;
  c.n_layers = 2;
  c.d_model = 8;
  c.n_heads = 2;
  c.mlp = mlp;
  c.mlp_hidden = 12;
  c.encoding = encoding;
  c.init_std = 0.3;  // large enough that attention is far from uniform
  return ModelConfig::from_json(c.to_json(), "test model");
}

inline TokenBatch tiny_batch(int64_t batch, int64_t length, int64_t vocab, uint64_t seed) {
  CounterRng rng(seed, "batch");
  TokenBatch b;
  b.batch = batch;
  b.length = length;
  for (int64_t i = 0; i < batch * length; ++i) {
    b.tokens.push_back(int32_t(rng.below(vocab)));
    b.targets.push_back(int32_t(rng.below(vocab)));
    b.weights.push_back(i % 3 == 1 ? 0.0f : 1.0f);  // some positions unscored
  }
  return b;
}

// Every parameter's gradient of the float64 tiny model against central finite differences.
inline void check_model_gradients(const std::string& encoding, const std::string& mlp, bool tied) {
  CAPTURE(encoding, mlp, tied);
  ModelConfig config = tiny_config(encoding, mlp);
  config.tie_embeddings = tied;
  Transformer<double> model(config);
  model.init_parameters(3);
  TokenBatch batch = tiny_batch(2, 7, config.vocab_size, 4);
  model.params().zero_grad();
  model.forward_loss(batch);
  model.backward();
  std::vector<double> analytic = model.params().grads();
  std::vector<double>& values = model.params().values();
  auto numeric = finite_difference(values, [&]() { return model.forward_loss(batch); });
  for (const auto& e : model.params().entries()) {
    std::vector<double> a(analytic.begin() + e.offset, analytic.begin() + e.offset + e.size);
    std::vector<double> n(numeric.begin() + e.offset, numeric.begin() + e.offset + e.size);
    CAPTURE(e.name);
    // Central differences carry ≈ ε·|loss|/h ≈ 4e-10 of rounding per entry: tensors with small
    // gradients (FoX gates near 1 pass σ(−b) ≈ 0.007 of the signal) are held to that floor instead.
    std::vector<double> diff(a.size());
    for (size_t i = 0; i < a.size(); ++i) diff[i] = a[i] - n[i];
    CHECK(norm(diff) < 1e-6 * norm(n) + 1e-8);
  }
}

// Two float runs of six training steps from one seed give bit-identical losses.
inline void check_bit_identical_reruns(const std::string& encoding) {
  CAPTURE(encoding);
  auto run = [&]() {
    ModelConfig config = tiny_config(encoding);
    Transformer<float> model(config);
    model.init_parameters(11);
    Trainer<float> trainer(model, AdamWConfig{}, LrSchedule{3e-3, 2, 10, 0.1}, 1.0);
    std::vector<double> losses;
    for (int s = 0; s < 6; ++s) losses.push_back(trainer.step(tiny_batch(3, 33, config.vocab_size, 100 + s)).loss);
    return losses;
  };
  const auto a = run(), b = run();
  REQUIRE(a == b);
}

}  // namespace pathbench::testing
