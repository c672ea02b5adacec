// The alpha-beta cost model against published figures. Sources:
//  - NCCL on a DGX H100 (8 x H100 SXM, NVLink 4 through NVSwitch): ring
//    all-reduce ~370 GB/s busbw at large sizes, all-gather ~350, reduce-scatter
//    ~360, 8 B all-reduce ~12.5-15 us (/work/shared/REFERENCE.md, "Published GPU
//    figures", which also gives NCCL's 8 B model: 6.6 us + 0.6 us per NVLink hop).
//  - Across nodes: one 400 Gb/s NDR NIC per GPU gives ~48 GB/s; all-to-all
//    across nodes gets about one NIC's worth (same section).
//  - Topology files: tests/data/topo/*.xml, whose comments cite their specs.
// busbw = algbw x factor as nccl-tests: 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather, reduce-scatter and all-to-all (S = the whole array for those).
// Caveat: the model's NVLink efficiency is calibrated on the 370 GB/s ring
// figure, so that check is one of consistency; the others are predictions.
#include "select/cost_model.h"

#include <gtest/gtest.h>

#include "tests/common/topo_files.h"

#include <cmath>
#include <fstream>
#include <optional>
#include <string>

#include "topo/xml.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

constexpr uint64_t kGiB = 1ull << 30;
constexpr double kTolerance = 0.15;  // issue 4: within 15% of each published figure

// A DGX H100 node (or several) built from the published figures directly, so
// these tests do not depend on costInputsFor: NVLink at NCCL's achieved 370 GB/s,
// 0.6 us per hop, 6.6 us per call; one 48 GB/s NIC per GPU, 2.7 us per network
// hop (NCCL src/graph/tuning.cc, hwLat NET ring LL).
CostInputs dgx(int nodes) {
  CostInputs in;
  in.ranksPerNode = 8;
  in.nodes = nodes;
  in.nranks = 8 * nodes;
  in.intra = {0.6, 370.0};
  in.inter = {2.7, 48.0};
  in.baseUs = 6.6;
  return in;
}

double busBwGBps(double factor, uint64_t bytes, double us) {
  return factor * static_cast<double>(bytes) / (us * 1e3);  // bytes/us / 1e3 = GB/s
}

void expectNear(double predicted, double published, const char* what) {
  EXPECT_NEAR(predicted, published, kTolerance * published) << what;
}

TEST(CostModel, DgxRingAllReduceBusBwAt1GiB) {
  const double us = predictUs(Algorithm::kRing, Collective::kAllReduce, kGiB, dgx(1));
  expectNear(busBwGBps(2.0 * 7 / 8, kGiB, us), 370.0, "ring all-reduce busbw, 8 x H100");
}

TEST(CostModel, DgxSmallAllReduceLatency) {
  // NCCL's 8-rank 8 B all-reduce is a ring (LL): 12.5-15 us published.
  const double us = predictUs(Algorithm::kRing, Collective::kAllReduce, 8, dgx(1));
  EXPECT_GE(us, 12.5 * (1 - kTolerance));
  EXPECT_LE(us, 15.0 * (1 + kTolerance));
}

TEST(CostModel, DgxAllGatherAndReduceScatterBusBw) {
  const double ag = predictUs(Algorithm::kRing, Collective::kAllGather, kGiB, dgx(1));
  const double rs = predictUs(Algorithm::kRing, Collective::kReduceScatter, kGiB, dgx(1));
  expectNear(busBwGBps(7.0 / 8, kGiB, ag), 350.0, "ring all-gather busbw");
  expectNear(busBwGBps(7.0 / 8, kGiB, rs), 360.0, "ring reduce-scatter busbw");
}

TEST(CostModel, TwoDgxNodesRunAtOneNicPerGpu) {
  const CostInputs in = dgx(2);
  const double ar = predictUs(Algorithm::kRing, Collective::kAllReduce, kGiB, in);
  expectNear(busBwGBps(2.0 * 15 / 16, kGiB, ar), 48.0, "16-rank ring all-reduce, per NIC");
  const double a2a = predictUs(Algorithm::kPairwise, Collective::kAllToAll, kGiB, in);
  expectNear(busBwGBps(15.0 / 16, kGiB, a2a), 48.0, "16-rank all-to-all, one NIC's worth");
}

