#include "transports/shm/single_copy.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/clock.h"
#include "core/env.h"
#include "core/logging.h"

namespace braid::transport::shm {
namespace {

// The probe's slice: between the FIFO's 128 KiB slice and the 1 MiB a send posts at most.
constexpr size_t kProbeBytes = 256 << 10;
constexpr int kProbeReps = 8;
constexpr size_t kArenaBytes = 4 << 20;

// One process_vm_readv call; bytes read, or -1 with errno.
ssize_t readOnce(pid_t pid, uint64_t at, void* dst, size_t bytes) {
  iovec local{dst, bytes};
  iovec remote{reinterpret_cast<void*>(at), bytes};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

const char* likelyCause(int err) {
  switch (err) {
    case EPERM:
      return "Yama's kernel.yama.ptrace_scope is above 0, or the peer runs as another user";
    case ENOSYS:
      return "a seccomp filter (container runtime) forbids process_vm_readv";
    case ESRCH:
      return "the peer's pid is not visible here (another pid namespace)";
    default:
      return "the peer's memory is not readable from here";
  }
}

// Said once per process: INFO, since the FIFOs work regardless.
void sayRefusedOnce(const std::string& what, int err) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  BRAID_INFO("shm: single-copy transfers (process_vm_readv) are refused %s: %s (%s); the "
             "shared-memory FIFOs carry every byte",
             what.c_str(), err != 0 ? std::strerror(err) : "read back different bytes",
             err != 0 ? likelyCause(err) : "another process answered under that pid");
}

// Best time of `reps` runs of f, in microseconds.
template <typename F>
double bestUs(int reps, F f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const uint64_t t0 = nowNs();
    f();
    best = std::min(best, static_cast<double>(nowNs() - t0) / 1e3);
  }
  return best;
}

// Reads and copies step through arenas larger than a core's L2, alike for both, so
// the two figures meet the caches the same way (a FIFO slot is written by one core
// and read by another, so neither copy of the FIFO path runs from L1).
bool measure(SingleCopyProbe* out) {
  std::vector<char> src(kArenaBytes, 1);
  std::vector<char> dst(kArenaBytes, 0);
  const pid_t self = getpid();
  const auto at = reinterpret_cast<uint64_t>(src.data());
  if (readOnce(self, at, dst.data(), 64) != 64) {
    sayRefusedOnce("in this process", errno);
    return false;
  }
  bool ok = true;
  size_t piece = 0;
  const auto next = [&] {
    piece = (piece + kProbeBytes) % kArenaBytes;
    return piece;
  };
  out->latencyUs =
      bestUs(4 * kProbeReps, [&] { ok = ok && readOnce(self, at, dst.data(), 64) == 64; });
  const double readUs = bestUs(kProbeReps, [&] {
    const size_t p = next();
    ok = ok && readOnce(self, at + p, dst.data() + p, kProbeBytes) ==
                   static_cast<ssize_t>(kProbeBytes);
  });
  const double copyUs = bestUs(kProbeReps, [&] {
    const size_t p = next();
    std::memcpy(dst.data() + p, src.data() + p, kProbeBytes);
    asm volatile("" : : "r"(dst.data()) : "memory");
  });
  if (!ok) return false;
  out->probeBytes = kProbeBytes;
  out->gbps = static_cast<double>(kProbeBytes) / (std::max(readUs, 1e-3) * 1e3);
  out->copyGBps = static_cast<double>(kProbeBytes) / (std::max(copyUs, 1e-3) * 1e3);
  BRAID_INFO("shm: single-copy read %.2f us per line, %.1f GB/s at %zu KiB (memcpy %.1f GB/s)",
             out->latencyUs, out->gbps, kProbeBytes >> 10, out->copyGBps);
  return true;
}

}  // namespace

bool singleCopyEnabled() { return envInt("BRAID_SHM_CMA", 1) != 0; }

const SingleCopyProbe* singleCopyProbe() {
  static SingleCopyProbe probe;
  static bool have = false;
  static std::once_flag once;
  std::call_once(once, [] { have = singleCopyEnabled() && measure(&probe); });
  return have ? &probe : nullptr;
}

bool canReadPeer(pid_t pid, uint64_t at, const void* expect, size_t bytes, const std::string& who) {
  std::vector<char> got(bytes);
  const ssize_t n = readOnce(pid, at, got.data(), bytes);
  if (n == static_cast<ssize_t>(bytes) && std::memcmp(got.data(), expect, bytes) == 0) return true;
  sayRefusedOnce("between this rank and " + who, n < 0 ? errno : 0);
  return false;
}

Status readPeer(pid_t pid, uint64_t at, void* dst, size_t bytes) {
  auto* d = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t n = readOnce(pid, at, d, bytes);
    if (n <= 0) {
      const int err = n < 0 ? errno : EFAULT;
      if (err == ESRCH) return remoteError("the peer process (pid " + std::to_string(pid) +
                                           ") is gone");
      return remoteError("process_vm_readv of " + std::to_string(bytes) + " bytes from pid " +
                         std::to_string(pid) + " failed: " + std::strerror(err) +
                         " (the peer posted memory it does not have, or it is exiting)");
    }
    d += n;
    at += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace braid::transport::shm
