// Keeping the checkpoint before a gradient spike (training.spike_grad_norm) and replaying a run's
// steps from a checkpoint (pathbench replay): the replay retakes the run's own steps bit-identically
// on the CPU (every repeated pass too), recovers per-tensor norms from clipped gradients, and refuses
// what does not fit.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/io/safetensors.h"
#include "experiments/checkpoint.h"
#include "experiments/file_output.h"
#include "experiments/replay.h"
#include "experiments/result_file.h"
#include "experiments/run_plan.h"
#include "experiments/sweep_runner.h"
#include "tests/runner_fixture.h"

using namespace pathbench;
using namespace pathbench::testing;
namespace fs = std::filesystem;

namespace {

// The tiny run, logging every step, checkpointing every 2 steps, clipping every step's gradient.
json spiky_config(double spike_grad_norm) {
  json doc = tiny_run_config();
  doc["training"]["log_every"] = 1;
  doc["training"]["checkpoint_every"] = 2;
  doc["training"]["spike_grad_norm"] = spike_grad_norm;
  doc["optimizer"]["clip_norm"] = 1e-3;
  return doc;
}

PlannedRun plan_one(const json& doc) { return plan_runs(doc, {}, "cfg.json", fixture_tasks()).at(0); }

void run_sweep_quietly(const PlannedRun& run, const std::string& dir) {
  SweepOptions options;
  options.out_dir = dir;
  options.config_file = "cfg.json";
  options.tasks = fixture_tasks();
  SweepProgress quiet(nullptr, SweepProgress::Mode::Quiet);
  run_sweep({run}, options, quiet);
}

}  // namespace

TEST_CASE("a spike keeps the checkpoint before it, and a replay from it retakes the run's steps exactly",
          "[runner]") {
  const std::string dir = fresh_temp_dir("spike");
  const PlannedRun run = plan_one(spiky_config(1e-9));  // every step's norm exceeds it
  run_sweep_quietly(run, dir);
  const RunFiles files = run_files(dir, run);
  REQUIRE(fs::exists(files.spike_checkpoint));

  // Steps 1-2 had no checkpoint to keep; step 3 is the first spike with one (step 2's).
  const std::vector<json> curve = curve_lines(files.curve);
  std::vector<json> spikes, steps;
  for (const json& line : curve) {
    if (line.contains("spike")) spikes.push_back(line);
    if (line.contains("loss")) steps.push_back(line);
  }
  REQUIRE(spikes.size() == 1);
  CHECK(spikes[0]["step"] == 3);
  CHECK(spikes[0]["spike"]["checkpoint_step"] == 2);
  CHECK(spikes[0]["spike"]["checkpoint"] == fs::path(files.spike_checkpoint).filename().string());
  REQUIRE(steps.size() == 6);

  const auto task = fixture_tasks().make(run.config.task, "test");
  const Replay replay = replay_training(run.config, *task, files.spike_checkpoint, 4);
  CHECK(replay.checkpoint_step == 2);
  REQUIRE(replay.steps.size() == 4);
  for (const ReplayedStep& s : replay.steps) {
    INFO("step " << s.step);
    const json& logged = steps.at(size_t(s.step - 1));
    CHECK(s.loss == logged["loss"].get<double>());
    CHECK(s.grad_norm == logged["grad_norm"].get<double>());
    CHECK(s.lr == logged["lr"].get<double>());
    // Clipping scaled the kept gradients by 1e-3 / norm; the per-tensor norms undo it.
    double ss = 0;
    for (const auto& [name, norm] : s.tensor_grad_norms) ss += norm * norm;
    CHECK(std::sqrt(ss) == Approx(s.grad_norm).epsilon(1e-5));
    CHECK(s.grad_norm > 1e-3);
    CHECK(s.non_finite.empty());
  }
  CHECK(replay.steps.front().step == 3);
  const json doc = replay_to_json(replay);
  CHECK(doc["steps"][0]["tensor_grad_norms"].size() == replay.steps[0].tensor_grad_norms.size());
  CHECK_FALSE(doc.contains("repeats"));

  // Repeated passes start again from the checkpoint's state: on the CPU each equals the first.
  const Replay again = replay_training(run.config, *task, files.spike_checkpoint, 4, 3);
  REQUIRE(again.repeats.size() == 2);
  for (const auto& pass : again.repeats) {
    REQUIRE(pass.size() == 4);
    for (size_t k = 0; k < pass.size(); ++k) {
      CHECK(pass[k].step == again.steps[k].step);
      CHECK(pass[k].loss == again.steps[k].loss);
      CHECK(pass[k].grad_norm == again.steps[k].grad_norm);
    }
  }
  CHECK(again.steps[0].loss == replay.steps[0].loss);
  CHECK(replay_to_json(again)["repeats"].size() == 2);
}

