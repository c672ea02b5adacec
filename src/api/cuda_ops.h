// Operations on the CUDA side: a call whose stream is a CUDA stream, or whose buffers live
// in device memory, runs on the device windows (api/cuda_ipc.h), as copies on one rank,
// or staged through pinned host memory by the communicator's proxy (api/cuda_proxy.h);
// each is enqueued on the stream and returns. In a build without CUDA, or on a machine
// without a device, nothing here takes a call and the host path is unchanged.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "api/ops.h"
#include "exec/cuda_staging.h"
#include "exec/device_program.h"

namespace braid {

// For a stream that is neither NULL nor a live host stream: accepted when it is a CUDA
// stream of this process; otherwise the error names the stream argument and says why
// (no CUDA in this build, no device, or CUDA's answer).
Status checkCudaStream(braidStream_t stream);

// Whether `ops` issued on `stream` take the CUDA path: a CUDA stream, or a device buffer.
// One registry lookup and nothing else when there is no device.
bool usesCuda(const std::vector<OpRequest>& ops, braidStream_t stream);

// The bytes `op` reads and writes on this rank, as braid.h lays out each call (its send
// buffer, then its receive buffer, which is marked written; a buffer a rank does not use
// has 0 bytes). Exposed for tests.
std::vector<StagedRegion> regionsOf(const OpRequest& op, int rank, int nranks);

// pairSelfSends (api/ops.h) over the sends and receives of `ops`; copySelfSends enqueues
// each pair as a copy on `stream`.
Expected<SelfPairs> pairSelfSends(const std::vector<OpRequest>& ops, int rank);
Status copySelfSends(const SelfPairs& self, void* stream);

// A copy or reduction of a device program (exec/device_program.h) at resolved addresses,
// on `stream`: a copy is nothing when dst is the source; a reduction of op's datatype and
// operation (avg sums until the final value, divided by nranks). (api/cuda_schedule.cc)
Status enqueueData(const DeviceOp& d, void* dst, const void* const* srcs, const OpRequest& op,
                   int nranks, void* stream);

// A communicator's device calls in issue order, whatever streams they are on, as NCCL
// orders a communicator's work: each call's stream first waits for the last call's event
// (after), and the call then records it (mark). One per communicator, shared by the device
// windows and the staged proxy. Thread-safe.
class DeviceOrder : public std::enable_shared_from_this<DeviceOrder> {
 public:
  static Expected<std::shared_ptr<DeviceOrder>> create();
  ~DeviceOrder();
  DeviceOrder(const DeviceOrder&) = delete;
  DeviceOrder& operator=(const DeviceOrder&) = delete;

  Status after(void* stream);  // `stream` waits for the last call (nothing before any)
  Status mark(void* stream);   // the work on `stream` so far is now the last call
  Status synchronize();        // the host waits for the last call
  // No release of releaseLater (exec/cuda_staging.h) runs until the last call has run on
  // the device: a failed communicator's frees (and any other), where a call's part may
  // wait on a stream the application holds.
  void holdReleases();
  // A call enqueued only in part on `stream`: that part becomes the last call (mark), and
  // releases wait for it (holdReleases).
  void holdReleasesFor(void* stream);

 private:
  DeviceOrder() = default;
  std::mutex mu_;
  void* event_ = nullptr;
  bool any_ = false;
};

// The communicator's CUDA device (current at its first device call) made current on this
// thread for the scope, the caller's put back after: its teardown frees device and pinned
// memory and events, which on another device's context would make one there (as
// ncclCommDestroy, a thread that never set its device may destroy). Nothing for a
// communicator that made no device call.
class CommDeviceScope {
 public:
  explicit CommDeviceScope(const braidComm* comm);
  ~CommDeviceScope();
  CommDeviceScope(const CommDeviceScope&) = delete;
  CommDeviceScope& operator=(const CommDeviceScope&) = delete;

 private:
  int restore_ = -1;
};

// Keeps `thing` until the process exits: memory that queued device work may still write
// after its owner is gone (an abort, a stream that never finished). Reachable, so leak
// checkers do not count it. Thread-safe.
void keepUntilExit(std::shared_ptr<void> thing);

// Waits until the communicator's staged device calls (api/cuda_proxy.h) have run their
// host collectives, so that a host collective issued now runs after them on every rank.
// Nothing when there are none. The caller does not hold comm->opMu.
void waitForStagedCalls(braidComm* comm);

// Runs `ops` ordered on `stream` (NULL: the legacy default stream, complete on return);
// device buffers with a host stream are invalid usage.
braidResult_t issueCudaOps(braidComm* comm, std::vector<OpRequest> ops, braidStream_t stream);

// braidInvalidUsage for a call on a stream capturing a CUDA graph that a replay could not
// run (`why`): refused before anything is enqueued, so the communicator and the capture
// are as they were.
Status captureRefusal(const std::string& why);

}  // namespace braid
