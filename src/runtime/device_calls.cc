#include "runtime/device_calls.h"

#include <algorithm>

#include "algorithms/registry.h"
#include "core/logging.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/cuda/device_call.h"
#include "exec/cuda/device_program.h"
#include "exec/reduce.h"
#include "runtime/device/device_order.h"
#include "runtime/device/device_windows.h"
#include "runtime/device/staged_proxy.h"
#include "runtime/device/thread_peers.h"
#include "runtime/dispatch.h"
#include "runtime/host_calls.h"
#include "runtime/last_error.h"
#include "runtime/live_handles.h"
#include "runtime/nvtx.h"
#include "runtime/premul.h"
#include "runtime/schedule_cache.h"
#include "runtime/tracing.h"

namespace braid {

namespace {

using algo::Collective;

bool isHostStream(braidStream_t stream) { return stream != nullptr && isValidStream(stream); }

// Through the communicator's proxy (runtime/device/staged_proxy.h): enqueued on the stream,
// returning at once; on the NULL stream complete, with the host collective's error, on return.
Status runStaged(braidComm* comm, std::vector<Call> ops, braidStream_t stream) {
  if (isHostStream(stream)) {
    return invalidUsage(
        "a buffer is in device memory but the stream is a host stream from "
        "braidStreamCreate; pass a cudaStream_t (or NULL) for device buffers");
  }
  {
    std::lock_guard<std::mutex> lock(comm->opMu);
    if (comm->stagedProxy == nullptr) {
      BRAID_ASSIGN_OR_RETURN(std::unique_ptr<StagedProxy> proxy,
                             StagedProxy::create(comm, comm->deviceOrder));
      comm->stagedProxy = std::move(proxy);
      comm->stagedProxyLive = comm->stagedProxy.get();
    }
  }
  void* cudaStream = stream;  // NULL: the legacy default stream
  BRAID_TRY(comm->stagedProxy->issue(std::move(ops), cudaStream));
  if (cudaStream != nullptr) return Status::ok();
  BRAID_TRY(cuda::streamSynchronize(nullptr));
  return comm->comm->asyncError();
}

}  // namespace

void hostCallIssued(braidComm* comm, const std::vector<Call>& ops) {
  ThreadPeers::hostCallIssued(comm, ops);
}

void waitForStagedCalls(braidComm* comm) {
  if (StagedProxy* proxy = comm->stagedProxyLive.load()) proxy->waitIdle();
}

namespace {

// Whether every byte `op` touches on one rank is device memory (each buffer asked once).
bool onDevice(const Call& op) {
  if (op.kind != Call::Kind::kCollective || op.collective == algo::Collective::kAllToAllv) {
    for (const StagedRegion& r : regionsOf(op, 0, 1)) {
      if (r.bytes != 0 && !cuda::isDeviceMemory(r.ptr)) return false;
    }
    return true;
  }
  if (op.count == 0) return true;
  return cuda::isDeviceMemory(op.send) && (op.recv == op.send || cuda::isDeviceMemory(op.recv));
}

// One rank's all-to-all-v: its schedule's local copies, lowered (empty where the schedule
// needs scratch or more than copies: the caller stages).
Expected<std::vector<DeviceOp>> aloneAllToAllv(braidComm* comm, const Call& op, bool* ok) {
  const size_t es = datatypeSize(op.datatype);
  BRAID_ASSIGN_OR_RETURN(Selector::Choice choice, comm->selector.chooseForCall(op.collective, 0));
  algo::CollArgs args = collArgsOf(op, 0, 1);
  args.maxStepElems = 1;
  const algo::Schedule& s = scheduleFor(comm, args, choice.algorithm, "cuda");
  PairCounts none(1);  // one rank's schedule is local steps: the slot size bounds nothing
  BRAID_ASSIGN_OR_RETURN(std::vector<DeviceOp> program, lowerSchedule(s, es, es, &none));
  *ok = s.scratchElems == 0;
  for (const DeviceOp& d : program) *ok = *ok && d.kind == DeviceOp::Kind::kCopy;
  return program;
}

// One rank on device memory. A collective's result is its one input (every operation of
// one input is the identity, avg's division by 1 included): nothing to do in place, one
// copy on the stream out of place; a premul-sum scales its input into its output;
// all-to-all-v copies its one block; a send to itself is a copy to its paired receive,
// none where the two are one buffer. NCCL's 1-rank calls are a copy too. False, with
// nothing enqueued: not every buffer is device memory, or the sends need scratch (a
// receive into another send's buffer); the caller stages.
Expected<bool> runAlone(braidComm* comm, const std::vector<Call>& ops, void* stream) {
  bool sends = false;
  std::vector<std::vector<DeviceOp>> allToAllv;  // each all-to-all-v's copies, in order
  for (const Call& op : ops) {
    if (!onDevice(op)) return false;
    sends = sends || op.kind != Call::Kind::kCollective;
    if (op.kind == Call::Kind::kCollective && op.collective == algo::Collective::kAllToAllv) {
      bool ok = false;
      BRAID_ASSIGN_OR_RETURN(std::vector<DeviceOp> program, aloneAllToAllv(comm, op, &ok));
      if (!ok) return false;
      allToAllv.push_back(std::move(program));
    }
  }
  PointToPointPlan self;
  if (sends) {
    BRAID_ASSIGN_OR_RETURN(self, pointToPointPlan(ops, 0));
    if (self.scratchBytes != 0) return false;
  }
  size_t next = 0;
  for (const Call& op : ops) {
    if (op.kind != Call::Kind::kCollective) continue;
    const size_t bytes = op.count * datatypeSize(op.datatype);
    if (op.preMul.on) {
      BRAID_TRY(scaleInto(op, op.recv, op.send, bytes, stream));
    } else if (op.collective == algo::Collective::kAllToAllv) {
      for (const DeviceOp& d : allToAllv[next]) {
        auto addr = [&](const DeviceAddr& a) -> char* {
          const void* base = a.space == DeviceAddr::Space::kInput ? op.send : op.recv;
          return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) + a.offset);
        };
        const void* src = addr(d.src[0]);
        BRAID_TRY(enqueueData(d, addr(d.dst), &src, op, 1, stream));
      }
      ++next;
    } else if (bytes != 0 && op.recv != op.send) {  // on one rank every in-place layout is this
      BRAID_TRY(cuda::copyAsync(op.recv, op.send, bytes, stream));
    }
  }
  BRAID_TRY(enqueueCopies(self.before, stream));
  return true;
}

