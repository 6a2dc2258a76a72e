// Atomic writes (temp file + rename) and whole-file reads.
#include "experiments/file_output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace pathbench {

void write_file_atomically(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary);
    out << content;
    out.flush();
    if (!out) {
      const std::string reason = errno != 0 ? std::strerror(errno) : "the write failed";
      fs::remove(tmp, ec);
      throw Error(fmt::format("cannot write '{}': {}", path, reason));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    const std::string reason = ec.message();  // before remove() reuses ec
    fs::remove(tmp, ec);
    throw Error(fmt::format("cannot write '{}': {}", path, reason));
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace pathbench
