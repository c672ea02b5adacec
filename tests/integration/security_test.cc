// Replayed ids across real processes: a rank left over from a finished job
// (its BRAID_SECRET) arrives at the rendezvous of a new job at the same
// BRAID_ROOT. The new root turns it away and logs it; the new job neither
// counts it as a rank nor waits for it; the stale rank fails with an error
// before its own timeout instead of hanging.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "spawn.h"

namespace braid::test {
namespace {

// Init, one exact all-reduce of every rank's number, destroy. Exit 0 when the
// sum is right; the error text is printed otherwise.
int initAndSum(int rank, int nranks) {
  braidComm_t comm = nullptr;
  braidResult_t res = braidCommInitFromEnv(&comm, nullptr);
  if (res != braidSuccess) {
    fprintf(stderr, "INIT(%d): %s\n", static_cast<int>(res), braidGetLastError(nullptr));
    return 3;
  }
  std::vector<int> v(4096, rank + 1);
  res = braidAllReduce(v.data(), v.data(), v.size(), braidInt32, braidSum, comm, nullptr);
  if (res != braidSuccess) {
    fprintf(stderr, "ALLREDUCE(%d): %s\n", static_cast<int>(res), braidGetLastError(comm));
    braidCommAbort(comm);
    return 4;
  }
  braidCommDestroy(comm);
  for (int x : v) {
    if (x != nranks * (nranks + 1) / 2) return 5;
  }
  return 0;
}

TEST(ReplayedId, AStaleRankOfAFinishedJobIsTurnedAwayAndLogged) {
  const int n = 3;
  Env oldJob = jobEnv(n);
  oldJob["BRAID_TIMEOUT_MS"] = "20000";
  auto first = runRanks(n, oldJob, [](int rank) { return initAndSum(rank, 3); }, 60);
  for (int r = 0; r < n; ++r) ASSERT_EQ(first[r].exitCode, 0) << first[r].output;

  // The new job reuses the root address (a launcher's fixed MASTER_PORT) with
  // a new secret. Its ranks 1 and 2 arrive late, after the stale rank, which
  // claims rank 1 with the old job's secret; the new ranks index themselves
  // 0..2 and the stale process is runRanks' rank 3.
  Env newJob = oldJob;
  newJob["BRAID_SECRET"] = randomHex();
  const std::string oldSecret = oldJob["BRAID_SECRET"];
  ASSERT_NE(newJob["BRAID_SECRET"], oldSecret);
  auto second = runRanks(n + 1, newJob, [&](int rank) {
    if (rank == n) {  // the stale rank of the finished job
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      setenv("BRAID_SECRET", oldSecret.c_str(), 1);
      setenv("BRAID_RANK", "1", 1);
      auto t0 = std::chrono::steady_clock::now();
      braidComm_t comm = nullptr;
      braidResult_t res = braidCommInitFromEnv(&comm, nullptr);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fprintf(stderr, "STALE(%d) after %.1f s: %s\n", static_cast<int>(res), s,
              braidGetLastError(nullptr));
      if (res == braidSuccess) braidCommAbort(comm);
      return res != braidSuccess && s < 10.0 ? 0 : 6;
    }
    if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return initAndSum(rank, 3);
  }, 60);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(second[r].exitCode, 0) << "rank " << r << ":\n" << second[r].output;
    // Joined as soon as the late ranks came: nothing waited for the stale one.
    EXPECT_LT(second[r].endSeconds, 15.0) << "rank " << r;
  }
  EXPECT_EQ(second[n].exitCode, 0) << second[n].output;
  EXPECT_NE(second[0].output.find("bootstrap: dropped a connection that did not present this "
                                  "job's secret"),
            std::string::npos)
      << second[0].output;
}

}  // namespace
}  // namespace braid::test
