#include "train/params.h"

#include <algorithm>

#include "train/rng.h"

namespace braid::train {

namespace {

size_t localRows(const ParamInfo& p) {
  return p.split == Split::kRows ? p.fullRows / p.parts : p.fullRows;
}
size_t localCols(const ParamInfo& p) {
  return p.split == Split::kCols ? p.fullCols / p.parts : p.fullCols;
}

}  // namespace

template <typename F>
int ParamStore<F>::add(const ParamInfo& info) {
  ParamInfo p = info;
  p.size = localRows(p) * localCols(p);
  p.offset = used_[p.pool];
  used_[p.pool] += p.size;
  numModules_ = std::max(numModules_, p.module + 1);
  infos_.push_back(p);
  return static_cast<int>(infos_.size()) - 1;
}

std::vector<double> drawFull(const ParamInfo& p, uint64_t seed, double stddev) {
  std::vector<double> full(static_cast<size_t>(p.fullRows) * p.fullCols);
  if (p.init == Init::kOne) {
    std::fill(full.begin(), full.end(), 1.0);
  } else if (p.init == Init::kNormal) {
    Rng rng(mixPair(seed, hashName(p.name)));
    for (double& v : full) v = rng.normal() * stddev;
  }
  return full;
}

template <typename F>
void sliceFull(const std::vector<double>& full, const ParamInfo& p, F* out) {
  const size_t rows = localRows(p), cols = localCols(p);
  const size_t r0 = p.split == Split::kRows ? p.part * rows : 0;
  const size_t c0 = p.split == Split::kCols ? p.part * cols : 0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      out[r * cols + c] = static_cast<F>(full[(r0 + r) * p.fullCols + c0 + c]);
    }
  }
}

template <typename F>
void ParamStore<F>::finalize(uint64_t seed, double stddev) {
  for (int pool = 0; pool < kNumPools; ++pool) {
    w_[pool].assign(used_[pool], F(0));
    g_[pool].assign(used_[pool], F(0));
  }
  for (size_t i = 0; i < infos_.size(); ++i) {
    sliceFull(drawFull(infos_[i], seed, stddev), infos_[i], w(static_cast<int>(i)));
  }
}

template <typename F>
std::pair<size_t, size_t> ParamStore<F>::moduleRange(Pool pool, int m) const {
  size_t begin = used_[pool], end = 0;
  for (const ParamInfo& p : infos_) {
    if (p.pool != pool || p.module != m) continue;
    begin = std::min(begin, p.offset);
    end = std::max(end, p.offset + p.size);
  }
  if (end == 0) begin = 0;
  return {begin, end};
}

template <typename F>
void ParamStore<F>::zeroGrads() {
  for (auto& g : g_) std::fill(g.begin(), g.end(), F(0));
}

template class ParamStore<float>;
template class ParamStore<double>;
template void sliceFull<float>(const std::vector<double>&, const ParamInfo&, float*);
template void sliceFull<double>(const std::vector<double>&, const ParamInfo&, double*);

}  // namespace braid::train
