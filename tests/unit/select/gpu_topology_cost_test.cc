// The cost model over topologies built the way a live communicator builds them:
// each node's description as hwloc gives it (the shipped files without their
// NVLink figures), NVLink from NVML (the fake library answering as a DGX H100 or
// a PCIe server), every rank's place as the bus id CUDA reports for its device,
// merged like the views ranks exchange at init (topo/view.h). The selector must
// choose, and predict, what cost_model_test.cc asserts against NCCL's published
// figures (/work/shared/REFERENCE.md, "Published GPU figures": DGX H100 ring
// all-reduce ~370 GB/s busbw, all-gather ~350, reduce-scatter ~360, 8 B
// all-reduce 12.5-15 us; one 400 Gb/s NIC per GPU ~48 GB/s), within 15%.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "select/cost_model.h"
#include "select/select.h"
#include "tests/common/topo_files.h"
#include "topo/nvml.h"
#include "topo/paths.h"
#include "topo/view.h"
#include "topo/xml.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

constexpr uint64_t kGiB = 1ull << 30;
constexpr double kTolerance = 0.15;

double busBwGBps(double factor, uint64_t bytes, double us) {
  return factor * static_cast<double>(bytes) / (us * 1e3);
}

// CUDA writes bus ids upper case ("0000:1B:00.0").
std::string asCuda(std::string busId) {
  for (char& c : busId) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return busId;
}

struct Live {
  topo::Topology file;          // the shipped file, NVLink included
  topo::MergedTopology merged;  // what the communicator's ranks agree on
};

// `nodes` nodes of `perNode` ranks, rank i of a node on GPU i, each node
// described by hwloc's part of `fileName` and NVML's answer for `machine`.
Live build(const char* fileName, const char* machine, int nodes, int perNode) {
  Live live;
  std::string why;
  std::optional<topo::Topology> file = test::loadTopoFile(fileName, &why);
  EXPECT_TRUE(file.has_value()) << why;
  if (!file) return live;
  live.file = *file;
  topo::Topology described;
  described.nodes.push_back(file->nodes[0]);
  for (topo::Gpu& g : described.nodes[0].gpus) g.nvlinkGBps = 0;  // hwloc has no NVLink figure
  setenv("BRAID_FAKE_NVML", machine, 1);
  const topo::NvmlReport nvml = topo::readNvml(BRAID_FAKE_NVML_PATH);
  EXPECT_EQ(nvml.missing, "");
  topo::applyNvml(nvml, &described.nodes[0]);
  const std::string blob = topo::toXml(described);
  std::vector<topo::RankView> views;
  for (int r = 0; r < nodes * perNode; ++r) {
    const topo::Gpu& g = described.nodes[0].gpus[r % perNode];
    const std::string host = "node" + std::to_string(r / perNode);
    views.push_back({r / perNode, host + "/boot", host, topo::placeString(g.numa, asCuda(g.busId)),
                     r % perNode == 0 ? blob : ""});
  }
  unsetenv("BRAID_TOPO_FILE");
  Expected<topo::MergedTopology> merged = topo::mergeViews(views, 1);
  EXPECT_TRUE(merged.isOk()) << merged.status().message();
  if (merged.isOk()) live.merged = merged.value();
  return live;
}

void expectNear(double predicted, double published, const char* what) {
  EXPECT_NEAR(predicted, published, kTolerance * published) << what;
}

// Every collective and size from 8 B to 1 GiB: the same choice and time as the
// shipped file's.
void expectSameChoices(const CostInputs& live, const CostInputs& file) {
  const Collective kinds[] = {Collective::kAllReduce, Collective::kAllGather,
                              Collective::kReduceScatter, Collective::kBroadcast,
                              Collective::kAllToAll};
  for (Collective c : kinds) {
    for (uint64_t bytes = 8; bytes <= kGiB; bytes *= 8) {
      const auto a = rankAlgorithms(c, bytes, live);
      const auto b = rankAlgorithms(c, bytes, file);
      ASSERT_FALSE(a.empty());
      ASSERT_FALSE(b.empty());
      EXPECT_EQ(a.front().first, b.front().first) << algo::collectiveName(c) << " " << bytes;
      EXPECT_NEAR(a.front().second, b.front().second, 1e-9 * b.front().second);
    }
  }
}

TEST(LiveGpuTopology, DgxRanksSitOnTheirGpusOverNvlink) {
  const Live live = build("dgx_h100.xml", "dgx_h100", 2, 8);
  ASSERT_EQ(live.merged.places.size(), 16u);
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(live.merged.places[r].gpu, r % 8) << "rank " << r;
    EXPECT_EQ(live.merged.places[r].node, r / 8) << "rank " << r;
  }
  const topo::PathMatrix m = topo::pathMatrix(live.merged.topology, live.merged.places);
  EXPECT_EQ(m.at(0, 7).type, topo::LinkType::kNvlink);
  EXPECT_DOUBLE_EQ(m.at(0, 7).bandwidthGBps, 450.0);
  EXPECT_EQ(m.at(3, 11).type, topo::LinkType::kNetwork);
  EXPECT_DOUBLE_EQ(m.at(3, 11).bandwidthGBps, 50.0);  // its own 400 Gb/s NIC
}

