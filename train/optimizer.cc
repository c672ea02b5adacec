#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

namespace braid::train {

Optimizer::Optimizer(const OptimConfig& cfg, const Mesh& mesh, ParamStore<float>* store,
                     size_t bucketBytes, CommStats* stats)
    : cfg_(cfg), mesh_(mesh), store_(store), stats_(stats), zero_(mesh.layout.zero == 1) {
  for (int p = 0; p < kNumPools; ++p) {
    const size_t n = store->weights(Pool(p)).size();
    counted_[p].assign(n, 0);
    decay_[p].assign(n, 0);
  }
  for (const ParamInfo& info : store->infos()) {
    std::fill_n(counted_[info.pool].begin() + info.offset, info.size, info.counted ? 1 : 0);
    std::fill_n(decay_[info.pool].begin() + info.offset, info.size, info.decay ? 1 : 0);
  }
  if (mesh.data.size() > 1 || mesh.dp.size() > 1) {
    if (braidStreamCreate(&stream_) != braidSuccess) {
      fatal(std::string("braidStreamCreate failed: ") + braidGetLastError(nullptr));
    }
    planBuckets(bucketBytes);
  }
  size_t state[kNumPools] = {store->weights(kDense).size(), store->weights(kExpert).size()};
  for (int p = 0; p < kNumPools; ++p) {
    if (sharded(Pool(p))) state[p] = 0;
  }
  for (Bucket& b : buckets_) {
    if (!sharded(b.pool)) continue;
    const size_t g = groupOf(b.pool).size();
    b.shard = (b.end - b.begin + g - 1) / g;
    b.state = state[b.pool];
    b.padded.assign(b.shard * g, 0.f);
    state[b.pool] += b.shard;
  }
  for (int p = 0; p < kNumPools; ++p) {
    m_[p].assign(state[p], 0.f);
    v_[p].assign(state[p], 0.f);
    if (sharded(Pool(p))) {
      shardGrad_[p].assign(state[p], 0.f);
      shardW_[p].assign(state[p], 0.f);
    }
  }
}

Optimizer::~Optimizer() {
  if (stream_ != nullptr) braidStreamDestroy(stream_);
}

// Buckets follow the backward order (last module first) and close once they
// hold bucketBytes, so the first reduction starts after the head's backward.
void Optimizer::planBuckets(size_t bucketBytes) {
  for (int p = 0; p < kNumPools; ++p) {
    if (groupOf(Pool(p)).size() == 1) continue;
    size_t end = 0, begin = 0;
    bool open = false;
    for (int m = store_->numModules() - 1; m >= 0; --m) {
      auto [b, e] = store_->moduleRange(Pool(p), m);
      if (e == b) continue;
      if (!open) {
        end = e;
        open = true;
      }
      begin = b;
      if ((end - begin) * sizeof(float) >= bucketBytes || m == 0) {
        buckets_.push_back(Bucket{Pool(p), begin, end, m, 0, 0, {}});
        open = false;
      }
    }
    if (open) buckets_.push_back(Bucket{Pool(p), begin, end, 0, 0, 0, {}});
  }
  // Launch order must be the same on every rank: by the module that closes them.
  std::stable_sort(buckets_.begin(), buckets_.end(),
                   [](const Bucket& a, const Bucket& b) { return a.lowModule > b.lowModule; });
}

std::pair<size_t, size_t> Optimizer::ownRange(const Bucket& b) const {
  const size_t start = b.begin + groupOf(b.pool).rank() * b.shard;
  return {start, start < b.end ? std::min(b.shard, b.end - start) : 0};
}

void Optimizer::moduleDone(int module) {
  for (Bucket& b : buckets_) {
    if (b.lowModule != module) continue;
    float* g = store_->grads(b.pool).data();
    if (!sharded(b.pool)) {
      groupOf(b.pool).allReduceAsync(g + b.begin, b.end - b.begin, stream_);
      continue;
    }
    // The gradients are final now; the stream reduces a padded copy.
    std::copy(g + b.begin, g + b.end, b.padded.begin());
    groupOf(b.pool).reduceScatterAsync(b.padded.data(), shardGrad_[b.pool].data() + b.state,
                                       b.shard, stream_);
  }
}

double Optimizer::sumSquares(Pool p, const float* g, size_t begin, size_t end) const {
  double s = 0;
  for (size_t i = begin; i < end; ++i) {
    if (counted_[p][i]) s += static_cast<double>(g[i - begin]) * g[i - begin];
  }
  return s;
}

void Optimizer::adam(Pool p, float* w, const float* g, size_t begin, size_t end, float* m,
                     float* v, int t, double coef) {
  const double lr = cfg_.lr * std::min(1.0, static_cast<double>(t) / std::max(1, cfg_.warmup));
  const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(cfg_.beta1, t)));
  const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(cfg_.beta2, t)));
  const float b1 = static_cast<float>(cfg_.beta1), b2 = static_cast<float>(cfg_.beta2);
  const float eps = static_cast<float>(cfg_.eps), flr = static_cast<float>(lr);
  const float wd = static_cast<float>(cfg_.weightDecay), fc = static_cast<float>(coef);
  for (size_t i = 0; i < end - begin; ++i) {
    const float gi = g[i] * fc;
    m[i] = b1 * m[i] + (1.f - b1) * gi;
    v[i] = b2 * v[i] + (1.f - b2) * gi * gi;
    const float upd = (m[i] * c1) / (std::sqrt(v[i] * c2) + eps);
    w[i] -= flr * (upd + (decay_[p][begin + i] ? wd * w[i] : 0.f));
  }
}

