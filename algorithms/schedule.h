// Schedule: what one rank does in one collective, as plain data.
//
// An algorithm is a pure function that returns a Schedule; executors (host,
// simulator, later CUDA) interpret it. A schedule names buffers symbolically
// (the user's input and output, scratch) and peers by rank in the
// communicator, so it knows nothing of transports or memory kinds.
//
// Steps run in order. Each step moves `count` elements; an executor cuts a
// step into slices that fit the transport's FIFO slots, and the sender and the
// receiver of a step always cut it the same way (both know `count`). A step
// with count 0 is skipped by both sides. A schedule never sends more than
// `Schedule::maxStepElems` in one step, so the first send of a ring always fits
// in the receiver's FIFO and rings cannot deadlock.
//
// Immutable once built; safe to share between threads.
#pragma once

#include <cstdint>
#include <vector>

namespace braid::algo {

enum class OpKind : uint8_t {
  kSend,                // send src
  kRecv,                // recv into dst
  kRecvReduce,          // dst = src op recv
  kRecvReduceSend,      // send (src op recv)
  kRecvReduceCopySend,  // dst = src op recv (finalised, e.g. avg divides); send dst
  kRecvCopySend,        // dst = recv; send it on
  kCopy,                // dst = src (local)
};

enum class BufRef : uint8_t { kNone, kInput, kOutput, kScratch };

struct Step {
  OpKind op;
  BufRef src = BufRef::kNone;
  BufRef dst = BufRef::kNone;
  int32_t sendPeer = -1;  // rank, or -1
  int32_t recvPeer = -1;  // rank, or -1
  uint64_t srcOffset = 0;  // elements
  uint64_t dstOffset = 0;  // elements
  uint64_t count = 0;      // elements
  // The value written is the final result (avg divides by nranks here).
  bool final = false;
};

struct Schedule {
  int rank = 0;
  int nranks = 1;
  uint64_t count = 0;         // elements of the collective (per rank input for all-reduce)
  uint64_t scratchElems = 0;  // scratch buffer the executor must provide
  std::vector<Step> steps;
};

// What every algorithm is given: pure numbers, no handles.
struct CollArgs {
  int rank = 0;
  int nranks = 1;
  uint64_t count = 0;     // elements
  uint32_t elemSize = 1;  // bytes per element
  bool inPlace = false;
  // Largest step in elements; the executor derives it from the FIFO capacity.
  uint64_t maxStepElems = 1 << 16;
};

const char* opKindName(OpKind op);

}  // namespace braid::algo
