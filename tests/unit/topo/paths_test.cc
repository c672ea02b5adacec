// Rank-pair paths on the shipped topology files, and merging the views ranks
// send at bootstrap. Expected figures are the specifications the files cite
// (NVLink 4: 450 GB/s per direction; A100 PCIe Gen4 x16: 31.5 GB/s; NDR
// InfiniBand 400 Gb/s = 50 GB/s), not values read back from the code.
#include "topo/paths.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/common/topo_files.h"
#include "topo/view.h"
#include "topo/xml.h"

namespace braid::topo {
namespace {

Topology load(const char* name) {
  std::string why;
  std::optional<Topology> t = test::loadTopoFile(name, &why);
  EXPECT_TRUE(t.has_value()) << why;
  return t.value_or(Topology{});
}

TEST(Paths, DgxGpusMeetOverNvlinkAndNodesOverTheirOwnNic) {
  const Topology t = load("dgx_h100.xml");
  ASSERT_EQ(t.nodes.size(), 1u);
  const std::vector<RankPlace> places = blockPlaces(t, 16, 8);  // 2 nodes of 8 GPUs
  ASSERT_EQ(places.size(), 16u);
  EXPECT_EQ(places[9].node, 1);
  EXPECT_EQ(places[9].gpu, 1);
  const PathMatrix m = pathMatrix(t, places);
  // GPU 0 and GPU 7 sit on different sockets, but NVLink is their path.
  EXPECT_EQ(m.at(0, 7).type, LinkType::kNvlink);
  EXPECT_DOUBLE_EQ(m.at(0, 7).bandwidthGBps, 450.0);
  EXPECT_EQ(m.at(3, 3).type, LinkType::kLocal);
  // Across nodes: each GPU's NIC shares its PCIe switch; 400 Gb/s = 50 GB/s.
  EXPECT_EQ(m.at(2, 10).type, LinkType::kNetwork);
  EXPECT_DOUBLE_EQ(m.at(2, 10).bandwidthGBps, 50.0);
  EXPECT_GT(m.at(2, 10).latencyUs, m.at(0, 7).latencyUs);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(nearestNic(t.nodes[0], places[g]), g) << "GPU " << g << " and NIC mlx5_" << g;
  }
  // Symmetric.
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) EXPECT_EQ(m.at(a, b).type, m.at(b, a).type);
  }
}

TEST(Paths, PcieServerTypesEachPairBySwitchAndSocket) {
  const Topology t = load("pcie_8gpu.xml");
  const std::vector<RankPlace> places = blockPlaces(t, 8, 8);
  const PathMatrix m = pathMatrix(t, places);
  // GPUs 0-3 share switch 0 on NUMA 0; 4-7 share switch 1 on NUMA 1.
  EXPECT_EQ(m.at(0, 3).type, LinkType::kPcieSameSwitch);
  EXPECT_DOUBLE_EQ(m.at(0, 3).bandwidthGBps, 31.5);
  EXPECT_EQ(m.at(4, 5).type, LinkType::kPcieSameSwitch);
  EXPECT_EQ(m.at(1, 6).type, LinkType::kCrossSocket);
  EXPECT_LT(m.at(1, 6).bandwidthGBps, 31.5);  // UPI, not the GPUs' PCIe, bounds it
}

// The file's comment: one 100 Gb/s NIC under each socket's switch, beside its 4 GPUs.
TEST(Paths, PcieServerRanksSendThroughTheNicUnderTheirSwitch) {
  const Topology t = load("pcie_8gpu.xml");
  const Node& n = t.nodes[0];
  const std::vector<RankPlace> places = blockPlaces(t, 8, 8);
  for (int g = 0; g < 8; ++g) {
    const int nic = nearestNic(n, places[g]);
    ASSERT_GE(nic, 0);
    EXPECT_EQ(n.nics[nic].name, g < 4 ? "eth0" : "eth1") << "GPU " << g;
    EXPECT_EQ(nicPath(n, places[g], n.nics[nic]), LinkType::kPcieSameSwitch) << "GPU " << g;
  }
  EXPECT_EQ(nicPath(n, places[0], n.nics[1]), LinkType::kCrossSocket);
  // A host rank on NUMA node 1 has no switch: the NIC on its own socket.
  RankPlace host;
  host.numa = 1;
  EXPECT_EQ(n.nics[nearestNic(n, host)].name, "eth1");
  EXPECT_EQ(nicPath(n, host, n.nics[1]), LinkType::kHostBridge);
}

