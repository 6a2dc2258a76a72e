// The GPU side of a position encoding, mirroring encoding.h: it receives a layer's projected
// queries, keys and values on the device (and the layer input, for encodings with their own
// projections) and computes the causal attention output; its backward returns the input gradients
// and accumulates its parameters' gradients into the device parameter set. The [BH, T, D] tensors
// are stored as S: float, or bf16 in bf16 mode. Every call only queues work on the context's stream
// (no allocation, no synchronization), so a training step can be captured in a CUDA graph; buffers
// are sized by reserve(), which the model calls before the first forward at new dimensions (and
// for a pass: the backward's buffers only when it trains, core/cuda/pass.h).
// Encodings are chosen by name from the registry (registry.h, make_cuda_encoding).
#pragma once
#include <cuda_bf16.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "core/attention/encoding.h"
#include "core/attention/kernel_args.h"
#include "core/attention/op_registry.h"
#include "core/cuda/context.h"
#include "core/cuda/pass.h"
#include "core/params/cuda/parameters.h"

namespace pathbench::cuda {

template <typename S>
struct AttentionInputs {
  AttentionDims dims;
  const float* x = nullptr;  // [B, T, C] the attention block's normalized input
  const S* q = nullptr;      // [B, H, T, D]
  const S* k = nullptr;      // [B, H, T, D]
  const S* v = nullptr;      // [B, H, T, D]
  const __nv_bfloat16* x16 = nullptr;  // [B, T, C] x rounded to bf16, where the block has it (bf16 mode)
};

// An encoding's tensors of its last attention-op call (op_registry.h) beside q, k, v and o and their
// gradients, on the device, for recording the call (core/attention/op_call_record.h): the op it
// computes, its settings, and where it has them PaTH's w [B, H, T, D] and β [B, H, T], the
// cumulative log gates c [B, H, T], and their gradients once a backward ran.
template <typename S>
struct OpCallTensors {
  explicit OpCallTensors(std::string op_name) : op(std::move(op_name)) {}
  std::string op;
  OpSettings settings;  // scale 0: 1/sqrt(D)
  const S *w = nullptr, *dw = nullptr;
  const float *beta = nullptr, *dbeta = nullptr;
  const float *cum_gate = nullptr, *d_cum_gate = nullptr;
};

template <typename S>
class PositionEncoding {
 public:
  virtual ~PositionEncoding() = default;

  // Sizes this encoding's buffers for dims (outside graph capture), those of backward only for
  // Pass::training; true when any was reallocated.
  virtual bool reserve(const AttentionDims& dims, Pass pass) = 0;

  // o: [B, H, T, D]. Keeps whatever backward needs (inputs stay valid until backward).
  virtual void forward(CudaParameters& params, const AttentionInputs<S>& in, S* o) = 0;

  // Given d_o: writes dq, dk, dv (overwritten), adds the gradient with respect to x into dx
  // [B, T, C], and adds its parameters' gradients into params.
  virtual void backward(CudaParameters& params, const AttentionInputs<S>& in, const S* o, const S* d_o, S* dq,
                        S* dk, S* dv, float* dx) = 0;

  // The last call's own tensors (valid until the next forward; the gradients after its backward).
  virtual OpCallTensors<S> op_call() const = 0;
};

// What a GPU encoding's constructor receives. Its parameters were declared by the CPU encoding of
// the same name into `layout` (same names, so checkpoints are interchangeable); it finds them there.
struct EncodingSetup {
  json options;                       // resolved against the encoding's option specs
  AttentionDims dims;                 // width, heads and head_dim are set
  std::string prefix;                 // parameter name prefix, e.g. "layers.0.attn."
  const ParameterSet<float>* layout;  // the host parameter set
  Context* context;                   // stream, cuBLAS, precision
};

// The factories of one GPU encoding class template E (E<float>, E<bf16>), for gpu_registry.cpp.
struct EncodingFactories {
  std::function<std::unique_ptr<PositionEncoding<float>>(const EncodingSetup&)> make_float;
  std::function<std::unique_ptr<PositionEncoding<__nv_bfloat16>>(const EncodingSetup&)> make_bf16;
};
template <template <typename> class E>
EncodingFactories make_encoding_factories() {
  return {[](const EncodingSetup& s) { return std::make_unique<E<float>>(s); },
          [](const EncodingSetup& s) { return std::make_unique<E<__nv_bfloat16>>(s); }};
}

// Builds the GPU implementation of encoding `name` (options validated; `where` names the config
// location). Throws pathbench::Error when the encoding has none.
template <typename S>
std::unique_ptr<PositionEncoding<S>> make_cuda_encoding(const std::string& name, const json& options,
                                                        const EncodingSetup& setup, const std::string& where);

}  // namespace pathbench::cuda
