// DeviceWindows' shared page and watch (runtime/device/device_windows.h): the counters and flags as
// the host and the devices reach them, the watch thread, and releasing the barriers.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "runtime/device/device_windows.h"  // first of Braid's: the header this file implements

#include "core/clock.h"
#include "core/logging.h"
#include "exec/cuda/device_call.h"
#include "runtime/communicator.h"
#include "runtime/device/device_order.h"

namespace braid {

std::atomic<uint64_t>& DeviceWindows::word(void* page, size_t at, int index) {
  return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(page) + at)[index];
}
std::atomic<uint64_t>& DeviceWindows::word(size_t at, int index) const {
  return word(counters_, at, index);
}

std::atomic<uint64_t>& DeviceWindows::posted(int s, int r) const {
  return word(kPostedAt, s * 8 + r);
}
std::atomic<uint64_t>& DeviceWindows::consumed(int s, int r) const {
  return word(kConsumedAt, s * 8 + r);
}
std::atomic<uint64_t>& DeviceWindows::graphFlag(int set, int from, int to) const {
  return word(kGraphFlagsAt, (set * 8 + from) * 8 + to);
}
std::atomic<uint64_t>& DeviceWindows::progress(int q) const { return word(kProgressAt, q); }
std::atomic<uint64_t>& DeviceWindows::full(int from, int to, int j) const {
  return word(kFullAt, (from * 8 + to) * 2 + j);
}
std::atomic<uint64_t>& DeviceWindows::freed(int from, int to, int j) const {
  return word(kFreedAt, (from * 8 + to) * 2 + j);
}
std::atomic<uint64_t>& DeviceWindows::waiting(int from, int to) const {
  return word(kWaitingAt, from * 8 + to);
}

char* DeviceWindows::device(const std::atomic<uint64_t>& counter) const {
  return countersDevice_ +
         (reinterpret_cast<const char*>(&counter) - reinterpret_cast<const char*>(counters_));
}

// Releases every rank's barriers for good and raises the communicator's error (any
// thread; idempotent).
void DeviceWindows::release(const Status& why) {
  // The error first (sticky: the first cause stays), so whoever sees the windows released,
  // or a stream past a released barrier, finds it raised.
  comm_->raiseAsyncError(why);
  if (released_.exchange(true)) return;
  ReleaseReason& r = reason();
  uint32_t none = 0;
  if (r.by.compare_exchange_strong(none, static_cast<uint32_t>(rank_) + 1)) {
    const std::string& text = why.message();
    const size_t n = std::min(text.size(), sizeof(r.text) - 1);
    std::memcpy(r.text, text.data(), n);
    r.text[n] = '\0';
    r.ready.store(1, std::memory_order_release);
  }
  releaseCounters();
  watchCv_.notify_one();  // from now on it keeps them released
  BRAID_WARN("%s", why.message().c_str());
}

void DeviceWindows::releaseCounters() {
  for (int q = 0; q < nranks_; ++q) {
    counters_[q].value.store(kReleased, std::memory_order_release);
    for (int r = 0; r < nranks_; ++r) {
      posted(q, r).store(kReleased, std::memory_order_release);
      consumed(q, r).store(kReleased, std::memory_order_release);
      for (int set = 0; set < kFlagSets; ++set) graphFlag(set, q, r).store(kReleased);
      for (int j = 0; j < 2; ++j) {
        full(q, r, j).store(kReleased);
        freed(q, r, j).store(kReleased);
      }
    }
  }
}

