#include "exec/host/fifo_executor.h"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/clock.h"
#include "core/logging.h"
#include "exec/copy.h"
#include "exec/reduce.h"
#include "exec/stream_copy.h"

namespace braid {
namespace {

using algo::BufRef;
using algo::OpKind;
using algo::Step;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

constexpr int kBlockSliceUs = 10000;  // a sleep re-checks abort and the deadline this often
constexpr size_t kMaxPollFds = 256;

}  // namespace

std::string OpDesc::describe() const { return describeLabel(label()); }

OpLabel OpDesc::label() const {
  return OpLabel{collective,          algorithm, seq, bytes, static_cast<int>(datatype),
                 static_cast<int>(op)};
}

std::string OpDesc::describeLabel(const OpLabel& l) {
  return std::string(l.collective) + " #" + std::to_string(l.seq) + " (" + std::to_string(l.bytes) +
         " B " + datatypeName(static_cast<braidDataType_t>(l.datatype)) + " " +
         redOpName(static_cast<braidRedOp_t>(l.op)) + ", " + l.algorithm + ")";
}

HostExecutor::HostExecutor(Comm& comm) : comm_(comm) {
  spinUs_ = comm.config().spinUs;
  yieldUs_ = comm.config().yieldUs;
  // More ranks than cores on this node: the rank we wait for may need our
  // core, so hand it over at once instead of spinning (unless told otherwise).
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (std::getenv("BRAID_SPIN_US") == nullptr && cores > 0 && comm.machineRanks() > cores) {
    spinUs_ = 0;
  }
  spinBudgetUs_ = spinUs_;
  singleCopyMin_ = comm.config().singleCopyMinBytes;
}

char* HostExecutor::address(BufRef ref, uint64_t offset) const {
  char* base = nullptr;
  switch (ref) {
    case BufRef::kInput:
      base = const_cast<char*>(static_cast<const char*>(buffers_.input));
      break;
    case BufRef::kOutput:
      base = static_cast<char*>(buffers_.output);
      break;
    case BufRef::kScratch:
      base = const_cast<char*>(scratch_.data());
      break;
    case BufRef::kWindowIn:
    case BufRef::kWindowOut:
    case BufRef::kNone:
      return nullptr;
  }
  // Point-to-point steps address memory absolutely (no base, the address as
  // the offset); arithmetic on a null pointer is undefined, so add integers.
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) + offset * elemSize_);
}

Status HostExecutor::endpointError(int peer, const Status& st, const OpDesc& desc) {
  // A broken connection means the peer is gone: name it, and tell the others.
  Status reported = st.code() == braidRemoteError ? comm_.peerFailed(peer, st) : st;
  return reported.withContext(desc.describe() + ": ");
}

Status HostExecutor::stalled(const OpDesc& desc, const char* why) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  std::string waiting = "nothing";
  size_t step = 0;
  if (!waits_.empty()) {
    const WaitTarget& w = waits_.front();
    waiting = std::string(w.recv ? "data from " : "room to send to ") + comm_.describePeer(w.peer) +
              " over " + comm_.transportName(w.peer);
    step = w.stepIndex;
  }
  // Ask the rank we wait for where it is (through rank 0's control links).
  std::string lag = waits_.empty()
                        ? std::string()
                        : comm_.describeLag(waits_.front().peer, desc.seq, desc.describe());
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  return timeoutError(desc.describe() + ": " + why + " at step " + std::to_string(step + 1) +
                      " of " + std::to_string(schedule_->steps.size()) + ", waiting for " +
                      waiting + (lag.empty() ? "" : "; " + lag) +
                      " (BRAID_TIMEOUT_MS=" + std::to_string(comm_.config().timeoutMs) + ")");
}

