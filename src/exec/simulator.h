// Schedule simulator: runs every rank's Schedule in one process, with no
// threads and no network, and checks that the schedules fit together.
//
// Each directed pair (src, dst) is a FIFO of messages holding at most
// SimOptions::fifoMessages messages; a message is one step's whole `count`
// elements (executors slice a step, but both sides slice it the same way, so
// whole steps are the right model). Ranks take turns, round-robin, in rank
// order: a step can run when its receive (if any) has a message at the head of
// the FIFO from recvPeer and its send (if any) has room. A step outside any
// batch runs on its own, one per turn. In a batch (Step::batchWithNext) a turn
// runs every step of the batch that can run, in any order, except that a step
// waits for the batch's earlier steps that send to its sendPeer and that
// receive from its recvPeer; the rank moves past the batch when all of its
// steps are done. Steps mean exactly what they mean to HostExecutor::runStep,
// with the real reduction kernels, so results are bitwise what a real run
// computes. Steps with count 0 are skipped by both sides, as executors do.
//
// Errors (a Status; step indexes in messages are 0-based indexes into
// Schedule::steps):
//  - a malformed schedule or step (wrong rank or nranks, a peer out of range or
//    missing for the op, a buffer the op needs is kNone, a write to the input),
//  - out of bounds: a step reads or writes past a buffer's declared size,
//  - race in a batch: a step of a batch writes elements another step of the
//    same batch reads or writes (a real executor runs them concurrently),
//  - size mismatch: a receive expects count elements, the message has another,
//  - deadlock: no rank can run a step while some have steps left; names each
//    blocked rank's waiting steps (in a batch: the steps that head their
//    per-peer order, with what each waits for),
//  - leftover messages: sent but never received.
// Deterministic; stateless between calls; thread-safe for distinct arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/schedule.h"
#include "braid/braid.h"
#include "core/status.h"

namespace braid {

// One rank's user buffers, in bytes: input has the input's elements, output
// the output's. With inPlace the input lies inside the output, starting at
// element inPlaceOffset and as long as `input` says, or to the end of the output
// when `input` is empty (`input`'s contents are not used; all-gather's input is output + rank*count, reduce-scatter's output is
// input + rank*count: there the caller passes the larger buffer as `output`
// and sets inPlaceOffset to 0 with inputIsLarger). Scratch is allocated by the
// simulator (Schedule::scratchElems elements).
struct SimRank {
  std::vector<uint8_t> input;
  std::vector<uint8_t> output;
  bool inPlace = false;
  uint64_t inPlaceOffset = 0;  // elements: where the input starts in the output
  // Reduce-scatter in place: `output` holds the whole input, and the real
  // output is the window [outputOffset, outputOffset + outputElems).
  uint64_t outputOffset = 0;
  uint64_t outputElems = 0;  // 0: the whole of `output`
};

struct SimOptions {
  // Messages a directed pair's FIFO holds; small values expose schedules that
  // deadlock on real, bounded FIFOs. Must be >= 1.
  size_t fifoMessages = 2;
  // Every byte of every rank's scratch at the start: a schedule that reads scratch before
  // writing it computes different results under different fills.
  uint8_t scratchFill = 0;
};

// Runs schedules[r] on ranks[r] for every r; on success every rank's output
// holds what an executor would have written.
Status simulate(const std::vector<algo::Schedule>& schedules, braidDataType_t datatype,
                braidRedOp_t op, std::vector<SimRank>& ranks, const SimOptions& options = {});

}  // namespace braid