void DeviceWindows::watch() {
  std::vector<uint64_t> seen(static_cast<size_t>(nranks_), 0);
  std::vector<uint64_t> seenPairs(static_cast<size_t>(nranks_) * 4, 0);
  uint64_t changedAt = nowNs(), pairsChangedAt = changedAt;
  // Captured calls: since when this rank's signal to q has been seen unclaimed with q's
  // progress word standing still (0: it is not), and that word as last seen.
  std::vector<uint64_t> unclaimedSince(static_cast<size_t>(nranks_), 0);
  std::vector<uint64_t> seenProgress(static_cast<size_t>(nranks_), 0);
  const uint64_t timeoutNs = static_cast<uint64_t>(comm_->config().timeoutMs) * 1000000ull;
  std::unique_lock<std::mutex> lock(watchMu_);
  while (!stopping_) {
    if (released_.load()) {
      // A stream's write enqueued before the release (held, or slow) may land after it and
      // store an ordinary count over kReleased, under a wait of another stream: the counters
      // are released again every 10 ms, by every rank that knows, for the windows' life.
      releaseCounters();
      watchCv_.wait_for(lock, std::chrono::milliseconds(10));
      continue;
    }
    bool changed = false, pending = false, behind = false, peerReleased = false;
    const uint64_t mine = counters_[rank_].value.load(std::memory_order_acquire);
    pending = mine < epoch_.load(std::memory_order_relaxed);
    std::string lagging;
    for (int q = 0; q < nranks_; ++q) {
      const uint64_t v = counters_[q].value.load(std::memory_order_acquire);
      if (v >= kReleased || reason().by.load(std::memory_order_acquire) != 0) peerReleased = true;
      changed = changed || v != seen[static_cast<size_t>(q)];
      seen[static_cast<size_t>(q)] = v;
      if (v < mine) {
        behind = pending = true;
        lagging += (lagging.empty() ? "" : ", ") + std::to_string(q);
      }
    }
    // Sends and receives: a receive waits for a post that has not come, or a send for its
    // slot, which the receiver has not emptied.
    bool pairsChanged = false;
    std::string silent;
    for (int q = 0; q < nranks_; ++q) {
      if (q == rank_) continue;
      const uint64_t in = posted(q, rank_).load(std::memory_order_acquire);
      const uint64_t done = consumed(q, rank_).load(std::memory_order_acquire);
      const uint64_t out = posted(rank_, q).load(std::memory_order_acquire);
      const uint64_t taken = consumed(rank_, q).load(std::memory_order_acquire);
      const uint64_t values[4] = {in, done, out, taken};
      for (int i = 0; i < 4; ++i) {
        uint64_t& was = seenPairs[static_cast<size_t>(q) * 4 + static_cast<size_t>(i)];
        pairsChanged = pairsChanged || was != values[i];
        was = values[i];
      }
      const bool recvPending = received_[q].load(std::memory_order_relaxed) > done;
      const bool sendPending = sent_[q].load(std::memory_order_relaxed) > out;
      pending = pending || recvPending || sendPending;
      if ((recvPending && in <= done) || (sendPending && taken + 1 < out)) {
        silent += (silent.empty() ? "" : ", ") + std::to_string(q);
      }
    }
    const uint64_t now = nowNs();
    auto timedOut = [&](const std::string& ranks, const std::string& what) {
      release(Status(braidTimeout, "device windows: rank(s) " + ranks + " " + what + " within " +
                                       std::to_string(comm_->config().timeoutMs) +
                                       " ms of this rank; every rank's barriers and waits are "
                                       "released and results since are undefined"));
    };
    std::string stalled;
    for (int q = 0; q < nranks_ && graphs_.load(std::memory_order_relaxed); ++q) {
      if (q == rank_) continue;
      // This rank's signals and filled graph slots for q, and its wait for q's slot.
      bool unclaimed = false;
      for (const std::atomic<uint64_t>* w :
           {&graphFlag(0, rank_, q), &graphFlag(1, rank_, q), &graphFlag(2, rank_, q),
            &full(rank_, q, 0), &full(rank_, q, 1), &waiting(q, rank_)}) {
        const uint64_t v = w->load(std::memory_order_acquire);
        unclaimed = unclaimed || (v != 0 && v < kReleased);
      }
      const uint64_t progressed = progress(q).load(std::memory_order_acquire);
      uint64_t& since = unclaimedSince[static_cast<size_t>(q)];
      if (!unclaimed) {
        since = 0;
      } else if (since == 0 || progressed != seenProgress[static_cast<size_t>(q)]) {
        since = now;
      }
      seenProgress[static_cast<size_t>(q)] = progressed;
      pending = pending || unclaimed;
      if (since != 0 && now - since > timeoutNs) {
        stalled += (stalled.empty() ? "" : ", ") + std::to_string(q);
      }
    }
    if (changed) changedAt = now;
    if (pairsChanged) pairsChangedAt = now;
    if (peerReleased) {
      (void)released();
    } else if (comm_->failed() || comm_->aborted()) {
      release(comm_->failed()
                  ? comm_->asyncError().withContext("device windows: ")
                  : Status(braidInvalidUsage, "device windows: the communicator was aborted"));
    } else if (behind && now - changedAt > timeoutNs) {
      timedOut(lagging, "did not reach GPU barrier #" + std::to_string(mine));
    } else if (!silent.empty() && now - pairsChangedAt > timeoutNs) {
      timedOut(silent, "did not send or receive what this rank waits for");
    } else if (!stalled.empty()) {
      timedOut(stalled,
               "did not reach a barrier or a send of a call captured into a CUDA graph "
               "(a replay)");
    }
    if (pending) {
      watchCv_.wait_for(lock, std::chrono::milliseconds(2));
    } else {
      watchCv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
}

Status DeviceWindows::flush() { return order_->synchronize(); }

std::string DeviceWindows::releasedBy() const {
  const ReleaseReason& r = reason();
  const uint32_t by = r.by.load(std::memory_order_acquire);
  // The releasing rank wrote its reason before any counter showed the release; a claim
  // seen with the text not yet there is a writer between the two (microseconds).
  for (int spin = 0; by != 0 && r.ready.load(std::memory_order_acquire) == 0 && spin < 1000;
       ++spin) {
    std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
  if (by == 0 || r.ready.load(std::memory_order_acquire) == 0) {
    return "device windows: another rank released the GPU barriers (a peer failed or timed "
           "out); results since are undefined";
  }
  return "device windows: rank " + std::to_string(by - 1) +
         " released the GPU barriers; results since are undefined. Its reason: " +
         std::string(r.text, strnlen(r.text, sizeof(r.text)));
}

bool DeviceWindows::released() {
  if (released_.load()) return true;
  // Claimed before any counter is released, and never written by a stream: a counter
  // alone may already show an ordinary count again (a held stream's late write).
  bool any = reason().by.load(std::memory_order_acquire) != 0;
  for (int q = 0; q < nranks_ && !any; ++q) {
    any = counters_[q].value.load(std::memory_order_acquire) >= kReleased;
  }
  if (!any) return false;
  // Raised before released_ is set, by whichever thread gets here (the watch thread and
  // a caller may both): a caller that sees released_ finds the error there. (Setting
  // released_ first let braidCommGetAsyncError, right after its stream passed a released
  // barrier, report success while the watch thread had yet to raise it.)
  comm_->raiseAsyncError(Status(braidRemoteError, releasedBy()));
  released_.store(true);
  return true;
}

}  // namespace braid