// The device kinds of runtime/call_executor.h, over the paths above.
class DeviceWindowsExecutor final : public CallExecutor {
 public:
  Executor kind() const override { return Executor::kDeviceWindows; }
  // The caller holds comm->opMu, and the windows are made.
  Status run(const Call*, size_t, const CallContext& ctx) override {
    return ctx.comm->deviceWindows->run(*ctx.calls, ctx.stream, ctx.captured);
  }
};

// Collectives the device windows run as lowered schedules of ctx.algorithm (or of the
// loaded algorithm ctx.user); the caller
// (DeviceWindows::run) holds comm->opMu.
class LoweredExecutor final : public CallExecutor {
 public:
  Executor kind() const override { return Executor::kDeviceLowered; }
  Status run(const Call* calls, size_t n, const CallContext& ctx) override {
    for (size_t i = 0; i < n; ++i) {
      BRAID_TRY(
          ctx.comm->deviceWindows->runSchedule(calls[i], ctx.algorithm, ctx.stream, ctx.user));
    }
    return Status::ok();
  }
};

class StagedExecutor final : public CallExecutor {
 public:
  Executor kind() const override { return Executor::kDeviceStaged; }
  Status run(const Call*, size_t, const CallContext& ctx) override {
    return runStaged(ctx.comm, std::move(*ctx.calls), ctx.stream);
  }
};

