// Dotted key paths: split, find, set and erase.
#include "experiments/json_path.h"

#include <fmt/format.h>

#include "core/error.h"

namespace pathbench {

std::vector<std::string> split_dotted(const std::string& key, const std::string& where) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (parts.back().empty()) throw Error(fmt::format("{}: key '{}' has an empty part", where, key));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

namespace {

// The node at `key` in a const or mutable document, or nullptr.
template <typename J>
J* find_node(J& doc, const std::string& key) {
  J* node = &doc;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

}  // namespace

const json* find_dotted(const json& doc, const std::string& key) { return find_node(doc, key); }

void set_dotted(json& doc, const std::string& key, json value, const std::string& where) {
  const std::vector<std::string> parts = split_dotted(key, where);
  json* node = &doc;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    json& child = (*node)[parts[i]];
    if (child.is_null()) child = json::object();
    if (!child.is_object()) {
      std::string prefix;
      for (size_t k = 0; k <= i; ++k) prefix += (k ? "." : "") + parts[k];
      throw Error(fmt::format("{}: cannot set key '{}': '{}' holds {}, not an object", where, key, prefix,
                              child.dump()));
    }
    node = &child;
  }
  (*node)[parts.back()] = std::move(value);
}

bool erase_dotted(json& doc, const std::string& key) {
  const size_t dot = key.rfind('.');
  json* parent = &doc;
  if (dot != std::string::npos) {
    parent = find_node(doc, key.substr(0, dot));
    if (!parent) return false;
  }
  const std::string last = dot == std::string::npos ? key : key.substr(dot + 1);
  return parent->is_object() && parent->erase(last) > 0;
}

}  // namespace pathbench
