// The build's git stamp (cmake/git_state.cmake), run by CMake on a scratch repository: the commit of
// HEAD and whether tracked files differ from it, a header rewritten only when that state changes,
// and the reason where there is no repository.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/file_output.h"
#include "experiments/process.h"
#include "tests/runner_fixture.h"

namespace pathbench {
namespace {

namespace fs = std::filesystem;
using testing::fresh_temp_dir;

// Runs the stamp script on `repo` into `header`; its exit status.
int stamp(const fs::path& repo, const fs::path& header) {
  return run_process({PATHBENCH_CMAKE_COMMAND, "-DSOURCE_DIR=" + repo.string(), "-DOUT=" + header.string(), "-P",
                      std::string(PATHBENCH_SOURCE_DIR) + "/cmake/git_state.cmake"},
                     true)
      .exit_code;
}

int git(const fs::path& repo, std::vector<std::string> args) {
  std::vector<std::string> argv = {"git", "-C", repo.string(), "-c", "user.name=t", "-c", "user.email=t@t"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, true).exit_code;
}

TEST_CASE("The build stamps the commit and dirty state of its source tree", "[runner]") {
  const fs::path dir = fresh_temp_dir("git-stamp"), repo = dir / "repo", header = dir / "git_state.h";
  fs::create_directories(repo);
  REQUIRE(git(repo, {"init", "-q"}) == 0);
  write_file_atomically(repo / "a.txt", "one\n");
  REQUIRE(git(repo, {"add", "a.txt"}) == 0);
  REQUIRE(git(repo, {"commit", "-q", "-m", "first"}) == 0);
  std::string head = run_process({"git", "-C", repo.string(), "rev-parse", "HEAD"}, true).output;
  head.resize(40);

  REQUIRE(stamp(repo, header) == 0);
  std::string text = read_file(header);
  CHECK_THAT(text, Catch::Contains("#define PATHBENCH_BUILT_COMMIT \"" + head + "\""));
  CHECK_THAT(text, Catch::Contains("#define PATHBENCH_BUILT_DIRTY 0 "));
  CHECK_THAT(text, Catch::Contains("#define PATHBENCH_BUILT_GIT_ERROR \"\""));

  // The same state again: the header is left as it was (so nothing that includes it recompiles).
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(header, old_time);
  REQUIRE(stamp(repo, header) == 0);
  CHECK(fs::last_write_time(header) == old_time);

  // A tracked file changed: dirty, and the header rewritten. An untracked file alone is not dirt.
  write_file_atomically(repo / "untracked.txt", "x\n");
  REQUIRE(stamp(repo, header) == 0);
  CHECK_THAT(read_file(header), Catch::Contains("#define PATHBENCH_BUILT_DIRTY 0 "));
  write_file_atomically(repo / "a.txt", "two\n");
  REQUIRE(stamp(repo, header) == 0);
  CHECK(fs::last_write_time(header) != old_time);
  CHECK_THAT(read_file(header), Catch::Contains("#define PATHBENCH_BUILT_DIRTY 1 "));

  // No repository: no commit, the reason instead.
  const fs::path plain = dir / "plain";
  fs::create_directories(plain);
  REQUIRE(stamp(plain, header) == 0);
  text = read_file(header);
  CHECK_THAT(text, Catch::Contains("#define PATHBENCH_BUILT_COMMIT \"\""));
  CHECK_THAT(text, Catch::Contains("#define PATHBENCH_BUILT_DIRTY -1 "));
  CHECK_THAT(text, Catch::Contains("git rev-parse HEAD failed in " + plain.string()));
}

}  // namespace
}  // namespace pathbench
