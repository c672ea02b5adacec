// The device path's choice (select/device_choice.h) over the shipped DGX H100 and PCIe
// 8-GPU servers: where a call fits one window round and one slot per step, it is the
// cost model's own fastest algorithm (rankAlgorithms, whose figures cost_model_test and
// gpu_topology_cost_test hold to NCCL's published ones), run by the executor that
// implements it; larger calls pay the windows' rounds; ranks sharing one GPU keep the
// windows' one-shot (CHANGELOG's measured H200 runs); the overrides still decide. A
// loaded algorithm runs lowered: forced by BRAID_ALGO where it serves the call (else the
// error says why), and chosen by the model exactly where its walk is the cheapest.
#include "select/device_choice.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "select/cost_model.h"
#include "tests/common/file_programs.h"
#include "tests/common/topo_files.h"
#include "topo/paths.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

DeviceShape windows(int nranks, bool oneDevice = false) {
  return {nranks, oneDevice, static_cast<size_t>(64 * kMiB), static_cast<size_t>(4 * kMiB), -1};
}

Selector selectorFor(const CostInputs& in, const char* algo = "") {
  Expected<AlgoPolicy> policy = AlgoPolicy::parse(algo);
  EXPECT_TRUE(policy.isOk());
  return Selector(policy.value(), in);
}

CostInputs fileInputs(const char* name, int nranks) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile(name, &why);
  EXPECT_TRUE(t.has_value()) << why;
  return t ? costInputsFor(*t, nranks, nranks) : CostInputs{};
}

DeviceChoice choose(Collective c, uint64_t bytes, const DeviceShape& shape, const Selector& s,
                    bool figures = true) {
  Expected<DeviceChoice> choice = chooseDeviceCall(c, bytes, shape, s, figures);
  EXPECT_TRUE(choice.isOk()) << choice.status().message();
  return choice.isOk() ? choice.value() : DeviceChoice{};
}

// The windows run the model's direct and two-shot; every other algorithm is lowered.
DeviceExecutor executorOf(Algorithm a) {
  return a == Algorithm::kDirect || a == Algorithm::kTwoShot ? DeviceExecutor::kWindows
                                                             : DeviceExecutor::kLowered;
}

double allReduceBusBw(uint64_t bytes, int n, double us) {
  return 2.0 * (n - 1) / n * static_cast<double>(bytes) / (us * 1e3);
}

// For every size whose best fits one round and one slot per step: the model's fastest,
// on the executor that runs it, at the model's time.
void expectModelChoices(const CostInputs& in, const DeviceShape& shape, uint64_t upTo) {
  const Selector s = selectorFor(in);
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kBroadcast}) {
    for (uint64_t bytes = 8; bytes <= upTo; bytes *= 4) {
      const uint64_t S = modelBytes(c, bytes, shape.nranks);
      const auto ranked = rankAlgorithms(c, S, in);
      ASSERT_FALSE(ranked.empty());
      const AlgoShape f = algorithmShape(ranked.front().first, c, shape.nranks);
      if (S > shape.halfBytes || f.traffic * S > f.steps * shape.slotBytes) continue;
      const DeviceChoice d = choose(c, bytes, shape, s);
      EXPECT_EQ(d.algorithm, ranked.front().first) << algo::collectiveName(c) << " " << bytes;
      EXPECT_EQ(d.executor, executorOf(ranked.front().first)) << bytes;
      EXPECT_NEAR(d.predictedUs, ranked.front().second, 1e-9 * ranked.front().second) << bytes;
      EXPECT_STREQ(d.why, "cost model");
    }
  }
}

void printTable(const char* what, const CostInputs& in, const DeviceShape& shape) {
  const Selector s = selectorFor(in);
  for (uint64_t bytes = 8; bytes <= kGiB; bytes *= 8) {
    const DeviceChoice d = choose(Collective::kAllReduce, bytes, shape, s);
    std::printf("%s all-reduce %10llu B: %-16s %-8s %9.1f us busbw %7.2f GB/s\n", what,
                static_cast<unsigned long long>(bytes), algo::algorithmName(d.algorithm),
                d.executor == DeviceExecutor::kWindows ? "windows" : "lowered", d.predictedUs,
                allReduceBusBw(bytes, shape.nranks, d.predictedUs));
  }
}

