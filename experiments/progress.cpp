// SweepProgress: the in-place status line and its plain-line fallback.
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
  run_ = 0;
  steps_before_run_ = 0;
  sweep_start_ = Clock::now();
}

void SweepProgress::begin_run(const std::string& name, int64_t steps) {
  ++run_;
  name_ = name;
  run_steps_ = steps;
  run_start_ = Clock::now();
  last_draw_ = Clock::time_point{};
  smoothed_tokens_per_s_ = 0;
  print_line(fmt::format("[{}/{}] {}: {} steps", run_, runs_, name_, steps), mode_ != Mode::Terminal);
}

void SweepProgress::on_step(int64_t step, int64_t steps, double loss, double tokens_per_s) {
  if (mode_ == Mode::Quiet) return;
  smoothed_tokens_per_s_ = smoothed_tokens_per_s_ == 0 ? tokens_per_s : 0.9 * smoothed_tokens_per_s_ + 0.1 * tokens_per_s;
  const auto now = Clock::now();
  // Plain lines: about 10 per run. Terminal: redraw at most 10 times a second.
  if (mode_ == Mode::Lines) {
    const int64_t every = std::max<int64_t>(1, steps / 10);
    if (step % every != 0 && step != steps) return;
  } else if (seconds_between(last_draw_, now) < 0.1 && step != steps) {
    return;
  }
  last_draw_ = now;
  const double run_elapsed = seconds_between(run_start_, now);
  const double run_eta = run_elapsed / double(step) * double(steps - step);
  const int64_t done = steps_before_run_ + step;
  const double sweep_eta = seconds_between(sweep_start_, now) / double(done) * double(total_steps_ - done);
  // The numbers first, the run's name last: a narrow terminal cuts the end of the line.
  std::string line = fmt::format("[{}/{}] step {}/{} loss {:.4f} {} tok/s ETA {}", run_, runs_, step, steps, loss,
                                 format_rate(smoothed_tokens_per_s_), format_duration(run_eta));
  if (runs_ > 1) line += fmt::format(" (sweep {})", format_duration(sweep_eta));
  print_line(line + " " + name_, mode_ == Mode::Lines);
}

void SweepProgress::end_run(const std::string& summary) {
  steps_before_run_ += run_steps_;
  print_line(fmt::format("[{}/{}] {}", run_, runs_, summary), true);
}

void SweepProgress::message(const std::string& line) { print_line(line, true); }

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
