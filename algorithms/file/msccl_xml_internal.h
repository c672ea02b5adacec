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

// Where in its block the data of every scratch chunk sits (its place, 0..chunksPerBlock-1).
// Braid cuts a block of c elements into chunks by place, so where c is not a multiple of
// the chunks per block, chunks of different places differ in size: a step must move data
// between chunks of one place. MSCCL's scratch has no blocks; a scratch chunk takes the
// place of the data first written to it (or read from it), and remap() lays scratch out in
// blocks so that it sits at that place. Not thread-safe; one per file read.
class Places {
 public:
  Places(int nranks, uint64_t chunksPerBlock) : chunks_(chunksPerBlock), scratch_(nranks) {}

  // The place of the data step `s` of rank r moves (`message`: the place of the message it
  // receives, -1 if none); -1 where nothing tells. Gives its scratch chunks that place;
  // fails where its sides' places differ.
  Expected<int64_t> place(int r, const Step& s, int64_t message);
  // Rank r's scratch runs moved to where their places lie; `where[i]` names step i for
  // messages. Returns the scratch chunks rank r needs.
  Expected<uint64_t> remap(int r, std::vector<Step>* steps, const std::vector<std::string>& where);

 private:
  int64_t placeOf(int r, BufRef b, uint64_t chunk);

  uint64_t chunks_;
  std::vector<std::vector<int64_t>> scratch_;  // [rank][scratch chunk]: its place, or -1
};

// Every rank's steps in one list: `prologue` first, on its own, then rounds, each rank's
// steps of a round one batch, scratch laid out by place (Places); `scratchChunks`
// receives the scratch the largest rank needs.
Expected<std::vector<std::vector<Step>>> orderLanes(const std::vector<Rank>& ranks,
                                                    uint64_t chunksPerBlock,
                                                    const std::vector<Step>& prologue,
                                                    uint64_t* scratchChunks);

}  // namespace braid::algo::msccl
