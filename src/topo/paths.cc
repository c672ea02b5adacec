#include "topo/paths.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace braid::topo {
namespace {

// ---------------------------------------------------------------- nominal links
// The hardware's figures, before any derating. "REFERENCE" is
// /work/shared/REFERENCE.md; "NCCL tuning" is NVIDIA/nccl src/graph/tuning.cc
// (hwLat, LL protocol); "NCCL topo" is NVIDIA/nccl src/graph/topo.h.
struct Nominal {
  // Host ranks: a cross-core shared-memory hand-off, 0.17 us (REFERENCE, this
  // VM); one core copies 24-29 GB/s (REFERENCE), the low end.
  double shmUs = 0.17;
  double shmGBps = 24.0;
  // Two ranks on one GPU: its own memory, HBM3 3,350 GB/s (H100 SXM data
  // sheet); a step costs an NVLink hop's latency (the kernel hand-off).
  double deviceGBps = 3350.0;
  // NVLink hop 0.6 us, PCIe hop 1.0 us (NCCL tuning).
  double nvlinkUs = 0.6;
  double pcieUs = 1.0;
  // Between sockets: NCCL topo's SKL_QPI_BW, 10 GB/s for one peer-to-peer
  // stream through UPI; a cache-line transfer across sockets adds ~0.13 us
  // to the shared-memory hand-off (Intel's published idle latencies, local
  // ~80 ns vs remote ~140 ns, twice per hand-off), so 0.3 us for host ranks.
  double crossSocketGBps = 10.0;
  double crossSocketHostUs = 0.3;
  // Network: InfiniBand 2.7 us (NCCL tuning, NET); TCP busy-poll 3.2 us on
  // loopback and one TCP stream 5.8 GB/s when the NIC reports no speed
  // (REFERENCE, this VM).
  double ibUs = 2.7;
  double tcpUs = 3.2;
  double tcpGBps = 5.8;
};
constexpr Nominal kN{};

int packageOfNuma(const Node& node, int numa) {
  for (const NumaNode& m : node.numaNodes) {
    if (m.id == numa) return m.package;
  }
  return -1;
}

const Gpu* gpuOf(const Node& node, const RankPlace& p) {
  if (p.gpu < 0 || p.gpu >= static_cast<int>(node.gpus.size())) return nullptr;
  return &node.gpus[p.gpu];
}

double gpuPcieGBps(const Gpu& g) {
  const double p = g.pcieGBps > 0 ? g.pcieGBps : pcieGBps(g.pcieGen, g.pcieWidth);
  return p > 0 ? p : pcieGBps(3, 16);  // unknown: the slowest link a current GPU ships with
}

// The NUMA node a rank is nearest to: its own, else its GPU's.
int numaOf(const Node& node, const RankPlace& p) {
  if (p.numa >= 0) return p.numa;
  const Gpu* g = gpuOf(node, p);
  return g != nullptr ? g->numa : -1;
}

bool crossSocket(const Node& node, const RankPlace& a, const RankPlace& b) {
  const int pa = packageOfNuma(node, numaOf(node, a));
  const int pb = packageOfNuma(node, numaOf(node, b));
  return pa >= 0 && pb >= 0 && pa != pb;
}

Link networkLink(const Node& node, const RankPlace& p) {
  const int i = nearestNic(node, p);
  if (i < 0 || node.nics[i].speedGbps <= 0) return {LinkType::kNetwork, kN.tcpGBps, kN.tcpUs};
  const Nic& nic = node.nics[i];
  return {LinkType::kNetwork, nic.speedGbps / 8.0,
          nic.kind == NicKind::kInfiniband ? kN.ibUs : kN.tcpUs};
}

// GB/s of the links listed from `g` to `peer` (a bus id or kNvswitch); whether
// `g` has any entry at all goes to *listed.
double listedGBps(const Node& node, const Gpu& g, const std::string& peer, bool* listed = nullptr) {
  double sum = 0;
  for (const Nvlink& l : node.nvlinks) {
    if (l.gpu != g.busId) continue;
    if (listed != nullptr) *listed = true;
    if (l.peer == peer) sum += l.gbps;
  }
  return sum;
}

// What `g` reaches through NVSwitch: its switch links, or, with no entry at all,
// its per-GPU figure (files that describe only that).
double switchGBps(const Node& node, const Gpu& g) {
  bool listed = false;
  const double gbps = listedGBps(node, g, kNvswitch, &listed);
  return listed ? gbps : g.nvlinkGBps;
}

// Direct links between two GPUs, as the slower of the two directions listed.
double directGBps(const Node& node, const Gpu& a, const Gpu& b) {
  const double ab = listedGBps(node, a, b.busId);
  const double ba = listedGBps(node, b, a.busId);
  if (ab > 0 && ba > 0) return std::min(ab, ba);
  return std::max(ab, ba);
}

// NVLink between two GPUs of a node: direct links, else NVSwitch when both are
// on it, else through the GPU that links to both at the highest rate.
bool nvlinkPath(const Node& node, const Gpu& a, const Gpu& b, Link* out) {
  const double direct = directGBps(node, a, b);
  if (direct > 0) {
    *out = {LinkType::kNvlink, direct, kN.nvlinkUs};
    return true;
  }
  const double sa = switchGBps(node, a);
  const double sb = switchGBps(node, b);
  if (sa > 0 && sb > 0) {
    *out = {LinkType::kNvlink, std::min(sa, sb), kN.nvlinkUs};
    return true;
  }
  double best = 0;
  for (const Gpu& c : node.gpus) {
    if (&c == &a || &c == &b) continue;
    best = std::max(best, std::min(directGBps(node, a, c), directGBps(node, c, b)));
  }
  if (best <= 0) return false;
  *out = {LinkType::kNvlinkViaGpu, best, 2 * kN.nvlinkUs};
  return true;
}

Link gpuPair(const Node& node, const Gpu& a, const Gpu& b, const RankPlace& pa,
             const RankPlace& pb) {
  if (&a == &b) return {LinkType::kLocal, kN.deviceGBps, kN.nvlinkUs};
  Link nvlink;
  if (nvlinkPath(node, a, b, &nvlink)) return nvlink;
  const double bw = std::min(gpuPcieGBps(a), gpuPcieGBps(b));
  // Peer-to-peer traffic crosses the sockets where the GPUs hang, wherever the ranks'
  // threads run: the GPUs' NUMA nodes decide when known.
  const int pkgA = packageOfNuma(node, a.numa >= 0 ? a.numa : numaOf(node, pa));
  const int pkgB = packageOfNuma(node, b.numa >= 0 ? b.numa : numaOf(node, pb));
  if (pkgA >= 0 && pkgB >= 0 && pkgA != pkgB) {
    return {LinkType::kCrossSocket, std::min(bw, kN.crossSocketGBps), kN.pcieUs};
  }
  if (a.pcieSwitch < 0 || b.pcieSwitch < 0) return {LinkType::kHostBridge, bw, kN.pcieUs};
  if (a.pcieSwitch == b.pcieSwitch) return {LinkType::kPcieSameSwitch, bw, kN.pcieUs};
  return {LinkType::kPcieCrossSwitch, bw, kN.pcieUs};
}

}  // namespace

