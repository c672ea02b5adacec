// Failures across real processes: a rank killed mid-all-reduce, strangers at
// the bootstrap port, ranks that never arrive, and braidrun's verdict.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "spawn.h"

namespace braid::test {
namespace {

// Loops over 8 MiB all-reduces until one fails; exit 3 with the error printed
// when it does, 0 if `iterations` all succeed.
int allReduceUntilError(int iterations) {
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) {
    fprintf(stderr, "init failed: %s\n", braidGetLastError(nullptr));
    return 2;
  }
  std::vector<float> buf(2 << 20, 1.0f);
  for (int i = 0; i < iterations; ++i) {
    braidResult_t res = braidAllReduce(buf.data(), buf.data(), buf.size(), braidFloat32,
                                       braidMax, comm, nullptr);
    if (res != braidSuccess) {
      fprintf(stderr, "ERROR(%d): %s\n", static_cast<int>(res), braidGetLastError(comm));
      braidCommAbort(comm);
      return 3;
    }
  }
  braidCommDestroy(comm);
  return 0;
}

class KilledRank : public ::testing::TestWithParam<const char*> {};

TEST_P(KilledRank, EveryOtherRankNamesItWithinTheTimeout) {
  const int n = 4;
  const int victim = 2;
  Env env = jobEnv(n);
  const std::string param = GetParam();
  env["BRAID_TRANSPORTS"] = param == "shm_single_copy" ? "shm" : param;
  env["BRAID_TIMEOUT_MS"] = "30000";
  if (param == "shm_single_copy") {
    // Every send through the FIFO schedules by single copy: a peer dies while the
    // others read its memory, or with their posted buffers unread.
    env["BRAID_SHM_CMA_MIN_BYTES"] = "1";
    env["BRAID_SHM_WINDOW_BYTES"] = "0";
    env["BRAID_ALGO"] = "allreduce:ring";
  }
  std::chrono::steady_clock::time_point killedAt;
  auto outcomes = runRanks(
      n, env, [](int) { return allReduceUntilError(1000000); }, 120,
      [&](const std::vector<pid_t>& pids) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        kill(pids[victim], SIGKILL);
        killedAt = std::chrono::steady_clock::now();
      });
  EXPECT_EQ(outcomes[victim].signal, SIGKILL);
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(outcomes[r].exitCode, 3) << "rank " << r << ":\n" << outcomes[r].output;
    EXPECT_NE(outcomes[r].output.find("rank 2 (pid"), std::string::npos)
        << "rank " << r << " does not name the dead rank:\n" << outcomes[r].output;
    EXPECT_NE(outcomes[r].output.find("ERROR(6)"), std::string::npos)  // braidRemoteError
        << outcomes[r].output;
  }
  // Noticed through the liveness watch, far inside BRAID_TIMEOUT_MS (30 s).
  for (int r = 0; r < n; ++r) {
    if (r != victim) {
      EXPECT_LT(outcomes[r].endSeconds, 1.5 + 10.0) << "rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, KilledRank,
                         ::testing::Values("shm", "shm_single_copy", "socket"));

int connectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 200; ++i) {
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return fd;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  close(fd);
  return -1;
}

TEST(Bootstrap, StrangersWithoutTheSecretDoNotDisturbTheJob) {
  const int n = 3;
  Env env = jobEnv(n);
  int port = std::stoi(env["BRAID_ROOT"].substr(env["BRAID_ROOT"].rfind(':') + 1));
  std::vector<int> strangers;
  auto outcomes = runRanks(
      n, env,
      [](int rank) {
        // Rank 0 serves the rendezvous; the others join late, after the strangers.
        if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(700));
        return allReduceUntilError(5);
      },
      60,
      [&](const std::vector<pid_t>&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        // One sends garbage, one half a hello, one the right shape with a wrong
        // secret, one connects and stays silent.
        std::vector<char> garbage(4096, 'x');
        int a = connectLoopback(port);
        ASSERT_GE(a, 0);
        (void)!write(a, garbage.data(), garbage.size());
        int b = connectLoopback(port);
        (void)!write(b, "BRHL", 4);
        int c = connectLoopback(port);
        std::vector<char> fake(600, 0);
        uint32_t magic = 0x4252484c;
        std::memcpy(fake.data(), &magic, 4);
        (void)!write(c, fake.data(), fake.size());
        int d = connectLoopback(port);
        strangers = {a, b, c, d};
      });
  for (int fd : strangers) close(fd);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
  EXPECT_NE(outcomes[0].output.find("did not present this job's secret"), std::string::npos)
      << outcomes[0].output;
}

