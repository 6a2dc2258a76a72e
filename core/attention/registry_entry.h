// Helper for encoding files: builds an EncodingInfo whose factories construct the class template E
// for float and double.
#pragma once
#include "core/attention/registry.h"

namespace pathbench {

template <template <typename> class E>
EncodingInfo make_encoding_info(std::string name, std::string description, std::vector<OptionSpec> options,
                                std::function<std::string(int64_t)> head_dim_problem) {
  EncodingInfo info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.options = std::move(options);
  info.head_dim_problem = std::move(head_dim_problem);
  info.make_float = [](const EncodingSetup<float>& s) { return std::make_unique<E<float>>(s); };
  info.make_double = [](const EncodingSetup<double>& s) { return std::make_unique<E<double>>(s); };
  return info;
}

}  // namespace pathbench
