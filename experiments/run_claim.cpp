// RunClaim: claim files created by link(2), their heartbeat thread, staleness and takeover.
#include "experiments/run_claim.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "experiments/file_output.h"

namespace pathbench {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string claim_path(const std::string& dir, const std::string& stem, int64_t generation) {
  return (fs::path(dir) / fmt::format("{}.{}.claim", stem, generation)).string();
}

// The run stem and generation of a claim file's name "<stem>.<generation>.claim"; nullopt for any
// other name.
std::optional<std::pair<std::string, int64_t>> parse_claim_name(const std::string& name) {
  const std::string suffix = ".claim";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string rest = name.substr(0, name.size() - suffix.size());  // "<stem>.<generation>"
  const size_t dot = rest.rfind('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  const std::string digits = rest.substr(dot + 1);
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::make_pair(rest.substr(0, dot), int64_t(std::stoll(digits)));
}

// Every claim file in `dir` as (stem, generation).
std::vector<std::pair<std::string, int64_t>> claims_in(const std::string& dir) {
  std::vector<std::pair<std::string, int64_t>> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (auto claim = parse_claim_name(it->path().filename().string())) out.push_back(std::move(*claim));
  return out;
}

// The generations of `stem`'s claim files in `dir`, ascending.
std::vector<int64_t> claim_generations(const std::string& dir, const std::string& stem) {
  std::vector<int64_t> out;
  for (const auto& [claim_stem, generation] : claims_in(dir))
    if (claim_stem == stem) out.push_back(generation);
  std::sort(out.begin(), out.end());
  return out;
}

std::string owner_json(const ClaimOwner& o) {
  return json{{"host", o.host}, {"pid", o.pid}, {"heartbeat", o.heartbeat}}.dump() + "\n";
}

// The owner named in a claim file; nullopt when it is missing or unreadable (a claim being
// removed, or a file some other program wrote).
std::optional<ClaimOwner> read_owner(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    const json j = json::parse(read_file(path));
    return ClaimOwner{j.at("host").get<std::string>(), j.at("pid").get<int64_t>(), j.at("heartbeat").get<double>()};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The age of a file's last change in seconds (0 when it cannot be read).
double file_age_seconds(const std::string& path) {
  std::error_code ec;
  const auto written = fs::last_write_time(path, ec);
  if (ec) return 0;
  return std::chrono::duration<double>(fs::file_time_type::clock::now() - written).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ClaimOwner this_claim_owner() { return ClaimOwner{host_name(), int64_t(::getpid()), unix_now()}; }

bool claim_is_stale(const ClaimOwner& owner, double now, double stale_after_s) {
  if (now - owner.heartbeat > stale_after_s) return true;
  if (owner.host != host_name() || owner.pid <= 0) return false;
  return ::kill(pid_t(owner.pid), 0) != 0 && errno == ESRCH;
}

std::map<std::string, ClaimOwner> newest_claim_owners(const std::string& dir) {
  std::map<std::string, int64_t> newest;  // stem → its highest generation
  for (const auto& [stem, generation] : claims_in(dir)) {
    int64_t& g = newest.emplace(stem, generation).first->second;
    g = std::max(g, generation);
  }
  std::map<std::string, ClaimOwner> owners;
  for (const auto& [stem, generation] : newest)
    if (std::optional<ClaimOwner> owner = read_owner(claim_path(dir, stem, generation))) owners[stem] = *owner;
  return owners;
}

void release_claims_of(const std::string& dir, const std::string& stem, int64_t pid) {
  const ClaimOwner self = this_claim_owner();
  std::error_code ec;
  for (int64_t g : claim_generations(dir, stem)) {
    const std::string path = claim_path(dir, stem, g);
    const std::optional<ClaimOwner> owner = read_owner(path);
    if (owner && owner->host == self.host && owner->pid == pid) fs::remove(path, ec);
  }
}

std::unique_ptr<RunClaim> RunClaim::try_claim(const std::string& dir, const std::string& stem, double stale_after_s,
                                              double heartbeat_every_s) {
  int64_t next = 1;
  const std::vector<int64_t> generations = claim_generations(dir, stem);
  if (!generations.empty()) {
    const std::string top = claim_path(dir, stem, generations.back());
    const std::optional<ClaimOwner> owner = read_owner(top);
    const bool stale = owner ? claim_is_stale(*owner, unix_now(), stale_after_s)
                             : file_age_seconds(top) > stale_after_s;  // unreadable: judged by its age
    if (!stale) return nullptr;
    next = generations.back() + 1;
  }
  // The claim appears whole or not at all: its content is written to a private file first, then
  // linked to the claim's name, which fails when another worker created that generation first.
  const std::string path = claim_path(dir, stem, next);
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, host_name(), ::getpid());
  write_file_atomically(tmp, owner_json(this_claim_owner()));
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int link_errno = errno;
  std::error_code ec;
  fs::remove(tmp, ec);
  if (linked != 0) {
    if (link_errno == EEXIST) return nullptr;
    throw Error(fmt::format("cannot create the claim file '{}': {}", path, std::strerror(link_errno)));
  }
  return std::unique_ptr<RunClaim>(new RunClaim(dir, stem, next, heartbeat_every_s));
}

RunClaim::RunClaim(std::string dir, std::string stem, int64_t generation, double heartbeat_every_s)
    : dir_(std::move(dir)), stem_(std::move(stem)), path_(claim_path(dir_, stem_, generation)), generation_(generation) {
  heartbeat_ = std::thread([this, heartbeat_every_s] { heartbeat_loop(heartbeat_every_s); });
}

RunClaim::~RunClaim() { release(); }

void RunClaim::heartbeat_loop(double every_s) {
  const auto step = std::chrono::milliseconds(50);
  auto next = std::chrono::steady_clock::now() + std::chrono::duration<double>(every_s);
  while (!stop_) {
    std::this_thread::sleep_for(step);
    if (stop_ || std::chrono::steady_clock::now() < next) continue;
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(every_s));
    try {
      write_file_atomically(path_, owner_json(this_claim_owner()));
    } catch (const Error&) {
      // A missed heartbeat only makes the claim look older; the next one tries again.
    }
  }
}

void RunClaim::release() {
  if (stop_.exchange(true)) return;
  if (heartbeat_.joinable()) heartbeat_.join();
  std::error_code ec;
  for (int64_t g : claim_generations(dir_, stem_))
    if (g <= generation_) fs::remove(claim_path(dir_, stem_, g), ec);
}

}  // namespace pathbench
