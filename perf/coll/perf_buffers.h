// Buffers of the perf tools: host buffers (heap, braidMemAlloc, registered) and
// CUDA device buffers with a host mirror. Each rank owns its own; not
// thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "braid/braid.h"

namespace braid::perf {

// A 64-byte aligned, touched host buffer, freed with its owner; from
// braidMemAlloc when `shared`; registered with `registerWith` when that is not
// null (its registration ends with the communicator, before the buffer is
// freed). data() is `unalign` bytes past the aligned start.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();

  bool allocate(size_t bytes, bool shared = false, braidComm_t registerWith = nullptr,
                size_t unalign = 0);
  char* data() const { return data_ + unalign_; }
  size_t bytes() const { return bytes_; }  // what was asked, not counting -u

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
  size_t unalign_ = 0;
  bool shared_ = false;
};

// -E 1: a CUDA device buffer with a host mirror that inputs are filled in and
// results checked in; copies between the two are outside the timed loop. Every CUDA call
// here is ordered on the rank's own stream, which is non-blocking: a thread of the tool
// never waits for another rank's stream (the legacy default stream would wait for every
// blocking stream of the device, other ranks' held at a peer's turn too). In a build
// without CUDA, allocate fails and says so.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  // Zeroed on `stream` (waited for). False with *error set when there is no device or no
  // memory.
  bool allocate(size_t bytes, size_t unalign, braidStream_t stream, std::string* error);
  char* data() const { return data_ == nullptr ? nullptr : data_ + unalign_; }
  char* mirror() const { return mirror_.data(); }
  size_t bytes() const { return bytes_; }
  bool contains(const char* p) const {
    return data_ != nullptr && p >= data() && p < data() + bytes_;
  }

  // Copies on `stream`, waited for.
  static bool toDevice(char* dst, const char* src, size_t n, braidStream_t stream);
  static bool toHost(char* dst, const char* src, size_t n, braidStream_t stream);
  // The CUDA devices this machine has; 0 with *why set when CUDA says there are none.
  static int deviceCount(std::string* why);
  // Makes device `index` current on this thread.
  static bool setDevice(int index);
  static bool synchronize(braidStream_t stream);
  // A non-blocking CUDA stream (cudaStreamNonBlocking), as nccl-tests makes them.
  static braidStream_t createStream();
  static void destroyStream(braidStream_t stream);
  // -G: the calls `enqueue` makes on `stream`, captured into a graph (thread-local
  // mode: other threads capture their own) and instantiated; nullptr when CUDA refuses.
  static void* capture(braidStream_t stream, void (*enqueue)(void*), void* arg);
  static bool launch(void* graph, braidStream_t stream);
  static void destroyGraph(void* graph);

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
  size_t unalign_ = 0;
  HostBuffer mirror_;
};

}  // namespace braid::perf
