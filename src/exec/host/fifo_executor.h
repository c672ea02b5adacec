// HostExecutor: runs one rank's Schedule on host memory over the
// communicator's endpoints.
//
// Steps run in order; the steps of a batch (Step::batchWithNext) progress
// together, round-robin, one slice at a time, keeping the per-peer order the
// schedule gives. A slice needs a filled receive slot and/or a free send slot;
// the reduction is fused with the copy into the send slot (receive-reduce-send
// in one pass). When nothing can move, waits spin for BRAID_SPIN_US, then yield
// for BRAID_YIELD_US, then sleep in the kernel (futex for shm, poll for
// sockets), checking the deadline, the communicator's sticky error and abort as
// they go. No allocation per slice; scratch is kept between calls.
//
// Single copy: a send step of a private buffer whose endpoint can
// (Endpoint::canPostAt) posts where its bytes lie, up to kPostMaxBytes a slot,
// from CommConfig::singleCopyMinBytes up; the receiver copies them from the
// sender's memory straight into its destination, or a slice at a time into
// peerStage_ for a reduction or a forward, then releases the slot. A range the
// schedule writes later is not posted, and run() returns once every posted slot
// is released.
// Used by one thread at a time.
#pragma once

#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "braid/braid.h"
#include "core/comm.h"

namespace braid {

struct ExecBuffers {
  const void* input = nullptr;
  void* output = nullptr;
  // A premul-sum's scalar (one element of the datatype): the input counts as input times
  // it. Only NodeWindows takes one, where NodeWindows::takesScale said so.
  const void* scale = nullptr;
};

// What the operation is, for error messages.
struct OpDesc {
  const char* collective = "";
  const char* algorithm = "";
  uint64_t seq = 0;
  size_t bytes = 0;
  braidDataType_t datatype = braidFloat32;
  braidRedOp_t op = braidSum;
  // Sends and receives of a group (not a collective): a call may return with sends in
  // the FIFOs, and callers rely on it (two ranks that both send, then both receive),
  // so single copy holds back sends that the FIFO holds whole.
  bool pointToPoint = false;
  std::string describe() const;  // "allreduce #12 (1048576 B float32 sum, ring)"
  OpLabel label() const;
  static std::string describeLabel(const OpLabel& label);  // as describe()
};

class HostExecutor {
 public:
  explicit HostExecutor(Comm& comm);

  Status run(const algo::Schedule& schedule, const ExecBuffers& buffers, const OpDesc& desc);

  // The wait policy, shared with the shared-window algorithms (shared_windows.h): a
  // wait spins spinBudgetUs(), then yields until yieldUs() more have passed,
  // then sleeps; adaptSpin() learns from how long each wait took.
  int spinBudgetUs() const { return spinBudgetUs_; }
  int yieldUs() const { return yieldUs_; }
  void adaptSpin(uint64_t waitedUs);

 private:
  // One step's progress through its slices.
  struct StepRun {
    const algo::Step* step = nullptr;
    size_t index = 0;
    uint64_t done = 0;  // elements
    Endpoint* recvEp = nullptr;
    Endpoint* sendEp = nullptr;
    bool finished = false;
    size_t peerTaken = 0;  // bytes of the receive slot at the peer copied so far
    int8_t postable = -1;  // single copy: whether this send may post (-1: not asked yet)
  };
  // An endpoint this operation posted on by single copy (Endpoint::sendPostAt).
  struct Posted {
    Endpoint* ep;
    int peer;
    size_t stepIndex;
  };
  // What a stalled step waits for.
  struct WaitTarget {
    Endpoint* ep;
    int peer;
    bool recv;  // else: room to send
    size_t stepIndex;
  };

  Status runBatch(size_t begin, size_t end, const OpDesc& desc);
  void traceBatch(TraceSink& trace, size_t begin, size_t end, const OpDesc& desc,
                  uint64_t startNs, uint64_t waitedNs) const;
  bool eligible(size_t i) const;
  // Moves one slice of `s` if its slots are ready: 1 moved, 0 not ready.
  Expected<int> advance(StepRun& s, const OpDesc& desc);
  // advance()'s reduction of n elements (a step that reduces): from src and in into dst
  // and/or the send slot out, streamed into it where `stream`.
  void reduceSlice(const StepRun& s, const char* src, char* dst, const void* in, void* out,
                   uint64_t n, bool stream, const OpDesc& desc);
  void copyStep(const algo::Step& step, const OpDesc& desc);
  // Whether an endpoint posted on has a slot its receiver has not released (*which);
  // drops those with none.
  bool unread(Posted* which);
  // Waits until every receiver has released every posted slot.
  Status awaitPostedReads(const OpDesc& desc);
  // Whether a step of the batch or after it writes into [lo, hi).
  bool writtenLater(uintptr_t lo, uintptr_t hi) const;
  // Posts up to kPostMaxBytes of a send step by single copy, once advance() has seen that
  // many reach singleCopyMin_: 1 posted, 0 not worth it.
  Expected<int> postAt(StepRun& s, const OpDesc& desc);
  // The bytes of a receive slot at the peer this advance takes (*n elements), copied into
  // the step's destination or peerStage_; *in points at them.
  Status takeFromPeer(StepRun& s, size_t slotBytes, char* dst, uint64_t* n, const void** in,
                      const OpDesc& desc);
  Status sizeMismatch(const algo::Step& step, size_t got, size_t expected, const OpDesc& desc);
  Status pause(const OpDesc& desc);
  void blockOnce();
  Status flushSends(const OpDesc& desc);
  Status endpointError(int peer, const Status& st, const OpDesc& desc);
  Status stalled(const OpDesc& desc, const char* why);
  char* address(algo::BufRef ref, uint64_t offset) const;

  Comm& comm_;
  int spinUs_;            // the most a wait spins (BRAID_SPIN_US, 0 when oversubscribed)
  int spinBudgetUs_ = 0;  // what it spins now (adaptSpin)
  int yieldUs_;
  // The operation being run.
  const algo::Schedule* schedule_ = nullptr;
  ExecBuffers buffers_;
  size_t elemSize_ = 0;
  // Reduced slices bound for a shared slot are made here, an L1-sized block
  // at a time, then streamed (advance()).
  static constexpr size_t kBlockBytes = 16 << 10;
  alignas(64) char block_[kBlockBytes];
  uint64_t blockElems() const { return kBlockBytes / elemSize_; }
  // The operation's deadline, started by the first wait that blocks (reading
  // the clock costs more than a small call's whole data movement).
  const Deadline& deadline();
  Deadline deadline_{0};
  bool deadlineSet_ = false;
  std::vector<Endpoint*> active_;  // endpoints of the schedule
  std::vector<int> activePeers_;   // their ranks
  bool anyPollable_ = false;
  std::vector<StepRun> batch_;
  std::vector<WaitTarget> waits_;  // filled by the last round that moved nothing
  uint64_t stallStartNs_ = 0;
  uint32_t stallPolls_ = 0;
  bool lookedAfterFailure_ = false;  // pause() gave the steps one pass after a failure
  std::vector<char> scratch_;
  // Single copy (see the class comment).
  static constexpr size_t kPostMaxBytes = 1 << 20;
  uint64_t singleCopyMin_;
  std::vector<Posted> posted_;
  std::vector<char> peerStage_;
};

}  // namespace braid
