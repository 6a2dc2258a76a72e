// `pathbench fisher K1/N1 K2/N2`: Fisher's exact test (two-sided) of two counts, e.g. the passing
// seeds of two encodings pooled over several table cells, which `pathbench table --against` (one
// column at a time) does not pool.
#include <fmt/format.h>

#include <cstdlib>

#include "core/error.h"
#include "experiments/commands.h"
#include "experiments/fisher_exact.h"

namespace pathbench {

namespace {

struct Count {
  int64_t k = 0, n = 0;
};

Count parse_count(const std::string& text) {
  const size_t slash = text.find('/');
  char* end = nullptr;
  Count c;
  bool ok = slash != std::string::npos && slash > 0 && slash + 1 < text.size();
  if (ok) {
    c.k = std::strtoll(text.c_str(), &end, 10);
    ok = end == text.c_str() + slash;
  }
  if (ok) {
    c.n = std::strtoll(text.c_str() + slash + 1, &end, 10);
    ok = *end == '\0';
  }
  if (!ok || c.k < 0 || c.n < 1 || c.k > c.n)
    throw Error(fmt::format("count '{}': must be K/N with 0 <= K <= N and N >= 1, e.g. 4/6", text));
  return c;
}

}  // namespace

void add_fisher_command(CLI::App& app) {
  auto counts = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("fisher", "Fisher's exact test (two-sided) of two counts K1/N1 and K2/N2");
  cmd->add_option("counts", *counts, "two counts, e.g. 4/6 2/6")->required()->expected(2);
  cmd->callback([counts]() {
    const Count a = parse_count((*counts)[0]), b = parse_count((*counts)[1]);
    fmt::print("{}/{} against {}/{}: Fisher's exact test, two-sided p = {:.4g}\n", a.k, a.n, b.k, b.n,
               fisher_exact_two_sided(a.k, a.n, b.k, b.n));
  });
}

}  // namespace pathbench
