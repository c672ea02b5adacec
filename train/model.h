// Gpt: the part of the byte-level GPT that one rank holds (its pipeline
// stage's layers, its tensor-parallel slice of each), with forward and
// backward written out by hand. Tensor parallelism is Megatron's: q/k/v and
// fc1 are column-parallel (heads split), the attention output and fc2 are
// row-parallel followed by an all-reduce; the token embedding and the output
// head are split over the vocabulary, and the cross-entropy is computed
// vocabulary-parallel. With every group of size 1 this is the dense model.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "train/config.h"
#include "train/mesh.h"
#include "train/moe.h"
#include "train/params.h"

namespace braid::train {

struct MicroBatch {
  int batch = 0;  // sequences
  int seq = 0;
  const int32_t* tokens = nullptr;   // [batch * seq]
  const int32_t* targets = nullptr;  // [batch * seq]
  size_t rows() const { return static_cast<size_t>(batch) * seq; }
};

template <typename F>
struct BlockCache {
  std::vector<F> x, ln1, mean1, rstd1, q, k, v, probs, ctx, x2, ln2, mean2, rstd2, pre, act;
  MoeCache<F> moe;
};

// Everything the backward pass of one micro-batch needs.
template <typename F>
struct StageCache {
  MicroBatch mb;
  std::vector<int32_t> tokens, targets;
  std::vector<BlockCache<F>> blocks;
  std::vector<F> xf, lnf, meanf, rstdf, probs;  // head: input, norm, softmax over local vocab
};

// Registers a parameter on this rank: dense tensors split over tp, expert
// tensors split over ep along their first dimension.
template <typename F>
int addParam(ParamStore<F>* store, const Mesh& mesh, const std::string& name, int rows, int cols,
             Split split, Init init, Pool pool, bool decay, int module);

template <typename F>
class Gpt {
 public:
  // Registers this stage's parameters in store (finalize() it afterwards).
  Gpt(const ModelConfig& cfg, const Mesh& mesh, ParamStore<F>* store);

  // Runs this stage on one micro-batch. First stage reads mb's tokens, later
  // stages read `in` ([rows][d]); the last stage returns the summed
  // cross-entropy over mb's tokens, earlier ones write `out`.
  double forward(const MicroBatch& mb, const F* in, F* out, StageCache<F>* c);
  // Backward of one micro-batch. The last stage starts from the loss, each
  // token's loss weighted by lossScale; earlier stages from dout. Writes din
  // on every stage but the first. done(module) is called once a module's
  // gradients for this micro-batch are complete (modules in reverse order).
  void backward(StageCache<F>* c, const F* dout, F* din, F lossScale,
                const std::function<void(int)>& done);

  int numModules() const { return numModules_; }
  const ModelConfig& config() const { return cfg_; }

 private:
  struct BlockParams {
    int ln1g, ln1b, wq, bq, wk, bk, wv, bv, wo, bo, ln2g, ln2b, w1, b1, w2, b2;
    int module;
    std::unique_ptr<MoeLayer<F>> moe;
  };
  void registerBlock(int layer, int module, BlockParams* b);
  void embedForward(const MicroBatch& mb, F* x);
  void embedBackward(const StageCache<F>& c, const F* dx);
  void blockForward(BlockParams& p, const F* x, F* y, size_t n, int batch, BlockCache<F>* c);
  void blockBackward(BlockParams& p, const F* dy, F* dx, size_t n, int batch, BlockCache<F>* c);
  double headForward(const F* x, size_t n, StageCache<F>* c);
  void headBackward(StageCache<F>* c, F* dx, F lossScale);

  ModelConfig cfg_;
  const Mesh& mesh_;
  ParamStore<F>* s_;
  int firstLayer_ = 0, numLayers_ = 0, numModules_ = 0;
  int heads_ = 0, dl_ = 0, fl_ = 0, vl_ = 0;  // local heads, q/k/v width, MLP width, vocab
  int wte_ = -1, wpe_ = -1, embedModule_ = -1;
  int lnfg_ = -1, lnfb_ = -1, head_ = -1, headb_ = -1, headModule_ = -1;
  std::vector<BlockParams> blocks_;
};

}  // namespace braid::train
