// Shard parsing and the Slurm array environment.
#include "experiments/shard.h"

#include <fmt/format.h>

#include <charconv>

#include "core/error.h"

namespace pathbench {

namespace {

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  const auto i = slash == std::string::npos ? std::nullopt : parse_int(std::string_view(text).substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : parse_int(std::string_view(text).substr(slash + 1));
  if (!i || !n || *n < 1 || *i < 0 || *i >= *n)
    throw Error(fmt::format("--shard '{}': expected i/n with 0 <= i < n (e.g. 0/4)", text));
  return Shard{*i, *n};
}

std::optional<Shard> slurm_array_shard(const std::function<const char*(const char*)>& getenv) {
  auto read = [&](const char* name) -> std::optional<int64_t> {
    const char* v = getenv(name);
    if (!v) return std::nullopt;
    const auto parsed = parse_int(v);
    if (!parsed) throw Error(fmt::format("environment variable {} has value '{}' (expected an integer)", name, v));
    return parsed;
  };
  const auto id = read("SLURM_ARRAY_TASK_ID");
  if (!id) return std::nullopt;
  const int64_t min = read("SLURM_ARRAY_TASK_MIN").value_or(0);
  std::optional<int64_t> count = read("SLURM_ARRAY_TASK_COUNT");
  if (!count) {
    const auto max = read("SLURM_ARRAY_TASK_MAX");
    if (!max) throw Error("SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is");
    count = *max - min + 1;
  }
  const Shard shard{*id - min, *count};
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count)
    throw Error(fmt::format("Slurm array task {} (min {}) does not fit an array of {} tasks", *id, min, *count));
  return shard;
}

}  // namespace pathbench
