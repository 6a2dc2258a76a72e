// A lower estimate of the host memory a CPU run needs: parameters with their gradients and AdamW
// moments, and the activations the model keeps from the forward for the backward over the largest
// batch it runs (training, or forward-only evaluation). A config whose estimate exceeds the
// machine's memory is refused at validation, naming the sizes, instead of failing in an
// allocation once the run has started.
#pragma once
#include <cstdint>
#include <string>

#include "core/model/model_config.h"

namespace pathbench {

struct RunMemoryEstimate {
  double parameter_bytes = 0;   // values, gradients, both AdamW moments
  double activation_bytes = 0;  // per batch: every layer's kept tensors and the logits
  double total() const { return parameter_bytes + activation_bytes; }
};

// model.vocab_size must be resolved (non-zero). batch_tokens: the tokens of the largest batch the run
// processes (batch size × the longest sequence).
RunMemoryEstimate estimate_cpu_run_memory(const ModelConfig& model, double batch_tokens);

// Physical memory of this machine in bytes (0 where it cannot be read).
double physical_memory_bytes();

// Throws pathbench::Error naming `where` and the sizes when the estimate exceeds `available` bytes.
void check_cpu_run_fits(const RunMemoryEstimate& estimate, double available, const std::string& where);

}  // namespace pathbench
