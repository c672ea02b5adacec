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
  void copyStep(const algo::Step& step, const OpDesc& desc);
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
};

}  // namespace braid
