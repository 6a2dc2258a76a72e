// The GPU transformer: the same model as transformer.h (embedding → N × [RMSNorm → attention(PE) →
// residual → RMSNorm → MLP → residual] → RMSNorm → LM head) with fp32 master weights on the device
// and products at a selectable precision (fp32, tf32, bf16 with fp32 accumulation).
//
// Results API as the CPU Transformer<float>: forward_loss(batch), backward() accumulating into the
// gradients, params() a ParameterSet<float> with the same names and layout (it is built by a host
// Transformer<float> of the same config, so initialization and checkpoints are interchangeable).
// The host set is a mirror: download_parameters() refreshes it from the device, upload_parameters()
// sends it back.
//
// For CUDA graphs, a training step is split into prepare() (host work: validation, buffer sizing,
// staging the batch in page-locked memory) and enqueue_*() calls that only queue device work.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cuda/context.h"
#include "core/model/batch.h"
#include "core/model/cuda/attention_layer.h"
#include "core/model/cuda/mlp_layer.h"
#include "core/params/cuda/parameters.h"
#include "core/model/transformer.h"
#include "core/ops/cuda/ops.h"

namespace pathbench::cuda {

class Transformer {
 public:
  Transformer(const ModelConfig& config, Precision precision);

  const ModelConfig& config() const { return host_.config(); }
  Context& context() { return ctx_; }
  CudaParameters& device_params() { return device_params_; }

  // The host mirror of the parameters (names, layout, checkpoints).
  ParameterSet<float>& params() { return host_.params(); }
  // Initializes exactly as Transformer<float>::init_parameters(seed) and uploads.
  void init_parameters(uint64_t seed);
  void upload_parameters();
  ParameterSet<float>& download_parameters();  // values and gradients

  // forward + masked loss over a batch, like the CPU model; synchronizes. Pass::forward (evaluation)
  // sizes no gradient buffer for the batch, and then backward() is refused.
  float forward_loss(const TokenBatch& batch, Pass pass = Pass::training);
  // Accumulates d(loss)/d(parameters) of the last forward_loss into the device gradients; synchronizes.
  void backward();
  // Of the last forward: logits [B·T, V].
  std::vector<float> download_logits();
  // Evaluation: a forward-only pass's loss and the argmax of each row [B·T] into `argmax`, with one
  // wait for the device (the loss and the argmax come back together).
  float predict(const TokenBatch& batch, std::vector<int32_t>& argmax);
  // Layer `layer`'s attention-op call of the last forward and backward (core/attention/op_call_record.h).
  RecordedOpCall record_attention_call(int64_t layer) const;

  // ---- the pieces of a step, for the trainer and graph capture ----
  // Validates the batch, sizes the buffers of `pass` for it and stages it in page-locked memory.
  void prepare(const TokenBatch& batch, Pass pass);
  // Counts the prepare() calls that reallocated a device buffer: a graph captured at another
  // generation holds stale pointers.
  uint64_t buffer_generation() const { return generation_; }
  void enqueue_upload();    // staged batch → device
  void enqueue_forward();
  void enqueue_loss();
  void enqueue_backward();
  // Σ w·loss and Σ w of the last loss, in device memory.
  const CrossEntropyTotals* loss_totals() const { return totals_.data(); }

 private:
  struct Block {
    CudaParameters::Id norm1, norm2;
    std::unique_ptr<AttentionBlock> attn;
    std::unique_ptr<MlpLayer> mlp;
    DeviceBuffer<float> xn1{"normed residual"}, x_mid{"residual"};  // [N, C]; x_mid for training only
    DeviceBuffer<float> xn2{"normed residual"};  // [N, C], fp32 and tf32 modes only
    DeviceBuffer<bf16> xn1_16{"normed residual"}, xn2_16{"normed residual"};  // [N, C], bf16 mode only
    DeviceBuffer<float> rstd1{"norm statistics"}, rstd2{"norm statistics"};                // [N]
  };

  void enqueue_forward_loss(const TokenBatch& batch, Pass pass);  // prepare, upload, forward, loss
  float read_loss();
  size_t staged_int_count() const;  // of staged_ints_ for the prepared pass

  pathbench::Transformer<float> host_;  // layout, initialization, host mirror of the values
  Context ctx_;
  CudaParameters device_params_;
  CudaParameters::Id embedding_, final_norm_, head_;
  std::vector<Block> blocks_;

  int64_t batch_ = 0, length_ = 0;
  Pass pass_ = Pass::forward;  // what the last prepare() sized the buffers for
  uint64_t generation_ = 0;
  EmbeddingPlanLayout plan_layout_;
  PinnedBuffer<int32_t> staged_ints_{"the staged batch"};    // tokens [N] | targets [N] | embedding plan (training)
  PinnedBuffer<float> staged_weights_{"the staged batch"};   // [N]
  DeviceBuffer<int32_t> batch_ints_{"the batch"};            // as staged
  DeviceBuffer<float> batch_weights_{"the batch"};           // [N]
  std::vector<DeviceBuffer<float>> residual_;                // L + 1 × [N, C]: block l's input, the output
                                                             // (a forward-only pass: [0] alone, in place)
  DeviceBuffer<float> xn_out_{"normed output"};              // [N, C], fp32 and tf32 modes only
  DeviceBuffer<float> rstd_out_{"norm statistics"};          // [N]
  DeviceBuffer<bf16> xn_out16_{"normed output"};             // [N, C], bf16 mode only
  DeviceBuffer<float> logits_{"logits"}, probs_{"probabilities"};  // [N, V]
  DeviceBuffer<float> d_logits_{"logit gradients"};           // [N, V], fp32 and tf32 modes
  DeviceBuffer<bf16> d_logits16_{"logit gradients"};          // [N, V], bf16 mode
  DeviceBuffer<CrossEntropyTotals> loss_partials_{"loss partial sums"};  // [cross_entropy_blocks(N, V)]
  DeviceBuffer<CrossEntropyTotals> totals_{"loss totals"};   // [1]
  DeviceBuffer<float> d_x_{"residual gradient"}, d_tmp_{"gradient scratch"};  // [N, C]
  DeviceBuffer<bf16> d_x16_{"residual gradient"};             // [N, C], bf16 mode: d_x rounded
  DeviceBuffer<float> scratch_{"column-sum scratch"};        // column sums and embedding segment sums
  DeviceBuffer<int32_t> argmax_{"argmax"};                   // [N]
  PinnedBuffer<CrossEntropyTotals> totals_host_{"loss totals"};
  PinnedBuffer<int32_t> argmax_host_{"argmax"};              // [N]
};

}  // namespace pathbench::cuda
