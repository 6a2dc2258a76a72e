// Many runs at once: claim files (one owner, heartbeat, release, takeover of stale claims), the
// worker pool against a sequential sweep, a worker killed mid-run, a killed sweep's stale claim
// taken over, a sweep stopped by SIGTERM (sequential and pooled) and resumed, the dry run's plan of a
// folder mid-sweep, and the pool's option errors.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "core/device.h"
#include "core/error.h"
#include "experiments/file_output.h"
#include "experiments/result_file.h"
#include "experiments/run_claim.h"
#include "experiments/sweep_plan_text.h"
#include "experiments/sweep_runner.h"
#include "experiments/worker_pool.h"
#include "tests/runner_fixture.h"

using namespace pathbench;
using namespace pathbench::testing;
namespace fs = std::filesystem;

namespace {

std::vector<PlannedRun> plan(const json& doc) { return plan_runs(doc, {}, "cfg.json", fixture_tasks()); }

SweepSummary run(const std::vector<PlannedRun>& runs, const std::string& dir, int64_t jobs,
                 SweepProgress* progress = nullptr) {
  SweepOptions options;
  options.out_dir = dir;
  options.config_file = "cfg.json";
  options.tasks = fixture_tasks();
  options.jobs = jobs;
  SweepProgress quiet(nullptr, SweepProgress::Mode::Quiet);
  return run_sweep(runs, options, progress ? *progress : quiet);
}

void write_claim(const std::string& path, const std::string& host, int64_t pid, double heartbeat) {
  write_file_atomically(path, json{{"host", host}, {"pid", pid}, {"heartbeat", heartbeat}}.dump());
}

// The pid of a process that has exited and been reaped.
int64_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return int64_t(pid);
}

std::vector<std::string> claim_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".claim") out.push_back(e.path().filename().string());
  return out;
}

}  // namespace

TEST_CASE("claims: one owner at a time, a heartbeat, release, and takeover of stale claims", "[runner][pool]") {
  const std::string dir = fresh_temp_dir("claims");
  auto first = RunClaim::try_claim(dir, "a", 60, 0.05);
  REQUIRE(first);
  CHECK(first->generation() == 1);
  CHECK(fs::path(first->path()).filename() == "a.1.claim");
  CHECK_FALSE(RunClaim::try_claim(dir, "a", 60, 0.05));  // a live owner (this process)
  const double written = json::parse(read_file(first->path()))["heartbeat"].get<double>();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(json::parse(read_file(first->path()))["heartbeat"].get<double>() > written);
  first->release();
  CHECK_FALSE(fs::exists(dir + "/a.1.claim"));
  CHECK(RunClaim::try_claim(dir, "a", 60, 0.05)->generation() == 1);  // released on destruction too
  CHECK(claim_files(dir).empty());

  const ClaimOwner self = this_claim_owner();
  // This host, a process that is gone: taken over at once by the next generation, which removes it.
  write_claim(dir + "/b.1.claim", self.host, dead_pid(), unix_now());
  auto takeover = RunClaim::try_claim(dir, "b", 60, 1);
  REQUIRE(takeover);
  CHECK(takeover->generation() == 2);
  takeover->release();
  CHECK(claim_files(dir).empty());

  // Another host: its pid says nothing here, only the heartbeat's age does.
  write_claim(dir + "/c.1.claim", "elsewhere", 1, unix_now());
  CHECK_FALSE(RunClaim::try_claim(dir, "c", 60, 1));
  write_claim(dir + "/c.1.claim", "elsewhere", 1, unix_now() - 120);
  CHECK(RunClaim::try_claim(dir, "c", 60, 1)->generation() == 2);

  // An unreadable claim counts as held until the file itself is older than the stale age.
  write_file_atomically(dir + "/d.1.claim", "not json");
  CHECK_FALSE(RunClaim::try_claim(dir, "d", 60, 1));
  fs::last_write_time(dir + "/d.1.claim", fs::file_time_type::clock::now() - std::chrono::minutes(5));
  CHECK(RunClaim::try_claim(dir, "d", 60, 1)->generation() == 2);

  CHECK(claim_is_stale(ClaimOwner{self.host, self.pid, unix_now()}, unix_now(), 60) == false);
  CHECK(claim_is_stale(ClaimOwner{self.host, self.pid, unix_now() - 61}, unix_now(), 60));
}

