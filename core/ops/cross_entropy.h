// Masked cross-entropy: loss = Σ_n w_n · (−log softmax(logits_n)[target_n]) / Σ_n w_n.
// Positions with weight 0 do not count (the task scores only some positions).
#pragma once
#include <cstdint>

namespace pathbench {

// logits: [N, V]; targets: [N]; weights: [N]. Writes probs [N, V] (softmax, kept for backward)
// and returns the loss (0 when every weight is 0).
template <typename T>
T cross_entropy_forward(const T* logits, const int32_t* targets, const float* weights, T* probs, int64_t n,
                        int64_t v);
// dlogits[N, V] = dloss · w_n (probs − onehot) / Σ w (overwritten).
template <typename T>
void cross_entropy_backward(const T* probs, const int32_t* targets, const float* weights, T dloss, T* dlogits,
                            int64_t n, int64_t v);

}  // namespace pathbench
