// Sharding a sweep: shard i of n runs the runs whose position in the expanded sweep is i modulo n,
// so n machines (or a Slurm job array) cover every run exactly once.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace pathbench {

struct Shard {
  int64_t index = 0;  // 0-based
  int64_t count = 1;
  bool contains(size_t run_position) const { return int64_t(run_position % size_t(count)) == index; }
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// "i/n" with 0 <= i < n; throws pathbench::Error otherwise.
Shard parse_shard(const std::string& text);

// The shard of a Slurm array task: SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN (0 when unset)
// of SLURM_ARRAY_TASK_COUNT (or MAX − MIN + 1) tasks; nullopt outside a job array. `getenv` reads the
// environment (injectable for tests).
std::optional<Shard> slurm_array_shard(const std::function<const char*(const char*)>& getenv);

}  // namespace pathbench
