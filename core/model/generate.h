// Greedy generation from a prompt with any encoding, through the model's incremental decoding.
#pragma once
#include <cstdint>
#include <vector>

#include "core/model/transformer.h"

namespace pathbench {

// Feeds `prompt` (at least one token) one token at a time, then appends n_new tokens, each the
// argmax of the logits after the previous one (ties: the lowest id). Returns the n_new tokens.
template <typename T>
std::vector<int32_t> greedy_generate(Transformer<T>& model, const std::vector<int32_t>& prompt, int64_t n_new);

}  // namespace pathbench
