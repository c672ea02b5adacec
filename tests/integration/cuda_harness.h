// What the GPU tests share to run ranks: device detection in a child (CUDA does not
// survive the fork that starts the ranks), the skip without a device, a gate that holds a
// stream back, ranks that must all pass, and ranks as two "nodes".
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "braid/braid.h"
#include "cuda/device.h"
#include "spawn.h"

namespace braid::test {

// ---- Device detection in a child process: "" when a device is there, else the reason.
inline std::string probeDevice() {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const cuda::DeviceStatus& s = cuda::deviceStatus();
    std::string msg = s.count > 0 ? "" : s.reason.empty() ? "no device" : s.reason;
    ssize_t w = write(fds[1], msg.data(), msg.size());
    _exit(w == static_cast<ssize_t>(msg.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string reason;
  char buf[512];
  ssize_t got;
  while ((got = read(fds[0], buf, sizeof(buf))) > 0) reason.append(buf, got);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return reason;
}

#define SKIP_WITHOUT_DEVICE()                        \
  do {                                               \
    static const std::string reason = probeDevice(); \
    if (!reason.empty()) GTEST_SKIP() << reason;     \
  } while (0)

// A word of pinned memory a stream can be held on: hold(stream) makes the stream's later
// work wait until open(); arm() opens it anyway after 20 s, on a thread of its own, so a
// call that waited for its stream still returns (and the test fails on its time).
class Gate {
 public:
  Gate() : mem_(cuda::pinnedAlloc(4096)) {
    if (mem_.isOk()) word()->store(0);
  }
  ~Gate() {
    open();
    if (mem_.isOk()) (void)cuda::pinnedFree(mem_.value());
  }
  bool ok() const { return mem_.isOk(); }
  bool hold(void* stream) { return cuda::streamWaitValue64(stream, mem_.value(), 1).isOk(); }
  void arm(int ms = 20000) {
    opener_ = std::thread([w = word(), ms] {
      for (int i = 0; i < ms / 10 && w->load() == 0; ++i) usleep(10000);
      w->store(1);
    });
  }
  void open() {
    if (mem_.isOk()) word()->store(1);
    if (opener_.joinable()) opener_.join();
  }

 private:
  std::atomic<uint64_t>* word() { return static_cast<std::atomic<uint64_t>*>(mem_.value()); }
  Expected<void*> mem_;
  std::thread opener_;
};

// The job's communicator from the launcher's environment, its size in *n and this rank in
// *rank (either may be null); false where it cannot be made.
inline bool joinJob(braidComm_t* comm, int* n, int* rank) {
  if (braidCommInitFromEnv(comm, nullptr) != braidSuccess) return false;
  if (n != nullptr) braidCommCount(*comm, n);
  if (rank != nullptr) braidCommUserRank(*comm, rank);
  return true;
}

// Runs `body` as n ranks with `env` and expects every rank to exit 0.
inline void expectEveryRankPasses(int n, const Env& env, int (*body)(), int timeoutSec) {
  auto outcomes = runRanks(
      n, env, [body](int) { return body(); }, timeoutSec);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

// Ranks as two "nodes" (BRAID_HOST_ID by rank parity, as multinode_test makes them): no
// device windows, every call staged through the proxy.
inline int onTwoNodes(int (*body)()) {
  const char* rank = getenv("BRAID_RANK");
  const int r = rank == nullptr ? 0 : atoi(rank);
  setenv("BRAID_HOST_ID", r % 2 == 0 ? "node0" : "node1", 1);
  return body();
}

}  // namespace braid::test
