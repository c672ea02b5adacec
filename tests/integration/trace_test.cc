// BRAID_TRACE across real processes: a rank delayed on purpose is the straggler braid-trace
// reports, a killed rank's peers leave traces naming the call they were in, and a stopped
// rank's peers write theirs when the call times out and on the dump signal. The files and
// braid-trace's answers are checked by trace_check.py (tools/braid_trace's merge and report).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "spawn.h"

namespace braid::test {
namespace {

constexpr int kRanks = 4;
constexpr int kCalls = 24;
constexpr int kDelayedRank = 2;
constexpr int kDelayedCall = 11;  // the delayed rank sleeps before this all-reduce
constexpr int kDelayMs = 400;
constexpr size_t kCount = 16384;  // 64 KiB of int32

std::string freshDir(const char* what) {
  const std::string dir = std::string("/tmp/issue-49-") + what + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

std::string checker() {
  return std::string(BRAID_SOURCE_DIR) + "/tests/integration/trace_check.py";
}

// kCalls all-reduces of integers, checked exactly, a marker before each; the delayed rank
// sleeps before call kDelayedCall. Exit 0 when every sum is right.
int delayedJob(int rank) {
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  std::vector<int32_t> buf(kCount);
  for (int i = 0; i < kCalls; ++i) {
    for (size_t k = 0; k < kCount; ++k) buf[k] = static_cast<int32_t>(rank + i + k % 7);
    if (braidTraceMarker(comm, "step") != braidSuccess) return 4;
    if (rank == kDelayedRank && i == kDelayedCall) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kDelayMs));
    }
    if (braidAllReduce(buf.data(), buf.data(), kCount, braidInt32, braidSum, comm, nullptr) !=
        braidSuccess) {
      fprintf(stderr, "all-reduce %d: %s\n", i, braidGetLastError(comm));
      return 3;
    }
    for (size_t k = 0; k < kCount; ++k) {
      const int32_t want = kRanks * (i + static_cast<int32_t>(k % 7)) + kRanks * (kRanks - 1) / 2;
      if (buf[k] != want) return 5;
    }
  }
  braidCommDestroy(comm);
  return 0;
}

// All-reduces until one fails (exit 3) or `calls` pass (exit 0).
int untilError(int calls) {
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  std::vector<float> buf(kCount, 1.0f);
  for (int i = 0; i < calls; ++i) {
    if (braidAllReduce(buf.data(), buf.data(), kCount, braidFloat32, braidSum, comm, nullptr) !=
        braidSuccess) {
      fprintf(stderr, "ERROR: %s\n", braidGetLastError(comm));
      braidCommAbort(comm);
      return 3;
    }
  }
  braidCommDestroy(comm);
  return 0;
}

int check(const std::string& args, std::string* output) {
  return runCommand("python3 " + checker() + " " + args, output);
}

class TraceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TraceTest, DelayedRankIsTheStragglerOnOneTimeline) {
  const std::string dir = freshDir(GetParam());
  Env env = jobEnv(kRanks);
  env["BRAID_TRANSPORTS"] = GetParam();
  env["BRAID_TRACE"] = dir;
  auto outcomes = runRanks(kRanks, env, delayedJob, 120);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
  std::string out;
  const int rc = check("delayed " + dir + " " + std::to_string(kRanks) + " " +
                           std::to_string(kCalls) + " " + std::to_string(kDelayedRank) + " " +
                           std::to_string(kDelayedCall + 1) + " " + std::to_string(kDelayMs),
                       &out);
  EXPECT_EQ(rc, 0) << out;
  std::filesystem::remove_all(dir);
}

// shm runs the 64 KiB all-reduce on the shared windows, socket on the FIFO schedules.
INSTANTIATE_TEST_SUITE_P(Transports, TraceTest, ::testing::Values("shm", "socket"));

TEST(TraceFailures, KilledRanksPeersNameTheCallTheyWereIn) {
  const std::string dir = freshDir("killed");
  const int victim = 3;
  Env env = jobEnv(kRanks);
  env["BRAID_TRACE"] = dir;
  env["BRAID_TIMEOUT_MS"] = "30000";
  auto outcomes = runRanks(
      kRanks, env, [](int) { return untilError(1000000); }, 120,
      [&](const std::vector<pid_t>& pids) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        kill(pids[victim], SIGKILL);
      });
  for (int r = 0; r < kRanks; ++r) {
    if (r != victim) {
      EXPECT_EQ(outcomes[r].exitCode, 3) << "rank " << r << outcomes[r].output;
    }
  }
  std::string out;
  EXPECT_EQ(
      check("failed " + dir + " " + std::to_string(kRanks) + " " + std::to_string(victim), &out), 0)
      << out;
  std::filesystem::remove_all(dir);
}

// A stopped rank holds its peers until their deadline: the dump signal writes a peer's trace
// with the call in flight, and the timeout writes it again with the call failed.
TEST(TraceFailures, StoppedRanksPeersWriteOnSignalAndTimeout) {
  const std::string dir = freshDir("stopped");
  const int victim = 1;
  Env env = jobEnv(kRanks);
  env["BRAID_TRACE"] = dir;
  env["BRAID_TIMEOUT_MS"] = "4000";
  std::string signalled;
  auto outcomes = runRanks(
      kRanks, env, [](int) { return untilError(1000000); }, 120,
      [&](const std::vector<pid_t>& pids) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        kill(pids[victim], SIGSTOP);
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        kill(pids[0], SIGUSR1);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        check("signalled " + dir + " 0", &signalled);
        std::this_thread::sleep_for(std::chrono::milliseconds(6000));
        kill(pids[victim], SIGKILL);
      });
  EXPECT_NE(signalled.find("in flight"), std::string::npos) << signalled;
  for (int r = 0; r < kRanks; ++r) {
    if (r != victim) {
      EXPECT_EQ(outcomes[r].exitCode, 3) << "rank " << r << outcomes[r].output;
    }
  }
  std::string out;
  EXPECT_EQ(
      check("failed " + dir + " " + std::to_string(kRanks) + " " + std::to_string(victim), &out), 0)
      << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace braid::test