void HostExecutor::blockOnce() {
  if (waits_.empty()) return;
  const int sliceUs = waits_.size() > 1 ? 1000 : kBlockSliceUs;
  if (anyPollable_) {
    // Sockets: one poll over the endpoints we wait on and those with queued
    // sends, so sends to one peer keep moving while we wait on another.
    pollfd pfds[kMaxPollFds];
    size_t n = 0;
    bool memoryWait = false;
    for (size_t i = 0; i < active_.size() && n < kMaxPollFds; ++i) {
      Endpoint* ep = active_[i];
      short ev = ep->sendPending() ? POLLOUT : 0;
      for (const WaitTarget& w : waits_) {
        if (w.ep == ep && w.recv) ev |= POLLIN;
      }
      if (ep->pollFd() >= 0 && ev != 0) pfds[n++] = {ep->pollFd(), ev, 0};
    }
    for (const WaitTarget& w : waits_) memoryWait = memoryWait || w.ep->pollFd() < 0;
    if (n > 0) {
      poll(pfds, n, memoryWait ? 1 : sliceUs / 1000);
      return;
    }
  }
  const WaitTarget& w = waits_.front();
  w.ep->wait(w.recv, !w.recv, sliceUs);
}

// A wait that outlasted the spin budget means the rank we wait for was not
// running (the machine is busy): spinning only delayed it. Such waits cut the
// budget to a quarter, but not below kMinSpinUs while every rank has a core
// of its own: a hand-off between running ranks takes well under a
// microsecond, and a yield costs one or two, so a budget of 0 would make every
// later hand-off slow (and, once there, no wait would be short enough to grow
// it back). Waits that end inside the budget double it, up to BRAID_SPIN_US.
// Ranks that share cores start at 0 (see the constructor) and stay there.
void HostExecutor::adaptSpin(uint64_t waitedUs) {
  constexpr int kMinSpinUs = 20;
  if (waitedUs > static_cast<uint64_t>(spinBudgetUs_)) {
    spinBudgetUs_ = std::max(std::min(spinUs_, kMinSpinUs), spinBudgetUs_ / 4);
  } else if (spinBudgetUs_ < spinUs_) {
    spinBudgetUs_ = std::min(spinUs_, 2 * spinBudgetUs_ + 1);
  }
}

Status HostExecutor::pause(const OpDesc& desc) {
  if (comm_.failed()) {
    // One more pass first: what a peer sent before it left is still readable,
    // and a malformed message explains more than its sender's exit.
    if (!lookedAfterFailure_) {
      lookedAfterFailure_ = true;
      return Status::ok();
    }
    return stalled(desc, "failed");
  }
  ++stallPolls_;
  if (spinBudgetUs_ > 0 && (stallPolls_ & 63) != 0) {  // read the clock every 64 polls
    cpuRelax();
    return Status::ok();
  }
  uint64_t now = nowNs();
  if (stallStartNs_ == 0) stallStartNs_ = now;
  uint64_t waitedUs = (now - stallStartNs_) / 1000;
  if (waitedUs < static_cast<uint64_t>(spinBudgetUs_)) {
    cpuRelax();
  } else if (waitedUs < static_cast<uint64_t>(spinBudgetUs_ + yieldUs_)) {
    sched_yield();
  } else {
    if (now >= deadline().endNs()) return stalled(desc, "timed out");
    blockOnce();
  }
  return Status::ok();
}

void HostExecutor::copyStep(const Step& step, const OpDesc& desc) {
  const ReduceKernels& k = reduceKernels(desc.datatype, desc.op);
  char* src = address(step.src, step.srcOffset);
  char* dst = address(step.dst, step.dstOffset);
  const int divisor = step.final ? comm_.nranks() : 1;
  if (step.op == OpKind::kReduceLocal) {
    if (step.final) {
      k.reduceFinal(dst, nullptr, dst, src, step.count, divisor);
    } else {
      k.reduce(dst, dst, src, step.count);
    }
    return;
  }
  if (step.final || src != dst) k.finalize(dst, src, step.count, divisor);
}

Status HostExecutor::sizeMismatch(const Step& step, size_t got, size_t expected,
                                  const OpDesc& desc) {
  if (comm_.failed()) return stalled(desc, "failed");
  return invalidUsage(desc.describe() + ": " + comm_.describePeer(step.recvPeer) + " sent " +
                      std::to_string(got) + " bytes where this rank expected " +
                      std::to_string(expected) +
                      ": did every rank call the same collective with the same count, "
                      "datatype and root?");
}

