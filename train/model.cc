#include "train/model.h"

#include <algorithm>
#include <cmath>

#include "train/kernels.h"

namespace braid::train {

template <typename F>
int addParam(ParamStore<F>* store, const Mesh& mesh, const std::string& name, int rows, int cols,
             Split split, Init init, Pool pool, bool decay, int module) {
  ParamInfo p;
  p.name = name;
  p.fullRows = rows;
  p.fullCols = cols;
  p.split = split;
  p.init = init;
  p.pool = pool;
  p.decay = decay;
  p.module = module;
  if (pool == kExpert) {
    p.parts = mesh.layout.ep;
    p.part = mesh.at.ep;
    p.counted = mesh.at.tp == 0;  // experts are replicated over tp
  } else {
    p.parts = split == Split::kNone ? 1 : mesh.layout.tp;
    p.part = split == Split::kNone ? 0 : mesh.at.tp;
    p.counted = split != Split::kNone || mesh.at.tp == 0;
  }
  return store->add(p);
}

template <typename F>
Gpt<F>::Gpt(const ModelConfig& cfg, const Mesh& mesh, ParamStore<F>* store)
    : cfg_(cfg), mesh_(mesh), s_(store) {
  const int tp = mesh.layout.tp;
  const int d = cfg.dModel;
  heads_ = cfg.heads / tp;
  dl_ = d / tp;
  fl_ = cfg.ff / tp;
  vl_ = cfg.vocab / tp;
  numLayers_ = cfg.layers / mesh.layout.pp;
  firstLayer_ = mesh.at.pp * numLayers_;
  int module = 0;
  auto add = [&](const std::string& n, int r, int c, Split sp, Init in, bool decay) {
    return addParam(s_, mesh, n, r, c, sp, in, kDense, decay, module);
  };
  if (mesh.firstStage()) {
    embedModule_ = module;
    wte_ = add("wte", cfg.vocab, d, Split::kRows, Init::kNormal, true);
    wpe_ = add("wpe", cfg.seq, d, Split::kNone, Init::kNormal, true);
    ++module;
  }
  blocks_.resize(numLayers_);
  for (int i = 0; i < numLayers_; ++i) registerBlock(firstLayer_ + i, module++, &blocks_[i]);
  if (mesh.lastStage()) {
    headModule_ = module;
    lnfg_ = add("lnf.g", 1, d, Split::kNone, Init::kOne, false);
    lnfb_ = add("lnf.b", 1, d, Split::kNone, Init::kZero, false);
    head_ = add("head.w", d, cfg.vocab, Split::kCols, Init::kNormal, true);
    headb_ = add("head.b", 1, cfg.vocab, Split::kCols, Init::kZero, false);
    ++module;
  }
  numModules_ = module;
}

template <typename F>
void Gpt<F>::registerBlock(int layer, int module, BlockParams* b) {
  const int d = cfg_.dModel;
  auto add = [&](const std::string& n, int r, int c, Split sp, Init in, bool decay) {
    return addParam(s_, mesh_, n, r, c, sp, in, kDense, decay, module);
  };
  // Appended piecewise: GCC 12 at -O3 warns falsely (-Wrestrict) on "h" + s + ".".
  std::string pre = "h";
  pre += std::to_string(layer);
  pre += '.';
  b->module = module;
  b->ln1g = add(pre + "ln1.g", 1, d, Split::kNone, Init::kOne, false);
  b->ln1b = add(pre + "ln1.b", 1, d, Split::kNone, Init::kZero, false);
  b->wq = add(pre + "attn.wq", d, d, Split::kCols, Init::kNormal, true);
  b->bq = add(pre + "attn.bq", 1, d, Split::kCols, Init::kZero, false);
  b->wk = add(pre + "attn.wk", d, d, Split::kCols, Init::kNormal, true);
  b->bk = add(pre + "attn.bk", 1, d, Split::kCols, Init::kZero, false);
  b->wv = add(pre + "attn.wv", d, d, Split::kCols, Init::kNormal, true);
  b->bv = add(pre + "attn.bv", 1, d, Split::kCols, Init::kZero, false);
  b->wo = add(pre + "attn.wo", d, d, Split::kRows, Init::kNormal, true);
  b->bo = add(pre + "attn.bo", 1, d, Split::kNone, Init::kZero, false);
  b->ln2g = add(pre + "ln2.g", 1, d, Split::kNone, Init::kOne, false);
  b->ln2b = add(pre + "ln2.b", 1, d, Split::kNone, Init::kZero, false);
  if (cfg_.isMoeLayer(layer)) {
    b->moe = std::make_unique<MoeLayer<F>>(cfg_, pre + "moe.", mesh_, s_, module);
    return;
  }
  b->w1 = add(pre + "mlp.w1", d, cfg_.ff, Split::kCols, Init::kNormal, true);
  b->b1 = add(pre + "mlp.b1", 1, cfg_.ff, Split::kCols, Init::kZero, false);
  b->w2 = add(pre + "mlp.w2", cfg_.ff, d, Split::kRows, Init::kNormal, true);
  b->b2 = add(pre + "mlp.b2", 1, d, Split::kNone, Init::kZero, false);
}

template <typename F>
void Gpt<F>::embedForward(const MicroBatch& mb, F* x) {
  const size_t d = cfg_.dModel, n = mb.rows();
  const int lo = mesh_.at.tp * vl_;
  const F* wte = s_->w(wte_);
  for (size_t r = 0; r < n; ++r) {
    const int tok = mb.tokens[r] - lo;
    F* xr = x + r * d;
    if (tok >= 0 && tok < vl_) {
      std::copy(wte + tok * d, wte + (tok + 1) * d, xr);
    } else {
      std::fill(xr, xr + d, F(0));
    }
  }
  mesh_.tp.allReduce(x, n * d);
  const F* wpe = s_->w(wpe_);
  for (size_t r = 0; r < n; ++r) {
    const F* pr = wpe + (r % mb.seq) * d;
    for (size_t i = 0; i < d; ++i) x[r * d + i] += pr[i];
  }
}

template <typename F>
void Gpt<F>::embedBackward(const StageCache<F>& c, const F* dx) {
  const size_t d = cfg_.dModel, n = c.mb.rows();
  const int lo = mesh_.at.tp * vl_;
  F* gte = s_->g(wte_);
  F* gpe = s_->g(wpe_);
  for (size_t r = 0; r < n; ++r) {
    const F* dr = dx + r * d;
    const int tok = c.tokens[r] - lo;
    if (tok >= 0 && tok < vl_) {
      for (size_t i = 0; i < d; ++i) gte[tok * d + i] += dr[i];
    }
    F* pr = gpe + (r % c.mb.seq) * d;
    for (size_t i = 0; i < d; ++i) pr[i] += dr[i];
  }
}

template <typename F>
void Gpt<F>::blockForward(BlockParams& p, const F* x, F* y, size_t n, int batch,
                          BlockCache<F>* c) {
  const size_t d = cfg_.dModel, t = n / batch;
  auto& s = *s_;
  c->x.assign(x, x + n * d);
  c->ln1.resize(n * d);
  c->mean1.resize(n);
  c->rstd1.resize(n);
  layerNorm(x, s.w(p.ln1g), s.w(p.ln1b), c->ln1.data(), c->mean1.data(), c->rstd1.data(), n, d);
  for (auto* v : {&c->q, &c->k, &c->v, &c->ctx}) v->resize(n * dl_);
  matmul(c->ln1.data(), s.w(p.wq), s.w(p.bq), c->q.data(), n, d, dl_);
  matmul(c->ln1.data(), s.w(p.wk), s.w(p.bk), c->k.data(), n, d, dl_);
  matmul(c->ln1.data(), s.w(p.wv), s.w(p.bv), c->v.data(), n, d, dl_);
  c->probs.resize(batch * heads_ * t * t);
  attention(c->q.data(), c->k.data(), c->v.data(), c->probs.data(), c->ctx.data(), batch, t,
            heads_, dl_ / heads_);
  // Row-parallel output projection: partial sums, all-reduce, then the bias.
  std::vector<F> tmp(n * d);
  matmul(c->ctx.data(), s.w(p.wo), static_cast<const F*>(nullptr), tmp.data(), n, dl_, d);
  mesh_.tp.allReduce(tmp.data(), n * d);
  c->x2.resize(n * d);
  const F* bo = s.w(p.bo);
  for (size_t i = 0; i < n * d; ++i) c->x2[i] = x[i] + (tmp[i] + bo[i % d]);
  c->ln2.resize(n * d);
  c->mean2.resize(n);
  c->rstd2.resize(n);
  layerNorm(c->x2.data(), s.w(p.ln2g), s.w(p.ln2b), c->ln2.data(), c->mean2.data(),
            c->rstd2.data(), n, d);
  if (p.moe) {
    p.moe->forward(c->ln2.data(), tmp.data(), n, &c->moe);
    for (size_t i = 0; i < n * d; ++i) y[i] = c->x2[i] + tmp[i];
    return;
  }
  c->pre.resize(n * fl_);
  c->act.resize(n * fl_);
  matmul(c->ln2.data(), s.w(p.w1), s.w(p.b1), c->pre.data(), n, d, fl_);
  gelu(c->pre.data(), c->act.data(), n * fl_);
  matmul(c->act.data(), s.w(p.w2), static_cast<const F*>(nullptr), tmp.data(), n, fl_, d);
  mesh_.tp.allReduce(tmp.data(), n * d);
  const F* b2 = s.w(p.b2);
  for (size_t i = 0; i < n * d; ++i) y[i] = c->x2[i] + (tmp[i] + b2[i % d]);
}

template <typename F>
void Gpt<F>::blockBackward(BlockParams& p, const F* dy, F* dx, size_t n, int batch,
                           BlockCache<F>* c) {
  const size_t d = cfg_.dModel, t = n / batch;
  auto& s = *s_;
  std::vector<F> dx2(dy, dy + n * d);
  std::vector<F> dln(n * d);
  if (p.moe) {
    p.moe->backward(c->ln2.data(), dy, dln.data(), n, &c->moe);
  } else {
    std::vector<F> dact(n * fl_), dpre(n * fl_);
    matmulBackward(c->act.data(), s.w(p.w2), dy, dact.data(), s.g(p.w2), s.g(p.b2), n, fl_, d);
    geluBackward(c->pre.data(), dact.data(), dpre.data(), n * fl_);
    matmulBackward(c->ln2.data(), s.w(p.w1), dpre.data(), dln.data(), s.g(p.w1), s.g(p.b1), n, d,
                   fl_);
    mesh_.tp.allReduce(dln.data(), n * d);
  }
  layerNormBackward(c->x2.data(), s.w(p.ln2g), c->mean2.data(), c->rstd2.data(), dln.data(),
                    dx2.data(), s.g(p.ln2g), s.g(p.ln2b), n, d);
  std::vector<F> dctx(n * dl_), dq(n * dl_), dk(n * dl_), dv(n * dl_), scratch(t);
  matmulBackward(c->ctx.data(), s.w(p.wo), dx2.data(), dctx.data(), s.g(p.wo), s.g(p.bo), n, dl_,
                 d);
  attentionBackward(c->q.data(), c->k.data(), c->v.data(), c->probs.data(), dctx.data(), dq.data(),
                    dk.data(), dv.data(), scratch.data(), batch, t, heads_, dl_ / heads_);
  std::vector<F> part(n * d);
  matmulBackward(c->ln1.data(), s.w(p.wq), dq.data(), dln.data(), s.g(p.wq), s.g(p.bq), n, d, dl_);
  matmulBackward(c->ln1.data(), s.w(p.wk), dk.data(), part.data(), s.g(p.wk), s.g(p.bk), n, d, dl_);
  for (size_t i = 0; i < n * d; ++i) dln[i] += part[i];
  matmulBackward(c->ln1.data(), s.w(p.wv), dv.data(), part.data(), s.g(p.wv), s.g(p.bv), n, d, dl_);
  for (size_t i = 0; i < n * d; ++i) dln[i] += part[i];
  mesh_.tp.allReduce(dln.data(), n * d);
  std::copy(dx2.begin(), dx2.end(), dx);
  layerNormBackward(c->x.data(), s.w(p.ln1g), c->mean1.data(), c->rstd1.data(), dln.data(), dx,
                    s.g(p.ln1g), s.g(p.ln1b), n, d);
}

template <typename F>
double Gpt<F>::headForward(const F* x, size_t n, StageCache<F>* c) {
  const size_t d = cfg_.dModel;
  auto& s = *s_;
  c->xf.assign(x, x + n * d);
  c->lnf.resize(n * d);
  c->meanf.resize(n);
  c->rstdf.resize(n);
  layerNorm(x, s.w(lnfg_), s.w(lnfb_), c->lnf.data(), c->meanf.data(), c->rstdf.data(), n, d);
  c->probs.resize(n * vl_);
  F* lg = c->probs.data();
  matmul(c->lnf.data(), s.w(head_), s.w(headb_), lg, n, d, vl_);
  // Vocabulary-parallel cross-entropy: global max, then global sum of
  // exponentials and the target's logit (held by one rank) in one all-reduce.
  std::vector<F> mx(n), sums(2 * n, F(0));
  const int lo = mesh_.at.tp * vl_;
  for (size_t r = 0; r < n; ++r) mx[r] = *std::max_element(lg + r * vl_, lg + (r + 1) * vl_);
  mesh_.tp.allReduce(mx.data(), n, braidMax);
  for (size_t r = 0; r < n; ++r) {
    F* lr = lg + r * vl_;
    const int tgt = c->targets[r] - lo;
    if (tgt >= 0 && tgt < vl_) sums[n + r] = lr[tgt] - mx[r];
    F sum = 0;
    for (int v = 0; v < vl_; ++v) {
      lr[v] = std::exp(lr[v] - mx[r]);
      sum += lr[v];
    }
    sums[r] = sum;
  }
  mesh_.tp.allReduce(sums.data(), 2 * n);
  double loss = 0;
  for (size_t r = 0; r < n; ++r) {
    const F inv = F(1) / sums[r];
    for (int v = 0; v < vl_; ++v) lg[r * vl_ + v] *= inv;
    loss += static_cast<double>(std::log(sums[r]) - sums[n + r]);
  }
  return loss;
}

template <typename F>
void Gpt<F>::headBackward(StageCache<F>* c, F* dx, F lossScale) {
  const size_t d = cfg_.dModel, n = c->mb.rows();
  auto& s = *s_;
  const int lo = mesh_.at.tp * vl_;
  std::vector<F> dlogits(n * vl_);
  for (size_t r = 0; r < n; ++r) {
    const F* pr = c->probs.data() + r * vl_;
    F* dr = dlogits.data() + r * vl_;
    for (int v = 0; v < vl_; ++v) dr[v] = pr[v] * lossScale;
    const int tgt = c->targets[r] - lo;
    if (tgt >= 0 && tgt < vl_) dr[tgt] -= lossScale;
  }
  std::vector<F> dln(n * d);
  matmulBackward(c->lnf.data(), s.w(head_), dlogits.data(), dln.data(), s.g(head_), s.g(headb_), n,
                 d, vl_);
  mesh_.tp.allReduce(dln.data(), n * d);
  std::fill(dx, dx + n * d, F(0));
  layerNormBackward(c->xf.data(), s.w(lnfg_), c->meanf.data(), c->rstdf.data(), dln.data(), dx,
                    s.g(lnfg_), s.g(lnfb_), n, d);
}

template <typename F>
double Gpt<F>::forward(const MicroBatch& mb, const F* in, F* out, StageCache<F>* c) {
  const size_t n = mb.rows(), d = cfg_.dModel;
  c->mb = mb;
  c->tokens.assign(mb.tokens, mb.tokens + n);
  c->targets.assign(mb.targets, mb.targets + n);
  c->mb.tokens = c->tokens.data();
  c->mb.targets = c->targets.data();
  std::vector<F> x(n * d), y(n * d);
  if (mesh_.firstStage()) {
    embedForward(c->mb, x.data());
  } else {
    std::copy(in, in + n * d, x.begin());
  }
  c->blocks.resize(numLayers_);
  for (int i = 0; i < numLayers_; ++i) {
    blockForward(blocks_[i], x.data(), y.data(), n, mb.batch, &c->blocks[i]);
    x.swap(y);
  }
  if (mesh_.lastStage()) return headForward(x.data(), n, c);
  std::copy(x.begin(), x.end(), out);
  return 0;
}

template <typename F>
void Gpt<F>::backward(StageCache<F>* c, const F* dout, F* din, F lossScale,
                      const std::function<void(int)>& done) {
  const size_t n = c->mb.rows(), d = cfg_.dModel;
  std::vector<F> dy(n * d), dx(n * d);
  if (mesh_.lastStage()) {
    headBackward(c, dy.data(), lossScale);
    done(headModule_);
  } else {
    std::copy(dout, dout + n * d, dy.begin());
  }
  for (int i = numLayers_ - 1; i >= 0; --i) {
    blockBackward(blocks_[i], dy.data(), dx.data(), n, c->mb.batch, &c->blocks[i]);
    done(blocks_[i].module);
    dy.swap(dx);
  }
  if (mesh_.firstStage()) {
    embedBackward(*c, dy.data());
    done(embedModule_);
  } else {
    std::copy(dy.begin(), dy.end(), din);
  }
  c->blocks.clear();  // activations are not needed any more
}

template int addParam<float>(ParamStore<float>*, const Mesh&, const std::string&, int, int, Split,
                             Init, Pool, bool, int);
template int addParam<double>(ParamStore<double>*, const Mesh&, const std::string&, int, int,
                              Split, Init, Pool, bool, int);
template class Gpt<float>;
template class Gpt<double>;

}  // namespace braid::train
