// Example streams and the content-hash partition between training and evaluation.
#include "tasks/holdout.h"

namespace pathbench {

CounterRng example_rng(const std::string& task, const std::string& split, uint64_t seed, uint64_t index) {
  uint64_t key = combine_key(hash_string(task), hash_string(split));
  key = combine_key(key, seed);
  return CounterRng(combine_key(key, index));
}

uint64_t content_hash(const Example& example) {
  uint64_t h = hash_string("pathbench holdout");
  for (int32_t t : example.tokens) h = combine_key(h, uint32_t(t));
  h = combine_key(h, example.tokens.size());
  for (int32_t t : example.targets) h = combine_key(h, uint32_t(t));
  return h;
}

bool is_held_out(const Example& example) { return mix64(content_hash(example)) % kHoldoutBuckets == 0; }

}  // namespace pathbench