TEST(DeviceChoice, DgxH100RunsWhatTheCostModelRanksFirst) {
  const CostInputs in = fileInputs("dgx_h100.xml", 8);
  printTable("dgx_h100", in, windows(8));
  expectModelChoices(in, windows(8), 16 * kMiB);
  const Selector s = selectorFor(in);
  const auto at = [&](uint64_t bytes) {
    return choose(Collective::kAllReduce, bytes, windows(8), s);
  };
  EXPECT_EQ(at(8 * kKiB).algorithm, Algorithm::kDirect);
  EXPECT_EQ(at(256 * kKiB).algorithm, Algorithm::kTwoShot);
  EXPECT_EQ(at(256 * kKiB).executor, DeviceExecutor::kWindows);
  EXPECT_EQ(at(4 * kMiB).algorithm, Algorithm::kTree);
  EXPECT_EQ(at(4 * kMiB).executor, DeviceExecutor::kLowered);
  EXPECT_EQ(at(16 * kMiB).algorithm, Algorithm::kRing);
  // INFO's ranking names the choice first, then the rest.
  const std::string ranking =
      explainDeviceCall(Collective::kAllReduce, 4 * kMiB, windows(8), s, true);
  EXPECT_EQ(ranking.rfind("tree (lowered) ", 0), 0u) << ranking;
  EXPECT_NE(ranking.find("two_shot (windows)"), std::string::npos) << ranking;
  // NCCL's ~370 GB/s ring busbw on 8 H100s (REFERENCE), within 15%, through 4 MiB slots.
  const DeviceChoice large = at(kGiB);
  EXPECT_EQ(large.algorithm, Algorithm::kRing);
  EXPECT_NEAR(allReduceBusBw(kGiB, 8, large.predictedUs), 370.0, 0.15 * 370.0);
  // A small call costs less than NCCL's 12.5-15 us ring latency: one barrier.
  EXPECT_LT(at(8).predictedUs, 15.0);
}

TEST(DeviceChoice, PcieServerRunsWhatTheCostModelRanksFirst) {
  const CostInputs in = fileInputs("pcie_8gpu.xml", 8);
  printTable("pcie_8gpu", in, windows(8));
  expectModelChoices(in, windows(8), 16 * kMiB);
  const Selector s = selectorFor(in);
  const auto at = [&](uint64_t bytes) {
    return choose(Collective::kAllReduce, bytes, windows(8), s);
  };
  EXPECT_EQ(at(512).algorithm, Algorithm::kDirect);
  EXPECT_EQ(at(32 * kKiB).algorithm, Algorithm::kTwoShot);
  EXPECT_EQ(at(kMiB).algorithm, Algorithm::kRing);
  // The worst pair crosses the sockets at 10 GB/s: a ring's busbw is bounded by it.
  EXPECT_LT(allReduceBusBw(kGiB, 8, at(kGiB).predictedUs), 10.0);
  EXPECT_GT(allReduceBusBw(kGiB, 8, at(kGiB).predictedUs), 0.85 * 10.0);
  // Four GPUs under one switch share the link at PCIe's rate.
  const CostInputs four = fileInputs("pcie_8gpu.xml", 4);
  printTable("pcie_4gpu", four, windows(4));
  expectModelChoices(four, windows(4), 16 * kMiB);
}

