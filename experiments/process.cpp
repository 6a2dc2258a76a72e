// run_process: fork, exec and wait, with an optional pipe for standard output.
#include "experiments/process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pathbench {

ProcessResult run_process(const std::vector<std::string>& argv, bool capture) {
  ProcessResult result;
  if (argv.empty()) return result;
  int pipe_fds[2] = {-1, -1};
  if (capture && ::pipe(pipe_fds) != 0) return result;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (capture) {
      ::dup2(pipe_fds[1], STDOUT_FILENO);
      const int devnull = ::open("/dev/null", O_WRONLY);
      if (devnull >= 0) ::dup2(devnull, STDERR_FILENO);
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
    }
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  if (capture) ::close(pipe_fds[1]);
  if (pid < 0) {
    if (capture) ::close(pipe_fds[0]);
    return result;
  }
  if (capture) {
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) result.output.append(buffer, size_t(n));
    ::close(pipe_fds[0]);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace pathbench
