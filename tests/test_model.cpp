// The whole transformer: gradient check over every parameter for every registered encoding (float64,
// tiny model), overfitting a fixed batch, bit-identical reruns, and checkpoint round trips.
#include <catch2/catch.hpp>

#include <cmath>

#include <cstdio>
#include <filesystem>
#include <omp.h>

#include "core/attention/registry.h"
#include "core/error.h"
#include "core/optim/trainer.h"
#include "experiments/checkpoint.h"
#include "experiments/file_output.h"
#include "tests/test_support.h"

using namespace pathbench;
using namespace pathbench::testing;

namespace {

ModelConfig tiny_config(const std::string& encoding, const std::string& mlp = "swiglu") {
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

TokenBatch tiny_batch(int64_t batch, int64_t length, int64_t vocab, uint64_t seed) {
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

}  // namespace

TEST_CASE("whole-model gradients match finite differences for every encoding", "[model]") {
  SingleThread single;
  struct Variant {
    std::string encoding, mlp;
    bool tied;
  };
  // Every encoding with the default MLP; the MLP and head variants once.
  std::vector<Variant> variants = {{"nope", "gelu", false}, {"nope", "swiglu", true}};
  for (const std::string& name : encoding_names()) variants.push_back({name, "swiglu", false});
  for (const auto& [name, mlp, tied] : variants) {
    CAPTURE(name, mlp, tied);
    ModelConfig config = tiny_config(name, mlp);
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
}

TEST_CASE("a tiny model overfits a fixed batch", "[model]") {
  ModelConfig config = tiny_config("rope");
  config.d_model = 32;
  config.n_heads = 4;
  config.mlp_hidden = 64;
  config.init_std = 0.02;
  Transformer<float> model(config);
  model.init_parameters(5);
  Trainer<float> trainer(model, AdamWConfig{0.9, 0.98, 1e-8, 0.0}, LrSchedule{1e-2, 10, 300, 0.1}, 1.0);
  TokenBatch batch = tiny_batch(4, 12, config.vocab_size, 6);
  double first = trainer.step(batch).loss, last = 0;
  for (int s = 1; s < 300; ++s) last = trainer.step(batch).loss;
  CHECK(first > 1.0);
  CHECK(last < 0.02);
}

TEST_CASE("the same seed gives bit-identical losses", "[model]") {
  for (const std::string& name : encoding_names()) {
    CAPTURE(name);
    auto run = [&]() {
      ModelConfig config = tiny_config(name);
      Transformer<float> model(config);
      model.init_parameters(11);
      Trainer<float> trainer(model, AdamWConfig{}, LrSchedule{3e-3, 2, 10, 0.1}, 1.0);
      std::vector<double> losses;
      for (int s = 0; s < 6; ++s) losses.push_back(trainer.step(tiny_batch(3, 33, config.vocab_size, 100 + s)).loss);
      return losses;
    };
    auto a = run(), b = run();
    REQUIRE(a == b);
  }
}

TEST_CASE("checkpoints round-trip parameters, config and optimizer state", "[model][checkpoint]") {
  const std::string path = (std::filesystem::temp_directory_path() / "pathbench-test-ckpt.safetensors").string();
  ModelConfig config = tiny_config("rope");
  Transformer<float> model(config);
  model.init_parameters(21);
  Trainer<float> trainer(model, AdamWConfig{}, LrSchedule{1e-3, 0, 10, 0.1}, 1.0);
  trainer.step(tiny_batch(2, 5, config.vocab_size, 1));
  save_checkpoint(path, model, &trainer.optimizer(), {{"note", "test"}});

  LoadedCheckpoint loaded = load_checkpoint(path);
  CHECK(loaded.model->config().to_json() == config.to_json());
  CHECK(loaded.model->params().values() == model.params().values());
  CHECK(loaded.metadata.at("note") == "test");
  AdamW<float> restored(loaded.model->params(), AdamWConfig{});
  load_optimizer_state(path, *loaded.model, restored);
  CHECK(restored.steps() == 1);
  CHECK(restored.first_moment() == trainer.optimizer().first_moment());
  CHECK(restored.second_moment() == trainer.optimizer().second_moment());

  // A model with a NaN weight is refused, naming the tensor.
  Transformer<float> poisoned(config);
  poisoned.params().values() = model.params().values();
  poisoned.params().values()[3] = std::nanf("");
  save_checkpoint(path, poisoned, nullptr);
  CHECK_THROWS_WITH(load_checkpoint(path), Catch::Contains("non-finite value") && Catch::Contains("flat index 3"));
  save_checkpoint(path, model, &trainer.optimizer(), {{"note", "test"}});

  // Corrupt and truncated files are rejected with an error naming the file.
  std::string bytes = read_file(path);
  write_file_atomically(path, bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(load_checkpoint(path), Catch::Contains(path));
  write_file_atomically(path, "not a checkpoint");
  CHECK_THROWS_AS(load_checkpoint(path), Error);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(load_checkpoint(path), Catch::Contains("cannot read"));
}
