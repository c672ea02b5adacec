// The windows' simulator: runs every rank's window schedules (algorithms/schedule.h,
// "Window schedules") in one process, with no threads, and checks that they fit together
// as the host's shared windows and the device windows would run them.
//
// Each rank has a window of two halves, each an input and an output area of
// WindowSimOptions::windowBytes; its flags (ready, done, finished) and its round count
// start at roundsBefore. Ranks take turns one step at a time, in rank order or, with a
// seed, in a seeded random order. A step runs when what it waits for is there: kWait
// until the peer's flag reaches the round, kBeginRound with `writes` until every peer's
// kReady reaches the round before. Steps mean what they mean to the windows' executors,
// with the real reduction kernels, so results are bitwise what a real run computes. A
// rank lends its input (output) where the option says so and the schedule allows it: it
// skips its puts from that buffer, peers read the buffer instead of its window, and at
// the end of the call it waits until every peer's kFinished reaches its last round, as
// the executors do. Calls run back to back: a rank starts its next call as soon as it
// has finished the last, with no barrier between.
//
// Every access to a window area or a lent buffer is ordered by happens-before (vector
// clocks: a wait that sees a flag orders the waiter after everything its owner did
// before raising it). Errors (a Status; steps are 0-based indexes into Schedule::steps):
//  - malformed: a FIFO step or batch in a window schedule, a window step before the
//    call's first kBeginRound, a round without kSignal(kReady), a peer or buffer out of
//    range for the op, a write of the input;
//  - out of bounds: an access past a window area or a buffer (lent buffers included);
//  - aliasing: a step whose destination overlaps one of its sources without being equal,
//    or a reduction whose destination overlaps any source (in place, an own term read
//    from the buffer the result goes to);
//  - race: a read of a peer's area (or lent buffer) not ordered after the peer's put (or
//    write) of it; a read of an area not put in the same round (stale); a put into a
//    half not ordered after every peer's reads of it from two rounds before; a write of a
//    lent buffer by its owner not ordered after peers' reads of it; a peer's read of a
//    lent buffer not ordered before its owner's end of call (its kFinished is missing or
//    early);
//  - deadlock: no rank can run while some have steps left (a wait that is never
//    satisfied, the end-of-call wait of a lender included); names what each waits for;
//  - leftovers: ranks whose schedules of a call have different round counts.
// Deterministic for a seed; stateless between calls; thread-safe for distinct arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/schedule.h"
#include "braid/braid.h"
#include "core/status.h"
#include "exec/simulator.h"

namespace braid {

struct WindowSimOptions {
  // Bytes of one window area; the schedules were built with windowElems = this / the
  // call's element size.
  uint64_t windowBytes = 0;
  // 0: ranks take turns in rank order; else a random order from this seed.
  uint64_t seed = 0;
  // Per rank (empty: nobody): whether it lends its input / output where its schedule
  // allows it (Schedule::lendsInput, lendsOutput).
  std::vector<bool> lendInput, lendOutput;
  // Rounds every rank has run before the first call (the first round's half is
  // (roundsBefore + 1) % 2).
  uint64_t roundsBefore = 0;
  // A half has one area: kWindowOut is kWindowIn (the device windows' layout).
  bool oneAreaPerHalf = false;
};

// One call: every rank's schedule and buffers (SimRank as for simulate()).
struct WindowSimCall {
  const std::vector<algo::Schedule>* schedules = nullptr;
  std::vector<SimRank>* ranks = nullptr;
  braidDataType_t datatype = braidFloat32;
  braidRedOp_t op = braidSum;
};

// Runs the calls in order on every rank; on success every rank's outputs hold what the
// windows would have written.
Status simulateWindows(const std::vector<WindowSimCall>& calls, const WindowSimOptions& options);

// One call (the signature of simulate(), with the windows' options).
Status simulateWindows(const std::vector<algo::Schedule>& schedules, braidDataType_t datatype,
                       braidRedOp_t op, std::vector<SimRank>& ranks,
                       const WindowSimOptions& options);

}  // namespace braid
