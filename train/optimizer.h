// Optimizer: turns this rank's local gradients into the update every layout
// agrees on. Gradients are reduced in buckets on a Braid host stream while the
// backward pass goes on (moduleDone launches a bucket as soon as its modules
// are final): all-reduced without ZeRO; with ZeRO-1 reduce-scattered, so each
// rank holds AdamW state for its shard of every bucket and all-gathers the
// updated weights.
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
    size_t begin, end;   // range in the pool
    int lowModule;       // the bucket is final once this module is
    size_t shard = 0;    // ZeRO: elements per rank (the range padded to a multiple)
    size_t state = 0;    // ZeRO: offset of this rank's shard in the pool's state
    std::vector<float> padded;  // ZeRO: the range, padded, for the collectives
  };
  const Group& groupOf(Pool p) const { return p == kDense ? mesh_.data : mesh_.dp; }
  bool sharded(Pool p) const { return zero_ && groupOf(p).size() > 1; }
  void planBuckets(size_t bucketBytes);
  // This rank's part of a ZeRO bucket: first pool index and valid length.
  std::pair<size_t, size_t> ownRange(const Bucket& b) const;
  double sumSquares(Pool p, const float* g, size_t begin, size_t end) const;
  void adam(Pool p, float* w, const float* g, size_t begin, size_t end, float* m, float* v,
            int t, double coef);
  void updateBucket(Bucket& b, int t, double coef);

  OptimConfig cfg_;
  const Mesh& mesh_;
  ParamStore<float>* store_;
  CommStats* stats_;
  bool zero_;
  braidStream_t stream_ = nullptr;
  std::vector<Bucket> buckets_;
  std::vector<uint8_t> counted_[kNumPools], decay_[kNumPools];
  std::vector<float> m_[kNumPools], v_[kNumPools];
  std::vector<float> shardGrad_[kNumPools], shardW_[kNumPools];
};

}  // namespace braid::train
