// Running sweeps of a tiny model end to end: result files and curves, determinism, resume after a
// kill, NaN and failing runs, sharding, and devices.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "core/device.h"
#include "core/error.h"
#include "experiments/file_output.h"
#include "experiments/process.h"
#include "experiments/result_file.h"
#include "experiments/results_table.h"
#include "experiments/run_metadata.h"
#include "experiments/sweep_runner.h"
#include "tests/runner_fixture.h"

using namespace pathbench;
using namespace pathbench::testing;
namespace fs = std::filesystem;

namespace {

std::vector<PlannedRun> plan(const json& doc) { return plan_runs(doc, {}, "cfg.json", fixture_tasks()); }

SweepSummary run(const std::vector<PlannedRun>& runs, const std::string& dir, Shard shard = {}) {
  SweepOptions options;
  options.out_dir = dir;
  options.config_file = "cfg.json";
  options.shard = shard;
  options.tasks = fixture_tasks();
  SweepProgress quiet(nullptr, SweepProgress::Mode::Quiet);
  return run_sweep(runs, options, quiet);
}

// An environment holding only `vars`, for functions that take a getenv.
std::function<const char*(const char*)> env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// Sets an environment variable for its lifetime (restoring the earlier value or its absence).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

json sweep_of(const json& grid) {
  json doc = tiny_run_config();
  doc["grid"] = grid;
  return doc;
}

size_t count_files(const std::string& dir, const std::string& suffix) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    n += name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return n;
}

struct Killed {};  // not a std::exception: escapes train_run like a kill

// Stops the run (as a kill would) after `at` steps.
struct KillAt : RunObserver {
  int64_t at;
  explicit KillAt(int64_t step) : at(step) {}
  void on_step(int64_t step, int64_t, double, double) override {
    if (step == at) throw Killed{};
  }
};

}  // namespace

TEST_CASE("end to end: a two-run sweep trains, writes results and curves, and tabulates", "[runner]") {
  const std::string dir = fresh_temp_dir("e2e");
  const auto runs = plan(sweep_of(json{{"model.encoding", {"nope", "rope"}}}));
  REQUIRE(runs.size() == 2);
  const SweepSummary s = run(runs, dir);
  CHECK(s.planned == 2);
  CHECK(s.done == 2);
  CHECK(s.failed + s.nan + s.skipped == 0);
  CHECK(count_files(dir, ".json") == 2);
  CHECK(count_files(dir, ".curve.jsonl") == 2);

  for (const PlannedRun& r : runs) {
    const RunFiles files = run_files(dir, r);
    const json doc = json::parse(read_file(files.result));
    CHECK(doc["status"] == "done");
    CHECK(doc["failure"].is_null());
    CHECK(doc["id"] == r.id);
    CHECK(doc["hash"] == r.hash);
    CHECK(doc["config"] == r.config.semantic_json());
    CHECK(doc["axes"] == json{{"model.encoding", r.config.model.encoding}});
    CHECK(doc["seed"] == 0);
    CHECK(doc["device"] == "cpu");
    CHECK(doc["threads"] == 1);
    CHECK(doc["steps_done"] == 6);
    CHECK(doc["train_tokens"] == 6 * 4 * 6);
    CHECK(doc["tokens_per_s"].get<double>() > 0);
    CHECK(doc["parameters"].get<int64_t>() > 0);
    CHECK(doc["git"].contains("commit"));
    CHECK(doc["git"].contains("dirty"));
    CHECK(doc["build"]["flags"].is_string());
    CHECK(doc["start"].get<std::string>().size() == 20);
    CHECK(doc["wall_time_s"].get<double>() > 0);
    CHECK(doc["eval_splits"] == json{"short", "long"});
    CHECK(doc["primary_metric"] == "error_rate");
    for (const char* split : {"short", "long"}) {
      const json& m = doc["metrics"][split];
      CHECK(m["scored"] == (std::string(split) == "short" ? 8 * 6 : 8 * 12));
      CHECK(m["error_rate"].get<double>() >= 0);
      CHECK(m["loss"].get<double>() > 0);
      CHECK(m["per_length"].size() == 1);
    }
    // The curve: training lines every 2 steps, evaluations at steps 3 and 6.
    const auto lines = curve_lines(files.curve);
    std::vector<int64_t> train_steps, eval_steps;
    for (const json& l : lines) {
      if (l.contains("eval")) {
        eval_steps.push_back(l["step"]);
        CHECK(l["eval"]["short"].contains("error_rate"));
        CHECK_FALSE(l["eval"]["short"].contains("per_length"));
      } else {
        train_steps.push_back(l["step"]);
        for (const char* key : {"loss", "lr", "grad_norm", "grad_norm_max", "tokens_per_s", "elapsed_s"})
          CHECK(l.contains(key));
        // the largest step norm of the window is at least its mean
        CHECK(l["grad_norm_max"].get<double>() >= l["grad_norm"].get<double>());
      }
    }
    CHECK(train_steps == std::vector<int64_t>{2, 4, 6});
    CHECK(eval_steps == std::vector<int64_t>{3, 6});
    CHECK(doc["final_train_loss"] == lines[lines.size() - 2]["loss"]);
  }

  const std::string table = results_table(load_results(dir), TableOptions{});
  CHECK_THAT(table, Catch::Contains("error_rate (%) by encoding and split") &&
                        Catch::Contains("| encoding \\ split | short | long |") && Catch::Contains("| nope |") &&
                        Catch::Contains("| rope |"));
  CHECK(table.find("| nope |") < table.find("| rope |"));
}

