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
// `CollArgs::maxStepElems` in one step, so the first send of a ring always fits
// in the receiver's FIFO and rings cannot deadlock.
//
// Batches: a run of steps each with `batchWithNext` set, plus the step after
// the last of them, forms a batch whose steps progress concurrently (a pairwise
// exchange sends to one peer while it receives from another; a group of
// send/recv calls). Within a batch, steps that send to the same peer run in
// step order, as do steps that receive from the same peer, so the per-peer
// FIFO order both sides see is the step order. Steps outside batches run one
// after another.
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
  kReduceLocal,         // dst = dst op src (local; final: avg divides)
};

enum class BufRef : uint8_t { kNone, kInput, kOutput, kScratch };

struct Step {
  OpKind op;
  BufRef src = BufRef::kNone;
  BufRef dst = BufRef::kNone;
  int32_t sendPeer = -1;   // rank, or -1
  int32_t recvPeer = -1;   // rank, or -1
  uint64_t srcOffset = 0;  // elements
  uint64_t dstOffset = 0;  // elements
  uint64_t count = 0;      // elements
  // The value written is the final result (avg divides by nranks here).
  bool final = false;
  // This step and the next one belong to the same batch (see above).
  bool batchWithNext = false;
};

// What each OpKind touches: a peer to receive from or send to, a src or dst buffer.
inline bool isLocal(OpKind op) { return op == OpKind::kCopy || op == OpKind::kReduceLocal; }
inline bool needsRecv(OpKind op) { return op != OpKind::kSend && !isLocal(op); }
inline bool needsSend(OpKind op) {
  return op == OpKind::kSend || op == OpKind::kRecvReduceSend ||
         op == OpKind::kRecvReduceCopySend || op == OpKind::kRecvCopySend;
}
inline bool needsSrc(OpKind op) { return op != OpKind::kRecv && op != OpKind::kRecvCopySend; }
inline bool needsDst(OpKind op) { return op != OpKind::kSend && op != OpKind::kRecvReduceSend; }

struct Schedule {
  int rank = 0;
  int nranks = 1;
  uint64_t count = 0;         // elements of the collective (per rank input for all-reduce)
  uint64_t scratchElems = 0;  // scratch buffer the executor must provide
  std::vector<Step> steps;
};

enum class Collective : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kAllToAll,
  kAllToAllv,
};

// What every algorithm is given: pure numbers, no handles.
//
// Buffers by collective, in elements (n = nranks, c = count), as NCCL:
//   all-reduce      input c,   output c
//   all-gather      input c,   output n*c (rank r's block at r*c)
//   reduce-scatter  input n*c, output c   (rank r gets block r)
//   broadcast       input c (root's data; others' input is not read), output c
//   reduce          input c,   output c (written on root only)
//   gather          input c,   output n*c on root (others' output is not written)
//   scatter         input n*c on root (others' input is not read), output c
//   all-to-all      input n*c, output n*c (block p goes to / comes from rank p)
//   all-to-all-v    input and output as sendCounts/sendDispls, recvCounts/recvDispls
// In place, the input lies inside the output as NCCL defines it (all-gather:
// input == output + r*c; reduce-scatter: output == input + r*c; others: equal
// pointers); schedules address both through kInput / kOutput and must not read
// input elements after writing the output elements that alias them.
struct CollArgs {
  Collective collective = Collective::kAllReduce;
  int rank = 0;
  int nranks = 1;
  uint64_t count = 0;     // elements (per rank / per block, as above)
  uint32_t elemSize = 1;  // bytes per element
  bool inPlace = false;
  int root = 0;  // broadcast, reduce, gather, scatter
  // Largest step in elements; the executor derives it from the FIFO capacity.
  uint64_t maxStepElems = 1 << 16;
  // all-to-all-v only: this rank's counts and displacements per peer (elements).
  std::vector<uint64_t> sendCounts, sendDispls, recvCounts, recvDispls;
  // Node index of every rank (ranks sharing memory share a node); empty means
  // one node. Hierarchical algorithms split their work by it.
  std::vector<int> nodeOf;
};

const char* opKindName(OpKind op);
const char* bufRefName(BufRef b);  // "input", "output", "scratch", "none"
const char* collectiveName(Collective c);

}  // namespace braid::algo
