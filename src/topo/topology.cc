#include "topo/topology.h"

#include <cstdio>
#include <iterator>

namespace braid::topo {

namespace {

struct LinkName {
  LinkType type;
  const char* name;
};
constexpr LinkName kLinkNames[] = {
    {LinkType::kLocal, "local"},
    {LinkType::kNvlink, "nvlink"},
    {LinkType::kNvlinkViaGpu, "nvlink_via_gpu"},
    {LinkType::kPcieSameSwitch, "pcie_same_switch"},
    {LinkType::kPcieCrossSwitch, "pcie_cross_switch"},
    {LinkType::kHostBridge, "host_bridge"},
    {LinkType::kCrossSocket, "cross_socket"},
    {LinkType::kNetwork, "network"},
};

}  // namespace

const char* linkTypeName(LinkType type) {
  for (const LinkName& l : kLinkNames) {
    if (l.type == type) return l.name;
  }
  return "unknown";
}

bool parseLinkType(const std::string& name, LinkType* type) {
  for (const LinkName& l : kLinkNames) {
    if (name == l.name) {
      *type = l.type;
      return true;
    }
  }
  return false;
}

double pcieGBps(int generation, int width) {
  // Per-lane GT/s and encoding efficiency from the PCI-SIG base specifications;
  // Gen6 (PAM4, FLIT) is taken at 64 GT/s with 242/256 FLIT efficiency.
  static constexpr double kGTps[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  static constexpr double kEfficiency[] = {0, 0.8, 0.8, 128.0 / 130, 128.0 / 130, 128.0 / 130,
                                           242.0 / 256};
  if (generation < 1 || generation >= static_cast<int>(std::size(kGTps)) || width <= 0) return 0;
  return kGTps[generation] * kEfficiency[generation] * width / 8.0;
}

std::string normalizeBusId(const std::string& busId) {
  // Hex digits, ':' and '.' only, one function digit last ("0x" would read as hex).
  const size_t dot = busId.rfind('.');
  if (dot == std::string::npos || dot + 2 != busId.size() ||
      busId.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) {
    return busId;
  }
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  int used = 0;
  if (std::sscanf(busId.c_str(), "%x:%x:%x.%x%n", &domain, &bus, &dev, &fn, &used) != 4 ||
      used != static_cast<int>(busId.size()) || domain > 0xffff || bus > 0xff || dev > 0x1f ||
      fn > 7) {
    return busId;
  }
  char out[16];
  std::snprintf(out, sizeof(out), "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return out;
}

const char* nicKindName(NicKind kind) {
  return kind == NicKind::kInfiniband ? "infiniband" : "ethernet";
}

int Node::cores() const {
  int n = 0;
  for (const Package& p : packages) n += p.cores;
  return n;
}

int Node::gpuIndex(const std::string& busId) const {
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].busId == busId) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace braid::topo