TEST_CASE("the last evaluation can use more examples, and training can stop early at a target", "[runner]") {
  const std::string dir = fresh_temp_dir("final-eval");
  json doc = tiny_run_config();
  doc["training"]["final_eval_examples"] = 20;
  const auto runs = plan(doc);
  REQUIRE(run(runs, dir).done == 1);
  json result = json::parse(read_file(run_files(dir, runs[0]).result));
  CHECK(result["metrics"]["short"]["scored"] == 20 * 6);
  CHECK(result["steps_done"] == 6);
  CHECK(result["stopped_early_at_step"].is_null());
  std::vector<int64_t> scored_in_curve;
  for (const json& l : curve_lines(run_files(dir, runs[0]).curve))
    if (l.contains("eval")) scored_in_curve.push_back(l["eval"]["short"]["scored"]);
  CHECK(scored_in_curve == std::vector<int64_t>{8 * 6, 20 * 6});  // periodic at step 3, final at step 6

  // error_rate is lower-is-better: a target of 1 is met at the first evaluation (step 3).
  doc["training"]["early_stop_split"] = "short";
  doc["training"]["early_stop_at"] = 1.0;
  const auto stopping = plan(doc);
  REQUIRE(run(stopping, dir).done == 1);
  result = json::parse(read_file(run_files(dir, stopping[0]).result));
  CHECK(result["steps_done"] == 3);
  CHECK(result["stopped_early_at_step"] == 3);
  CHECK(result["metrics"]["short"]["scored"] == 20 * 6);  // the final evaluation, at the stop
  // A target never met trains every step.
  doc["training"]["early_stop_at"] = -1.0;
  const auto never = plan(doc);
  REQUIRE(run(never, dir).done == 1);
  CHECK(json::parse(read_file(run_files(dir, never[0]).result))["steps_done"] == 6);

  doc["training"]["early_stop_split"] = "medium";
  CHECK_THROWS_WITH(plan(doc), Catch::Contains("'early_stop_split' has value \"medium\"") &&
                                   Catch::Contains("short, long"));
  doc["training"]["early_stop_split"] = "short";
  doc["training"]["eval_every"] = 0;
  CHECK_THROWS_WITH(plan(doc), Catch::Contains("'eval_every' is 0"));
}

