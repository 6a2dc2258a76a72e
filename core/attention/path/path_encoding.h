// The PaTH encoding (and PaTH-FoX, the same with a forget gate): PathProjection makes w and β
// from the layer input, the PaTH kernel (path.h) attends, and ForgetGate (fox.h) adds the FoX bias
// when enabled. Decoding keeps PaTH's key cache transformed in place.
#pragma once
#include <memory>
#include <vector>

#include "core/attention/fox/fox.h"
#include "core/attention/path/path_projection.h"

namespace pathbench {

template <typename T>
class PathEncoding : public PositionEncoding<T> {
 public:
  PathEncoding(const EncodingSetup<T>& setup, bool with_gate);

  void init_parameters(ParameterSet<T>& params, uint64_t seed) override;
  void forward(ParameterSet<T>& params, const AttentionInputs<T>& in, T* o) override;
  void backward(ParameterSet<T>& params, const AttentionInputs<T>& in, const T* o, const T* d_o, T* dq, T* dk, T* dv,
                T* dx) override;
  std::unique_ptr<DecodeCache> start_decode(const AttentionDims& dims) override;
  void decode_step(ParameterSet<T>& params, DecodeCache& cache, const DecodeInputs<T>& in, T* o) override;
  OpCallView<T> op_call() const override;

 private:
  PathProjection<T> projection_;
  std::unique_ptr<ForgetGate<T>> gate_;  // null for plain PaTH
  const T* cum_ = nullptr;               // [BH, T] the gate's output of the last forward
  std::vector<T> lse_;                   // [BH, T]
  std::vector<T> dw_, dbeta_, dcum_;     // [BH, T, D], [BH, T], [BH, T] (dcum_: d/dg after backward)
};

// The options of `path` (with_gate false) or `path_fox` (true).
std::vector<OptionSpec> path_encoding_options(bool with_gate);

}  // namespace pathbench