const Node& nodeAt(const Topology& topo, int index) {
  static const Node kEmpty{};
  if (topo.nodes.empty()) return kEmpty;
  return topo.nodes[std::clamp(index, 0, static_cast<int>(topo.nodes.size()) - 1)];
}

LinkType nicPath(const Node& node, const RankPlace& place, const Nic& nic) {
  const Gpu* g = gpuOf(node, place);
  const int pr = packageOfNuma(node, numaOf(node, place));
  const int pn = packageOfNuma(node, nic.numa);
  if (pr >= 0 && pn >= 0 && pr != pn) return LinkType::kCrossSocket;
  if (g == nullptr || g->pcieSwitch < 0 || nic.pcieSwitch < 0) return LinkType::kHostBridge;
  return g->pcieSwitch == nic.pcieSwitch ? LinkType::kPcieSameSwitch : LinkType::kPcieCrossSwitch;
}

int nearestNic(const Node& node, const RankPlace& place) {
  const int numa = numaOf(node, place);
  int best = -1;
  // Under the GPU's switch first, then through the root complex (another switch of the
  // socket or the bridge itself: both cross it), then the other socket; within a class,
  // the NIC on the rank's own NUMA node, then the faster.
  const auto distance = [&](const Nic& nic) {
    const LinkType t = nicPath(node, place, nic);
    return t == LinkType::kPcieSameSwitch ? 0 : t == LinkType::kCrossSocket ? 2 : 1;
  };
  const auto better = [&](const Nic& x, const Nic& y) {
    const int dx = distance(x);
    const int dy = distance(y);
    if (dx != dy) return dx < dy;
    const bool nx = numa >= 0 && x.numa == numa;
    const bool ny = numa >= 0 && y.numa == numa;
    if (nx != ny) return nx;
    return x.speedGbps > y.speedGbps;
  };
  for (int i = 0; i < static_cast<int>(node.nics.size()); ++i) {
    if (best < 0 || better(node.nics[i], node.nics[best])) best = i;
  }
  return best;
}