// Ranks on one GPU take turns on it: each barrier costs a turn of every other rank's
// context, so one-shot, with one barrier per round, wins at every size, as measured.
TEST(DeviceChoice, RanksSharingOneGpuKeepOneShot) {
  std::string why;
  const std::optional<topo::Topology> t = test::loadTopoFile("dgx_h100.xml", &why);
  ASSERT_TRUE(t.has_value()) << why;
  for (int n : {2, 3, 4, 8}) {
    std::vector<topo::RankPlace> places(static_cast<size_t>(n));
    for (topo::RankPlace& p : places) p.gpu = 0;
    const CostInputs in = costInputsFor(*t, places);
    EXPECT_GE(in.intra.alphaUs, 100.0 * (n - 1));
    const Selector s = selectorFor(in);
    const Selector none = selectorFor(CostInputs{});
    for (uint64_t bytes = 8; bytes <= kGiB; bytes *= 4) {
      for (Collective c : {Collective::kAllReduce, Collective::kAllGather,
                           Collective::kReduceScatter, Collective::kBroadcast}) {
        const DeviceChoice placed = choose(c, bytes, windows(n, true), s);
        EXPECT_EQ(placed.algorithm, Algorithm::kDirect) << n << " " << bytes;
        EXPECT_EQ(placed.executor, DeviceExecutor::kWindows);
        // Without a topology placing them, the windows' shared GPU says the same.
        const DeviceChoice unplaced = choose(c, bytes, windows(n, true), none, false);
        EXPECT_EQ(unplaced.algorithm, Algorithm::kDirect) << n << " " << bytes;
        EXPECT_GT(unplaced.predictedUs, 0.0);
      }
    }
  }
}

TEST(DeviceChoice, LargeCallsPayTheWindowsRounds) {
  const CostInputs in = fileInputs("dgx_h100.xml", 8);
  const Selector s = selectorFor(in);
  DeviceShape small = windows(8);
  small.halfBytes = kMiB;  // as on windows a send/recv made (2 MiB)
  const DeviceChoice d = choose(Collective::kAllReduce, 2 * kMiB, small, s);
  // Two-shot would take 2 rounds of 2 barriers each; in 64 MiB halves it wins.
  EXPECT_EQ(choose(Collective::kAllReduce, 2 * kMiB, windows(8), s).algorithm, Algorithm::kTwoShot);
  EXPECT_EQ(d.executor, DeviceExecutor::kLowered) << describeDeviceChoice(d);
  const DeviceChoice one =
      choose(Collective::kAllReduce, 3 * kMiB, windows(8, true), selectorFor(CostInputs{}), false);
  EXPECT_EQ(one.rounds, 1u);
  const DeviceChoice three =
      choose(Collective::kAllReduce, 3 * kMiB, small, selectorFor(CostInputs{}), false);
  EXPECT_EQ(three.rounds, 3u);  // ceil(3 MiB / 1 MiB)
  EXPECT_EQ(three.roundBytes, kMiB);
}

TEST(DeviceChoice, OverridesDecide) {
  const CostInputs in = fileInputs("dgx_h100.xml", 8);
  // BRAID_CUDA_TWO_SHOT_BYTES: two-shot from it (3+ ranks) on the windows, even on one GPU.
  DeviceShape forced = windows(4, true);
  forced.twoShotBytes = 0;
  const Selector none = selectorFor(CostInputs{});
  EXPECT_EQ(choose(Collective::kAllReduce, 8, forced, none, false).algorithm, Algorithm::kTwoShot);
  forced.twoShotBytes = static_cast<int64_t>(kMiB);
  EXPECT_EQ(choose(Collective::kAllReduce, kMiB - 4, forced, none, false).algorithm,
            Algorithm::kDirect);
  const DeviceChoice big = choose(Collective::kAllReduce, kGiB, forced, selectorFor(in));
  EXPECT_EQ(big.algorithm, Algorithm::kTwoShot);
  EXPECT_STREQ(big.why, "BRAID_CUDA_TWO_SHOT_BYTES");
  forced.nranks = 2;
  EXPECT_EQ(choose(Collective::kAllReduce, kGiB, forced, none, false).algorithm,
            Algorithm::kDirect);
  // BRAID_ALGO naming an algorithm: its schedule, lowered (direct included).
  for (const char* spec : {"ring", "allreduce:direct"}) {
    const DeviceChoice d = choose(Collective::kAllReduce, 8, windows(8), selectorFor(in, spec));
    EXPECT_EQ(d.executor, DeviceExecutor::kLowered) << spec;
    EXPECT_STREQ(d.why, "BRAID_ALGO");
    EXPECT_EQ(explainDeviceCall(Collective::kAllReduce, 8, windows(8), selectorFor(in, spec), true),
              "");
  }
  // An exclusion leaves the model the rest: at 4 MiB without the tree, the next best.
  const DeviceChoice noTree =
      choose(Collective::kAllReduce, 4 * kMiB, windows(8), selectorFor(in, "^tree"));
  EXPECT_NE(noTree.algorithm, Algorithm::kTree);
  EXPECT_GT(noTree.predictedUs,
            choose(Collective::kAllReduce, 4 * kMiB, windows(8), selectorFor(in)).predictedUs);
  // All-to-all-v is only lowered; gather, scatter and all-to-all stay on the windows.
  EXPECT_EQ(choose(Collective::kAllToAllv, kMiB, windows(8), selectorFor(in)).algorithm,
            Algorithm::kPairwise);
  EXPECT_EQ(choose(Collective::kAllToAll, kMiB, windows(8), selectorFor(in)).executor,
            DeviceExecutor::kWindows);
  EXPECT_EQ(choose(Collective::kGather, kGiB, windows(8), selectorFor(in)).executor,
            DeviceExecutor::kWindows);
}

