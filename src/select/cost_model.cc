#include "select/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

// ---------------------------------------------------------------- constants
// Every figure the model uses, with its source. "REFERENCE" is
// /work/shared/REFERENCE.md ("Published GPU figures", "Host peers on these
// machines"); "NCCL tuning" is NVIDIA/nccl src/graph/tuning.cc (baseLat, hwLat).
struct Constants {
  // GPU call overhead: NCCL's ring/LL base latency, 6.6 us (REFERENCE; NCCL tuning).
  double gpuBaseUs = 6.6;
  // One NVLink hop, 0.6 us (REFERENCE: NCCL's 8 B model, 6.6 + 0.6 per hop).
  double nvlinkHopUs = 0.6;
  // Achieved / nominal NVLink: NCCL ring all-reduce reaches ~370 GB/s busbw on
  // 450 GB/s NVLink 4 (REFERENCE). This calibrates the model on the ring figure,
  // so the ring test checks consistency; all-gather and reduce-scatter do not.
  double nvlinkEfficiency = 370.0 / 450.0;
  // One PCIe hop: NCCL tuning hwLat[PCI][ring][LL] = 1.0 us.
  double pcieHopUs = 1.0;
  // Gen5 x16 is 63 GB/s nominal, 35-53 measured (REFERENCE): the midpoint, 44.
  double pcieEfficiency = 44.0 / 63.0;
  // One network hop over InfiniBand: NCCL tuning hwLat[NET][ring][LL] = 2.7 us.
  double ibHopUs = 2.7;
  // A 400 Gb/s (50 GB/s) NDR NIC gives ~48 GB/s (REFERENCE).
  double nicEfficiency = 48.0 / 50.0;
  // Host ranks on this VM (REFERENCE): cross-core shared-memory spin 0.17 us;
  // same-core sched_yield hand-off 0.8 us (more ranks than cores); one core
  // copies 24-29 GB/s, the low end since a rank also reduces while it copies.
  double shmSpinUs = 0.17;
  double shmYieldUs = 0.8;
  double hostCopyGBps = 24.0;
  // No launch on the host; the executor's own overhead is left to measurement.
  double hostBaseUs = 0.0;
  // Ethernet / unknown NICs: TCP busy-poll 3.2 us (loopback, a floor) and one
  // stream 5.8 GB/s (REFERENCE, this VM).
  double tcpHopUs = 3.2;
  double tcpStreamGBps = 5.8;
  // Bandwidth of step-synchronous and load/store algorithms (halving-doubling,
  // Bruck, direct, two-shot) relative to a pipelined ring: each step waits for
  // the last before it (no overlap of transfer and reduction). 0.75 puts the
  // two-shot / ring crossover near 4.5 MiB on 8 H100s; REFERENCE: two-shot wins
  // "from about 256 KiB to a few MiB", ring is "as good as anything from ~64 MiB".
  double stepSyncEfficiency = 0.75;
};
constexpr Constants kC{};

// ---------------------------------------------------------------- closed forms

// An algorithm's cost in units of the link: steps x alpha + traffic x S / B,
// B derated by `efficiency`.
struct Form {
  double steps = 0;
  double traffic = 0;  // bytes over a rank's busiest link, as a multiple of S
  double efficiency = 1;
};

double log2Ceil(int n) { return n <= 1 ? 0.0 : std::ceil(std::log2(n)); }
bool isPow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

Form allReduceForm(Algorithm a, int n) {
  const double frac = static_cast<double>(n - 1) / n;
  const double sync = kC.stepSyncEfficiency;
  switch (a) {
    case Algorithm::kRing:
      return {2.0 * (n - 1), 2 * frac, 1};
    // Pipelined double binary tree: up then down, each moving S through a rank.
    case Algorithm::kTree:
      return {2 * log2Ceil(n), 2, 1};
    case Algorithm::kHalvingDoubling: {
      // Non-powers of two fold the excess ranks in first and out last: 2 more
      // steps, each carrying the whole buffer (Rabenseifner's pre/post steps).
      const bool fold = !isPow2(n);
      return {2 * std::floor(std::log2(n)) + (fold ? 2 : 0), 2 * frac + (fold ? 2 : 0), sync};
    }
    // One-shot: every rank reads all n-1 peers' buffers after one flag.
    case Algorithm::kDirect:
      return {1, static_cast<double>(n - 1), sync};
    case Algorithm::kTwoShot:
      return {2, 2 * frac, sync};
    default:
      return {};
  }
}

// All-gather and reduce-scatter are mirror images: same steps, same traffic.
Form gatherScatterForm(Algorithm a, int n) {
  const double frac = static_cast<double>(n - 1) / n;
  const double sync = kC.stepSyncEfficiency;
  switch (a) {
    case Algorithm::kRing:
      return {static_cast<double>(n - 1), frac, 1};
    case Algorithm::kHalvingDoubling: {
      const bool fold = !isPow2(n);
      return {std::floor(std::log2(n)) + (fold ? 1 : 0), frac + (fold ? 1 : 0), sync};
    }
    case Algorithm::kBruck:
      return {log2Ceil(n), frac, sync};
    case Algorithm::kDirect:
      return {1, frac, sync};
    default:
      return {};
  }
}

Form rootedForm(Algorithm a, int n) {
  switch (a) {
    // Pipelined chain: the whole buffer passes each rank once.
    case Algorithm::kRing:
      return {static_cast<double>(n - 1), 1, 1};
    // Double binary tree: half the buffer down each tree; a rank forwards ~S.
    case Algorithm::kTree:
      return {log2Ceil(n), 1, 1};
    // Peers read the root's buffer at once: its link carries n-1 copies.
    case Algorithm::kDirect:
      return {1, static_cast<double>(n - 1), kC.stepSyncEfficiency};
    default:
      return {};
  }
}

