// The MSCCL reader's parts (algorithms/file/msccl_xml.h): the file's thread blocks with
// their steps already mapped to Braid's, and the ordering that makes them one step list
// per rank.
#pragma once

#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "core/status.h"

namespace braid::algo::msccl {

// One <step>, mapped: `step` holds Braid's op, buffers and chunk runs; a nop has none.
struct LaneStep {
  bool nop = false;
  Step step{OpKind::kCopy};
  std::string type;  // as the file spells it, for messages
  int depLane = -1;  // index into Rank::lanes, or -1
  int depStep = -1;
  int line = 0;
};

// One <tb>: a lane of steps that run in order.
struct Lane {
  int id = 0;
  int send = -1;
  int recv = -1;
  int chan = 0;
  std::vector<LaneStep> steps;
};

struct Rank {
  std::vector<Lane> lanes;
};

// "gpu G, tb T, step S" (S < 0: the thread block only).
std::string where(int gpu, int tb, int step);

// Every rank's steps in one list: rounds, each rank's steps of a round one batch.
Expected<std::vector<std::vector<Step>>> orderLanes(const std::vector<Rank>& ranks);

}  // namespace braid::algo::msccl
