// The config reference (docs/config-reference.md), generated from the same OptionSpec lists that
// validate configs: every block, every encoding's and every task's options.
#pragma once
#include <string>

namespace pathbench {

std::string config_reference_markdown();

}  // namespace pathbench