TEST(CostModel, DgxRankingPicksLatencyAlgorithmSmallAndRingLarge) {
  const auto small = rankAlgorithms(Collective::kAllReduce, 8, dgx(1));
  ASSERT_FALSE(small.empty());
  const Algorithm s = small.front().first;
  EXPECT_TRUE(s == Algorithm::kTree || s == Algorithm::kHalvingDoubling || s == Algorithm::kDirect)
      << algo::algorithmName(s);
  const auto large = rankAlgorithms(Collective::kAllReduce, kGiB, dgx(1));
  ASSERT_FALSE(large.empty());
  EXPECT_EQ(large.front().first, Algorithm::kRing) << algo::algorithmName(large.front().first);
}

TEST(CostModel, RankingHoldsExactlyThePricedSupportingAlgorithmsFastestFirst) {
  const Collective all[] = {
      Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
      Collective::kBroadcast, Collective::kReduce,    Collective::kGather,
      Collective::kScatter,   Collective::kAllToAll,  Collective::kAllToAllv};
  for (Collective c : all) {
    for (int nodes : {1, 2}) {
      const auto ranked = rankAlgorithms(c, 1 << 20, dgx(nodes));
      int supported = 0;
      for (int i = 0; i < algo::kNumAlgorithms; ++i) {
        // Hierarchical is ranked only when the ranks span nodes.
        const auto a = static_cast<Algorithm>(i);
        const bool ranked = a != Algorithm::kHierarchical || nodes > 1;
        supported += algo::supports(a, c) && ranked ? 1 : 0;
      }
      EXPECT_EQ(static_cast<int>(ranked.size()), supported);
      for (size_t i = 0; i < ranked.size(); ++i) {
        EXPECT_TRUE(algo::supports(ranked[i].first, c));
        EXPECT_TRUE(std::isfinite(ranked[i].second) && ranked[i].second > 0);
        if (i > 0) {
          EXPECT_LE(ranked[i - 1].second, ranked[i].second);
        }
      }
    }
  }
  EXPECT_TRUE(std::isinf(predictUs(Algorithm::kLinear, Collective::kAllReduce, 8, dgx(1))));
}

// ---------------------------------------------------------------- from topology files


TEST(CostInputsFor, DgxH100File) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile("dgx_h100.xml", &why);
  if (!t) GTEST_SKIP() << why;
  // 450 GB/s NVLink 4 derated to NCCL's ~370; 8 x 400 Gb/s NICs, one per GPU.
  CostInputs in = costInputsFor(*t, 8, 8);
  EXPECT_EQ(in.nodes, 1);
  expectNear(in.intra.gbps, 370.0, "NVLink per GPU");
  EXPECT_DOUBLE_EQ(in.intra.alphaUs, 0.6);  // per NVLink hop
  EXPECT_DOUBLE_EQ(in.baseUs, 6.6);         // per call
  in = costInputsFor(*t, 16, 8);
  EXPECT_EQ(in.nodes, 2);
  EXPECT_EQ(in.ranksPerNode, 8);
  expectNear(in.inter.gbps, 48.0, "one NDR NIC per GPU");
  const double us = predictUs(Algorithm::kRing, Collective::kAllReduce, kGiB, in);
  expectNear(busBwGBps(2.0 * 15 / 16, kGiB, us), 48.0, "2 x DGX ring all-reduce per NIC");
  const auto small = rankAlgorithms(Collective::kAllReduce, 8, costInputsFor(*t, 8, 8));
  EXPECT_NE(small.front().first, Algorithm::kRing);
}

