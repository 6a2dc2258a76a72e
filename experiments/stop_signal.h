// Graceful stop of a sweep: SIGTERM or SIGINT (a job scheduler's time limit, `timeout`, Ctrl-C)
// asks every run in training to stop after its current step, save a checkpoint and record itself as
// interrupted, so that the next `pathbench run` of the same config resumes it where it stopped. A second
// signal to the sweep's own process ends it at once.
#pragma once
#include <csignal>

namespace pathbench {

// Catches SIGTERM and SIGINT while it lives (the previous handlers come back after); a request
// lasts as long as it does. One at a time.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction previous_term_ = {}, previous_interrupt_ = {};
};

// Whether a stop was asked while a StopSignals lives, and by which signal (0: none).
bool stop_requested();
int stop_signal();

// For a worker process after fork: a repeated signal only asks again instead of ending the process
// (its parent forwards the signal it got, on top of the one a scheduler sends every process).
void ignore_repeated_stop_signals();

}  // namespace pathbench
