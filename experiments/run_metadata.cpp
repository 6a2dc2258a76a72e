// Git state stamped at build time or given by the environment, build constants, UTC timestamps.
#include "experiments/run_metadata.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>

#include "build_info.h"
#include "core/error.h"
#include "git_state.h"

namespace pathbench {

namespace {

// The value of environment variable `name`; empty when unset.
std::string env_value(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

// The git state given by PATHBENCH_GIT_COMMIT / PATHBENCH_GIT_DIRTY; null when neither is set.
json git_state_from_environment(const std::function<const char*(const char*)>& getenv) {
  std::string commit = env_value(getenv, "PATHBENCH_GIT_COMMIT");
  const std::string dirty = env_value(getenv, "PATHBENCH_GIT_DIRTY");
  if (commit.empty()) {
    if (!dirty.empty())
      throw Error(fmt::format("environment variable PATHBENCH_GIT_DIRTY has value '{}' but PATHBENCH_GIT_COMMIT "
                              "is not set (set both, or neither)",
                              dirty));
    return nullptr;
  }
  const bool hex = std::all_of(commit.begin(), commit.end(), [](unsigned char c) { return std::isxdigit(c); });
  if (!hex || commit.size() < 7 || commit.size() > 40)
    throw Error(fmt::format("environment variable PATHBENCH_GIT_COMMIT has value '{}' (expected a commit id of 7 "
                            "to 40 hex digits, e.g. from `git rev-parse HEAD`)",
                            commit));
  if (!dirty.empty() && dirty != "0" && dirty != "1")
    throw Error(fmt::format("environment variable PATHBENCH_GIT_DIRTY has value '{}' (expected 0 or 1)", dirty));
  std::transform(commit.begin(), commit.end(), commit.begin(), [](unsigned char c) { return std::tolower(c); });
  return json{{"commit", commit}, {"dirty", dirty.empty() ? json(nullptr) : json(dirty == "1")},
              {"from", "PATHBENCH_GIT_COMMIT"}};
}

}  // namespace

// The state cmake/git_state.cmake stamped when this binary was built.
json built_git_state() {
  const std::string commit = PATHBENCH_BUILT_COMMIT, error = PATHBENCH_BUILT_GIT_ERROR;
  if (commit.empty()) return json{{"commit", nullptr}, {"dirty", nullptr}, {"error", error}};
  const int dirty = PATHBENCH_BUILT_DIRTY;
  return json{{"commit", commit}, {"dirty", dirty < 0 ? json(nullptr) : json(dirty == 1)}};
}

json source_git_state(const std::function<const char*(const char*)>& getenv) {
  json given = git_state_from_environment(getenv);
  return given.is_null() ? built_git_state() : given;
}

json source_git_state() {
  return source_git_state([](const char* name) -> const char* { return std::getenv(name); });
}

std::string version_text() {
  const json git = source_git_state();
  const std::string dirty = git["dirty"] == true ? " with uncommitted changes" : "";
  const std::string commit = git["commit"].is_string() ? git["commit"].get<std::string>() + dirty
                                                       : fmt::format("(commit unknown: {})", git.value("error", "?"));
  return fmt::format("pathbench {}\nbuild: {} ({})", commit, PATHBENCH_BUILD_FLAGS, PATHBENCH_BUILD_TYPE);
}

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
