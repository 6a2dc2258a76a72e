// The transformer's shape and components, read from (and written to) the `model` block of a config.
#pragma once
#include <string>
#include <vector>

#include "core/options.h"

namespace pathbench {

struct ModelConfig {
  int64_t vocab_size = 0;          // 0 in a config: taken from the task
  int64_t n_layers = 2;
  int64_t d_model = 128;
  int64_t n_heads = 4;
  std::string mlp = "swiglu";      // swiglu | gelu
  int64_t mlp_hidden = 0;          // 0: 4·d_model for gelu, 8/3·d_model rounded up to 32 for swiglu
  bool tie_embeddings = false;
  std::string encoding = "rope";
  json encoding_options = json::object();
  double init_std = 0.02;
  double norm_eps = 1e-5;

  int64_t head_dim() const { return d_model / n_heads; }
  int64_t hidden() const;

  json to_json() const;
  // Strictly validated (unknown keys, types, ranges, encoding name, options and head dimension);
  // errors name `where` and the key.
  static ModelConfig from_json(const json& j, const std::string& where);
  static const std::vector<OptionSpec>& specs();
};

}  // namespace pathbench
