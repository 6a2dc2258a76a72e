// The registry of position encodings by name. Adding an encoding is one file with its class and
// one line in registry.cpp; the conformance tests iterate over this list.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/attention/encoding.h"

namespace pathbench {

struct EncodingInfo {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  // Returns an empty string when the head dimension is supported, else the reason.
  std::function<std::string(int64_t head_dim)> head_dim_problem;
  std::function<std::unique_ptr<PositionEncoding<float>>(const EncodingSetup<float>&)> make_float;
  std::function<std::unique_ptr<PositionEncoding<double>>(const EncodingSetup<double>&)> make_double;
};

const std::vector<EncodingInfo>& encoding_registry();
// Throws pathbench::Error naming the unknown encoding and listing the known ones.
const EncodingInfo& find_encoding(const std::string& name);
std::vector<std::string> encoding_names();

// Builds encoding `name` with `options` (validated here; `where` names the config location).
template <typename T>
std::unique_ptr<PositionEncoding<T>> make_encoding(const std::string& name, const json& options,
                                                   const EncodingSetup<T>& setup, const std::string& where);

}  // namespace pathbench
