// Loaded algorithms in the selector (select/user_choice.h): priced by walking their steps
// as the built-ins' forms price them, chosen exactly where their price is lowest and only
// inside the calls they serve, forced by BRAID_ALGO, and named in the explanation.
#include "select/user_choice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "select/select.h"
#include "tests/common/file_programs.h"
#include "tests/common/topo_files.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

CostInputs oneNode(int n) {
  CostInputs in;
  in.nranks = n;
  in.ranksPerNode = n;
  in.intra = {2.0, 20.0};
  in.inter = in.intra;
  return in;
}

// A ring program walks to the ring's closed form: 2(n-1) alpha + 2(n-1)/n S / B.
TEST(UserChoice, ARingProgramIsPricedAsTheRing) {
  const algo::AlgoFile ring = test::allReduceFile("ring", test::gridAllReduce(1, 6));
  const CostInputs in = oneNode(6);
  for (uint64_t bytes : {uint64_t{6} << 10, uint64_t{6} << 20}) {
    const double want = predictUs(Algorithm::kRing, Collective::kAllReduce, bytes, in);
    EXPECT_NEAR(priceProgramUs(ring, bytes, in), want, want * 1e-9) << bytes;
  }
  EXPECT_TRUE(std::isinf(priceProgramUs(ring, 1024, oneNode(4))));  // no program for 4
}

// A window program's round costs alpha plus its busiest rank's bytes over the link: the
// all-gather's rank puts its block and reads n - 1; without shared windows it serves nothing.
TEST(UserChoice, AWindowProgramIsPricedByItsRoundsWhereTheWindowsAre) {
  algo::AlgoFile f = test::allReduceFile("wag", test::windowAllGather(4));
  f.collective = Collective::kAllGather;
  CostInputs in = oneNode(4);
  in.sharedWindows = true;
  const uint64_t bytes = 1 << 20;
  const double want = in.baseUs + in.intra.alphaUs + 4.0 * bytes / (in.intra.gbps * 1e3);
  EXPECT_NEAR(priceProgramUs(f, bytes, in), want, want * 1e-9);
  EXPECT_EQ(whyNotServed(f, Collective::kAllGather, bytes, 4, nullptr, &in), "");
  in.sharedWindows = false;
  EXPECT_TRUE(std::isinf(priceProgramUs(f, bytes, in)));
  EXPECT_NE(whyNotServed(f, Collective::kAllGather, bytes, 4, nullptr, &in).find("window program"),
            std::string::npos);
}

TEST(UserChoice, WhyNotNamesRangeRanksAndMode) {
  algo::AlgoFile f = test::allReduceFile("g", test::gridAllReduce(2, 2));
  f.sizes = algo::SizeRange{1024, true, 4096, false};
  f.inPlace = false;
  EXPECT_EQ(whyNotServed(f, Collective::kAllReduce, 1024, 4, nullptr), "");
  EXPECT_NE(whyNotServed(f, Collective::kAllReduce, 4096, 4, nullptr).find("[1024, 4096)"),
            std::string::npos);
  EXPECT_NE(whyNotServed(f, Collective::kAllReduce, 1024, 3, nullptr).find("not 3"),
            std::string::npos);
  CallFit fit;
  fit.inPlace = true;
  fit.dtype = "float32";
  fit.op = "sum";
  EXPECT_NE(whyNotServed(f, Collective::kAllReduce, 1024, 4, &fit).find("out of place"),
            std::string::npos);
  fit.inPlace = false;
  fit.op = "avg";
  EXPECT_NE(whyNotServed(f, Collective::kAllReduce, 1024, 4, &fit).find("avg"), std::string::npos);
}