// ZeRO: update this rank's shard of the bucket, then gather every shard.
void Optimizer::updateBucket(Bucket& b, int t, double coef) {
  const Pool p = b.pool;
  std::vector<float>& w = store_->weights(p);
  auto [start, valid] = ownRange(b);
  float* sw = shardW_[p].data() + b.state;
  std::copy_n(w.begin() + start, valid, sw);
  adam(p, sw, shardGrad_[p].data() + b.state, start, start + valid, m_[p].data() + b.state,
       v_[p].data() + b.state, t, coef);
  groupOf(p).allGather(sw, b.padded.data(), b.shard);
  std::copy_n(b.padded.begin(), b.end - b.begin, w.begin() + b.begin);
}

double Optimizer::step(int t) {
  if (stream_ != nullptr) {
    const double t0 = nowSeconds();
    if (braidStreamSynchronize(stream_) != braidSuccess) {
      fatal(std::string("gradient reduction failed: ") + braidGetLastError(mesh_.data.comm()));
    }
    stats_->addExposed(nowSeconds() - t0);
  }
  double sq = 0;
  for (int p = 0; p < kNumPools; ++p) {
    if (sharded(Pool(p)) || groupOf(Pool(p)).rank() != 0) continue;  // replicas count once
    const auto& g = store_->grads(Pool(p));
    sq += sumSquares(Pool(p), g.data(), 0, g.size());
  }
  for (const Bucket& b : buckets_) {
    if (!sharded(b.pool)) continue;
    auto [start, valid] = ownRange(b);
    sq += sumSquares(b.pool, shardGrad_[b.pool].data() + b.state, start, start + valid);
  }
  mesh_.world.allReduce(&sq, 1);
  const double norm = std::sqrt(sq);
  const double coef = (cfg_.clip > 0 && norm > cfg_.clip) ? cfg_.clip / (norm + 1e-6) : 1.0;
  for (int p = 0; p < kNumPools; ++p) {
    auto& w = store_->weights(Pool(p));
    if (w.empty() || sharded(Pool(p))) continue;
    adam(Pool(p), w.data(), store_->grads(Pool(p)).data(), 0, w.size(), m_[p].data(),
         v_[p].data(), t, coef);
  }
  for (Bucket& b : buckets_) {
    if (sharded(b.pool)) updateBucket(b, t, coef);
  }
  return norm;
}

size_t Optimizer::stateBytes() const {
  return (m_[0].size() + m_[1].size() + v_[0].size() + v_[1].size()) * sizeof(float);
}

}  // namespace braid::train
