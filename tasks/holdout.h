// How examples are drawn so that training and evaluation never share one. Every sequence belongs to
// one side of a fixed partition of sequence space: it is held out for evaluation when a hash of its
// content (tokens and targets) falls in one of kHoldoutBuckets buckets. The training split draws
// and redraws until a sequence lands outside the held-out bucket; every evaluation split redraws
// until it lands inside. The partition depends on content only (not on split, seed or index), so
// no seed or index of "train" can produce an example of any evaluation split, however small the
// space of sequences. Where a space is so small that a side holds no sequence at all, drawing fails
// with an Error instead of sharing examples.
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "tasks/task.h"

namespace pathbench {

// One sequence in kHoldoutBuckets is held out for evaluation.
constexpr uint64_t kHoldoutBuckets = 8;
// Draws before giving up on finding a sequence of the wanted side.
constexpr int kMaxDrawAttempts = 20000;

// The random stream of one example: a pure function of (task name, split, seed, index).
CounterRng example_rng(const std::string& task, const std::string& split, uint64_t seed, uint64_t index);

uint64_t content_hash(const Example& example);
bool is_held_out(const Example& example);

// Calls draw(rng) until the example lies on the side of `split` ("train" or an evaluation split).
// `what` describes the draw for the error raised when no attempt succeeds.
template <typename Draw>
Example draw_for_split(const std::string& split, CounterRng& rng, Draw&& draw, const std::string& what) {
  const bool want_held_out = split != "train";
  for (int attempt = 0; attempt < kMaxDrawAttempts; ++attempt) {
    Example e = draw(rng);
    if (is_held_out(e) == want_held_out) return e;
  }
  throw Error(what + ": no sequence of the " + (want_held_out ? "held-out" : "training") + " side found after " +
              std::to_string(kMaxDrawAttempts) +
              " draws; the space of sequences is too small to keep training and evaluation disjoint");
}

}  // namespace pathbench
