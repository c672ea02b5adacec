#include "train/moe.h"

#include <cmath>

#include "train/kernels.h"
#include "train/model.h"

namespace braid::train {

template <typename F>
MoeLayer<F>::MoeLayer(const ModelConfig& cfg, const std::string& prefix, const Mesh& mesh,
                      ParamStore<F>* store, int module)
    : cfg_(cfg), mesh_(mesh), store_(store) {
  const int d = cfg.dModel, e = cfg.experts, f = cfg.ff;
  localExperts_ = e / mesh.layout.ep;
  firstExpert_ = mesh.at.ep * localExperts_;
  router_ = addParam(store, mesh, prefix + "router", d, e, Split::kNone, Init::kNormal, kDense,
                     true, module);
  w1_ = addParam(store, mesh, prefix + "w1", e, d * f, Split::kRows, Init::kNormal, kExpert, true,
                 module);
  b1_ = addParam(store, mesh, prefix + "b1", e, f, Split::kRows, Init::kZero, kExpert, false,
                 module);
  w2_ = addParam(store, mesh, prefix + "w2", e, f * d, Split::kRows, Init::kNormal, kExpert, true,
                 module);
  b2_ = addParam(store, mesh, prefix + "b2", e, d, Split::kRows, Init::kZero, kExpert, false,
                 module);
}

template <typename F>
void MoeLayer<F>::route(const F* x, size_t n, MoeCache<F>* c) {
  const size_t e = cfg_.experts, k = cfg_.topK;
  c->probs.resize(n * e);
  matmul(x, store_->w(router_), static_cast<const F*>(nullptr), c->probs.data(), n, cfg_.dModel,
         e);
  c->choice.assign(n * k, -1);
  c->gate.assign(n * k, F(0));
  size_t cap = SIZE_MAX;
  if (cfg_.capacityFactor > 0) cap = static_cast<size_t>(std::ceil(cfg_.capacityFactor * n * k / e));
  std::vector<size_t> load(e, 0);
  for (size_t r = 0; r < n; ++r) {
    F* p = c->probs.data() + r * e;
    F mx = p[0];
    for (size_t j = 1; j < e; ++j) mx = std::max(mx, p[j]);
    F sum = 0;
    for (size_t j = 0; j < e; ++j) sum += (p[j] = std::exp(p[j] - mx));
    for (size_t j = 0; j < e; ++j) p[j] /= sum;
    // Top-k by repeated arg-max; ties go to the lower expert index.
    F chosenSum = 0;
    for (size_t s = 0; s < k; ++s) {
      int best = -1;
      for (size_t j = 0; j < e; ++j) {
        bool taken = false;
        for (size_t q = 0; q < s; ++q) taken |= c->choice[r * k + q] == static_cast<int>(j);
        if (!taken && (best < 0 || p[j] > p[best])) best = static_cast<int>(j);
      }
      c->choice[r * k + s] = best;
      chosenSum += p[best];
    }
    for (size_t s = 0; s < k; ++s) c->gate[r * k + s] = p[c->choice[r * k + s]] / chosenSum;
  }
  c->expert = c->choice;
  for (size_t slot = 0; slot < n * k; ++slot) {
    int& ex = c->expert[slot];
    if (load[ex] >= cap) {
      ex = -1;  // dropped: contributes nothing, its gate still normalises the others
    } else {
      ++load[ex];
    }
  }
}

template <typename F>
void MoeLayer<F>::dispatch(const std::vector<F>& rows, std::vector<F>* expertMajor,
                           const MoeCache<F>& c) {
  const size_t d = cfg_.dModel;
  size_t recvTotal = 0;
  for (size_t r : c.recvRows) recvTotal += r;
  std::vector<F> recv(recvTotal * d);
  std::vector<size_t> sc(c.sendRows.size()), rc(c.recvRows.size());
  for (size_t p = 0; p < sc.size(); ++p) {
    sc[p] = c.sendRows[p] * d;
    rc[p] = c.recvRows[p] * d;
  }
  mesh_.ep.alltoallv(rows.data(), sc, recv.data(), rc);
  expertMajor->resize(recvTotal * d);
  for (size_t i = 0; i < c.perm.size(); ++i) {
    std::copy(recv.begin() + c.perm[i] * d, recv.begin() + (c.perm[i] + 1) * d,
              expertMajor->begin() + i * d);
  }
}

template <typename F>
void MoeLayer<F>::combine(const std::vector<F>& expertMajor, std::vector<F>* rows,
                          const MoeCache<F>& c) {
  const size_t d = cfg_.dModel;
  std::vector<F> back(expertMajor.size());
  for (size_t i = 0; i < c.perm.size(); ++i) {
    std::copy(expertMajor.begin() + i * d, expertMajor.begin() + (i + 1) * d,
              back.begin() + c.perm[i] * d);
  }
  size_t sendTotal = 0;
  for (size_t r : c.sendRows) sendTotal += r;
  rows->resize(sendTotal * d);
  std::vector<size_t> sc(c.sendRows.size()), rc(c.recvRows.size());
  for (size_t p = 0; p < sc.size(); ++p) {
    sc[p] = c.recvRows[p] * d;
    rc[p] = c.sendRows[p] * d;
  }
  mesh_.ep.alltoallv(back.data(), sc, rows->data(), rc);
}

template <typename F>
void MoeLayer<F>::plan(const F* x, size_t n, std::vector<F>* rowsOut, MoeCache<F>* c) {
  const size_t d = cfg_.dModel, k = cfg_.topK, ne = cfg_.experts;
  const size_t ep = mesh_.layout.ep, le = localExperts_;
  // Dispatch order: by expert (hence by owning rank), then by slot.
  std::vector<uint64_t> sendCounts(ne, 0), recvCounts(ne, 0);
  c->slotRow.assign(n * k, SIZE_MAX);
  size_t next = 0;
  std::vector<F>& rows = *rowsOut;
  rows.clear();
  for (size_t ex = 0; ex < ne; ++ex) {
    for (size_t slot = 0; slot < n * k; ++slot) {
      if (c->expert[slot] != static_cast<int>(ex)) continue;
      c->slotRow[slot] = next++;
      rows.insert(rows.end(), x + (slot / k) * d, x + (slot / k + 1) * d);
      sendCounts[ex]++;
    }
  }
  mesh_.ep.alltoallCounts(sendCounts.data(), recvCounts.data(), le);
  c->sendRows.assign(ep, 0);
  c->recvRows.assign(ep, 0);
  for (size_t p = 0; p < ep; ++p) {
    for (size_t j = 0; j < le; ++j) {
      c->sendRows[p] += sendCounts[p * le + j];
      c->recvRows[p] += recvCounts[p * le + j];
    }
  }
  // Received rows come by source, then local expert; experts want them by expert.
  c->perm.clear();
  c->expertBegin.assign(le + 1, 0);
  for (size_t j = 0; j < le; ++j) {
    size_t base = 0;
    for (size_t p = 0; p < ep; ++p) {
      size_t off = base;
      for (size_t q = 0; q < j; ++q) off += recvCounts[p * le + q];
      for (size_t i = 0; i < recvCounts[p * le + j]; ++i) c->perm.push_back(off + i);
      base += c->recvRows[p];
    }
    c->expertBegin[j + 1] = c->perm.size();
  }
}

template <typename F>
void MoeLayer<F>::forward(const F* x, F* y, size_t n, MoeCache<F>* c) {
  const size_t d = cfg_.dModel, k = cfg_.topK, f = cfg_.ff;
  const size_t le = localExperts_;
  route(x, n, c);
  std::vector<F> rows;
  plan(x, n, &rows, c);
  dispatch(rows, &c->xe, *c);
  const size_t total = c->perm.size();
  c->pre.resize(total * f);
  c->act.resize(total * f);
  std::vector<F> ye(total * d);
  for (size_t j = 0; j < le; ++j) {
    const size_t b = c->expertBegin[j], m = c->expertBegin[j + 1] - b;
    if (m == 0) continue;
    matmul(c->xe.data() + b * d, store_->w(w1_) + j * d * f, store_->w(b1_) + j * f,
           c->pre.data() + b * f, m, d, f);
    gelu(c->pre.data() + b * f, c->act.data() + b * f, m * f);
    matmul(c->act.data() + b * f, store_->w(w2_) + j * f * d, store_->w(b2_) + j * d,
           ye.data() + b * d, m, f, d);
  }
  combine(ye, &c->out, *c);
  for (size_t r = 0; r < n; ++r) {
    F* yr = y + r * d;
    std::fill(yr, yr + d, F(0));
    for (size_t s = 0; s < k; ++s) {
      const size_t row = c->slotRow[r * k + s];
      if (row == SIZE_MAX) continue;
      const F g = c->gate[r * k + s];
      const F* o = c->out.data() + row * d;
      for (size_t i = 0; i < d; ++i) yr[i] += g * o[i];
    }
  }
}

template <typename F>
void MoeLayer<F>::backward(const F* x, const F* dy, F* dx, size_t n, MoeCache<F>* c) {
  const size_t d = cfg_.dModel, k = cfg_.topK, f = cfg_.ff, ne = cfg_.experts;
  const size_t le = localExperts_;
  // Gradients of the gates and of each expert output, in dispatch order.
  std::vector<F> dgate(n * k, F(0));
  std::vector<F> drows(c->out.size());
  for (size_t slot = 0; slot < n * k; ++slot) {
    const size_t row = c->slotRow[slot];
    if (row == SIZE_MAX) continue;
    const F* dyr = dy + (slot / k) * d;
    const F* o = c->out.data() + row * d;
    F dot = 0;
    for (size_t i = 0; i < d; ++i) {
      dot += dyr[i] * o[i];
      drows[row * d + i] = c->gate[slot] * dyr[i];
    }
    dgate[slot] = dot;
  }
  std::vector<F> dye, dxe(c->xe.size());
  dispatch(drows, &dye, *c);
  std::vector<F> dact(c->act.size()), dpre(c->act.size());
  for (size_t j = 0; j < le; ++j) {
    const size_t b = c->expertBegin[j], m = c->expertBegin[j + 1] - b;
    if (m == 0) continue;
    matmulBackward(c->act.data() + b * f, store_->w(w2_) + j * f * d, dye.data() + b * d,
                   dact.data() + b * f, store_->g(w2_) + j * f * d, store_->g(b2_) + j * d, m, f,
                   d);
    geluBackward(c->pre.data() + b * f, dact.data() + b * f, dpre.data() + b * f, m * f);
    matmulBackward(c->xe.data() + b * d, store_->w(w1_) + j * d * f, dpre.data() + b * f,
                   dxe.data() + b * d, store_->g(w1_) + j * d * f, store_->g(b1_) + j * f, m, d,
                   f);
  }
  std::vector<F> dxrows;
  combine(dxe, &dxrows, *c);
  // Router: gates are p_e / sum of the chosen p; then through the softmax.
  std::vector<F> dlogits(n * ne, F(0));
  for (size_t r = 0; r < n; ++r) {
    F* dxr = dx + r * d;
    std::fill(dxr, dxr + d, F(0));
    for (size_t s = 0; s < k; ++s) {
      const size_t row = c->slotRow[r * k + s];
      if (row == SIZE_MAX) continue;
      for (size_t i = 0; i < d; ++i) dxr[i] += dxrows[row * d + i];
    }
    const F* p = c->probs.data() + r * ne;
    F chosen = 0, gdot = 0;
    for (size_t s = 0; s < k; ++s) {
      chosen += p[c->choice[r * k + s]];
      gdot += dgate[r * k + s] * c->gate[r * k + s];
    }
    std::vector<F> dp(ne, F(0));
    for (size_t s = 0; s < k; ++s) dp[c->choice[r * k + s]] = (dgate[r * k + s] - gdot) / chosen;
    F pdp = 0;
    for (size_t j = 0; j < ne; ++j) pdp += p[j] * dp[j];
    for (size_t j = 0; j < ne; ++j) dlogits[r * ne + j] = p[j] * (dp[j] - pdp);
  }
  std::vector<F> dxr(n * d);
  matmulBackward(x, store_->w(router_), dlogits.data(), dxr.data(), store_->g(router_),
                 static_cast<F*>(nullptr), n, d, ne);
  for (size_t i = 0; i < n * d; ++i) dx[i] += dxr[i];
}

template class MoeLayer<float>;
template class MoeLayer<double>;

}  // namespace braid::train
