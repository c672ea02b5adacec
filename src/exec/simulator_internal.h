// Private to the simulator: its message, buffer and batch bookkeeping and the
// Simulator class, shared by simulator.cc (steps, checks, the main loop) and
// simulator_batch.cc (batches: lanes, races, waiting). Not thread-safe.
#pragma once

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "exec/reduce.h"
#include "exec/simulator.h"

namespace braid::sim {

using algo::BufRef;
using algo::OpKind;
using algo::Step;

struct Message {
  uint64_t count;
  size_t step;  // the sender's step index, for messages
  std::vector<uint8_t> data;
};

// Where a BufRef of one rank lives. `storage` tells aliases apart: in place,
// input and output are the same storage.
struct Buffer {
  uint8_t* data = nullptr;
  uint64_t elems = 0;
  int storage = -1;
};

// Steps of a rank's current batch that are not done yet, queued per peer in
// step order: a step runs when it heads every lane it is in (its send lane,
// its receive lane) and its FIFOs allow. Steps without a peer (copies) have no
// order among themselves and wait in `local`.
struct Lane {
  std::vector<size_t> steps;
  size_t head = 0;
  bool empty() const { return head == steps.size(); }
  size_t front() const { return steps[head]; }
};

struct Batch {
  size_t begin = 0, end = 0;  // steps [begin, end) of the schedule
  size_t left = 0;            // steps of the batch not done
  std::vector<size_t> local;
  std::vector<int> peers;                  // peers with a lane in this batch
  std::vector<Lane> sendLanes, recvLanes;  // by peer; unused for a batch of one step
};

// One past the last step of the batch that starts at `begin`.
inline size_t batchEnd(const std::vector<Step>& steps, size_t begin) {
  size_t e = begin;
  while (e < steps.size() && steps[e].batchWithNext) ++e;
  return std::min(e + 1, steps.size());
}

using algo::isLocal;
using algo::needsDst;
using algo::needsRecv;
using algo::needsSend;
using algo::needsSrc;

inline const char* bufName(BufRef b) { return algo::bufRefName(b); }

// Where `rk`'s input or output lives (storage 0: the input vector, 1: the output vector;
// in place the input lies in the output's storage); an empty Buffer for other refs.
inline Buffer userBuffer(SimRank& rk, BufRef ref, size_t es) {
  if (ref == BufRef::kInput && !rk.inPlace) return Buffer{rk.input.data(), rk.input.size() / es, 0};
  if (ref == BufRef::kInput) {
    // The input never extends past the storage it shares with the output; an empty
    // `input` means "to the end of the output".
    const uint64_t room = rk.output.size() / es - rk.inPlaceOffset;
    const uint64_t declared = rk.input.size() / es;
    return Buffer{rk.output.data() + rk.inPlaceOffset * es,
                  rk.input.empty() || rk.outputElems != 0 ? room : std::min(room, declared), 1};
  }
  if (ref != BufRef::kOutput) return Buffer{};
  if (rk.outputElems == 0) return Buffer{rk.output.data(), rk.output.size() / es, 1};
  return Buffer{rk.output.data() + rk.outputOffset * es, rk.outputElems, 1};
}

class Simulator {
 public:
  Simulator(const std::vector<algo::Schedule>& s, braidDataType_t dt, braidRedOp_t op,
            std::vector<SimRank>& ranks, const SimOptions& o)
      : sched_(s),
        ranks_(ranks),
        opts_(o),
        n_(static_cast<int>(s.size())),
        dtype_(dt),
        op_(op),
        es_(datatypeSize(dt)) {}

  Status run();

 private:
  Status checkArgs();
  Status checkStep(int r, size_t i);
  Status checkRange(int r, size_t i, BufRef ref, uint64_t off, uint64_t count, bool write);
  Status checkRaces(int r, size_t begin, size_t end);
  Buffer buffer(int r, BufRef ref);
  std::string stepName(int r, size_t i) const;
  std::string where(int r, size_t i) const {
    return "rank " + std::to_string(r) + " " + stepName(r, i);
  }
  std::deque<Message>& fifo(int src, int dst) { return fifos_[size_t(src) * n_ + dst]; }
  bool ready(int r, const Step& st);
  bool nextBatch(int r);
  bool runnable(int r, size_t i);
  Status advance(int r, bool* progressed);
  Status execute(int r, size_t i);
  std::string waitsFor(int r, size_t i);
  std::string waiting(int r);
  Status deadlock();
  Status leftovers();

  const std::vector<algo::Schedule>& sched_;
  std::vector<SimRank>& ranks_;
  SimOptions opts_;
  int n_;
  braidDataType_t dtype_;
  braidRedOp_t op_;
  size_t es_;
  std::vector<std::vector<uint8_t>> scratch_;
  std::vector<std::deque<Message>> fifos_;
  std::vector<Batch> batch_;  // each rank's current batch
};

}  // namespace braid::sim
