// Futex wait/wake on a 32-bit word that may live in memory shared between
// processes (so never FUTEX_PRIVATE). Header-only.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>
#include <thread>

#include "core/status.h"

namespace braid {

// Sleeps while *word == expected, at most timeoutUs. Spurious returns happen.
inline void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int timeoutUs) {
  timespec ts{timeoutUs / 1000000, (timeoutUs % 1000000) * 1000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

inline void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// A one-directional "something changed" signal between one waiter and one
// notifier: the notifier pays a system call only while the waiter sleeps.
struct alignas(64) WakeSignal {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> sleeping{0};

  // Waiter: `ready` is re-checked after announcing sleep, so no wake is lost.
  template <typename Ready>
  void wait(Ready ready, int timeoutUs) {
    uint32_t s = seq.load(std::memory_order_acquire);
    sleeping.store(1, std::memory_order_seq_cst);
    if (!ready()) futexWait(&seq, s, timeoutUs);
    sleeping.store(0, std::memory_order_relaxed);
  }
  // Notifier: call after publishing the change (with a seq_cst store or fence).
  void notify() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleeping.load(std::memory_order_relaxed) != 0) {
      seq.fetch_add(1, std::memory_order_release);
      futexWakeAll(&seq);
    }
  }
};

// "Something changed", among many waiters and notifiers of one process: a notifier calls
// notify() after publishing (with a seq_cst store); a waiter announces its sleep before
// re-checking, so no wake is lost, and the notifier pays a system call only while one
// sleeps.
struct ChangeSignal {
  std::atomic<uint32_t> seq{0};
  std::atomic<int> sleepers{0};

  void notify() {
    seq.fetch_add(1);
    if (sleepers.load() != 0) futexWakeAll(&seq);
  }
};

// Waits until ready(): a brief spin, then sleeps on `signal` in 1 ms slices, each first
// asking stop(), whose error (a timeout, an abort) ends the wait and is returned.
template <typename Ready, typename Stop>
Status awaitChange(ChangeSignal& signal, Ready ready, Stop stop) {
  for (int spin = 0;; ++spin) {
    const uint32_t seen = signal.seq.load();
    if (ready()) return Status::ok();
    if (spin < 64) {
      std::this_thread::yield();
      continue;
    }
    if (Status st = stop(); !st.isOk()) return st;
    signal.sleepers.fetch_add(1);
    if (!ready()) futexWait(&signal.seq, seen, 1000);
    signal.sleepers.fetch_sub(1);
  }
}

}  // namespace braid