// A stranger that connects to a rank's peer listener and says nothing must
// not hold up that rank's link set-up (hellos are read with poll, together).
TEST(PeerListener, ASilentStrangerDoesNotDelayTheLinks) {
  const int n = 2;
  Env env = jobEnv(n);
  env["BRAID_DEBUG"] = "INFO";
  int stranger = -1;
  auto outcomes = runRanks(
      n, env,
      [](int rank) {
        if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        return allReduceUntilError(3);
      },
      60,
      [&](const std::vector<pid_t>&) {
        // Rank 0 logs where peers connect before it waits for the rendezvous.
        std::string log = "/tmp/braid-test-" + std::to_string(getpid()) + "-0.log";
        for (int i = 0; i < 200 && stranger < 0; ++i) {
          std::ifstream f(log);
          std::string line;
          while (std::getline(f, line)) {
            size_t at = line.find("peers connect to 127.0.0.1:");
            if (at != std::string::npos) {
              stranger = connectLoopback(std::stoi(line.substr(at + 27)));
            }
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      });
  ASSERT_GE(stranger, 0) << outcomes[0].output;
  close(stranger);
  for (int r = 0; r < n; ++r) EXPECT_EQ(outcomes[r].exitCode, 0) << outcomes[r].output;
  // Rank 1 arrives at 1.5 s; a hello read that waited on the stranger would
  // add its 2 s or more.
  EXPECT_LT(outcomes[0].endSeconds, 3.4);  // waiting on the stranger: >= 3.5 s
}

TEST(Bootstrap, MissingRanksAreNamedAtTheDeadline) {
  Env env = jobEnv(4);  // four ranks expected, three started
  env["BRAID_TIMEOUT_MS"] = "1500";
  auto outcomes = runRanks(3, env, [](int) {
    braidComm_t comm;
    braidResult_t res = braidCommInitFromEnv(&comm, nullptr);
    fprintf(stderr, "RESULT %d: %s\n", static_cast<int>(res), braidGetLastError(nullptr));
    return res == braidSuccess ? 0 : 3;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 3) << outcomes[r].output;
    EXPECT_NE(outcomes[r].output.find("rank(s) 3 did not join"), std::string::npos)
        << outcomes[r].output;
  }
}

TEST(Abort, FromAnotherThreadUnblocksAWaitingAllReduce) {
  Env env = jobEnv(2);
  auto outcomes = runRanks(2, env, [](int rank) {
    braidComm_t comm;
    if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
    if (rank == 1) {  // never joins the all-reduce; learns that rank 0 left
      std::this_thread::sleep_for(std::chrono::seconds(2));
      float x = 1;
      braidResult_t res = braidAllReduce(&x, &x, 1, braidFloat32, braidSum, comm, nullptr);
      fprintf(stderr, "RANK1 %d: %s\n", static_cast<int>(res), braidGetLastError(comm));
      braidCommDestroy(comm);
      return res == braidRemoteError ? 0 : 4;
    }
    std::vector<float> buf(1 << 20, 1.0f);
    braidResult_t res = braidSuccess;
    std::chrono::steady_clock::time_point returned;
    std::thread worker([&] {
      res = braidAllReduce(buf.data(), buf.data(), buf.size(), braidFloat32, braidSum, comm,
                           nullptr);
      returned = std::chrono::steady_clock::now();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto abortAt = std::chrono::steady_clock::now();
    braidResult_t aborted = braidCommAbort(comm);
    worker.join();
    double ms = std::chrono::duration<double, std::milli>(returned - abortAt).count();
    fprintf(stderr, "RANK0 abort=%d op=%d after %.1f ms\n", static_cast<int>(aborted),
            static_cast<int>(res), ms);
    return aborted == braidSuccess && res != braidSuccess && ms < 1000 ? 0 : 3;
  });
  EXPECT_EQ(outcomes[0].exitCode, 0) << outcomes[0].output;
  EXPECT_EQ(outcomes[1].exitCode, 0) << outcomes[1].output;
  EXPECT_NE(outcomes[1].output.find("rank 0 (pid"), std::string::npos) << outcomes[1].output;
}

TEST(Braidrun, ExitsNonZeroAndOthersNameTheRankKilledMidAllReduce) {
  std::string bin = BRAID_BIN_DIR;
  std::string perf = bin + "/perf/coll/all_reduce_perf -b 8M -e 8M -n 100000 -w 0 -c 0";
  // Rank 1 runs the perf tool in the background and SIGKILLs it after a second.
  std::string script = "if [ $BRAID_RANK = 1 ]; then " + perf +
                       " & p=$!; sleep 1.5; kill -9 $p; wait $p; exit $?; else exec " + perf +
                       "; fi";
  std::string out;
  auto t0 = std::chrono::steady_clock::now();
  int rc = runCommand(std::string(BRAIDRUN_PATH) + " -n 3 --grace-ms 5000 sh -c '" + script + "'",
                      &out);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("braidrun: rank 1"), std::string::npos) << out;
  EXPECT_NE(out.find("[0] all_reduce_perf: rank 0"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 1 (pid"), std::string::npos) << out;
  EXPECT_LT(secs, 30.0);
}

// A rank that is alive but late: the timeout names the operation, the rank it
// waits for, and what that rank last completed (asked over the control links).
TEST(Timeout, NamesTheLateRankAndWhatItLastCompleted) {
  const int n = 3;
  Env env = jobEnv(n);
  env["BRAID_TIMEOUT_MS"] = "2000";
  auto outcomes = runRanks(n, env, [](int rank) {
    braidComm_t comm;
    if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
    float v[256] = {};
    if (braidAllReduce(v, v, 256, braidFloat32, braidSum, comm, nullptr) != braidSuccess) return 4;
    if (rank == 2) {  // never posts #2; stays alive to answer
      std::this_thread::sleep_for(std::chrono::milliseconds(6500));
      braidCommAbort(comm);
      return 0;
    }
    braidResult_t res = braidAllReduce(v, v, 256, braidFloat32, braidSum, comm, nullptr);
    fprintf(stderr, "ERROR(%d): %s\n", static_cast<int>(res), braidGetLastError(comm));
    // Stay until the others have timed out too (an abort would look like a death).
    std::this_thread::sleep_for(std::chrono::milliseconds(3000));
    braidCommAbort(comm);
    return res == braidTimeout ? 3 : 5;
  }, 60);
  EXPECT_EQ(outcomes[2].exitCode, 0) << outcomes[2].output;
  // Rank 1's ring neighbour is rank 2 in one direction at least: one of 0, 1
  // waits on 2 directly; the other may wait on a rank that waits on 2.
  bool named = false;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 3) << "rank " << r << ":\n" << outcomes[r].output;
    EXPECT_NE(outcomes[r].output.find("allreduce #2 ("), std::string::npos) << outcomes[r].output;
    named = named || outcomes[r].output.find("rank 2 last completed #1 and has not posted #2") !=
                         std::string::npos;
  }
  EXPECT_TRUE(named) << outcomes[0].output << "\n" << outcomes[1].output;
}

// BRAID_CHECK=1: matching calls run as usual; a call that differs fails on
// every rank with both calls named, instead of corrupting data or hanging.
TEST(CallCheck, MismatchedCallsFailOnEveryRankNamingBoth) {
  const int n = 3;
  Env env = jobEnv(n);
  env["BRAID_CHECK"] = "1";
  env["BRAID_TIMEOUT_MS"] = "20000";
  auto outcomes = runRanks(n, env, [](int rank) {
    braidComm_t comm;
    if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
    std::vector<float> v(300, 1.0f);
    if (braidAllReduce(v.data(), v.data(), 100, braidFloat32, braidSum, comm, nullptr) !=
            braidSuccess || v[0] != 3.0f) {
      return 4;
    }
    if (braidBroadcast(v.data(), v.data(), 10, braidFloat32, 1, comm, nullptr) != braidSuccess) {
      return 5;
    }
    // Rank 2 passes another count, then another root. A call that fails the
    // check is not posted: the next one has the same number on every rank.
    braidResult_t a = braidAllReduce(v.data(), v.data(), rank == 2 ? 200 : 100, braidFloat32,
                                     braidSum, comm, nullptr);
    std::printf("A(%d): %s\n", static_cast<int>(a), braidGetLastError(comm));
    braidResult_t b = braidBroadcast(v.data(), v.data(), 10, braidFloat32, rank == 2 ? 0 : 1, comm,
                                     nullptr);
    std::printf("B(%d): %s\n", static_cast<int>(b), braidGetLastError(comm));
    braidCommDestroy(comm);
    return a == braidInvalidUsage && b == braidInvalidUsage ? 0 : 3;
  }, 60);
  for (int r = 0; r < n; ++r) {
    const std::string& out = outcomes[r].output;
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << out;
    EXPECT_NE(out.find("rank 0 called allreduce #3 (count 100, float32, sum), rank 2 called "
                       "allreduce #3 (count 200, float32, sum)"), std::string::npos) << out;
    EXPECT_NE(out.find("rank 0 called broadcast #3 (count 10, float32, root 1), rank 2 called "
                       "broadcast #3 (count 10, float32, root 0)"), std::string::npos) << out;
  }
}

// Elastic recovery: a rank is killed mid-run; the survivors see the error,
// shrink the communicator without it, and finish exact all-reduces.
TEST(Shrink, SurvivorsOfAKilledRankShrinkAndFinishExactly) {
  const int n = 4;
  const int victim = 3;
  Env env = jobEnv(n);
  env["BRAID_TIMEOUT_MS"] = "30000";
  auto outcomes = runRanks(
      n, env,
      [](int rank) {
        braidComm_t comm;
        if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
        std::vector<float> buf(1 << 18, 1.0f);
        braidResult_t res = braidSuccess;
        for (int i = 0; i < 1000000 && res == braidSuccess; ++i) {
          res = braidAllReduce(buf.data(), buf.data(), buf.size(), braidFloat32, braidMax, comm,
                               nullptr);
        }
        fprintf(stderr, "failed: %s\n", braidGetLastError(comm));
        int excluded[] = {3};
        braidComm_t small = nullptr;
        if (braidCommShrink(comm, excluded, 1, &small, nullptr, BRAID_SHRINK_ABORT) !=
            braidSuccess) {
          fprintf(stderr, "shrink: %s\n", braidGetLastError(comm));
          return 4;
        }
        braidCommAbort(comm);
        int count = 0, me = -1;
        braidCommCount(small, &count);
        braidCommUserRank(small, &me);
        if (count != 3 || me != rank) return 5;
        for (int i = 0; i < 20; ++i) {
          std::vector<float> v(100000, static_cast<float>(rank + i));
          if (braidAllReduce(v.data(), v.data(), v.size(), braidFloat32, braidSum, small,
                             nullptr) != braidSuccess) {
            return 6;
          }
          const float want = static_cast<float>(0 + 1 + 2 + 3 * i);
          for (float x : v) {
            if (x != want) return 7;
          }
        }
        braidCommDestroy(small);
        return 0;
      },
      120,
      [&](const std::vector<pid_t>& pids) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        kill(pids[victim], SIGKILL);
      });
  EXPECT_EQ(outcomes[victim].signal, SIGKILL);
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

TEST(Shrink, ArgumentsAreChecked) {
  const int n = 2;
  auto outcomes = runRanks(n, jobEnv(n), [](int rank) {
    braidComm_t comm;
    if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
    braidComm_t out = nullptr;
    int self[] = {rank};
    int bad[] = {7};
    int bad1 = braidCommShrink(comm, self, 1, &out, nullptr, 0) == braidInvalidUsage &&
               std::string(braidGetLastError(comm)).find("is in excludeRanksList") !=
                   std::string::npos;
    int bad2 = braidCommShrink(comm, bad, 1, &out, nullptr, 0) == braidInvalidArgument &&
               std::string(braidGetLastError(comm)).find("outside 0..1") != std::string::npos;
    int bad3 = braidCommShrink(comm, nullptr, 1, &out, nullptr, 0) == braidInvalidArgument;
    int bad4 = braidCommShrink(comm, bad, 0, &out, nullptr, 8) == braidInvalidArgument;
    // Excluding nobody: a copy of comm, usable at once.
    braidComm_t copy = nullptr;
    if (braidCommShrink(comm, nullptr, 0, &copy, nullptr, 0) != braidSuccess) return 3;
    int v = 1;
    if (braidAllReduce(&v, &v, 1, braidInt32, braidSum, copy, nullptr) != braidSuccess || v != 2) {
      return 4;
    }
    braidCommDestroy(copy);
    braidCommDestroy(comm);
    return bad1 && bad2 && bad3 && bad4 && out == nullptr ? 0 : 5;
  }, 60);
  for (int r = 0; r < n; ++r) EXPECT_EQ(outcomes[r].exitCode, 0) << outcomes[r].output;
}

// SIGUSR1 (BRAID_DUMP_SIGNAL's default) makes a waiting rank print what its
// communicator is doing, without disturbing the job.
TEST(Dump, SignalPrintsTheOperationInFlight) {
  const int n = 2;
  auto outcomes = runRanks(
      n, jobEnv(n),
      [](int rank) {
        braidComm_t comm;
        if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
        float v[64] = {};
        if (braidAllReduce(v, v, 64, braidFloat32, braidSum, comm, nullptr) != braidSuccess) {
          return 3;
        }
        if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3000));
        if (braidAllReduce(v, v, 64, braidFloat32, braidSum, comm, nullptr) != braidSuccess) {
          return 4;
        }
        braidCommDestroy(comm);
        return 0;
      },
      60,
      [](const std::vector<pid_t>& pids) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        kill(pids[0], SIGUSR1);
      });
  for (int r = 0; r < n; ++r) EXPECT_EQ(outcomes[r].exitCode, 0) << outcomes[r].output;
  const std::string& out = outcomes[0].output;
  EXPECT_NE(out.find("[braid dump pid"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 0 of 2 on 1 node(s); posted #2, completed #1; in allreduce #2 (256 B"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace braid::test
