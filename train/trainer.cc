#include "train/trainer.h"

#include <algorithm>

#include "train/checkpoint.h"

namespace braid::train {

Trainer::Trainer(const TrainConfig& cfg, braidComm_t world) : cfg_(cfg), worldComm_(world) {}

std::string Trainer::init() {
  int worldSize = 1, rank = 0;
  braidCommCount(worldComm_, &worldSize);
  braidCommUserRank(worldComm_, &rank);
  setLogRank(rank);
  if (std::string e = validate(cfg_, worldSize); !e.empty()) return e;
  if (std::string e = corpus_.load(cfg_.data, cfg_.model.seq); !e.empty()) return e;
  Mesh::build(worldComm_, cfg_.layout, &stats_, &mesh_);
  model_ = std::make_unique<Gpt<float>>(cfg_.model, mesh_, &store_);
  store_.finalize(cfg_.seed, 0.02);
  opt_ = std::make_unique<Optimizer>(cfg_.optim, mesh_, &store_, size_t(cfg_.bucketKb) * 1024,
                                     &stats_);
  if (!cfg_.resume.empty()) {
    if (std::string e = loadCheckpoint(cfg_.resume, cfg_, mesh_, &startStep_, &store_, opt_.get());
        !e.empty()) {
      return e;
    }
  }
  microBatch_ = cfg_.globalBatch / (cfg_.layout.dataParallel() * cfg_.layout.microBatches);
  if (mesh_.worldRank == 0 && !cfg_.logJson.empty()) {
    json_ = std::fopen(cfg_.logJson.c_str(), "w");
    if (json_ == nullptr) return "cannot write --log-json " + cfg_.logJson;
  }
  if (mesh_.worldRank == 0 && !cfg_.quiet) {
    std::printf("braid-train: model %s%s (%d layers, d_model %d, %d heads, seq %d), layout %s, "
                "global batch %d x %d tokens, corpus %s (%zu bytes)\n",
                cfg_.model.name.c_str(), cfg_.model.moe ? "+moe" : "", cfg_.model.layers,
                cfg_.model.dModel, cfg_.model.heads, cfg_.model.seq,
                layoutName(cfg_.layout).c_str(), cfg_.globalBatch, cfg_.model.seq,
                corpus_.source().c_str(), corpus_.size());
  }
  return "";
}

void Trainer::forwardMicro(int m) {
  const double t0 = nowSeconds(), e0 = stats_.exposed();
  MicroBatch mb{microBatch_, cfg_.model.seq, tokens_[m].data(), targets_[m].data()};
  lossSum_ += model_->forward(mb, actIn_[m].data(), actOut_[m].data(), &caches_[m]);
  fwdSeconds_ += (nowSeconds() - t0) - (stats_.exposed() - e0);
}

void Trainer::backwardMicro(int m) {
  const double t0 = nowSeconds(), e0 = stats_.exposed();
  const bool last = m == cfg_.layout.microBatches - 1;
  const float scale = 1.0f / static_cast<float>(cfg_.globalBatch * cfg_.model.seq);
  model_->backward(&caches_[m], gradOut_[m].data(), gradIn_[m].data(), scale, [&](int module) {
    if (last) opt_->moduleDone(module);
  });
  bwdSeconds_ += (nowSeconds() - t0) - (stats_.exposed() - e0);
}

namespace {

// Moves one micro-batch's activations or gradients between neighbouring
// stages; both halves in one Braid group so paired exchanges cannot deadlock.
struct PipeLink {
  const Group& pp;
  size_t count;
  double* wait;
  void operator()(const std::vector<float>* send, int sendPeer, std::vector<float>* recv,
                  int recvPeer) const {
    const double t0 = nowSeconds();
    pp.sendRecv(send ? send->data() : nullptr, count, send ? sendPeer : -1,
                recv ? recv->data() : nullptr, count, recv ? recvPeer : -1);
    *wait += nowSeconds() - t0;
  }
};

}  // namespace

void Trainer::runGpipe(int micro) {
  const int prev = mesh_.at.pp - 1;
  const int next = mesh_.lastStage() ? -1 : mesh_.at.pp + 1;
  PipeLink link{mesh_.pp, actIn_[0].size(), &ppWait_};
  for (int m = 0; m < micro; ++m) {
    link(nullptr, -1, &actIn_[m], prev);
    forwardMicro(m);
    link(&actOut_[m], next, nullptr, -1);
  }
  for (int m = 0; m < micro; ++m) {
    link(nullptr, -1, &gradOut_[m], next);
    backwardMicro(m);
    link(&gradIn_[m], prev, nullptr, -1);
  }
}

// 1F1B: warm up with as many forwards as stages after this one, then
// alternate one forward and one backward, then drain the backwards.
void Trainer::runOneFOneB(int micro) {
  const int prev = mesh_.at.pp - 1;
  const int next = mesh_.lastStage() ? -1 : mesh_.at.pp + 1;
  PipeLink link{mesh_.pp, actIn_[0].size(), &ppWait_};
  const int warm = std::min(cfg_.layout.pp - mesh_.at.pp - 1, micro);
  const int steady = micro - warm;
  int fm = 0, bm = 0;
  for (int i = 0; i < warm; ++i, ++fm) {
    link(nullptr, -1, &actIn_[fm], prev);
    forwardMicro(fm);
    link(&actOut_[fm], next, nullptr, -1);
  }
  if (steady > 0) link(nullptr, -1, &actIn_[fm], prev);
  for (int i = 0; i < steady; ++i, ++bm) {
    forwardMicro(fm);
    link(&actOut_[fm], next, &gradOut_[bm], next);
    ++fm;
    backwardMicro(bm);
    if (i == steady - 1) {
      link(&gradIn_[bm], prev, nullptr, -1);
    } else {
      link(&gradIn_[bm], prev, &actIn_[fm], prev);
    }
  }
  for (int i = 0; i < warm; ++i, ++bm) {
    link(nullptr, -1, &gradOut_[bm], next);
    backwardMicro(bm);
    link(&gradIn_[bm], prev, nullptr, -1);
  }
}

StepReport Trainer::trainStep(int step) {
  const Layout& l = cfg_.layout;
  const int micro = l.microBatches, seq = cfg_.model.seq;
  const size_t act = static_cast<size_t>(microBatch_) * seq * cfg_.model.dModel;
  stats_.startStep();
  store_.zeroGrads();
  tokens_.resize(micro);
  targets_.resize(micro);
  caches_.resize(micro);
  for (auto* v : {&actIn_, &actOut_, &gradIn_, &gradOut_}) {
    v->resize(micro);
    for (auto& b : *v) b.resize(act);
  }
  // The step's start on the trace's timeline (nothing when the job does not trace).
  braidTraceMarker(worldComm_, ("step " + std::to_string(step)).c_str());
  const int perRank = cfg_.globalBatch / l.dataParallel();
  for (int m = 0; m < micro; ++m) {
    corpus_.batch(cfg_.seed, step, cfg_.globalBatch, mesh_.dataRank() * perRank + m * microBatch_,
                  microBatch_, seq, &tokens_[m], &targets_[m]);
  }
  lossSum_ = fwdSeconds_ = bwdSeconds_ = 0;
  const double t0 = nowSeconds(), e0 = stats_.exposed();
  if (l.schedule == PipeSchedule::kGpipe || l.pp == 1) {
    runGpipe(micro);
  } else {
    runOneFOneB(micro);
  }
  const double t1 = nowSeconds(), e1 = stats_.exposed();
  StepReport r;
  r.step = step;
  r.gradNorm = opt_->step(step + 1);
  double loss = (mesh_.lastStage() && mesh_.at.tp == 0) ? lossSum_ : 0.0;
  mesh_.world.allReduce(&loss, 1);
  const double t2 = nowSeconds(), e2 = stats_.exposed();
  r.loss = loss / (static_cast<double>(cfg_.globalBatch) * seq);
  r.seconds = t2 - t0;
  r.forward = fwdSeconds_;
  r.backward = bwdSeconds_;
  r.optimizer = (t2 - t1) - (e2 - e1);
  r.comm = e2 - e0;
  r.tokensPerSecond = cfg_.globalBatch * seq / r.seconds;
  return r;
}

void Trainer::logStep(const StepReport& r) {
  if (mesh_.worldRank != 0) return;
  const bool print = r.step % cfg_.logEvery == 0 || r.step == cfg_.steps - 1;
  if (!cfg_.quiet && print) {
    std::printf("step %4d  loss %.6f  gnorm %.4f  %8.0f tok/s  fwd %.1f bwd %.1f opt %.1f comm %.1f ms",
                r.step, r.loss, r.gradNorm, r.tokensPerSecond, r.forward * 1e3, r.backward * 1e3,
                r.optimizer * 1e3, r.comm * 1e3);
    for (const auto& [key, c] : stats_.step()) {
      std::printf("  %s %.1fKB", key.c_str(), c.bytes / 1024.0);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  if (json_ != nullptr) {
    std::fprintf(json_,
                 "{\"step\":%d,\"loss\":%.17g,\"grad_norm\":%.17g,\"tokens_per_s\":%.1f,"
                 "\"step_s\":%.6f,\"fwd_s\":%.6f,\"bwd_s\":%.6f,\"opt_s\":%.6f,\"comm_s\":%.6f,"
                 "\"bytes\":{",
                 r.step, r.loss, r.gradNorm, r.tokensPerSecond, r.seconds, r.forward, r.backward,
                 r.optimizer, r.comm);
    bool first = true;
    for (const auto& [key, c] : stats_.step()) {
      std::fprintf(json_, "%s\"%s\":%llu", first ? "" : ",", key.c_str(),
                   static_cast<unsigned long long>(c.bytes));
      first = false;
    }
    std::fprintf(json_, "}}\n");
    std::fflush(json_);
  }
}

void Trainer::summary(double seconds, int steps) {
  // Memory of every rank, gathered to print on rank 0.
  const int world = mesh_.world.size();
  double mine[3] = {store_.totalElements() * 4.0, store_.totalElements() * 4.0,
                    static_cast<double>(opt_->stateBytes())};
  std::vector<double> all(3 * world);
  mesh_.world.allGather(mine, all.data(), 3);
  if (mesh_.worldRank != 0 || cfg_.quiet) return;
  std::printf("\nbraid-train: %d steps in %.2f s (%.1f ms/step), rank 0's collectives:\n", steps,
              seconds, steps ? 1e3 * seconds / steps : 0.0);
  std::printf("  %-26s %8s %14s %10s %12s %12s\n", "group.collective", "calls", "bytes",
              "time(s)", "algbw(GB/s)", "busbw(GB/s)");
  for (const auto& [key, c] : stats_.total()) {
    const double alg = c.seconds > 0 ? c.bytes / c.seconds / 1e9 : 0;
    std::printf("  %-26s %8llu %14llu %10.4f %12.3f %12.3f%s\n", key.c_str(),
                static_cast<unsigned long long>(c.calls), static_cast<unsigned long long>(c.bytes),
                c.seconds, alg, alg * c.busFactor, c.seconds > 0 ? "" : "  (async, overlapped)");
  }
  const Layout& l = cfg_.layout;
  if (l.pp > 1) {
    std::printf("  pipeline bubble: ideal %.1f%% ((p-1)/(m+p-1)), measured pipeline wait on rank 0 "
                "%.1f%% of step time\n",
                100.0 * (l.pp - 1) / (l.microBatches + l.pp - 1),
                seconds > 0 ? 100.0 * ppWait_ / seconds : 0.0);
  }
  std::printf("  memory per rank (MiB): rank  params  grads  optimizer\n");
  for (int r = 0; r < world; ++r) {
    std::printf("                         %4d %7.2f %6.2f %10.2f\n", r, all[3 * r] / 1048576.0,
                all[3 * r + 1] / 1048576.0, all[3 * r + 2] / 1048576.0);
  }
}

int Trainer::run() {
  const double t0 = nowSeconds();
  ppWait_ = 0;
  for (int step = startStep_; step < cfg_.steps; ++step) logStep(trainStep(step));
  const double seconds = nowSeconds() - t0;
  if (json_ != nullptr) std::fclose(json_);
  json_ = nullptr;
  if (!cfg_.save.empty()) {
    std::string e = saveCheckpoint(cfg_.save, cfg_, mesh_, std::max(startStep_, cfg_.steps),
                                   &store_, opt_.get());
    if (!e.empty()) fatal(e);
  }
  if (!cfg_.dumpParams.empty()) {
    std::string e = dumpParams(cfg_.dumpParams, mesh_, &store_);
    if (!e.empty()) fatal(e);
  }
  summary(seconds, cfg_.steps - startStep_);
  return 0;
}

}  // namespace braid::train
