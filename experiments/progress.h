// Progress of a sweep for a person watching: on a terminal one status line redrawn in place
// (run i/n, step, loss, tokens/s, ETA of the run and of the sweep); otherwise plain lines, a few per
// run, suited to log files.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

#include "experiments/train_run.h"

namespace pathbench {

class SweepProgress : public RunObserver {
 public:
  enum class Mode { Terminal, Lines, Quiet };
  // Terminal when `out` is a terminal, else Lines.
  static Mode detect(std::FILE* out);

  SweepProgress(std::FILE* out, Mode mode);

  // `runs` runs to do, with `total_steps` training steps together (for the sweep's ETA).
  void begin_sweep(int64_t runs, int64_t total_steps);
  void begin_run(const std::string& name, int64_t steps);
  void on_step(int64_t step, int64_t steps, double loss, double tokens_per_s) override;
  // Ends the current run with a permanent line.
  void end_run(const std::string& summary);
  // A permanent line outside any run.
  void message(const std::string& line);

 private:
  using Clock = std::chrono::steady_clock;
  void print_line(const std::string& line, bool permanent);

  std::FILE* out_;
  Mode mode_;
  int64_t runs_ = 0, run_ = 0, total_steps_ = 0, steps_before_run_ = 0, run_steps_ = 0;
  std::string name_;
  Clock::time_point sweep_start_, run_start_, last_draw_;
  double smoothed_tokens_per_s_ = 0;
};

// "1:02:03" or "2:03".
std::string format_duration(double seconds);

}  // namespace pathbench
