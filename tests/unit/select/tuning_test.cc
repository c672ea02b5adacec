// Tuning files: parsing and its errors, how they change a communicator's cost
// inputs, and that the selector then picks the measured-fastest algorithm.
#include "select/tuning.h"

#include <gtest/gtest.h>

#include "select/select.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

// Two algorithms that cross: direct cheap to start, ring fast on bytes.
constexpr char kFile[] =
    "# a comment\n"
    "link shm 4 alpha_us=2.5 gbps=6   # trailing comment\n"
    "link shm 2 alpha_us=0.4 gbps=12\n"
    "link socket 4 alpha_us=30 gbps=1.5\n"
    "fit shm 4 allreduce direct base_us=10 gbps=1\n"
    "fit shm 4 allreduce ring base_us=40 gbps=8\n"
    "fit shm 2 allreduce ring base_us=1 gbps=10\n";

CostInputs hostInputs(int nranks, int nodes) {
  CostInputs in;
  in.nranks = nranks;
  in.nodes = nodes;
  in.ranksPerNode = nranks / nodes;
  in.intra = {0.17, 24};
  in.inter = {3.2, 5.8};
  return in;
}

TEST(Tuning, ParsesLinksAndFits) {
  Expected<Tuning> t = Tuning::parse(kFile, "t.txt");
  ASSERT_TRUE(t.isOk()) << t.status().message();
  ASSERT_EQ(t.value().links.size(), 3u);
  EXPECT_EQ(t.value().links[0].transport, "shm");
  EXPECT_EQ(t.value().links[0].nranks, 4);
  EXPECT_DOUBLE_EQ(t.value().links[0].cost.alphaUs, 2.5);
  ASSERT_EQ(t.value().fits.size(), 3u);
  EXPECT_EQ(t.value().fits[0].fit.algorithm, Algorithm::kDirect);
  EXPECT_EQ(t.value().fits[0].fit.collective, Collective::kAllReduce);
}

TEST(Tuning, ErrorsNameTheLineAndWhatIsWrong) {
  const std::pair<const char*, const char*> bad[] = {
      {"link shm 4 alpha_us=1\n", "t.txt:1: expected 'link"},
      {"\nlink shm 0 alpha_us=1 gbps=2\n", "t.txt:2:"},
      {"link shm 4 alpha_us=-1 gbps=2\n", "expected 'link"},
      {"link shm 4 alpha_us=1 gbps=0\n", "expected 'link"},
      {"fit shm 4 allreduce warp base_us=1 gbps=2\n", "unknown algorithm 'warp'"},
      {"fit shm 4 allsum ring base_us=1 gbps=2\n", "unknown collective 'allsum'"},
      {"fit shm 4 alltoall ring base_us=1 gbps=2\n", "ring does not implement alltoall"},
      {"speed shm 4\n", "unknown entry 'speed'"},
  };
  for (const auto& [text, want] : bad) {
    Expected<Tuning> t = Tuning::parse(text, "t.txt");
    ASSERT_FALSE(t.isOk()) << text;
    EXPECT_EQ(t.status().code(), braidInvalidArgument);
    EXPECT_NE(t.status().message().find(want), std::string::npos) << t.status().message();
  }
  EXPECT_FALSE(Tuning::load("/nonexistent/tuning.txt").isOk());
}

TEST(Tuning, OneNodeTakesTheTransportsLinkAndExactRankCountFits) {
  const Tuning t = Tuning::parse(kFile, "t.txt").value();
  CostInputs in = applyTuning(hostInputs(4, 1), t, "shm");
  EXPECT_DOUBLE_EQ(in.intra.alphaUs, 2.5);
  EXPECT_DOUBLE_EQ(in.intra.gbps, 6);
  EXPECT_EQ(in.fits.size(), 2u);
  EXPECT_NE(in.source.find("t.txt"), std::string::npos);
  // 3 ranks: the nearest link (2 and 4 tie: the smaller), no fits.
  in = applyTuning(hostInputs(3, 1), t, "shm");
  EXPECT_DOUBLE_EQ(in.intra.alphaUs, 0.4);
  EXPECT_TRUE(in.fits.empty());
  // A transport the file does not know: unchanged.
  in = applyTuning(hostInputs(4, 1), t, "ucx");
  EXPECT_DOUBLE_EQ(in.intra.alphaUs, 0.17);
  EXPECT_EQ(in.source, "topology");
}

TEST(Tuning, SeveralNodesTakeIntraAndSocketLinksButNoFits) {
  const Tuning t = Tuning::parse(kFile, "t.txt").value();
  const CostInputs in = applyTuning(hostInputs(4, 2), t, "shm");
  EXPECT_DOUBLE_EQ(in.intra.alphaUs, 0.4);  // shm with 2 ranks per node
  EXPECT_DOUBLE_EQ(in.inter.alphaUs, 30);
  EXPECT_TRUE(in.fits.empty());
}

