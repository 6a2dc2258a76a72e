// CLI11 validators with short, clear messages for the common integer and real arguments.
#pragma once
#include <CLI/CLI.hpp>
#include <cmath>
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

// Accepts finite numbers (above 0 when `positive`). NaN passes CLI11's own range checks, since
// every comparison with it is false; this one refuses it and the infinities.
inline CLI::Validator finite_number(bool positive) {
  return CLI::Validator(
      [positive](std::string& text) -> std::string {
        double x = 0;
        try {
          x = std::stod(text);
        } catch (const std::exception&) {
          return "not a number: '" + text + "'";
        }
        if (!std::isfinite(x)) return "must be a finite number, got '" + text + "'";
        if (positive && !(x > 0)) return "must be positive, got '" + text + "'";
        return "";
      },
      positive ? "NUMBER>0" : "NUMBER");
}

}  // namespace pathbench
