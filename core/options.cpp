// Strict validation of option objects against declared specs, and their markdown reference.
#include "core/options.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace pathbench {

const char* option_type_name(OptionType t) {
  switch (t) {
    case OptionType::Int: return "int";
    case OptionType::Float: return "float";
    case OptionType::Bool: return "bool";
    case OptionType::String: return "string";
    case OptionType::Object: return "object";
    case OptionType::IntList: return "list of int";
    case OptionType::FloatList: return "list of float";
    case OptionType::StringList: return "list of string";
  }
  return "?";
}

namespace {

bool is_integer(const json& v) {
  if (v.is_number_integer()) return true;
  return v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>();
}

// The upper bound of a value: the spec's, or for integers without one 2^31 − 1, so that no count,
// size or step number can overflow the int arithmetic (or memory) that uses it.
std::optional<double> upper_bound(const OptionSpec& s) {
  if (s.max) return s.max;
  if (s.type == OptionType::Int || s.type == OptionType::IntList) return double(kMaxPlainInt);
  return std::nullopt;
}

std::string range_text(const OptionSpec& s) {
  if (!s.choices.empty()) {
    std::string out = "one of ";
    for (size_t i = 0; i < s.choices.size(); ++i) out += (i ? ", " : "") + s.choices[i];
    return out;
  }
  std::string lo = s.min ? fmt::format("{}{}", s.exclusive_min ? "> " : ">= ", *s.min) : "";
  const std::optional<double> max = upper_bound(s);
  std::string hi = max ? fmt::format("{}{}", s.exclusive_max ? "< " : "<= ", *max) : "";
  if (!lo.empty() && !hi.empty()) return lo + " and " + hi;
  return lo + hi;
}

void check_number(const OptionSpec& s, double x, const std::string& where, const json& shown) {
  bool low = s.min && (s.exclusive_min ? x <= *s.min : x < *s.min);
  const std::optional<double> max = upper_bound(s);
  bool high = max && (s.exclusive_max ? x >= *max : x > *max);
  if (!std::isfinite(x) || low || high)
    throw Error(fmt::format("{}: key '{}' has value {} out of range (must be {})", where, s.key, shown.dump(),
                            range_text(s)));
}

void check_choice(const OptionSpec& s, const json& v, const std::string& where) {
  if (s.choices.empty()) return;
  for (const auto& c : s.choices)
    if (v.get<std::string>() == c) return;
  throw Error(fmt::format("{}: key '{}' has value {} (must be {})", where, s.key, v.dump(), range_text(s)));
}

json check_value(const OptionSpec& s, const json& v, const std::string& where) {
  auto wrong_type = [&]() {
    return Error(fmt::format("{}: key '{}' has value {} of the wrong type (expected {})", where, s.key, v.dump(),
                             option_type_name(s.type)));
  };
  auto check_list = [&](auto element_ok) {
    if (!v.is_array()) throw wrong_type();
    for (const auto& e : v)
      if (!element_ok(e)) throw wrong_type();
  };
  switch (s.type) {
    case OptionType::Int:
      if (!is_integer(v) || v.is_boolean()) throw wrong_type();
      check_number(s, v.get<double>(), where, v);
      return json(v.get<int64_t>());
    case OptionType::Float:
      if (!v.is_number() || v.is_boolean()) throw wrong_type();
      check_number(s, v.get<double>(), where, v);
      return json(v.get<double>());
    case OptionType::Bool:
      if (!v.is_boolean()) throw wrong_type();
      return v;
    case OptionType::String:
      if (!v.is_string()) throw wrong_type();
      check_choice(s, v, where);
      return v;
    case OptionType::Object:
      if (!v.is_object()) throw wrong_type();
      return v;
    case OptionType::IntList: {
      check_list([](const json& e) { return is_integer(e) && !e.is_boolean(); });
      json out = json::array();
      for (const auto& e : v) {
        check_number(s, e.get<double>(), where, v);
        out.push_back(e.get<int64_t>());
      }
      return out;
    }
    case OptionType::FloatList:
      check_list([](const json& e) { return e.is_number() && !e.is_boolean(); });
      for (const auto& e : v) check_number(s, e.get<double>(), where, v);
      return v;
    case OptionType::StringList:
      check_list([](const json& e) { return e.is_string(); });
      for (const auto& e : v) check_choice(s, e, where);
      return v;
  }
  return v;
}

}  // namespace

json resolve_options(const std::vector<OptionSpec>& specs, const json& given, const std::string& where) {
  if (!given.is_null() && !given.is_object())
    throw Error(fmt::format("{}: expected an object, got {}", where, given.dump()));
  json out = json::object();
  if (given.is_object()) {
    for (const auto& [key, value] : given.items()) {
      bool known = false;
      for (const auto& s : specs) known = known || s.key == key;
      if (!known) {
        std::string allowed;
        for (const auto& s : specs) allowed += (allowed.empty() ? "" : ", ") + s.key;
        throw Error(fmt::format("{}: unknown key '{}' (allowed: {})", where, key, allowed.empty() ? "none" : allowed));
      }
    }
  }
  for (const auto& s : specs) {
    if (given.is_object() && given.contains(s.key)) {
      out[s.key] = check_value(s, given.at(s.key), where);
    } else if (s.default_value.is_null()) {
      throw Error(fmt::format("{}: missing required key '{}' ({})", where, s.key, s.doc));
    } else {
      out[s.key] = s.default_value;
    }
  }
  return out;
}

std::string options_markdown(const std::vector<OptionSpec>& specs) {
  std::string out = "| key | type | default | range | meaning |\n|---|---|---|---|---|\n";
  for (const auto& s : specs)
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", s.key, option_type_name(s.type),
                       s.default_value.is_null() ? std::string("required") : fmt::format("`{}`", s.default_value.dump()),
                       range_text(s), s.doc);
  return out;
}

}  // namespace pathbench
