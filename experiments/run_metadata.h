// What results record about where and how they were produced: the git state of the source tree
// (stamped at build time, or given by the environment), the build, and timestamps.
#pragma once
#include <functional>
#include <string>

#include "core/options.h"

namespace pathbench {

// The git state of the source tree this binary was built from: {"commit": "<sha>", "dirty": bool},
// stamped by every build (cmake/git_state.cmake; dirty: tracked files differed from the commit), or
// {"commit": null, "dirty": null, "error": "..."} when the build found no git or no repository.
// PATHBENCH_GIT_COMMIT (7 to 40 hex digits), with the optional PATHBENCH_GIT_DIRTY ("0" or "1";
// unset: dirty null), takes precedence over the stamp, for builds from checkouts without .git such
// as a copy on a GPU machine; the state then has "from": "PATHBENCH_GIT_COMMIT". An empty variable
// counts as unset; any other malformed value throws pathbench::Error. `getenv` reads the
// environment (injectable for tests).
json source_git_state(const std::function<const char*(const char*)>& getenv);
// The same from the process environment.
json source_git_state();

// `pathbench --version`: "pathbench <commit>" (" with uncommitted changes" where dirty; "pathbench
// (commit unknown: <reason>)" without one), then the build's flags and type.
std::string version_text();

// {"flags": compiler and options, "type": build type}.
json build_description();

// UTC time as ISO 8601, e.g. "2025-01-31T12:00:00Z".
std::string utc_timestamp();

}  // namespace pathbench
