// SweepProgress: the in-place status line (one run, or every running run of a pool) and its
// plain-line fallback.
#include "experiments/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace pathbench {

namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The terminal's width in columns (0 when unknown).
size_t terminal_width(std::FILE* out) {
  winsize w{};
  return ::ioctl(::fileno(out), TIOCGWINSZ, &w) == 0 ? size_t(w.ws_col) : 0;
}

std::string format_rate(double per_s) {
  if (per_s >= 1e6) return fmt::format("{:.2f}M", per_s / 1e6);
  if (per_s >= 1e3) return fmt::format("{:.1f}k", per_s / 1e3);
  return fmt::format("{:.0f}", per_s);
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = int64_t(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

SweepProgress::Mode SweepProgress::detect(std::FILE* out) {
  return ::isatty(::fileno(out)) ? Mode::Terminal : Mode::Lines;
}

SweepProgress::SweepProgress(std::FILE* out, Mode mode) : out_(out), mode_(out ? mode : Mode::Quiet) {}

void SweepProgress::begin_sweep(int64_t runs, int64_t total_steps) {
  runs_ = runs;
  total_steps_ = total_steps;
  started_ = finished_ = finished_steps_ = 0;
  running_.clear();
  sweep_start_ = Clock::now();
}

void SweepProgress::begin_run_in(int slot, const std::string& name, int64_t steps) {
  running_[slot] = Running{name, ++started_, 0, steps, 0, 0, Clock::now()};
  last_draw_ = Clock::time_point{};
  print_line(fmt::format("[{}/{}] {}: {} steps", started_, runs_, name, steps), mode_ != Mode::Terminal);
}

void SweepProgress::on_step_in(int slot, int64_t step, int64_t steps, double loss, double tokens_per_s) {
  const auto it = running_.find(slot);
  if (mode_ == Mode::Quiet || it == running_.end()) return;
  Running& r = it->second;
  r.step = step;
  r.steps = steps;
  r.loss = loss;
  r.smoothed_tokens_per_s = r.smoothed_tokens_per_s == 0 ? tokens_per_s : 0.9 * r.smoothed_tokens_per_s + 0.1 * tokens_per_s;
  if (mode_ == Mode::Lines) {  // about 10 lines per run
    const int64_t every = std::max<int64_t>(1, steps / 10);
    if (step % every == 0 || step == steps) print_line(run_line(r, Clock::now()), true);
    return;
  }
  draw_status(step == steps);
}

void SweepProgress::end_run_in(int slot, const std::string& summary) {
  const auto it = running_.find(slot);
  int64_t number = started_;
  if (it != running_.end()) {
    finished_steps_ += it->second.steps;
    number = it->second.number;
    running_.erase(it);
  }
  ++finished_;
  print_line(fmt::format("[{}/{}] {}", number, runs_, summary), true);
}

void SweepProgress::message(const std::string& line) { print_line(line, true); }

// "[3/12] step 120/600 loss 0.4321 1.2M tok/s ETA 1:02 (sweep 9:30) name": the numbers first, the
// run's name last, so that a narrow terminal cuts the end of the line.
std::string SweepProgress::run_line(const Running& r, Clock::time_point now) const {
  const double run_eta = seconds_between(r.start, now) / double(std::max<int64_t>(r.step, 1)) * double(r.steps - r.step);
  int64_t done = finished_steps_;
  for (const auto& [slot, other] : running_) done += other.step;
  const double sweep_eta = seconds_between(sweep_start_, now) / double(std::max<int64_t>(done, 1)) * double(total_steps_ - done);
  std::string line = fmt::format("[{}/{}] step {}/{} loss {:.4f} {} tok/s ETA {}", r.number, runs_, r.step, r.steps,
                                 r.loss, format_rate(r.smoothed_tokens_per_s), format_duration(run_eta));
  if (runs_ > 1) line += fmt::format(" (sweep {})", format_duration(sweep_eta));
  return line + " " + r.name;
}

// The terminal's status line, at most 10 times a second unless forced: the one running run as
// run_line shows it, or with several, how many are done and each one's step.
void SweepProgress::draw_status(bool force) {
  const auto now = Clock::now();
  if (!force && seconds_between(last_draw_, now) < 0.1) return;
  last_draw_ = now;
  if (running_.size() == 1) {
    print_line(run_line(running_.begin()->second, now), false);
    return;
  }
  int64_t done = finished_steps_;
  double tokens_per_s = 0;
  std::string runs;
  for (const auto& [slot, r] : running_) {
    done += r.step;
    tokens_per_s += r.smoothed_tokens_per_s;
    runs += fmt::format(" | {} {}/{}", r.name, r.step, r.steps);
  }
  const double sweep_eta = seconds_between(sweep_start_, now) / double(std::max<int64_t>(done, 1)) * double(total_steps_ - done);
  print_line(fmt::format("[{}/{} done, {} running] {} tok/s ETA {}{}", finished_, runs_, running_.size(),
                         format_rate(tokens_per_s), format_duration(sweep_eta), runs),
             false);
}

void SweepProgress::print_line(const std::string& line, bool permanent) {
  if (mode_ == Mode::Quiet) return;
  if (mode_ == Mode::Terminal) {
    // A status line longer than the terminal would wrap and break the redraw in place.
    const size_t width = terminal_width(out_);
    const std::string shown = !permanent && width > 1 && line.size() >= width ? line.substr(0, width - 1) : line;
    fmt::print(out_, "\r\033[K{}{}", shown, permanent ? "\n" : "");
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
}

}  // namespace pathbench
