// The communicator behind braidComm_t: its Comm (peers, links, liveness), the selector and
// the schedule cache, the host executors, and the device state its first device call makes
// (exec/cuda). The runtime (runtime/issue.h) runs calls on it; the C entry points only look
// it up (runtime/live_handles.h).
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
#include "exec/call.h"
#include "exec/host/fifo_executor.h"
#include "exec/host/shared_windows.h"
#include "runtime/call_executor.h"
#include "runtime/trace_file.h"
#include "select/select.h"
#include "topo/view.h"

namespace braid {

// How a host collective runs on a communicator, worked out from the call's shape alone
// (runtime/host_calls.cc): its schedule arguments, algorithm, executor and description,
// seq aside. The last call's is kept, and the next call of the same shape reuses it.
struct ResolvedCall {
  algo::CollArgs args;
  Selector::Choice choice;
  Windows windows = Windows::kDoNot;
  Executor executor = Executor::kHostFifo;
  OpDesc desc;
  bool kept = false;  // whether a call of the same shape may reuse it (matches)

  bool matches(const Call& call, int rank) const {
    return kept && call.collective == args.collective && call.count == args.count &&
           call.datatype == desc.datatype && call.op == desc.op && call.root == args.root &&
           !call.preMul.on && isInPlace(call, rank, args.elemSize) == args.inPlace;
  }
};

class DeviceOrder;
class DeviceWindows;
class StagedProxy;
class ThreadPeers;
}  // namespace braid

struct braidComm {
  std::unique_ptr<braid::Comm> comm;
  std::unique_ptr<braid::HostExecutor> exec;
  std::unique_ptr<braid::NodeWindows> windows;  // direct algorithms over shared memory
  // One object per way a call runs (runtime/call_executor.h), indexed by dispatch's answer.
  braid::CallExecutors executors = braid::makeExecutors();
  // Orders the communicator's device calls across streams (runtime/device_calls.h), made at the
  // first device call; declared before its users below, so destroyed after them.
  std::shared_ptr<braid::DeviceOrder> deviceOrder;
  int cudaDevice = -1;  // current at the first device call (with deviceOrder, under opMu)
  // The direct GPU path (runtime/device/device_windows.h), made at the first device call that can
  // use it (shared_ptr: the type is complete only there).
  std::shared_ptr<braid::DeviceWindows> deviceWindows;
  // deviceWindows.get() once made, for braidCommGetAsyncError from any thread.
  std::atomic<braid::DeviceWindows*> deviceWindowsLive{nullptr};
  bool deviceWindowsTried = false;
  // Device calls the windows do not run (runtime/device/staged_proxy.h), made at the first;
  // destroyed before the members above, which its thread uses.
  std::shared_ptr<braid::StagedProxy> stagedProxy;
  std::atomic<braid::StagedProxy*> stagedProxyLive{nullptr};  // stagedProxy.get(), any thread
  // Its ranks that are threads of this process (runtime/device/thread_peers.h), made at first use.
  std::once_flag threadPeersOnce;
  std::shared_ptr<braid::ThreadPeers> threadPeers;
  std::mutex opMu;                  // one operation at a time (streams run on workers)
  std::atomic<int> activeCalls{0};  // calls inside issueOps (acquireComm); destroy waits
  std::atomic<int> inflight{0};     // operations enqueued on streams, not yet finished
  std::mutex errorMu;
  std::string lastError;
  braid::topo::MergedTopology topology;  // every rank's view, merged at init
  braid::Selector selector;              // BRAID_ALGO, then the cost model on `topology`
  // Device calls' selector (select/device_choice.h): the same policy, priced over the ranks'
  // GPU paths when every rank sits on a GPU of `topology` (deviceFigures).
  braid::Selector deviceSelector;
  bool deviceFigures = false;
  uint8_t barrierByte = 0;               // the barrier's all-reduce buffer
  // Premul-sum ops (braidRedOpCreatePreMulSum, runtime/premul.h), under preMulMu.
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
  // Host groups' receives that land on a send buffer, until the sends are done (under opMu).
  std::vector<char> p2pScratch;
  // A host group's sends and receives, their plan and schedule, reused group after group so
  // that a small group allocates nothing (under opMu).
  std::vector<const braid::Call*> p2pCalls;
  braid::PointToPointPlan p2pPlan;
  braid::algo::Schedule p2pSchedule;
  bool checkCalls = false;               // BRAID_CHECK=1: ranks compare each collective call first
  // The last host collective's resolution (runtime/host_calls.cc; under opMu).
  braid::ResolvedCall lastCall;
  // Per collective, 1 + the algorithm last reported at INFO level (0: none yet).
  std::array<uint8_t, 16> loggedAlgorithm{};
  // The same for device calls on the windows: 1 + 2 x algorithm + executor (under opMu).
  std::array<uint8_t, 16> loggedDeviceChoice{};
  // Recently used schedules, most recent first (building one is cheap, but not free).
  struct CachedSchedule {
    braid::algo::Collective collective;
    braid::algo::Algorithm algorithm;
    uint64_t count;
    uint32_t elemSize;
    bool inPlace;
    int root;
    uint64_t maxStepElems;  // host FIFO steps or the CUDA executor's slots
    uint64_t windowElems;   // window schedules (algo::CollArgs::windowElems), else 0
    bool scaledPut;
    const braid::algo::AlgoFile* user;  // a loaded algorithm's (runtime/user_algorithms.h)
    braid::algo::Schedule schedule;
  };
  std::list<CachedSchedule> schedules;
  // BRAID_TRACE's file (runtime/trace_file.h): its directory and names; the sink is the Comm's.
  braid::TraceFileInfo traceInfo;
  mutable std::mutex traceFileMu;
  braid::algo::Schedule allToAllv;  // the last all-to-all-v's (runtime/schedule_cache.h)
};

namespace braid {
// The runtime's name for the communicator; braidComm is the C ABI's.
using Communicator = braidComm;

// The communicator's executor of `kind` (any but Executor::kRefused; a device kind only in a
// library with a device side).
inline CallExecutor& executorFor(braidComm* comm, Executor kind) {
  return *comm->executors[static_cast<size_t>(kind)];
}
}  // namespace braid
