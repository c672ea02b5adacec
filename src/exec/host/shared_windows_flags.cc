// NodeWindows' flags and descriptors (exec/host/shared_windows.h): publishing, waiting
// for peers, lent buffers. The interpreter that uses them is shared_windows.cc.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/futex.h"
#include "core/shared_alloc.h"
#include "exec/host/shared_windows.h"
#include "exec/host/shared_windows_layout.h"

namespace braid {
namespace {

constexpr int kBlockSliceUs = 10000;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

const char* flagText(algo::WinFlag flag) {
  return flag == algo::WinFlag::kReady  ? "data"
         : flag == algo::WinFlag::kDone ? "reduced piece"
                                        : "end of reading";
}

}  // namespace



void NodeWindows::publish(Flag flag, uint64_t epoch) {
  Header* h = header(comm_.rank());
  // A full fence: copies may have used non-temporal stores, which a release
  // store alone does not order.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  flagOf(comm_.rank(), flag).store(epoch, std::memory_order_release);
  wakeSleepers(h);
}

void NodeWindows::wakeSleepers(Header* h) {
  // Orders the caller's stores before the sleeper count is read; a peer about to
  // sleep raises the count before it checks the flag again (NodeWindows::waitOn).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h->sleepers.load(std::memory_order_relaxed) != 0) {
    h->wakeSeq.fetch_add(1, std::memory_order_release);
    futexWakeAll(&h->wakeSeq);
  }
}

uint64_t NodeWindows::slowestReady() const {
  uint64_t slowest = UINT64_MAX;
  for (int q = 0; q < comm_.nranks(); ++q) {
    if (q != comm_.rank()) {
      slowest = std::min(slowest, header(q)->ready.load(std::memory_order_acquire));
    }
  }
  return slowest;
}

Status NodeWindows::stalled(int peer, Flag flag, uint64_t epoch, const OpDesc& desc,
                            const char* why) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  std::string lag = comm_.describeLag(peer, desc.seq, desc.describe());
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  return timeoutError(desc.describe() + ": " + why + " waiting for " + comm_.describePeer(peer) +
                      " to publish its " + flagText(flag) + " (round " + std::to_string(epoch) +
                      ") in its shared window" + (lag.empty() ? "" : "; " + lag) +
                      " (BRAID_TIMEOUT_MS=" + std::to_string(comm_.config().timeoutMs) + ")");
}

Status NodeWindows::waitFor(int peer, Flag which, uint64_t epoch, const OpDesc& desc) {
  return waitOn(peer, flagOf(peer, which), which, epoch, desc);
}

