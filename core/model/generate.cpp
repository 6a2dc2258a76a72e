// Greedy generation: prompt through decode steps, then argmax feedback.
#include "core/model/generate.h"

#include <algorithm>

#include "core/error.h"

namespace pathbench {

template <typename T>
std::vector<int32_t> greedy_generate(Transformer<T>& model, const std::vector<int32_t>& prompt, int64_t n_new) {
  if (prompt.empty()) throw Error("generate: the prompt has no tokens");
  if (n_new < 0) throw Error("generate: the number of new tokens is negative");
  const int64_t vocab = model.config().vocab_size;
  auto state = model.start_decode(1);
  std::vector<T> logits(vocab);
  for (int32_t token : prompt) model.decode_step(state, &token, logits.data());
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n_new; ++i) {
    const int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(next);
    if (i + 1 < n_new) model.decode_step(state, &next, logits.data());
  }
  return out;
}

template std::vector<int32_t> greedy_generate<float>(Transformer<float>&, const std::vector<int32_t>&, int64_t);
template std::vector<int32_t> greedy_generate<double>(Transformer<double>&, const std::vector<int32_t>&, int64_t);

}  // namespace pathbench
