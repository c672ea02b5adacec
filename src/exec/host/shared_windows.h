// NodeWindows: the direct algorithms over memory the ranks of one node share.
//
// Every rank exposes one region (SharedRegion, made by the shm transport) and maps every
// peer's, so a collective reads peers' data where it lies instead of moving it through
// FIFOs slice by slice. A region holds a header of flags and two halves, each an input
// area and an output area of BRAID_SHM_WINDOW_BYTES (the chunk one round moves per rank).
//
// What a call does is a window schedule from algorithms/ (algo::Schedule::windowed, its
// steps and flags described in algorithms/schedule.h), which one loop interprets:
//   kBeginRound  round e = the next epoch, using half e % 2; with `writes`, first waits
//                until every peer has published ready >= e - 1 (it has finished reading
//                round e - 2, the last to use this half)
//   kPut         copies into this rank's area, streamed (exec/stream_copy.h), scaled on
//                the way for a premul-sum (takesScale); skipped where the buffer is lent
//   kSignal      publishes a flag = e after a full fence (copies may use streaming
//                stores); kWait waits for one peer's flag or every peer's, in the order
//                the schedule gives
//   kReducePeers reduces a range of every rank's area (or lent buffer), in rank order, in
//                blocks that stay in L1; a kPut of the same range into this rank's window
//                right after it is made in the same pass
//   kCopyPeer, kCopy  copy into the output
// The fast path makes no system call. Waits spin, then yield, then sleep on a futex in
// the awaited rank's header (whose publisher wakes sleepers only when there are some),
// re-checking the deadline, abort and peer deaths.
//
// Rules the interpreter adds, alike on every rank:
//   - Outputs of 4 MiB and up are written with streaming stores (kStreamOutMinBytes).
//   - Lines: a call of one round whose window data lies in its first kLineBytes (56 B)
//     on every rank, in the input areas only, carries it in a line of the header (ring of
//     kLineDepth, round e's at e % kLineDepth) whose first word is the round's ready
//     flag: a peer gets flag and data in one transfer, and a writer waits only before
//     reusing a line some peer may not have read, so a rank that waits for nobody (a
//     broadcast's root, a reduce's other ranks) runs up to kLineDepth calls ahead.
//     Every rank decides alike: a range one rank puts is a range another reads. Nothing
//     is lent then, so no rank waits for kFinished and none is published.
//   - A two-shot all-reduce whose input fits a line runs the one-shot schedule, and one
//     of 2 ranks up to kLentOneShotMaxBytes whose inputs are both lent continues with the
//     one-shot schedule from the first reduction: one hand-off fewer for the same bytes
//     read across the cores (shared_windows_plans.cc).
//
// Lending by address (single copy): a private input of at least
// CommConfig::singleCopyMinBytes a read, in a schedule with no reduction (all-gather,
// broadcast, all-to-all), is described by its address instead; a peer copies it straight
// into its output through the shm endpoint (Endpoint::readAt, process_vm_readv), and the
// rank returns after kFinished as for any lent buffer.
//
// Lending (zero copy): where the schedule allows it (lendsInput, lendsOutput) and the
// buffer lies in memory from braidMemAlloc (core/shared_alloc.h) of at least
// zeroCopyMin_, a rank skips the kPuts from it and describes it in its header instead
// (region name and the buffer's offset, per half: input and output); peers map that
// region once and read at the step's bufOffset. An output is lent only along with the
// input. Such a rank returns only after every peer has published finished = e for its
// last round e, since the caller may reuse the buffer at once.
//
// Collectives and algorithm names that run here (single-node communicators whose peers
// all connect over shm): all-reduce direct (one-shot) and two_shot, all-gather,
// reduce-scatter, broadcast and reduce direct, all-to-all pairwise. Results are bitwise
// identical on every rank (one reduction order). The regions are set up by the first
// call that runs here (names cross the communicator in a ring all-gather, then every
// rank confirms its mappings); if any rank cannot, every rank falls back to the FIFO
// schedules for good. Used by one thread at a time (the communicator's operation thread).
#pragma once

