// Resource limits met by real ranks: file descriptors exhausted (a rank's
// RLIMIT_NOFILE cut to what it already has open), the rendezvous port held by
// another process, and a /dev/shm too small for the shared-memory FIFOs (a
// 256 KiB tmpfs in a private mount namespace). Each is a braidSystemError
// naming what to change, on the rank that hit it; the others fail within
// their timeout instead of hanging.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include <string>
#include <vector>

#include "braid/braid.h"
#include "spawn.h"

namespace braid::test {
namespace {

// Leaves this process no descriptor to open: the soft limit becomes one above
// the highest one open (descriptors are allocated lowest first).
bool exhaustDescriptors() {
  int highest = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return false;
  const int self = dirfd(d);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != self && fd > highest) highest = fd;
  }
  closedir(d);
  // Fill the holes below the highest, so no lower number is free either.
  for (int fd = 0; fd <= highest; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) (void)!dup2(0, fd);
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = static_cast<rlim_t>(highest + 1);
  return setrlimit(RLIMIT_NOFILE, &lim) == 0;
}

// Rank `victim` runs out of descriptors before init (stage 0) or between init
// and its first all-reduce (stage 1). It must fail with braidSystemError whose
// text says to raise `ulimit -n`; every other rank fails within the timeout.
class DescriptorsExhausted : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(DescriptorsExhausted, TheRankSaysRaiseUlimitAndTheOthersFailInTime) {
  const int n = 3;
  const auto [victim, stage] = GetParam();
  Env env = jobEnv(n);
  env["BRAID_TIMEOUT_MS"] = "4000";
  auto outcomes = runRanks(n, env, [victim = victim, stage = stage](int rank) {
    if (rank == victim && stage == 0 && !exhaustDescriptors()) return 9;
    braidComm_t comm = nullptr;
    braidResult_t res = braidCommInitFromEnv(&comm, nullptr);
    if (res != braidSuccess) {
      fprintf(stderr, "INIT(%d): %s\n", static_cast<int>(res), braidGetLastError(nullptr));
      return rank == victim ? 3 : 4;
    }
    if (rank == victim && stage == 1 && !exhaustDescriptors()) return 9;
    std::vector<int> v(1024, rank + 1);
    res = braidAllReduce(v.data(), v.data(), v.size(), braidInt32, braidSum, comm, nullptr);
    fprintf(stderr, "ALLREDUCE(%d): %s\n", static_cast<int>(res), braidGetLastError(comm));
    braidCommAbort(comm);
    if (res == braidSuccess) return 0;
    return rank == victim ? 3 : 4;
  }, 60);
  const std::string& mine = outcomes[victim].output;
  EXPECT_EQ(outcomes[victim].exitCode, 3) << mine;
  EXPECT_NE(mine.find(stage == 0 ? "INIT(2)" : "ALLREDUCE(2)"), std::string::npos) << mine;
  EXPECT_NE(mine.find("ulimit -n"), std::string::npos) << mine;
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(outcomes[r].exitCode, 4) << "rank " << r << ":\n" << outcomes[r].output;
    // BRAID_TIMEOUT_MS (4 s) and bootstrap's 2 s margin, with room for a slow machine.
    EXPECT_LT(outcomes[r].endSeconds, 20.0) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, DescriptorsExhausted,
    ::testing::Values(std::make_tuple(2, 0), std::make_tuple(0, 1), std::make_tuple(1, 1)),
    [](const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
      return "rank" + std::to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) == 0 ? "_before_init" : "_before_first_collective");
    });

