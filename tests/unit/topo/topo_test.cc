// Topology files, XML round trips, the parser's errors, and discovery on this
// machine. Expected figures come from the machines' published specifications
// (see the comments in tests/data/topo/*.xml), not from the code under test.
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "tests/common/topo_files.h"
#include <sched.h>

#include "topo/discover.h"
#include "topo/topology.h"
#include "topo/xml.h"

namespace braid::topo {
namespace {

// CPUs this process may run on (a container's cpuset can hide some).
int allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return CPU_COUNT(&set);
}


std::string dataFile(const char* name) { return test::findTopoFile(name); }

Topology load(const char* name) {
  Expected<Topology> t = loadXmlFile(dataFile(name));
  EXPECT_TRUE(t.isOk()) << t.status().message();
  return t.isOk() ? t.value() : Topology{};
}

TEST(TopoXml, DgxH100) {
  Topology t = load("dgx_h100.xml");
  ASSERT_EQ(t.nodes.size(), 1u);
  const Node& n = t.nodes[0];
  EXPECT_EQ(n.packages.size(), 2u);
  EXPECT_EQ(n.cores(), 112);
  EXPECT_EQ(n.numaNodes.size(), 2u);
  ASSERT_EQ(n.gpus.size(), 8u);
  for (const Gpu& g : n.gpus) {
    EXPECT_DOUBLE_EQ(g.nvlinkGBps, 450.0);  // NVLink 4, per direction per GPU
    EXPECT_EQ(g.pcieGen, 5);
    EXPECT_EQ(g.pcieWidth, 16);
    EXPECT_NEAR(g.pcieGBps, 63.0, 0.5);
  }
  ASSERT_EQ(n.nics.size(), 8u);
  for (const Nic& c : n.nics) {
    EXPECT_EQ(c.kind, NicKind::kInfiniband);
    EXPECT_DOUBLE_EQ(c.speedGbps, 400.0);
  }
  EXPECT_TRUE(n.fallback.empty());
}

TEST(TopoXml, Pcie8Gpu) {
  Topology t = load("pcie_8gpu.xml");
  ASSERT_EQ(t.nodes.size(), 1u);
  const Node& n = t.nodes[0];
  EXPECT_EQ(n.packages.size(), 2u);
  ASSERT_EQ(n.gpus.size(), 8u);
  int perSwitch[2] = {0, 0};
  for (const Gpu& g : n.gpus) {
    EXPECT_EQ(g.nvlinkGBps, 0.0);
    EXPECT_EQ(g.pcieGen, 4);
    EXPECT_NEAR(g.pcieGBps, 31.5, 0.1);
    ASSERT_TRUE(g.pcieSwitch == 0 || g.pcieSwitch == 1) << g.pcieSwitch;
    ++perSwitch[g.pcieSwitch];
  }
  EXPECT_EQ(perSwitch[0], 4);
  EXPECT_EQ(perSwitch[1], 4);
  ASSERT_EQ(n.nics.size(), 2u);
  for (const Nic& c : n.nics) {
    EXPECT_EQ(c.kind, NicKind::kEthernet);
    EXPECT_DOUBLE_EQ(c.speedGbps, 100.0);
  }
}

TEST(TopoXml, Vm2Core) {
  Topology t = load("vm_2core.xml");
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].packages.size(), 1u);
  EXPECT_EQ(t.nodes[0].cores(), 2);
  EXPECT_EQ(t.nodes[0].pus, 2);
  EXPECT_TRUE(t.nodes[0].gpus.empty());
}

TEST(TopoXml, RoundTripIsIdentical) {
  for (const char* name : {"dgx_h100.xml", "pcie_8gpu.xml", "vm_2core.xml"}) {
    std::string first = toXml(load(name));
    Expected<Topology> again = parseXml(first, name);
    ASSERT_TRUE(again.isOk()) << again.status().message();
    EXPECT_EQ(toXml(again.value()), first) << name;
  }
}

TEST(TopoXml, RoundTripKeepsEscapesAndFractions) {
  Topology t;
  Node n;
  n.id = "a&b \"<c>\"";
  n.fallback = "why's that";
  Gpu g;
  g.pcieGBps = 31.507692307692308;  // pcieGBps(4, 16), not a short decimal
  n.gpus.push_back(g);
  t.nodes.push_back(n);
  Expected<Topology> back = parseXml(toXml(t), "memory");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value().nodes[0].id, n.id);
  EXPECT_EQ(back.value().nodes[0].fallback, n.fallback);
  EXPECT_EQ(back.value().nodes[0].gpus[0].pcieGBps, g.pcieGBps);
}

