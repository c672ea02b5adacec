// NodeWindows: the direct algorithms over memory the ranks of one node share.
//
// Every rank exposes one region (SharedRegion, made by the shm transport) and
// maps every peer's, so a collective reads peers' data where it lies instead of
// moving it through FIFOs slice by slice. A region holds a header with two
// flags and two halves, each an input area and an output area of
// BRAID_SHM_WINDOW_BYTES (the chunk one round moves per rank). Large calls run
// in rounds of a chunk.
//
// Rounds are numbered (epochs) alike on every rank; round e uses half e % 2.
// A rank publishes `ready = e` once its input for round e is in its input area
// (and it has finished round e - 1), and `done = e` once its reduced piece of
// round e is in its output area. A rank writes half e % 2 again only in round
// e + 2, after seeing every peer's ready >= e + 1, that is after every peer has
// finished reading round e: two halves and two flags are all the
// synchronisation there is, and the fast path makes no system call. Waits spin,
// then yield, then sleep on a futex in the awaited rank's header (whose
// publisher wakes sleepers only when there are some), re-checking the
// deadline, abort and peer deaths.
//
// Zero copy: where a rank's buffer lies in memory from braidMemAlloc
// (core/shared_alloc.h), it skips the copy into its window and describes the
// buffer in its header instead (region name and offset, per half); peers map
// that region once and read the buffer where it lies. Such a rank returns only
// after every peer has published `finished = e` (it has read round e), since
// the caller may reuse the buffer at once. Calls in place (where the output
// overwrites what peers read) always copy, and so do premul-sums, which scale
// the input on its way into the window (takesScale).
//
// Collectives and the algorithm names that run here (single-node
// communicators whose peers all connect over shm):
//   all-reduce direct    one-shot: every rank reduces every input, in rank order
//   all-reduce two_shot  rank r reduces piece r of every input, then every rank
//                        copies every piece
//   all-gather, reduce-scatter, broadcast direct; all-to-all pairwise
// Results are bitwise identical on every rank (one reduction order). The
// regions are set up by the first call that runs here (names cross the
// communicator in a ring all-gather, then every rank confirms its mappings);
// if any rank cannot, every rank falls back to the FIFO schedules for good.
// Used by one thread at a time (the communicator's operation thread).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/schedule.h"
#include "core/comm.h"
#include "exec/host/fifo_executor.h"

namespace braid {

class NodeWindows {
 public:
  NodeWindows(Comm& comm, HostExecutor& fifo);
  ~NodeWindows();
  NodeWindows(const NodeWindows&) = delete;
  NodeWindows& operator=(const NodeWindows&) = delete;

  // Whether (collective, algorithm) runs here on this communicator: the same
  // answer on every rank.
  bool handles(algo::Collective c, algo::Algorithm a) const;
  // Runs a call handles() accepted; falls back to the FIFO schedule when the
  // regions could not be set up. `schedule` builds that schedule on demand.
  template <typename BuildSchedule>
  Status run(const algo::CollArgs& args, algo::Algorithm a, const ExecBuffers& b,
             const OpDesc& desc, BuildSchedule schedule) {
    if (state_ == State::kUnset) BRAID_TRY(setup(desc));
    if (state_ == State::kOff) return fifo_.run(schedule(), b, desc);
    return runHere(args, a, b, desc);
  }
  // Bytes one round moves per rank.
  size_t chunkBytes() const { return chunk_; }
  // Whether run() takes a premul-sum's scalar (ExecBuffers::scale) for this call and
  // scales the input as it copies it into the window, with no pass of its own: all-reduce
  // and reduce-scatter inputs of 4 MiB and up (smaller ones gain from a scaled copy that
  // stays in cache, shared_windows.cc), once the windows are on (set up here if not yet, as run()
  // would). The same answer on every rank.
  Expected<bool> takesScale(const algo::CollArgs& args, algo::Algorithm a, const OpDesc& desc);

 private:
  enum class State { kUnset, kOn, kOff };
  enum class Flag { kReady, kDone, kFinished };
  struct Header;
  struct ShareDesc;
  // A call's buffer in a shared allocation: region name and its offset.
  struct Zero {
    bool on = false;
    std::string name;
    size_t regionBytes = 0;
    size_t offset = 0;
  };

  Status setup(const OpDesc& desc);
  Status runHere(const algo::CollArgs& args, algo::Algorithm a, const ExecBuffers& b,
                 const OpDesc& desc);
  Status allReduce(const algo::CollArgs& args, bool twoShot, const ExecBuffers& b,
                   const OpDesc& desc);
  // At most one cache line per rank: data and flag in the same line.
  Status allReduceSmall(const algo::CollArgs& args, const ExecBuffers& b, const OpDesc& desc);
  Status allGather(const algo::CollArgs& args, const ExecBuffers& b, const OpDesc& desc);
  Status reduceScatter(const algo::CollArgs& args, const ExecBuffers& b, const OpDesc& desc);
  Status broadcast(const algo::CollArgs& args, const ExecBuffers& b, const OpDesc& desc);
  // At most one cache line: the root writes a line of a ring in its header and runs
  // ahead of the peers by up to that ring's depth (window_small.cc).
  Status broadcastSmall(const algo::CollArgs& args, const ExecBuffers& b, const OpDesc& desc);
  Status allToAll(const algo::CollArgs& args, const ExecBuffers& b, const OpDesc& desc);

