// Model checkpoints as safetensors files: every parameter under its model name (PyTorch layout),
// the model config (and any caller metadata) in the header's __metadata__, and optionally the
// AdamW moments ("optimizer.m.<name>", "optimizer.v.<name>") and step so training can resume.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "core/model/transformer.h"
#include "core/optim/adamw.h"
#include "core/optim/training_backend.h"

namespace pathbench {

struct LoadedCheckpoint {
  std::unique_ptr<Transformer<float>> model;
  std::map<std::string, std::string> metadata;  // includes "model_config" (JSON text)
};

// Writes atomically; `optimizer` may be null. `metadata` entries are added to the header.
void save_checkpoint(const std::string& path, const ModelConfig& config, const ParameterSet<float>& params,
                     const OptimizerState* optimizer, const std::map<std::string, std::string>& metadata = {});
void save_checkpoint(const std::string& path, const Transformer<float>& model, const AdamW<float>* optimizer,
                     const std::map<std::string, std::string>& metadata = {});
// Rebuilds the model from the embedded config and loads its parameters. Errors name the path.
LoadedCheckpoint load_checkpoint(const std::string& path);
// The AdamW moments and step saved with the parameters `params` (names and shapes); errors when the
// file holds none.
OptimizerState load_optimizer_state(const std::string& path, const ParameterSet<float>& params);
// Restores AdamW moments and step saved with the model; errors when the file holds none.
void load_optimizer_state(const std::string& path, const Transformer<float>& model, AdamW<float>& optimizer);

}  // namespace pathbench
