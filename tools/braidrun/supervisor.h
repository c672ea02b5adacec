// The running job: starts the ranks, forwards their output and braidrun's signals to them,
// reaps them, and applies the failure policy:
//   a rank fails (non-zero exit or killed by a signal) -> say which and how on stderr, let the
//   others run for --grace-ms so they can report the failure themselves, then SIGTERM, then
//   SIGKILL 2 s later.
// --timeout stops the ranks the same way (SIGTERM, then SIGKILL). The loop polls the output
// pipes and the signal pipe together and never blocks on one rank.
// Single-threaded: one Supervisor per braidrun process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tools/braidrun/options.h"
#include "tools/braidrun/output_forwarder.h"
#include "tools/braidrun/rank_env.h"
#include "tools/braidrun/status.h"

namespace braid::run {

class Supervisor {
 public:
  // `signal_fd`: from installSignalPipe().
  Supervisor(Options options, int signal_fd);
  Supervisor(const Supervisor&) = delete;  // the forwarders point at stdout_ and stderr_
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts every rank. On error the ranks already started keep running until run() stops
  // them (see stopAfterLaunchFailure).
  Status launch(const JobEnvironment& job);
  // Makes run() stop the ranks already started and return kExitLaunchFailed.
  void stopAfterLaunchFailure();

  // Runs until every rank is reaped and its output forwarded; returns braidrun's exit code
  // (see --help).
  int run();

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kRunning, kGrace, kTerminating, kKilling };

  struct Rank {
    int rank;
    pid_t pid;
    bool running;
    LineForwarder out;
    LineForwarder err;
  };

  void pollOnce();
  int pollTimeoutMs() const;
  void forwardSignals();
  void reapChildren();
  void onRankExit(Rank& rank, int wait_status);
  void checkDeadlines();
  void stopRunning(int sig, const std::string& reason);
  void finishDraining();
  bool done() const;
  std::string runningRanks() const;
  void note(const std::string& message);

  Options options_;
  int signal_fd_;
  OutputSink stdout_{1, "stdout"};
  OutputSink stderr_{2, "stderr"};
  std::vector<Rank> ranks_;
  int running_ = 0;
  Phase phase_ = Phase::kRunning;
  std::optional<int> exit_code_;  // decided by the first failure; 0 if there is none
  std::string failure_;           // "rank 2 failed", for later messages
  std::optional<Clock::time_point> phase_deadline_;    // end of grace, or of SIGTERM's wait
  std::optional<Clock::time_point> timeout_deadline_;  // --timeout
  std::optional<Clock::time_point> drain_deadline_;    // see finishDraining()
};

}  // namespace braid::run