// On the DGX H100 file, 8 ranks: the 2-D all-reduce (2 x 4) takes 8 steps where the ring
// takes 14 over the same bytes, so it wins from where bandwidth dominates; its sizes stop
// at 256 MiB, and above that it is never chosen though it would be cheaper.
TEST(UserChoice, TheGridIsChosenExactlyWhereItIsCheapestAndInsideItsRange) {
  std::string why;
  const auto topo = test::loadTopoFile("dgx_h100.xml", &why);
  if (!topo) GTEST_SKIP() << why;
  const CostInputs in = costInputsFor(*topo, 8, 8);
  auto file =
      std::make_shared<algo::AlgoFile>(test::allReduceFile("grid", test::gridAllReduce(2, 4)));
  file->sizes = algo::SizeRange{0, true, uint64_t{256} << 20, false};
  Selector sel(AlgoPolicy(), in);
  sel.addUserAlgorithm(file);
  int chosen = 0, cheaperOutside = 0;
  for (uint64_t bytes = 1024; bytes <= (uint64_t{1} << 30); bytes *= 2) {
    const auto ranked = rankAlgorithms(Collective::kAllReduce, bytes, in);
    ASSERT_FALSE(ranked.empty());
    const double grid = priceProgramUs(*file, bytes, in);
    const bool inside = file->sizes.contains(bytes);
    Expected<Selector::Choice> c = sel.choose(Collective::kAllReduce, bytes);
    ASSERT_TRUE(c.isOk()) << c.status().message();
    const bool want = inside && grid < ranked[0].second;
    EXPECT_EQ(c.value().user != nullptr, want)
        << bytes << " B: grid " << grid << " us, " << algo::algorithmName(ranked[0].first) << " "
        << ranked[0].second << " us";
    chosen += c.value().user != nullptr;
    cheaperOutside += !inside && grid < ranked[0].second;
    if (c.value().user != nullptr) {
      EXPECT_STREQ(c.value().name(), "grid");
    }
  }
  EXPECT_GT(chosen, 0);          // it wins somewhere in its range
  EXPECT_GT(cheaperOutside, 0);  // and would win outside it, where it is not chosen
  const std::string ex = sel.explain(Collective::kAllReduce, uint64_t{1} << 30);
  EXPECT_NE(ex.find("grid (loaded) does not serve this call: its sizes are"), std::string::npos)
      << ex;
}

TEST(UserChoice, BraidAlgoForcesALoadedAlgorithmOrSaysWhyItCannot) {
  auto file =
      std::make_shared<algo::AlgoFile>(test::allReduceFile("grid", test::gridAllReduce(2, 2)));
  file->sizes = algo::SizeRange{0, true, 1 << 20, true};
  Selector sel(AlgoPolicy::parse("allreduce:grid").value(), oneNode(4));
  Expected<Selector::Choice> none = sel.choose(Collective::kAllReduce, 1024);
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("no algorithm of that name is loaded"), std::string::npos);
  sel.addUserAlgorithm(file);
  Expected<Selector::Choice> c = sel.choose(Collective::kAllReduce, 1024);
  ASSERT_TRUE(c.isOk()) << c.status().message();
  EXPECT_EQ(c.value().user, file.get());
  EXPECT_TRUE(c.value().forced);
  Expected<Selector::Choice> big = sel.choose(Collective::kAllReduce, 2 << 20);
  ASSERT_FALSE(big.isOk());
  EXPECT_NE(big.status().message().find("grid: its sizes are [0, 1048576]"), std::string::npos)
      << big.status().message();
  // A list with a built-in falls back to it where the loaded one does not serve.
  Selector list(AlgoPolicy::parse("allreduce:grid,ring").value(), oneNode(4));
  list.addUserAlgorithm(file);
  Expected<Selector::Choice> fb = list.choose(Collective::kAllReduce, 2 << 20);
  ASSERT_TRUE(fb.isOk()) << fb.status().message();
  EXPECT_EQ(fb.value().user, nullptr);
  EXPECT_EQ(fb.value().algorithm, Algorithm::kRing);
}

}  // namespace
}  // namespace braid
