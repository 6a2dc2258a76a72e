// When runs draw their next batch ahead (PATHBENCH_PREFETCH).
#include "experiments/batch_prefetch.h"

#include <fmt/format.h>

#include <string>

#include "core/error.h"

namespace pathbench {

PrefetchMode parse_prefetch_mode(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "auto") return PrefetchMode::automatic;
  if (v == "on") return PrefetchMode::on;
  if (v == "off") return PrefetchMode::off;
  throw Error(fmt::format("PATHBENCH_PREFETCH has value '{}' (must be auto, on or off)", v));
}

bool prefetch_enabled(PrefetchMode mode, const std::string& device) {
  return mode == PrefetchMode::on || (mode == PrefetchMode::automatic && device == "cuda");
}

}  // namespace pathbench
