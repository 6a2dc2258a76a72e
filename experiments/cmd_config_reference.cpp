// `pathbench config-reference`: print the config reference (markdown) generated from the option specs.
#include <fmt/format.h>

#include "experiments/commands.h"
#include "experiments/config_reference.h"

namespace pathbench {

void add_config_reference_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "config-reference", "print the reference of every config key (markdown), as in docs/config-reference.md");
  cmd->callback([]() { fmt::print("{}", config_reference_markdown()); });
}

}  // namespace pathbench
