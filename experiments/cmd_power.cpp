// `pathbench power --rates P1,P2 --seeds N,...`: how likely Fisher's exact test (two-sided) is to
// tell two pass rates apart with N seeds per group — how many seeds a comparison of encodings
// (`pathbench table --passing --against`) needs before it is run.
#include <fmt/format.h>

#include "core/error.h"
#include "experiments/commands.h"
#include "experiments/fisher_exact.h"

namespace pathbench {

namespace {

struct PowerOptions {
  std::vector<double> rates;
  std::vector<int64_t> seeds{8, 16, 24, 32, 48};
  double alpha = 0.05;
};

void run_power(const PowerOptions& o) {
  if (o.rates.size() != 2) throw Error(fmt::format("--rates: give two pass rates (got {})", o.rates.size()));
  for (double r : o.rates)
    if (!(r >= 0 && r <= 1)) throw Error(fmt::format("--rates: {} is not a rate in [0, 1]", r));
  for (int64_t n : o.seeds)
    if (n < 1 || n > kMaxPowerSeeds)
      throw Error(fmt::format("--seeds: {} is not a number of seeds in 1..{}", n, kMaxPowerSeeds));
  if (!(o.alpha > 0 && o.alpha < 1)) throw Error(fmt::format("--alpha: {} is not in (0, 1)", o.alpha));
  fmt::print("power of Fisher's exact test (two-sided, alpha {}) to tell pass rates {} and {} apart, n seeds per "
             "group\n\n| seeds per group | power |\n|---|---|\n",
             o.alpha, o.rates[0], o.rates[1]);
  for (int64_t n : o.seeds) fmt::print("| {} | {:.3f} |\n", n, fisher_power(o.rates[0], o.rates[1], n, o.alpha));
}

}  // namespace

void add_power_command(CLI::App& app) {
  auto o = std::make_shared<PowerOptions>();
  CLI::App* cmd = app.add_subcommand(
      "power", "how many seeds Fisher's exact test needs to tell two pass rates apart (e.g. two encodings')");
  cmd->add_option("--rates", o->rates, "the two pass rates, e.g. 0.25,0.625")->required()->delimiter(',');
  cmd->add_option("--seeds", o->seeds, "seeds per group to try (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--alpha", o->alpha, "significance level")->capture_default_str();
  cmd->callback([o]() { run_power(*o); });
}

}  // namespace pathbench
