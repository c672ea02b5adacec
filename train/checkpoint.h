// Checkpoints and parameter dumps. A checkpoint is one file per rank
// (<prefix>.rank<r>) holding that rank's weights and AdamW state and the next
// step; resuming needs the same layout and model, and gives bit-identical
// training because batches depend only on (seed, step). A parameter dump
// gathers every full tensor (slices put back together) into one file written
// by rank 0, so runs with different layouts can be compared element by element.
#pragma once

#include <string>

#include "train/config.h"
#include "train/mesh.h"
#include "train/optimizer.h"
#include "train/params.h"

namespace braid::train {

std::string saveCheckpoint(const std::string& prefix, const TrainConfig& cfg, const Mesh& mesh,
                           int nextStep, ParamStore<float>* store, Optimizer* opt);
std::string loadCheckpoint(const std::string& prefix, const TrainConfig& cfg, const Mesh& mesh,
                           int* nextStep, ParamStore<float>* store, Optimizer* opt);

// Every rank calls it; rank 0 writes `path`.
std::string dumpParams(const std::string& path, const Mesh& mesh, ParamStore<float>* store);

// `braid-train compare a.jsonl b.jsonl [--rtol R]`: losses of the steps both
// logs hold. `braid-train compare-params a b [--atol A]`. Exit codes: 0 equal,
// 1 divergent, 2 usage or unreadable input.
int compareLogs(int argc, char** argv);
int compareParams(int argc, char** argv);

}  // namespace braid::train
