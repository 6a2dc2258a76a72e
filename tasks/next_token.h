// Examples of next-token prediction over a whole sequence: the model reads a BOS token and every
// token but the last, and predicts every token, so its input is exactly as long as the sequence.
#pragma once
#include <vector>

#include "core/options.h"
#include "tasks/task.h"

namespace pathbench {

// The `loss` option of next-token tasks: "all" (every position) or "scored" (only the positions
// the metrics score).
OptionSpec loss_option(const std::string& default_value);

// sequence: [L] the tokens to predict; scored: [L] 1 where predicting sequence[t] is scored.
// Returns tokens [BOS, s_0 … s_{L-2}], targets s_0 … s_{L-1}, the score mask `scored`, and the loss
// mask: every position (loss "all") or `scored`.
Example next_token_example(int32_t bos, std::vector<int32_t> sequence, std::vector<uint8_t> scored,
                           bool loss_on_all, int64_t group);

}  // namespace pathbench
