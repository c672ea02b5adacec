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
// Window schedules (Schedule::windowed): the direct collectives over memory that every
// rank of a node maps (the host's shared windows, the GPUs' device windows). Each rank
// has a window of two halves, each an input area and an output area of
// CollArgs::windowElems elements (BufRef::kWindowIn, kWindowOut). Such a schedule is a
// list of rounds; round r starts with kBeginRound and uses half r % 2 of every window
// (rounds are numbered alike on every rank, over the communicator's life: executors count
// them, schedules number them from 0 within a call). In a round a rank puts its data into
// its own window (kPut), raises its flags (kSignal: its flag `flag` = the round), waits
// for peers' flags (kWait), and reads peers' areas where they lie: it reduces one range of
// every rank's area into its buffer (kReducePeers, in rank order, so every rank computes
// bitwise the same values) or copies one peer's range (kCopyPeer). Flags are three per
// rank: kReady (its puts of the round are in its window, and it has finished reading the
// round before), kDone (its kWindowOut data of the round is there), kFinished (it has
// read all it reads of the round). A rank writes half h again only in round r + 2, and
// kBeginRound with `writes` set first waits until every peer's kReady >= r - 1 (every peer
// has finished reading round r - 2): two halves and these flags are all the ordering
// there is.
//
// Lending (zero copy): where Schedule::lendsInput (or lendsOutput) is set, an executor may
// leave this rank's input (output) where it lies, in memory peers can map, instead of
// putting it: it then skips every kPut from kInput (kOutput), and peers read its data in
// the lent buffer at Step::bufOffset instead of in its window. A rank that lent a buffer
// returns only after every peer has signalled kFinished for its last round (the caller
// may reuse the buffer at once); schedules that lend signal kFinished in every round. An
// executor that cannot lend (the device windows) puts everything.
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
  // Window steps (above); none has a send or receive peer in the FIFO sense.
  kBeginRound,  // the next round starts; `writes`: this rank puts into its window in it
  kPut,         // this rank's window area dst at dstOffset = src at srcOffset (copy in)
  kSignal,      // this rank's flag `flag` = the round
  kWait,        // until rank recvPeer's flag `flag` >= the round (recvPeer -1: every peer)
  // dst at dstOffset = op over every rank q, in rank order, of q's area src at srcOffset;
  // q's term is q's lent buffer at bufOffset where q lent it, and this rank's own term is
  // its own buffer at bufOffset where `ownFromBuffer` is set.
  kReducePeers,
  // dst at dstOffset = rank recvPeer's area src at srcOffset (its lent buffer at
  // bufOffset where it lent it; this rank's own buffer there where recvPeer is this rank).
  kCopyPeer,
};

// kWindowIn / kWindowOut: a rank's window areas in the current round's half; the buffer a
// lending rank lends for them is its input / its output.
enum class BufRef : uint8_t { kNone, kInput, kOutput, kScratch, kWindowIn, kWindowOut };

// A rank's flags in the windows (see the window schedules above).
enum class WinFlag : uint8_t { kReady, kDone, kFinished };

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
  // Window steps only. kSignal, kWait: which flag. kBeginRound: whether this rank writes
  // its window in the round. kReducePeers: whether this rank's own term is read from its
  // buffer (input for kWindowIn, output for kWindowOut) at bufOffset, not its window.
  WinFlag flag = WinFlag::kReady;
  bool writes = false;
  bool ownFromBuffer = false;
  // kReducePeers, kCopyPeer: elements into the lent buffer (input for kWindowIn, output
  // for kWindowOut) where a peer that lent it has this step's data.
  uint64_t bufOffset = 0;
};

// What each OpKind touches: a peer to receive from or send to, a src or dst buffer.
inline bool isWindowStep(OpKind op) { return op >= OpKind::kBeginRound; }
inline bool isLocal(OpKind op) { return op == OpKind::kCopy || op == OpKind::kReduceLocal; }
inline bool needsRecv(OpKind op) {
  return op != OpKind::kSend && !isLocal(op) && !isWindowStep(op);
}
inline bool needsSend(OpKind op) {
  return op == OpKind::kSend || op == OpKind::kRecvReduceSend ||
         op == OpKind::kRecvReduceCopySend || op == OpKind::kRecvCopySend;
}
// kBeginRound, kSignal and kWait touch no buffer.
inline bool isWindowSync(OpKind op) {
  return op == OpKind::kBeginRound || op == OpKind::kSignal || op == OpKind::kWait;
}
inline bool needsSrc(OpKind op) {
  return op != OpKind::kRecv && op != OpKind::kRecvCopySend && !isWindowSync(op);
}
inline bool needsDst(OpKind op) {
  return op != OpKind::kSend && op != OpKind::kRecvReduceSend && !isWindowSync(op);
}
// Whether window step `put` puts exactly the range the reduction `reduce` wrote: executors
// make the pair in one pass (two-shot's own piece, reduced, then put for the peers).
inline bool putsReduced(const Step& reduce, const Step& put) {
  return reduce.op == OpKind::kReducePeers && put.op == OpKind::kPut && put.src == reduce.dst &&
         put.srcOffset == reduce.dstOffset && put.count == reduce.count;
}

struct Schedule {
  int rank = 0;
  int nranks = 1;
  uint64_t count = 0;         // elements of the collective (per rank input for all-reduce)
  uint64_t scratchElems = 0;  // scratch buffer the executor must provide
  std::vector<Step> steps;
  // A window schedule (above): its steps are window steps and local copies only, and
  // only an executor over mapped memory runs it.
  bool windowed = false;
  // Window schedules: whether an executor may lend this rank's input / output (above).
  bool lendsInput = false;
  bool lendsOutput = false;
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
  // Window schedules: elements of one window area (one round moves at most this much
  // per area). 0: the communicator has no windows.
  uint64_t windowElems = 0;
  // Window schedules: the input is a premul-sum's, scaled as it is put into the window,
  // so no rank reads its own input directly (ownFromBuffer is never set for it).
  bool scaledPut = false;
};

const char* opKindName(OpKind op);
const char* bufRefName(BufRef b);    // "input", "output", "scratch", "windowIn", ...
const char* winFlagName(WinFlag f);  // "ready", "done", "finished"
const char* collectiveName(Collective c);

}  // namespace braid::algo
