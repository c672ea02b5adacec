// Test harness: runs one forward and backward pass of the GPT on one batch,
// either densely (one rank, no communicator) or over a layout with every rank
// a thread and its own Braid communicator, and puts the result back together
// as full tensors: the summed loss and the gradient of every named weight
// (tensor slices placed, data-parallel partial sums added, replicas once).
#pragma once

#include <braid/braid.h>

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "train/config.h"
#include "train/mesh.h"
#include "train/model.h"
#include "train/params.h"
#include "train/rng.h"

namespace braid::train::test {

struct PassResult {
  double loss = 0;
  std::map<std::string, std::vector<double>> grads;
  std::string error;
};

inline std::vector<int32_t> randomBytes(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = static_cast<int32_t>(rng.next() % 256);
  return v;
}

// Adds this rank's counted gradient slices into full tensors.
template <typename F>
void collectGrads(ParamStore<F>& store, std::map<std::string, std::vector<double>>* out) {
  for (size_t i = 0; i < store.infos().size(); ++i) {
    const ParamInfo& p = store.info(static_cast<int>(i));
    if (!p.counted) continue;
    std::vector<double>& full = (*out)[p.name];
    full.resize(static_cast<size_t>(p.fullRows) * p.fullCols, 0.0);
    const int lr = p.split == Split::kRows ? p.fullRows / p.parts : p.fullRows;
    const int lc = p.split == Split::kCols ? p.fullCols / p.parts : p.fullCols;
    const int r0 = p.split == Split::kRows ? p.part * lr : 0;
    const int c0 = p.split == Split::kCols ? p.part * lc : 0;
    const F* g = store.g(static_cast<int>(i));
    for (int r = 0; r < lr; ++r) {
      for (int c = 0; c < lc; ++c) full[(r0 + r) * size_t(p.fullCols) + c0 + c] += g[r * lc + c];
    }
  }
}

// One rank's pass: its data-parallel slice of `batch` sequences, its stage,
// activations to and from neighbouring stages over the pp group.
template <typename F>
void rankPass(const ModelConfig& cfg, const Mesh& mesh, const std::vector<int32_t>& tokens,
              const std::vector<int32_t>& targets, int batch, uint64_t seed, double* loss,
              ParamStore<F>* store) {
  Gpt<F> model(cfg, mesh, store);
  store->finalize(seed, 0.1);
  const int per = batch / mesh.layout.dataParallel();
  const size_t off = static_cast<size_t>(mesh.dataRank()) * per * cfg.seq;
  MicroBatch mb{per, cfg.seq, tokens.data() + off, targets.data() + off};
  const size_t n = mb.rows() * cfg.dModel;
  std::vector<F> in(n), out(n), din(n), dout(n);
  const int prev = mesh.at.pp - 1, next = mesh.lastStage() ? -1 : mesh.at.pp + 1;
  mesh.pp.sendRecv<F>(nullptr, 0, -1, in.data(), n, prev);
  StageCache<F> cache;
  *loss = model.forward(mb, in.data(), out.data(), &cache);
  mesh.pp.sendRecv<F>(out.data(), n, next, nullptr, 0, -1);
  mesh.pp.sendRecv<F>(nullptr, 0, -1, dout.data(), n, next);
  model.backward(&cache, dout.data(), din.data(), F(1), [](int) {});
  mesh.pp.sendRecv<F>(din.data(), n, prev, nullptr, 0, -1);
}

template <typename F>
PassResult densePass(const ModelConfig& cfg, const std::vector<int32_t>& tokens,
                     const std::vector<int32_t>& targets, int batch, uint64_t seed) {
  Mesh mesh;
  ParamStore<F> store;
  PassResult r;
  rankPass<F>(cfg, mesh, tokens, targets, batch, seed, &r.loss, &store);
  collectGrads(store, &r.grads);
  return r;
}

template <typename F>
PassResult parallelPass(const ModelConfig& cfg, const Layout& layout,
                        const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                        int batch, uint64_t seed) {
  const int world = layout.world();
  braidUniqueId id;
  PassResult result;
  if (braidGetUniqueId(&id) != braidSuccess) {
    result.error = braidGetLastError(nullptr);
    return result;
  }
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      braidComm_t comm = nullptr;
      if (braidCommInitRank(&comm, world, id, r) != braidSuccess) {
        std::lock_guard<std::mutex> lock(mu);
        result.error = braidGetLastError(nullptr);
        return;
      }
      {
        Mesh mesh;
        Mesh::build(comm, layout, nullptr, &mesh);
        ParamStore<F> store;
        double loss = 0;
        rankPass<F>(cfg, mesh, tokens, targets, batch, seed, &loss, &store);
        std::lock_guard<std::mutex> lock(mu);
        if (mesh.lastStage() && mesh.at.tp == 0) result.loss += loss;
        collectGrads(store, &result.grads);
      }
      braidCommDestroy(comm);
    });
  }
  for (auto& t : threads) t.join();
  return result;
}

}  // namespace braid::train::test