TEST(CostInputsFor, PcieServerUsesPcieNotNvlink) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile("pcie_8gpu.xml", &why);
  if (!t) GTEST_SKIP() << why;
  // Four GPUs under one switch: A100 PCIe at Gen4 x16 is 31.5 GB/s nominal;
  // achieved must be below it and far below any NVLink figure.
  CostInputs in = costInputsFor(*t, 4, 4);
  EXPECT_GT(in.intra.gbps, 0.5 * 31.5);
  EXPECT_LT(in.intra.gbps, 31.5);
  EXPECT_GT(in.intra.alphaUs, 0.6);  // a PCIe hop is slower than an NVLink hop
  // All eight: the worst pair crosses the sockets, at NCCL's 10 GB/s UPI figure.
  in = costInputsFor(*t, 8, 8);
  EXPECT_DOUBLE_EQ(in.intra.gbps, 10.0);
  // 2 x 100 Gb/s Ethernet, one per socket, each shared by its 4 GPUs:
  // 100 / 8 / 4 = 3.125 GB/s at most.
  EXPECT_GT(in.inter.gbps, 0.0);
  EXPECT_LE(in.inter.gbps, 3.125);
}

// Ranks on one GPU take turns on it: a barrier costs a turn of each other rank's context
// (175 us per small call at 2 ranks, 527-540 us at 4: the H200 run in CHANGELOG), and each
// rank gets its share of the GPU's memory (H100 HBM3, 3,350 GB/s).
TEST(CostInputsFor, RanksSharingOneGpuTakeTurns) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile("dgx_h100.xml", &why);
  ASSERT_TRUE(t.has_value()) << why;
  for (int n : {2, 4}) {
    std::vector<topo::RankPlace> places(static_cast<size_t>(n));
    for (topo::RankPlace& p : places) p.gpu = 3;
    const CostInputs in = costInputsFor(*t, places);
    EXPECT_NEAR(in.intra.alphaUs, n == 2 ? 175.0 : 530.0, 0.02 * 530.0) << n;
    EXPECT_DOUBLE_EQ(in.intra.gbps, 3350.0 / n) << n;
    const CostInputs unplaced = oneGpuInputs(n);
    EXPECT_DOUBLE_EQ(unplaced.intra.alphaUs, in.intra.alphaUs);
    EXPECT_DOUBLE_EQ(unplaced.intra.gbps, in.intra.gbps);
  }
  // Two ranks on each of two GPUs: the shared GPU is the worst link.
  std::vector<topo::RankPlace> pairs(4);
  for (int r = 0; r < 4; ++r) pairs[static_cast<size_t>(r)].gpu = r / 2;
  EXPECT_NEAR(costInputsFor(*t, pairs).intra.alphaUs, 175.0, 1e-9);
}

TEST(CostInputsFor, VmHostRanksUseSharedMemory) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile("vm_2core.xml", &why);
  if (!t) GTEST_SKIP() << why;
  // REFERENCE, this VM: cross-core spin 0.17 us; same-core hand-off 0.8 us once
  // ranks outnumber the 2 cores; one core copies 24-29 GB/s; no GPU launch.
  CostInputs in = costInputsFor(*t, 2, 2);
  EXPECT_DOUBLE_EQ(in.intra.alphaUs, 0.17);
  EXPECT_GE(in.intra.gbps, 24.0 * (1 - kTolerance));
  EXPECT_LE(in.intra.gbps, 29.0 * (1 + kTolerance));
  EXPECT_EQ(in.baseUs, 0.0);
  in = costInputsFor(*t, 4, 4);
  EXPECT_DOUBLE_EQ(in.intra.alphaUs, 0.8);
  // eth0 reports no speed: TCP's one-stream 5.8 GB/s stands in.
  in = costInputsFor(*t, 4, 2);
  EXPECT_EQ(in.nodes, 2);
  EXPECT_DOUBLE_EQ(in.inter.gbps, 5.8);
}

