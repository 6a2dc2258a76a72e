// The held-out starts files a sweep's processes share: a file written by one process gives another
// the same examples with one draw each; short, damaged or foreign files are ignored; a save never
// shrinks a file; a sweep writes one file per evaluation split.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "experiments/file_output.h"
#include "experiments/held_out_store.h"
#include "tasks/holdout.h"
#include "tests/runner_fixture.h"
#include "tests/task_test_support.h"

namespace pathbench {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kCount = 40;

// The content hashes of examples 0 … kCount − 1 of `split` under `seed`.
std::vector<uint64_t> example_hashes(const Task& task, const std::string& split, uint64_t seed) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < kCount; ++i) out.push_back(content_hash(task.example(split, seed, i)));
  return out;
}

// In a child process (whose remembered starts are its own): draws the examples of `seed`, saves
// their starts to `dir` and writes their hashes to `hashes_path`.
void draw_and_save_in_child(const json& config, uint64_t seed, const std::string& dir, const std::string& hashes_path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const auto task = testing::make(config);
    const std::vector<uint64_t> hashes = example_hashes(*task, "in_dist", seed);
    save_held_out_starts(dir, *task, "in_dist", seed, kCount);
    std::ofstream(hashes_path, std::ios::binary)
        .write(reinterpret_cast<const char*>(hashes.data()), std::streamsize(hashes.size() * sizeof(uint64_t)));
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

std::vector<uint64_t> read_hashes(const std::string& path) {
  std::vector<uint64_t> out(kCount);
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(out.data()), std::streamsize(kCount * sizeof(uint64_t)));
  return out;
}

std::vector<fs::path> starts_files(const std::string& dir) {
  std::vector<fs::path> out;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".starts") out.push_back(e.path());
  return out;
}

// Options no other test uses, so that this process has remembered none of their starts.
json unused_flipflop(int64_t length) { return {{"name", "flipflop"}, {"length", length}, {"eval_splits", {{"in_dist", 0.8}}}}; }

// A fresh folder and a flip-flop task of unused options, whose files child processes write.
struct SharedStarts {
  SharedStarts(const std::string& name, int64_t length)
      : dir(testing::fresh_temp_dir(name)), config(unused_flipflop(length)), task(testing::make(config)),
        hashes(dir + "/hashes.bin") {}
  std::string dir;
  json config;
  std::unique_ptr<Task> task;
  std::string hashes;  // the last child's example hashes
};

TEST_CASE("held-out starts saved by one process give another the same examples, drawn once each", "[tasks]") {
  const SharedStarts f("held-out-starts", 78);
  const std::string& dir = f.dir;
  const Task* task = f.task.get();
  draw_and_save_in_child(f.config, 901, dir, f.hashes);
  REQUIRE(starts_files(dir).size() == 1);
  const size_t before = held_out_starts_remembered();
  load_held_out_starts(dir, *task, "in_dist", 901, kCount);
  CHECK(held_out_starts_remembered() == before + kCount);
  for (uint64_t s : remembered_starts(task->draw_function(), "in_dist", 901, kCount)) CHECK(s != kNoStart);
  // Drawn from the loaded starts (each checked to be held out): the child's examples.
  CHECK(example_hashes(*task, "in_dist", 901) == read_hashes(f.hashes));
}

TEST_CASE("a held-out starts file that is cut short, or whose header names other examples, is ignored", "[tasks]") {
  const SharedStarts f("held-out-starts-damaged", 82);
  const std::string& dir = f.dir;
  const Task* task = f.task.get();
  draw_and_save_in_child(f.config, 902, dir, f.hashes);
  draw_and_save_in_child(f.config, 903, dir, f.hashes);
  const std::vector<fs::path> files = starts_files(dir);
  REQUIRE(files.size() == 2);
  for (const fs::path& f : files) {
    std::string content = read_file(f.string());
    if (content.find("seed 902\n") != std::string::npos) {
      content.pop_back();  // the last start loses a byte
    } else {
      REQUIRE(content.find("seed 903\n") != std::string::npos);
      content.replace(content.find("seed 903\n"), 9, "seed 904\n");  // 903's file now claims 904's examples
    }
    write_file_atomically(f.string(), content);
  }
  const size_t before = held_out_starts_remembered();
  load_held_out_starts(dir, *task, "in_dist", 902, kCount);
  load_held_out_starts(dir, *task, "in_dist", 903, kCount);
  CHECK(held_out_starts_remembered() == before);
  // Drawn the long way: still the child's examples.
  CHECK(example_hashes(*task, "in_dist", 903) == read_hashes(f.hashes));
}

TEST_CASE("a held-out starts save writes the leading starts it has and never shortens a file", "[tasks]") {
  const std::string dir = testing::fresh_temp_dir("held-out-starts-save");
  const auto task = testing::make(unused_flipflop(86));
  for (uint64_t i = 0; i < kCount / 2; ++i) task->example("in_dist", 5, i);
  task->example("in_dist", 5, kCount / 2 + 3);  // remembered, but after a gap
  save_held_out_starts(dir, *task, "in_dist", 5, kCount);
  const std::vector<fs::path> files = starts_files(dir);
  REQUIRE(files.size() == 1);
  const std::string half = read_file(files[0].string());
  const std::string header = "split in_dist\nseed 5\n20\n";
  REQUIRE(half.find(header) != std::string::npos);
  CHECK(half.size() == half.find(header) + header.size() + 20 * sizeof(uint64_t));
  save_held_out_starts(dir, *task, "in_dist", 5, kCount / 4);
  CHECK(read_file(files[0].string()) == half);
  for (uint64_t i = 0; i < kCount; ++i) task->example("in_dist", 5, i);
  save_held_out_starts(dir, *task, "in_dist", 5, kCount);
  CHECK(read_file(files[0].string()).find("split in_dist\nseed 5\n40\n") != std::string::npos);
}

TEST_CASE("a task without a draw function id reads and writes no held-out starts", "[tasks]") {
  struct Plain : Task {
    Vocabulary v;
    const Vocabulary& vocabulary() const override { return v; }
    std::vector<std::string> eval_splits() const override { return {"eval"}; }
    Example example(const std::string&, uint64_t, uint64_t) const override { return {}; }
    std::unique_ptr<MetricAccumulator> metrics(const std::string&) const override { return nullptr; }
    std::string primary_metric() const override { return "accuracy"; }
    bool higher_is_better() const override { return true; }
  } plain;
  const std::string dir = testing::fresh_temp_dir("held-out-starts-plain");
  save_held_out_starts(dir, plain, "eval", 0, kCount);
  load_held_out_starts(dir, plain, "eval", 0, kCount);
  CHECK(starts_files(dir).empty());
}

}  // namespace
}  // namespace pathbench
