// The object behind braidComm_t, and the guard every C entry point uses to
// turn a Status into a braidResult_t while keeping its message for
// braidGetLastError. Handles are registered while alive, so a destroyed or
// made-up handle is an error, not a crash.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/schedule.h"
#include "core/comm.h"
#include "exec/host_executor.h"
#include "exec/window.h"
#include "select/select.h"
#include "topo/view.h"

namespace braid {
class DeviceOrder;
class DeviceWindows;
class StagedProxy;
class ThreadPeers;
}  // namespace braid

struct braidComm {
  std::unique_ptr<braid::Comm> comm;
  std::unique_ptr<braid::HostExecutor> exec;
  std::unique_ptr<braid::NodeWindows> windows;  // direct algorithms over shared memory
  // Orders the communicator's device calls across streams (api/cuda_ops.h), made at the
  // first device call; declared before its users below, so destroyed after them.
  std::shared_ptr<braid::DeviceOrder> deviceOrder;
  int cudaDevice = -1;  // current at the first device call (with deviceOrder, under opMu)
  // The direct GPU path (api/cuda_ipc.h), made at the first device call that can use it
  // (shared_ptr: the type is complete only there).
  std::shared_ptr<braid::DeviceWindows> deviceWindows;
  // deviceWindows.get() once made, for braidCommGetAsyncError from any thread.
  std::atomic<braid::DeviceWindows*> deviceWindowsLive{nullptr};
  bool deviceWindowsTried = false;
  // Device calls the windows do not run (api/cuda_proxy.h), made at the first; destroyed
  // before the members above, which its thread uses.
  std::shared_ptr<braid::StagedProxy> stagedProxy;
  std::atomic<braid::StagedProxy*> stagedProxyLive{nullptr};  // stagedProxy.get(), any thread
  // Its ranks that are threads of this process (api/thread_peers.h), made at first use.
  std::once_flag threadPeersOnce;
  std::shared_ptr<braid::ThreadPeers> threadPeers;
  std::mutex opMu;                  // one operation at a time (streams run on workers)
  std::atomic<int> activeCalls{0};  // calls inside issueOps (acquireComm); destroy waits
  std::atomic<int> inflight{0};     // operations enqueued on streams, not yet finished
  std::mutex errorMu;
  std::string lastError;
  braid::topo::MergedTopology topology;  // every rank's view, merged at init
  braid::Selector selector;              // BRAID_ALGO, then the cost model on `topology`
  uint8_t barrierByte = 0;               // the barrier's all-reduce buffer
  // Premul-sum ops (braidRedOpCreatePreMulSum, api/premul.h), under preMulMu.
  struct PreMulOp {
    braidRedOp_t handle;
    braidDataType_t datatype;
    unsigned char value[8];  // braidScalarHostImmediate's scalar
    const void* scalarPtr;   // braidScalarDevice's: read at each call
  };
  std::mutex preMulMu;
  std::vector<PreMulOp> preMulOps;
  // Host premul-sum calls' scaled copies, reused call after call (under opMu).
  std::vector<std::vector<char>> preMulCopies;
  bool checkCalls = false;               // BRAID_CHECK=1: ranks compare each collective call first
  // Per collective, 1 + the algorithm last reported at INFO level (0: none yet).
  std::array<uint8_t, 16> loggedAlgorithm{};
  // Recently used schedules, most recent first (building one is cheap, but not free).
  struct CachedSchedule {
    braid::algo::Collective collective;
    braid::algo::Algorithm algorithm;
    uint64_t count;
    uint32_t elemSize;
    bool inPlace;
    int root;
    uint64_t maxStepElems;  // host FIFO steps or the CUDA executor's slots
    braid::algo::Schedule schedule;
  };
  std::list<CachedSchedule> schedules;
  braid::algo::Schedule allToAllv;  // the last all-to-all-v's (api/ops.h scheduleFor)
};

namespace braid {

// Registry of live handles.
void registerComm(braidComm* comm);
void unregisterComm(braidComm* comm);
bool isLiveComm(const braidComm* comm);
// For a call that does more than a few instructions before it takes opMu (the CUDA
// path classifies pointers, which can load the driver): counts the call in
// comm->activeCalls if comm is still registered (false: it was destroyed or aborted, and
// comm must not be touched). destroy and abort unregister, then waitForCalls() before
// they free the communicator.
bool acquireComm(braidComm* comm);
void releaseComm(braidComm* comm);
void waitForCalls(braidComm* comm);
// Calls fn on every live communicator while holding the registry's lock (no
// communicator is freed meanwhile; fn must not call back into the registry).
void forEachLiveComm(const std::function<void(const braidComm*)>& fn);

// Ends comm's buffer registrations (braidCommDestroy and braidCommAbort): pages
// a registration shared become private again (api/memory.cc).
void dropRegistrations(braidComm* comm);

// Records `status` as the last error (of comm, when live, and of this thread)
// and returns its code. Logs it at WARN level once.
braidResult_t finish(braidComm* comm, const Status& status);
// This thread's last error, as braidGetLastError(NULL) reports it.
extern thread_local std::string tLastError;

// Whether `stream` is NULL or a live host stream.
bool isValidStream(braidStream_t stream);
void registerStream(braidStream_t stream);
void unregisterStream(braidStream_t stream);
// Whether `stream` came from braidStreamCreate and was destroyed since. A pointer that
// is neither NULL, a live nor a destroyed Braid stream is taken to be a cudaStream_t.
bool isDestroyedStream(braidStream_t stream);

}  // namespace braid
