// Error types: every user-facing failure is one of these, printed as one line by the CLI.
#pragma once
#include <stdexcept>
#include <string>

namespace pathbench {

// A failure caused by the user's input (config, CLI argument, file); the message names what and where.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pathbench