TEST_CASE("the same config and seed give bit-identical losses", "[runner]") {
  const auto runs = plan(tiny_run_config());
  const std::string a = fresh_temp_dir("same-a"), b = fresh_temp_dir("same-b");
  REQUIRE(run(runs, a).done == 1);
  REQUIRE(run(runs, b).done == 1);
  const auto la = curve_values(run_files(a, runs[0]).curve), lb = curve_values(run_files(b, runs[0]).curve);
  REQUIRE(la.size() >= 4);  // training lines and evaluations, so there is something to compare
  CHECK(la == lb);
  const json ra = json::parse(read_file(run_files(a, runs[0]).result)),
             rb = json::parse(read_file(run_files(b, runs[0]).result));
  CHECK(ra["metrics"] == rb["metrics"]);
  CHECK(ra["final_train_loss"] == rb["final_train_loss"]);
  // and a different seed gives different losses
  const auto other = plan_runs(tiny_run_config(), {{"seed", 1}}, "cfg.json", fixture_tasks());
  REQUIRE(run(other, a).done == 1);
  const auto lc = curve_lines(run_files(a, other[0]).curve);
  REQUIRE_FALSE(lc.empty());
  CHECK(lc[0]["loss"] != curve_lines(run_files(a, runs[0]).curve)[0]["loss"]);
}

TEST_CASE("the same config and seed give the same result in separate processes", "[runner]") {
  // Two `pathbench run` processes: nothing process-wide (remembered held-out draws, thread pools)
  // changes a result.
  const std::string dir = fresh_temp_dir("same-process"), config = dir + "/cfg.json";
  json doc = tiny_run_config();
  doc["task"] = json{{"name", "flipflop"}, {"length", 16}};  // a task of the binary's own registry
  write_file_atomically(config, doc.dump());
  for (const char* out : {"/a", "/b"})
    REQUIRE(run_process({PATHBENCH_PROGRAM, "run", config, "--out", dir + out}, true).exit_code == 0);
  const auto results_a = load_results(dir + "/a"), results_b = load_results(dir + "/b");
  REQUIRE(results_a.size() == 1);
  REQUIRE(results_b.size() == 1);
  CHECK(results_a[0]["metrics"] == results_b[0]["metrics"]);
  CHECK(results_a[0]["final_train_loss"] == results_b[0]["final_train_loss"]);
}

TEST_CASE("CPU results do not depend on the thread count", "[runner]") {
  // Large enough that the products and the PaTH conv gradient split into several blocks.
  json doc = tiny_run_config();
  doc["model"]["d_model"] = 48;
  doc["task"]["length"] = 12;
  doc["training"]["batch_size"] = 8;
  for (const char* encoding : {"rope", "sba", "path_fox"}) {
    INFO(encoding);
    doc["model"]["encoding"] = encoding;
    std::vector<std::vector<json>> curves;
    std::vector<json> metrics;
    for (int threads : {1, 2, 3}) {
      doc["threads"] = threads;
      const auto runs = plan(doc);
      const std::string dir = fresh_temp_dir(std::string("threads-") + encoding + std::to_string(threads));
      REQUIRE(run(runs, dir).done == 1);
      curves.push_back(curve_values(run_files(dir, runs[0]).curve));
      const json result = json::parse(read_file(run_files(dir, runs[0]).result));
      CHECK(result["threads"] == threads);  // the count asked for is the one the run used
      metrics.push_back(result["metrics"]);
    }
    CHECK(curves[1] == curves[0]);
    CHECK(curves[2] == curves[0]);
    CHECK(metrics[1] == metrics[0]);
    CHECK(metrics[2] == metrics[0]);
  }
}