  // Reduce-scatter and all-to-all: starts a round, copies elements
  // [off, off + m) of every block of `in` (but its own, out of place) into
  // this rank's input area, one block per `slot` bytes, and publishes them;
  // returns the round. With `zin` on (an input from braidMemAlloc, out of
  // place) it copies nothing and describes the input from its start instead.
  Expected<uint64_t> publishBlocks(const algo::CollArgs& args, const char* in, const Zero& zin,
                                   size_t off, size_t m, size_t slot, const OpDesc& desc);
  // Where rank q's part of this rank's block is in round `half`: at byte
  // `lentAt` of q's described input when q lent it, else at `slotAt` of q's
  // window input area.
  Expected<const char*> blockOf(int q, int half, size_t lentAt, size_t slotAt, const OpDesc& desc);
  // Starts the next round; a rank about to write its half first makes sure
  // every peer has finished the round that used it last.
  Expected<uint64_t> beginRound(bool writes, const OpDesc& desc);
  void publish(Flag flag, uint64_t epoch);
  // Wakes peers sleeping on h's futex, after a full fence (a system call only when
  // one sleeps).
  void wakeSleepers(Header* h);
  // The lowest `ready` any peer has published.
  uint64_t slowestReady() const;
  Status waitFor(int peer, Flag flag, uint64_t epoch, const OpDesc& desc);
  Status waitOn(int peer, std::atomic<uint64_t>& flag, Flag which, uint64_t epoch,
                const OpDesc& desc);
  Status waitAll(Flag flag, uint64_t epoch, const OpDesc& desc);
  Status stalled(int peer, Flag flag, uint64_t epoch, const OpDesc& desc, const char* why);
  // dst[0..count) = op over ranks (in rank order) of data(rank)[0..count);
  // `shared` (this rank's window), when set, gets the same values.
  void reduceAll(char* dst, char* shared, const std::vector<const char*>& data, size_t count,
                 const OpDesc& desc);

  // Copies into the output: streamed when streamOut_.
  void copyOut(char* dst, const char* src, size_t bytes) const;
  // Copies this rank's input into its window (streamed from kStreamMinBytes), times
  // scale_ when the call has one.
  void copyIn(char* dst, const char* src, size_t bytes, const OpDesc& desc);

  // Zero copy (see above): whether [p, p + bytes) may be read in place.
  Zero zeroCopy(const void* p, size_t bytes) const;
  // This rank's data of round `half` is at `zero` + `at` (or in its window).
  void describe(bool output, int half, const Zero& zero, size_t at);
  // Where rank q's data of `half` is: its window area, or its described buffer.
  Expected<const char*> dataOf(int q, bool output, int half, const OpDesc& desc);
  // Whether every rank described its input of `half` as a buffer to read in
  // place (after the ready flags of that round, every rank sees the same).
  bool inputsAllLent(int half) const;

  Header* header(int rank) const;
  char* inputArea(int rank, int half) const;
  char* outputArea(int rank, int half) const;

  Comm& comm_;
  HostExecutor& fifo_;
  State state_ = State::kUnset;
  bool enabled_ = true;  // BRAID_SHM_WINDOW_BYTES=0 turns the windows off
  size_t chunk_ = 0;
  size_t zeroCopyMin_ = 0;  // buffers this big and up are read in place (shared_windows.cc)
  size_t regionBytes_ = 0;
  std::unique_ptr<SharedRegion> mine_;
  std::vector<std::unique_ptr<SharedRegion>> peers_;           // by rank; empty at this rank
  std::vector<char*> bases_;                                   // every rank's region, mapped here
  std::map<std::string, std::unique_ptr<SharedRegion>> lent_;  // peers' allocations, mapped
  std::vector<const char*> data_;                              // per rank, scratch of one round
  uint64_t epoch_ = 0;
  // This call's output is large (kStreamOutMinBytes): written with streaming stores.
  bool streamOut_ = false;
  // This call's premul-sum scalar (ExecBuffers::scale), or null: its input is scaled on the
  // way into the window, never read in place.
  const void* scale_ = nullptr;
  alignas(64) char block_[16 << 10];  // reductions into a streamed output, a block at a time
  uint64_t allReady_ = 0;             // every peer has published ready >= this
  Deadline deadline_{0};
  bool deadlineSet_ = false;
};

}  // namespace braid
