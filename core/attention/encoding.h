// The position-encoding interface. An encoding receives a layer's projected queries, keys and
// values (and the layer input, for encodings with their own projections such as FoX's gate or
// PaTH's Householder vectors) and computes the causal attention output; its backward returns the
// input gradients and accumulates its own parameters' gradients. Encodings are chosen by name from
// the registry (registry.h); the attention layer never knows which one it runs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "core/attention/op_registry.h"
#include "core/params/parameters.h"
#include "core/options.h"

namespace pathbench {

struct AttentionDims {
  int64_t batch = 0;    // B
  int64_t length = 0;   // T
  int64_t heads = 0;    // H
  int64_t head_dim = 0; // D
  int64_t width = 0;    // C, the model width (layer input features)
};

template <typename T>
struct AttentionInputs {
  AttentionDims dims;
  const T* x = nullptr;  // [B, T, C] the attention block's normalized input
  const T* q = nullptr;  // [B, H, T, D]
  const T* k = nullptr;  // [B, H, T, D]
  const T* v = nullptr;  // [B, H, T, D]
};

// One decoding step: the newest token of each of B sequences. dims.length is unused.
template <typename T>
struct DecodeInputs {
  AttentionDims dims;
  const T* x = nullptr;  // [B, C] the attention block's normalized input
  const T* q = nullptr;  // [B, H, D]
  const T* k = nullptr;  // [B, H, D]
  const T* v = nullptr;  // [B, H, D]
};

// An encoding's tensors of its last attention-op call (op_registry.h) beside q, k, v and o and their
// gradients, for recording the call (core/attention/op_call_record.h): the op it computes (empty:
// it cannot be recorded), its settings, and where it has them PaTH's w [B, H, T, D] and β
// [B, H, T], the cumulative log gates [B, H, T], and once a backward ran dw, dβ and the gradient
// with respect to the per-token log gates [B, H, T].
template <typename T>
struct OpCallView {
  OpCallView() = default;
  explicit OpCallView(std::string op_name) : op(std::move(op_name)) {}
  std::string op;
  OpSettings settings;  // scale 0: 1/sqrt(D)
  const T *w = nullptr, *dw = nullptr, *beta = nullptr, *dbeta = nullptr;
  const T *cum_gate = nullptr, *d_log_gate = nullptr;
};

// What an encoding keeps between decoding steps of one batch of sequences (its key/value cache).
class DecodeCache {
 public:
  virtual ~DecodeCache() = default;
};

template <typename T>
class PositionEncoding {
 public:
  virtual ~PositionEncoding() = default;

  // Sets this encoding's parameters (declared in its constructor) to their initial values.
  virtual void init_parameters(ParameterSet<T>& params, uint64_t seed) { (void)params, (void)seed; }

  // o: [B, H, T, D]. Keeps whatever backward needs (inputs stay valid until backward).
  virtual void forward(ParameterSet<T>& params, const AttentionInputs<T>& in, T* o) = 0;

  // Given d_o [B, H, T, D]: writes dq, dk, dv [B, H, T, D] (overwritten), adds the gradient with
  // respect to x into dx [B, T, C], and adds its parameters' gradients into params.
  virtual void backward(ParameterSet<T>& params, const AttentionInputs<T>& in, const T* o, const T* d_o, T* dq,
                        T* dk, T* dv, T* dx) = 0;

  // Incremental decoding. start_decode begins `dims.batch` empty sequences; each decode_step appends
  // one token to every sequence and writes its attention output o [B, H, D], equal to the last row
  // of forward() over the whole sequence so far. The default keeps every token's inputs and reruns
  // forward() over the whole prefix (O(t²) per step); encodings with a cheaper exact update
  // (PaTH's in-place key cache) override both.
  virtual std::unique_ptr<DecodeCache> start_decode(const AttentionDims& dims);
  virtual void decode_step(ParameterSet<T>& params, DecodeCache& cache, const DecodeInputs<T>& in, T* o);

  // The last call's own tensors (valid until the next forward; the gradients after its backward).
  virtual OpCallView<T> op_call() const { return {}; }
};

// What an encoding's constructor receives.
template <typename T>
struct EncodingSetup {
  json options;                 // resolved against the encoding's option specs (defaults filled)
  AttentionDims dims;           // width, heads and head_dim are set; batch and length are not
  std::string prefix;           // parameter name prefix, e.g. "layers.0.attn."
  ParameterSet<T>* params;      // where it declares its parameters
  double init_std = 0.02;       // the model's std for normal initialization of weight matrices
};

}  // namespace pathbench
