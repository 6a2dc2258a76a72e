// Example streams, the content-hash partition between training and evaluation, and the remembered
// starts of held-out draws.
#include "tasks/holdout.h"

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

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

namespace {

// Strings interned as numbers from 1 (exact: the text is compared), and back.
struct Interned {
  std::mutex mutex;
  std::map<std::string, uint64_t> ids;
  std::vector<std::string> texts;  // texts[id − 1]
};
Interned& interned() {
  static Interned table;
  return table;
}
uint64_t intern(const std::string& text) {
  Interned& t = interned();
  const std::lock_guard<std::mutex> lock(t.mutex);
  const auto [it, added] = t.ids.emplace(text, t.ids.size() + 1);
  if (added) t.texts.push_back(text);
  return it->second;
}

struct HeldOutKeyHash {
  size_t operator()(const HeldOutKey& k) const {
    return size_t(combine_key(combine_key(k[0], k[1]), combine_key(k[2], k[3])));
  }
};

// The remembered starts in shards, each with its own lock, so that threads drawing an evaluation
// batch rarely wait.
struct Shard {
  std::mutex mutex;
  std::unordered_map<HeldOutKey, uint64_t, HeldOutKeyHash> starts;  // key → start of the accepted draw
};
constexpr size_t kShards = 64;
std::array<Shard, kShards> shards;
std::atomic<size_t> remembered{0};

Shard& shard_of(const HeldOutKey& k) { return shards[HeldOutKeyHash{}(k) % kShards]; }

}  // namespace

uint64_t draw_function_id(const std::string& task, const json& options) {
  return intern("function " + task + " " + options.dump());
}

HeldOutKey held_out_key(const DrawKey& key) {
  return {key.function, intern("split " + key.split), key.seed, key.index};
}

bool find_held_out_start(const HeldOutKey& key, uint64_t& start) {
  Shard& s = shard_of(key);
  const std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.starts.find(key);
  if (it == s.starts.end()) return false;
  start = it->second;
  return true;
}

void remember_held_out_start(const HeldOutKey& key, uint64_t start) {
  if (remembered.load(std::memory_order_relaxed) >= kMaxHeldOutStarts) return;
  Shard& s = shard_of(key);
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.starts.emplace(key, start).second) remembered.fetch_add(1, std::memory_order_relaxed);
}

size_t held_out_starts_remembered() { return remembered.load(std::memory_order_relaxed); }

std::string draw_function_text(uint64_t function) {
  Interned& t = interned();
  const std::lock_guard<std::mutex> lock(t.mutex);
  return function >= 1 && function <= t.texts.size() ? t.texts[function - 1] : "";
}

// The split is interned once for the whole range; key[3], the index, varies.
std::vector<uint64_t> remembered_starts(uint64_t function, const std::string& split, uint64_t seed, uint64_t count) {
  std::vector<uint64_t> starts(count, kNoStart);
  HeldOutKey key = held_out_key({function, split, seed, 0});
  for (uint64_t i = 0; i < count; ++i) {
    key[3] = i;
    find_held_out_start(key, starts[i]);
  }
  return starts;
}

void remember_starts(uint64_t function, const std::string& split, uint64_t seed, const std::vector<uint64_t>& starts) {
  HeldOutKey key = held_out_key({function, split, seed, 0});
  for (uint64_t i = 0; i < starts.size(); ++i) {
    key[3] = i;
    if (starts[i] != kNoStart) remember_held_out_start(key, starts[i]);
  }
}

}  // namespace pathbench
