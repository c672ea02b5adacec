// Several "nodes" on one machine: ranks given different BRAID_HOST_ID values
// use shm inside a node and TCP between nodes, in one communicator. Every
// collective must stay exact over the mixed transports.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "braid/braid.h"
#include "spawn.h"
#include "tests/common/reference.h"

namespace braid::test {
namespace {

// Each rank runs every collective once on `nodesOf(rank)`'s layout and checks it.
int mixedTransportBody(int rank, int ranksPerNode) {
  setenv("BRAID_HOST_ID", ("node" + std::to_string(rank / ranksPerNode)).c_str(), 1);
  setenv("BRAID_DEBUG", "INFO", 1);  // the log names the transport per peer
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  int n = 0;
  braidCommCount(comm, &n);
  const size_t k = 70001;
  int bad = 0;
  for (braidRedOp_t op : {braidSum, braidMax, braidAvg}) {
    std::vector<float> in(k), out(k);
    for (size_t i = 0; i < k; ++i) in[i] = static_cast<float>(inputValue(braidFloat32, op, rank, n, i));
    if (braidAllReduce(in.data(), out.data(), k, braidFloat32, op, comm, nullptr) != braidSuccess) {
      fprintf(stderr, "allreduce: %s\n", braidGetLastError(comm));
      return 3;
    }
    for (size_t i = 0; i < k; ++i) bad += out[i] != static_cast<float>(expectedValue(braidFloat32, op, n, i));
  }
  std::vector<int32_t> mine(1000, rank), all(1000 * n, -1);
  if (braidAllGather(mine.data(), all.data(), 1000, braidInt32, comm, nullptr) != braidSuccess) {
    return 4;
  }
  for (int p = 0; p < n; ++p) bad += all[p * 1000 + 999] != p;
  int32_t v = rank == n - 1 ? 4242 : 0;
  braidBroadcast(&v, &v, 1, braidInt32, n - 1, comm, nullptr);
  bad += v != 4242;
  braidCommDestroy(comm);
  return bad == 0 ? 0 : 1;
}

TEST(MultiNode, TwoNodesOfTwoRanksMixShmAndSocket) {
  const int n = 4;
  auto outcomes = runRanks(n, jobEnv(n), [](int r) { return mixedTransportBody(r, 2); }, 120);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
  // Rank 1 (node0) reaches rank 2 (node1) over TCP and rank 0 over shm.
  EXPECT_NE(outcomes[1].output.find("over socket"), std::string::npos) << outcomes[1].output;
  EXPECT_NE(outcomes[1].output.find("over shm"), std::string::npos) << outcomes[1].output;
}

TEST(MultiNode, HierarchicalForcedForEveryCollectiveItImplements) {
  const int n = 6;  // 3 nodes of 2
  Env env = jobEnv(n);
  env["BRAID_ALGO"] = "hierarchical";
  auto outcomes = runRanks(n, env, [](int r) { return mixedTransportBody(r, 2); }, 120);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

TEST(MultiNode, ThreeNodesOfUnevenSize) {
  const int n = 5;  // nodes of 2, 2 and 1 ranks
  auto outcomes = runRanks(n, jobEnv(n), [](int r) { return mixedTransportBody(r, 2); }, 120);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
}

}  // namespace
}  // namespace braid::test