bool HostExecutor::unread(Posted* which) {
  while (!posted_.empty()) {
    if (!posted_.back().ep->sendsConsumed()) {
      *which = posted_.back();
      return true;
    }
    posted_.pop_back();
  }
  return false;
}

Status HostExecutor::awaitPostedReads(const OpDesc& desc) {
  Posted p{};
  if (!unread(&p)) return Status::ok();
  do {
    waits_.clear();
    waits_.push_back({p.ep, p.peer, false, p.stepIndex});
    BRAID_TRY(pause(desc));
  } while (unread(&p));
  stallStartNs_ = 0;
  stallPolls_ = 0;
  return Status::ok();
}

bool HostExecutor::writtenLater(uintptr_t lo, uintptr_t hi) const {
  const size_t first = batch_.empty() ? 0 : batch_.front().index;
  for (size_t i = first; i < schedule_->steps.size(); ++i) {
    const Step& t = schedule_->steps[i];
    if (t.count == 0 || t.dst == BufRef::kNone || t.op == OpKind::kSend) continue;
    const auto d = reinterpret_cast<uintptr_t>(address(t.dst, t.dstOffset));
    if (d < hi && lo < d + t.count * elemSize_) return true;
  }
  return false;
}

Expected<int> HostExecutor::postAt(StepRun& s, const OpDesc& desc) {
  const Step& step = *s.step;
  const uint64_t left = (step.count - s.done) * elemSize_;
  const size_t bytes = std::min<uint64_t>(left, kPostMaxBytes);
  // A send the FIFO holds whole would complete before the peer receives it (OpDesc).
  const CommConfig& cfg = comm_.config();
  if (desc.pointToPoint && s.done == 0 && left <= cfg.sliceBytes * cfg.slots) return 0;
  const char* src = address(step.src, step.srcOffset + s.done);
  if (s.postable < 0) {
    // A range the schedule writes later is sent through the slots: posted, the write
    // would wait for the receiver, which may itself wait for this rank (an in-place
    // exchange), where the slots let both go on.
    const auto lo = reinterpret_cast<uintptr_t>(address(step.src, step.srcOffset));
    s.postable = writtenLater(lo, lo + step.count * elemSize_) ? 0 : 1;
  }
  if (s.postable == 0) return 0;
  Status st = s.sendEp->sendPostAt(src, bytes);
  if (!st.isOk()) return endpointError(step.sendPeer, st, desc);
  if (posted_.empty() || posted_.back().ep != s.sendEp) {
    posted_.push_back({s.sendEp, step.sendPeer, s.index});
  }
  s.done += bytes / elemSize_;
  s.finished = s.done == step.count;
  return 1;
}

Status HostExecutor::takeFromPeer(StepRun& s, size_t slotBytes, char* dst, uint64_t* n,
                                  const void** in, const OpDesc& desc) {
  const Step& step = *s.step;
  const size_t left = slotBytes - s.peerTaken;
  if (left % elemSize_ != 0 || left > (step.count - s.done) * elemSize_) {
    return sizeMismatch(step, slotBytes, std::min<uint64_t>(kPostMaxBytes, step.count * elemSize_),
                        desc);
  }
  // A plain receive takes the whole range at once; the rest a slice at a time,
  // as their reduction or send slot does.
  if (step.op == OpKind::kRecv) {
    *n = left / elemSize_;
  } else {
    *n = std::min<uint64_t>(*n, left / elemSize_);
  }
  const bool direct = step.op == OpKind::kRecv || step.op == OpKind::kRecvCopySend;
  if (!direct && peerStage_.size() < *n * elemSize_) peerStage_.resize(*n * elemSize_);
  char* into = direct ? dst : peerStage_.data();
  Status st = s.recvEp->recvRead(into, s.peerTaken, *n * elemSize_);
  if (!st.isOk()) return endpointError(step.recvPeer, st, desc);
  *in = into;
  return Status::ok();
}

