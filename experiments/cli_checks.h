// CLI11 validators with short, clear messages for the common integer arguments.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace pathbench {

// Accepts integers >= min_value; the message names the value and the bound.
inline CLI::Validator integer_at_least(long long min_value) {
  return CLI::Validator(
      [min_value](std::string& text) {
        try {
          size_t used = 0;
          long long v = std::stoll(text, &used);
          if (used == text.size() && v >= min_value) return std::string();
        } catch (const std::exception&) {
        }
        return "must be an integer >= " + std::to_string(min_value) + ", got '" + text + "'";
      },
      "INT>=" + std::to_string(min_value));
}

}  // namespace pathbench
