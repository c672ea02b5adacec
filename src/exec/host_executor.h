// HostExecutor: runs one rank's Schedule on host memory over the
// communicator's endpoints.
//
// Each step is cut into slices of the communicator's slice size; a slice needs
// a filled receive slot and/or a free send slot, and the reduction is fused
// with the copy into the send slot (receive-reduce-send in one pass). Waits
// spin for BRAID_SPIN_US, then yield for BRAID_YIELD_US, then sleep in the
// kernel (futex for shm, poll for sockets), checking the deadline, the
// communicator's sticky error and abort as they go. No allocation per slice.
// Used by one thread at a time.
#pragma once

#include <string>

#include "algorithms/schedule.h"
#include "braid/braid.h"
#include "core/comm.h"

namespace braid {

struct ExecBuffers {
  const void* input = nullptr;
  void* output = nullptr;
  void* scratch = nullptr;
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
};

class HostExecutor {
 public:
  explicit HostExecutor(Comm& comm);

  Status run(const algo::Schedule& schedule, const ExecBuffers& buffers, const OpDesc& desc);

 private:
  struct SliceWait;
  Status runStep(const algo::Step& step, size_t stepIndex, const ExecBuffers& buffers,
                 const OpDesc& desc);
  Status waitSlots(SliceWait& w, const OpDesc& desc);
  Status blockOnce(SliceWait& w);
  Status flushSends(const OpDesc& desc);
  Status failure(const SliceWait& w, const OpDesc& desc, const char* why);

  Comm& comm_;
  Status endpointError(int peer, const Status& st, const OpDesc& desc);

  std::vector<Endpoint*> active_;  // endpoints of the schedule being run
  std::vector<int> activePeers_;   // their ranks
  bool anyPollable_ = false;
  const algo::Schedule* schedule_ = nullptr;
  Deadline deadline_{0};
  int spinUs_;
  int yieldUs_;
};

}  // namespace braid