Expected<int> HostExecutor::advance(StepRun& s, const OpDesc& desc) {
  const Step& step = *s.step;
  uint64_t n = std::min<uint64_t>(comm_.config().sliceBytes / elemSize_, step.count - s.done);
  const void* in = nullptr;
  size_t inBytes = 0;
  void* out = nullptr;
  if (s.recvEp != nullptr) {
    in = s.recvEp->recvSlot(&inBytes);
    if (in == nullptr && s.recvEp->pollFd() >= 0) {
      Status st = s.recvEp->progress();
      if (!st.isOk()) return endpointError(step.recvPeer, st, desc);
    }
    if (in == nullptr) {
      waits_.push_back({s.recvEp, step.recvPeer, true, s.index});
      return 0;
    }
  }
  if (s.sendEp != nullptr) {
    out = s.sendEp->sendSlot();
    if (out == nullptr) {
      waits_.push_back({s.sendEp, step.sendPeer, false, s.index});
      return 0;
    }
    const uint64_t left = (step.count - s.done) * elemSize_;
    if (step.op == OpKind::kSend && std::min<uint64_t>(left, kPostMaxBytes) >= singleCopyMin_ &&
        s.sendEp->canPostAt()) {
      BRAID_ASSIGN_OR_RETURN(int posted, postAt(s, desc));
      if (posted > 0) return posted;
    }
  }
  const bool atPeer = s.recvEp != nullptr && s.recvEp->recvAtPeer();
  if (atPeer && step.op == OpKind::kRecv) {
    n = std::min<uint64_t>(inBytes - s.peerTaken, (step.count - s.done) * elemSize_) / elemSize_;
  }
  if (s.recvEp != nullptr && !atPeer && inBytes != n * elemSize_) {
    return sizeMismatch(step, inBytes, n * elemSize_, desc);
  }
  const char* src =
      step.src != BufRef::kNone ? address(step.src, step.srcOffset + s.done) : nullptr;
  char* dst = step.dst != BufRef::kNone ? address(step.dst, step.dstOffset + s.done) : nullptr;
  if (atPeer) BRAID_TRY(takeFromPeer(s, inBytes, dst, &n, &in, desc));
  const size_t bytes = n * elemSize_;
  // A slot a peer reads where it lies is filled with streaming stores from
  // kStreamMinBytes up (exec/stream_copy.h); results bound for it are made in
  // private memory first (dst, or L1-sized blocks of block_).
  const bool stream = out != nullptr && bytes >= kStreamMinBytes && s.sendEp->slotsShared();
  switch (step.op) {
    case OpKind::kSend:
      if (stream) {
        streamLines(out, src, bytes);
      } else {
        copyBytes(out, src, bytes);
      }
      break;
    case OpKind::kRecv:
      if (in == dst) break;
      if (step.count * elemSize_ >= kStreamOutMinBytes) {
        streamLines(dst, in, bytes);
      } else {
        copyBytes(dst, in, bytes);
      }
      break;
    case OpKind::kRecvReduce:
    case OpKind::kRecvReduceSend:
    case OpKind::kRecvReduceCopySend:
      reduceSlice(s, src, dst, in, out, n, stream, desc);
      break;
    case OpKind::kRecvCopySend:
      if (in != dst) copyBytes(dst, in, bytes);
      if (stream) {
        streamLines(out, in, bytes);
      } else {
        copyBytes(out, in, bytes);
      }
      break;
    default:
      break;  // local steps (copyStep); window steps never reach the FIFOs (run())
  }
  if (s.recvEp != nullptr) {
    s.peerTaken = atPeer ? s.peerTaken + bytes : 0;
    if (!atPeer || s.peerTaken == inBytes) {
      s.recvEp->recvRelease();
      s.peerTaken = 0;
    }
  }
  if (s.sendEp != nullptr) {
    Status st = s.sendEp->sendPost(bytes);
    if (!st.isOk()) return endpointError(step.sendPeer, st, desc);
  }
  s.done += n;
  s.finished = s.done == step.count;
  return 1;
}

