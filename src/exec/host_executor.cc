#include "exec/host_executor.h"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>

#include <algorithm>
#include <cstring>

#include "core/logging.h"
#include "exec/reduce.h"

namespace braid {
namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

char* at(const ExecBuffers& b, algo::BufRef ref, uint64_t offset, size_t elem) {
  char* base = nullptr;
  switch (ref) {
    case algo::BufRef::kInput: base = const_cast<char*>(static_cast<const char*>(b.input)); break;
    case algo::BufRef::kOutput: base = static_cast<char*>(b.output); break;
    case algo::BufRef::kScratch: base = static_cast<char*>(b.scratch); break;
    case algo::BufRef::kNone: return nullptr;
  }
  return base + offset * elem;
}

}  // namespace

std::string OpDesc::describe() const {
  return std::string(collective) + " #" + std::to_string(seq) + " (" + std::to_string(bytes) +
         " B " + datatypeName(datatype) + " " + redOpName(op) + ", " + algorithm + ")";
}

// The slots one slice waits for, and where the wait stands.
struct HostExecutor::SliceWait {
  Endpoint* recvEp = nullptr;
  Endpoint* sendEp = nullptr;
  int recvPeer = -1;
  int sendPeer = -1;
  const void* recvPtr = nullptr;
  size_t recvBytes = 0;
  void* sendPtr = nullptr;
  size_t stepIndex = 0;
};

HostExecutor::HostExecutor(Comm& comm) : comm_(comm) {
  spinUs_ = comm.config().spinUs;
  yieldUs_ = comm.config().yieldUs;
  // More ranks than cores on this node: the rank we wait for may need our
  // core, so hand it over at once instead of spinning (unless told otherwise).
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (std::getenv("BRAID_SPIN_US") == nullptr && cores > 0 && comm.localRanks() > cores) {
    spinUs_ = 0;
  }
}

Status HostExecutor::failure(const SliceWait& w, const OpDesc& desc, const char* why) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  std::string waiting;
  if (w.recvEp != nullptr && w.recvPtr == nullptr) {
    waiting = "data from " + comm_.describePeer(w.recvPeer) + " over " +
              comm_.transportName(w.recvPeer);
  } else if (w.sendEp != nullptr) {
    waiting = "room to send to " + comm_.describePeer(w.sendPeer) + " over " +
              comm_.transportName(w.sendPeer);
  }
  return timeoutError(desc.describe() + ": " + why + " at step " + std::to_string(w.stepIndex + 1) +
                      " of " + std::to_string(schedule_->steps.size()) + ", waiting for " +
                      waiting + "; that rank may be stuck, dead, or in a different call "
                      "(BRAID_TIMEOUT_MS=" + std::to_string(comm_.config().timeoutMs) + ")");
}

Status HostExecutor::endpointError(int peer, const Status& st, const OpDesc& desc) {
  // A broken connection means the peer is gone: name it, and tell the others.
  Status reported = st.code() == braidRemoteError ? comm_.peerFailed(peer, st) : st;
  return reported.withContext(desc.describe() + ": ");
}

Status HostExecutor::blockOnce(SliceWait& w) {
  constexpr int kSliceUs = 10000;  // re-check abort and the deadline this often
  bool wantRecv = w.recvEp != nullptr && w.recvPtr == nullptr;
  bool wantSend = w.sendEp != nullptr && w.sendPtr == nullptr;
  if (anyPollable_) {
    // Sockets: one poll over every endpoint of the schedule, so sends still
    // queued for one peer move while we wait on another.
    pollfd pfds[64];
    size_t n = 0;
    for (Endpoint* ep : active_) {
      int fd = ep->pollFd();
      if (fd < 0 || n == 64) continue;
      short ev = 0;
      if (ep == w.recvEp && wantRecv) ev |= POLLIN;
      if (ep->sendPending()) ev |= POLLOUT;
      if (ev != 0) pfds[n++] = {fd, ev, 0};
    }
    bool memoryWait = (wantRecv && w.recvEp->pollFd() < 0) || (wantSend && w.sendEp->pollFd() < 0);
    int timeoutMs = memoryWait ? 1 : kSliceUs / 1000;
    if (n > 0) {
      poll(pfds, n, timeoutMs);
    } else if (memoryWait) {
      (wantRecv ? w.recvEp : w.sendEp)->wait(wantRecv, !wantRecv && wantSend, kSliceUs);
    }
    return Status::ok();
  }
  Endpoint* ep = wantRecv ? w.recvEp : w.sendEp;
  if (ep != nullptr) ep->wait(wantRecv, !wantRecv && wantSend, kSliceUs);
  return Status::ok();
}

Status HostExecutor::waitSlots(SliceWait& w, const OpDesc& desc) {
  uint64_t start = 0;
  for (uint32_t iter = 0;; ++iter) {
    if (w.recvEp != nullptr && w.recvPtr == nullptr) w.recvPtr = w.recvEp->recvSlot(&w.recvBytes);
    if (w.sendEp != nullptr && w.sendPtr == nullptr) w.sendPtr = w.sendEp->sendSlot();
    bool ready = (w.recvEp == nullptr || w.recvPtr != nullptr) &&
                 (w.sendEp == nullptr || w.sendPtr != nullptr);
    if (ready) return Status::ok();
    if (comm_.failed()) return failure(w, desc, "failed");
    for (size_t i = 0; i < active_.size(); ++i) {
      if (active_[i]->sendPending()) {
        Status st = active_[i]->progress();
        if (!st.isOk()) return endpointError(activePeers_[i], st, desc);
      }
    }
    if (w.recvEp != nullptr && w.recvPtr == nullptr && w.recvEp->pollFd() >= 0) {
      Status st = w.recvEp->progress();
      if (!st.isOk()) return endpointError(w.recvPeer, st, desc);
    }
    if (spinUs_ > 0 && (iter & 63) != 0) {  // read the clock every 64 polls
      cpuRelax();
      continue;
    }
    uint64_t now = nowNs();
    if (start == 0) start = now;
    uint64_t waitedUs = (now - start) / 1000;
    if (waitedUs < static_cast<uint64_t>(spinUs_)) {
      cpuRelax();
    } else if (waitedUs < static_cast<uint64_t>(spinUs_ + yieldUs_)) {
      sched_yield();
    } else {
      if (now >= deadline_.endNs()) return failure(w, desc, "timed out");
      BRAID_TRY(blockOnce(w));
    }
  }
}

