#include "select/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

// ---------------------------------------------------------------- constants
// Every figure the model adds to the topology's nominal links (topo/paths.cc),
// with its source. "REFERENCE" is /work/shared/REFERENCE.md ("Published GPU
// figures", "Host peers on these machines"); "NCCL tuning" is NVIDIA/nccl
// src/graph/tuning.cc (baseLat, hwLat).
struct Constants {
  // GPU call overhead: NCCL's ring/LL base latency, 6.6 us (REFERENCE; NCCL tuning).
  double gpuBaseUs = 6.6;
  // Achieved / nominal NVLink: NCCL ring all-reduce reaches ~370 GB/s busbw on
  // 450 GB/s NVLink 4 (REFERENCE). This calibrates the model on the ring figure,
  // so the ring test checks consistency; all-gather and reduce-scatter do not.
  double nvlinkEfficiency = 370.0 / 450.0;
  // Gen5 x16 is 63 GB/s nominal, 35-53 measured (REFERENCE): the midpoint, 44.
  double pcieEfficiency = 44.0 / 63.0;
  // A 400 Gb/s (50 GB/s) NDR NIC gives ~48 GB/s (REFERENCE).
  double nicEfficiency = 48.0 / 50.0;
  // Host ranks that outnumber the node's cores hand off with sched_yield on a
  // shared core: 0.8 us (REFERENCE, this VM) instead of the path's spin.
  double shmYieldUs = 0.8;
  // No launch on the host; the executor's own overhead is left to measurement
  // (braid-tune writes it into a tuning file).
  double hostBaseUs = 0.0;
  // Bandwidth of step-synchronous and load/store algorithms (halving-doubling,
  // Bruck, direct, two-shot) relative to a pipelined ring: each step waits for
  // the last before it (no overlap of transfer and reduction). 0.75 puts the
  // two-shot / ring crossover near 4.5 MiB on 8 H100s; REFERENCE: two-shot wins
  // "from about 256 KiB to a few MiB", ring is "as good as anything from ~64 MiB".
  double stepSyncEfficiency = 0.75;
  // Host FIFO schedules on a node with shared windows: bytes copied per byte
  // moved (into the slot, out of it) with the per-slice hand-offs folded in.
  // Measured on the 2-core VM (perf/compare, issue 5's sweep): ring and the
  // window algorithms tie where 2.5 prices them alike.
  double fifoCopyFactor = 2.5;
  // Copies a single-copy read replaces (singleCopyMinBytes): into the slot or window and
  // out. Not fifoCopyFactor: the posts and lent inputs keep every hand-off, and a lender
  // waits for its readers. On the 2-core VM (load ~20, braidrun all_gather_perf and
  // broadcast_perf, 2 ranks, 1 MiB, BRAID_SHM_CMA=0/1 interleaved) reads at 1/2.1-1/2.9 of
  // memcpy lost: broadcast 106-122 us copied, 148-152 read.
  double singleCopyCopies = 2.0;
  // Ranks sharing one GPU (cost_model.h): a barrier waits a turn of each other rank's
  // context, 175 us on an H200 without MPS (CHANGELOG, perf tools' small all-reduce on
  // device buffers: 175 us at 2 ranks, 527-540 us at 4).
  double gpuTurnUs = 175.0;
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

// A window algorithm's memory traffic per rank (reads and writes, in units of S)
// priced as one-shot all-reduce is: one-shot moves (n + 3) S (copy in, n inputs
// read, the output written) and is priced n.
double inOneShotUnits(double memoryTraffic, int n) { return memoryTraffic * n / (n + 3); }

// Host memory with shared windows: bytes each rank copies or reads, in units
// of S, for the algorithms that run on the windows (exec/host/shared_windows.h); nothing
// (zeros) for the others, which pay the FIFO's two copies per byte instead. `inLine`:
// the call fits a header line (CostInputs::windowLineBytes).
Form windowForm(Algorithm a, Collective c, int n, bool inLine) {
  const double frac = static_cast<double>(n - 1) / n;
  switch (c) {
    case Collective::kAllReduce:
      // One-shot: the copy in, then n inputs read (the unit of the others).
      if (a == Algorithm::kDirect) return {1, static_cast<double>(n), 1};
      // Two-shot: copy in 2 (n-1)/n, the own piece of every input read (1) and
      // written twice (2/n), the other pieces copied out 2 (n-1)/n. Less than
      // one-shot at any n (measured 15-25% faster at 2 ranks, 16 MiB).
      if (a == Algorithm::kTwoShot) return {2, inOneShotUnits(4 * frac + 1 + 2.0 / n, n), 1};
      break;
    case Collective::kAllGather:
      if (a == Algorithm::kDirect) return {1, 1.0 / n + frac, 1};
      break;
    case Collective::kReduceScatter:
      // The blocks peers reduce copied in (2 (n-1)/n), n blocks of S/n read and
      // one written: 3 - 1/n. The FIFO ring moves more (measured 18 against 5 us
      // at 2 ranks, 64 KiB).
      if (a == Algorithm::kDirect) return {1, inOneShotUnits(3.0 - 1.0 / n, n), 1};
      break;
    case Collective::kBroadcast:
      if (a == Algorithm::kDirect) return {1, 1, 1};
      break;
    case Collective::kReduce:
      // The root, the busiest: n inputs read (its own from its buffer), the output
      // written; the others copy theirs in and go on. Beyond a line a round first meets
      // every rank's round before (the two halves), then the root waits for the puts: n
      // hand-offs. Measured against ring and tree: at 2 ranks 512 B and 4 KiB 10-20%
      // behind, 64 KiB and up ahead; at 4 ranks on 2 cores 512 B to 64 KiB 5-60% behind;
      // in a line 1.6x (2 ranks) and 5x (4) ahead.
      if (a == Algorithm::kDirect) return {inLine ? 1.0 : n, inOneShotUnits(n + 1.0, n), 1};
      break;
    case Collective::kAllToAll:
      if (a == Algorithm::kPairwise) return {1, 1 + frac, 1};
      break;
    default:
      break;
  }
  return {};
}

Form formFor(Algorithm a, Collective c, int n) {
  switch (c) {
    case Collective::kAllReduce:
      return allReduceForm(a, n);
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return gatherScatterForm(a, n);
    case Collective::kBroadcast:
      return rootedForm(a, n);
    // Over FIFOs a direct reduce's root takes the n - 1 messages one after another, each
    // reduced as it lands.
    case Collective::kReduce:
      if (a == Algorithm::kDirect) return {n - 1.0, n - 1.0, kC.stepSyncEfficiency};
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

// What a rank achieves over a nominal path (topo/paths.h).
LinkCost derate(const topo::Link& l) {
  switch (l.type) {
    case topo::LinkType::kNvlink:
    case topo::LinkType::kNvlinkViaGpu:
      return {l.latencyUs, l.bandwidthGBps * kC.nvlinkEfficiency};
    case topo::LinkType::kPcieSameSwitch:
    case topo::LinkType::kPcieCrossSwitch:
    case topo::LinkType::kHostBridge:
      return {l.latencyUs, l.bandwidthGBps * kC.pcieEfficiency};
    // The inter-socket figure (topo/paths.cc) is already an achieved one.
    case topo::LinkType::kCrossSocket:
    case topo::LinkType::kLocal:
    case topo::LinkType::kNetwork:
      break;
  }
  return {l.latencyUs, l.bandwidthGBps};
}

// The slower of two link costs: every step waits for the worst pair.
LinkCost worse(const LinkCost& a, const LinkCost& b) {
  return {std::max(a.alphaUs, b.alphaUs), std::min(a.gbps, b.gbps)};
}

// Places `a` and `b` on one GPU of one node.
bool sameGpu(const topo::RankPlace& a, const topo::RankPlace& b) {
  return a.gpu >= 0 && a.node == b.node && a.gpu == b.gpu;
}

// Hierarchical: intra-node phases over `intra`, rail phases over `inter`
// (N nodes of L ranks; S the model's bytes). Unequal nodes run a node-ordered
// ring (hierarchical.h), priced as the flat ring at the bottleneck.
double hierarchicalUs(Collective c, double S, const CostInputs& in, double flatRingUs) {
  const int N = in.nodes;
  const int L = in.ranksPerNode;
  if (N <= 1 || L <= 1 || N * L != in.nranks) return flatRingUs;
  const double intraBw = in.intra.gbps * 1e3;  // bytes per us
  const double interBw = in.inter.gbps * 1e3;
  const double fl = static_cast<double>(L - 1) / L;
  const double fn = static_cast<double>(N - 1) / N;
  switch (c) {
    case Collective::kAllReduce:
      return in.baseUs + 2 * (L - 1) * in.intra.alphaUs + 2 * fl * S / intraBw +
             2 * (N - 1) * in.inter.alphaUs + 2 * fn * (S / L) / interBw;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return in.baseUs + (N - 1) * in.inter.alphaUs + fn * (S / L) / interBw +
             N * (L - 1) * in.intra.alphaUs + fl * S / intraBw;
    case Collective::kBroadcast:
      return in.baseUs + (N - 1) * in.inter.alphaUs + (L - 1) * in.intra.alphaUs +
             S / std::min(intraBw, interBw);
    default:
      return std::numeric_limits<double>::infinity();
  }
}

}  // namespace

CostInputs costInputsFor(const topo::Topology& topo, const std::vector<topo::RankPlace>& places,
                         int ranksSharingCpus) {
  CostInputs in;
  in.nranks = std::max<int>(1, static_cast<int>(places.size()));
  std::map<int, int> perNode;                // node -> ranks
  std::map<std::pair<int, int>, int> perNic;  // (node, NIC) -> ranks sending through it
  std::map<std::pair<int, int>, int> perGpu;  // (node, GPU) -> ranks on it
  bool gpu = false;
  for (const topo::RankPlace& p : places) {
    ++perNode[p.node];
    gpu = gpu || p.gpu >= 0;
    if (p.gpu >= 0) ++perGpu[{p.node, p.gpu}];
  }
  in.nodes = std::max<int>(1, static_cast<int>(perNode.size()));
  for (const auto& [node, count] : perNode) in.ranksPerNode = std::max(in.ranksPerNode, count);
  const auto nodeOf = [&](int index) -> const topo::Node& { return topo::nodeAt(topo, index); };
  for (const topo::RankPlace& p : places) ++perNic[{p.node, topo::nearestNic(nodeOf(p.node), p)}];
  // One rank's share of the NIC it sends through; TCP's one-stream figure,
  // not shared, when the NIC reports no speed.
  const auto nicShare = [&](const topo::RankPlace& p, double unrated) {
    const topo::Node& n = nodeOf(p.node);
    const int nic = topo::nearestNic(n, p);
    if (nic < 0 || n.nics[nic].speedGbps <= 0) return unrated;
    return n.nics[nic].speedGbps / 8.0 * kC.nicEfficiency / perNic[{p.node, nic}];
  };
  // Intra: the worst pair inside any node. Inter: the worst pair across nodes;
  // with one node, what a rank would get from its NIC.
  bool anyIntra = false;
  bool anyInter = false;
  for (size_t a = 0; a < places.size(); ++a) {
    for (size_t b = a + 1; b < places.size(); ++b) {
      const topo::Link l = topo::pathBetween(topo, places[a], places[b]);
      LinkCost cost = derate(l);
      if (sameGpu(places[a], places[b])) {
        cost = sharedGpuLink(perGpu[{places[a].node, places[a].gpu}], l.bandwidthGBps);
      }
      if (l.type == topo::LinkType::kNetwork) {
        cost.gbps = std::min(nicShare(places[a], l.bandwidthGBps),
                             nicShare(places[b], l.bandwidthGBps));
        in.inter = anyInter ? worse(in.inter, cost) : cost;
        anyInter = true;
      } else {
        in.intra = anyIntra ? worse(in.intra, cost) : cost;
        anyIntra = true;
      }
    }
  }
  const topo::RankPlace first = places.empty() ? topo::RankPlace{} : places[0];
  if (!anyIntra) in.intra = derate(topo::pathBetween(topo, first, first));
  if (!anyInter) {
    topo::RankPlace far = first;
    far.node += 1;
    const topo::Link l = topo::pathBetween(topo, first, far);
    in.inter = {l.latencyUs, std::numeric_limits<double>::infinity()};
    for (const topo::RankPlace& p : places) {
      in.inter.gbps = std::min(in.inter.gbps, nicShare(p, l.bandwidthGBps));
    }
  }
  if (!gpu) {
    const int sharing = ranksSharingCpus > 0 ? ranksSharingCpus : in.ranksPerNode;
    const int cores = nodeOf(places.empty() ? 0 : places[0].node).cores();
    if (cores > 0 && sharing > cores) in.intra.alphaUs = std::max(in.intra.alphaUs, kC.shmYieldUs);
  }
  in.baseUs = gpu ? kC.gpuBaseUs : kC.hostBaseUs;
  return in;
}

CostInputs costInputsFor(const topo::Topology& topo, int nranks, int ranksPerNode) {
  nranks = std::max(nranks, 1);
  return costInputsFor(topo, topo::blockPlaces(topo, nranks, std::clamp(ranksPerNode, 1, nranks)));
}

LinkCost sharedGpuLink(int ranksOnGpu, double memoryGBps) {
  const int k = std::max(ranksOnGpu, 2);
  return {(k - 1) * kC.gpuTurnUs, memoryGBps / k};
}

CostInputs oneGpuInputs(int nranks) {
  topo::Topology one;
  one.nodes.emplace_back();
  one.nodes[0].gpus.emplace_back();
  std::vector<topo::RankPlace> places(static_cast<size_t>(std::max(nranks, 1)));
  for (topo::RankPlace& p : places) p.gpu = 0;
  return costInputsFor(one, places);
}

AlgoShape algorithmShape(Algorithm a, Collective c, int nranks) {
  const Form f = formFor(a, c, nranks);
  return {f.steps, f.traffic};
}

double predictUs(Algorithm a, Collective c, uint64_t bytes, const CostInputs& in) {
  if (!algo::supports(a, c)) return std::numeric_limits<double>::infinity();
  if (in.nranks <= 1) return in.baseUs;  // no peer: nothing crosses a link
  // The band holding S; outside every band, the nearest one.
  const AlgoFit* fit = nullptr;
  for (const AlgoFit& f : in.fits) {
    if (f.collective != c || f.algorithm != a) continue;
    const bool inside = bytes >= f.loBytes && bytes < f.hiBytes;
    const auto gap = [&](const AlgoFit& g) {
      return bytes < g.loBytes ? g.loBytes - bytes : bytes >= g.hiBytes ? bytes - g.hiBytes + 1 : 0;
    };
    if (inside || fit == nullptr || gap(f) < gap(*fit)) fit = &f;
    if (inside) break;
  }
  if (fit != nullptr) return fit->baseUs + static_cast<double>(bytes) / (fit->gbps * 1e3);
  // Flat algorithms across nodes run at the bottleneck: the network's alpha and
  // bandwidth when it is the slower (see the header).
  LinkCost link = in.intra;
  if (in.nodes > 1) link = worse(in.intra, in.inter);
  const auto flat = [&](Algorithm alg) {
    Form f = formFor(alg, c, in.nranks);
    if (f.steps == 0 && f.traffic == 0) return std::numeric_limits<double>::infinity();
    if (in.sharedWindows && in.nodes <= 1) {
      const Form w = windowForm(alg, c, in.nranks, bytes <= in.windowLineBytes);
      if (w.steps != 0 || w.traffic != 0) {
        f = w;
      } else {
        f.traffic *= kC.fifoCopyFactor;  // into the FIFO slot and out of it
        // Bruck's all-to-all also rotates the whole array locally, before and after.
        if (alg == Algorithm::kBruck && c == Collective::kAllToAll) f.traffic += 2;
      }
    }
    const double bytesPerUs = link.gbps * f.efficiency * 1e3;  // GB/s = 1e3 bytes/us
    return in.baseUs + f.steps * link.alphaUs + f.traffic * static_cast<double>(bytes) / bytesPerUs;
  };
  if (a == Algorithm::kHierarchical) {
    return hierarchicalUs(c, static_cast<double>(bytes), in, flat(Algorithm::kRing));
  }
  return flat(a);
}

std::vector<std::pair<Algorithm, double>> rankAlgorithms(Collective c, uint64_t bytes,
                                                         const CostInputs& in) {
  // Measured beats modelled: once a tuning file has fits for `c`, only the
  // fitted algorithms are ranked (a closed form on a tuned link can look
  // cheaper than anything measured without being so).
  const auto fitted = [&](Algorithm a) {
    for (const AlgoFit& f : in.fits) {
      if (f.collective == c && f.algorithm == a) return true;
    }
    return false;
  };
  bool anyFit = false;
  for (const AlgoFit& f : in.fits) anyFit = anyFit || f.collective == c;
  std::vector<std::pair<Algorithm, double>> out;
  for (int i = 0; i < algo::kNumAlgorithms; ++i) {
    const auto a = static_cast<Algorithm>(i);
    if (!algo::supports(a, c) || (anyFit && !fitted(a))) continue;
    // On one node a hierarchical schedule is a ring: rank the ring, not both.
    if (a == Algorithm::kHierarchical && in.nodes <= 1) continue;
    const double us = predictUs(a, c, bytes, in);
    if (std::isfinite(us)) out.emplace_back(a, us);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.second < y.second; });
  return out;
}

uint64_t singleCopyMinBytes(const SingleCopyProbe& probe) {
  if (probe.gbps <= 0 || probe.copyGBps <= 0) return UINT64_MAX;
  // Microseconds per byte (GB/s = 1e3 bytes/us) saved by the read, once it is paid for.
  const double savedPerByte = kC.singleCopyCopies / (probe.copyGBps * 1e3) - 1 / (probe.gbps * 1e3);
  if (savedPerByte <= 0) return UINT64_MAX;
  const double bytes = std::ceil(std::max(probe.latencyUs, 0.0) / savedPerByte);
  return std::max<uint64_t>(static_cast<uint64_t>(bytes), 1);
}

double fifoCopyFactor() { return kC.fifoCopyFactor; }

uint64_t modelBytes(Collective c, uint64_t rankBytes, int nranks) {
  switch (c) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kAllToAll:
    case Collective::kAllToAllv:
      return rankBytes * static_cast<uint64_t>(std::max(nranks, 1));
    default:
      return rankBytes;
  }
}

}  // namespace braid
