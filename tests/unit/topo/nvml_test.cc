// NVLink discovery through NVML, over the fake NVML library (fake_nvml.cc) that
// answers as a DGX H100 or a PCIe server would. Expected figures come from the
// hardware specifications the fake and the shipped topology files cite (NVLink 4:
// 18 links x 25 GB/s = 450 GB/s per direction; A100 NVLink bridge: 12 NVLink 3
// links = 300 GB/s; A100 PCIe Gen4 x16: 31.5 GB/s), not from the code.
#include "topo/nvml.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/common/topo_files.h"
#include "topo/paths.h"
#include "topo/report.h"
#include "topo/xml.h"

namespace braid::topo {
namespace {

NvmlReport fake(const char* machine) {
  setenv("BRAID_FAKE_NVML", machine, 1);
  return readNvml(BRAID_FAKE_NVML_PATH);
}

Topology load(const char* name) {
  std::string why;
  std::optional<Topology> t = test::loadTopoFile(name, &why);
  EXPECT_TRUE(t.has_value()) << why;
  return t.value_or(Topology{});
}

// A shipped file as hwloc would see it: no NVLink figure (hwloc has none).
Topology withoutNvlink(const char* name) {
  Topology t = load(name);
  for (Node& n : t.nodes) {
    for (Gpu& g : n.gpus) g.nvlinkGBps = 0;
    n.nvlinks.clear();
  }
  return t;
}

TEST(Nvml, DgxH100ReportsEveryGpuOnTheNvswitches) {
  const NvmlReport r = fake("dgx_h100");
  ASSERT_EQ(r.missing, "");
  ASSERT_EQ(r.gpus.size(), 8u);
  EXPECT_EQ(r.gpus[0].busId, "0000:1b:00.0");  // NVML's "00000000:1B:00.0", normalised
  EXPECT_EQ(r.gpus[7].busId, "0000:df:00.0");
  EXPECT_EQ(r.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.gpus[0].pcieGen, 5);
  ASSERT_EQ(r.nvlinks.size(), 8u);  // one entry per GPU: its 18 links all reach the switches
  for (const Nvlink& l : r.nvlinks) {
    EXPECT_EQ(l.peer, kNvswitch) << l.gpu;
    EXPECT_EQ(l.links, 18) << l.gpu;
    EXPECT_DOUBLE_EQ(l.gbps, 450.0) << l.gpu;
  }
}

TEST(Nvml, PcieServerHasGpusAndNoNvlink) {
  const NvmlReport r = fake("pcie_8gpu");
  ASSERT_EQ(r.missing, "");
  EXPECT_EQ(r.gpus.size(), 8u);
  EXPECT_TRUE(r.nvlinks.empty());
}

TEST(Nvml, BridgedPairsLinkEachGpuToItsNeighbourOnly) {
  const NvmlReport r = fake("pcie_pairs");
  ASSERT_EQ(r.missing, "");
  ASSERT_EQ(r.nvlinks.size(), 8u);
  EXPECT_EQ(r.nvlinks[0].gpu, "0000:1a:00.0");
  EXPECT_EQ(r.nvlinks[0].peer, "0000:1b:00.0");
  EXPECT_EQ(r.nvlinks[0].links, 12);
  EXPECT_DOUBLE_EQ(r.nvlinks[0].gbps, 300.0);
  EXPECT_EQ(r.nvlinks[5].gpu, "0000:89:00.0");
  EXPECT_EQ(r.nvlinks[5].peer, "0000:88:00.0");
}

TEST(Nvml, AbsentDriverOrLibraryIsSaidAndGivesNothing) {
  NvmlReport r = fake("no_driver");
  EXPECT_NE(r.missing.find("Driver Not Loaded"), std::string::npos) << r.missing;
  EXPECT_TRUE(r.gpus.empty());
  r = readNvml("/nonexistent/libnvidia-ml.so.1");
  EXPECT_NE(r.missing.find("cannot open /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << r.missing;
  r = readNvml("libm.so.6");  // a library, but not NVML
  EXPECT_NE(r.missing.find("has no nvmlInit_v2"), std::string::npos) << r.missing;
  EXPECT_TRUE(r.gpus.empty());
}

TEST(Nvml, LibraryComesFromTheEnvironment) {
  unsetenv("BRAID_NVML_LIBRARY");
  EXPECT_EQ(nvmlLibrary(), "libnvidia-ml.so.1");
  setenv("BRAID_NVML_LIBRARY", "/opt/fake.so", 1);
  EXPECT_EQ(nvmlLibrary(), "/opt/fake.so");
  unsetenv("BRAID_NVML_LIBRARY");
}

TEST(Nvml, LinkRatesFollowTheNvlinkGeneration) {
  EXPECT_DOUBLE_EQ(nvlinkGBpsPerLink(1), 20.0);  // NVLink 1.0, P100
  EXPECT_DOUBLE_EQ(nvlinkGBpsPerLink(4), 25.0);  // 3.0 in NVML's numbering, 4 in the plain one
  EXPECT_DOUBLE_EQ(nvlinkGBpsPerLink(6), 25.0);  // 4.0, H100
  EXPECT_DOUBLE_EQ(nvlinkGBpsPerLink(7), 50.0);  // 5.0, B200
  EXPECT_DOUBLE_EQ(nvlinkGBpsPerLink(0), 0.0);
  EXPECT_DOUBLE_EQ(nvlinkGBpsPerLink(99), 0.0);
}

TEST(Nvml, BusIdsAreNormalised) {
  EXPECT_EQ(normalizeBusId("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalizeBusId("0000:DF:00.0"), "0000:df:00.0");
  EXPECT_EQ(normalizeBusId("0001:0a:1f.7"), "0001:0a:1f.7");
  EXPECT_EQ(normalizeBusId("not a bus id"), "not a bus id");
  EXPECT_EQ(normalizeBusId("0000:1b:00.0x"), "0000:1b:00.0x");
}

// The DGX file stripped of NVLink, plus NVML's answer, gives the file's own paths.
TEST(ApplyNvml, DgxNodeGetsNvswitchPathsBetweenEveryPair) {
  Topology t = withoutNvlink("dgx_h100.xml");
  const Topology file = load("dgx_h100.xml");
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(pathBetween(t, {0, 0, -1}, {0, 7, -1}).type, LinkType::kCrossSocket);
  applyNvml(fake("dgx_h100"), &t.nodes[0]);
  ASSERT_EQ(t.nodes[0].gpus.size(), 8u);  // the same GPUs, none added
  EXPECT_DOUBLE_EQ(t.nodes[0].gpus[3].nvlinkGBps, 450.0);
  const std::vector<RankPlace> places = blockPlaces(t, 8, 8);
  const PathMatrix m = pathMatrix(t, places);
  const PathMatrix f = pathMatrix(file, places);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      EXPECT_EQ(m.at(a, b).type, LinkType::kNvlink) << a << "-" << b;
      EXPECT_DOUBLE_EQ(m.at(a, b).bandwidthGBps, 450.0) << a << "-" << b;
      EXPECT_EQ(m.at(a, b).type, f.at(a, b).type);
    }
  }
}

TEST(ApplyNvml, BridgedPairsAreNvlinkAndTheRestStayOnPcie) {
  Topology t = load("pcie_8gpu.xml");
  applyNvml(fake("pcie_pairs"), &t.nodes[0]);
  const PathMatrix m = pathMatrix(t, blockPlaces(t, 8, 8));
  EXPECT_EQ(m.at(0, 1).type, LinkType::kNvlink);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidthGBps, 300.0);
  EXPECT_EQ(m.at(6, 7).type, LinkType::kNvlink);
  EXPECT_EQ(m.at(0, 2).type, LinkType::kPcieSameSwitch);  // no GPU links to both
  EXPECT_DOUBLE_EQ(m.at(0, 2).bandwidthGBps, 31.5);
  EXPECT_EQ(m.at(1, 6).type, LinkType::kCrossSocket);
  // The node's description carries the links through XML, as it travels at init.
  Expected<Topology> back = parseXml(toXml(t), "round trip");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(pathBetween(back.value(), {0, 0, -1}, {0, 1, -1}).type, LinkType::kNvlink);
  EXPECT_EQ(back.value().nodes[0].nvlinks.size(), 8u);
}

TEST(ApplyNvml, PcieAnswerRemovesNvlinkTheNodeClaimed) {
  Topology t = load("pcie_8gpu.xml");
  for (Gpu& g : t.nodes[0].gpus) g.nvlinkGBps = 100;  // a stale claim
  applyNvml(fake("pcie_8gpu"), &t.nodes[0]);
  EXPECT_EQ(pathBetween(t, {0, 0, -1}, {0, 3, -1}).type, LinkType::kPcieSameSwitch);
}

TEST(ApplyNvml, GpusHwlocMissedAreAddedFromNvml) {
  Node node;  // a node without hwloc: no GPU known
  node.numaNodes = {{0, 0, 0}};
  applyNvml(fake("dgx_h100"), &node);
  ASSERT_EQ(node.gpus.size(), 8u);
  EXPECT_EQ(node.gpus[2].busId, "0000:52:00.0");
  EXPECT_EQ(node.gpus[2].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(node.gpus[2].pcieGen, 5);
  EXPECT_EQ(node.gpus[2].pcieWidth, 16);
  EXPECT_NEAR(node.gpus[2].pcieGBps, 63.0, 0.1);  // Gen5 x16
  EXPECT_DOUBLE_EQ(node.gpus[2].nvlinkGBps, 450.0);
  Topology t;
  t.nodes.push_back(node);
  EXPECT_EQ(pathBetween(t, {0, 1, -1}, {0, 6, -1}).type, LinkType::kNvlink);
  // Nothing from a missing NVML: the node stays as it was.
  Node empty;
  applyNvml(fake("no_driver"), &empty);
  EXPECT_TRUE(empty.gpus.empty());
}

// Three GPUs in a chain a - b - c: a and c meet through b.
TEST(NvlinkPaths, ChainsGoThroughTheGpuBetween) {
  Topology t;
  t.nodes.resize(1);
  Node& n = t.nodes[0];
  for (const char* bus : {"0000:01:00.0", "0000:02:00.0", "0000:03:00.0"}) {
    Gpu g;
    g.busId = bus;
    g.pcieGen = 4;
    g.pcieWidth = 16;
    n.gpus.push_back(g);
  }
  n.nvlinks = {{"0000:01:00.0", "0000:02:00.0", 4, 100},
               {"0000:02:00.0", "0000:01:00.0", 4, 100},
               {"0000:02:00.0", "0000:03:00.0", 2, 50},
               {"0000:03:00.0", "0000:02:00.0", 2, 50}};
  const PathMatrix m = pathMatrix(t, blockPlaces(t, 3, 3));
  EXPECT_EQ(m.at(0, 1).type, LinkType::kNvlink);
  EXPECT_DOUBLE_EQ(m.at(0, 1).bandwidthGBps, 100.0);
  EXPECT_EQ(m.at(0, 2).type, LinkType::kNvlinkViaGpu);
  EXPECT_DOUBLE_EQ(m.at(0, 2).bandwidthGBps, 50.0);  // the slower hop
  EXPECT_GT(m.at(0, 2).latencyUs, m.at(0, 1).latencyUs);
  EXPECT_EQ(m.at(2, 0).type, LinkType::kNvlinkViaGpu);
  const std::vector<std::string> lines = pathMatrixLines(t, blockPlaces(t, 3, 3));
  ASSERT_EQ(lines.size(), 5u);  // legend, header, 3 rows
  EXPECT_NE(lines[2].find("NVB/50"), std::string::npos) << lines[2];
}

TEST(TopoXml, NvlinksAndRanksRoundTripAndBadOnesAreNamed) {
  Topology t = load("pcie_8gpu.xml");
  applyNvml(fake("pcie_pairs"), &t.nodes[0]);
  t.ranks = {{0, 1, 0}, {0, 6, 1}, {0, -1, 0}};
  Expected<Topology> back = parseXml(toXml(t), "dump");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(toXml(back.value()), toXml(t));
  ASSERT_EQ(back.value().ranks.size(), 3u);
  EXPECT_EQ(back.value().ranks[1].gpu, 6);
  EXPECT_EQ(back.value().ranks[2].gpu, -1);
  const std::string head =
      "<braid-topology version=\"1\"><node id=\"n\">"
      "<gpu busid=\"0000:01:00.0\"/>";
  Expected<Topology> bad = parseXml(head +
                                        "<nvlink gpu=\"0000:09:00.0\" peer=\"nvswitch\"/>"
                                        "</node></braid-topology>",
                                    "f.xml");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("'gpu' is '0000:09:00.0'"), std::string::npos)
      << bad.status().message();
  bad = parseXml(head +
                     "</node><rank id=\"0\" node=\"0\" gpu=\"0000:02:00.0\"/>"
                     "</braid-topology>",
                 "f.xml");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("not a GPU of its node"), std::string::npos)
      << bad.status().message();
  bad = parseXml(head + "</node><rank id=\"1\" node=\"0\"/></braid-topology>", "f.xml");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("expected 0 (ranks in order)"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace braid::topo