// BRAID_ROOT names a port another process listens on: rank 0 says which port
// and to pick another in BRAID_ROOT; the others time out at the rendezvous.
TEST(PortInUse, RankZeroNamesThePortAndBraidRoot) {
  const int n = 2;
  int holder = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(holder, 16), 0);
  socklen_t len = sizeof(a);
  getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  Env env = jobEnv(n);
  env["BRAID_ROOT"] = "127.0.0.1:" + port;
  env["BRAID_TIMEOUT_MS"] = "2000";
  auto outcomes = runRanks(n, env, [](int) {
    braidComm_t comm = nullptr;
    braidResult_t res = braidCommInitFromEnv(&comm, nullptr);
    fprintf(stderr, "INIT(%d): %s\n", static_cast<int>(res), braidGetLastError(nullptr));
    return res == braidSuccess ? 0 : 3;
  }, 60);
  close(holder);
  const std::string& out = outcomes[0].output;
  EXPECT_EQ(outcomes[0].exitCode, 3) << out;
  EXPECT_NE(out.find("INIT(2)"), std::string::npos) << out;  // braidSystemError
  EXPECT_NE(out.find(":" + port + ":"), std::string::npos) << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
  // The hint once, not twice (it used to be said by bind's caller and by the errno).
  const size_t init = out.find("INIT(2)");
  const std::string line = out.substr(init, out.find('\n', init) - init);
  const size_t hint = line.find("BRAID_ROOT");
  EXPECT_NE(hint, std::string::npos) << line;
  EXPECT_EQ(line.find("BRAID_ROOT", hint + 1), std::string::npos) << line;
  EXPECT_EQ(outcomes[1].exitCode, 3) << outcomes[1].output;
  EXPECT_LT(outcomes[1].endSeconds, 20.0);
}

// Docker's /dev/shm is 64 MiB; here a private 256 KiB tmpfs, smaller than one
// FIFO (8 slots of 128 KiB). Both ranks fail their first all-reduce with a
// braidSystemError naming --shm-size, and leave nothing in /dev/shm.
TEST(ShmTooSmall, FirstCollectiveNamesShmSizeAndLeavesNothing) {
  std::string out;
  pid_t pid = fork();
  if (pid == 0) {
    // A child of its own: the mount namespace must not leak into other tests.
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) ||
        mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=256k,mode=1777") != 0) {
      _exit(77);
    }
    const int n = 2;
    Env env = jobEnv(n);
    env["BRAID_TRANSPORTS"] = "shm";
    env["BRAID_TIMEOUT_MS"] = "10000";
    auto outcomes = runRanks(n, env, [](int rank) {
      braidComm_t comm = nullptr;
      if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
      std::vector<float> v(4096, 1.0f);
      braidResult_t res =
          braidAllReduce(v.data(), v.data(), v.size(), braidFloat32, braidSum, comm, nullptr);
      fprintf(stderr, "ALLREDUCE(%d): %s\n", static_cast<int>(res), braidGetLastError(comm));
      braidCommDestroy(comm);
      return res == braidSuccess ? 0 : 3;
    }, 60);
    int bad = 0;
    for (int r = 0; r < n; ++r) {
      const std::string& o = outcomes[r].output;
      const bool ok = outcomes[r].exitCode == 3 && outcomes[r].endSeconds < 30.0;
      // The rank that ran out names it; its peer may instead see it leave.
      if (!ok) fprintf(stderr, "rank %d:\n%s\n", r, o.c_str());
      bad += ok ? 0 : 1;
    }
    bool named = false;
    for (const RankOutcome& o : outcomes) {
      named = named || (o.output.find("ALLREDUCE(2): ") != std::string::npos &&
                        o.output.find("--shm-size") != std::string::npos);
    }
    if (!named) fprintf(stderr, "no rank named --shm-size:\n%s\n", outcomes[0].output.c_str());
    std::string left;
    (void)runCommand("ls -A /dev/shm", &left);
    if (!left.empty()) fprintf(stderr, "left in /dev/shm: %s\n", left.c_str());
    _exit(bad == 0 && named && left.empty() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    GTEST_SKIP() << "no private mount namespace here (needs CAP_SYS_ADMIN to mount a tmpfs)";
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "see the output above";
}

}  // namespace
}  // namespace braid::test