Status HostExecutor::runStep(const algo::Step& step, size_t stepIndex, const ExecBuffers& b,
                             const OpDesc& desc) {
  using algo::OpKind;
  const size_t es = datatypeSize(desc.datatype);
  const ReduceKernels& k = reduceKernels(desc.datatype, desc.op);
  const int divisor = step.final ? comm_.nranks() : 1;
  char* src = at(b, step.src, step.srcOffset, es);
  char* dst = at(b, step.dst, step.dstOffset, es);
  if (step.op == OpKind::kCopy) {
    if (step.final || src != dst) k.finalize(dst, src, step.count, divisor);
    return Status::ok();
  }
  const size_t sliceElems = comm_.config().sliceBytes / es;
  SliceWait w;
  w.stepIndex = stepIndex;
  w.recvPeer = step.recvPeer;
  w.sendPeer = step.sendPeer;
  w.recvEp = step.recvPeer >= 0 ? comm_.endpoint(step.recvPeer) : nullptr;
  w.sendEp = step.sendPeer >= 0 ? comm_.endpoint(step.sendPeer) : nullptr;
  for (uint64_t off = 0; off < step.count; off += sliceElems) {
    const size_t n = std::min<uint64_t>(sliceElems, step.count - off);
    const size_t bytes = n * es;
    w.recvPtr = nullptr;
    w.sendPtr = nullptr;
    BRAID_TRY(waitSlots(w, desc));
    if (w.recvEp != nullptr && w.recvBytes != bytes) {
      if (comm_.failed()) return failure(w, desc, "failed");
      return invalidUsage(desc.describe() + ": " + comm_.describePeer(step.recvPeer) + " sent " +
                          std::to_string(w.recvBytes) + " bytes where this rank expected " +
                          std::to_string(bytes) +
                          ": did every rank call the same collective with the same count "
                          "and datatype?");
    }
    const char* s = src ? src + off * es : nullptr;
    char* d = dst ? dst + off * es : nullptr;
    const void* in = w.recvPtr;
    void* out = w.sendPtr;
    switch (step.op) {
      case OpKind::kSend: std::memcpy(out, s, bytes); break;
      case OpKind::kRecv: std::memcpy(d, in, bytes); break;
      case OpKind::kRecvReduce:
        if (step.final) {
          k.reduceFinal(d, nullptr, s, in, n, divisor);
        } else {
          k.reduce(d, s, in, n);
        }
        break;
      case OpKind::kRecvReduceSend: k.reduce(out, s, in, n); break;
      case OpKind::kRecvReduceCopySend: k.reduceFinal(d, out, s, in, n, divisor); break;
      case OpKind::kRecvCopySend:
        std::memcpy(d, in, bytes);
        std::memcpy(out, in, bytes);
        break;
      case OpKind::kCopy: break;
    }
    if (w.recvEp != nullptr) w.recvEp->recvRelease();
    if (w.sendEp != nullptr) {
      Status st = w.sendEp->sendPost(bytes);
      if (!st.isOk()) return endpointError(w.sendPeer, st, desc);
    }
  }
  return Status::ok();
}

Status HostExecutor::flushSends(const OpDesc& desc) {
  SliceWait w;
  w.stepIndex = schedule_->steps.empty() ? 0 : schedule_->steps.size() - 1;
  for (;;) {
    bool pending = false;
    for (size_t i = 0; i < active_.size(); ++i) {
      if (!active_[i]->sendPending()) continue;
      Status st = active_[i]->progress();
      if (!st.isOk()) return endpointError(activePeers_[i], st, desc);
      pending = pending || active_[i]->sendPending();
    }
    if (!pending) return Status::ok();
    if (comm_.failed()) return failure(w, desc, "failed");
    if (deadline_.expired()) return failure(w, desc, "timed out flushing sends");
    BRAID_TRY(blockOnce(w));
  }
}

Status HostExecutor::run(const algo::Schedule& s, const ExecBuffers& b, const OpDesc& desc) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  schedule_ = &s;
  deadline_ = comm_.deadline();
  std::vector<int> peers;
  for (const algo::Step& st : s.steps) {
    if (st.count == 0) continue;
    if (st.sendPeer >= 0) peers.push_back(st.sendPeer);
    if (st.recvPeer >= 0) peers.push_back(st.recvPeer);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  Status st = comm_.connectPeers(peers, deadline_);
  if (!st.isOk()) {
    if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
    return st.withContext(desc.describe() + ": ");
  }
  active_.clear();
  activePeers_ = peers;
  anyPollable_ = false;
  for (int p : peers) {
    active_.push_back(comm_.endpoint(p));
    anyPollable_ = anyPollable_ || active_.back()->pollFd() >= 0;
  }
  for (size_t i = 0; i < s.steps.size(); ++i) {
    if (s.steps[i].count == 0) continue;
    BRAID_TRY(runStep(s.steps[i], i, b, desc));
  }
  return flushSends(desc);
}

}  // namespace braid
