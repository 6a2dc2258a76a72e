// Checkpoint save/load through safetensors.
#include "experiments/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/io/safetensors.h"
#include "experiments/file_output.h"

namespace pathbench {

namespace {

constexpr const char* kFormat = "pathbench-checkpoint-1";

SafetensorsContent read_checkpoint_file(const std::string& path) {
  SafetensorsContent content = parse_safetensors(read_file(path), path);
  auto it = content.metadata.find("format");
  if (it == content.metadata.end() || it->second != kFormat)
    throw Error(fmt::format("{}: not a pathbench checkpoint (metadata 'format' is not '{}')", path, kFormat));
  return content;
}

// Copies tensor `name` of the file into dst (size n), checking its presence, shape and that every
// value is finite.
void copy_tensor(const SafetensorsContent& content, const std::string& path, const std::string& name,
                 const std::vector<int64_t>& shape, float* dst) {
  auto it = content.tensors.find(name);
  if (it == content.tensors.end()) throw Error(fmt::format("{}: tensor '{}' is missing", path, name));
  if (it->second.shape != shape)
    throw Error(fmt::format("{}: tensor '{}' has shape [{}], expected [{}]", path, name,
                            fmt::join(it->second.shape, ", "), fmt::join(shape, ", ")));
  std::vector<float> values = tensor_values<float>(it->second, fmt::format("{}: tensor '{}'", path, name));
  // A model or optimizer state with NaN or ∞ cannot continue or generate anything meaningful.
  const auto bad = std::find_if(values.begin(), values.end(), [](float x) { return !std::isfinite(x); });
  if (bad != values.end())
    throw Error(fmt::format("{}: tensor '{}' has a non-finite value ({}) at flat index {}", path, name, *bad,
                            bad - values.begin()));
  std::copy(values.begin(), values.end(), dst);
}

}  // namespace

void save_checkpoint(const std::string& path, const ModelConfig& config, const ParameterSet<float>& params,
                     const OptimizerState* optimizer, const std::map<std::string, std::string>& metadata) {
  SafetensorsContent content;
  content.metadata = metadata;
  content.metadata["format"] = kFormat;
  content.metadata["model_config"] = config.to_json().dump();
  if (optimizer) check_optimizer_state(*optimizer, params.count());
  for (const auto& e : params.entries()) {
    content.tensors[e.name] = make_tensor(params.values().data() + e.offset, e.shape);
    if (optimizer) {
      content.tensors["optimizer.m." + e.name] = make_tensor(optimizer->first_moment.data() + e.offset, e.shape);
      content.tensors["optimizer.v." + e.name] = make_tensor(optimizer->second_moment.data() + e.offset, e.shape);
    }
  }
  if (optimizer) content.metadata["optimizer_step"] = std::to_string(optimizer->steps);
  write_file_atomically(path, serialize_safetensors(content));
}

void save_checkpoint(const std::string& path, const Transformer<float>& model, const AdamW<float>* optimizer,
                     const std::map<std::string, std::string>& metadata) {
  if (!optimizer) return save_checkpoint(path, model.config(), model.params(), nullptr, metadata);
  const OptimizerState state{optimizer->first_moment(), optimizer->second_moment(), optimizer->steps()};
  save_checkpoint(path, model.config(), model.params(), &state, metadata);
}

LoadedCheckpoint load_checkpoint(const std::string& path) {
  SafetensorsContent content = read_checkpoint_file(path);
  json config_json;
  try {
    config_json = json::parse(content.metadata.at("model_config"));
  } catch (const std::exception&) {
    throw Error(fmt::format("{}: metadata 'model_config' is missing or not JSON", path));
  }
  LoadedCheckpoint out;
  out.model = std::make_unique<Transformer<float>>(ModelConfig::from_json(config_json, path + ": model_config"));
  auto& params = out.model->params();
  for (const auto& e : params.entries()) copy_tensor(content, path, e.name, e.shape, params.values().data() + e.offset);
  out.metadata = std::move(content.metadata);
  return out;
}

OptimizerState load_optimizer_state(const std::string& path, const ParameterSet<float>& params) {
  SafetensorsContent content = read_checkpoint_file(path);
  auto step = content.metadata.find("optimizer_step");
  if (step == content.metadata.end()) throw Error(fmt::format("{}: holds no optimizer state", path));
  OptimizerState state{std::vector<float>(params.count()), std::vector<float>(params.count()), 0};
  for (const auto& e : params.entries()) {
    copy_tensor(content, path, "optimizer.m." + e.name, e.shape, state.first_moment.data() + e.offset);
    copy_tensor(content, path, "optimizer.v." + e.name, e.shape, state.second_moment.data() + e.offset);
  }
  state.steps = std::stoll(step->second);
  return state;
}

void load_optimizer_state(const std::string& path, const Transformer<float>& model, AdamW<float>& optimizer) {
  OptimizerState state = load_optimizer_state(path, model.params());
  optimizer.first_moment() = std::move(state.first_moment);
  optimizer.second_moment() = std::move(state.second_moment);
  optimizer.set_steps(state.steps);
}

}  // namespace pathbench
