// Building next-token examples from whole sequences.
#include "tasks/next_token.h"

namespace pathbench {

OptionSpec loss_option(const std::string& default_value) {
  return {"loss", OptionType::String, default_value,
          "where the training loss counts: every next-token position (all) or only the scored ones (scored)",
          {}, {}, {"all", "scored"}};
}

Example next_token_example(int32_t bos, std::vector<int32_t> sequence, std::vector<uint8_t> scored,
                           bool loss_on_all, int64_t group) {
  Example e;
  e.tokens.reserve(sequence.size());
  e.tokens.push_back(bos);
  e.tokens.insert(e.tokens.end(), sequence.begin(), sequence.end() - 1);
  e.targets = std::move(sequence);
  e.loss_mask = loss_on_all ? std::vector<uint8_t>(e.targets.size(), 1) : scored;
  e.score_mask = std::move(scored);
  e.group = group;
  return e;
}

}  // namespace pathbench
