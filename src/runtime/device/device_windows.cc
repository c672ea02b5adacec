#include "runtime/device/device_windows.h"

#include <algorithm>

#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/cuda/device_call.h"
#include "exec/cuda/device_program.h"
#include "exec/cuda/window_program.h"
#include "exec/reduce.h"
#include "runtime/device/device_order.h"
#include "runtime/device_calls.h"

namespace braid {
namespace {

using algo::Collective;

// Whether run() enqueues anything for `op`: a collective with elements (all-to-all-v's
// count is 0).
bool runs(const Call& op) {
  return op.kind == Call::Kind::kCollective &&
         (op.count != 0 || op.collective == Collective::kAllToAllv);
}

}  // namespace

bool DeviceWindows::supports(const Call& op, int nranks) {
  if (op.kind != Call::Kind::kCollective) return false;
  if (nranks < 2 || nranks > cuda::kMaxReduceInputs) return false;
  switch (op.collective) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter:
    case Collective::kReduce:
      return static_cast<int>(op.op) >= 0 && op.op < braidNumOps;
    case Collective::kAllGather:
    case Collective::kBroadcast:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kAllToAllv:  // a lowered schedule
      return true;
  }
  return false;
}

// Orders this call after the communicator's last device call (whatever stream that ran
// on, windows or staged).
Status DeviceWindows::order(void* stream) { return order_->after(stream); }

Status DeviceWindows::finishCall(void* stream) { return order_->mark(stream); }

Status DeviceWindows::run(const std::vector<Call>& ops, void* stream, bool captured) {
  if (released()) {
    Status err = comm_->asyncError();
    return err.isOk() ? Status(braidRemoteError, "device windows: barriers were released") : err;
  }
  // Checked before anything is enqueued: bad usage must not release the windows. Every
  // rank makes the same choices (BRAID_ALGO naming an algorithm that does not serve a
  // call fails them all alike, the windows intact).
  BRAID_ASSIGN_OR_RETURN(PointToPointPlan p2p, pointToPointPlan(ops, rank_));
  std::vector<DeviceChoice> choices;
  for (const Call& op : ops) {
    if (runs(op)) {
      BRAID_ASSIGN_OR_RETURN(DeviceChoice choice, chooseOnWindows(owner_, shape(), op));
      choices.push_back(choice);
    }
  }
  if (captured) {  // the watch looks at the flags from now on
    graphs_.store(true);
    watchCv_.notify_one();
  }
  captured_ = captured;
  // A captured call is ordered by no event (device_windows.h); it ends with the progress bump.
  Status st = captured ? Status::ok() : order(stream);
  size_t next = 0;
  for (const Call& op : ops) {
    if (!st.isOk()) break;
    if (runs(op)) st = runOne(op, choices[next++], stream);
  }
  if (st.isOk()) st = sendReceive(&p2p, stream);
  if (st.isOk()) {
    st = captured ? cuda::launchBump(device(progress(rank_)), stream) : finishCall(stream);
  }
  captured_ = false;
  // A call enqueued in part leaves the ranks' counts apart: release them now rather than
  // let the peers wait for the timeout. Not a capture that failed part way: nothing runs
  // unless its graph is launched, and a replay waiting for what a peer never signals is
  // the watch's to release.
  if (!st.isOk() && !captured) {
    release(st.withContext("device windows: enqueueing a call failed: "));
    // What was enqueued may wait behind a stream the application holds: frees wait for it.
    order_->holdReleasesFor(stream);
  }
  return st;
}

Status DeviceWindows::runOne(const Call& op, const DeviceChoice& choice, void* stream) {
  if (choice.executor == DeviceExecutor::kLowered) {  // the lowered-schedule executor
    CallContext ctx;
    ctx.comm = owner_;
    ctx.algorithm = choice.algorithm;
    ctx.user = choice.user;
    ctx.stream = static_cast<braidStream_t>(stream);
    ctx.captured = captured_;
    return executorFor(owner_, Executor::kDeviceLowered).run(&op, 1, ctx);
  }
  WindowCall call;
  call.collective = op.collective;
  call.count = op.count;
  call.elemSize = datatypeSize(op.datatype);
  call.root = op.root;
  call.twoShot = choice.algorithm == algo::Algorithm::kTwoShot;  // the cost model's choice
  ran_[static_cast<int>(DeviceExecutor::kWindows)][static_cast<int>(choice.algorithm)]++;
  call.recvIsDevice = cuda::isDeviceMemory(op.recv);
  call.sendIsDevice = cuda::isDeviceMemory(op.send);
  call.scaleInput = op.preMul.on;  // kScale: the executor reads op.preMul
  call.captured = captured_;
  WindowCounts counts{round_, epoch_.load(std::memory_order_relaxed)};
  BRAID_ASSIGN_OR_RETURN(
      const WindowProgram program,
      buildWindowCall(call, rank_, nranks_, halfBytes_, &counts, graphBytes_, &plans_));
  void* scratch = nullptr;
  if (program.scratchBytes != 0) {
    // At least 1 MiB (a barrier's one byte should not cost a half's worth), at most a half.
    BRAID_TRY(growScratch(std::min(halfBytes_, std::max(program.scratchBytes, size_t{1} << 20))));
    scratch = scratch_;
  }
  BRAID_TRY(enqueue(program.ops, op, op.send, op.recv, scratch, stream));
  if (captured_) return Status::ok();  // counts as they were (exec/cuda/window_program.h)
  const uint64_t before = epoch_.load(std::memory_order_relaxed);
  round_ = counts.rounds;
  epoch_.store(counts.barriers, std::memory_order_relaxed);
  if (before / 64 != counts.barriers / 64 || before == 0) watchCv_.notify_one();
  return Status::ok();
}

// The group's sends and receives: copies to this rank, the batch to the others, then the
// receives that landed in scratch (their buffers are send buffers of the group) copied to
// their places, all after the group's collectives on the stream. Scratch is the windows'
// (a collective's scratch before it on the stream is done with).
Status DeviceWindows::sendReceive(PointToPointPlan* plan, void* stream) {
  if (plan->scratchBytes != 0) {
    BRAID_TRY(growScratch(plan->scratchBytes));
    placeScratch(plan, scratch_);
  }
  BRAID_TRY(enqueueCopies(plan->before, stream));
  if (!plan->remote.empty()) BRAID_TRY(pointToPoint(plan->remote, stream));
  return enqueueCopies(plan->after, stream);
}

// The group's sends and receives (to other ranks) as one batch, buffers addressed
// absolutely (one-byte elements, as the host runs them), lowered to the send slots:
// rounds by each peer's lane, sends first, so a send waits only for a slot its receiver
// emptied two rounds earlier, however many messages go to one peer (exec/cuda/device_program.h).
Status DeviceWindows::pointToPoint(const std::vector<PointToPointPlan::Remote>& ops,
                                   void* stream) {
  algo::Schedule s;
  s.rank = rank_;
  s.nranks = nranks_;
  for (const PointToPointPlan::Remote& op : ops) s.steps.push_back(pointToPointStep(op));
  if (s.steps.empty()) return Status::ok();
  s.steps.back().batchWithNext = false;
  Call bytes;  // one-byte elements, addressed absolutely
  bytes.datatype = braidUint8;
  return runLowered(s, bytes, nullptr, nullptr, stream);
}

}  // namespace braid