// No windows on one rank: what its copies cannot run is staged.
class AloneExecutor final : public CallExecutor {
 public:
  Executor kind() const override { return Executor::kDeviceAlone; }
  Status run(const Call*, size_t, const CallContext& ctx) override {
    braidComm* comm = ctx.comm;
    bool ran = false;
    {
      std::lock_guard<std::mutex> lock(comm->opMu);
      BRAID_ASSIGN_OR_RETURN(ran, runAlone(comm, *ctx.calls, ctx.stream));
    }
    if (!ran && ctx.captured) return captureRefusal("one rank's call would be staged");
    if (!ran) BRAID_TRY(runStaged(comm, *ctx.calls, ctx.stream));
    return ran && ctx.stream == nullptr ? cuda::streamSynchronize(nullptr) : Status::ok();
  }
};

// `calls` on the communicator's executor of `kind`.
Status runOn(braidComm* comm, Executor kind, std::vector<Call>* calls, braidStream_t stream,
             bool captured) {
  CallContext ctx;
  ctx.comm = comm;
  ctx.stream = stream;
  ctx.captured = captured;
  ctx.calls = calls;
  CallExecutor& executor = executorFor(comm, kind);
  NvtxRange range(calls->front());
  if (comm->comm->trace() == nullptr) return executor.run(calls->data(), calls->size(), ctx);
  std::vector<TraceEvent> events = deviceEvents(comm, *calls, executor.name());
  Status st = executor.run(calls->data(), calls->size(), ctx);
  traceDeviceCalls(comm, &events);
  return st;
}

}  // namespace

void addDeviceExecutors(CallExecutors* table) {
  (*table)[static_cast<size_t>(Executor::kDeviceWindows)] =
      std::make_unique<DeviceWindowsExecutor>();
  (*table)[static_cast<size_t>(Executor::kDeviceStaged)] = std::make_unique<StagedExecutor>();
  (*table)[static_cast<size_t>(Executor::kDeviceLowered)] = std::make_unique<LoweredExecutor>();
  (*table)[static_cast<size_t>(Executor::kDeviceAlone)] = std::make_unique<AloneExecutor>();
}

Status checkCudaStream(braidStream_t stream) {
  if (!cuda::compiled()) {
    return invalidArgument("stream is neither NULL nor a stream from braidStreamCreate");
  }
  Status st = cuda::checkStream(stream);
  if (st.isOk()) return st;
  return invalidArgument(
      "stream is neither NULL, a stream from braidStreamCreate, nor a CUDA stream (" +
      st.message() + ")");
}

bool usesCuda(const std::vector<Call>& ops, braidStream_t stream) {
  if (!cuda::compiled()) return false;
  if (stream != nullptr && !isValidStream(stream)) return true;  // checked as a CUDA stream
  if (!cuda::hasDevice()) return false;
  for (const Call& op : ops) {
    if (cuda::isDeviceMemory(op.send) || cuda::isDeviceMemory(op.recv)) {
      return true;
    }
  }
  return false;
}

