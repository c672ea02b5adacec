// braid-topo: prints the topology Braid would use (BRAID_TOPO_FILE's, else the
// discovered one) as an indented tree, each GPU's paths to the NICs, then where
// the ranks run and the path matrix between them (topo/report.h). The ranks are
// those a live communicator recorded (its BRAID_TOPO_DUMP_FILE, given as
// BRAID_TOPO_FILE), else a layout (--nranks, --ranks-per-node).
// BRAID_TOPO_DUMP_FILE also writes the topology as XML.
// With --table it prints instead what the cost model (select/cost_model.h) picks
// for each collective and size on that topology (and BRAID_TUNING_FILE's
// measurements), with the predicted time and busbw, so a topology file can be
// checked against nccl-tests figures; for GPU ranks of one node, also what device
// calls run (select/device_choice.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "algorithms/registry.h"
#include "core/env.h"
#include "select/cost_model.h"
#include "select/device_choice.h"
#include "select/select.h"
#include "select/tuning.h"
#include "topo/paths.h"
#include "topo/report.h"
#include "topo/topology.h"
#include "topo/xml.h"

namespace {

using namespace braid::topo;
using braid::algo::Collective;

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
                c.busId.empty() ? "" : (c.busId + ", ").c_str(),
                where(c.pcieSwitch, c.numa).c_str());
  }
  for (const Nvlink& l : n.nvlinks) {
    std::printf("  NVLink %s -> %s: %d links, %.0f GB/s\n", l.gpu.c_str(), l.peer.c_str(), l.links,
                l.gbps);
  }
  for (const std::string& line : gpuNicLines(n)) std::printf("  %s\n", line.c_str());
}

// ---------------------------------------------------------------- options

constexpr char kUsage[] =
    "usage: braid-topo [--table] [--nranks N] [--ranks-per-node L]\n"
    "  (no option)           print the topology as a tree, then the path matrix\n"
    "                        (type and bottleneck GB/s between every pair of ranks)\n"
    "  --table               print instead the cost model's fastest algorithm, its\n"
    "                        time and busbw per collective and size (8 B .. 1 GiB);\n"
    "                        for 2-8 GPU ranks of one node, also the device calls'\n"
    "                        choice (algorithm, windows or lowered)\n"
    "  --nranks N            ranks of the layout; default: the ranks a live\n"
    "                        communicator recorded in the file, else every GPU\n"
    "                        of the topology, or the node's cores without GPUs\n"
    "  --ranks-per-node L    default: the node's GPUs (or cores), at most N\n"
    "  BRAID_TOPO_FILE=f.xml      print f.xml instead of discovering\n"
    "  BRAID_TOPO_DUMP_FILE=f.xml also write the topology to f.xml\n"
    "  BRAID_TUNING_FILE=t.txt    --table prices with braid-tune's measurements\n"
    "                             (BRAID_TRANSPORTS's first names the transport)\n";

struct Options {
  bool help = false;
  bool table = false;
  int nranks = 0;        // 0: the default (see kUsage)
  int ranksPerNode = 0;  // 0: the default
};

// Prints `why` and the usage to stderr; main returns 2 after it.
bool usageError(const std::string& why) {
  std::fprintf(stderr, "braid-topo: %s\n%s", why.c_str(), kUsage);
  return false;
}

bool parsePositive(const char* option, const char* text, int* out) {
  const std::string_view s = text ? text : "";
  int v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 1) {
    return usageError(std::string(option) + " takes a positive integer, not '" + std::string(s) +
                      "'");
  }
  *out = v;
  return true;
}

bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      o->help = true;
    } else if (a == "--table") {
      o->table = true;
    } else if (a == "--nranks" || a == "--ranks-per-node") {
      if (i + 1 >= argc) return usageError(std::string(a) + " needs a value");
      if (!parsePositive(argv[i], argv[i + 1], a == "--nranks" ? &o->nranks : &o->ranksPerNode)) {
        return false;
      }
      ++i;
    } else {
      return usageError("unknown option '" + std::string(a) + "'");
    }
  }
  if (o->nranks > 0 && o->ranksPerNode > o->nranks) {
    return usageError("--ranks-per-node " + std::to_string(o->ranksPerNode) +
                      " is more than --nranks " + std::to_string(o->nranks));
  }
  return true;
}

