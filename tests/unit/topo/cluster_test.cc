// The 128-node DGX H100 cluster file (tests/data/topo/dgx_h100_128nodes.xml,
// written by scripts/make_cluster_topology.py) loads as 128 distinct hosts of
// 8 GPUs and 8 NDR NICs each, and the cost model prices 1024 ranks on it as
// 128 nodes whose inter-node link is the NIC (one 400 Gb/s NIC per GPU: at most
// 50 GB/s raw, NCCL reaches ~48; NVLink 4 is 450 GB/s raw).
#include <gtest/gtest.h>

#include "tests/common/topo_files.h"

#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "select/cost_model.h"
#include "topo/topology.h"
#include "topo/xml.h"

namespace braid {
namespace {

constexpr char kFile[] = "dgx_h100_128nodes.xml";
constexpr uint64_t kGiB = 1ull << 30;


TEST(ClusterTopology, Has128DistinctDgxH100Nodes) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile(kFile, &why);
  if (!t) GTEST_SKIP() << why;
  ASSERT_EQ(t->nodes.size(), 128u);
  std::set<std::string> ids;
  std::set<std::string> names;
  size_t gpus = 0;
  size_t nics = 0;
  for (const topo::Node& n : t->nodes) {
    ids.insert(n.id);
    names.insert(n.name);
    EXPECT_EQ(n.packages.size(), 2u) << n.name;
    EXPECT_EQ(n.cores(), 112) << n.name;  // 2 x 56-core Xeon 8480C
    EXPECT_EQ(n.gpus.size(), 8u) << n.name;
    for (const topo::Gpu& g : n.gpus) EXPECT_DOUBLE_EQ(g.nvlinkGBps, 450.0) << n.name;
    for (const topo::Nic& c : n.nics) {
      EXPECT_EQ(c.kind, topo::NicKind::kInfiniband) << n.name << " " << c.name;
      EXPECT_DOUBLE_EQ(c.speedGbps, 400.0) << n.name << " " << c.name;
    }
    gpus += n.gpus.size();
    nics += n.nics.size();
  }
  EXPECT_EQ(ids.size(), 128u);  // distinct hosts, not one host listed 128 times
  EXPECT_EQ(names.size(), 128u);
  EXPECT_EQ(gpus, 1024u);
  EXPECT_EQ(nics, 1024u);
}

TEST(ClusterTopology, CostInputsAreNicBound) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile(kFile, &why);
  if (!t) GTEST_SKIP() << why;
  const CostInputs in = costInputsFor(*t, 1024, 8);
  EXPECT_EQ(in.nranks, 1024);
  EXPECT_EQ(in.nodes, 128);
  EXPECT_EQ(in.ranksPerNode, 8);
  // One 400 Gb/s NIC per rank: 50 GB/s raw, NCCL's achieved ~48 (within 15%).
  EXPECT_LE(in.inter.gbps, 50.0);
  EXPECT_NEAR(in.inter.gbps, 48.0, 0.15 * 48.0);
  EXPECT_LT(in.inter.gbps, in.intra.gbps);  // the network, not NVLink, is the bottleneck
  EXPECT_GE(in.inter.alphaUs, in.intra.alphaUs);
  // A flat ring over 1024 ranks therefore runs at about one NIC's worth of busbw.
  const double us = predictUs(algo::Algorithm::kRing, algo::Collective::kAllReduce, kGiB, in);
  const double busbw = 2.0 * 1023 / 1024 * static_cast<double>(kGiB) / (us * 1e3);
  EXPECT_LE(busbw, 50.0);
  EXPECT_GT(busbw, 0.5 * 48.0);
}

}  // namespace
}  // namespace braid