TEST_CASE("drawing batches ahead (PATHBENCH_PREFETCH=on) gives the same results", "[runner]") {
  json doc = tiny_run_config();
  doc["training"]["eval_examples"] = 10;  // three evaluation batches of 4, 4 and 2
  doc["training"]["final_eval_examples"] = 13;
  const auto runs = plan(doc);
  std::vector<std::vector<json>> curves;
  std::vector<json> metrics;
  for (const char* mode : {"off", "on"}) {
    const ScopedEnv prefetch("PATHBENCH_PREFETCH", mode);
    const std::string dir = fresh_temp_dir(std::string("prefetch-") + mode);
    REQUIRE(run(runs, dir).done == 1);
    curves.push_back(curve_values(run_files(dir, runs[0]).curve));
    metrics.push_back(json::parse(read_file(run_files(dir, runs[0]).result))["metrics"]);
  }
  CHECK(curves[1] == curves[0]);
  CHECK(metrics[1] == metrics[0]);
  const ScopedEnv bad("PATHBENCH_PREFETCH", "sometimes");
  const std::string dir = fresh_temp_dir("prefetch-bad");
  REQUIRE(run(runs, dir).failed == 1);
  CHECK_THAT(read_file(run_files(dir, runs[0]).result), Catch::Contains("PATHBENCH_PREFETCH has value 'sometimes'"));
}

TEST_CASE("a killed sweep resumes: done runs kept, temp files ignored, no duplicates", "[runner]") {
  const std::string dir = fresh_temp_dir("resume");
  const auto runs = plan(sweep_of(json{{"seed", {0, 1, 2}}}));
  REQUIRE(run(runs, dir).done == 3);
  const std::string kept0 = read_file(run_files(dir, runs[0]).result);
  const std::string kept2 = read_file(run_files(dir, runs[2]).result);

  // Simulate a kill while run 1 was in flight: its result is missing, its curve is partial, and a
  // half-written temporary file of its result lies beside it.
  fs::remove(run_files(dir, runs[1]).result);
  write_file_atomically(run_files(dir, runs[1]).curve, "{\"step\": 2, \"loss\": 0.7}\n");
  {
    std::ofstream tmp(run_files(dir, runs[1]).result + ".tmp.4242");
    tmp << "{\"pathbench_result\": 1, \"status\": \"do";
  }
  SweepOptions options;
  options.out_dir = dir;
  options.config_file = "cfg.json";
  options.tasks = fixture_tasks();
  const auto states = shard_states(runs, options);
  REQUIRE(states.size() == 3);
  CHECK(states[0].previous == "done");
  CHECK(states[1].previous == "");
  CHECK(states[2].previous == "done");

  const SweepSummary s = run(runs, dir);
  CHECK(s.skipped == 2);
  CHECK(s.done == 1);
  CHECK(read_file(run_files(dir, runs[0]).result) == kept0);
  CHECK(read_file(run_files(dir, runs[2]).result) == kept2);
  CHECK(json::parse(read_file(run_files(dir, runs[1]).result))["status"] == "done");
  // Its curve is written afresh, the partial one's line gone: the same as a run that was never cut.
  const std::string fresh = fresh_temp_dir("resume-fresh");
  REQUIRE(run({runs[1]}, fresh).done == 1);
  CHECK(curve_values(run_files(dir, runs[1]).curve) == curve_values(run_files(fresh, runs[1]).curve));
  CHECK(curve_lines(run_files(dir, runs[1]).curve).size() == 5);
  CHECK(count_files(dir, ".json") == 3);
  CHECK(load_results(dir).size() == 3);

  // A third invocation has nothing to do.
  const SweepSummary again = run(runs, dir);
  CHECK(again.skipped == 3);
  CHECK(again.done == 0);
}

TEST_CASE("a run that goes NaN is recorded with its step and the sweep continues", "[runner]") {
  const std::string dir = fresh_temp_dir("nan");
  const auto runs = plan(sweep_of(json{{"optimizer.lr", {1e30, 0.01}}}));
  const SweepSummary s = run(runs, dir);
  CHECK(s.nan == 1);
  CHECK(s.done == 1);
  const json bad = json::parse(read_file(run_files(dir, runs[0]).result));
  CHECK(bad["status"] == "nan");
  CHECK(bad["failure"]["step"].get<int64_t>() >= 1);
  CHECK(bad["failure"]["step"].get<int64_t>() <= 6);
  CHECK_THAT(bad["failure"]["reason"].get<std::string>(), Catch::Contains("non-finite"));
  // The reason says which tensors' gradients went non-finite (an lr of 1e30 spoils every one).
  CHECK_THAT(bad["failure"]["reason"].get<std::string>(),
             Catch::Contains("non-finite gradients in") && Catch::Contains("nearest the output: "));
  CHECK(bad["steps_done"] == bad["failure"]["step"].get<int64_t>() - 1);
  CHECK(json::parse(read_file(run_files(dir, runs[1]).result))["status"] == "done");
  // A NaN run is not done: a rerun tries it again.
  CHECK(run(runs, dir).nan == 1);
}

