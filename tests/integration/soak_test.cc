// Soak: 10,000 mixed collectives of random sizes on the world and on split
// communicators made and destroyed in between. File descriptors, shared-memory
// segments, threads and resident memory must come back to where they started.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "spawn.h"

namespace braid::test {
namespace {

int countEntries(const char* dir, const char* prefix) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) ++n;
    }
    closedir(d);
  }
  return n;
}

long statusField(const char* key) {  // from /proc/self/status, e.g. "Threads:"
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::string(key).size()));
  }
  return -1;
}

struct Usage {
  int fds;
  long threads;
  long rssKb;
};
Usage usage() { return {countEntries("/proc/self/fd", ""), statusField("Threads:"), statusField("VmRSS:")}; }

// One collective of a kind and size drawn from `rng` (the same draws on every
// rank), checked exactly; false on any error or wrong value.
bool oneCall(braidComm_t comm, std::mt19937& rng, std::vector<int32_t>& a, std::vector<int32_t>& b) {
  int n = 0, me = 0;
  braidCommCount(comm, &n);
  braidCommUserRank(comm, &me);
  const size_t count = rng() % 4 == 0 ? 1 + rng() % 65536 : 1 + rng() % 512;
  const int kind = static_cast<int>(rng() % 5);
  const int root = static_cast<int>(rng() % n);
  if (a.size() < count * n) {
    a.resize(count * n);
    b.resize(count * n);
  }
  for (size_t i = 0; i < count * n; ++i) a[i] = static_cast<int32_t>(me + i);
  braidResult_t r = braidSuccess;
  switch (kind) {
    case 0:
      r = braidAllReduce(a.data(), b.data(), count, braidInt32, braidSum, comm, nullptr);
      return r == braidSuccess && b[count - 1] == static_cast<int32_t>(n * (n - 1) / 2 + n * (count - 1));
    case 1:
      r = braidAllGather(a.data(), b.data(), count, braidInt32, comm, nullptr);
      return r == braidSuccess && b[(n - 1) * count] == n - 1;
    case 2:
      r = braidReduceScatter(a.data(), b.data(), count, braidInt32, braidSum, comm, nullptr);
      return r == braidSuccess &&
             b[0] == static_cast<int32_t>(n * (n - 1) / 2 + n * (me * count));
    case 3:
      r = braidBroadcast(a.data(), b.data(), count, braidInt32, root, comm, nullptr);
      return r == braidSuccess && b[0] == root;
    default:
      r = braidAlltoAll(a.data(), b.data(), count / n + 1, braidInt32, comm, nullptr);
      return r == braidSuccess;
  }
}

int soakBody(int rank) {
  braidComm_t world;
  if (braidCommInitFromEnv(&world, nullptr) != braidSuccess) return 2;
  std::mt19937 rng(1234);  // same sequence on every rank
  std::vector<int32_t> a, b;
  auto round = [&](int calls) {
    braidComm_t sub = nullptr;
    if (braidCommSplit(world, rank % 2, rank, &sub, nullptr) != braidSuccess) return false;
    std::mt19937 subRng(rng());  // both halves draw alike
    for (int i = 0; i < calls; ++i) {
      const bool onSub = rng() % 3 == 0;
      if (!oneCall(onSub ? sub : world, onSub ? subRng : rng, a, b)) return false;
    }
    return braidCommDestroy(sub) == braidSuccess;
  };
  if (!round(500)) return 3;  // warm-up: links, segments, caches
  const Usage before = usage();
  for (int r = 0; r < 19; ++r) {
    if (!round(500)) return 4;
  }
  const Usage after = usage();
  braidCommDestroy(world);
  std::printf("fds %d -> %d, threads %ld -> %ld, rss %ld -> %ld KiB\n", before.fds, after.fds,
              before.threads, after.threads, before.rssKb, after.rssKb);
  if (after.fds > before.fds) return 5;  // an early peer link may be stashed at "before"
  if (after.threads != before.threads) return 6;
  if (after.rssKb > before.rssKb + 32 * 1024) return 7;
  return 0;
}

TEST(Soak, TenThousandMixedCallsLeaveNothingBehind) {
  const int n = 4;
  const int segmentsBefore = countEntries("/dev/shm", "braid-");
  Env env = jobEnv(n);
  env["BRAID_TIMEOUT_MS"] = "60000";
  auto outcomes = runRanks(n, env, [](int r) { return soakBody(r); }, 600);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
  EXPECT_EQ(countEntries("/dev/shm", "braid-"), segmentsBefore);
}

}  // namespace
}  // namespace braid::test
