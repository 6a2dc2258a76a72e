// What results record about where and how they were produced: the git state of the source tree
// (asked at run time), the build, and timestamps.
#pragma once
#include <string>

#include "core/options.h"

namespace pathbench {

// {"commit": "<sha>", "dirty": bool} for the repository holding `dir` (tracked files only for
// dirty); {"commit": null, "dirty": null, "error": "..."} when git or a repository is missing.
json git_state(const std::string& dir);

// The git state of the source tree this binary was built from.
json source_git_state();

// {"flags": compiler and options, "type": build type}.
json build_description();

// UTC time as ISO 8601, e.g. "2025-01-31T12:00:00Z".
std::string utc_timestamp();

}  // namespace pathbench
