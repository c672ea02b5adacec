// Optimizer: turns this rank's local gradients into the update every layout
// agrees on. Without ZeRO, gradients are all-reduced in buckets on a Braid
// host stream while the backward pass goes on (moduleDone launches a bucket as
// soon as its modules are final); with ZeRO-1 they are reduce-scattered, each
// rank updates its shard of AdamW state and the weights are all-gathered.
// Dense weights are reduced over the data group, expert weights over dp. The
// global gradient norm counts every weight once: tensor-parallel replicas on
// tp rank 0, data replicas on the first replica (or the owner of the shard).
// Not thread-safe; owns its host stream.
#pragma once

#include <braid/braid.h>

#include <cstdint>
#include <string>
#include <vector>

#include "train/config.h"
#include "train/mesh.h"
#include "train/params.h"

namespace braid::train {

class Optimizer {
 public:
  Optimizer(const OptimConfig& cfg, const Mesh& mesh, ParamStore<float>* store,
            size_t bucketBytes, CommStats* stats);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // The last micro-batch's backward has finished `module` on this rank.
  void moduleDone(int module);
  // Completes the reduction, clips by the global norm, applies AdamW for
  // step t (1-based). Returns the global gradient norm before clipping.
  double step(int t);

  // AdamW state as stored in checkpoints (this rank's part).
  std::vector<float>& firstMoment(Pool p) { return m_[p]; }
  std::vector<float>& secondMoment(Pool p) { return v_[p]; }
  size_t stateBytes() const;

 private:
  struct Bucket {
    Pool pool;
    size_t begin, end;
    int lowModule;  // the bucket is final once this module is
    bool launched;
  };
  const Group& groupOf(Pool p) const { return p == kDense ? mesh_.data : mesh_.dp; }
  void planBuckets(size_t bucketBytes);
  double reduceZero(Pool p);   // returns this rank's counted sum of squares
  double sumSquares(Pool p, const float* g, size_t begin, size_t end) const;
  void adam(Pool p, float* w, const float* g, size_t begin, size_t end, float* m, float* v,
            int t, double coef);

  OptimConfig cfg_;
  const Mesh& mesh_;
  ParamStore<float>* store_;
  CommStats* stats_;
  bool zero_;
  braidStream_t stream_ = nullptr;
  std::vector<Bucket> buckets_;
  std::vector<uint8_t> counted_[kNumPools], decay_[kNumPools];
  std::vector<float> m_[kNumPools], v_[kNumPools];
  std::vector<float> padded_[kNumPools], shardGrad_[kNumPools], shardW_[kNumPools];
  size_t shard_[kNumPools] = {0, 0};
};

}  // namespace braid::train
