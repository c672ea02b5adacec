// Lowering a Schedule to device work: the list of copies, reductions and counter
// operations that the CUDA executor (runtime/device/lowered_schedule.cc) enqueues on a stream, so
// the GPU runs the same schedules as the host executor, over device FIFOs.
//
// Device FIFOs. Every ordered pair of ranks (s, r) has two slots of `slotBytes` in s's
// device window, which r maps, and two counters that every rank's stream reaches:
// posted[s][r] (slices s has written to r) and consumed[s][r] (slices r has taken). The
// pair's slices are numbered k = 1, 2, ... over the communicator's life, alike on both
// sides (PairCounts). Slice k goes through slot k % 2: the sender waits until
// consumed[s][r] >= k - 2, writes the slot (a copy, or the reduction fused into it) and
// posts k; the receiver waits until posted[s][r] >= k, reads the slot (a copy, or a
// reduction with its own data) and marks k consumed. The stream runs each rank's work in
// order, so a counter is written only after the work before it has finished.
//
// Steps are cut into slices of at most slotBytes, alike on both sides (both know the
// step's count); count-0 steps are skipped by both. Steps outside batches run one after
// another. A batch runs in rounds by lane: round i is the i-th of the batch's slices to
// each peer (steps that only send) and the i-th from each peer (the other steps), pure
// sends first; copies within the batch run whole first. A pure send then waits only for a
// slot its receiver emptied two rounds earlier, so a batch of sends and receives completes
// whatever its pattern. Each side must see a pair's slices in step order; lowering refuses
// a batch whose rounds would send to (or receive from) a peer out of step order (a pure
// send and a receive-and-send step to one peer, or such steps paced by different senders).
//
// Captured into a CUDA graph, slices cannot be numbered (a replay reuses the numbers), so
// a captured program counts its slices from zero and goes through the pair's two graph
// slots (kGraphSlot, apart from the ordinary slots) with flags: full[s][r][j] (set by s
// once it wrote slot j, cleared by r once it read it) and freed[s][r][j] (set by r once it
// read slot j, cleared by s before it writes it again; 1 before anything ran). Each slot
// is a one-deep handshake, so the program runs again at any replay, between ordinary
// calls. A receiver also marks waiting[s][r] while it waits for s (what the watch sees).
//
// Plain data and pure functions: the unit tests interpret the program on the host (every
// algorithm against the simulator, deadlocks included); the CUDA executor enqueues it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/schedule.h"
#include "core/status.h"

namespace braid {

// Where a copy or reduction reads or writes: the call's input, output or device scratch
// (a Schedule's BufRefs), slot `slot` of the pair (from, to) in `from`'s window, half
// `slot` of rank `from`'s window, or rank `from`'s graph region (the window collectives,
// exec/cuda/window_program.h).
struct DeviceAddr {
  enum class Space : uint8_t { kInput, kOutput, kScratch, kSlot, kHalf, kGraphSlot, kGraphRegion };
  Space space = Space::kInput;
  int from = -1, to = -1;  // kSlot, kGraphSlot: the pair; kHalf, kGraphRegion: the window's rank
  uint8_t slot = 0;        // kSlot, kGraphSlot, kHalf: 0 or 1
  uint64_t offset = 0;     // bytes into the buffer, slot or half
};

constexpr int kMaxDeviceSources = 8;  // a reduction's inputs (cuda::kMaxReduceInputs)

struct DeviceOp {
  enum class Kind : uint8_t {
    kWaitPosted,    // hold the stream until posted[from][to] >= value
    kWaitConsumed,  // hold the stream until consumed[from][to] >= value
    kPost,          // posted[from][to] = value, after the work before it
    kConsume,       // consumed[from][to] = value, after the work before it
    kArrive,        // rank `from`'s barrier counter = value, after the work before it
    kWaitRank,      // hold the stream until rank `from`'s barrier counter >= value
    // A captured call's barriers (exec/cuda/window_program.h): replay-safe flags, one per
    // ordered pair and set (`value`: 0, 1 or 2), each 0 or 1.
    kSignal,      // flag[value][from][to] = 1 (from: this rank), after the work before it
    kWaitSignal,  // hold the stream until flag[value][from][to] >= 1 (to: this rank), then 0
    // A captured program's graph slots (above; `value`: the slot j).
    kWaitFreed,  // hold the stream until freed[from][to][j] >= 1, then 0 (from: this rank)
    kFill,       // full[from][to][j] = 1, after the work before it
    kWaitFull,   // waiting, hold the stream until full[from][to][j] >= 1, then 0, not waiting
    kFree,       // freed[from][to][j] = 1, after the work before it (to: this rank)
    kCopy,       // dst = src[0], `bytes` bytes (nothing when they are the same bytes)
    kReduce,     // dst = src[0] op ... op src[nsrcs - 1], `bytes` bytes of elements
    kScale,      // dst = src[0] times this rank's premul-sum scalar, `bytes` bytes
  };
  Kind kind = Kind::kCopy;
  int from = -1, to = -1;  // counters: the ordered pair (kArrive, kWaitRank: the rank)
  uint64_t value = 0;      // counters: the slice or barrier number; flags: the set or slot
  DeviceAddr dst;
  DeviceAddr src[kMaxDeviceSources];
  int nsrcs = 1;       // kReduce: 1 (src[0] alone: avg's division, or a copy) to 8
  uint64_t bytes = 0;  // kCopy, kReduce, kScale
  // kReduce: the value written is final (avg divides by nranks); otherwise avg reduces as
  // sum, as the host kernels do.
  bool final = false;
};

// Slices this rank has sent to / received from each peer so far (the pair counters' next
// values are these plus one). Both sides of a pair count alike.
struct PairCounts {
  std::vector<uint64_t> sent, received;  // by peer rank
  explicit PairCounts(int nranks = 0) : sent(nranks, 0), received(nranks, 0) {}
};

// The device work for `schedule` (this rank's), slices of at most `slotBytes` (a multiple
// of elemSize). On success `counts` has advanced past the slices it uses; on error
// (a batch reaching a peer out of step order, a peer out of range, a slot smaller than an
// element) nothing changes. `captured`: through the graph slots and their flags (above);
// the caller passes counts of zero.
Expected<std::vector<DeviceOp>> lowerSchedule(const algo::Schedule& schedule, size_t elemSize,
                                              size_t slotBytes, PairCounts* counts,
                                              bool captured = false);

}  // namespace braid
