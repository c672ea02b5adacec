// MoeLayer: the mixture-of-experts MLP. A float router picks the top-k of E
// experts per token (gates renormalised over the chosen k); experts are split
// over the ep group and tokens travel to their expert's rank with an
// all-to-all of per-expert counts, then an all-to-all-v of rows, and come back
// the same way. Each row's expert computation is independent of the others,
// so with dropless routing any ep gives the same outputs as one rank.
// Optional capacity factor drops slots beyond ceil(cf * tokens * k / E) per
// expert, counted on the local batch. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/config.h"
#include "train/mesh.h"
#include "train/params.h"

namespace braid::train {

template <typename F>
struct MoeCache {
  std::vector<F> probs;               // [n][E] router softmax
  std::vector<int> choice;            // [n*k] chosen expert
  std::vector<int> expert;            // [n*k] expert that runs the slot, -1 when dropped
  std::vector<F> gate;                // [n*k]
  std::vector<size_t> slotRow;        // [n*k] row in the dispatch buffer
  std::vector<size_t> sendRows;       // rows to each ep peer
  std::vector<size_t> recvRows;       // rows from each ep peer
  std::vector<size_t> perm;           // expert-major row -> received row
  std::vector<size_t> expertBegin;    // local expert offsets in expert-major rows
  std::vector<F> xe, pre, act;        // expert-major inputs and hidden layer
  std::vector<F> out;                 // expert outputs, in dispatch order
};

template <typename F>
class MoeLayer {
 public:
  MoeLayer(const ModelConfig& cfg, const std::string& prefix, const Mesh& mesh,
           ParamStore<F>* store, int module);
  // y = sum over chosen experts of gate * expert(x); x, y: [n][d]. y overwritten.
  void forward(const F* x, F* y, size_t n, MoeCache<F>* c);
  // dx overwritten with the gradient through experts and router.
  void backward(const F* x, const F* dy, F* dx, size_t n, MoeCache<F>* c);

 private:
  void route(const F* x, size_t n, MoeCache<F>* c);
  // Orders the routed rows for dispatch (by expert, hence by owning rank, then
  // by slot), exchanges per-expert counts and plans the expert-major order.
  void plan(const F* x, size_t n, std::vector<F>* rows, MoeCache<F>* c);
  // Moves rows (dispatch order) to their experts' ranks and returns them
  // expert-major; the reverse brings expert-major rows home.
  void dispatch(const std::vector<F>& rows, std::vector<F>* expertMajor, const MoeCache<F>& c);
  void combine(const std::vector<F>& expertMajor, std::vector<F>* rows, const MoeCache<F>& c);

  ModelConfig cfg_;
  const Mesh& mesh_;
  ParamStore<F>* store_;
  int router_, w1_, b1_, w2_, b2_;
  int localExperts_, firstExpert_;
};

}  // namespace braid::train
