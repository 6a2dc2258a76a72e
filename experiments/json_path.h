// Dotted key paths into JSON documents ("model.encoding_options.base"): lookup, assignment and
// removal, used by sweeps, command-line overrides and result tables.
#pragma once
#include <string>
#include <vector>

#include "core/options.h"

namespace pathbench {

// "a.b.c" → {"a", "b", "c"}; throws pathbench::Error (naming `where`) on an empty key or part.
std::vector<std::string> split_dotted(const std::string& key, const std::string& where);

// The value at `key`, or nullptr when some part is absent or not an object.
const json* find_dotted(const json& doc, const std::string& key);

// Sets the value at `key`, creating objects on the way; throws pathbench::Error when a part on the
// way holds something other than an object.
void set_dotted(json& doc, const std::string& key, json value, const std::string& where);

// Removes the value at `key` when present; returns whether it was.
bool erase_dotted(json& doc, const std::string& key);

}  // namespace pathbench
