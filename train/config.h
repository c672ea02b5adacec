// What a training run is: the model (a preset plus MoE options), the parallel
// layout and the optimiser, as parsed from braid-train's command line. Plain
// data; validate() states every divisibility rule with a message a user can
// act on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::train {

struct ModelConfig {
  std::string name = "tiny";
  int layers = 4;
  int dModel = 128;
  int heads = 4;
  int seq = 128;
  int vocab = 256;
  int ff = 512;  // MLP hidden width (4 x dModel)
  bool moe = false;
  int experts = 4;
  int topK = 2;
  int moeEvery = 1;             // every layer (1) or every other layer (2) is MoE
  double capacityFactor = 0.0;  // 0: dropless

  bool isMoeLayer(int layer) const { return moe && (layer % moeEvery) == moeEvery - 1; }
};

// Presets: micro (tests), tiny, small. Returns false for an unknown name.
bool modelPreset(const std::string& name, ModelConfig* out);

enum class PipeSchedule { kGpipe, kOneFOneB };

// The device mesh: world = pp x dp x ep x tp, tensor-parallel innermost.
struct Layout {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int ep = 1;
  int zero = 0;  // 0: all-reduce gradients; 1: ZeRO-1 (sharded optimizer state)
  PipeSchedule schedule = PipeSchedule::kOneFOneB;
  int microBatches = 1;

  int world() const { return dp * tp * pp * ep; }
  int dataParallel() const { return dp * ep; }  // ranks that see different data
};

struct OptimConfig {
  double lr = 3e-3;
  int warmup = 10;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weightDecay = 0.01;
  double clip = 1.0;
};

struct TrainConfig {
  ModelConfig model;
  Layout layout;
  OptimConfig optim;
  int globalBatch = 8;  // sequences per step
  int steps = 50;
  uint64_t seed = 1234;
  std::string data;  // a text file; empty: the fortunes corpus
  std::string logJson;
  std::string trace;  // --trace DIR: BRAID_TRACE for every communicator of the job
  std::string save;
  std::string resume;
  std::string dumpParams;
  int bucketKb = 256;  // gradient bucket size
  bool quiet = false;
  int logEvery = 1;  // print every n-th step (the JSON log has them all)
};

// Parses braid-train's training flags. On error returns false with *error set.
bool parseTrainArgs(const std::vector<std::string>& args, TrainConfig* out, std::string* error);

// Every rule the layout must obey for worldSize ranks; "" when it does.
std::string validate(const TrainConfig& cfg, int worldSize);

std::string layoutName(const Layout& l);

}  // namespace braid::train
