// Test runner. Without a CUDA device (or in a build without CUDA), a run that names no tests leaves
// out the [cuda] cases and says so; `--require-gpu` instead makes the run report "skipped" (exit
// code 77, which CTest counts as skipped), so GPU tests never pass vacuously on a CPU-only machine.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

#include "core/device.h"

int main(int argc, char** argv) {
  std::vector<char*> args;
  bool require_gpu = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--require-gpu") == 0)
      require_gpu = true;
    else
      args.push_back(argv[i]);
  }
  const bool gpu = pathbench::cuda_device_available();
  if (require_gpu && !gpu) {
    std::printf("SKIPPED: no CUDA device (or built without CUDA); GPU tests were not run\n");
    return 77;
  }
  Catch::Session session;
  if (const int rc = session.applyCommandLine(int(args.size()), args.data()); rc != 0) return rc;
  Catch::ConfigData& config = session.configData();
  if (!gpu && config.testsOrTags.empty()) {
    config.testsOrTags.push_back("~[cuda]");
    std::fprintf(stderr,
                 "no CUDA device (or built without CUDA): the [cuda] test cases are left out; name them to run them\n");
  }
  return session.run();
}
