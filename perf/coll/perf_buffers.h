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
// results checked in; copies between the two are outside the timed loop. In a
// build without CUDA, allocate fails and says so.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  // False with *error set when there is no device or no memory.
  bool allocate(size_t bytes, size_t unalign, std::string* error);
  char* data() const { return data_ == nullptr ? nullptr : data_ + unalign_; }
  char* mirror() const { return mirror_.data(); }
  size_t bytes() const { return bytes_; }
  bool contains(const char* p) const {
    return data_ != nullptr && p >= data() && p < data() + bytes_;
  }

  static bool toDevice(char* dst, const char* src, size_t n);
  static bool toHost(char* dst, const char* src, size_t n);
  // Makes device `index` (modulo the devices there are) current on this thread.
  static bool setDevice(int index);
  static bool synchronize(braidStream_t stream);
  // A blocking CUDA stream (the checks' cudaMemcpy stay ordered with it).
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
