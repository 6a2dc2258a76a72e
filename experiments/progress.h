// Progress of a sweep for a person watching: on a terminal one status line redrawn in place
// (runs done, each running run's step, loss and tokens/s, ETA of the run and of the sweep);
// otherwise plain lines, a few per run, suited to log files. With several workers (a pool) each
// running run has a slot and the status line shows them together.
#pragma once
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "experiments/train_run.h"

namespace pathbench {

// What a worker reports while it goes through a sweep: SweepProgress shows it; in a worker pool a
// pipe carries it to the parent, which shows every worker's reports together.
class SweepEvents : public RunObserver {
 public:
  // A run starts training (`steps` steps).
  virtual void begin_run(const std::string& name, int64_t steps) = 0;
  // The run ends with `status` (done, failed, nan) and a one-line summary.
  virtual void end_run(const std::string& status, const std::string& summary) = 0;
  // A permanent line outside any run.
  virtual void message(const std::string& line) = 0;
};

class SweepProgress : public SweepEvents {
 public:
  enum class Mode { Terminal, Lines, Quiet };
  // Terminal when `out` is a terminal, else Lines.
  static Mode detect(std::FILE* out);

  SweepProgress(std::FILE* out, Mode mode);

  // `runs` runs to do, with `total_steps` training steps together (for the sweep's ETA).
  void begin_sweep(int64_t runs, int64_t total_steps);

  // A run in slot `slot` (a worker of a pool; 0 when one worker).
  void begin_run_in(int slot, const std::string& name, int64_t steps);
  void on_step_in(int slot, int64_t step, int64_t steps, double loss, double tokens_per_s);
  // Ends the slot's run with a permanent line.
  void end_run_in(int slot, const std::string& summary);

  // SweepEvents of a single worker (slot 0).
  void begin_run(const std::string& name, int64_t steps) override { begin_run_in(0, name, steps); }
  void on_step(int64_t step, int64_t steps, double loss, double tokens_per_s) override {
    on_step_in(0, step, steps, loss, tokens_per_s);
  }
  void end_run(const std::string&, const std::string& summary) override { end_run_in(0, summary); }
  void message(const std::string& line) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Running {
    std::string name;
    int64_t number = 0;  // 1-based position among the sweep's started runs
    int64_t step = 0, steps = 0;
    double loss = 0, smoothed_tokens_per_s = 0;
    Clock::time_point start;
  };
  void draw_status(bool force);
  std::string run_line(const Running& r, Clock::time_point now) const;
  void print_line(const std::string& line, bool permanent);

  std::FILE* out_;
  Mode mode_;
  int64_t runs_ = 0, started_ = 0, finished_ = 0, total_steps_ = 0, finished_steps_ = 0;
  std::map<int, Running> running_;  // slot → its run
  Clock::time_point sweep_start_, last_draw_;
};

// "1:02:03" or "2:03".
std::string format_duration(double seconds);

}  // namespace pathbench
