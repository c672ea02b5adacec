// The device windows' collectives as device work (exec/cuda/device_program.h): what
// runtime/device/device_windows.cc enqueues for a call, built here as plain data so the unit tests
// run every rank's program on the host (tests/unit/exec/cuda/window_program_test.cc).
//
// A call runs its collective's window schedule (algo::buildWindowSchedule: one-shot or
// two-shot all-reduce, all-gather, reduce-scatter, broadcast, all-to-all, reduce, gather,
// scatter), built for every rank of the call and lowered to this rank's work
// (exec/cuda/window_lowering.h). Each rank's window holds two halves of `halfBytes`; round
// k of a call uses half k % 2 of every window (DeviceAddr::Space::kHalf, `from` = the rank,
// `slot` = the half), and one schedule area is one half (kWindowOut shares its bytes where
// the schedules allow, as two-shot's reduced pieces do; else each takes half of it). A
// round puts this rank's data into its half, sets this rank's barrier counter
// (kArrive: counter = e once its work so far has finished), waits for the peers'
// counters it needs (kWaitRank: until rank q's counter is at least e), then reduces or
// copies out of the peers' halves. A rank refills half h only after every peer's counter
// says it has finished reading that half's last round. A premul-sum's input is scaled as
// it is put (kScale). A rank whose receive buffer kernels cannot write (host memory)
// reduces into the call's device scratch (kScratch) and copies from it; one whose send
// buffer kernels cannot read takes its own term from its half too. Copies whose source
// and destination are the same bytes (in place) are no-ops for the executor.
//
// A call captured into a CUDA graph runs again at every replay with the values it was
// enqueued with, so its barriers cannot be numbers that count on. Its barriers are flags
// instead, one per ordered pair of ranks in each of three sets: a rank signals each peer
// (kSignal: its flag for the peer = 1) and waits for each peer's flag for it, which it
// then clears (kWaitSignal). No two barriers in a row share a set, so a peer signals a
// set again only after passing a barrier in between, which needs this rank to have
// cleared it: a captured call's barrier e of k takes set e % 2, the last of an odd count
// set 2, so every call starts with set 1 and ends with 0 or 2, whatever captured and
// ordinary calls follow one another, at any replay.
//
// A captured call that fits one round of the graph region (`graphBytes` in every window,
// apart from the halves; DeviceAddr::Space::kGraphRegion) runs there: a barrier before
// it writes the region (every rank is done reading what the last captured call left
// there), then the call's own barriers. No ordinary call touches the region, so that is
// all: a one-shot call has 2 barriers, two-shot 3. A larger captured call runs in the
// halves, and then starts with a barrier (every rank is done with what it read of the
// halves before) and ends with one (every rank is done reading this call's), 3 in all at
// the least.
// Its rounds count from zero too and are never carried on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "algorithms/schedule.h"
#include "core/status.h"
#include "exec/cuda/device_program.h"

namespace braid {

// One call, as this rank sees it (count and layout as braid.h has them; all-to-all-v is
// not a window collective).
struct WindowCall {
  algo::Collective collective = algo::Collective::kAllReduce;
  uint64_t count = 0;   // elements
  size_t elemSize = 1;  // bytes
  int root = 0;
  bool twoShot = false;      // all-reduce: two-shot (the caller decides, alike on every rank)
  bool recvIsDevice = true;  // kernels may write the receive buffer
  bool sendIsDevice = true;  // kernels may read the send buffer
  // A premul-sum: the input is scaled on its way into the window (kScale instead of the
  // copy in), so it takes no pass of its own (all-reduce, reduce-scatter, reduce).
  bool scaleInput = false;
  bool captured = false;  // into a CUDA graph: flag barriers, bracketed (above)
};

// Rounds and barriers a rank has enqueued so far (alike on every rank between calls).
struct WindowCounts {
  uint64_t rounds = 0;
  uint64_t barriers = 0;
};

struct WindowProgram {
  std::vector<DeviceOp> ops;
  size_t scratchBytes = 0;  // device scratch the ops use (kScratch)
};

// Lowered calls by their shape (all a call's program depends on but the counts' values),
// so a call of a shape seen before is not built again. Not thread-safe: a communicator
// enqueues one call at a time.
class WindowPlans {
 public:
  struct Plan {
    std::vector<DeviceOp> ops;  // barrier values from 1
    size_t scratchBytes = 0;
    uint64_t rounds = 0, barriers = 0;
  };
  // Collective, count, element size, root, WindowCall's flags, rank, nranks, half and
  // graph region bytes, the half of the call's first round.
  using Key = std::tuple<int, uint64_t, size_t, int, int, int, int, size_t, size_t, int>;
  static constexpr size_t kMaxPlans = 64;  // then they start over
  const Plan* find(const Key& key) const;
  const Plan& add(const Key& key, Plan plan);
  size_t size() const { return plans_.size(); }

 private:
  std::map<Key, Plan> plans_;
};

// The work of `call` on rank `rank` of `nranks` (2..8) with halves of `halfBytes` and a
// graph region of `graphBytes` (multiples of 256; 0: none); advances `counts` (a captured
// call leaves them as they are). `plans`: lowered calls to reuse (null: none). Fails
// (nothing advanced) where the schedules cannot be lowered (window_lowering.h).
Expected<WindowProgram> buildWindowCall(const WindowCall& call, int rank, int nranks,
                                        size_t halfBytes, WindowCounts* counts,
                                        size_t graphBytes = 0, WindowPlans* plans = nullptr);

// Whether captured `call` runs in the graph region of `graphBytes` (in one round).
bool runsInGraphRegion(const WindowCall& call, int nranks, size_t graphBytes);

}  // namespace braid