Link pathBetween(const Topology& topo, const RankPlace& a, const RankPlace& b) {
  if (a.node != b.node) {
    const Link la = networkLink(nodeAt(topo, a.node), a);
    const Link lb = networkLink(nodeAt(topo, b.node), b);
    return {LinkType::kNetwork, std::min(la.bandwidthGBps, lb.bandwidthGBps),
            std::max(la.latencyUs, lb.latencyUs)};
  }
  const Node& node = nodeAt(topo, a.node);
  const Gpu* ga = gpuOf(node, a);
  const Gpu* gb = gpuOf(node, b);
  if (ga != nullptr && gb != nullptr) return gpuPair(node, *ga, *gb, a, b);
  if (ga != nullptr || gb != nullptr) {
    // A GPU rank and a host rank meet in host memory, through the GPU's PCIe.
    const double bw = gpuPcieGBps(ga != nullptr ? *ga : *gb);
    if (crossSocket(node, a, b)) {
      return {LinkType::kCrossSocket, std::min(bw, kN.crossSocketGBps), kN.pcieUs};
    }
    return {LinkType::kHostBridge, bw, kN.pcieUs};
  }
  if (crossSocket(node, a, b)) {
    return {LinkType::kCrossSocket, std::min(kN.shmGBps, kN.crossSocketGBps),
            kN.crossSocketHostUs};
  }
  return {LinkType::kLocal, kN.shmGBps, kN.shmUs};
}

PathMatrix pathMatrix(const Topology& topo, const std::vector<RankPlace>& places) {
  PathMatrix m;
  m.nranks = static_cast<int>(places.size());
  m.links.reserve(places.size() * places.size());
  for (const RankPlace& a : places) {
    for (const RankPlace& b : places) m.links.push_back(pathBetween(topo, a, b));
  }
  return m;
}

std::vector<RankPlace> blockPlaces(const Topology& topo, int nranks, int ranksPerNode) {
  ranksPerNode = std::max(ranksPerNode, 1);
  std::vector<RankPlace> out;
  for (int r = 0; r < nranks; ++r) {
    RankPlace p;
    p.node = r / ranksPerNode;
    const int local = r % ranksPerNode;
    const Node& node = nodeAt(topo, p.node);
    if (!node.gpus.empty()) {
      p.gpu = local % static_cast<int>(node.gpus.size());
      p.numa = node.gpus[p.gpu].numa;
    } else if (!node.numaNodes.empty()) {
      const int per = (ranksPerNode + static_cast<int>(node.numaNodes.size()) - 1) /
                      static_cast<int>(node.numaNodes.size());
      p.numa = node.numaNodes[std::min<size_t>(local / per, node.numaNodes.size() - 1)].id;
    }
    out.push_back(p);
  }
  return out;
}

std::string placeString(int numa, const std::string& gpuBusId) {
  std::string out;
  if (!gpuBusId.empty()) out = "gpu=" + gpuBusId;
  if (numa >= 0) out += (out.empty() ? "" : ",") + std::string("numa=") + std::to_string(numa);
  return out;
}

RankPlace parsePlace(const std::string& text, const Node& node, int nodeIndex) {
  RankPlace p;
  p.node = nodeIndex;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    if (item.rfind("numa=", 0) == 0) {
      int v = -1;
      if (std::sscanf(item.c_str() + 5, "%d", &v) == 1 && v >= 0) p.numa = v;
    } else if (item.rfind("gpu=", 0) == 0) {
      p.gpu = node.gpuIndex(normalizeBusId(item.substr(4)));
    }
    start = comma + 1;
  }
  return p;
}

}  // namespace braid::topo
