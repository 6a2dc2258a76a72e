// The count-only ceiling of the decision word problem: the best accuracy any classifier gets from
// how often each generator occurs in the word, its order ignored, under the task's word distribution.
#pragma once
#include <cstdint>
#include <vector>

#include "tasks/groups.h"

namespace pathbench {

// What the computation may take: the probabilities it holds for one length (count vectors × group
// order, 8 bytes each, two lengths at a time), and the additions over all lengths up to the one
// asked for (about a second per 10⁹).
inline constexpr double kMaxCountCeilingProbabilities = 5e7;
inline constexpr double kMaxCountCeilingAdditions = 4e9;

// Σ over count vectors c of max(P(c, identity), P(c, not identity)): the Bayes-optimal accuracy of
// a classifier that sees only c. Words of `length` letters are uniform over the (non-empty)
// `generators` (element indices); with `balanced`, distributed as word_problem draws them: each
// answer with probability 1/2, uniform among the words with that answer (accuracy 1 where only one
// answer occurs at this length). Computed by dynamic programming over the length; throws
// pathbench::Error naming the length when it would exceed the limits above.
double count_only_decision_accuracy(const FiniteGroup& group, const std::vector<int>& generators, int64_t length,
                                    bool balanced);

}  // namespace pathbench
