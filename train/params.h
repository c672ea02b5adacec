// ParamStore: the weights and gradients one rank holds, in two flat buffers
// (dense weights, replicated over the data group; expert weights, replicated
// over the dp group) so gradient buckets and ZeRO shards are ranges. Every
// full tensor is drawn from a generator seeded by (seed, name) and then
// sliced, so any layout starts from the same model. Modules (embedding, each
// block, head) own contiguous ranges in forward order. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace braid::train {

enum class Split { kNone, kCols, kRows };  // how the full [rows][cols] tensor is cut
enum class Init { kNormal, kZero, kOne };
enum Pool { kDense = 0, kExpert = 1, kNumPools = 2 };

struct ParamInfo {
  std::string name;
  int fullRows = 0;
  int fullCols = 0;
  Split split = Split::kNone;
  int parts = 1;
  int part = 0;
  Init init = Init::kNormal;
  Pool pool = kDense;
  bool decay = false;    // weight decay applies (matrices, not norms or biases)
  bool counted = true;   // counted in the global gradient norm on this rank
  int module = 0;
  size_t offset = 0;     // in its pool
  size_t size = 0;       // local elements
};

template <typename F>
class ParamStore {
 public:
  // Registers a parameter of module `module` (modules must come in order) and
  // returns its index.
  int add(const ParamInfo& info);
  // Allocates the pools and draws every weight from seed.
  void finalize(uint64_t seed, double stddev);

  F* w(int i) { return w_[infos_[i].pool].data() + infos_[i].offset; }
  F* g(int i) { return g_[infos_[i].pool].data() + infos_[i].offset; }
  const ParamInfo& info(int i) const { return infos_[i]; }
  const std::vector<ParamInfo>& infos() const { return infos_; }
  std::vector<F>& weights(Pool p) { return w_[p]; }
  std::vector<F>& grads(Pool p) { return g_[p]; }
  // [begin, end) of module m's parameters in pool p.
  std::pair<size_t, size_t> moduleRange(Pool p, int m) const;
  int numModules() const { return numModules_; }
  void zeroGrads();
  size_t totalElements() const { return w_[0].size() + w_[1].size(); }

 private:
  std::vector<ParamInfo> infos_;
  std::vector<F> w_[kNumPools];
  std::vector<F> g_[kNumPools];
  size_t used_[kNumPools] = {0, 0};
  int numModules_ = 0;
};

// The local slice of a full row-major [rows][cols] tensor.
template <typename F>
void sliceFull(const std::vector<double>& full, const ParamInfo& p, F* out);

// Draws a full tensor for p (same on every rank for the same seed).
std::vector<double> drawFull(const ParamInfo& p, uint64_t seed, double stddev);

}  // namespace braid::train
