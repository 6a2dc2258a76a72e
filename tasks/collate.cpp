// collate: draw a batch's examples in parallel; pad and stack them.
#include "tasks/collate.h"

#include <algorithm>
#include <exception>

namespace pathbench {

std::vector<Example> draw_examples(const Task& task, const std::string& split, uint64_t seed, int64_t first,
                                   int64_t count) {
  std::vector<Example> examples(static_cast<size_t>(count));
  std::vector<std::exception_ptr> failures(static_cast<size_t>(count));  // per example, so the first is rethrown
#pragma omp parallel for schedule(dynamic, 8)
  for (int64_t i = 0; i < count; ++i) {
    try {
      examples[size_t(i)] = task.example(split, seed, uint64_t(first + i));
    } catch (...) {
      failures[size_t(i)] = std::current_exception();
    }
  }
  for (const std::exception_ptr& failure : failures)
    if (failure) std::rethrow_exception(failure);
  return examples;
}

TokenBatch collate(const std::vector<Example>& examples) {
  TokenBatch b;
  b.batch = int64_t(examples.size());
  for (const auto& e : examples) b.length = std::max<int64_t>(b.length, int64_t(e.tokens.size()));
  b.tokens.assign(b.batch * b.length, 0);
  b.targets.assign(b.batch * b.length, 0);
  b.weights.assign(b.batch * b.length, 0.0f);
  for (int64_t i = 0; i < b.batch; ++i) {
    const Example& e = examples[i];
    std::copy(e.tokens.begin(), e.tokens.end(), b.tokens.begin() + i * b.length);
    std::copy(e.targets.begin(), e.targets.end(), b.targets.begin() + i * b.length);
    for (size_t t = 0; t < e.loss_mask.size(); ++t) b.weights[i * b.length + t] = e.loss_mask[t] ? 1.0f : 0.0f;
  }
  return b;
}

}  // namespace pathbench
