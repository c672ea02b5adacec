// A window schedule (algorithms/schedule.h, Schedule::windowed) lowered to the device
// windows' work (exec/cuda/device_program.h): the steps every rank of a call runs, as the
// copies, reductions and barrier operations one rank enqueues on its stream.
//
// Areas. The device window has one area per half (DeviceAddr::Space::kHalf, or the graph
// region for a captured call that fits it); a schedule's kWindowIn is that area, and its
// kWindowOut either the same bytes (LoweringLayout::outBytes 0: where each rank writes its
// kWindowOut only where no rank reads its kWindowIn in the round, as two-shot writes its
// reduced piece) or the area's second part (outBytes into it). Round k of the call uses
// half (firstRound + k) % 2.
//
// Flags. Every rank has one barrier counter. Each (round, flag) that some rank waits for
// (a kWait, or the kReady that a kBeginRound with `writes` waits for, or the last round's
// kReady, which the next call's first rounds wait for) is one barrier value, numbered in
// round order and within a round kReady, kDone, kFinished; the others are dropped, alike
// on every rank (kFinished orders only lent buffers, and the device never lends). A rank
// signals by setting its counter to the value (kArrive, after the work before it) and
// arrives at every value in order, one it does not signal just before its next (the
// counters agree between calls). kWait(q) waits until q's counter reaches the value of
// q's matching signal (kWaitRank); kBeginRound(writes) in round r waits for every peer's
// kReady of round r - 1 (each has finished reading round r - 2, the same half). A wait
// the rank has already waited for (the same or a later value of that peer) is dropped,
// and a rank ends a call having waited for every peer's kReady of its last round, so the
// next call's first rounds need no wait of their own.
//
// A call captured into a CUDA graph turns each barrier value into a flag barrier (every
// rank signals every peer and waits for every peer's signal, exec/cuda/window_program.h),
// at the rank's signal (or first wait) of the value, plus one before its first write and
// (in the halves) one after its last read.
//
// Data steps: kPut (kScale from a premul-sum's input), kReducePeers (one kReduce over the n
// ranks' areas, into the device scratch and then copied when kernels cannot write the
// receive buffer), kCopyPeer and kCopy (kCopy). Consecutive puts of one source into one
// area at the same displacement merge into one copy over the gap between them (nothing
// reads it: the schedule puts nothing there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/schedule.h"
#include "core/status.h"
#include "exec/cuda/device_program.h"

namespace braid {

struct LoweringLayout {
  size_t elemSize = 1;
  // kHalf, or kGraphRegion (the call has one round).
  DeviceAddr::Space space = DeviceAddr::Space::kHalf;
  size_t areaBytes = 0;      // kWindowIn's bytes
  size_t outBytes = 0;       // kWindowOut's offset in the half (0: it aliases kWindowIn)
  uint64_t firstRound = 0;   // the call's round 0 uses half firstRound % 2
  bool recvIsDevice = true;  // kernels may write the receive buffer (kOutput)
  bool scaleInput = false;   // kPut from kInput scales (kScale)
  bool captured = false;     // flag barriers (above)
};

struct LoweredWindowCall {
  std::vector<DeviceOp> ops;  // barrier values from 1 (the caller adds its count)
  size_t scratchBytes = 0;    // device scratch the ops use (kScratch)
  uint64_t rounds = 0;
  uint64_t barriers = 0;  // values used (captured: flag barriers)
};

// Rank `rank`'s work for the call whose schedules (one per rank, in rank order) are
// `all`. Refuses (braidInternalError) schedules it cannot lower: ranks disagreeing on the
// rounds, a wait for a signal the peer never gives, a rank signalling out of order, a
// kWindowOut that cannot share the area when outBytes is 0, more than kMaxDeviceSources
// ranks, steps outside the window vocabulary.
Expected<LoweredWindowCall> lowerWindowSchedules(const std::vector<algo::Schedule>& all, int rank,
                                                 const LoweringLayout& layout);

// Whether every rank's kWindowOut writes of `all` may share the bytes of kWindowIn (no
// rank reads a rank's kWindowIn where that rank writes its kWindowOut in the round, but
// the writing step itself at the same offsets).
bool windowOutMayAlias(const std::vector<algo::Schedule>& all);

}  // namespace braid
