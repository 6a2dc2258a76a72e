// ModelConfig: option specs, strict parsing and serialization.
#include "core/model/model_config.h"

#include <fmt/format.h>

#include "core/attention/registry.h"
#include "core/error.h"

namespace pathbench {

const std::vector<OptionSpec>& ModelConfig::specs() {
  static const std::vector<OptionSpec> specs = {
      {"vocab_size", OptionType::Int, 0, "vocabulary size; 0 takes it from the task", 0.0},
      {"n_layers", OptionType::Int, 2, "number of transformer blocks", 1.0, 256.0},
      {"d_model", OptionType::Int, 128, "model width", 1.0, 65536.0},
      {"n_heads", OptionType::Int, 4, "attention heads (must divide d_model)", 1.0, 1024.0},
      {"mlp", OptionType::String, "swiglu", "MLP kind", {}, {}, {"swiglu", "gelu"}},
      {"mlp_hidden", OptionType::Int, 0, "MLP hidden width; 0: 4·d_model (gelu) or 8/3·d_model rounded up to 32 (swiglu)",
       0.0},
      {"tie_embeddings", OptionType::Bool, false, "LM head shares the token embedding matrix"},
      {"encoding", OptionType::String, "rope", "position encoding name (see the encodings table)"},
      {"encoding_options", OptionType::Object, json::object(), "options of the chosen encoding"},
      {"init_std", OptionType::Float, 0.02, "std of the normal initialization of weight matrices", 0.0, {}, {}, true},
      {"norm_eps", OptionType::Float, 1e-5, "RMSNorm epsilon", 0.0, {}, {}, true},
  };
  return specs;
}

int64_t ModelConfig::hidden() const {
  if (mlp_hidden > 0) return mlp_hidden;
  if (mlp == "gelu") return 4 * d_model;
  return (8 * d_model / 3 + 31) / 32 * 32;
}

json ModelConfig::to_json() const {
  return json{{"vocab_size", vocab_size}, {"n_layers", n_layers},       {"d_model", d_model},
              {"n_heads", n_heads},       {"mlp", mlp},                 {"mlp_hidden", mlp_hidden},
              {"tie_embeddings", tie_embeddings}, {"encoding", encoding}, {"encoding_options", encoding_options},
              {"init_std", init_std},     {"norm_eps", norm_eps}};
}

ModelConfig ModelConfig::from_json(const json& j, const std::string& where) {
  json r = resolve_options(specs(), j, where);
  ModelConfig c;
  c.vocab_size = r["vocab_size"];
  c.n_layers = r["n_layers"];
  c.d_model = r["d_model"];
  c.n_heads = r["n_heads"];
  c.mlp = r["mlp"];
  c.mlp_hidden = r["mlp_hidden"];
  c.tie_embeddings = r["tie_embeddings"];
  c.encoding = r["encoding"];
  c.init_std = r["init_std"];
  c.norm_eps = r["norm_eps"];
  if (c.d_model % c.n_heads != 0)
    throw Error(fmt::format("{}: key 'n_heads' has value {} which does not divide d_model {}", where, c.n_heads,
                            c.d_model));
  const EncodingInfo* found = nullptr;
  try {
    found = &find_encoding(c.encoding);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: key 'encoding': {}", where, e.what()));
  }
  const EncodingInfo& info = *found;
  c.encoding_options = resolve_options(info.options, r["encoding_options"], where + ".encoding_options");
  std::string problem = info.head_dim_problem(c.head_dim());
  if (!problem.empty())
    throw Error(fmt::format("{}: encoding '{}' with head dimension {} (d_model/n_heads): {}", where, c.encoding,
                            c.head_dim(), problem));
  return c;
}

}  // namespace pathbench
