// BRAID_ALGO parsing and the choice it makes, including the errors for
// choices that cannot be honoured.
#include "select/select.h"

#include <gtest/gtest.h>

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

Algorithm pick(const std::string& spec, Collective c, uint64_t bytes, int n = 4) {
  Expected<AlgoPolicy> p = AlgoPolicy::parse(spec);
  EXPECT_TRUE(p.isOk()) << p.status().message();
  Expected<Algorithm> a = p.value().choose(c, bytes, n);
  EXPECT_TRUE(a.isOk()) << a.status().message();
  return a.isOk() ? a.value() : Algorithm::kLinear;
}

TEST(AlgoPolicy, EmptySpecUsesTheRuleOfThumb) {
  EXPECT_EQ(pick("", Collective::kAllReduce, 64 << 20), Algorithm::kRing);
  EXPECT_EQ(pick("", Collective::kAllReduce, 8, 8), Algorithm::kDirect);
  EXPECT_EQ(pick("", Collective::kAllReduce, 8, 2), Algorithm::kRing);
  EXPECT_EQ(pick("", Collective::kGather, 8), Algorithm::kLinear);
  EXPECT_EQ(pick("", Collective::kAllToAllv, 1 << 20), Algorithm::kPairwise);
}

TEST(AlgoPolicy, SeveralNodesPreferHierarchicalAboveSmallSizes) {
  AlgoPolicy p = AlgoPolicy::parse("").value();
  EXPECT_EQ(p.choose(Collective::kAllReduce, 1 << 20, 8, 2).value(), Algorithm::kHierarchical);
  EXPECT_EQ(p.choose(Collective::kBroadcast, 1 << 20, 8, 2).value(), Algorithm::kHierarchical);
  EXPECT_EQ(p.choose(Collective::kAllReduce, 8, 8, 2).value(), Algorithm::kDirect);
  // One rank per node: nothing to keep inside nodes.
  EXPECT_EQ(p.choose(Collective::kAllReduce, 1 << 20, 4, 4).value(), Algorithm::kRing);
  EXPECT_EQ(p.choose(Collective::kAllToAll, 1 << 20, 8, 2).value(), Algorithm::kPairwise);
}

TEST(AlgoPolicy, PlainListAppliesToEveryCollectiveThatHasOne) {
  EXPECT_EQ(pick("tree", Collective::kAllReduce, 64 << 20), Algorithm::kTree);
  EXPECT_EQ(pick("tree,ring", Collective::kAllGather, 8), Algorithm::kRing);
}

TEST(AlgoPolicy, PerCollectiveAndPerSizeRules) {
  const std::string spec = "allreduce:0-64k:tree#allreduce:64k-inf:ring;alltoall:bruck";
  EXPECT_EQ(pick(spec, Collective::kAllReduce, 8), Algorithm::kTree);
  EXPECT_EQ(pick(spec, Collective::kAllReduce, (64 << 10) - 1), Algorithm::kTree);
  EXPECT_EQ(pick(spec, Collective::kAllReduce, 64 << 10), Algorithm::kRing);
  EXPECT_EQ(pick(spec, Collective::kAllToAll, 1 << 30), Algorithm::kBruck);
  EXPECT_EQ(pick(spec, Collective::kBroadcast, 1 << 30), Algorithm::kRing);  // untouched
  EXPECT_EQ(pick("ALLREDUCE:HD", Collective::kAllReduce, 1 << 30), Algorithm::kHalvingDoubling);
}

TEST(AlgoPolicy, ExclusionRemovesFromTheDefaultChoice) {
  EXPECT_EQ(pick("^ring", Collective::kAllReduce, 64 << 20), Algorithm::kTwoShot);
  EXPECT_EQ(pick("allreduce:^ring,two_shot", Collective::kAllReduce, 64 << 20),
            Algorithm::kHalvingDoubling);
  Expected<Algorithm> none =
      AlgoPolicy::parse("gather:^linear").value().choose(Collective::kGather, 8, 4);
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("excludes every algorithm"), std::string::npos);
}

// A rule that names algorithms for a call names them (the device path then runs that
// schedule); a '^' exclusion decides the call without naming one; no rule, neither.
TEST(AlgoPolicy, NamesTellsANamingRuleFromAnExclusion) {
  AlgoPolicy p = AlgoPolicy::parse("allreduce:0-1k:^tree#allreduce:ring").value();
  EXPECT_TRUE(p.overrides(Collective::kAllReduce, 8));
  EXPECT_FALSE(p.names(Collective::kAllReduce, 8));
  EXPECT_TRUE(p.overrides(Collective::kAllReduce, 1 << 20));
  EXPECT_TRUE(p.names(Collective::kAllReduce, 1 << 20));
  EXPECT_FALSE(p.overrides(Collective::kAllGather, 1 << 20));
  EXPECT_FALSE(p.names(Collective::kAllGather, 1 << 20));
}

TEST(AlgoPolicy, AnUnsupportedChoiceIsAnErrorNotAFallback) {
  Expected<Algorithm> a =
      AlgoPolicy::parse("alltoall:tree").value().choose(Collective::kAllToAll, 8, 4);
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().code(), braidInvalidArgument);
  EXPECT_NE(a.status().message().find("tree for alltoall"), std::string::npos)
      << a.status().message();
}

TEST(AlgoPolicy, BadSpecsNameTheProblem) {
  for (const char* spec :
       {"warp", "allreduce:w@rp", "allreduce:64k-0:ring", "allreduce:1x-2:ring", "allreduce:"}) {
    Expected<AlgoPolicy> p = AlgoPolicy::parse(spec);
    EXPECT_FALSE(p.isOk()) << spec;
    if (!p.isOk()) {
      EXPECT_NE(p.status().message().find("BRAID_ALGO"), std::string::npos);
    }
  }
}

TEST(Registry, NamesRoundTripAndSupportIsConsistent) {
  for (int i = 0; i < algo::kNumAlgorithms; ++i) {
    Algorithm a = static_cast<Algorithm>(i), back;
    ASSERT_TRUE(algo::parseAlgorithm(algo::algorithmName(a), &back));
    EXPECT_EQ(back, a);
  }
  EXPECT_TRUE(algo::supports(Algorithm::kRing, Collective::kReduceScatter));
  EXPECT_FALSE(algo::supports(Algorithm::kTree, Collective::kAllGather));
  EXPECT_FALSE(algo::supports(Algorithm::kLinear, Collective::kAllReduce));
}

}  // namespace
}  // namespace braid
