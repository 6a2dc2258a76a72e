// Running another program (git, python) without a shell: its exit status and, optionally, its
// standard output.
#pragma once
#include <string>
#include <vector>

namespace pathbench {

struct ProcessResult {
  int exit_code = -1;   // -1: could not be started (or did not exit normally)
  std::string output;   // standard output when captured
};

// Runs argv[0] (looked up on PATH) with the arguments. With `capture`, standard output is collected
// and standard error discarded; otherwise both go to this process's streams.
ProcessResult run_process(const std::vector<std::string>& argv, bool capture);

}  // namespace pathbench