TEST_CASE("a run that throws is recorded as failed with the reason and the sweep continues", "[runner]") {
  const std::string dir = fresh_temp_dir("fail");
  // Batch 4: example 9 belongs to step 3.
  const auto runs = plan(sweep_of(json{{"task.fail_at_example", {9, -1}}}));
  const SweepSummary s = run(runs, dir);
  CHECK(s.failed == 1);
  CHECK(s.done == 1);
  const json bad = json::parse(read_file(run_files(dir, runs[0]).result));
  CHECK(bad["status"] == "failed");
  CHECK(bad["failure"]["step"] == 3);
  CHECK(bad["steps_done"] == 2);
  CHECK_THAT(bad["failure"]["reason"].get<std::string>(), Catch::Contains("failing on purpose at example 9"));
  // The failed run is left out of tables, with a note.
  TableOptions by_failure;
  by_failure.rows = "task.fail_at_example";
  const std::string table = results_table(load_results(dir), by_failure);
  CHECK_THAT(table, Catch::Contains("Left out: 1 run with status failed"));
}

TEST_CASE("shards cover every run exactly once", "[runner]") {
  for (int64_t n : {1, 2, 3, 5, 8}) {
    std::vector<int> covered(7, 0);
    for (int64_t i = 0; i < n; ++i)
      for (size_t p = 0; p < covered.size(); ++p) covered[p] += Shard{i, n}.contains(p);
    CHECK(covered == std::vector<int>(7, 1));
  }
  CHECK(parse_shard("1/4").index == 1);
  CHECK(parse_shard("1/4").count == 4);
  for (const char* bad : {"4/4", "-1/2", "1", "a/b", "1/0", "1/2/3", ""})
    CHECK_THROWS_WITH(parse_shard(bad), Catch::Contains("--shard"));

  // Two shards running into one folder produce every result once.
  const std::string dir = fresh_temp_dir("shards");
  const auto runs = plan(sweep_of(json{{"seed", {0, 1, 2}}}));
  CHECK(run(runs, dir, Shard{0, 2}).done == 2);
  CHECK(run(runs, dir, Shard{1, 2}).done == 1);
  std::set<std::string> hashes;
  for (const json& r : load_results(dir)) hashes.insert(r["hash"]);
  CHECK(hashes.size() == 3);
  CHECK(count_files(dir, ".json") == 3);
}

