// Several "nodes" on one machine: ranks given different BRAID_HOST_ID values
// use shm inside a node and TCP between nodes, in one communicator. Every
// collective must stay exact over the mixed transports.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
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

// Across 2 nodes of 2, every rank must name the same algorithm for each call
// (a mismatch would hang), hierarchical for large all-reduce, and rank 0 dumps
// the merged topology: 2 nodes with the job's host ids.
int queryBody(int rank, const std::string& dump) {
  setenv("BRAID_HOST_ID", ("node" + std::to_string(rank / 2)).c_str(), 1);
  setenv("BRAID_TOPO_DUMP_FILE", dump.c_str(), 1);
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  std::string names;
  for (size_t count : {size_t{2}, size_t{1} << 14, size_t{1} << 22}) {
    const char* name = nullptr;
    double us = 0;
    if (braidCommGetAlgorithm(comm, braidCollAllReduce, count, braidFloat32, &name, &us) !=
            braidSuccess || !(us > 0)) {
      return 3;
    }
    names += std::string(name) + " ";
  }
  // Every rank's answers, gathered: they must agree.
  char mine[64] = {};
  std::snprintf(mine, sizeof(mine), "%s", names.c_str());
  char all[4 * 64];
  if (braidAllGather(mine, all, 64, braidInt8, comm, nullptr) != braidSuccess) return 4;
  for (int r = 0; r < 4; ++r) {
    if (std::string(all + r * 64) != names) return 5;
  }
  std::printf("algorithms: %s\n", names.c_str());
  braidCommDestroy(comm);
  return 0;
}

TEST(MultiNode, EveryRankNamesTheSameAlgorithmsAndLargeAllReduceIsHierarchical) {
  const std::string dump = ::testing::TempDir() + "braid_multinode_topo.xml";
  std::remove(dump.c_str());
  auto outcomes = runRanks(4, jobEnv(4), [&](int r) { return queryBody(r, dump); }, 120);
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(outcomes[r].exitCode, 0) << "rank " << r << ":\n" << outcomes[r].output;
  }
  const std::string& out = outcomes[0].output;
  const size_t at = out.find("algorithms: ");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at, out.find('\n', at) - at);
  EXPECT_EQ(line.rfind("hierarchical"), line.size() - std::string("hierarchical ").size()) << line;
  std::ifstream f(dump);
  ASSERT_TRUE(f.good()) << "rank 0 did not write BRAID_TOPO_DUMP_FILE";
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("id=\"node0\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("id=\"node1\""), std::string::npos) << text.str();
  std::remove(dump.c_str());
}

TEST(MultiNode, UnreadableTuningFileFailsInitNamingIt) {
  Env env = jobEnv(2);
  env["BRAID_TUNING_FILE"] = "/nonexistent/braid-tuning.txt";
  auto outcomes = runRanks(2, env, [](int) {
    braidComm_t comm;
    if (braidCommInitFromEnv(&comm, nullptr) == braidSuccess) return 1;
    std::printf("error: %s\n", braidGetLastError(nullptr));
    return 0;
  }, 60);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(outcomes[r].exitCode, 0) << outcomes[r].output;
    EXPECT_NE(outcomes[r].output.find("/nonexistent/braid-tuning.txt"), std::string::npos)
        << outcomes[r].output;
  }
}

}  // namespace
}  // namespace braid::test
