// How examples are drawn so that training and evaluation never share one. Every sequence belongs to
// one side of a fixed partition of sequence space: it is held out for evaluation when a hash of its
// content (tokens and targets) falls in one of kHoldoutBuckets buckets. The training split draws
// and redraws until a sequence lands outside the held-out bucket; every evaluation split redraws
// until it lands inside. The partition depends on content only (not on split, seed or index), so
// no seed or index of "train" can produce an example of any evaluation split, however small the
// space of sequences. Where a space is so small that a side holds no sequence at all, drawing fails
// with an Error instead of sharing examples.
//
// An evaluation example costs about kHoldoutBuckets draws, and every evaluation of every run that
// shares the task's options and eval seed draws the same examples again. So the process remembers
// where in its stream each held-out example's accepted draw started (remember_held_out_start) and
// draws it again from there: one draw instead of about eight, the same example. The starts of a
// range of examples can be read out and put back (remembered_starts, remember_starts), so that the
// processes of a sweep can share them through files (experiments/held_out_store.h).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

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

// A process-wide number (≥ 1) for a task's draw function: equal for equal (task, resolved options),
// so that tasks built from one config share the remembered starts, and distinct otherwise (exact:
// the options' text is compared, not a hash of it). 0 stands for "do not remember".
uint64_t draw_function_id(const std::string& task, const json& options);

// Which example a draw is: the task's draw function, the split, the seed and the index.
struct DrawKey {
  uint64_t function;
  const std::string& split;
  uint64_t seed, index;
};

// Where the accepted draw of each held-out example started in its stream, remembered for the
// process; safe for concurrent use. Past kMaxHeldOutStarts entries (≈ 130 MB) nothing more is
// remembered and further examples are drawn the long way.
constexpr size_t kMaxHeldOutStarts = size_t(1) << 21;
using HeldOutKey = std::array<uint64_t, 4>;  // (draw function, split, seed, index), the split interned
HeldOutKey held_out_key(const DrawKey& key);
// The remembered start of `key`'s accepted draw, or false.
bool find_held_out_start(const HeldOutKey& key, uint64_t& start);
void remember_held_out_start(const HeldOutKey& key, uint64_t start);
size_t held_out_starts_remembered();

// The text draw_function_id interned for `function` ("" for 0): it names the draw function exactly,
// across processes.
std::string draw_function_text(uint64_t function);
// The remembered starts of examples 0 … count − 1 of (function, split, seed), kNoStart where none is.
constexpr uint64_t kNoStart = ~uint64_t(0);
std::vector<uint64_t> remembered_starts(uint64_t function, const std::string& split, uint64_t seed, uint64_t count);
// Remembers starts[i] as the start of example i of (function, split, seed) (kNoStart entries skipped).
void remember_starts(uint64_t function, const std::string& split, uint64_t seed, const std::vector<uint64_t>& starts);

// Calls draw(rng) until the example lies on the side of key.split ("train" or an evaluation split);
// a held-out example seen before in this process is drawn once, from its remembered start. `what`
// describes the draw for the error raised when no attempt succeeds.
template <typename Draw>
Example draw_for_split(const DrawKey& key, CounterRng& rng, Draw&& draw, const std::string& what) {
  const bool want_held_out = key.split != "train";
  const bool remembered = want_held_out && key.function != 0;
  const HeldOutKey held_out = remembered ? held_out_key(key) : HeldOutKey{};
  uint64_t start = 0;
  if (remembered && find_held_out_start(held_out, start)) {
    rng.seek(start);
    Example e = draw(rng);
    if (!is_held_out(e)) throw Error(what + ": a remembered held-out draw is not held out (internal error)");
    return e;
  }
  for (int attempt = 0; attempt < kMaxDrawAttempts; ++attempt) {
    start = rng.position();
    Example e = draw(rng);
    if (is_held_out(e) == want_held_out) {
      if (remembered) remember_held_out_start(held_out, start);
      return e;
    }
  }
  throw Error(what + ": no sequence of the " + (want_held_out ? "held-out" : "training") + " side found after " +
              std::to_string(kMaxDrawAttempts) +
              " draws; the space of sequences is too small to keep training and evaluation disjoint");
}

}  // namespace pathbench
