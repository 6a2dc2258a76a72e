// Multi-head causal attention block: q/k/v projections, the position encoding (chosen by name),
// output projection. Buffers are sized on the first forward and reused.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/attention/encoding.h"
#include "core/attention/op_call_record.h"
#include "core/model/model_config.h"

namespace pathbench {

template <typename T>
class AttentionLayer {
 public:
  AttentionLayer(ParameterSet<T>& params, const std::string& prefix, const ModelConfig& config);

  void init_parameters(ParameterSet<T>& params, uint64_t seed);
  // x: [B, T, C] (kept by the caller until backward); y: [B, T, C] (overwritten).
  void forward(ParameterSet<T>& params, const T* x, T* y, int64_t batch, int64_t length);
  // dy: [B, T, C]; dx: [B, T, C] (accumulated).
  void backward(ParameterSet<T>& params, const T* dy, T* dx);

  PositionEncoding<T>& encoding() { return *encoding_; }
  // The attention-op call of the last forward and backward (core/attention/op_call_record.h).
  // Throws pathbench::Error before a backward, or for an encoding that does not name its op.
  RecordedOpCall record_op_call() const;

  // Incremental decoding of `batch` sequences (PositionEncoding::start_decode): each step takes the
  // newest token's normalized input x [B, C] and writes the block's output y [B, C].
  std::unique_ptr<DecodeCache> start_decode(int64_t batch) const;
  void decode_step(ParameterSet<T>& params, DecodeCache& cache, const T* x, T* y, int64_t batch);

 private:
  AttentionDims dims_;
  typename ParameterSet<T>::Id wq_, wk_, wv_, wo_;  // each [H·D, C] or [C, H·D] (PyTorch layout)
  std::unique_ptr<PositionEncoding<T>> encoding_;
  std::string encoding_name_;
  double init_std_, out_init_std_;

  const T* x_ = nullptr;                         // [B, T, C] input of the last forward
  std::vector<T> q_, k_, v_;                     // [B, H, T, D]
  std::vector<T> o_;                             // [B, H, T, D] encoding output
  std::vector<T> flat_;                          // [B, T, H·D] projections before the head split / o merged
  std::vector<T> dq_, dk_, dv_, do_;             // [B, H, T, D]
  bool backward_done_ = false;                   // the last forward has had its backward
};

}  // namespace pathbench
