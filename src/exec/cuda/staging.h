// StagedBuffers: host code (the host executor) running on buffers that may live in device
// memory, ordered on a CUDA stream as NCCL orders a collective: work the stream ran before
// the call is visible to it, and work the stream runs after sees its results.
//
// stageIn() enqueues copies of every device region into pinned host memory on the stream;
// host code may use the hostOf() addresses once the stream has run them (the caller
// synchronises, or has the stream signal it: runtime/device/staged_proxy.h); copyBack() enqueues
// the copies of the written regions back. Neither waits. Cost: device data crosses PCIe twice,
// (input + output bytes) / pinned copy bandwidth on top of the host collective. Device regions that
// overlap (NCCL's in-place layouts) are staged as one span, so their relative placement, which the
// schedules test, survives. Pinned memory comes from a per-process pool (kept until exit) and goes
// back to it when the StagedBuffers is destroyed, which must be after the stream has run the
// copies.
//
// One StagedBuffers per call, used by one thread at a time; the pool is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"

namespace braid {

struct StagedRegion {
  const void* ptr = nullptr;
  size_t bytes = 0;
  bool written = false;  // the operation writes it (copied back by stageOut)
};

// Runs `release` on a thread of its own, after the releases queued before it, with the
// calling thread's current device made current there: for frees that wait for the whole
// device (cudaFree, cudaFreeHost, cudaHostUnregister), streams that wait for the caller
// included. Returns at once; nothing waits for the jobs.
void releaseLater(std::function<void()> release);
// No release (queued before or after) runs until `finished()` returns true: for work a
// failed call left on a stream the application may hold, which a free would wait for (on
// a GPU holding the process's other CUDA calls meanwhile). Polled on releaseLater's thread
// with the caller's current device, without blocking; never true: nothing is released.
void releaseAfter(std::function<bool()> finished);
// Returns once the releases queued before the call have run (tests).
void awaitReleases();

// releaseLater of cuda::pinnedFree(p) (pinned memory, cuda::pinnedAlloc's).
void freePinnedLater(void* p);

// Regions that overlap, merged into spans (start address, bytes), in address order.
struct StagedSpan {
  uintptr_t start;
  size_t bytes;
};
std::vector<StagedSpan> mergeOverlapping(std::vector<StagedRegion> regions);

class StagedBuffers {
 public:
  // Classifies each region (host or device memory) and enqueues copies of the device ones
  // to pinned memory on `stream` (a cudaStream_t; nullptr: the legacy default stream).
  static Expected<StagedBuffers> stageIn(const std::vector<StagedRegion>& regions, void* stream);

  StagedBuffers(StagedBuffers&& other) noexcept;
  StagedBuffers& operator=(StagedBuffers&&) = delete;
  StagedBuffers(const StagedBuffers&) = delete;
  ~StagedBuffers();  // gives the pinned memory back to the pool

  // The address host code uses for p: inside a staged span, its pinned copy; else p.
  const void* hostOf(const void* p) const;
  void* hostOf(void* p) const { return const_cast<void*>(hostOf(static_cast<const void*>(p))); }
  size_t stagedBytes() const { return pinnedBytes_; }

  // Enqueues copies of the written device regions back on `stream`.
  Status copyBack(void* stream);

 private:
  struct Span {
    uintptr_t device;
    size_t bytes;
    char* host;
  };
  StagedBuffers() = default;

  std::vector<Span> spans_;
  std::vector<StagedRegion> written_;  // device regions to copy back
  void* pinned_ = nullptr;
  size_t pinnedBytes_ = 0;
};

}  // namespace braid
