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

// A command that a stop signal (SIGINT, SIGTERM) ended after its graceful stop: the CLI prints the
// message and exits with 128 + the signal, the status of a process the signal ended.
class StoppedBySignal : public Error {
 public:
  StoppedBySignal(const std::string& what, int signal) : Error(what), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

}  // namespace pathbench
