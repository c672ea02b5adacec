// Monotonic time and deadlines. Header-only; value types.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

namespace braid {

inline uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A point in time after which a wait gives up, and optionally a flag that
// cancels the wait earlier (a communicator's abort). timeoutMs <= 0 means "now".
class Deadline {
 public:
  explicit Deadline(int64_t timeoutMs, const std::atomic<bool>* cancel = nullptr)
      : end_(nowNs() + static_cast<uint64_t>(timeoutMs > 0 ? timeoutMs : 0) * 1000000ull),
        cancel_(cancel) {}
  bool expired() const { return nowNs() >= end_; }
  bool cancelled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }
  // Milliseconds left, rounded up, at least 0 (for poll()).
  int remainingMs() const {
    uint64_t now = nowNs();
    if (now >= end_) return 0;
    uint64_t ms = (end_ - now + 999999) / 1000000;
    return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }
  uint64_t endNs() const { return end_; }

 private:
  uint64_t end_;
  const std::atomic<bool>* cancel_;
};

}  // namespace braid