TEST(Tuning, SelectorPicksTheFittedFastestAndPredictsItsTime) {
  const Tuning t = Tuning::parse(kFile, "t.txt").value();
  const Selector sel(AlgoPolicy::parse("").value(), applyTuning(hostInputs(4, 1), t, "shm"));
  // direct: 10 + S/1e3; ring: 40 + S/8e3 (us): they cross at S = 34,286 B.
  Selector::Choice small = sel.choose(Collective::kAllReduce, 8).value();
  EXPECT_EQ(small.algorithm, Algorithm::kDirect);
  EXPECT_NEAR(small.predictedUs, 10.008, 1e-9);
  EXPECT_FALSE(small.forced);
  Selector::Choice large = sel.choose(Collective::kAllReduce, 1 << 20).value();
  EXPECT_EQ(large.algorithm, Algorithm::kRing);
  EXPECT_NEAR(large.predictedUs, 40 + (1 << 20) / 8e3, 1e-9);
  // BRAID_ALGO still wins, and the prediction is the forced algorithm's.
  const Selector forced(AlgoPolicy::parse("allreduce:direct").value(),
                        applyTuning(hostInputs(4, 1), t, "shm"));
  Selector::Choice f = forced.choose(Collective::kAllReduce, 1 << 20).value();
  EXPECT_EQ(f.algorithm, Algorithm::kDirect);
  EXPECT_TRUE(f.forced);
  EXPECT_NEAR(f.predictedUs, 10 + (1 << 20) / 1e3, 1e-9);
  EXPECT_NE(sel.explain(Collective::kAllReduce, 8).find("direct 10.0 us"), std::string::npos)
      << sel.explain(Collective::kAllReduce, 8);
}

TEST(Selector, ChoosesHierarchicalAcrossNodesAndNeverOnOne) {
  CostInputs two = hostInputs(4, 2);
  const Selector sel(AlgoPolicy::parse("").value(), two);
  EXPECT_EQ(sel.choose(Collective::kAllReduce, 16 << 20).value().algorithm,
            Algorithm::kHierarchical);
  EXPECT_EQ(sel.choose(Collective::kAllGather, 4 << 20).value().algorithm,
            Algorithm::kHierarchical);
  const Selector one(AlgoPolicy::parse("").value(), hostInputs(4, 1));
  for (uint64_t bytes : {8ull, 1ull << 16, 1ull << 20, 64ull << 20}) {
    EXPECT_NE(one.choose(Collective::kAllReduce, bytes).value().algorithm,
              Algorithm::kHierarchical);
  }
  // An exclusion falls to the next fastest.
  const Selector noHier(AlgoPolicy::parse("^hierarchical").value(), two);
  EXPECT_NE(noHier.choose(Collective::kAllReduce, 16 << 20).value().algorithm,
            Algorithm::kHierarchical);
}

TEST(Tuning, BandsPriceEachSizeWithItsOwnLine) {
  const char* text =
      "fit shm 4 allreduce ring base_us=10 gbps=1 bytes=0-32k\n"
      "fit shm 4 allreduce ring base_us=100 gbps=10 bytes=32k-inf\n"
      "fit shm 4 allreduce tree base_us=50 gbps=2 bytes=0-inf\n";
  Expected<Tuning> t = Tuning::parse(text, "t.txt");
  ASSERT_TRUE(t.isOk()) << t.status().message();
  EXPECT_EQ(t.value().fits[1].fit.loBytes, 32768u);
  EXPECT_EQ(t.value().fits[1].fit.hiBytes, UINT64_MAX);
  const CostInputs in = applyTuning(hostInputs(4, 1), t.value(), "shm");
  EXPECT_DOUBLE_EQ(predictUs(Algorithm::kRing, Collective::kAllReduce, 1000, in), 11.0);
  EXPECT_DOUBLE_EQ(predictUs(Algorithm::kRing, Collective::kAllReduce, 100000, in), 110.0);
  // ring's small band wins small, tree in the middle, ring's large band large.
  const Selector sel(AlgoPolicy::parse("").value(), in);
  EXPECT_EQ(sel.choose(Collective::kAllReduce, 1000).value().algorithm, Algorithm::kRing);
  EXPECT_EQ(sel.choose(Collective::kAllReduce, 32768).value().algorithm, Algorithm::kTree);
  EXPECT_EQ(sel.choose(Collective::kAllReduce, 1 << 24).value().algorithm, Algorithm::kRing);
  for (const char* bad : {"fit shm 4 allreduce ring base_us=1 gbps=1 bytes=64k-1k\n",
                          "fit shm 4 allreduce ring base_us=1 gbps=1 bytes=oops\n",
                          "fit shm 4 allreduce ring base_us=1 gbps=1 size=0-1k\n"}) {
    EXPECT_FALSE(Tuning::parse(bad, "t.txt").isOk()) << bad;
  }
}

TEST(Selector, CallPathRemembersTheLastAnswerPerCollectiveAndReranksNewSizes) {
  const Tuning t = Tuning::parse(kFile, "t.txt").value();
  Selector sel(AlgoPolicy::parse("").value(), applyTuning(hostInputs(4, 1), t, "shm"));
  for (uint64_t bytes : {8ull, 8ull, 1ull << 20, 1ull << 20, 8ull}) {
    const Selector::Choice fresh = sel.choose(Collective::kAllReduce, bytes).value();
    const Selector::Choice call = sel.chooseForCall(Collective::kAllReduce, bytes).value();
    EXPECT_EQ(call.algorithm, fresh.algorithm) << bytes;
    EXPECT_DOUBLE_EQ(call.predictedUs, fresh.predictedUs) << bytes;
  }
  EXPECT_EQ(sel.chooseForCall(Collective::kAllReduce, 8).value().algorithm, Algorithm::kDirect);
  EXPECT_EQ(sel.chooseForCall(Collective::kAllReduce, 1 << 20).value().algorithm, Algorithm::kRing);
}

}  // namespace
}  // namespace braid