void HostExecutor::reduceSlice(const StepRun& s, const char* src, char* dst, const void* in,
                               void* out, uint64_t n, bool stream, const OpDesc& desc) {
  const Step& step = *s.step;
  const ReduceKernels& k = reduceKernels(desc.datatype, desc.op);
  const int divisor = step.final ? comm_.nranks() : 1;
  const size_t bytes = n * elemSize_;
  switch (step.op) {
    case OpKind::kRecvReduce:
      if (step.final) {
        k.reduceFinal(dst, nullptr, src, in, n, divisor);
      } else {
        k.reduce(dst, src, in, n);
      }
      break;
    case OpKind::kRecvReduceSend:
      if (!stream) {
        k.reduce(out, src, in, n);
        break;
      }
      for (uint64_t b = 0; b < n; b += blockElems()) {
        const uint64_t m = std::min<uint64_t>(blockElems(), n - b);
        k.reduce(block_, src + b * elemSize_, static_cast<const char*>(in) + b * elemSize_, m);
        streamLines(static_cast<char*>(out) + b * elemSize_, block_, m * elemSize_);
      }
      break;
    case OpKind::kRecvReduceCopySend:
      if (stream) {
        k.reduceFinal(dst, nullptr, src, in, n, divisor);
        streamLines(out, dst, bytes);
      } else {
        k.reduceFinal(dst, out, src, in, n, divisor);
      }
      break;
    default:
      break;
  }
}

// A step may move only after earlier unfinished steps of its batch that use
// the same peer in the same direction, so each FIFO sees the schedule's order.
bool HostExecutor::eligible(size_t i) const {
  const Step& s = *batch_[i].step;
  for (size_t j = 0; j < i; ++j) {
    if (batch_[j].finished) continue;
    const Step& t = *batch_[j].step;
    if (s.sendPeer >= 0 && t.sendPeer == s.sendPeer) return false;
    if (s.recvPeer >= 0 && t.recvPeer == s.recvPeer) return false;
  }
  return true;
}

// Under BRAID_TRACE, a batch is one step of the trace: its steps move together, so apart
// they would overlap on the rank's timeline.
void HostExecutor::traceBatch(TraceSink& trace, size_t begin, size_t end, const OpDesc& desc,
                              uint64_t startNs, uint64_t waitedNs) const {
  TraceEvent e;
  e.kind = TraceEvent::Kind::kStep;
  e.name = end - begin == 1 ? algo::opKindName(schedule_->steps[begin].op) : "batch";
  e.seq = desc.seq;
  for (size_t i = begin; i < end; ++i) {
    const Step& st = schedule_->steps[i];
    e.bytes += st.count * elemSize_;
    if (e.sendPeer < 0) e.sendPeer = st.sendPeer;
    if (e.recvPeer < 0) e.recvPeer = st.recvPeer;
  }
  e.startNs = startNs;
  e.endNs = nowNs();
  e.waitNs = waitedNs;
  trace.record(e);
}

Status HostExecutor::runBatch(size_t begin, size_t end, const OpDesc& desc) {
  TraceSink* trace = comm_.trace();
  const uint64_t startNs = trace != nullptr ? nowNs() : 0;
  uint64_t waitedNs = 0;
  batch_.clear();
  for (size_t i = begin; i < end; ++i) {
    const Step& step = schedule_->steps[i];
    if (step.count == 0) continue;
    if (step.op == OpKind::kCopy || step.op == OpKind::kReduceLocal) {
      copyStep(step, desc);  // local steps do not wait: a schedule batches them alone
      continue;
    }
    StepRun s;
    s.step = &step;
    s.index = i;
    s.recvEp = step.recvPeer >= 0 ? comm_.endpoint(step.recvPeer) : nullptr;
    s.sendEp = step.sendPeer >= 0 ? comm_.endpoint(step.sendPeer) : nullptr;
    batch_.push_back(s);
  }
  size_t unfinished = batch_.size();
  while (unfinished > 0) {
    bool moved = false;
    waits_.clear();
    for (size_t i = 0; i < batch_.size(); ++i) {
      StepRun& s = batch_[i];
      if (s.finished || !eligible(i)) continue;
      BRAID_ASSIGN_OR_RETURN(int m, advance(s, desc));
      moved = moved || m > 0;
      if (s.finished) --unfinished;
    }
    if (moved) {
      if (stallStartNs_ != 0) adaptSpin((nowNs() - stallStartNs_) / 1000);
      stallStartNs_ = 0;
      stallPolls_ = 0;
      continue;
    }
    for (size_t i = 0; i < active_.size(); ++i) {  // keep queued socket sends moving
      if (!active_[i]->sendPending()) continue;
      Status st = active_[i]->progress();
      if (!st.isOk()) return endpointError(activePeers_[i], st, desc);
    }
    if (trace == nullptr) {
      BRAID_TRY(pause(desc));
      continue;
    }
    const uint64_t pausedNs = nowNs();
    BRAID_TRY(pause(desc));
    waitedNs += nowNs() - pausedNs;
  }
  if (trace != nullptr) traceBatch(*trace, begin, end, desc, startNs, waitedNs);
  return Status::ok();
}

