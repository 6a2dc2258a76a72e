// The pre-norm decoder-only transformer: embedding → N × [RMSNorm → attention(PE) → residual →
// RMSNorm → MLP → residual] → RMSNorm → LM head, with explicit forward and backward. Templated on
// the scalar so tests can run the same code in float64.
#pragma once
#include <memory>
#include <vector>

#include "core/model/attention_layer.h"
#include "core/model/batch.h"
#include "core/model/mlp_layer.h"
#include "core/model/model_config.h"
#include "core/params/parameters.h"

namespace pathbench {

template <typename T>
class Transformer {
 public:
  explicit Transformer(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }
  ParameterSet<T>& params() { return params_; }
  const ParameterSet<T>& params() const { return params_; }
  void init_parameters(uint64_t seed);

  // tokens: [B, T]. Afterwards logits() is [B·T, V].
  void forward(const int32_t* tokens, int64_t batch, int64_t length);
  const std::vector<T>& logits() const { return logits_; }

  // Masked cross-entropy of the last forward's logits; keeps what backward needs.
  T loss(const int32_t* targets, const float* weights);
  // forward + loss over a batch.
  T forward_loss(const TokenBatch& batch);
  // Accumulates d(loss)/d(parameters) of the last loss() into params().grads().
  void backward();
  // Layer `layer`'s attention-op call of the last forward and backward (core/attention/op_call_record.h).
  RecordedOpCall record_attention_call(int64_t layer) const;

  // Incremental decoding of `batch` sequences, one token per sequence per step. Each step's logits
  // equal forward()'s logits at that position over the whole prefix; encodings with an exact
  // incremental cache (PaTH) pay O(prefix) per step, the others rerun their attention.
  struct DecodeState {
    int64_t batch = 0;
    std::vector<std::unique_ptr<DecodeCache>> layers;
  };
  DecodeState start_decode(int64_t batch) const;
  // tokens: [B] the next token of each sequence; logits: [B, V].
  void decode_step(DecodeState& state, const int32_t* tokens, T* logits);

 private:
  struct Block {
    typename ParameterSet<T>::Id norm1, norm2;  // [C] each
    std::unique_ptr<AttentionLayer<T>> attn;
    std::unique_ptr<MlpLayer<T>> mlp;
    std::vector<T> x_in, xn1, x_mid, xn2;   // [N, C] residual input, normed, after attention, normed
    std::vector<T> rstd1, rstd2;            // [N]
  };

  ModelConfig config_;
  ParameterSet<T> params_;
  typename ParameterSet<T>::Id embedding_, final_norm_, head_;  // [V, C], [C], [V, C] (head = embedding if tied)
  std::vector<Block> blocks_;

  int64_t batch_ = 0, length_ = 0;
  std::vector<int32_t> tokens_;          // [N]
  const int32_t* targets_ = nullptr;     // [N] of the last loss()
  const float* weights_ = nullptr;       // [N]
  std::vector<T> x_out_, xn_out_, rstd_out_;  // [N, C], [N, C], [N] final residual, normed, rstd
  std::vector<T> logits_, probs_;        // [N, V]
  std::vector<T> d_logits_, d_x_, d_tmp_; // [N, V], [N, C], [N, C]
};

}  // namespace pathbench
