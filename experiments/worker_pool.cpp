// run_worker_pool: forking the workers, reading their events, recording the runs of workers that
// die, and placing workers on GPUs.
#include "experiments/worker_pool.h"

#include <fmt/format.h>
#include <omp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/device.h"
#include "core/error.h"
#include "core/optim/training_backend.h"
#include "experiments/file_output.h"
#include "experiments/result_file.h"
#include "experiments/run_claim.h"
#include "experiments/run_metadata.h"
#include "experiments/stop_signal.h"
#include "experiments/worker_events.h"

namespace pathbench {

namespace {

// How often the parent looks for a stop request while no worker writes (a signal may reach another
// of its threads, leaving poll uninterrupted).
constexpr int kStopCheckMilliseconds = 500;

// One worker process as the parent sees it.
struct Worker {
  int slot = 0;
  pid_t pid = -1;
  int fd = -1;               // read end of its event pipe
  std::string pending;       // bytes read after the last complete line
  std::string run;           // the run it is training ("" between runs)
  int64_t step = 0;          // the last step it reported
  std::string run_start;     // UTC time the run began
};

// Forks a child that runs `body` and exits; the parent gets its pid and the read end of a pipe whose
// write end the child's body receives. Standard output is flushed first so that nothing buffered
// is written twice.
template <class Body>
std::pair<pid_t, int> fork_with_pipe(const std::vector<int>& close_in_child, Body body) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(fmt::format("cannot start a worker process: pipe: {}", std::strerror(errno)));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("cannot start a worker process: fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    for (int fd : close_in_child) ::close(fd);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed parent takes its workers along
    if (::getppid() != parent) ::_exit(1);
    ::_exit(body(fds[1]));
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// "killed by signal 9 (Killed)" or "exited with status 3".
std::string describe_exit(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

// The CUDA_VISIBLE_DEVICES value that shows a worker device `index` of this process's GPUs.
std::string visible_device(int index) {
  const char* inherited = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!inherited || !*inherited) return std::to_string(index);
  std::vector<std::string> ids;
  std::string id;
  for (const char* c = inherited;; ++c) {
    if (*c == ',' || *c == '\0') {
      ids.push_back(id);
      id.clear();
      if (*c == '\0') break;
    } else {
      id += *c;
    }
  }
  return index < int(ids.size()) ? ids[size_t(index)] : std::to_string(index);
}

class WorkerPool {
 public:
  WorkerPool(const std::vector<RunState>& states, const SweepOptions& options, const json& git,
             std::filesystem::file_time_type sweep_start, SweepProgress& progress)
      : states_(states), options_(options), git_(git), sweep_start_(sweep_start), progress_(progress) {
    const int64_t places = options.gpus.empty() ? 1 : int64_t(options.gpus.size());
    workers_.resize(size_t(options.jobs * places));
    threads_per_worker_ = std::max(1, omp_get_max_threads() / int(workers_.size()));
  }

  SweepSummary run() {
    progress_.message(fmt::format("{} workers{}, {} CPU threads each", workers_.size(),
                                  options_.gpus.empty() ? "" : fmt::format(" on GPUs {}", json(options_.gpus).dump()),
                                  threads_per_worker_));
    for (size_t i = 0; i < workers_.size(); ++i) start(int(i));
    bool forwarded = false;
    while (true) {
      std::vector<pollfd> fds;
      for (const Worker& w : workers_)
        if (w.fd >= 0) fds.push_back(pollfd{w.fd, POLLIN, 0});
      if (fds.empty()) break;
      if (::poll(fds.data(), fds.size(), kStopCheckMilliseconds) < 0 && errno != EINTR)
        throw Error(fmt::format("worker pool: poll: {}", std::strerror(errno)));
      if (stop_requested() && !forwarded) {  // pass the request on: each worker stops after its step
        forwarded = true;
        progress_.message(fmt::format("signal {}: stopping after the current steps (runs resume next time)",
                                      stop_signal()));
        for (const Worker& w : workers_)
          if (w.fd >= 0) ::kill(w.pid, SIGTERM);
      }
      for (const pollfd& p : fds)
        if (p.revents != 0) read_from(worker_of(p.fd));
    }
    return summary_;
  }

 private:
  void start(int slot) {
    std::vector<int> open_fds;
    for (const Worker& w : workers_)
      if (w.fd >= 0) open_fds.push_back(w.fd);
    const auto [pid, fd] = fork_with_pipe(open_fds, [&](int write_fd) { return work(slot, write_fd); });
    workers_[size_t(slot)] = Worker{slot, pid, fd, "", "", 0, ""};
  }

  // The body of a worker process: its exit status.
  int work(int slot, int write_fd) {
    PipeEvents events(write_fd);
    ignore_repeated_stop_signals();
    try {
      if (!options_.gpus.empty())
        ::setenv("CUDA_VISIBLE_DEVICES",
                 visible_device(options_.gpus[size_t(slot) % options_.gpus.size()]).c_str(), 1);
      omp_set_num_threads(threads_per_worker_);
      work_through_sweep(states_, options_, git_, sweep_start_, events);
      return 0;
    } catch (const std::exception& e) {
      events.message(fmt::format("worker {} stopped: {}", slot, e.what()));
      return 3;
    }
  }

  Worker& worker_of(int fd) {
    for (Worker& w : workers_)
      if (w.fd == fd) return w;
    throw std::logic_error("worker pool: an event from an unknown pipe");
  }

  void read_from(Worker& w) {
    char buffer[4096];
    const ssize_t n = ::read(w.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) return;
    if (n > 0) {
      w.pending.append(buffer, size_t(n));
      for (size_t end; (end = w.pending.find('\n')) != std::string::npos;) {
        handle(w, w.pending.substr(0, end));
        w.pending.erase(0, end + 1);
      }
      return;
    }
    ::close(w.fd);  // end of file: the worker has exited
    w.fd = -1;
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    ended(w, status);
  }

  void handle(Worker& w, const std::string& line) {
    const std::optional<WorkerEvent> e = parse_worker_event(line);
    if (!e) return;
    switch (e->kind) {
      case WorkerEvent::Kind::BeginRun:
        w.run = e->name;
        w.step = 0;
        w.run_start = utc_timestamp();
        progress_.begin_run_in(w.slot, e->name, e->steps);
        break;
      case WorkerEvent::Kind::Step:
        w.step = e->step;
        progress_.on_step_in(w.slot, e->step, e->steps, e->loss, e->tokens_per_s);
        break;
      case WorkerEvent::Kind::EndRun:
        ++summary_.count_of(e->status);
        w.run.clear();
        progress_.end_run_in(w.slot, e->text);
        break;
      case WorkerEvent::Kind::Message:
        progress_.message(e->text);
        break;
    }
  }

  // A worker exited. One that died in a run has the run recorded as failed, and a new worker takes
  // its slot (runs may be left); one that ended between runs found nothing more to claim.
  void ended(Worker& w, int status) {
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (w.run.empty()) {
      if (!clean) progress_.message(fmt::format("worker {} (pid {}) {}", w.slot, w.pid, describe_exit(status)));
      return;
    }
    const std::string reason = fmt::format("the worker process (pid {}) {} during the run", w.pid, describe_exit(status));
    if (record_failure(w, reason)) {
      ++summary_.failed;
      progress_.end_run_in(w.slot, fmt::format("{} failed at step {}: {}", w.run, w.step, reason));
    } else {  // it died after writing the result
      ++summary_.done;
      progress_.end_run_in(w.slot, fmt::format("{} done (its worker then {})", w.run, describe_exit(status)));
    }
    if (!stop_requested()) start(w.slot);
  }

  // Writes a failed result for the worker's run unless a done one exists (then returns false).
  bool record_failure(const Worker& w, const std::string& reason) {
    bool failed = true;
    for (const RunState& s : states_) {
      const PlannedRun& run = *s.run;
      if (run.file_stem() != w.run) continue;
      const RunFiles files = run_files(options_.out_dir, run);
      failed = result_status(files.result) != "done";
      if (failed) {
        RunOutcome outcome;
        outcome.status = "failed";
        outcome.failure_reason = reason;
        outcome.failure_step = w.step;
        const RunContext context{options_.config_file, w.run_start, utc_timestamp(), 0, threads_per_worker_, git_};
        write_file_atomically(files.result, make_result(run, outcome, nullptr, context).dump(2) + "\n");
      }
      release_claims_of(options_.out_dir, run.file_stem(), int64_t(w.pid));
    }
    return failed;
  }

  const std::vector<RunState>& states_;
  const SweepOptions& options_;
  const json& git_;
  std::filesystem::file_time_type sweep_start_;
  SweepProgress& progress_;
  std::vector<Worker> workers_;
  int threads_per_worker_ = 1;
  SweepSummary summary_;
};

}  // namespace

int probe_cuda_device_count() {
  if (!cuda_backend_built()) return 0;
  const auto [pid, fd] = fork_with_pipe({}, [](int write_fd) {
    const int count = cuda_device_count();
    return ::write(write_fd, &count, sizeof count) == ssize_t(sizeof count) ? 0 : 1;
  });
  int count = 0;
  const bool read_all = ::read(fd, &count, sizeof count) == ssize_t(sizeof count);
  ::close(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return read_all ? count : 0;
}

std::vector<int> parse_gpu_list(const std::string& text) {
  if (!cuda_backend_built())
    throw Error(fmt::format("--gpus {}: this build has no CUDA backend (configure with -DPATHBENCH_CUDA=ON)", text));
  const int count = probe_cuda_device_count();
  if (count == 0) throw Error(fmt::format("--gpus {}: no CUDA GPU is visible on this machine", text));
  std::vector<int> gpus;
  if (text == "all") {
    for (int i = 0; i < count; ++i) gpus.push_back(i);
    return gpus;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos)
      throw Error(fmt::format("--gpus {}: '{}' is not a device index (give 'all' or indices such as 0,2)", text, item));
    const int index = std::stoi(item);
    if (index >= count)
      throw Error(fmt::format("--gpus {}: there is no GPU {} (this machine shows {}: 0-{})", text, index, count, count - 1));
    if (std::find(gpus.begin(), gpus.end(), index) != gpus.end())
      throw Error(fmt::format("--gpus {}: GPU {} is named twice", text, index));
    gpus.push_back(index);
    start = end + 1;
  }
  return gpus;
}

void check_pool_devices(const SweepOptions& options, bool needs_cuda) {
  if (!options.gpus.empty() && !needs_cuda)
    throw Error("--gpus places CUDA runs, but no run to do has device 'cuda' (add --device cuda)");
  if (needs_cuda && options.gpus.empty()) {
    if (!cuda_backend_built()) check_device_available("cuda");  // its error, without starting CUDA
    if (probe_cuda_device_count() == 0) throw Error("device 'cuda': no CUDA GPU is visible on this machine");
  }
}

SweepSummary run_worker_pool(const std::vector<RunState>& states, const SweepOptions& options, const json& git,
                             std::filesystem::file_time_type sweep_start, SweepProgress& progress) {
  return WorkerPool(states, options, git, sweep_start, progress).run();
}

}  // namespace pathbench
