// The pathbench command line: one subcommand per job, each defined in its own file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "core/device.h"
#include "core/error.h"
#include "experiments/batch_prefetch.h"
#include "experiments/commands.h"
#include "experiments/run_metadata.h"

int main(int argc, char** argv) {
  CLI::App app{"pathbench: position encodings for softmax attention, trained and compared"};
  app.require_subcommand(1);
  app.set_version_flag("--version", pathbench::version_text, "print the commit this binary was built from and exit");
  pathbench::add_commands(app);
  try {
    // A bad value of these stops every command at once.
    pathbench::parse_gpu_wait(std::getenv("PATHBENCH_CUDA_SYNC"));
    pathbench::parse_prefetch_mode(std::getenv("PATHBENCH_PREFETCH"));
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "pathbench: error: %s (see --help)\n", e.what());
    return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
  } catch (const pathbench::StoppedBySignal& e) {
    std::fprintf(stderr, "pathbench: %s\n", e.what());
    return 128 + e.signal();
  } catch (const pathbench::Error& e) {
    std::fprintf(stderr, "pathbench: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pathbench: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