TEST_CASE("a worker pool trains every run once and gives the sequential sweep's results", "[runner][pool]") {
  json doc = tiny_run_config();
  doc["threads"] = 1;
  doc["grid"] = json{{"model.encoding", {"nope", "rope", "path"}}, {"seed", {0, 1}}};
  const auto runs = plan(doc);
  const std::string sequential = fresh_temp_dir("pool-seq"), pooled = fresh_temp_dir("pool-par");
  REQUIRE(run(runs, sequential, 1).done == 6);
  const SweepSummary s = run(runs, pooled, 3);
  CHECK(s.done == 6);
  CHECK(s.failed == 0);
  for (const PlannedRun& r : runs) {
    const json a = json::parse(read_file(run_files(sequential, r).result));
    const json b = json::parse(read_file(run_files(pooled, r).result));
    CHECK(b["status"] == "done");
    CHECK(b["metrics"] == a["metrics"]);
    CHECK(b["final_train_loss"] == a["final_train_loss"]);
    CHECK(curve_values(run_files(pooled, r).curve) == curve_values(run_files(sequential, r).curve));
  }
  CHECK(claim_files(pooled).empty());
  CHECK(run(runs, pooled, 3).skipped == 6);  // a rerun finds everything done
}

TEST_CASE("in a pool, a run that goes NaN or throws is recorded with its reason and the others finish",
          "[runner][pool]") {
  json doc = tiny_run_config();
  doc["zip"] = json{{"optimizer.lr", {1e30, 0.01, 0.01}}, {"task.fail_at_example", {-1, 9, -1}}};
  const auto runs = plan(doc);
  const std::string dir = fresh_temp_dir("pool-nan");
  const SweepSummary s = run(runs, dir, 3);
  CHECK(s.nan == 1);
  CHECK(s.failed == 1);
  CHECK(s.done == 1);
  const json nan = json::parse(read_file(run_files(dir, runs[0]).result));
  CHECK(nan["status"] == "nan");
  CHECK_THAT(nan["failure"]["reason"].get<std::string>(), Catch::Contains("non-finite"));
  const json failed = json::parse(read_file(run_files(dir, runs[1]).result));
  CHECK(failed["status"] == "failed");
  CHECK(failed["failure"]["step"] == 3);
  CHECK(json::parse(read_file(run_files(dir, runs[2]).result))["status"] == "done");
  CHECK(claim_files(dir).empty());
}

TEST_CASE("a pool worker killed mid-run has its run recorded as failed, and the others go on", "[runner][pool]") {
  json doc = tiny_run_config();
  doc["threads"] = 1;
  doc["zip"] = json{{"seed", {0, 1, 2}}, {"task.kill_at_example", {-1, 9, -1}}};  // run 1 dies in step 3
  const auto runs = plan(doc);
  const std::string dir = fresh_temp_dir("pool-kill");
  const SweepSummary s = run(runs, dir, 2);
  CHECK(s.done == 2);
  CHECK(s.failed == 1);
  const json killed = json::parse(read_file(run_files(dir, runs[1]).result));
  CHECK(killed["status"] == "failed");
  CHECK_THAT(killed["failure"]["reason"].get<std::string>(), Catch::Contains("killed by signal 9"));
  CHECK(killed["failure"]["step"].get<int64_t>() >= 1);
  CHECK(json::parse(read_file(run_files(dir, runs[0]).result))["status"] == "done");
  CHECK(json::parse(read_file(run_files(dir, runs[2]).result))["status"] == "done");
  CHECK(claim_files(dir).empty());
}

namespace {

// Progress that kills its own process at a training step, as kill -9 would.
class KillAtStep : public SweepProgress {
 public:
  explicit KillAtStep(int64_t step) : SweepProgress(nullptr, Mode::Quiet), step_(step) {}
  void on_step(int64_t step, int64_t, double, double) override {
    if (step == step_) ::raise(SIGKILL);
  }

 private:
  int64_t step_;
};

}  // namespace

