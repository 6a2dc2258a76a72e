// GPU twin of attention_layer.h: fused q/k/v projection (the three weights are adjacent in the
// parameter buffer, so they form one [3·H·D, C] matrix), head split, the GPU position encoding
// chosen by name, head merge, output projection. Attention tensors are bf16 in bf16 mode, fp32
// otherwise; make_attention_layer picks.
#pragma once
#include <memory>
#include <string>

#include "core/attention/op_call_record.h"
#include "core/cuda/context.h"
#include "core/cuda/pass.h"
#include "core/model/model_config.h"
#include "core/ops/cuda/linear.h"
#include "core/params/cuda/parameters.h"

namespace pathbench::cuda {

class AttentionBlock {
 public:
  virtual ~AttentionBlock() = default;
  // Sizes the buffers (the encoding's too) for [batch, length], the gradients' only for
  // Pass::training; true when any was reallocated.
  virtual bool reserve(int64_t batch, int64_t length, Pass pass) = 0;
  // x: [B, T, C] in fp32 (the encodings' own projections read it), with its bf16 copy where the
  // caller has one (both kept by the caller until backward); y: [B, T, C] += attention(x).
  virtual void forward(MatrixInput x, float* y, int64_t batch, int64_t length) = 0;
  // dy: [B, T, C], with its bf16 copy where the caller has one; dx: [B, T, C] (overwritten).
  virtual void backward(MatrixInput dy, float* dx) = 0;
  // The attention-op call of the last forward and backward, downloaded (synchronizes).
  virtual RecordedOpCall record_op_call() const = 0;
};

std::unique_ptr<AttentionBlock> make_attention_layer(Context& ctx, CudaParameters& params, const std::string& prefix,
                                                     const ModelConfig& config);

}  // namespace pathbench::cuda
