// All-reduce across real processes over shm and socket: every rank count the
// core supports, awkward counts, every datatype and op, in and out of place.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "braid/braid.h"
#include "tests/common/reference.h"
#include "spawn.h"

namespace braid::test {
namespace {

const braidDataType_t kTypes[] = {braidInt8,   braidUint8,  braidInt32,   braidUint32,
                                  braidInt64,  braidUint64, braidFloat16, braidFloat32,
                                  braidFloat64, braidBfloat16};
const braidRedOp_t kOps[] = {braidSum, braidProd, braidMax, braidMin, braidAvg};

// Runs one all-reduce and checks it; returns the number of wrong elements.
size_t checkOne(braidComm_t comm, int rank, int n, size_t count, braidDataType_t t,
                braidRedOp_t op, bool inPlace) {
  const size_t es = elemSize(t);
  std::vector<char> send(count * es + 1), recv(count * es + 1, 0x5a);
  for (size_t i = 0; i < count; ++i) store(t, send.data(), i, inputValue(t, op, rank, n, i));
  if (inPlace) recv = send;
  void* in = inPlace ? recv.data() : send.data();
  braidResult_t res = braidAllReduce(in, recv.data(), count, t, op, comm, nullptr);
  if (res != braidSuccess) {
    fprintf(stderr, "rank %d: allreduce failed: %s\n", rank, braidGetLastError(comm));
    return count + 1;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double got = load(t, recv.data(), i);
    double want = expectedValue(t, op, n, i);
    if (got != want && wrong++ < 3) {
      fprintf(stderr, "rank %d: type %d op %d count %zu inPlace %d: [%zu] = %g, want %g\n", rank,
              t, op, count, inPlace, i, got, want);
    }
  }
  if (recv[count * es] != 0x5a && !inPlace) ++wrong;  // wrote past the end
  return wrong;
}

int rankBody(int rank, int n) {
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) {
    fprintf(stderr, "init: %s\n", braidGetLastError(nullptr));
    return 2;
  }
  size_t wrong = 0;
  // Counts: empty, one, fewer than ranks, a prime, several FIFO rounds.
  std::vector<size_t> counts = {0, 1, static_cast<size_t>(n > 1 ? n - 1 : 1), 1009, 300007};
  for (size_t count : counts) {
    for (braidDataType_t t : kTypes) {
      for (braidRedOp_t op : kOps) {
        if (count > 1009 && op != braidSum && op != braidAvg) continue;
        for (bool inPlace : {false, true}) wrong += checkOne(comm, rank, n, count, t, op, inPlace);
      }
    }
  }
  // 64 MiB per rank.
  const size_t big = (64u << 20) / 4;
  wrong += checkOne(comm, rank, n, big, braidFloat32, braidSum, false);
  wrong += checkOne(comm, rank, n, big, braidInt32, braidMax, true);
  braidCommDestroy(comm);
  return wrong == 0 ? 0 : 1;
}

struct Case {
  int nranks;
  const char* transport;
};

class AllReduceProcesses : public ::testing::TestWithParam<Case> {};

TEST_P(AllReduceProcesses, EveryTypeOpAndCountIsExact) {
  const Case c = GetParam();
  Env env = jobEnv(c.nranks);
  env["BRAID_TRANSPORTS"] = c.transport;
  env["BRAID_TIMEOUT_MS"] = "60000";
  auto outcomes = runRanks(c.nranks, env, [&](int r) { return rankBody(r, c.nranks); }, 300);
  for (int r = 0; r < c.nranks; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << " output:\n" << outcomes[r].output;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllReduceProcesses,
                         ::testing::Values(Case{1, "shm"}, Case{2, "shm"}, Case{3, "shm"},
                                           Case{4, "shm"}, Case{5, "shm"}, Case{7, "shm"},
                                           Case{1, "socket"}, Case{2, "socket"},
                                           Case{3, "socket"}, Case{4, "socket"},
                                           Case{5, "socket"}, Case{7, "socket"}),
                         [](const auto& info) {
                           return std::string(info.param.transport) + "_" +
                                  std::to_string(info.param.nranks);
                         });

// Host streams: operations queued on a stream complete in order.
TEST(AllReduceStreams, QueuedOperationsCompleteInOrder) {
  const int n = 3;
  Env env = jobEnv(n);
  auto outcomes = runRanks(n, env, [&](int rank) {
    braidComm_t comm;
    if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
    braidStream_t s;
    braidStreamCreate(&s);
    std::vector<std::vector<int32_t>> bufs(8, std::vector<int32_t>(5000));
    for (size_t k = 0; k < bufs.size(); ++k) {
      for (auto& x : bufs[k]) x = static_cast<int32_t>(k + 1) * (rank + 1);
      braidAllReduce(bufs[k].data(), bufs[k].data(), 5000, braidInt32, braidSum, comm, s);
    }
    braidStreamSynchronize(s);
    braidResult_t async;
    braidCommGetAsyncError(comm, &async);
    int bad = async == braidSuccess ? 0 : 1;
    for (size_t k = 0; k < bufs.size(); ++k) {
      for (int32_t x : bufs[k]) bad += x != static_cast<int32_t>(k + 1) * 6;
    }
    braidStreamDestroy(s);
    braidCommDestroy(comm);
    return bad == 0 ? 0 : 1;
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(outcomes[r].exitCode, 0) << outcomes[r].output;
}

}  // namespace
}  // namespace braid::test
