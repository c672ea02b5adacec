// Trainer: one rank's training loop. Builds the mesh, this rank's stage of
// the model and the optimizer, runs the pipeline schedule (GPipe or 1F1B;
// with one stage it is plain gradient accumulation) over the micro-batches of
// each step, and reports per step and at the end. The world communicator is
// borrowed. Not thread-safe.
#pragma once

#include <braid/braid.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "train/config.h"
#include "train/data.h"
#include "train/mesh.h"
#include "train/model.h"
#include "train/optimizer.h"

namespace braid::train {

struct StepReport {
  int step = 0;
  double loss = 0;  // mean cross-entropy over the global batch
  double gradNorm = 0;
  double seconds = 0, forward = 0, backward = 0, optimizer = 0, comm = 0;
  double tokensPerSecond = 0;
};

class Trainer {
 public:
  Trainer(const TrainConfig& cfg, braidComm_t world);
  // Sets up (corpus, mesh, model, optimizer, checkpoint); "" or an error.
  std::string init();
  // Trains from the resumed step (or 0) to cfg.steps; returns the exit code.
  int run();

 private:
  StepReport trainStep(int step);
  void runGpipe(int micro);
  void runOneFOneB(int micro);
  void forwardMicro(int m);
  void backwardMicro(int m);
  void logStep(const StepReport& r);
  void summary(double seconds, int steps);

  TrainConfig cfg_;
  braidComm_t worldComm_;
  CommStats stats_;
  Mesh mesh_;
  Corpus corpus_;
  ParamStore<float> store_;
  std::unique_ptr<Gpt<float>> model_;
  std::unique_ptr<Optimizer> opt_;
  int startStep_ = 0;
  FILE* json_ = nullptr;

  // Per micro-batch state of the current step.
  std::vector<std::vector<int32_t>> tokens_, targets_;
  std::vector<StageCache<float>> caches_;
  std::vector<std::vector<float>> actIn_, actOut_, gradIn_, gradOut_;
  double lossSum_ = 0;
  double fwdSeconds_ = 0, bwdSeconds_ = 0, ppWait_ = 0;
  int microBatch_ = 0;  // sequences per micro-batch
};

}  // namespace braid::train