Status NodeWindows::waitOn(int peer, std::atomic<uint64_t>& flag, Flag which, uint64_t epoch,
                           const OpDesc& desc) {
  if (flag.load(std::memory_order_acquire) >= epoch) return Status::ok();
  Header* h = header(peer);
  const uint64_t spinUs = static_cast<uint64_t>(fifo_.spinBudgetUs());
  const uint64_t yieldUs = static_cast<uint64_t>(fifo_.yieldUs());
  uint64_t start = 0;  // the clock is read only once the wait is not short
  uint32_t polls = 0;
  for (;;) {
    if (flag.load(std::memory_order_acquire) >= epoch) {
      if (start != 0) fifo_.adaptSpin((nowNs() - start) / 1000);
      return Status::ok();
    }
    if (spinUs > 0 && (++polls & 63) != 0) {
      cpuRelax();
      continue;
    }
    if (comm_.failed()) return stalled(peer, which, epoch, desc, "failed");
    const uint64_t now = nowNs();
    if (start == 0) start = now;
    const uint64_t waitedUs = (now - start) / 1000;
    if (waitedUs < spinUs) {
      cpuRelax();
    } else if (waitedUs < spinUs + yieldUs) {
      sched_yield();
    } else {
      if (!deadlineSet_) {  // the deadline starts with the first wait that sleeps
        deadline_ = comm_.deadline();
        deadlineSet_ = true;
      }
      if (deadline_.expired()) return stalled(peer, which, epoch, desc, "timed out");
      h->sleepers.fetch_add(1, std::memory_order_seq_cst);
      uint32_t seq = h->wakeSeq.load(std::memory_order_acquire);
      if (flag.load(std::memory_order_seq_cst) < epoch) futexWait(&h->wakeSeq, seq, kBlockSliceUs);
      h->sleepers.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

Status NodeWindows::waitAll(Flag flag, uint64_t epoch, const OpDesc& desc) {
  const int n = comm_.nranks();
  for (int i = 1; i < n; ++i) BRAID_TRY(waitFor((comm_.rank() + i) % n, flag, epoch, desc));
  return Status::ok();
}

void NodeWindows::lend(const void* p, size_t bytes, Zero* z) const {
  z->on = false;
  if (bytes < zeroCopyMin_ || SharedAllocations::instance().empty()) return;
  SharedSpan span;
  if (!SharedAllocations::instance().find(p, bytes, &span) ||
      span.name.size() >= windows::kNameBytes) {
    return;
  }
  z->on = true;
  z->name = std::move(span.name);
  z->regionBytes = span.regionBytes;
  z->offset = span.offset;
}

void NodeWindows::lendByAddress(const Plan& plan, const void* p, Zero* z) const {
  if (!singleCopy_ || !plan.copiesOnly || p == nullptr) return;
  // What one peer reads of it per round.
  const int n = comm_.nranks();
  const uint64_t perPeer = plan.collective == algo::Collective::kAllToAll
                               ? plan.inputBytes / static_cast<uint64_t>(n)
                               : plan.inputBytes;
  if (std::min<uint64_t>(perPeer, chunk_) < comm_.config().singleCopyMinBytes) return;
  z->on = true;
  z->name.clear();
  z->address = reinterpret_cast<uint64_t>(p);
}

bool NodeWindows::lentAddress(int q, const algo::Step& st) const {
  const bool output = st.src == algo::BufRef::kWindowOut;
  return (output ? header(q)->output : header(q)->input)[half_].address != 0;
}

Status NodeWindows::readLent(int q, const algo::Step& st, char* dst, const OpDesc& desc) {
  const bool output = st.src == algo::BufRef::kWindowOut;
  const ShareDesc& d = (output ? header(q)->output : header(q)->input)[half_];
  Status s = comm_.endpoint(q)->readAt(d.address + st.bufOffset * es_, dst, st.count * es_);
  if (s.isOk()) return s;
  Status reported = s.code() == braidRemoteError ? comm_.peerFailed(q, s) : s;
  return reported.withContext(desc.describe() + ": reading " + comm_.describePeer(q) +
                              "'s buffer: ");
}

void NodeWindows::describe(bool output, int half, const Zero& zero) {
  ShareDesc& d = (output ? header(comm_.rank())->output : header(comm_.rank())->input)[half];
  // Written only when it changes: peers read this line every round, and a store would
  // take it away from their caches.
  if (!zero.on || zero.address != 0) {
    if (d.name[0] != '\0') d.name[0] = '\0';
    const uint64_t address = zero.on ? zero.address : 0;
    if (d.address != address) d.address = address;
    return;
  }
  if (d.address != 0) d.address = 0;
  if (d.offset == zero.offset && d.regionBytes == zero.regionBytes &&
      std::strncmp(d.name, zero.name.c_str(), sizeof(d.name)) == 0) {
    return;
  }
  std::memcpy(d.name, zero.name.c_str(), zero.name.size() + 1);
  d.regionBytes = zero.regionBytes;
  d.offset = zero.offset;
}

std::atomic<uint64_t>& NodeWindows::flagOf(int rank, Flag flag) const {
  Header* h = header(rank);
  return flag == Flag::kReady ? h->ready : flag == Flag::kDone ? h->done : h->finished;
}

bool NodeWindows::described(int q, bool output, int half) const {
  const ShareDesc& d = (output ? header(q)->output : header(q)->input)[half];
  return d.name[0] != '\0' || d.address != 0;
}

Expected<const char*> NodeWindows::lentOf(int q, bool output, int half, size_t at, size_t bytes,
                                          const OpDesc& desc) {
  const ShareDesc& d = (output ? header(q)->output : header(q)->input)[half];
  const std::string name(d.name, strnlen(d.name, sizeof(d.name)));
  auto it = lent_.find(name);
  if (it == lent_.end()) {
    Expected<std::unique_ptr<SharedRegion>> r =
        comm_.transportOf(q)->openRegion(name, d.regionBytes);
    if (!r.isOk()) {
      return r.status().withContext(desc.describe() + ": mapping " + comm_.describePeer(q) +
                                    "'s buffer from braidMemAlloc: ");
    }
    it = lent_.emplace(name, std::move(r).value()).first;
  }
  if (d.offset + at + bytes > it->second->bytes()) {
    return remoteError(comm_.describePeer(q) + " described a buffer out of range");
  }
  return static_cast<const char*>(it->second->base()) + d.offset + at;
}

bool NodeWindows::inputsAllLent(int half) const {
  for (int q = 0; q < comm_.nranks(); ++q) {
    if (!described(q, false, half)) return false;
  }
  return true;
}

}  // namespace braid