// Another switch of the socket and the root complex itself both cross the root
// complex: between them the NIC on the rank's NUMA node wins, then the faster.
TEST(Paths, NearestNicPrefersItsNumaNodeAmongRootComplexPaths) {
  Node n;
  n.packages.resize(1);
  n.numaNodes = {{0, 0, 0}, {1, 0, 0}};  // two NUMA nodes of one package (sub-NUMA clusters)
  Gpu g;
  g.pcieSwitch = 0;
  g.numa = 0;
  n.gpus.push_back(g);
  n.nics.push_back({"far", NicKind::kInfiniband, 400, "0000:40:00.0", 1, 1});   // PXB, NUMA 1
  n.nics.push_back({"near", NicKind::kInfiniband, 200, "0000:20:00.0", -1, 0});  // PHB, NUMA 0
  RankPlace p;
  p.gpu = 0;
  EXPECT_EQ(nicPath(n, p, n.nics[0]), LinkType::kPcieCrossSwitch);
  EXPECT_EQ(nicPath(n, p, n.nics[1]), LinkType::kHostBridge);
  EXPECT_EQ(n.nics[nearestNic(n, p)].name, "near");
  n.nics[1].numa = 1;  // both on the other NUMA node: the faster
  EXPECT_EQ(n.nics[nearestNic(n, p)].name, "far");
  n.nics.push_back({"under", NicKind::kInfiniband, 100, "0000:10:00.0", 0, 1});  // PIX wins
  EXPECT_EQ(n.nics[nearestNic(n, p)].name, "under");
}

TEST(Paths, PcieWithoutSocketsOrSwitchesFallsToHostBridgeOrCrossSwitch) {
  Topology t;
  t.nodes.resize(1);
  Node& n = t.nodes[0];
  n.numaNodes = {{0, 0, 0}};
  Gpu g;
  g.pcieGen = 3;
  g.pcieWidth = 16;
  g.numa = 0;
  g.pcieSwitch = 0;
  n.gpus.push_back(g);
  g.pcieSwitch = 1;
  n.gpus.push_back(g);
  g.pcieSwitch = -1;
  n.gpus.push_back(g);
  const PathMatrix m = pathMatrix(t, blockPlaces(t, 3, 3));
  EXPECT_EQ(m.at(0, 1).type, LinkType::kPcieCrossSwitch);
  EXPECT_EQ(m.at(0, 2).type, LinkType::kHostBridge);
  EXPECT_NEAR(m.at(0, 1).bandwidthGBps, 15.75, 0.01);  // Gen3 x16, 128b/130b
}

TEST(Paths, HostRanksShareMemoryOnOneNodeAndNetworkAcross) {
  const Topology t = load("vm_2core.xml");
  const PathMatrix m = pathMatrix(t, blockPlaces(t, 4, 2));
  EXPECT_EQ(m.at(0, 1).type, LinkType::kLocal);
  EXPECT_EQ(m.at(1, 2).type, LinkType::kNetwork);
  // eth0 reports no speed: TCP's one-stream figure (REFERENCE: 5.8 GB/s).
  EXPECT_DOUBLE_EQ(m.at(1, 2).bandwidthGBps, 5.8);
  // Two sockets: host ranks on NUMA nodes of different packages cross them.
  const Topology dgx = load("dgx_h100.xml");
  RankPlace a{0, -1, 0};
  RankPlace b{0, -1, 1};
  EXPECT_EQ(pathBetween(dgx, a, b).type, LinkType::kCrossSocket);
  b.numa = 0;
  EXPECT_EQ(pathBetween(dgx, a, b).type, LinkType::kLocal);
}

