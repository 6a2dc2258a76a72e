// The pipe between a pool's worker and its parent: the worker's SweepEvents written as one JSON
// line each (training steps at most ten times a second), read back by the parent.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "experiments/progress.h"

namespace pathbench {

// A worker's end of the pipe.
class PipeEvents : public SweepEvents {
 public:
  explicit PipeEvents(int fd) : fd_(fd) {}
  void begin_run(const std::string& name, int64_t steps) override;
  void on_step(int64_t step, int64_t steps, double loss, double tokens_per_s) override;
  void end_run(const std::string& status, const std::string& summary) override;
  void message(const std::string& line) override;

 private:
  void send(const json& event);
  int fd_;
  std::chrono::steady_clock::time_point last_step_sent_{};
};

// One event as the parent reads it.
struct WorkerEvent {
  enum class Kind { BeginRun, Step, EndRun, Message } kind;
  std::string name;     // BeginRun: the run
  std::string status;   // EndRun: done, failed or nan
  std::string text;     // EndRun: the summary; Message: the line
  int64_t step = 0, steps = 0;
  double loss = 0, tokens_per_s = 0;
};

// nullopt for a line that is not an event.
std::optional<WorkerEvent> parse_worker_event(const std::string& line);

}  // namespace pathbench
