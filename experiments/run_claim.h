// Claim files: how several workers (processes of one pool, several hosts on a shared filesystem,
// Slurm array tasks) share one results folder without training a run twice. A worker claims a run
// by creating <out>/<stem>.<generation>.claim with link(2), which succeeds for exactly one
// creator; the file names its host and pid and carries a heartbeat the owner rewrites every few
// seconds. A claim whose owner is gone (same host, pid no longer alive) or whose heartbeat is
// older than the stale age is taken over by creating the next generation, which again exactly
// one worker wins. After writing the run's result the owner removes its claim.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "core/error.h"

namespace pathbench {

// Who holds a claim, as written in the claim file.
struct ClaimOwner {
  std::string host;
  int64_t pid = 0;
  double heartbeat = 0;  // seconds since the Unix epoch
};

// This process as a claim owner, with the heartbeat set to now.
ClaimOwner this_claim_owner();
// Seconds since the Unix epoch.
double unix_now();

// True when a claim of `owner` is no longer held: its host is this host and its pid is not alive,
// or its heartbeat is more than `stale_after_s` seconds old (a lost host, a stopped process).
bool claim_is_stale(const ClaimOwner& owner, double now, double stale_after_s);

// Run stem → the owner named in its newest claim in `dir`, read in one pass over the folder; a run
// with no claim, or whose newest claim cannot be read (being removed), is absent.
std::map<std::string, ClaimOwner> newest_claim_owners(const std::string& dir);

// Removes the claims of run `stem` in `dir` that name process `pid` of this host (a worker that died).
void release_claims_of(const std::string& dir, const std::string& stem, int64_t pid);

// A claim this process holds; a background thread rewrites its heartbeat until release() (or the
// destructor) removes the claim.
class RunClaim {
 public:
  ~RunClaim();
  RunClaim(const RunClaim&) = delete;
  RunClaim& operator=(const RunClaim&) = delete;

  // Removes this claim and every older generation of the run's claims.
  void release();
  const std::string& path() const { return path_; }
  int64_t generation() const { return generation_; }

  // Tries to claim run `stem` in `dir`: nullopt when a live claim of another worker holds it or
  // another worker won the race. Throws pathbench::Error when the folder cannot be written.
  static std::unique_ptr<RunClaim> try_claim(const std::string& dir, const std::string& stem, double stale_after_s,
                                             double heartbeat_every_s);

 private:
  RunClaim(std::string dir, std::string stem, int64_t generation, double heartbeat_every_s);
  void heartbeat_loop(double every_s);

  std::string dir_, stem_, path_;
  int64_t generation_;
  std::atomic<bool> stop_{false};
  std::thread heartbeat_;
};

// Default ages: a claim's heartbeat is rewritten every 5 s and counts as stale after 60 s.
inline constexpr double kClaimHeartbeatSeconds = 5;
inline constexpr double kClaimStaleSeconds = 60;

}  // namespace pathbench
