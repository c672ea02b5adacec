// Every parallel layer against its dense twin, forward and backward: the loss
// (forward through embedding, attention, MLP or MoE, head and cross-entropy)
// and the gradient of every weight, for tensor-parallel (column/row-parallel
// linears, split heads, vocabulary-parallel embedding and cross-entropy),
// pipeline stages, expert-parallel MoE and data-parallel slices. Ranks are
// threads with real Braid communicators.
#include <gtest/gtest.h>

#include <cmath>

#include "train/tests/twin.h"

namespace braid::train::test {
namespace {

struct Case {
  const char* name;
  int dp, tp, pp, ep;
  bool moe;
  int moeEvery = 1;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

ModelConfig smallModel(bool moe, int moeEvery = 1) {
  ModelConfig m;
  m.name = "test";
  m.layers = 4;
  m.dModel = 16;
  m.heads = 4;
  m.seq = 8;
  m.ff = 32;
  m.moe = moe;
  m.experts = 4;
  m.topK = 2;
  m.moeEvery = moeEvery;
  return m;
}

template <typename F>
void expectTwins(const Case& c) {
  const ModelConfig cfg = smallModel(c.moe, c.moeEvery);
  const int batch = 4;
  auto tokens = randomBytes(batch * cfg.seq, 11);
  auto targets = randomBytes(batch * cfg.seq, 12);
  Layout layout;
  layout.dp = c.dp;
  layout.tp = c.tp;
  layout.pp = c.pp;
  layout.ep = c.ep;
  const double rtol = 1e-5;
  PassResult dense = densePass<F>(cfg, tokens, targets, batch, 7);
  PassResult par = parallelPass<F>(cfg, layout, tokens, targets, batch, 7);
  ASSERT_EQ(par.error, "");
  EXPECT_NEAR(par.loss, dense.loss, rtol * std::fabs(dense.loss)) << "forward (loss)";
  ASSERT_EQ(par.grads.size(), dense.grads.size());
  // A tensor whose true gradient is zero (the key bias: softmax ignores a
  // shift) holds only rounding noise, so each tolerance is relative to the
  // larger of the tensor's scale and 1% of the largest gradient in the model.
  double largest = 0;
  for (const auto& [name, want] : dense.grads) {
    for (double v : want) largest = std::max(largest, std::fabs(v));
  }
  for (const auto& [name, want] : dense.grads) {
    const auto& got = par.grads[name];
    ASSERT_EQ(got.size(), want.size()) << name;
    double scale = 0.01 * largest, diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      scale = std::max(scale, std::fabs(want[i]));
      diff = std::max(diff, std::fabs(got[i] - want[i]));
    }
    EXPECT_LE(diff, rtol * scale) << "gradient of " << name;
  }
  EXPECT_GT(largest, 1e-3) << "gradients should not all vanish";
}

class ParallelLayers : public ::testing::TestWithParam<Case> {};

TEST_P(ParallelLayers, MatchesDenseTwinInFloat64) { expectTwins<double>(GetParam()); }
TEST_P(ParallelLayers, MatchesDenseTwinInFloat32) { expectTwins<float>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Layouts, ParallelLayers,
    ::testing::Values(Case{"tp2", 1, 2, 1, 1, false}, Case{"tp4", 1, 4, 1, 1, false},
                      Case{"pp2", 1, 1, 2, 1, false}, Case{"pp4", 1, 1, 4, 1, false},
                      Case{"dp2", 2, 1, 1, 1, false}, Case{"tp2pp2", 1, 2, 2, 1, false},
                      Case{"moe_dense", 1, 1, 1, 1, true}, Case{"ep2", 1, 1, 1, 2, true},
                      Case{"ep4", 1, 1, 1, 4, true}, Case{"ep2tp2", 1, 2, 1, 2, true},
                      Case{"ep2dp2", 2, 1, 1, 2, true}, Case{"moe_tp2", 1, 2, 1, 1, true},
                      Case{"ep2pp2_every2", 1, 1, 2, 2, true, 2}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// The dense twin itself is not trivially equal to the parallel one: changing
// a weight slice changes the loss. (Guards against a harness that compares a
// model with itself without running anything.)
TEST(ParallelLayersHarness, DifferentSeedsGiveDifferentLosses) {
  const ModelConfig cfg = smallModel(false);
  auto tokens = randomBytes(4 * cfg.seq, 11);
  auto targets = randomBytes(4 * cfg.seq, 12);
  PassResult a = densePass<double>(cfg, tokens, targets, 4, 7);
  PassResult b = densePass<double>(cfg, tokens, targets, 4, 8);
  EXPECT_GT(std::fabs(a.loss - b.loss), 1e-6);
}

}  // namespace
}  // namespace braid::train::test