Form allToAllForm(Algorithm a, int n) {
  switch (a) {
    case Algorithm::kPairwise:
      return {static_cast<double>(n - 1), static_cast<double>(n - 1) / n, 1};
    // log2 n steps, each moving about half of the array.
    case Algorithm::kBruck:
      return {log2Ceil(n), log2Ceil(n) / 2, kC.stepSyncEfficiency};
    default:
      return {};
  }
}

Form formFor(Algorithm a, Collective c, int n) {
  switch (c) {
    case Collective::kAllReduce:
      return allReduceForm(a, n);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return gatherScatterForm(a, n);
    case Collective::kBroadcast:
    case Collective::kReduce:
      return rootedForm(a, n);
    // Linear: the root posts n-1 messages, its link carries (n-1)/n of S.
    case Collective::kGather:
    case Collective::kScatter:
      return {static_cast<double>(n - 1), static_cast<double>(n - 1) / n, 1};
    case Collective::kAllToAll:
    case Collective::kAllToAllv:
      return allToAllForm(a, n);
  }
  return {};
}

// ---------------------------------------------------------------- links

LinkCost intraLink(const topo::Node& node, int ranksPerNode) {
  if (node.gpus.empty()) {
    const bool shareCores = node.cores() > 0 && ranksPerNode > node.cores();
    return {shareCores ? kC.shmYieldUs : kC.shmSpinUs, kC.hostCopyGBps};
  }
  // The slowest GPU sets the pace of every ring and tree through it.
  double nvlink = node.gpus[0].nvlinkGBps;
  double pcie = std::numeric_limits<double>::infinity();
  for (const topo::Gpu& g : node.gpus) {
    nvlink = std::min(nvlink, g.nvlinkGBps);
    const double p = g.pcieGBps > 0 ? g.pcieGBps : topo::pcieGBps(g.pcieGen, g.pcieWidth);
    if (p > 0) pcie = std::min(pcie, p);
  }
  if (nvlink > 0) return {kC.nvlinkHopUs, nvlink * kC.nvlinkEfficiency};
  // No GPU says its link: assume Gen3 x16, the slowest a current GPU ships with.
  if (std::isinf(pcie)) pcie = topo::pcieGBps(3, 16);
  return {kC.pcieHopUs, pcie * kC.pcieEfficiency};
}

// One rank's share of its node's NICs (rails are assumed spread evenly).
LinkCost interLink(const topo::Node& node, int ranksPerNode) {
  double totalGbps = 0;
  bool infiniband = false;
  for (const topo::Nic& nic : node.nics) {
    totalGbps += nic.speedGbps;
    infiniband = infiniband || (nic.kind == topo::NicKind::kInfiniband && nic.speedGbps > 0);
  }
  if (totalGbps <= 0) return {kC.tcpHopUs, kC.tcpStreamGBps};
  const double perRankGBps = totalGbps / 8.0 * kC.nicEfficiency / ranksPerNode;
  return {infiniband ? kC.ibHopUs : kC.tcpHopUs, perRankGBps};
}

}  // namespace

CostInputs costInputsFor(const topo::Topology& topo, int nranks, int ranksPerNode) {
  CostInputs in;
  in.nranks = std::max(nranks, 1);
  in.ranksPerNode = std::clamp(ranksPerNode, 1, in.nranks);
  in.nodes = (in.nranks + in.ranksPerNode - 1) / in.ranksPerNode;
  const topo::Node node = topo.nodes.empty() ? topo::Node{} : topo.nodes[0];
  in.intra = intraLink(node, in.ranksPerNode);
  in.inter = interLink(node, in.ranksPerNode);
  in.baseUs = node.gpus.empty() ? kC.hostBaseUs : kC.gpuBaseUs;
  return in;
}

double predictUs(Algorithm a, Collective c, uint64_t bytes, const CostInputs& in) {
  if (!algo::supports(a, c)) return std::numeric_limits<double>::infinity();
  if (in.nranks <= 1) return in.baseUs;  // no peer: nothing crosses a link
  // Flat algorithms across nodes run at the bottleneck: the network's alpha and
  // bandwidth when it is the slower (see the header).
  LinkCost link = in.intra;
  if (in.nodes > 1) {
    link.alphaUs = std::max(in.intra.alphaUs, in.inter.alphaUs);
    link.gbps = std::min(in.intra.gbps, in.inter.gbps);
  }
  const Form f = formFor(a, c, in.nranks);
  // An algorithm without a closed form here (hierarchical, for now) is not
  // priced, so it never wins a ranking it cannot justify.
  if (f.steps == 0 && f.traffic == 0) return std::numeric_limits<double>::infinity();
  const double bytesPerUs = link.gbps * f.efficiency * 1e3;  // GB/s = 1e3 bytes/us
  return in.baseUs + f.steps * link.alphaUs + f.traffic * static_cast<double>(bytes) / bytesPerUs;
}

std::vector<std::pair<Algorithm, double>> rankAlgorithms(Collective c, uint64_t bytes,
                                                         const CostInputs& in) {
  std::vector<std::pair<Algorithm, double>> out;
  for (int i = 0; i < algo::kNumAlgorithms; ++i) {
    const auto a = static_cast<Algorithm>(i);
    if (!algo::supports(a, c)) continue;
    const double us = predictUs(a, c, bytes, in);
    if (std::isfinite(us)) out.emplace_back(a, us);  // unpriced algorithms are left out
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.second < y.second; });
  return out;
}

}  // namespace braid