// The error of parsing `text`, which must fail.
std::string parseError(const std::string& text) {
  Expected<Topology> t = parseXml(text, "bad.xml");
  EXPECT_FALSE(t.isOk()) << text;
  return t.isOk() ? "" : t.status().message();
}

TEST(TopoXml, RejectsTruncatedFile) {
  std::string text = toXml(load("dgx_h100.xml"));
  std::string msg = parseError(text.substr(0, text.size() / 2));
  EXPECT_NE(msg.find("bad.xml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("end of file"), std::string::npos) << msg;
  EXPECT_NE(parseError(text.substr(0, text.size() - std::string("</braid-topology>\n").size())).find("expected </braid-topology>"),
            std::string::npos);
}

TEST(TopoXml, RejectsBadNumberNamingLineAndAttribute) {
  std::string msg = parseError(
      "<braid-topology version=\"1\">\n<node id=\"x\">\n<package id=\"0\" cores=\"two\"/>\n"
      "</node>\n</braid-topology>\n");
  EXPECT_NE(msg.find("bad.xml:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'cores'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'two'"), std::string::npos) << msg;
  EXPECT_NE(parseError("<braid-topology>\n<node id=\"x\">\n<numa memory=\"-5\"/>\n</node>\n"
                       "</braid-topology>")
                .find("bad.xml:3:"),
            std::string::npos);
}

TEST(TopoXml, RejectsUnknownElementsAndAttributes) {
  std::string msg = parseError(
      "<braid-topology version=\"1\">\n<node id=\"x\">\n\n<fpga name=\"f\"/>\n</node>\n"
      "</braid-topology>\n");
  EXPECT_NE(msg.find("bad.xml:4:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fpga"), std::string::npos) << msg;
  msg = parseError("<braid-topology>\n<node id=\"x\">\n<nic speed=\"400\"/>\n</node>\n"
                   "</braid-topology>");
  EXPECT_NE(msg.find("bad.xml:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'speed'"), std::string::npos) << msg;
  EXPECT_NE(parseError("<braid-topology>\n<node name=\"x\"></node></braid-topology>").find("'id'"),
            std::string::npos);
  EXPECT_NE(parseError("<topology/>").find("braid-topology"), std::string::npos);
  EXPECT_NE(parseError("<braid-topology>\n<node id=\"x\">\n<nic kind=\"wifi\"/>\n</node>\n"
                       "</braid-topology>")
                .find("'wifi'"),
            std::string::npos);
}

TEST(TopoDiscover, MatchesThisMachine) {
  Expected<Topology> t = discoverLocal();
  ASSERT_TRUE(t.isOk()) << t.status().message();
  ASSERT_EQ(t.value().nodes.size(), 1u);
  const Node& n = t.value().nodes[0];
  EXPECT_GE(n.packages.size(), 1u);
  EXPECT_GE(n.cores(), 1);
  EXPECT_GE(n.numaNodes.size(), 1u);
  EXPECT_EQ(n.pus, allowedCpus());
  EXPECT_EQ(n.id, hostIdentity());
  EXPECT_FALSE(n.id.empty());
}

TEST(TopoDiscover, FallbackIsDescribed) {
  Node n = fallbackNode("test reason");
  EXPECT_EQ(n.fallback, "test reason");
  EXPECT_EQ(n.packages.size(), 1u);
  EXPECT_EQ(n.numaNodes.size(), 1u);
  EXPECT_EQ(n.pus, allowedCpus());
  EXPECT_EQ(n.cores(), n.pus);
  Topology t;
  t.nodes.push_back(n);
  Expected<Topology> back = parseXml(toXml(t), "memory");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value().nodes[0].fallback, "test reason");
}

TEST(TopoDiscover, HostIdOverride) {
  setenv("BRAID_HOST_ID", "rack7-node3", 1);
  EXPECT_EQ(hostIdentity(), "rack7-node3");
  unsetenv("BRAID_HOST_ID");
  EXPECT_NE(hostIdentity().find(hostName() + "/"), std::string::npos);
}

TEST(TopoLink, NamesAndPcieFigures) {
  LinkType t;
  ASSERT_TRUE(parseLinkType("pcie_cross_switch", &t));
  EXPECT_EQ(t, LinkType::kPcieCrossSwitch);
  EXPECT_STREQ(linkTypeName(LinkType::kNvlinkViaGpu), "nvlink_via_gpu");
  EXPECT_FALSE(parseLinkType("carrier_pigeon", &t));
  EXPECT_NEAR(pcieGBps(5, 16), 63.0, 0.1);  // PCI-SIG: 32 GT/s, 128b/130b
  EXPECT_NEAR(pcieGBps(3, 16), 15.75, 0.01);
  EXPECT_EQ(pcieGBps(0, 16), 0.0);
}

}  // namespace
}  // namespace braid::topo
