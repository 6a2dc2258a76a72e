// The common frame of tasks whose examples come in sizes (word lengths, book sizes): training draws
// a size uniformly from [min, max] on every attempt (so a size whose sequences are all held out
// is skipped), an evaluation split cycles through its list of sizes by example index, and the
// example's group is its size. With a curriculum over the first N training examples, the largest
// size drawn for example i < N is min + ⌊(max − min)·i / N⌋, so sizes grow with training (a pure
// function of the index, so runs stay reproducible and resumable).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/options.h"
#include "core/rng.h"
#include "tasks/task.h"

namespace pathbench {

struct SizeOptions {
  std::string min_key, max_key, eval_key;  // option keys, for messages
  int64_t largest;                         // the largest size an evaluation split may list
};

// The longest curriculum (2^40 examples), so that (max − min)·index stays within 64 bits.
inline constexpr int64_t kMaxCurriculumExamples = int64_t(1) << 40;

// The "curriculum_examples" option of a sized task, whose sizes are `sizes` (e.g. "word lengths").
OptionSpec curriculum_option(const std::string& sizes);

class SizedTask : public Task {
 public:
  std::vector<std::string> eval_splits() const override;
  Example example(const std::string& split, uint64_t seed, uint64_t index) const override;
  uint64_t draw_function() const override { return draw_function_; }

 protected:
  // Reads and checks the three options named by `keys` from resolved options `o`.
  SizedTask(std::string name, const json& o, const SizeOptions& keys, const std::string& where);
  // One candidate example of `size` (before the train/eval partition is applied).
  virtual Example draw(CounterRng& rng, int64_t size) const = 0;
  // Draws one example of every evaluation split and size, so that a size too small to hold
  // held-out sequences fails at construction; call at the end of the derived constructor.
  void probe_eval_splits() const;

  const std::string& where() const { return where_; }
  int64_t train_min() const { return min_; }
  int64_t train_max() const { return max_; }
  const std::map<std::string, std::vector<int64_t>>& eval_sizes() const { return eval_; }
  int64_t largest_size() const;

 private:
  // The largest training size of example `index` under the curriculum.
  int64_t train_max_at(uint64_t index) const;

  std::string name_, where_;
  uint64_t draw_function_;  // draw_function_id of (name, options)
  int64_t min_, max_;
  int64_t curriculum_;  // training examples over which the largest size grows (0: none)
  std::map<std::string, std::vector<int64_t>> eval_;
};

}  // namespace pathbench
