// Reading a word problem's generator list.
#include "tasks/word_generators.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace pathbench {

std::vector<int> parse_word_generators(const FiniteGroup& group, const json& list, const std::string& where) {
  std::vector<int> generators;
  if (list.empty()) {
    for (int g = 0; g < group.order(); ++g) generators.push_back(g);
    return generators;
  }
  for (const auto& item : list) {
    const std::string text = item.get<std::string>();
    std::optional<int> g = group.parse_element(text);
    if (!g)
      throw Error(fmt::format("{}: key 'generators' has value \"{}\", not an element of {} (give its symbol, e.g. "
                              "\"{}\", or cycles over points 0..{}, e.g. \"(0 1)\")",
                              where, text, group.name(), group.symbol(group.order() - 1), group.degree() - 1));
    if (std::count(generators.begin(), generators.end(), *g))
      throw Error(fmt::format("{}: key 'generators' lists \"{}\" twice", where, text));
    generators.push_back(*g);
  }
  if (generators.size() == 1)
    throw Error(fmt::format("{}: key 'generators' lists one element (\"{}\"): every word of a length would be the same "
                            "word, so no held-out word could differ from the training ones; give two or more",
                            where, list[0].get<std::string>()));
  return generators;
}

}  // namespace pathbench