// Host ranks of one node with shared windows (exec/host/shared_windows.h): the window
// reduce-scatter reads peers' blocks in place, one copy per block less than the
// FIFO ring; measured on the VM at 2 and 4 ranks it won from 64 KiB (5 against
// 18 us at 2 ranks), so the model must rank it first there. Two-shot all-reduce
// moves less memory than one-shot at any rank count and won at 16 MiB. Reduce: the
// other ranks put their input in a line or window and go on, the root reads them all;
// measured against tree and ring (reduce_perf, -a 3, interleaved) it led in a header
// line (8 B: 0.24 against 0.39 us at 2 ranks, 0.77 against 4.0 at 4) and from 64 KiB at
// 2 ranks (16 MiB 2.5 against 4.2 ms), and trailed between (512 B: 0.57 against 0.46 us
// at 2 ranks, 5.1 against 4.3 at 4) and above a line at 4 ranks on 2 cores. Over FIFOs
// its root takes n - 1 messages one by one: not first.
TEST(CostModel, SharedWindowsRankTheWindowAlgorithmsFirstOnOneNode) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile("vm_2core.xml", &why);
  if (!t) GTEST_SKIP() << why;
  for (int n : {2, 4}) {
    CostInputs in = costInputsFor(*t, n, n);
    in.sharedWindows = true;
    for (uint64_t bytes : {uint64_t{64} << 10, uint64_t{1} << 20, uint64_t{64} << 20}) {
      const auto ranked = rankAlgorithms(Collective::kReduceScatter, bytes, in);
      ASSERT_FALSE(ranked.empty());
      EXPECT_EQ(ranked[0].first, Algorithm::kDirect) << n << " ranks, " << bytes << " bytes";
    }
    // All-reduce: one-shot for one line, two-shot (less memory traffic) when large.
    EXPECT_EQ(rankAlgorithms(Collective::kAllReduce, 8, in)[0].first, Algorithm::kDirect)
        << n << " ranks";
    EXPECT_EQ(rankAlgorithms(Collective::kAllReduce, uint64_t{16} << 20, in)[0].first,
              Algorithm::kTwoShot)
        << n << " ranks";
    in.windowLineBytes = 56;  // as the host windows' lines
    for (uint64_t bytes : {uint64_t{8}, uint64_t{512}, uint64_t{64} << 10, uint64_t{16} << 20}) {
      const bool direct = bytes <= in.windowLineBytes || (n == 2 && bytes >= (64 << 10));
      EXPECT_EQ(rankAlgorithms(Collective::kReduce, bytes, in)[0].first == Algorithm::kDirect,
                direct)
          << "reduce, " << n << " ranks, " << bytes << " bytes";
    }
    in.sharedWindows = false;  // FIFOs only: direct posts n - 1 messages, ring wins large
    const auto fifo = rankAlgorithms(Collective::kReduceScatter, uint64_t{64} << 20, in);
    ASSERT_FALSE(fifo.empty());
    EXPECT_NE(fifo[0].first, Algorithm::kDirect) << n << " ranks without windows";
    EXPECT_NE(rankAlgorithms(Collective::kReduce, 8, in)[0].first, Algorithm::kDirect)
        << "reduce, " << n << " ranks without windows";
  }
}

// The single-copy threshold is where one read (latency + b / read GB/s) costs what
// the two copies it replaces do (2 b / memcpy GB/s), worked out by hand here: 2 us
// latency, both at 10 GB/s (1e4 bytes/us): 2 / (2e-4 - 1e-4) = 20000 bytes. A read
// no faster than half a copy never wins.
TEST(CostModel, SingleCopyPaysFromWhereTheReadBeatsTheFifosCopies) {
  SingleCopyProbe p;
  p.latencyUs = 2;
  p.gbps = 10;
  p.copyGBps = 10;
  EXPECT_EQ(singleCopyMinBytes(p), 20000u);
  p.latencyUs = 4;  // twice the latency, twice the bytes to pay it back
  EXPECT_EQ(singleCopyMinBytes(p), 40000u);
  p.gbps = 5;  // 1 / 5 = 2 / 10: never cheaper
  EXPECT_EQ(singleCopyMinBytes(p), UINT64_MAX);
  p.gbps = 0;  // no figure
  EXPECT_EQ(singleCopyMinBytes(p), UINT64_MAX);
}

}  // namespace
}  // namespace braid
