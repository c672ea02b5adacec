// Signals in braidrun: the handlers only write the signal number to a pipe (the self-pipe
// trick), and the event loop reads it with the ranks' output, so no real work happens in a
// signal handler. Signal dispositions are process-wide: install once, from main, before
// starting any rank. Not thread-safe (braidrun is single-threaded).
#pragma once

#include <signal.h>

#include <array>
#include <vector>

#include "tools/braidrun/status.h"

namespace braid::run {

// Signals that braidrun passes on to every running rank.
inline constexpr std::array<int, 6> kForwardedSignals = {SIGINT,  SIGTERM, SIGHUP,
                                                         SIGQUIT, SIGUSR1, SIGUSR2};

// Installs handlers for kForwardedSignals (except those already ignored, as under nohup) and
// SIGCHLD that write to a non-blocking pipe, and ignores SIGPIPE (a closed stdout must not
// kill braidrun while ranks run). Returns the pipe's read end, to poll for POLLIN.
Expected<int> installSignalPipe();

// The signals received since the last call, oldest first (SIGCHLD included).
std::vector<int> readPendingSignals(int signal_fd);

// Blocks the handled signals for its lifetime, so that a child between fork() and exec()
// cannot run braidrun's handlers.
class ScopedSignalBlock {
 public:
  ScopedSignalBlock();
  ~ScopedSignalBlock();
  ScopedSignalBlock(const ScopedSignalBlock&) = delete;
  ScopedSignalBlock& operator=(const ScopedSignalBlock&) = delete;

  // In the child after fork(): default dispositions for the signals braidrun catches, the
  // SIGPIPE disposition and signal mask braidrun was started with. Async-signal-safe.
  void restoreInChild() const;

 private:
  sigset_t original_mask_;
};

}  // namespace braid::run