// Calls the device windows run (set up at the first device collective) are enqueued on
// the stream and return at once: every collective of 2 to 8 ranks (all-to-all-v and
// BRAID_ALGO's choices as lowered schedules), and every send and receive once they exist
// (on 2 ranks a send or receive to the peer makes them too). Whatever else a group holds
// is staged after them. Without windows, everything is staged (enqueued too: the proxy
// runs the host collective when the stream gets there); on one rank, device buffers are
// copies on the stream (runAlone). A premul-sum's input is scaled as the windows copy it
// in; staged, by the host collective; on one rank, into the output. `captured`: the
// stream is capturing a CUDA graph; what a replay cannot run (captureRefusal) is refused.
Status runPaths(braidComm* comm, std::vector<Call> ops, braidStream_t stream, bool captured) {
  const int nranks = comm->comm->nranks();
  if (captured) {
    for (const Call& op : ops) {
      for (const StagedRegion& r : regionsOf(op, comm->comm->rank(), nranks)) {
        if (r.bytes != 0 && !cuda::isDeviceMemory(r.ptr)) {
          return captureRefusal(
              "its buffers must be device memory (a host buffer is staged "
              "through the host, which a replay cannot do)");
        }
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(comm->opMu);
    if (comm->deviceOrder == nullptr) {
      // Before this communicator enqueues anything: a kernel loaded at its first launch
      // could wait for a stream that waits for this rank (kernels.h).
      BRAID_TRY(cuda::loadKernels());
      BRAID_ASSIGN_OR_RETURN(comm->deviceOrder, DeviceOrder::create());
      Expected<int> device = cuda::currentDevice();
      comm->cudaDevice = device.isOk() ? device.value() : -1;
    }
  }
  const Placement placement = nranks == 1 ? Placement::kOneRank : Placement::kRanks;
  const Capture capture = captured ? Capture::kCapturing : Capture::kNone;
  const Executor alone = dispatch({Memory::kDevice, placement, Windows::kDoNot, capture});
  if (alone == Executor::kDeviceAlone) return runOn(comm, alone, &ops, stream, captured);
  std::vector<Call> direct, rest;
  bool collective = false, paired = false, refused = false;
  for (const Call& op : ops) {
    const bool isCollective = op.kind == Call::Kind::kCollective;
    const bool supported = !isCollective || DeviceWindows::supports(op, nranks);
    const Executor e = dispatch(
        {Memory::kDevice, placement, supported ? Windows::kRunIt : Windows::kDoNot, capture});
    const bool here = e == Executor::kDeviceWindows;
    (here ? direct : rest).push_back(op);
    refused = refused || e == Executor::kRefused;
    collective = collective || (isCollective && here);
    paired = paired || (!isCollective && op.peer != comm->comm->rank());
  }
  if (refused) {
    return captureRefusal("the device windows do not run this collective (it would be staged)");
  }
  bool ran = false;
  if (!direct.empty()) {
    // Making the windows is collective: only a call every rank makes may do it. A
    // collective is; so is a send or receive to the other rank of a 2-rank communicator,
    // which makes the matching call (torch's send/recv communicators over the NCCL
    // drop-in are such pairs, and may never run a collective). Its host collectives come
    // after the staged calls' on every rank.
    const bool makes = !comm->deviceWindowsTried && (collective || (nranks == 2 && paired));
    if (makes) waitForStagedCalls(comm);
    std::lock_guard<std::mutex> lock(comm->opMu);
    if (makes) {
      comm->deviceWindowsTried = true;
      comm->deviceWindows = DeviceWindows::create(comm, !collective);
      comm->deviceWindowsLive = comm->deviceWindows.get();
    }
    if (captured && comm->deviceWindows != nullptr && comm->deviceWindows->oneContext()) {
      return captureRefusal(
          "ranks of it are threads of one process on one GPU, whose streams share CUDA's "
          "hardware queues, so one rank's replay could wait in front of the work its peers' "
          "replays need, for good (runtime/device/device_windows.h); ranks as processes can "
          "capture");
    }
    if (comm->deviceWindows != nullptr) {
      BRAID_TRY(runOn(comm, Executor::kDeviceWindows, &direct, stream, captured));
      ran = true;
    }
  }
  if (captured) {
    return ran ? Status::ok()
               : captureRefusal(
                     "it needs the device windows, which are off for this "
                     "communicator (BRAID_DEBUG=INFO says why)");
  }
  // Staged premul-sums are scaled by the host collective, on the staged input: no device
  // allocation or kernel at issue. On an H200, scaling on the device first (a
  // stream-ordered allocation, the scale kernel) made the call wait at issue until a
  // stream the caller held was let go.
  if (!ran) return runOn(comm, Executor::kDeviceStaged, &ops, stream, false);
  if (!rest.empty()) BRAID_TRY(runOn(comm, Executor::kDeviceStaged, &rest, stream, false));
  // NULL: CUDA's legacy default stream, and braid.h promises the call has completed.
  return stream == nullptr ? cuda::streamSynchronize(nullptr) : Status::ok();
}

// Whether `stream` is capturing a CUDA graph. The legacy NULL stream cannot be used while
// another stream captures (CUDA would invalidate that capture): refused.
Expected<bool> capturing(braidStream_t stream) {
  BRAID_ASSIGN_OR_RETURN(bool capturing, cuda::streamCapturing(stream));
  if (capturing && stream == nullptr) {
    return invalidUsage(
        "the legacy NULL stream cannot be used while another stream captures a "
        "CUDA graph; make the call on a stream of its own");
  }
  return capturing;
}

Status runDirectOrStaged(braidComm* comm, std::vector<Call> ops, braidStream_t stream) {
  if (isHostStream(stream)) return runOn(comm, Executor::kDeviceStaged, &ops, stream, false);
  BRAID_ASSIGN_OR_RETURN(bool captured, capturing(stream));
  return runPaths(comm, std::move(ops), stream, captured);
}

braidResult_t issueCudaOps(braidComm* comm, std::vector<Call> ops, braidStream_t stream) {
  return finish(comm, runDirectOrStaged(comm, std::move(ops), stream));
}

Expected<DeviceChoice> chooseOnWindows(braidComm* comm, const DeviceShape& shape, const Call& op) {
  const uint64_t bytes = op.count * datatypeSize(op.datatype);
  // What a loaded algorithm must serve; nothing to work out where none is loaded.
  CallFit fit;
  const bool loaded = !comm->deviceSelector.userAlgorithms().empty();
  if (loaded) fit = callFitOf(op, collArgsOf(op, comm->comm->rank(), shape.nranks));
  BRAID_ASSIGN_OR_RETURN(DeviceChoice choice,
                         chooseDeviceCall(op.collective, bytes, shape, comm->deviceSelector,
                                          comm->deviceFigures, loaded ? &fit : nullptr));
  uint8_t& logged = comm->loggedDeviceChoice[static_cast<size_t>(op.collective)];
  const auto key =
      choice.user != nullptr
          ? static_cast<uint8_t>(100 + std::hash<std::string>()(choice.user->name) % 100)
          : static_cast<uint8_t>(1 + 2 * static_cast<int>(choice.algorithm) +
                                 static_cast<int>(choice.executor));
  if (logLevel() >= LogLevel::kInfo && logged != key) {
    logged = key;
    const std::string ranking = explainDeviceCall(op.collective, bytes, shape, comm->deviceSelector,
                                                  comm->deviceFigures, loaded ? &fit : nullptr);
    BRAID_INFO("%s of %llu bytes on device memory: %s%s%s", algo::collectiveName(op.collective),
               static_cast<unsigned long long>(bytes), describeDeviceChoice(choice).c_str(),
               ranking.empty() ? "" : "; ranking: ", ranking.c_str());
  }
  return choice;
}

Expected<bool> deviceCallChoice(braidComm* comm, algo::Collective c, uint64_t rankBytes,
                                DeviceChoice* out) {
  const DeviceWindows* w = comm->deviceWindowsLive.load();
  if (w == nullptr) return false;
  BRAID_ASSIGN_OR_RETURN(
      *out, chooseDeviceCall(c, rankBytes, w->shape(), comm->deviceSelector, comm->deviceFigures));
  return true;
}

void pollDeviceErrors(braidComm* comm) {
  if (DeviceWindows* w = comm->deviceWindowsLive.load()) (void)w->released();
}

Status flushDeviceCalls(braidComm* comm) {
  if (comm->deviceWindows == nullptr) return Status::ok();
  std::lock_guard<std::mutex> lock(comm->opMu);
  const CommDeviceScope onItsDevice(comm->cudaDevice);
  return comm->deviceWindows->flush();
}

void deleteOnItsDevice(braidComm* comm) {
  const CommDeviceScope onItsDevice(comm->cudaDevice);
  delete comm;
}

}  // namespace braid