TEST_CASE("Slurm array variables select the shard", "[runner]") {
  CHECK_FALSE(slurm_array_shard(env({})).has_value());
  const auto a = slurm_array_shard(env({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  REQUIRE(a);
  CHECK(a->text() == "3/4");
  const auto b = slurm_array_shard(
      env({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_MAX", "4"}}));
  REQUIRE(b);
  CHECK(b->text() == "1/4");
  CHECK_THROWS_WITH(slurm_array_shard(env({{"SLURM_ARRAY_TASK_ID", "x"}})), Catch::Contains("SLURM_ARRAY_TASK_ID"));
  CHECK_THROWS_AS(slurm_array_shard(env({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})), Error);
}

TEST_CASE("PATHBENCH_GIT_COMMIT gives the commit results record", "[runner]") {
  using Catch::Contains;
  const std::string sha = "0123456789abcdef0123456789abcdef01234567";
  CHECK(source_git_state(env({{"PATHBENCH_GIT_COMMIT", sha}, {"PATHBENCH_GIT_DIRTY", "1"}})) ==
        json{{"commit", sha}, {"dirty", true}, {"from", "PATHBENCH_GIT_COMMIT"}});
  CHECK(source_git_state(env({{"PATHBENCH_GIT_COMMIT", "ABCDEF1"}, {"PATHBENCH_GIT_DIRTY", "0"}})) ==
        json{{"commit", "abcdef1"}, {"dirty", false}, {"from", "PATHBENCH_GIT_COMMIT"}});
  CHECK(source_git_state(env({{"PATHBENCH_GIT_COMMIT", "abcdef1"}}))["dirty"].is_null());
  // Unset or empty: the build's stamp answers (a commit, or null with the reason where the build
  // found no repository; test_git_stamp.cpp checks the stamp itself).
  const json from_git = source_git_state(env({{"PATHBENCH_GIT_COMMIT", ""}}));
  CHECK_FALSE(from_git.contains("from"));
  CHECK((from_git["commit"].is_string() || from_git.contains("error")));
  // Malformed values are errors naming the variable and the value.
  for (const std::string bad : {"abcdef", "g123456789", "0123456789abcdef0123456789abcdef012345678", "HEAD"})
    CHECK_THROWS_WITH(source_git_state(env({{"PATHBENCH_GIT_COMMIT", bad}})),
                      Contains("PATHBENCH_GIT_COMMIT has value '" + bad + "'") && Contains("7 to 40 hex digits"));
  CHECK_THROWS_WITH(source_git_state(env({{"PATHBENCH_GIT_COMMIT", sha}, {"PATHBENCH_GIT_DIRTY", "yes"}})),
                    Contains("PATHBENCH_GIT_DIRTY has value 'yes'"));
  CHECK_THROWS_WITH(source_git_state(env({{"PATHBENCH_GIT_DIRTY", "1"}})), Contains("PATHBENCH_GIT_COMMIT is not set"));

  // Through a sweep: the result records the commit; a malformed value stops it before any file.
  const auto runs = plan(tiny_run_config());
  const std::string dir = fresh_temp_dir("git-env");
  {
    const ScopedEnv commit("PATHBENCH_GIT_COMMIT", "abcdef1234567");
    REQUIRE(run(runs, dir + "/ok").done == 1);
  }
  CHECK(load_results(dir + "/ok")[0]["git"] == json{{"commit", "abcdef1234567"}, {"dirty", nullptr},
                                                    {"from", "PATHBENCH_GIT_COMMIT"}});
  const ScopedEnv commit("PATHBENCH_GIT_COMMIT", "not-a-commit");
  CHECK_THROWS_WITH(run(runs, dir + "/bad"), Contains("PATHBENCH_GIT_COMMIT"));
  CHECK_FALSE(fs::exists(dir + "/bad"));
}

TEST_CASE("an unavailable device stops the sweep before any run", "[runner]") {
  const std::string dir = fresh_temp_dir("device");
  json doc = sweep_of(json{{"seed", {0, 1}}});
  doc["model"]["d_model"] = 32;  // the GPU kernels take head dimensions 16, 32, 64 and 128
  doc["grid"]["device"] = {"cpu", "cuda"};
  // Same hash for cpu and cuda: the device is not part of what a run computes.
  CHECK_THROWS_WITH(plan(doc), Catch::Contains("same run"));
  doc["grid"].erase("device");
  doc["device"] = "cpu";
  doc["precision"] = "bf16";
  CHECK_THROWS_WITH(plan(doc), Catch::Contains("'precision'") && Catch::Contains("bf16") && Catch::Contains("cpu"));
  if (cuda_device_available()) return;  // the [cuda] tests train there
  doc["device"] = "cuda";
  CHECK_THROWS_WITH(run(plan(doc), dir), Catch::Contains("device 'cuda'") && !Catch::Contains("head dimension"));
  CHECK(count_files(dir, ".json") == 0);
}

TEST_CASE("a sweep trains on the GPU, checkpoints and resumes there", "[cuda]") {
  json doc = tiny_run_config();
  doc["training"]["checkpoint_every"] = 2;
  doc["model"]["d_model"] = 32;  // the GPU kernels take head dimensions 16, 32, 64 and 128
  const auto cpu_runs = plan(doc);
  doc["device"] = "cuda";
  const std::string cpu = fresh_temp_dir("gpu-cpu"), gpu = fresh_temp_dir("gpu"), killed = fresh_temp_dir("gpu-killed");
  run(cpu_runs, cpu);
  const auto gpu_runs = plan(doc);
  CHECK(gpu_runs[0].hash == cpu_runs[0].hash);
  REQUIRE(run(gpu_runs, gpu).done == 1);
  const json on_gpu = json::parse(read_file(run_files(gpu, gpu_runs[0]).result));
  const json on_cpu = json::parse(read_file(run_files(cpu, cpu_runs[0]).result));
  CHECK(on_gpu["device"] == "cuda");
  CHECK(on_gpu["device_name"] != on_cpu["device_name"]);
  CHECK(on_gpu["final_train_loss"].get<double>() == Approx(on_cpu["final_train_loss"].get<double>()).epsilon(1e-3));

  const RunFiles files = run_files(killed, gpu_runs[0]);
  const auto task = fixture_tasks().make(gpu_runs[0].config.task, "test");
  KillAt kill(5);
  CHECK_THROWS_AS(train_run(gpu_runs[0].config, *task, RunOutputs{files.curve, files.checkpoint, true, "", "", ""}, kill), Killed);
  REQUIRE(run(gpu_runs, killed).done == 1);
  const json resumed = json::parse(read_file(files.result));
  CHECK(resumed["resumed_from_step"] == 4);
  CHECK(resumed["final_train_loss"].get<double>() ==
        Approx(on_gpu["final_train_loss"].get<double>()).epsilon(1e-5));
}

TEST_CASE("a run killed mid-way resumes from its checkpoint and ends bit-identical", "[runner]") {
  json doc = tiny_run_config();
  doc["training"]["checkpoint_every"] = 2;
  doc["training"]["log_every"] = 3;  // the checkpoint at step 4 falls inside an open logging window
  const auto runs = plan(doc);
  const std::string straight = fresh_temp_dir("ckpt-straight"), killed = fresh_temp_dir("ckpt-killed");
  run(runs, straight);

  const RunFiles files = run_files(killed, runs[0]);
  const auto task = fixture_tasks().make(runs[0].config.task, "test");
  KillAt kill(5);
  CHECK_THROWS_AS(train_run(runs[0].config, *task, RunOutputs{files.curve, files.checkpoint, true, "", "", ""}, kill), Killed);
  CHECK(fs::exists(files.checkpoint));
  CHECK_FALSE(fs::exists(files.result));

  CHECK(run(runs, killed).done == 1);
  const json resumed = json::parse(read_file(files.result));
  CHECK(resumed["status"] == "done");
  CHECK(resumed["resumed_from_step"] == 4);
  CHECK(resumed["steps_done"] == 6);
  CHECK(resumed["train_tokens"] == 6 * 4 * 6);
  const json uninterrupted = json::parse(read_file(run_files(straight, runs[0]).result));
  CHECK(uninterrupted["resumed_from_step"] == 0);
  CHECK(resumed["metrics"] == uninterrupted["metrics"]);
  CHECK(resumed["final_train_loss"] == uninterrupted["final_train_loss"]);
  CHECK(curve_values(files.curve) == curve_values(run_files(straight, runs[0]).curve));

  // A checkpoint is only resumed by its own run.
  const auto other = plan_runs(doc, {{"seed", 1}}, "cfg.json", fixture_tasks());
  fs::copy_file(files.checkpoint, run_files(killed, other[0]).checkpoint);
  run(other, killed);
  CHECK(json::parse(read_file(run_files(killed, other[0]).result))["resumed_from_step"] == 0);
}
