// Test runner. `--require-gpu` makes the run report "skipped" (exit code 77, which CTest counts as
// skipped) when this build has no CUDA backend or no GPU is visible, so GPU tests never pass
// vacuously on a CPU-only machine.
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
  if (require_gpu && !pathbench::cuda_device_available()) {
    std::printf("SKIPPED: no CUDA device (or built without CUDA); GPU tests were not run\n");
    return 77;
  }
  return Catch::Session().run(int(args.size()), args.data());
}