TEST_CASE("no spike above the threshold keeps nothing, a rerun of a failed run drops an old copy", "[runner]") {
  const std::string dir = fresh_temp_dir("no-spike");
  const PlannedRun run = plan_one(spiky_config(1e9));
  run_sweep_quietly(run, dir);
  const RunFiles files = run_files(dir, run);
  CHECK(fs::exists(files.result));
  CHECK_FALSE(fs::exists(files.spike_checkpoint));
  for (const json& line : curve_lines(files.curve)) CHECK_FALSE(line.contains("spike"));

  // A failed run tried again starts afresh: a spike copy of the failed attempt goes with it.
  json failed = json::parse(read_file(files.result));
  failed["status"] = "failed";
  write_file_atomically(files.result, failed.dump());
  write_file_atomically(files.spike_checkpoint, "left by the failed attempt");
  run_sweep_quietly(run, dir);
  CHECK(json::parse(read_file(files.result))["status"] == "done");
  CHECK_FALSE(fs::exists(files.spike_checkpoint));
}

TEST_CASE("spike_grad_norm needs checkpoints and leaves the run hash alone", "[runner]") {
  json doc = tiny_run_config();
  doc["training"]["spike_grad_norm"] = 10.0;
  CHECK_THROWS_WITH(plan_one(doc), Catch::Contains("'spike_grad_norm'") && Catch::Contains("'checkpoint_every' is 0"));
  doc["training"]["checkpoint_every"] = 2;
  CHECK(plan_one(doc).hash == plan_one(tiny_run_config()).hash);
}

TEST_CASE("a replay refuses a checkpoint of another model, and a config of several runs", "[runner]") {
  const std::string dir = fresh_temp_dir("replay-errors");
  const PlannedRun small = plan_one(spiky_config(1e-9));
  run_sweep_quietly(small, dir);
  json wide = spiky_config(1e-9);
  wide["model"]["d_model"] = 32;
  const PlannedRun other = plan_one(wide);
  const auto task = fixture_tasks().make(other.config.task, "test");
  const std::string checkpoint = run_files(dir, small).checkpoint;
  CHECK_THROWS_WITH(replay_training(other.config, *task, checkpoint, 1),
                    Catch::Contains(checkpoint) && Catch::Contains("do not fit the run's model"));

  // Through the CLI: a sweep of two runs is refused, naming the count.
  const std::string config = dir + "/flip.json";
  write_file_atomically(config, R"({"model": {"n_layers": 1, "d_model": 16, "n_heads": 2},
    "task": {"name": "flipflop", "length": 16}, "training": {"steps": 2, "batch_size": 2, "eval_examples": 4,
    "checkpoint_every": 1}, "grid": {"seed": [0, 1]}, "threads": 1})");
  cli({"run", config, "--out", dir + "/results", "--set", "seed=1"});
  const std::vector<json> results = load_results(dir + "/results");
  REQUIRE(results.size() == 1);
  const std::string stem = dir + "/results/" + results[0]["id"].get<std::string>() + "-" +
                           results[0]["hash"].get<std::string>();
  const std::string own = stem + ".ckpt.safetensors";
  CHECK_THROWS_WITH(cli({"replay", own, "--config", config}), Catch::Contains("describes 2 runs"));
  // The checkpoint names its run; a config narrowed to that run, or its result JSON, say the same.
  cli({"replay", own, "--steps", "1", "--out", dir + "/r.json"});
  cli({"replay", own, "--steps", "2", "--repeat", "2", "--out", dir + "/r3.json"});
  CHECK(json::parse(read_file(dir + "/r3.json"))["repeats"][0] == json::parse(read_file(dir + "/r3.json"))["steps"]);
  CHECK_THROWS(cli({"replay", own, "--repeat", "0"}));
  // A recorded attention call: layer 0's at the first step above the bound, in pathbench op's form;
  // none when no step passes it; a missing layer is named before any step.
  cli({"replay", own, "--steps", "1", "--record-attention", dir + "/call", "--record-above", "0"});
  CHECK(parse_safetensors(read_file(dir + "/call.inputs.safetensors"), "call").metadata.at("op") == "rope");
  CHECK(parse_safetensors(read_file(dir + "/call.outputs.safetensors"), "call").tensors.count("dq") == 1);
  cli({"replay", own, "--steps", "1", "--record-attention", dir + "/none", "--record-above", "1e30"});
  CHECK_FALSE(std::filesystem::exists(dir + "/none.inputs.safetensors"));
  CHECK_THROWS_WITH(cli({"replay", own, "--record-attention", dir + "/bad", "--record-layer", "1"}),
                    Catch::Contains("--record-layer 1: the model has layers 0–0"));
  CHECK_FALSE(std::filesystem::exists(dir + "/bad.inputs.safetensors"));
  const json replayed = json::parse(read_file(dir + "/r.json"));
  CHECK(replayed["checkpoint_step"] == 2);
  CHECK(replayed["steps"][0]["step"] == 3);
  CHECK(replayed["steps"][0]["loss"].is_number());
  cli({"replay", own, "--config", config, "--set", "seed=1", "--steps", "1", "--out", dir + "/r1.json"});
  cli({"replay", own, "--config", stem + ".json", "--steps", "1", "--out", dir + "/r2.json"});
  CHECK(json::parse(read_file(dir + "/r1.json"))["steps"] == replayed["steps"]);
  CHECK(json::parse(read_file(dir + "/r2.json"))["steps"] == replayed["steps"]);
  // A checkpoint without a run config (as older ones are) needs --config.
  save_checkpoint(dir + "/bare.safetensors", *load_checkpoint(own).model, nullptr);
  CHECK_THROWS_WITH(cli({"replay", dir + "/bare.safetensors"}), Catch::Contains("holds no run config"));
}
