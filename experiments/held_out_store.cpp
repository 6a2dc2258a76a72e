// The held-out starts files of a sweep: reading them into the process's remembered starts, and
// writing what the process has remembered.
#include "experiments/held_out_store.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "experiments/file_output.h"
#include "tasks/holdout.h"

namespace pathbench {

namespace {

constexpr const char* kMagic = "pathbench held-out starts 1";

// The header lines before the count: what the file's starts belong to, exactly.
std::string key_text(const Task& task, const std::string& split, uint64_t seed) {
  return fmt::format("{}\n{}\nsplit {}\nseed {}\n", kMagic, draw_function_text(task.draw_function()), split, seed);
}

std::string file_path(const std::string& dir, const std::string& key) {
  return (std::filesystem::path(dir) / fmt::format("{:016x}.starts", hash_string(key))).string();
}

// The starts a file holds for `key` (empty when it is missing, damaged or for another key).
std::vector<uint64_t> read_starts(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string header(key.size(), '\0');
  if (!in.read(header.data(), std::streamsize(key.size())) || header != key) return {};
  uint64_t count = 0;
  std::string line;
  if (!std::getline(in, line)) return {};
  try {
    count = std::stoull(line);
  } catch (const std::exception&) {
    return {};
  }
  std::vector<uint64_t> starts(count);
  if (!in.read(reinterpret_cast<char*>(starts.data()), std::streamsize(count * sizeof(uint64_t)))) return {};
  if (in.peek() != std::ifstream::traits_type::eof()) return {};
  for (uint64_t s : starts)
    if (s == kNoStart) return {};
  return starts;
}

}  // namespace

void load_held_out_starts(const std::string& dir, const Task& task, const std::string& split, uint64_t seed,
                          uint64_t count) {
  if (task.draw_function() == 0) return;
  const std::string key = key_text(task, split, seed);
  std::vector<uint64_t> starts = read_starts(file_path(dir, key), key);
  if (starts.size() > count) starts.resize(count);
  remember_starts(task.draw_function(), split, seed, starts);
}

void save_held_out_starts(const std::string& dir, const Task& task, const std::string& split, uint64_t seed,
                          uint64_t count) {
  if (task.draw_function() == 0) return;
  const std::string key = key_text(task, split, seed), path = file_path(dir, key);
  std::vector<uint64_t> starts = remembered_starts(task.draw_function(), split, seed, count);
  size_t complete = 0;
  while (complete < starts.size() && starts[complete] != kNoStart) ++complete;
  if (complete == 0 || complete <= read_starts(path, key).size()) return;
  starts.resize(complete);
  std::string content = key + std::to_string(complete) + "\n";
  const size_t header = content.size();
  content.resize(header + complete * sizeof(uint64_t));
  std::memcpy(content.data() + header, starts.data(), complete * sizeof(uint64_t));
  try {
    std::filesystem::create_directories(dir);
    write_file_atomically(path, content);
  } catch (const std::exception&) {  // a cache that cannot be written costs time, not results
  }
}

}  // namespace pathbench