// Ranks on several GPUs the topology does not place: one-shot, two-shot from 1 MiB.
TEST(DeviceChoice, WithoutGpuFiguresTheConstantRuleHolds) {
  const Selector none = selectorFor(CostInputs{});
  for (int n : {2, 3, 8}) {
    EXPECT_EQ(choose(Collective::kAllReduce, kMiB - 4, windows(n), none, false).algorithm,
              Algorithm::kDirect);
    EXPECT_EQ(choose(Collective::kAllReduce, kMiB, windows(n), none, false).algorithm,
              n >= 3 ? Algorithm::kTwoShot : Algorithm::kDirect);
    EXPECT_EQ(choose(Collective::kAllGather, kGiB, windows(n), none, false).executor,
              DeviceExecutor::kWindows);
  }
}

// BRAID_ALGO naming a loaded algorithm: its schedule, lowered, where it serves the call;
// else an error naming why (size, mode, or a program the device cannot lower), or the
// rule's built-in where it lists one.
TEST(DeviceChoice, BraidAlgoForcesALoadedAlgorithmLoweredOrSaysWhyNot) {
  auto file =
      std::make_shared<algo::AlgoFile>(test::allReduceFile("grid", test::gridAllReduce(2, 2)));
  file->sizes = algo::SizeRange{0, true, 1 << 20, true};
  file->inPlace = false;
  Selector sel = selectorFor(CostInputs{}, "allreduce:grid");
  sel.addUserAlgorithm(file);
  CallFit fit;
  fit.dtype = "float32";
  fit.op = "sum";
  for (bool figures : {false, true}) {
    Expected<DeviceChoice> d =
        chooseDeviceCall(Collective::kAllReduce, 1024, windows(4), sel, figures, &fit);
    ASSERT_TRUE(d.isOk()) << d.status().message();
    EXPECT_EQ(d.value().user, file.get());
    EXPECT_EQ(d.value().executor, DeviceExecutor::kLowered);
    EXPECT_STREQ(d.value().why, "BRAID_ALGO");
    EXPECT_STREQ(d.value().name(), "grid");
    EXPECT_NE(describeDeviceChoice(d.value()).find("grid (loaded) lowered"), std::string::npos);
  }
  Expected<DeviceChoice> big =
      chooseDeviceCall(Collective::kAllReduce, 2 << 20, windows(4), sel, false, &fit);
  ASSERT_FALSE(big.isOk());
  EXPECT_NE(big.status().message().find("grid: its sizes are [0, 1048576]"), std::string::npos)
      << big.status().message();
  fit.inPlace = true;
  Expected<DeviceChoice> inPlace =
      chooseDeviceCall(Collective::kAllReduce, 1024, windows(4), sel, false, &fit);
  ASSERT_FALSE(inPlace.isOk());
  EXPECT_NE(inPlace.status().message().find("grid: it serves out of place calls only"),
            std::string::npos)
      << inPlace.status().message();
  Expected<DeviceChoice> ranks =
      chooseDeviceCall(Collective::kAllReduce, 1024, windows(8), sel, false, nullptr);
  ASSERT_FALSE(ranks.isOk());
  EXPECT_NE(ranks.status().message().find("it supports"), std::string::npos);
  // A list with a built-in falls back to it, lowered.
  Selector list = selectorFor(CostInputs{}, "allreduce:grid,tree");
  list.addUserAlgorithm(file);
  const DeviceChoice fb = choose(Collective::kAllReduce, 2 << 20, windows(4), list, false);
  EXPECT_EQ(fb.user, nullptr);
  EXPECT_EQ(fb.algorithm, Algorithm::kTree);
  EXPECT_EQ(fb.executor, DeviceExecutor::kLowered);
  // A program of window steps has no lowering: refused, named.
  auto windowed = std::make_shared<algo::AlgoFile>(*file);
  windowed->programs[0].windowed = true;
  sel.addUserAlgorithm(windowed);
  Expected<DeviceChoice> w = chooseDeviceCall(Collective::kAllReduce, 1024, windows(4), sel, false);
  ASSERT_FALSE(w.isOk());
  EXPECT_NE(w.status().message().find("which device calls cannot run: its 4-rank program has "
                                      "window steps"),
            std::string::npos)
      << w.status().message();
}

