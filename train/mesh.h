// The device mesh: world = pp x dp x ep x tp with tensor-parallel innermost,
// and one Group per axis made with braidCommSplit. "data" joins dp and ep (the
// ranks that see different samples and hold replicas of the dense weights);
// "dp" alone holds replicas of an expert's weights. Owns the sub-communicators
// (not the world one). Not thread-safe.
#pragma once

#include "train/config.h"
#include "train/group.h"

namespace braid::train {

struct Coords {
  int pp = 0;
  int dp = 0;
  int ep = 0;
  int tp = 0;
};

class Mesh {
 public:
  Mesh() = default;  // one rank: every group of size 1
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  // Splits world into every axis; every rank of world must call it.
  static void build(braidComm_t world, const Layout& layout, CommStats* stats, Mesh* out);

  Layout layout;
  Coords at;
  int worldRank = 0;
  Group world, tp, pp, dp, ep, data;

  int dataRank() const { return at.dp * layout.ep + at.ep; }
  bool firstStage() const { return at.pp == 0; }
  bool lastStage() const { return at.pp == layout.pp - 1; }

 private:
  std::vector<braidComm_t> owned_;
};

}  // namespace braid::train
