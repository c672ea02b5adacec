// Finite-difference check of the dense model's hand-written backward pass in
// float64: for elements of every weight tensor, the analytic gradient equals
// (L(w + h) - L(w - h)) / 2h. Dense GPT and the MoE variant (router and
// experts), with and without capacity dropping.
#include <gtest/gtest.h>

#include <cmath>

#include "train/tests/twin.h"

namespace braid::train::test {
namespace {

ModelConfig checkModel(bool moe, double capacity) {
  ModelConfig m;
  m.name = "check";
  m.layers = 2;
  m.dModel = 8;
  m.heads = 2;
  m.seq = 6;
  m.ff = 16;
  m.moe = moe;
  m.experts = 4;
  m.topK = 2;
  m.capacityFactor = capacity;
  return m;
}

void checkGradients(const ModelConfig& cfg) {
  const int batch = 2;
  auto tokens = randomBytes(batch * cfg.seq, 3);
  auto targets = randomBytes(batch * cfg.seq, 4);
  Mesh mesh;
  ParamStore<double> store;
  Gpt<double> model(cfg, mesh, &store);
  store.finalize(99, 0.3);
  MicroBatch mb{batch, cfg.seq, tokens.data(), targets.data()};
  auto loss = [&] {
    StageCache<double> c;
    return model.forward(mb, nullptr, nullptr, &c);
  };
  StageCache<double> cache;
  model.forward(mb, nullptr, nullptr, &cache);
  model.backward(&cache, nullptr, nullptr, 1.0, [](int) {});
  const double h = 1e-5;
  int checked = 0;
  for (size_t i = 0; i < store.infos().size(); ++i) {
    const ParamInfo& p = store.info(static_cast<int>(i));
    double* w = store.w(static_cast<int>(i));
    const double* g = store.g(static_cast<int>(i));
    // Token-embedding rows only get gradients for bytes in the batch: check those.
    std::vector<size_t> picks = {0, p.size / 3, p.size / 2, p.size - 1};
    if (p.name == "wte") picks = {tokens[0] * size_t(cfg.dModel), tokens[5] * size_t(cfg.dModel) + 1};
    for (size_t e : picks) {
      const double keep = w[e];
      w[e] = keep + h;
      const double up = loss();
      w[e] = keep - h;
      const double down = loss();
      w[e] = keep;
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(g[e], fd, 1e-6 + 1e-5 * std::fabs(fd)) << p.name << "[" << e << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(GradCheck, DenseModelFloat64) { checkGradients(checkModel(false, 0)); }
TEST(GradCheck, MoeModelFloat64) { checkGradients(checkModel(true, 0)); }
TEST(GradCheck, MoeWithCapacityDroppingFloat64) { checkGradients(checkModel(true, 0.6)); }

}  // namespace
}  // namespace braid::train::test
