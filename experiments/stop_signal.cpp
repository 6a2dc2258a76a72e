// StopSignals: the SIGTERM/SIGINT handler that records a stop request (experiments/stop_signal.h).
#include "experiments/stop_signal.h"

#include <csignal>

namespace pathbench {

namespace {

volatile std::sig_atomic_t g_signal = 0;             // the signal that asked to stop; 0: none
volatile std::sig_atomic_t g_repeat_ends_process = 1;  // 0 in worker processes

extern "C" void on_stop_signal(int sig) {
  if (g_signal != 0 && g_repeat_ends_process) {  // asked twice: stop now, as without a handler
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_signal = sig;
}

}  // namespace

StopSignals::StopSignals() {
  g_signal = 0;
  g_repeat_ends_process = 1;
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes go on; poll returns anyway (it is never restarted)
  sigaction(SIGTERM, &action, &previous_term_);
  sigaction(SIGINT, &action, &previous_interrupt_);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &previous_term_, nullptr);
  sigaction(SIGINT, &previous_interrupt_, nullptr);
  g_signal = 0;
}

bool stop_requested() { return g_signal != 0; }
int stop_signal() { return int(g_signal); }
void ignore_repeated_stop_signals() { g_repeat_ends_process = 0; }

}  // namespace pathbench
