// Every (algorithm, collective) pair the registry offers, through
// algo::buildSchedule and the simulator: nranks 1..17, 32, 64 and 128, counts
// 0, 1, n-1, n+1, a prime and a larger one, in place and out of place, roots
// spread over the ranks, a reducing op per datatype family.
#include <gtest/gtest.h>

#include "algorithms/registry.h"
#include "coll_check.h"

namespace braid::test {
namespace {

using algo::Algorithm;
using algo::Collective;

class AllFamilies : public ::testing::TestWithParam<int> {};

TEST_P(AllFamilies, EveryCollectiveTheRegistryOffers) {
  const Algorithm alg = static_cast<Algorithm>(GetParam());
  const std::pair<braidDataType_t, braidRedOp_t> kTypeOps[] = {{braidFloat32, braidSum},
                                                               {braidInt32, braidMax},
                                                               {braidBfloat16, braidAvg},
                                                               {braidUint8, braidProd}};
  std::vector<int> ranks;
  for (int n = 1; n <= 17; ++n) ranks.push_back(n);
  for (int n : {32, 64, 128}) ranks.push_back(n);
  int cases = 0;
  for (Collective coll : kAllCollectives) {
    if (!algo::supports(alg, coll)) continue;
    for (int n : ranks) {
      std::vector<uint64_t> counts = {0, 1, uint64_t(n - 1), uint64_t(n + 1), 97};
      if (n <= 17) counts.push_back(1500);
      for (uint64_t count : counts) {
        for (bool inPlace : {false, true}) {
          const CheckCase c =
              sweepCase(coll, n, count, inPlace, kTypeOps[(count + n) % 4], n <= 17 ? 64 : 1 << 16);
          auto build = [alg](const algo::CollArgs& a) { return algo::buildSchedule(alg, a); };
          EXPECT_EQ(checkCollective(build, c), "") << algo::algorithmName(alg);
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 0) << algo::algorithmName(alg) << " implements nothing";
}

INSTANTIATE_TEST_SUITE_P(Registry, AllFamilies, ::testing::Range(0, algo::kNumAlgorithms),
                         [](const auto& info) {
                           return std::string(
                               algo::algorithmName(static_cast<Algorithm>(info.param)));
                         });

}  // namespace
}  // namespace braid::test