// ---------------------------------------------------------------- table

// Ranks a node holds by default: one per GPU, else one per core (host ranks).
int defaultRanks(const Node& n) {
  if (!n.gpus.empty()) return static_cast<int>(n.gpus.size());
  return n.cores() > 0 ? n.cores() : std::max(n.pus, 1);
}

void applyDefaults(const Topology& topo, Options* o) {
  const bool hasGpus = std::any_of(topo.nodes.begin(), topo.nodes.end(),
                                   [](const Node& n) { return !n.gpus.empty(); });
  if (o->nranks == 0) {
    if (hasGpus) {
      for (const Node& n : topo.nodes) o->nranks += static_cast<int>(n.gpus.size());
    } else {
      o->nranks = topo.nodes.empty() ? 1 : defaultRanks(topo.nodes[0]);
    }
  }
  if (o->ranksPerNode == 0) {
    o->ranksPerNode = topo.nodes.empty() ? 1 : std::min(defaultRanks(topo.nodes[0]), o->nranks);
  }
}

// nccl-tests' busbw factor: what a rank's link must carry relative to S.
double busBwFactor(Collective c, int n) {
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kBroadcast:
      return 1.0;
    default:
      return static_cast<double>(n - 1) / n;  // all-gather, reduce-scatter, all-to-all
  }
}

