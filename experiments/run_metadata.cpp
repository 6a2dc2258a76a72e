// Git state via the git program, build constants, UTC timestamps.
#include "experiments/run_metadata.h"

#include <ctime>

#include "build_info.h"
#include "experiments/process.h"

namespace pathbench {

json git_state(const std::string& dir) {
  const ProcessResult head = run_process({"git", "-C", dir, "rev-parse", "HEAD"}, true);
  if (head.exit_code != 0) {
    const std::string why = head.exit_code == 127 || head.exit_code == -1 ? "git is not available"
                                                                          : "not a git repository: " + dir;
    return json{{"commit", nullptr}, {"dirty", nullptr}, {"error", why}};
  }
  std::string commit = head.output;
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r')) commit.pop_back();
  const ProcessResult status = run_process({"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"}, true);
  json dirty = status.exit_code == 0 ? json(!status.output.empty()) : json(nullptr);
  return json{{"commit", commit}, {"dirty", dirty}};
}

json source_git_state() { return git_state(PATHBENCH_SOURCE_ROOT); }

json build_description() { return json{{"flags", PATHBENCH_BUILD_FLAGS}, {"type", PATHBENCH_BUILD_TYPE}}; }

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace pathbench