// Where the model decides, a loaded 2x4 grid on the DGX H100 is chosen exactly where its
// walk (priceProgramUs over the GPU inputs; at most a slot per send up to 16 MiB, so no
// slot waits) is below the device's best built-in (it is from 4 MiB, against the tree
// and the ring), and never outside its sizes.
TEST(DeviceChoice, TheModelPicksALoadedAlgorithmExactlyWhereItIsCheapest) {
  const CostInputs in = fileInputs("dgx_h100.xml", 8);
  auto file =
      std::make_shared<algo::AlgoFile>(test::allReduceFile("grid", test::gridAllReduce(2, 4)));
  file->sizes = algo::SizeRange{0, true, 8 * kMiB, false};
  const Selector builtIn = selectorFor(in);
  Selector sel = selectorFor(in);
  sel.addUserAlgorithm(file);
  int chosen = 0, cheaperOutside = 0;
  for (uint64_t bytes = kKiB; bytes <= 16 * kMiB; bytes *= 2) {
    const DeviceChoice best = choose(Collective::kAllReduce, bytes, windows(8), builtIn);
    const double grid = priceProgramUs(*file, bytes, in);
    const bool inside = file->sizes.contains(bytes);
    const DeviceChoice d = choose(Collective::kAllReduce, bytes, windows(8), sel);
    EXPECT_EQ(d.user != nullptr, inside && grid < best.predictedUs)
        << bytes << " B: grid " << grid << " us, " << d.name() << " " << best.predictedUs;
    if (d.user != nullptr) {
      EXPECT_EQ(d.executor, DeviceExecutor::kLowered);
      EXPECT_NEAR(d.predictedUs, grid, 1e-9 * grid);
      EXPECT_STREQ(d.why, "cost model");
    }
    chosen += d.user != nullptr;
    cheaperOutside += !inside && grid < best.predictedUs;
  }
  EXPECT_GT(chosen, 0);
  EXPECT_GT(cheaperOutside, 0);
  // '^grid' keeps it out; INFO's ranking names it.
  Selector excluded = selectorFor(in, "allreduce:^grid");
  excluded.addUserAlgorithm(file);
  EXPECT_EQ(choose(Collective::kAllReduce, kMiB, windows(8), excluded).user, nullptr);
  const std::string ex =
      explainDeviceCall(Collective::kAllReduce, 16 * kMiB, windows(8), sel, true);
  EXPECT_NE(ex.find("grid (loaded) does not run this call: its sizes are"), std::string::npos)
      << ex;
}

}  // namespace
}  // namespace braid
