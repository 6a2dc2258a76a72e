// PipeEvents and parse_worker_event: SweepEvents as JSON lines through a pipe.
#include "experiments/worker_events.h"

#include <unistd.h>

#include <cerrno>

namespace pathbench {

void PipeEvents::begin_run(const std::string& name, int64_t steps) {
  last_step_sent_ = {};  // every run reports its first step, however soon after the last run's
  send(json{{"event", "begin_run"}, {"name", name}, {"steps", steps}});
}

void PipeEvents::on_step(int64_t step, int64_t steps, double loss, double tokens_per_s) {
  const auto now = std::chrono::steady_clock::now();
  if (step != steps && now - last_step_sent_ < std::chrono::milliseconds(100)) return;
  last_step_sent_ = now;
  send(json{{"event", "step"}, {"step", step}, {"steps", steps}, {"loss", loss}, {"tokens_per_s", tokens_per_s}});
}

void PipeEvents::end_run(const std::string& status, const std::string& summary) {
  send(json{{"event", "end_run"}, {"status", status}, {"text", summary}});
}

void PipeEvents::message(const std::string& line) { send(json{{"event", "message"}, {"text", line}}); }

void PipeEvents::send(const json& event) {
  // A loss can be NaN, which JSON cannot hold: the replacement handler writes it as null.
  const std::string line = event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  for (size_t written = 0; written < line.size();) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; the worker dies with it
    written += size_t(n);
  }
}

std::optional<WorkerEvent> parse_worker_event(const std::string& line) {
  const json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j["event"].is_string()) return std::nullopt;
  const std::string kind = j["event"];
  const auto number = [&](const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; };
  const auto text = [&](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; };
  WorkerEvent e{WorkerEvent::Kind::Message, text("name"), text("status"), text("text"), int64_t(number("step")),
                int64_t(number("steps")), number("loss"), number("tokens_per_s")};
  if (kind == "begin_run") e.kind = WorkerEvent::Kind::BeginRun;
  else if (kind == "step") e.kind = WorkerEvent::Kind::Step;
  else if (kind == "end_run") e.kind = WorkerEvent::Kind::EndRun;
  else if (kind != "message") return std::nullopt;
  return e;
}

}  // namespace pathbench
