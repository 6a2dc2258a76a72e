// `pathbench plot DIR [DIR ...]`: run plots/plot_all.py on one or more results folders, read as one
// (PNG + CSV per figure). The script itself finds a Python interpreter that has matplotlib
// (plots/find_matplotlib.py).
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "build_info.h"
#include "core/error.h"
#include "experiments/commands.h"
#include "experiments/process.h"

namespace pathbench {

namespace {

struct PlotCommandOptions {
  std::vector<std::string> dirs;
  std::string out, scripts;
};

void plot_command(const PlotCommandOptions& o) {
  namespace fs = std::filesystem;
  for (const std::string& dir : o.dirs)
    if (!fs::is_directory(dir)) throw Error(fmt::format("'{}' is not a folder", dir));
  if (o.dirs.size() > 1 && o.out.empty())
    throw Error("several folders: name the folder for the figures with --out");
  const fs::path script = fs::path(o.scripts.empty() ? fs::path(PATHBENCH_SOURCE_ROOT) / "plots" : fs::path(o.scripts)) /
                          "plot_all.py";
  if (!fs::exists(script))
    throw Error(fmt::format("plot script '{}' not found (point --scripts at the plots/ folder)", script.string()));
  const std::string out = o.out.empty() ? (fs::path(o.dirs.front()) / "plots").string() : o.out;
  std::vector<std::string> tried;
  const char* env = std::getenv("PATHBENCH_PYTHON");
  for (const char* python : {env, "python3", "/usr/bin/python3"}) {
    if (!python || !*python) continue;
    tried.push_back(python);
    std::vector<std::string> args{python, script.string()};
    args.insert(args.end(), o.dirs.begin(), o.dirs.end());
    args.insert(args.end(), {"--out", out});
    const ProcessResult r = run_process(args, false);
    if (r.exit_code == 127 || r.exit_code == -1) continue;  // this interpreter could not be started
    if (r.exit_code != 0) throw Error(fmt::format("plotting failed ({} exited with status {})", python, r.exit_code));
    return;
  }
  throw Error(fmt::format("no Python interpreter could be started (tried: {}); set PATHBENCH_PYTHON",
                          fmt::join(tried, ", ")));
}

}  // namespace

void add_plot_command(CLI::App& app) {
  auto o = std::make_shared<PlotCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "write the figures of one or more folders of results (PNG, with the CSV behind each)");
  cmd->footer(
      "Runs plots/plot_all.py: bars of the primary metric per encoding and split, metric against length, "
      "fewest layers reaching 90% against length (word problems), training curves, the share of seeds passing "
      "(accuracy > 90%, error < 10%) against step. The script finds a "
      "Python that has matplotlib ($PATHBENCH_PYTHON, python3, /usr/bin/python3). Several folders are read as "
      "one (e.g. an experiment and the seeds added to it later); their figures go to --out.");
  cmd->add_option("dirs", o->dirs, "folders of result files")->required();
  cmd->add_option("--out", o->out, "folder for the PNG and CSV files (default, for one folder: DIR/plots)");
  cmd->add_option("--scripts", o->scripts, "the plots/ folder (default: the one of this source tree)");
  cmd->callback([o]() { plot_command(*o); });
}

}  // namespace pathbench
