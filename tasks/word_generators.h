// The letters of a word problem: the "generators" option of word_problem read into element indices
// of its group.
#pragma once
#include <string>
#include <vector>

#include "core/options.h"
#include "tasks/groups.h"

namespace pathbench {

// The elements that `list` names (symbols or cycles), in its order; an empty list means every
// element of the group. Throws pathbench::Error naming `where` and the key 'generators' when an
// item is not an element of the group or is listed twice, or when it names one element alone (every
// word of a length would then be the same word).
std::vector<int> parse_word_generators(const FiniteGroup& group, const json& list, const std::string& where);

}  // namespace pathbench
