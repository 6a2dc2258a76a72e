// The whole transformer: gradient check over every parameter for every registered encoding (float64,
// tiny model; tests/model_checks.h), overfitting a fixed batch, bit-identical reruns, and checkpoint
// round trips.
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
#include "tests/model_checks.h"
#include "tests/test_support.h"

using namespace pathbench;
using namespace pathbench::testing;

TEST_CASE("whole-model gradients match finite differences for every encoding", "[model]") {
  SingleThread single;
  // Every encoding with the default MLP; the MLP and head variants once.
  check_model_gradients("nope", "gelu", false);
  check_model_gradients("nope", "swiglu", true);
  for (const std::string& name : encoding_names()) check_model_gradients(name, "swiglu", false);
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
  for (const std::string& name : encoding_names()) check_bit_identical_reruns(name);
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
