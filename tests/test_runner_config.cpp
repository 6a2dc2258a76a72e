// Run configs: strict validation (every class of error names the file, the key and the value),
// validation of every expanded run, duplicate runs, and stable ids and hashes.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/model/transformer.h"
#include "experiments/json_path.h"
#include "experiments/run_memory.h"
#include "experiments/run_plan.h"
#include "tests/runner_fixture.h"

using namespace pathbench;
using namespace pathbench::testing;

namespace {

std::vector<PlannedRun> plan(const json& doc, const std::vector<std::string>& sets = {}) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  return plan_runs(doc, overrides, "cfg.json", fixture_tasks());
}

// The error message of planning `doc` after setting `key` to `value` (JSON text).
std::string error_after(const std::string& key, const std::string& value) {
  json doc = tiny_run_config();
  set_dotted(doc, key, json::parse(value), "test");
  try {
    plan(doc);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("the tiny config is valid and resolves every default", "[runner]") {
  const auto runs = plan(tiny_run_config());
  REQUIRE(runs.size() == 1);
  const RunConfig& c = runs[0].config;
  CHECK(c.model.n_layers == 1);
  CHECK(c.task == json{{"name", "parity"}, {"length", 6}, {"fail_at_example", -1}, {"kill_at_example", -1}});
  CHECK(c.optimizer.lr == 0.01);
  CHECK(c.optimizer.adamw.beta2 == 0.95);
  CHECK(c.training.eval_every == 3);
  CHECK(c.doc["optimizer"]["clip_norm"] == 1.0);
  CHECK(c.doc["schedule"]["min_lr_ratio"] == 0.1);
  CHECK(runs[0].label == "run 1 of 1");
}

TEST_CASE("each class of config error names the file, the key and the value", "[runner]") {
  using Catch::Contains;
  // unknown keys, at the top and in blocks
  CHECK_THAT(error_after("modle", "{}"), Contains("cfg.json") && Contains("'modle'"));
  CHECK_THAT(error_after("model.n_layer", "2"), Contains("cfg.json: model") && Contains("'n_layer'"));
  CHECK_THAT(error_after("training.stpes", "2"), Contains("cfg.json: training") && Contains("'stpes'"));
  CHECK_THAT(error_after("task.lenght", "2"), Contains("cfg.json: task") && Contains("'lenght'"));
  CHECK_THAT(error_after("model.encoding_options.bas", "2"),
             Contains("cfg.json: model.encoding_options") && Contains("'bas'"));
  // wrong types
  CHECK_THAT(error_after("training.steps", "\"ten\""),
             Contains("cfg.json: training") && Contains("'steps'") && Contains("\"ten\"") && Contains("wrong type"));
  CHECK_THAT(error_after("seed", "1.5"), Contains("'seed'") && Contains("1.5") && Contains("wrong type"));
  CHECK_THAT(error_after("optimizer", "[1]"), Contains("'optimizer'") && Contains("[1]"));
  // out of range
  CHECK_THAT(error_after("optimizer.beta2", "1.0"),
             Contains("cfg.json: optimizer") && Contains("'beta2'") && Contains("1.0") && Contains("out of range"));
  CHECK_THAT(error_after("optimizer.lr", "0"), Contains("'lr'") && Contains("out of range"));
  CHECK_THAT(error_after("training.batch_size", "0"), Contains("'batch_size'") && Contains("out of range"));
  CHECK_THAT(error_after("device", "\"tpu\""), Contains("'device'") && Contains("\"tpu\""));
  CHECK_THAT(error_after("task.length", "0"), Contains("cfg.json: task") && Contains("'length'"));
  // unknown names, missing required keys
  CHECK_THAT(error_after("model.encoding", "\"ropee\""), Contains("cfg.json: model") && Contains("ropee"));
  CHECK_THAT(error_after("task.name", "\"parrity\""),
             Contains("cfg.json: task") && Contains("'parrity'") && Contains("parity"));
  json no_task = tiny_run_config();
  no_task.erase("task");
  CHECK_THROWS_WITH(plan(no_task), Contains("cfg.json") && Contains("missing required key 'task'"));
  // combinations: encoding and head dimension, heads and width, vocabulary and task
  CHECK_THAT(error_after("model.d_model", "6"), Contains("cfg.json: model") && Contains("rope") &&
                                                    Contains("head dimension 3"));
  CHECK_THAT(error_after("model.n_heads", "3"), Contains("'n_heads'") && Contains("3") && Contains("divide"));
  CHECK_THAT(error_after("model.vocab_size", "1"),
             Contains("cfg.json: model") && Contains("'vocab_size'") && Contains("1") && Contains("at least 2"));
}

TEST_CASE("every expanded run is validated before anything runs, naming the run", "[runner]") {
  json doc = tiny_run_config();
  doc["grid"] = json{{"model.d_model", {16, 32, 6}}};
  try {
    plan(doc);
    FAIL("an invalid run was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("cfg.json [run 3 of 3 (model.d_model=6)]: model") &&
                             Catch::Contains("head dimension 3"));
  }
  doc["grid"] = json{{"seed", {1, 2, 1}}};
  CHECK_THROWS_WITH(plan(doc), Catch::Contains("run 1 of 3") && Catch::Contains("run 3 of 3") &&
                                   Catch::Contains("same run") && Catch::Contains("(grid: seed × 3)"));
  // A key moved from zip to grid by --set leaves its zipped partner behind: the message shows both blocks.
  doc["grid"] = json{{"seed", {0}}};
  doc["zip"] = json{{"model.n_layers", {1, 2}}, {"optimizer.lr", {0.001, 0.001}}};
  CHECK_THROWS_WITH(plan(doc, {"grid.model.n_layers=[1,2]"}),
                    Catch::Contains("same run") &&
                        Catch::Contains("(grid: seed × 1, model.n_layers × 2; zip: optimizer.lr × 2)"));
}

TEST_CASE("run ids are readable and hashes identify the semantic config", "[runner]") {
  const PlannedRun base = plan(tiny_run_config())[0];
  CHECK(base.id == "parity-rope-L1-d16-s0");
  CHECK(base.hash.size() == 8);
  CHECK(base.hash.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(base.file_stem() == base.id + "-" + base.hash);
  // A tripwire: changing how configs are canonicalized or hashed changes every run's file name and
  // orphans existing results. Update deliberately.
  CHECK(base.hash == "378df8a0");

  auto hash_with = [](const std::vector<std::string>& sets) { return plan(tiny_run_config(), sets)[0].hash; };
  // Same semantics written differently: defaults spelled out, key order, non-semantic keys.
  CHECK(hash_with({"optimizer.beta1=0.9", "model.encoding_options={\"base\": 10000}", "training.eval_seed=0"}) ==
        base.hash);
  CHECK(hash_with({"threads=2", "training.log_every=1", "training.checkpoint_every=3"}) == base.hash);
  // (width 32: head dimension 16, which device cuda takes)
  CHECK(hash_with({"model.d_model=32", "device=cuda"}) == hash_with({"model.d_model=32"}));
  json reordered = json::parse(tiny_run_config().dump());  // keys are kept sorted: order cannot matter
  CHECK(plan(reordered)[0].hash == base.hash);
  // A name prefixes the id but not the hash.
  const PlannedRun named = plan(tiny_run_config(), {"name=demo"})[0];
  CHECK(named.id == "demo-parity-rope-L1-d16-s0");
  CHECK(named.hash == base.hash);
  // Anything semantic changes it.
  for (const char* change : {"seed=1", "optimizer.lr=0.02", "model.encoding_options.base=500", "task.length=7",
                             "training.eval_examples=9", "schedule.min_lr_ratio=0.5"})
    CHECK(hash_with({change}) != base.hash);
}

TEST_CASE("the CPU memory estimate counts the model's parameters, and a run too large is refused at validation",
          "[runner]") {
  using Catch::Contains;
  for (const char* mlp : {"swiglu", "gelu"})
    for (bool tied : {false, true}) {
      ModelConfig config;
      config.vocab_size = 11, config.n_layers = 3, config.d_model = 32, config.n_heads = 4, config.mlp = mlp;
      config.tie_embeddings = tied, config.encoding = "rope";
      config = ModelConfig::from_json(config.to_json(), "test model");
      const Transformer<float> model(config);
      const RunMemoryEstimate e = estimate_cpu_run_memory(config, 100);
      CHECK(e.parameter_bytes == 16.0 * double(model.params().count()));
      CHECK(e.activation_bytes > 4.0 * 100 * 2 * 11);
    }
  // An MLP of 2^30 hidden units needs hundreds of GiB for its parameters alone.
  const std::string error = error_after("model.mlp_hidden", "1073741824");
  CHECK_THAT(error, Contains("cfg.json") && Contains("GiB of memory") && Contains("GiB of parameters"));
  CHECK_THROWS_WITH(check_cpu_run_fits(RunMemoryEstimate{3.0 * (1 << 30), 1.0 * (1 << 30)}, 2.0 * (1 << 30), "here"),
                    Contains("here: the run needs at least 4.0 GiB") && Contains("this machine's 2.0 GiB"));
  CHECK_NOTHROW(check_cpu_run_fits(RunMemoryEstimate{1.0, 1.0}, 2.0, "here"));
}
