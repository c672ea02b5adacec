// braid-topo: prints the topology Braid would use (BRAID_TOPO_FILE's, else the
// discovered one) as an indented tree. BRAID_TOPO_DUMP_FILE also writes it as XML.
#include <cstdio>
#include <cstring>

#include "topo/topology.h"
#include "topo/xml.h"

namespace {

using namespace braid::topo;

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f MiB", bytes / 1048576.0);
  return buf;
}

std::string kib(uint64_t bytes) { return std::to_string(bytes / 1024) + " KiB"; }

std::string where(int pcieSwitch, int numa) {
  std::string s = pcieSwitch >= 0 ? "switch " + std::to_string(pcieSwitch) : "host bridge";
  if (numa >= 0) s += ", NUMA " + std::to_string(numa);
  return s;
}

void printNode(const Node& n) {
  std::printf("node %s (%s): %d packages, %d cores, %d PUs\n", n.name.c_str(), n.id.c_str(),
              static_cast<int>(n.packages.size()), n.cores(), n.pus);
  if (!n.fallback.empty()) std::printf("  fallback: %s\n", n.fallback.c_str());
  for (const Package& p : n.packages) {
    std::printf("  package %d: %d cores, L1d %s, L2 %s, L3 %s\n", p.id, p.cores,
                kib(p.l1dBytes).c_str(), kib(p.l2Bytes).c_str(), kib(p.l3Bytes).c_str());
  }
  for (const NumaNode& m : n.numaNodes) {
    std::printf("  NUMA %d: package %d, %s\n", m.id, m.package, mib(m.memoryBytes).c_str());
  }
  for (const Gpu& g : n.gpus) {
    std::printf("  GPU %s %s: PCIe Gen%d x%d %.1f GB/s, NVLink %.0f GB/s, %s\n", g.busId.c_str(),
                g.name.c_str(), g.pcieGen, g.pcieWidth, g.pcieGBps, g.nvlinkGBps,
                where(g.pcieSwitch, g.numa).c_str());
  }
  for (const Nic& c : n.nics) {
    std::printf("  NIC %s: %s %.0f Gb/s, %s%s\n", c.name.c_str(), nicKindName(c.kind), c.speedGbps,
                c.busId.empty() ? "" : (c.busId + ", ").c_str(), where(c.pcieSwitch, c.numa).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::printf("usage: braid-topo\n  BRAID_TOPO_FILE=f.xml      print f.xml instead of discovering\n"
                "  BRAID_TOPO_DUMP_FILE=f.xml also write the topology to f.xml\n");
    return 0;
  }
  braid::Expected<Topology> topo = loadOrDiscover();
  if (!topo.isOk()) {
    std::fprintf(stderr, "braid-topo: %s\n", topo.status().message().c_str());
    return 1;
  }
  for (const Node& n : topo.value().nodes) printNode(n);
  return 0;
}
