// Declared options: a component (an encoding, a task, the runner) lists the keys it accepts with
// type, default, range and meaning; `resolve_options` validates a JSON object against that list
// strictly and fills in defaults. The same list feeds the config reference. Also the project's
// `json` type, with the one rule for numbers JSON cannot hold.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pathbench {

using json = nlohmann::json;

// JSON has no NaN or infinity: `x` when finite, else null.
inline json finite_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

enum class OptionType { Int, Float, Bool, String, Object, IntList, FloatList, StringList };

// The largest value of an integer option that names no bound of its own (2^31 − 1).
inline constexpr int64_t kMaxPlainInt = 2147483647;

struct OptionSpec {
  std::string key;
  OptionType type;
  json default_value;               // null: the key is required
  std::string doc;
  std::optional<double> min = {};   // inclusive bound for numbers (and list elements)
  std::optional<double> max = {};   // inclusive bound (integers without one: kMaxPlainInt)
  std::vector<std::string> choices = {};  // allowed strings (String, StringList)
  bool exclusive_min = false;       // min is exclusive
  bool exclusive_max = false;       // max is exclusive
};

const char* option_type_name(OptionType t);

// Validates `given` (an object, or null meaning empty) against `specs`: rejects unknown keys, wrong
// types and out-of-range values with an Error that names `where`, the key and the value. Returns
// the object with every key present (defaults filled in).
json resolve_options(const std::vector<OptionSpec>& specs, const json& given, const std::string& where);

// A markdown table of the specs (key, type, default, range, meaning), for the config reference.
std::string options_markdown(const std::vector<OptionSpec>& specs);

}  // namespace pathbench
