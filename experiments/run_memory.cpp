// estimate_cpu_run_memory: parameter and activation counts of the transformer of core/model.
#include "experiments/run_memory.h"

#include <fmt/format.h>
#include <unistd.h>

#include "core/error.h"

namespace pathbench {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Floats the CPU model keeps per token and layer for the backward: the residual input, the two
// norms' outputs, q, k, v and their per-head copies, the attention output before and after the
// head merge, the projection, the MLP's input-side products and activation (three of width hidden
// for SwiGLU, two for GELU) and its output.
double floats_per_token_and_layer(const ModelConfig& m) {
  const double c = double(m.d_model), h = double(m.hidden());
  return 14.0 * c + (m.mlp == "swiglu" ? 3.0 : 2.0) * h;
}

}  // namespace

RunMemoryEstimate estimate_cpu_run_memory(const ModelConfig& m, double batch_tokens) {
  const double c = double(m.d_model), h = double(m.hidden()), v = double(m.vocab_size), layers = double(m.n_layers);
  const double per_layer = 4.0 * c * c + (m.mlp == "swiglu" ? 3.0 : 2.0) * c * h + 2.0 * c;
  const double params = (m.tie_embeddings ? 1.0 : 2.0) * v * c + layers * per_layer + c;
  RunMemoryEstimate e;
  e.parameter_bytes = 4.0 * 4.0 * params;  // values, gradients, m, v in fp32
  // logits and their softmax per token, besides every layer's tensors
  e.activation_bytes = 4.0 * batch_tokens * (layers * floats_per_token_and_layer(m) + 2.0 * v);
  return e;
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? double(pages) * double(page) : 0.0;
}

void check_cpu_run_fits(const RunMemoryEstimate& e, double available, const std::string& where) {
  if (available <= 0 || e.total() <= available) return;
  throw Error(fmt::format("{}: the run needs at least {:.1f} GiB of memory ({:.1f} GiB of parameters with their "
                          "gradients and AdamW moments, {:.1f} GiB of activations for its largest batch), more than "
                          "this machine's {:.1f} GiB; make the model or the batch smaller",
                          where, e.total() / kGiB, e.parameter_bytes / kGiB, e.activation_bytes / kGiB,
                          available / kGiB));
}

}  // namespace pathbench