#include <array>
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
  // Whether window schedules run here at all (one node, two ranks or more, windows not
  // turned off and not failed to set up): the same answer on every rank. A loaded
  // algorithm's window program runs where this holds.
  bool available() const;
  // Runs a call handles() accepted: `schedule(args, algorithm)` returns the schedule for
  // those (a window schedule where args.windowElems is set) from the communicator's cache
  // (runtime/schedule_cache.h). Falls back to the FIFO schedule when the regions could not
  // be set up. The window schedules of recent calls are kept here with what the
  // interpreter derives from them (Plan), so a repeated call asks for nothing.
  // `source`, when set, names a loaded algorithm (a schedule file) whose window program
  // `schedule` returns: it runs as written (none of the rules below), and where the
  // windows could not be set up the call fails, naming why, as it has no FIFO schedule.
  template <typename Schedules>
  Status run(const algo::CollArgs& args, algo::Algorithm a, const ExecBuffers& b,
             const OpDesc& desc, Schedules schedule, const void* source = nullptr) {
    if (state_ == State::kUnset) BRAID_TRY(setup(desc));
    if (state_ == State::kOff && source != nullptr) return windowsOff(desc);
    if (state_ == State::kOff) return fifo_.run(schedule(args, a), b, desc);
    const bool scaled = b.scale != nullptr;
    Plan* plan = &plans_[lastPlan_];
    if (!plan->matches(args, a, scaled, source)) plan = findPlan(args, a, scaled, source);
    if (plan == nullptr) {
      plan = &newPlan(args, a, scaled, source);
      plan->schedule =
          schedule(windowArgs(args, scaled), source != nullptr ? a : scheduleAlgorithm(args, a));
      derive(plan);
    }
    if (a == algo::Algorithm::kTwoShot && !plan->hasOneShot &&
        lentOneShotCandidate(args, a, scaled)) {
      plan->oneShot = schedule(windowArgs(args, scaled), algo::Algorithm::kDirect);
      plan->hasOneShot = true;
    }
    return execute(*plan, b, desc);
  }
  // Bytes one round moves per rank.
  size_t chunkBytes() const { return chunk_; }
  // Whether run() takes a premul-sum's scalar (ExecBuffers::scale) for this call and
  // scales the input as it copies it into the window, with no pass of its own: all-reduce
  // and reduce-scatter inputs of 4 MiB and up (smaller ones gain from a scaled copy that
  // stays in cache, shared_windows_plans.cc), once the windows are on (set up here if not
  // yet, as run() would). The same answer on every rank.
  Expected<bool> takesScale(const algo::CollArgs& args, algo::Algorithm a, const OpDesc& desc);

 private:
  enum class State { kUnset, kOn, kOff };
  using Flag = algo::WinFlag;
  struct Header;
  struct ShareDesc;
  // A call's buffer in a shared allocation: region name and its offset; or, lent by
  // address (single copy), where it lies in this process.
  struct Zero {
    bool on = false;
    std::string name;
    size_t regionBytes = 0;
    size_t offset = 0;
    uint64_t address = 0;
  };

  // A window schedule of a recent call and what the interpreter derives from it.
  struct Plan {
    algo::Collective collective{};
    algo::Algorithm algorithm{};   // as the call asked; the schedule's may differ (rules)
    const void* source = nullptr;  // a loaded algorithm's (run()), or null: a built-in's
    uint64_t count = 0;
    uint32_t elemSize = 0;
    bool inPlace = false;
    int root = 0;
    bool scaled = false;
    bool used = false;
    algo::Schedule schedule;
    bool line = false;         // its round rides in a header line (rules above)
    bool copiesOnly = false;   // no kReducePeers: peers' data is only copied (single copy)
    bool hasOneShot = false;   // oneShot is built (two-shot calls that may run one-shot)
    algo::Schedule oneShot;
    uint64_t inputBytes = 0, outputBytes = 0;

    bool matches(const algo::CollArgs& args, algo::Algorithm a, bool s, const void* src) const {
      return used && count == args.count && collective == args.collective && algorithm == a &&
             elemSize == args.elemSize && inPlace == args.inPlace && root == args.root &&
             scaled == s && source == src;
    }
  };
  static constexpr int kPlans = 8;

  Status setup(const OpDesc& desc);
  Plan* findPlan(const algo::CollArgs& args, algo::Algorithm a, bool scaled, const void* source);
  // The plan to fill for a call (the least recently made), keyed.
  Plan& newPlan(const algo::CollArgs& args, algo::Algorithm a, bool scaled, const void* source);
  // A loaded window program's call where the windows are off.
  Status windowsOff(const OpDesc& desc) const;
  // A call's arguments for its window schedule.
  algo::CollArgs windowArgs(const algo::CollArgs& args, bool scaled) const;
  void derive(Plan* plan) const;
  // The algorithm whose window schedule runs a call of `a` (see the rules above).
  algo::Algorithm scheduleAlgorithm(const algo::CollArgs& args, algo::Algorithm a) const;
  // Whether a two-shot call may continue one-shot once every input is lent (rules above).
  bool lentOneShotCandidate(const algo::CollArgs& args, algo::Algorithm a, bool scaled) const;
  // The interpreter (shared_windows.cc): runs plan.schedule, continuing with plan.oneShot
  // where the rules say so.
  Status execute(const Plan& plan, const ExecBuffers& b, const OpDesc& desc);
  uint64_t traceStep(TraceSink& trace, const algo::Step& st, const OpDesc& desc,
                     uint64_t startNs) const;
  // kReducePeers `st`, fused with the kPut at *next when that one copies its result into
  // this rank's window (then *next moves past it).
  Status reduceStep(const algo::Step& st, const algo::Step** next, const algo::Step* end,
                    const OpDesc& desc);
  // Sets the call's lending, streaming and line state.
  void prepare(const Plan& plan, const ExecBuffers& b);
  Status reducePeers(const algo::Step& st, const algo::Step* fusedPut, const OpDesc& desc);
  Status copyPeer(const algo::Step& st, const OpDesc& desc);
  void put(const algo::Step& st, const OpDesc& desc);
  Status wait(const algo::Step& st, const OpDesc& desc);
  void signal(Flag flag);
  // Whether kPut `st` is skipped: its area's buffer is lent.
  bool lent(algo::BufRef area) const {
    return area == algo::BufRef::kWindowIn ? zin_.on : area == algo::BufRef::kWindowOut && zout_.on;
  }
  // This rank's buffer or window area (of the current round) `r`, at element `at`.
  char* ownAt(algo::BufRef r, uint64_t at) const { return own_[static_cast<int>(r)] + at * es_; }
  // Where rank q's data of `st` (a kReducePeers or kCopyPeer) is: its area or (this rank)
  // its own buffer where the step or lending says so; null where q lent its buffer, which
  // lentDataOf maps.
  const char* dataOf(int q, const algo::Step& st) const;
  Expected<const char*> lentDataOf(int q, const algo::Step& st, const OpDesc& desc);

  // Starts the next round; a rank about to write its half (or line) first makes sure
  // every peer has finished the round that used it last.
  Status beginRound(bool writes, const OpDesc& desc);
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
  // Copies into this rank's window (streamed from kStreamMinBytes), times scale_ when
  // `scaled`.
  void copyIn(char* dst, const char* src, size_t bytes, bool scaled, const OpDesc& desc);

  // Zero copy (see above): *z says whether [p, p + bytes) may be read in place, and where.
  void lend(const void* p, size_t bytes, Zero* z) const;
  // Single copy: a private input of a plan that only copies peers' data is lent by
  // address, which peers read through their endpoint (Endpoint::readAt), from
  // CommConfig::singleCopyMinBytes a read up, where every peer's endpoint can.
  void lendByAddress(const Plan& plan, const void* p, Zero* z) const;
  // Whether rank q lent the data of copy step `st` by address (this round).
  bool lentAddress(int q, const algo::Step& st) const;
  // Reads rank q's data of copy step `st` at the address it lent into `dst`.
  Status readLent(int q, const algo::Step& st, char* dst, const OpDesc& desc);
  // This rank's buffer of `half` (input or output) is `zero` (or in its window).
  void describe(bool output, int half, const Zero& zero);
  // Whether rank q lent its buffer (input or output) of `half` (described it).
  bool described(int q, bool output, int half) const;
  // Rank q's lent buffer of `half` at byte `at` (`bytes` long), mapped here.
  Expected<const char*> lentOf(int q, bool output, int half, size_t at, size_t bytes,
                               const OpDesc& desc);
  // Whether every rank described its input of `half` as a buffer to read in
  // place (after the ready flags of that round, every rank sees the same).
  bool inputsAllLent(int half) const;

  Header* header(int rank) const;
  char* inputArea(int rank, int half) const;
  char* outputArea(int rank, int half) const;
  char* lineData(int rank, uint64_t epoch) const;
  std::atomic<uint64_t>& lineEpoch(int rank, uint64_t epoch) const;
  std::atomic<uint64_t>& flagOf(int rank, Flag flag) const;

  Comm& comm_;
  HostExecutor& fifo_;
  State state_ = State::kUnset;
  bool enabled_ = true;  // BRAID_SHM_WINDOW_BYTES=0 turns the windows off
  size_t chunk_ = 0;
  size_t zeroCopyMin_ = 0;  // buffers this big and up are lent (shared_windows_plans.cc)
  bool singleCopy_ = false;  // every peer's endpoint reads by address (setup)
  size_t regionBytes_ = 0;
  std::unique_ptr<SharedRegion> mine_;
  std::vector<std::unique_ptr<SharedRegion>> peers_;           // by rank; empty at this rank
  std::vector<char*> bases_;                                   // every rank's region, mapped here
  std::map<std::string, std::unique_ptr<SharedRegion>> lent_;  // peers' allocations, mapped
  std::vector<const char*> data_;                              // per rank, scratch of one step
  std::array<Plan, kPlans> plans_;
  int nextPlan_ = 0;  // the next to reuse, round robin
  int lastPlan_ = 0;  // the last call's
  uint64_t epoch_ = 0;
  uint64_t allReady_ = 0;  // every peer has published ready >= this

  // The call in progress (prepare()).
  const char* in_ = nullptr;
  char* out_ = nullptr;
  // This rank's buffers and areas (of the current round) by algo::BufRef.
  std::array<char*, 6> own_{};
  size_t es_ = 1;
  Zero zin_, zout_;  // this rank's lent input and output
  // The call's rounds ride in header lines (see the rules above).
  bool line_ = false;
  // This call's output is large (kStreamOutMinBytes): written with streaming stores.
  bool streamOut_ = false;
  // This call's premul-sum scalar (ExecBuffers::scale), or null: its input is scaled on the
  // way into the window, never read in place.
  const void* scale_ = nullptr;
  int half_ = 0;          // the current round's half
  bool writes_ = false;   // this rank writes its window in the current round
  int readyWaits_ = 0;    // peers whose ready flag of the current round this rank has seen

  alignas(64) char block_[16 << 10];  // reductions into a streamed output, a block at a time
  Deadline deadline_{0};
  bool deadlineSet_ = false;
};

}  // namespace braid