Status HostExecutor::flushSends(const OpDesc& desc) {
  for (;;) {
    bool pending = false;
    waits_.clear();
    for (size_t i = 0; i < active_.size(); ++i) {
      if (!active_[i]->sendPending()) continue;
      Status st = active_[i]->progress();
      if (!st.isOk()) return endpointError(activePeers_[i], st, desc);
      if (active_[i]->sendPending()) {
        pending = true;
        waits_.push_back({active_[i], activePeers_[i], false, schedule_->steps.size() - 1});
      }
    }
    if (!pending) break;
    if (comm_.failed()) return stalled(desc, "failed");
    if (deadline().expired()) return stalled(desc, "timed out flushing sends");
    blockOnce();
  }
  // The caller may change its buffers once run() returns: every posted range must be read.
  return posted_.empty() ? Status::ok() : awaitPostedReads(desc);
}

const Deadline& HostExecutor::deadline() {
  if (!deadlineSet_) {
    deadline_ = comm_.deadline();
    deadlineSet_ = true;
  }
  return deadline_;
}

Status HostExecutor::run(const algo::Schedule& s, const ExecBuffers& b, const OpDesc& desc) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  if (s.windowed) return internalError(desc.describe() + ": a window schedule reached the FIFOs");
  schedule_ = &s;
  buffers_ = b;
  elemSize_ = datatypeSize(desc.datatype);
  deadlineSet_ = false;
  stallStartNs_ = 0;
  stallPolls_ = 0;
  lookedAfterFailure_ = false;
  posted_.clear();
  if (scratch_.size() < s.scratchElems * elemSize_) scratch_.resize(s.scratchElems * elemSize_);
  activePeers_.clear();
  for (const Step& st : s.steps) {
    if (st.count == 0) continue;
    if (st.sendPeer >= 0) activePeers_.push_back(st.sendPeer);
    if (st.recvPeer >= 0) activePeers_.push_back(st.recvPeer);
  }
  std::sort(activePeers_.begin(), activePeers_.end());
  activePeers_.erase(std::unique(activePeers_.begin(), activePeers_.end()), activePeers_.end());
  bool connected = true;
  for (int p : activePeers_) connected = connected && comm_.endpoint(p) != nullptr;
  Status st = connected ? Status::ok() : comm_.connectPeers(activePeers_, deadline());
  if (!st.isOk()) {
    if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
    return st.withContext(desc.describe() + ": ");
  }
  active_.clear();
  anyPollable_ = false;
  for (int p : activePeers_) {
    active_.push_back(comm_.endpoint(p));
    anyPollable_ = anyPollable_ || active_.back()->pollFd() >= 0;
  }
  for (size_t i = 0; i < s.steps.size();) {
    size_t end = i;
    while (end < s.steps.size() && s.steps[end].batchWithNext) ++end;
    end = std::min(end + 1, s.steps.size());
    BRAID_TRY(runBatch(i, end, desc));
    i = end;
  }
  return flushSends(desc);
}

}  // namespace braid
