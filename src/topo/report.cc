#include "topo/report.h"

#include <cstdarg>
#include <cstdio>

namespace braid::topo {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}

std::string where(int pcieSwitch, int numa) {
  std::string s = pcieSwitch >= 0 ? "switch " + std::to_string(pcieSwitch) : "host bridge";
  if (numa >= 0) s += ", NUMA " + std::to_string(numa);
  return s;
}

}  // namespace

const char* shortLinkName(LinkType type) {
  switch (type) {
    case LinkType::kLocal:
      return "LOC";
    case LinkType::kNvlink:
      return "NVL";
    case LinkType::kNvlinkViaGpu:
      return "NVB";
    case LinkType::kPcieSameSwitch:
      return "PIX";
    case LinkType::kPcieCrossSwitch:
      return "PXB";
    case LinkType::kHostBridge:
      return "PHB";
    case LinkType::kCrossSocket:
      return "SYS";
    case LinkType::kNetwork:
      return "NET";
  }
  return "?";
}

std::vector<std::string> rankLines(const Topology& topo, const std::vector<RankPlace>& places) {
  std::vector<std::string> out;
  for (size_t r = 0; r < places.size(); ++r) {
    const RankPlace& p = places[r];
    const Node& node = nodeAt(topo, p.node);
    std::string line = format("rank %zu: node %d (%s)", r, p.node, node.name.c_str());
    if (p.gpu >= 0 && p.gpu < static_cast<int>(node.gpus.size())) {
      const Gpu& g = node.gpus[p.gpu];
      line += format(", GPU %d %s %s (%s)", p.gpu, g.busId.c_str(), g.name.c_str(),
                     where(g.pcieSwitch, g.numa).c_str());
      if (g.nvlinkGBps > 0) line += format(", NVLink %.0f GB/s", g.nvlinkGBps);
    } else {
      line += p.numa >= 0 ? format(", host rank on NUMA %d", p.numa) : ", host rank";
    }
    const int nic = nearestNic(node, p);
    if (nic >= 0) {
      const Nic& n = node.nics[nic];
      line += format(", NIC %s (%s, %s)", n.name.c_str(), shortLinkName(nicPath(node, p, n)),
                     n.speedGbps > 0 ? format("%.0f Gb/s", n.speedGbps).c_str() : "speed unknown");
    }
    out.push_back(line);
  }
  return out;
}

std::vector<std::string> pathMatrixLines(const Topology& topo, const std::vector<RankPlace>& places,
                                         int maxRanks) {
  std::vector<std::string> out;
  const int n = static_cast<int>(places.size());
  if (n > maxRanks) return out;
  const PathMatrix m = pathMatrix(topo, places);
  out.push_back(
      "type/GB/s: LOC local, NVL nvlink, NVB nvlink_via_gpu, PIX pcie_same_switch, "
      "PXB pcie_cross_switch, PHB host_bridge, SYS cross_socket, NET network");
  std::string header = format("%-12s", "rank");
  for (int b = 0; b < n; ++b) header += format(" %9d", b);
  out.push_back(header);
  for (int a = 0; a < n; ++a) {
    const RankPlace& p = places[a];
    std::string label = format("%d (n%d", a, p.node);
    label += p.gpu >= 0 ? format(" g%d)", p.gpu) : ")";
    std::string row = format("%-12s", label.c_str());
    for (int b = 0; b < n; ++b) {
      const Link& l = m.at(a, b);
      const std::string cell = format("%s/%.0f", shortLinkName(l.type), l.bandwidthGBps);
      row += format(" %9s", cell.c_str());
    }
    out.push_back(row);
  }
  return out;
}

std::vector<std::string> gpuNicLines(const Node& node) {
  std::vector<std::string> out;
  if (node.gpus.empty() || node.nics.empty()) return out;
  for (int g = 0; g < static_cast<int>(node.gpus.size()); ++g) {
    RankPlace p;
    p.gpu = g;
    const int nearest = nearestNic(node, p);
    std::string line = format("GPU %d %s ->", g, node.gpus[g].busId.c_str());
    for (int i = 0; i < static_cast<int>(node.nics.size()); ++i) {
      const Nic& n = node.nics[i];
      line += format(" %s%s %s", i == nearest ? "*" : "", n.name.c_str(),
                     shortLinkName(nicPath(node, p, n)));
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace braid::topo
