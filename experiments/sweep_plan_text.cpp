// sweep_plan_text: the dry run's listing of a shard, with live and stale claims and state counts.
#include "experiments/sweep_plan_text.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "experiments/result_file.h"
#include "experiments/run_claim.h"

namespace pathbench {

namespace {

// What a sweep would do with a run, from its result's status and its checkpoint: continue from the
// checkpoint where resumes_from_checkpoint says so and one exists (checkpoints on), else start again.
std::string planned_state(const RunState& s, const std::string& out_dir) {
  if (s.previous == "done") return "done (skip)";
  if (!resumes_from_checkpoint(s.previous)) return "rerun (" + s.previous + ")";
  const bool checkpoint = s.run->config.training.checkpoint_every > 0 &&
                          std::filesystem::exists(run_files(out_dir, *s.run).checkpoint);
  if (s.previous.empty()) return checkpoint ? "resume" : "to run";
  return std::string(checkpoint ? "resume" : "rerun") + " (" + s.previous + ")";
}

}  // namespace

std::string sweep_plan_text(const std::vector<RunState>& states, size_t planned, const SweepOptions& options,
                            double now) {
  const std::map<std::string, ClaimOwner> owners = newest_claim_owners(options.out_dir);
  std::map<std::string, int64_t> counts;  // state → runs
  std::string lines;
  for (const RunState& s : states) {
    std::string state = planned_state(s, options.out_dir), claim;
    const auto owner = owners.find(s.run->file_stem());
    if (s.previous != "done" && owner != owners.end()) {
      const bool stale = claim_is_stale(owner->second, now, options.claim_stale_after_s);
      if (!stale) state = "running";
      claim = fmt::format("  ({}claim of {} pid {}, heartbeat {:.0f} s ago)", stale ? "stale " : "",
                          owner->second.host, owner->second.pid, now - owner->second.heartbeat);
    }
    ++counts[state];
    lines += fmt::format("{:>4}  {:<44} {:<20} {} steps  {}{}\n", s.position, s.run->file_stem(), state,
                         s.run->config.training.steps, s.run->axes.empty() ? "" : s.run->axes.dump(), claim);
  }
  std::vector<std::string> summary;
  for (const auto& [state, n] : counts) summary.push_back(fmt::format("{} {}", n, state));
  return fmt::format("{} runs in the sweep, {} in shard {}; results in {}\n{}\n", planned, states.size(),
                     options.shard.text(), options.out_dir, fmt::join(summary, ", ")) +
         lines;
}

}  // namespace pathbench