TEST_CASE("a sweep process killed mid-run leaves a stale claim that the next sweep takes over", "[runner][pool]") {
  json doc = tiny_run_config();
  doc["threads"] = 1;
  doc["training"]["checkpoint_every"] = 2;
  const auto runs = plan(doc);
  const std::string dir = fresh_temp_dir("pool-stale"), straight = fresh_temp_dir("pool-stale-straight");
  const pid_t child = ::fork();
  if (child == 0) {
    KillAtStep kill(5);
    run(runs, dir, 1, &kill);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(claim_files(dir) == std::vector<std::string>{runs[0].file_stem() + ".1.claim"});
  CHECK(json::parse(read_file(dir + "/" + claim_files(dir)[0]))["pid"] == int64_t(child));
  CHECK_FALSE(fs::exists(run_files(dir, runs[0]).result));

  CHECK(run(runs, dir, 1).done == 1);
  const json resumed = json::parse(read_file(run_files(dir, runs[0]).result));
  CHECK(resumed["status"] == "done");
  CHECK(resumed["resumed_from_step"] == 4);
  run(runs, straight, 1);
  CHECK(resumed["metrics"] == json::parse(read_file(run_files(straight, runs[0]).result))["metrics"]);
  CHECK(claim_files(dir).empty());
}

TEST_CASE("SIGTERM stops a sweep after a step with a checkpoint and an interrupted result, the rerun ends as an unstopped one",
          "[runner][pool]") {
  json doc = tiny_run_config();
  doc["training"]["steps"] = 12;
  doc["training"]["checkpoint_every"] = 5;  // the stop at step 4 is between periodic checkpoints
  const auto runs = plan(doc);
  const RunFiles files = run_files(fresh_temp_dir("stop-seq"), runs[0]);
  const std::string dir = fs::path(files.result).parent_path().string(), straight = fresh_temp_dir("stop-seq-straight");
  signal_at_parity_example(0, 3 * 4, ::getpid(), SIGTERM);  // while the batch of step 4 is drawn
  const SweepSummary stopped = run(runs, dir, 1);
  signal_at_parity_example(0, -1, 0, 0);
  CHECK(stopped.stop_signal == SIGTERM);
  CHECK(stopped.interrupted == 1);
  CHECK(stopped.done + stopped.failed + stopped.nan == 0);
  const json interrupted = json::parse(read_file(files.result));
  CHECK(interrupted["status"] == "interrupted");
  CHECK(interrupted["steps_done"] == 4);
  CHECK(interrupted["failure"]["step"] == 4);
  CHECK_THAT(interrupted["failure"]["reason"].get<std::string>(), Catch::Contains("it resumes there"));
  CHECK(interrupted["metrics"] == json::object());  // not final: tables leave it out
  CHECK(fs::exists(files.checkpoint));
  CHECK(claim_files(dir).empty());

  const SweepSummary again = run(runs, dir, 1);
  CHECK(again.done == 1);
  CHECK(again.stop_signal == 0);
  const json resumed = json::parse(read_file(files.result));
  CHECK(resumed["resumed_from_step"] == 4);
  run(runs, straight, 1);
  CHECK(resumed["metrics"] == json::parse(read_file(run_files(straight, runs[0]).result))["metrics"]);
  CHECK(curve_values(files.curve) == curve_values(run_files(straight, runs[0]).curve));
}

TEST_CASE("a run whose checkpoint is damaged is recorded as failed with the file named", "[runner][pool]") {
  json doc = tiny_run_config();
  doc["training"]["steps"] = 12;
  doc["training"]["checkpoint_every"] = 5;
  const auto runs = plan(doc);
  const RunFiles files = run_files(fresh_temp_dir("damaged-checkpoint"), runs[0]);
  const std::string dir = fs::path(files.result).parent_path().string();
  signal_at_parity_example(0, 3 * 4, ::getpid(), SIGTERM);  // stopped at step 4, with its checkpoint
  REQUIRE(run(runs, dir, 1).interrupted == 1);
  signal_at_parity_example(0, -1, 0, 0);
  REQUIRE(fs::exists(files.checkpoint));
  fs::resize_file(files.checkpoint, fs::file_size(files.checkpoint) / 2);  // cut short, as by a full disk

  const SweepSummary s = run(runs, dir, 1);
  CHECK(s.failed == 1);
  const json failed = json::parse(read_file(files.result));
  CHECK(failed["status"] == "failed");
  CHECK_THAT(failed["failure"]["reason"].get<std::string>(),
             Catch::Contains(fs::path(files.checkpoint).filename().string()));
  CHECK(claim_files(dir).empty());
}

TEST_CASE("SIGTERM to a pool's parent reaches every worker, their runs resume and end as unstopped ones",
          "[runner][pool]") {
  json doc = tiny_run_config();
  doc["training"]["steps"] = 10000;  // ≈ 1 s: both runs are still training when the stop arrives
  doc["training"]["eval_every"] = 5000;
  doc["training"]["log_every"] = 500;
  doc["training"]["checkpoint_every"] = 2000;
  doc["zip"] = json{{"seed", {0, 1}}};
  const auto runs = plan(doc);
  const std::string dir = fresh_temp_dir("stop-pool"), straight = fresh_temp_dir("stop-pool-straight");
  const pid_t child = ::fork();
  if (child == 0) {  // the pool's parent; run 1's worker signals it at step 200
    // (run 1's worker starts after run 0's: by its step 200 both are training, even on a loaded
    // machine; a stop before a run's worker starts rightly leaves that run unclaimed, without a result)
    signal_at_parity_example(1, 4 * 200, ::getpid(), SIGTERM);  // batches of 4: after 200 steps
    const SweepSummary s = run(runs, dir, 2);
    ::_exit(s.stop_signal == SIGTERM && s.interrupted >= 1 && s.done + s.failed + s.nan == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::vector<int64_t> stopped_at;  // each run's last step before the stop: where it must resume
  for (const PlannedRun& r : runs) {
    INFO(r.file_stem());
    const json result = json::parse(read_file(run_files(dir, r).result));
    CHECK(result["status"] == "interrupted");
    CHECK(fs::exists(run_files(dir, r).checkpoint));
    stopped_at.push_back(result["steps_done"].get<int64_t>());
  }
  CHECK(claim_files(dir).empty());
  // run 1 stopped at step 200 or a little later: its worker trains on until the parent passes the stop on
  CHECK(stopped_at[1] >= 200);

  CHECK(run(runs, dir, 2).done == 2);
  for (size_t i = 0; i < runs.size(); ++i) {
    INFO(runs[i].file_stem());
    CHECK(json::parse(read_file(run_files(dir, runs[i]).result))["resumed_from_step"].get<int64_t>() == stopped_at[i]);
  }
  run(runs, straight, 1);
  for (const PlannedRun& r : runs) {
    INFO(r.file_stem());
    CHECK(json::parse(read_file(run_files(dir, r).result))["metrics"] ==
          json::parse(read_file(run_files(straight, r).result))["metrics"]);
  }
}

TEST_CASE("pool options: bad --jobs and --gpus, and an unwritable results folder, are errors before anything runs",
          "[runner][pool]") {
  const std::string dir = fresh_temp_dir("pool-cli");
  const std::string config = dir + "/cfg.json";
  write_file_atomically(config, R"({"model": {"n_layers": 1, "d_model": 16, "n_heads": 2},
    "task": {"name": "flipflop", "length": 16}, "training": {"steps": 2, "batch_size": 2, "eval_examples": 4}})");
  CHECK_THROWS_WITH(cli({"run", config, "--jobs", "0", "--out", dir + "/r"}), Catch::Contains("--jobs"));
  if (probe_cuda_device_count() == 0) {
    CHECK_THROWS_WITH(cli({"run", config, "--gpus", "0", "--out", dir + "/r"}),
                      Catch::Contains("--gpus 0") &&
                          (Catch::Contains("no CUDA backend") || Catch::Contains("no CUDA GPU is visible")));
  } else {
    const std::string missing = std::to_string(probe_cuda_device_count());
    CHECK_THROWS_WITH(cli({"run", config, "--gpus", missing, "--device", "cuda", "--out", dir + "/r"}),
                      Catch::Contains("there is no GPU " + missing));
    CHECK_THROWS_WITH(cli({"run", config, "--gpus", "all", "--out", dir + "/r"}), Catch::Contains("device 'cuda'"));
  }
  CHECK_FALSE(fs::exists(dir + "/r"));
  fs::create_directories(dir + "/locked");
  fs::permissions(dir + "/locked", fs::perms::owner_read | fs::perms::owner_exec);
  if (::access((dir + "/locked").c_str(), W_OK) != 0) {  // root may write anyway
    CHECK_THROWS_WITH(cli({"run", config, "--jobs", "2", "--out", dir + "/locked/r"}),
                      Catch::Contains("cannot write the results folder '" + dir + "/locked/r'"));
    CHECK_FALSE(fs::exists(dir + "/locked/r"));
  }
  CHECK_THROWS_WITH(cli({"run", config, "--out", "/proc/pathbench-results"}),
                    Catch::Contains("the results folder '/proc/pathbench-results'"));
}

TEST_CASE("the dry run's plan: each run's state from its result and claim, live and stale claims shown, and counts",
          "[runner][pool]") {
  json doc = tiny_run_config();
  doc["zip"] = json{{"seed", {0, 1, 2, 3, 4}}};
  doc["training"]["checkpoint_every"] = 2;
  const auto runs = plan(doc);
  SweepOptions options;
  options.out_dir = fresh_temp_dir("plan-text");
  const auto result_doc = [&](const PlannedRun& run, const std::string& status) {
    write_file_atomically(run_files(options.out_dir, run).result,
                          json{{"pathbench_result", kResultFormat}, {"id", run.id}, {"hash", run.hash},
                               {"status", status}, {"config", json::object()}, {"metrics", json::object()}}
                                  .dump());
  };
  const auto claim = [&](const PlannedRun& run, const ClaimOwner& owner) {
    write_file_atomically(options.out_dir + "/" + run.file_stem() + ".1.claim",
                          json{{"host", owner.host}, {"pid", owner.pid}, {"heartbeat", owner.heartbeat}}.dump());
  };
  const double now = unix_now();
  ClaimOwner live = this_claim_owner(), lost = live;
  live.heartbeat = now - 3;
  lost.heartbeat = now - 600;  // past the 60 s stale age
  result_doc(runs[0], "done");
  claim(runs[1], live);
  claim(runs[2], lost);
  result_doc(runs[3], "interrupted");
  result_doc(runs[4], "interrupted");
  // Checkpoints of the run whose worker was lost and of one interrupted run: those two resume.
  for (const PlannedRun* run : {&runs[2], &runs[3]})
    write_file_atomically(run_files(options.out_dir, *run).checkpoint, "x");
  const std::string text = sweep_plan_text(shard_states(runs, options), runs.size(), options, now);
  INFO(text);
  CHECK_THAT(text, Catch::StartsWith("5 runs in the sweep, 5 in shard 0/1; results in " + options.out_dir + "\n"
                                     "1 done (skip), 1 rerun (interrupted), 1 resume, 1 resume (interrupted), "
                                     "1 running\n"));
  const auto line_of = [&](const PlannedRun& run) {
    const size_t at = text.find(run.file_stem());
    return text.substr(at, text.find('\n', at) - at);
  };
  CHECK_THAT(line_of(runs[0]), Catch::Contains("done (skip)") && !Catch::Contains("claim"));
  CHECK_THAT(line_of(runs[1]), Catch::Contains("running") &&
                                   Catch::EndsWith(fmt::format("(claim of {} pid {}, heartbeat 3 s ago)", live.host,
                                                               live.pid)));
  CHECK_THAT(line_of(runs[2]), Catch::Contains("resume ") && Catch::EndsWith("heartbeat 600 s ago)") &&
                                   Catch::Contains("(stale claim of"));
  CHECK_THAT(line_of(runs[3]), Catch::Contains("resume (interrupted)"));
  CHECK_THAT(line_of(runs[4]), Catch::Contains("rerun (interrupted)"));
  // Without checkpoints in the config, a checkpoint file left behind is not resumed from.
  doc["training"]["checkpoint_every"] = 0;
  const auto plain = plan(doc);
  const std::string without = sweep_plan_text(shard_states(plain, options), plain.size(), options, now);
  CHECK_THAT(without, Catch::Contains("1 done (skip), 2 rerun (interrupted), 1 running, 1 to run\n"));
}
