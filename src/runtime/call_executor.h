// One interface for every way a call runs: the kinds runtime/dispatch.h names (Executor)
// each have one CallExecutor object in the communicator's table (CallExecutors), and the
// host and device paths run `executorFor(comm, dispatch(...)).run(...)`. The objects are
// thin and stateless adapters over each executor's own entry point: the host FIFO
// schedules (exec/host/fifo_executor.h), the host shared windows (exec/host/shared_windows.h),
// and on the device side the device windows (runtime/device/device_windows.h), the lowered
// schedules (runtime/device/lowered_schedule.cc: the windows run through it what they do
// not program), the staged proxy (runtime/device/staged_proxy.h) and one rank's copies on
// the stream. What a run
// needs beyond its calls comes in a CallContext on the caller's stack: no allocation per
// call. The device kinds are made on the device side (addDeviceExecutors in
// runtime/device_calls.h), so nothing here includes a CUDA header; a library built without
// CUDA has none (no call takes the device path there).
//
// Thread-safety: the objects hold no state; a run is as thread-safe as the executor behind
// it, and its caller holds what that executor asks (comm->opMu for the host kinds).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "algorithms/file/schedule_file.h"
#include "algorithms/registry.h"
#include "algorithms/schedule.h"
#include "braid/braid.h"
#include "core/status.h"
#include "exec/call.h"
#include "exec/host/fifo_executor.h"
#include "runtime/dispatch.h"

struct braidComm;

namespace braid {

// What a run takes beyond its calls. The host path's calls are prepared before they run
// (runtime/host_calls.cc): one collective's schedule arguments, algorithm, buffers (a
// premul-sum's scaled input or scalar among them) and description, or a group's sends and
// receives as one schedule. The device path's are a vector on its stream.
struct CallContext {
  braidComm* comm = nullptr;
  const algo::CollArgs* args = nullptr;
  algo::Algorithm algorithm{};
  ExecBuffers buffers{};
  const OpDesc* desc = nullptr;
  const algo::Schedule* schedule = nullptr;  // null: the communicator's for (args, algorithm)
  const algo::AlgoFile* user = nullptr;      // device, lowered: a loaded algorithm, not `algorithm`
  braidStream_t stream = nullptr;            // device: NULL is the legacy default stream
  bool captured = false;                     // device: the stream is capturing a CUDA graph
  // Device: the vector the calls are, which an executor that keeps its calls (the staged
  // proxy) moves from.
  std::vector<Call>* calls = nullptr;
};

class CallExecutor {
 public:
  virtual ~CallExecutor() = default;
  virtual Executor kind() const = 0;
  const char* name() const { return executorName(kind()); }
  // Runs `n` calls at `calls` (ctx.calls's contents where the device path sets it) as this
  // executor does; a group's host sends and receives come as their one schedule
  // (ctx.schedule), `n` 0.
  virtual Status run(const Call* calls, size_t n, const CallContext& ctx) = 0;
};

// One object per kind that runs calls (every Executor but kRefused), indexed by the kind.
// Executor::kRefused comes last.
constexpr size_t kExecutorKinds = static_cast<size_t>(Executor::kRefused);
using CallExecutors = std::array<std::unique_ptr<CallExecutor>, kExecutorKinds>;

// The host kinds, and the device kinds where the library has a device side
// (addDeviceExecutors, runtime/device_calls.h).
CallExecutors makeExecutors();

}  // namespace braid