std::string sizeText(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

void printTable(Collective c, const braid::CostInputs& in) {
  std::printf("# %s, %d ranks on %d nodes x %d\n", braid::algo::collectiveName(c), in.nranks,
              in.nodes, in.ranksPerNode);
  std::printf("#   %8s  %-18s %12s %12s\n", "size", "algorithm", "time(us)", "busbw(GB/s)");
  for (uint64_t bytes = 8; bytes <= (1ull << 30); bytes *= 8) {
    const auto ranked = braid::rankAlgorithms(c, bytes, in);
    if (ranked.empty() || std::isinf(ranked.front().second)) {
      std::printf("    %8s  %-18s %12s %12s\n", sizeText(bytes).c_str(), "-", "-", "-");
      continue;
    }
    const double us = ranked.front().second;
    const double busbw = busBwFactor(c, in.nranks) * static_cast<double>(bytes) / (us * 1e3);
    std::printf("    %8s  %-18s %12.2f %12.2f\n", sizeText(bytes).c_str(),
                braid::algo::algorithmName(ranked.front().first), us, busbw);
  }
}

// What device calls of GPU ranks on one node run (select/device_choice.h): the device
// windows' default 128 MiB windows and 4 MiB slots.
void printDeviceTable(Collective c, const std::vector<RankPlace>& places,
                      const braid::CostInputs& in) {
  bool oneDevice = true;
  for (const RankPlace& p : places) oneDevice = oneDevice && p.gpu == places[0].gpu;
  const braid::DeviceShape shape{in.nranks, oneDevice, size_t{64} << 20, size_t{4} << 20, -1};
  const braid::Selector selector(braid::AlgoPolicy::parse("").value(), in);
  std::printf("\n# %s on device memory (the device windows)\n", braid::algo::collectiveName(c));
  for (uint64_t bytes = 8; bytes <= (1ull << 30); bytes *= 8) {
    const uint64_t rankBytes = bytes / braid::modelBytes(c, 1, in.nranks);
    braid::Expected<braid::DeviceChoice> d =
        braid::chooseDeviceCall(c, std::max<uint64_t>(rankBytes, 1), shape, selector, true);
    if (!d.isOk()) continue;
    const double us = d.value().predictedUs;
    std::printf("    %8s  -> %-8s %-8s %12.2f %12.2f\n", sizeText(bytes).c_str(),
                braid::algo::algorithmName(d.value().algorithm),
                d.value().executor == braid::DeviceExecutor::kWindows ? "windows" : "lowered", us,
                busBwFactor(c, in.nranks) * static_cast<double>(bytes) / (us * 1e3));
  }
}

// The ranks the file recorded (a live communicator's dump) unless a layout is
// asked for, else the layout.
std::vector<RankPlace> placesFor(const Topology& topo, const Options& o, bool layoutAsked) {
  if (!topo.ranks.empty() && !layoutAsked) return topo.ranks;
  return blockPlaces(topo, o.nranks, o.ranksPerNode);
}

void printPaths(const Topology& topo, const std::vector<RankPlace>& places, bool recorded) {
  std::printf("\n# ranks (%s)\n", recorded ? "as the communicator placed them" : "a layout");
  for (const std::string& line : rankLines(topo, places)) std::printf("%s\n", line.c_str());
  const std::vector<std::string> lines = pathMatrixLines(topo, places);
  if (lines.empty()) {
    std::printf("\n# paths: %zu ranks make too wide a matrix; pick fewer with --nranks\n",
                places.size());
    return;
  }
  std::printf("\n# paths between %zu ranks, %s\n", places.size(), lines[0].c_str());
  for (size_t i = 1; i < lines.size(); ++i) std::printf("%s\n", lines[i].c_str());
}

void printTables(const Topology& topo, const std::vector<RankPlace>& places) {
  braid::CostInputs in = braid::costInputsFor(topo, places);
  const std::string tuningFile = braid::envString("BRAID_TUNING_FILE");
  if (!tuningFile.empty()) {
    braid::Expected<braid::Tuning> tuning = braid::Tuning::load(tuningFile);
    if (!tuning.isOk()) {
      std::fprintf(stderr, "braid-topo: %s\n", tuning.status().message().c_str());
    } else {
      const std::string transports = braid::envString("BRAID_TRANSPORTS");
      in = braid::applyTuning(std::move(in), tuning.value(),
                              transports.rfind("socket", 0) == 0 ? "socket" : "shm");
    }
  }
  std::printf("# cost model inputs (%s): intra %.2f us %.1f GB/s, inter %.2f us %.1f GB/s, "
              "base %.1f us\n\n", in.source.c_str(), in.intra.alphaUs, in.intra.gbps,
              in.inter.alphaUs, in.inter.gbps, in.baseUs);
  const Collective kinds[] = {Collective::kAllReduce, Collective::kAllGather,
                              Collective::kReduceScatter, Collective::kBroadcast,
                              Collective::kAllToAll};
  for (size_t i = 0; i < std::size(kinds); ++i) {
    if (i > 0) std::printf("\n");
    printTable(kinds[i], in);
  }
  // GPU ranks of one node: their device calls' choice too.
  const bool gpus =
      std::all_of(places.begin(), places.end(), [](const RankPlace& p) { return p.gpu >= 0; });
  if (!gpus || in.nodes != 1 || in.nranks < 2 || in.nranks > 8 || !in.fits.empty()) return;
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kBroadcast}) {
    printDeviceTable(c, places, in);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  if (!parseOptions(argc, argv, &opts)) return 2;
  if (opts.help) {
    std::printf("%s", kUsage);
    return 0;
  }
  braid::Expected<Topology> topo = loadOrDiscover();
  if (!topo.isOk()) {
    std::fprintf(stderr, "braid-topo: %s\n", topo.status().message().c_str());
    return 1;
  }
  const bool layoutAsked = opts.nranks > 0 || opts.ranksPerNode > 0;
  applyDefaults(topo.value(), &opts);
  const std::vector<RankPlace> places = placesFor(topo.value(), opts, layoutAsked);
  if (opts.table) {
    printTables(topo.value(), places);
    return 0;
  }
  for (const Node& n : topo.value().nodes) printNode(n);
  printPaths(topo.value(), places, !layoutAsked && !topo.value().ranks.empty());
  return 0;
}