TEST(LiveGpuTopology, DgxPredictionsMatchNcclsPublishedFigures) {
  const Live live = build("dgx_h100.xml", "dgx_h100", 1, 8);
  ASSERT_EQ(live.merged.places.size(), 8u);
  const CostInputs in = costInputsFor(live.merged.topology, live.merged.places);
  const double ar = predictUs(Algorithm::kRing, Collective::kAllReduce, kGiB, in);
  expectNear(busBwGBps(2.0 * 7 / 8, kGiB, ar), 370.0, "ring all-reduce busbw, 8 x H100");
  const double ag = predictUs(Algorithm::kRing, Collective::kAllGather, kGiB, in);
  expectNear(busBwGBps(7.0 / 8, kGiB, ag), 350.0, "ring all-gather busbw");
  const double rs = predictUs(Algorithm::kRing, Collective::kReduceScatter, kGiB, in);
  expectNear(busBwGBps(7.0 / 8, kGiB, rs), 360.0, "ring reduce-scatter busbw");
  const double small = predictUs(Algorithm::kRing, Collective::kAllReduce, 8, in);
  EXPECT_GE(small, 12.5 * (1 - kTolerance));
  EXPECT_LE(small, 15.0 * (1 + kTolerance));
  // The selector: a latency algorithm for 8 B, the ring (its busbw) at 1 GiB.
  Expected<AlgoPolicy> policy = AlgoPolicy::parse("");
  ASSERT_TRUE(policy.isOk());
  const Selector selector(policy.value(), in);
  Expected<Selector::Choice> tiny = selector.choose(Collective::kAllReduce, 8);
  ASSERT_TRUE(tiny.isOk());
  EXPECT_NE(tiny.value().algorithm, Algorithm::kRing);
  Expected<Selector::Choice> large = selector.choose(Collective::kAllReduce, kGiB);
  ASSERT_TRUE(large.isOk());
  EXPECT_EQ(large.value().algorithm, Algorithm::kRing);
  expectNear(busBwGBps(2.0 * 7 / 8, kGiB, large.value().predictedUs), 370.0, "chosen, 1 GiB");
  expectSameChoices(in, costInputsFor(live.file, 8, 8));
}

TEST(LiveGpuTopology, TwoDgxNodesRunAtOneNicPerGpu) {
  const Live live = build("dgx_h100.xml", "dgx_h100", 2, 8);
  const CostInputs in = costInputsFor(live.merged.topology, live.merged.places);
  EXPECT_EQ(in.nodes, 2);
  const double ar = predictUs(Algorithm::kRing, Collective::kAllReduce, kGiB, in);
  expectNear(busBwGBps(2.0 * 15 / 16, kGiB, ar), 48.0, "16-rank ring all-reduce, per NIC");
  const double a2a = predictUs(Algorithm::kPairwise, Collective::kAllToAll, kGiB, in);
  expectNear(busBwGBps(15.0 / 16, kGiB, a2a), 48.0, "16-rank all-to-all, one NIC's worth");
  expectSameChoices(in, costInputsFor(live.file, 16, 8));
}

TEST(LiveGpuTopology, PcieServerPricesPcieAndTheSocketLink) {
  Live live = build("pcie_8gpu.xml", "pcie_8gpu", 1, 8);
  ASSERT_EQ(live.merged.places.size(), 8u);
  // Four GPUs under one switch: below A100 PCIe's nominal 31.5 GB/s, above half.
  std::vector<topo::RankPlace> four(live.merged.places.begin(), live.merged.places.begin() + 4);
  CostInputs in = costInputsFor(live.merged.topology, four);
  EXPECT_GT(in.intra.gbps, 0.5 * 31.5);
  EXPECT_LT(in.intra.gbps, 31.5);
  EXPECT_GT(in.intra.alphaUs, 0.6);  // a PCIe hop, slower than an NVLink one
  expectSameChoices(in, costInputsFor(live.file, 4, 4));
  // All eight: the worst pair crosses the sockets at NCCL's 10 GB/s UPI figure.
  in = costInputsFor(live.merged.topology, live.merged.places);
  EXPECT_DOUBLE_EQ(in.intra.gbps, 10.0);
  expectSameChoices(in, costInputsFor(live.file, 8, 8));
  // Two servers: 2 x 100 Gb/s Ethernet, each shared by 4 GPUs, 3.125 GB/s at most.
  live = build("pcie_8gpu.xml", "pcie_8gpu", 2, 8);
  in = costInputsFor(live.merged.topology, live.merged.places);
  EXPECT_GT(in.inter.gbps, 0.0);
  EXPECT_LE(in.inter.gbps, 3.125);
  expectSameChoices(in, costInputsFor(live.file, 16, 8));
}

// NVLink bridges between pairs lift the pairs' path, not the whole server's
// (the worst pair still crosses the sockets).
TEST(LiveGpuTopology, BridgedPairsSpeedUpTwoRanksOnly) {
  const Live live = build("pcie_8gpu.xml", "pcie_pairs", 1, 8);
  std::vector<topo::RankPlace> pair(live.merged.places.begin(), live.merged.places.begin() + 2);
  const CostInputs bridged = costInputsFor(live.merged.topology, pair);
  const CostInputs plain = costInputsFor(live.file, 2, 2);
  EXPECT_GT(bridged.intra.gbps, 5 * plain.intra.gbps);  // 300 GB/s NVLink against 31.5 PCIe
  const CostInputs all = costInputsFor(live.merged.topology, live.merged.places);
  EXPECT_DOUBLE_EQ(all.intra.gbps, 10.0);
}

}  // namespace
}  // namespace braid