TEST(Paths, PlacesRoundTripThroughTheirBootstrapString) {
  const Topology t = load("dgx_h100.xml");
  const RankPlace p = parsePlace(placeString(1, "0000:c3:00.0"), t.nodes[0], 3);
  EXPECT_EQ(p.node, 3);
  EXPECT_EQ(p.gpu, 5);
  EXPECT_EQ(p.numa, 1);
  const RankPlace unknown = parsePlace("gpu=0000:ff:00.0,numa=x,junk", t.nodes[0], 0);
  EXPECT_EQ(unknown.gpu, -1);
  EXPECT_EQ(unknown.numa, -1);
  EXPECT_EQ(placeString(-1, ""), "");
}

// ---------------------------------------------------------------- views

TEST(Views, MergeKeepsEachNodeOnceInRankOrderWithTheJobsIds) {
  const Topology dgx = load("dgx_h100.xml");
  const std::string blob = toXml(dgx);
  std::vector<RankView> ranks = {
      {0, "hostA", "a", "numa=0", blob}, {0, "hostA", "a", "numa=1", ""},
      {1, "hostB", "b", "", blob},       {1, "hostB", "b", "numa=1", ""}};
  unsetenv("BRAID_TOPO_FILE");
  Expected<MergedTopology> m = mergeViews(ranks, 1);
  ASSERT_TRUE(m.isOk()) << m.status().message();
  ASSERT_EQ(m.value().topology.nodes.size(), 2u);
  EXPECT_EQ(m.value().topology.nodes[0].id, "hostA");
  EXPECT_EQ(m.value().topology.nodes[1].id, "hostB");
  EXPECT_EQ(m.value().topology.nodes[1].gpus.size(), 8u);
  ASSERT_EQ(m.value().places.size(), 4u);
  EXPECT_EQ(m.value().places[1].numa, 1);
  EXPECT_EQ(m.value().places[2].node, 1);
  EXPECT_EQ(pathBetween(m.value().topology, m.value().places[0], m.value().places[1]).type,
            LinkType::kCrossSocket);
}

TEST(Views, MissingOrBadDescriptionBecomesAFallbackThatSaysWhy) {
  std::vector<RankView> ranks = {{0, "h0", "h0", "", ""}, {1, "h1", "h1", "", "<braid-topology"}};
  unsetenv("BRAID_TOPO_FILE");
  Expected<MergedTopology> m = mergeViews(ranks, 1);
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_NE(m.value().topology.nodes[0].fallback.find("rank 0 sent no description"),
            std::string::npos);
  EXPECT_NE(m.value().topology.nodes[1].fallback.find("unusable"), std::string::npos);
}

TEST(Views, TopoFileStandsForEveryNodeAndRankZeroDumpsTheMerge) {
  const std::string file = test::findTopoFile("dgx_h100.xml");
  ASSERT_FALSE(file.empty());
  const std::string dump = ::testing::TempDir() + "braid_views_dump.xml";
  setenv("BRAID_TOPO_FILE", file.c_str(), 1);
  setenv("BRAID_TOPO_DUMP_FILE", dump.c_str(), 1);
  std::vector<RankView> ranks = {{0, "x", "x", "gpu=0000:df:00.0", ""}, {1, "y", "y", "", ""}};
  Expected<MergedTopology> m = mergeViews(ranks, 0);
  unsetenv("BRAID_TOPO_FILE");
  unsetenv("BRAID_TOPO_DUMP_FILE");
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(m.value().topology.nodes.size(), 2u);
  EXPECT_EQ(m.value().places[0].gpu, 7);
  Expected<Topology> back = loadXmlFile(dump);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value().nodes.size(), 2u);
  std::remove(dump.c_str());
}

}  // namespace
}  // namespace braid::topo
