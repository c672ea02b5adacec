// The ordering every device executor of a communicator shares: its calls in issue order
// across streams (DeviceOrder), its device made current for a teardown (CommDeviceScope),
// and memory kept until exit. The host path never includes this header.
#pragma once

#include <memory>
#include <mutex>

#include "core/status.h"

namespace braid {

// A communicator's device calls in issue order, whatever streams they are on, as NCCL
// orders a communicator's work: each call's stream first waits for the last call's event
// (after), and the call then records it (mark). One per communicator, shared by the device
// windows and the staged proxy. Thread-safe.
class DeviceOrder : public std::enable_shared_from_this<DeviceOrder> {
 public:
  static Expected<std::shared_ptr<DeviceOrder>> create();
  ~DeviceOrder();
  DeviceOrder(const DeviceOrder&) = delete;
  DeviceOrder& operator=(const DeviceOrder&) = delete;

  Status after(void* stream);  // `stream` waits for the last call (nothing before any)
  Status mark(void* stream);   // the work on `stream` so far is now the last call
  Status synchronize();        // the host waits for the last call
  // No release of releaseLater (exec/cuda/staging.h) runs until the last call has run on
  // the device: a failed communicator's frees (and any other), where a call's part may
  // wait on a stream the application holds.
  void holdReleases();
  // A call enqueued only in part on `stream`: that part becomes the last call (mark), and
  // releases wait for it (holdReleases).
  void holdReleasesFor(void* stream);

 private:
  DeviceOrder() = default;
  std::mutex mu_;
  void* event_ = nullptr;
  bool any_ = false;
};

// The communicator's CUDA device (current at its first device call) made current on this
// thread for the scope, the caller's put back after: its teardown frees device and pinned
// memory and events, which on another device's context would make one there (as
// ncclCommDestroy, a thread that never set its device may destroy). Nothing for a
// communicator that made no device call.
class CommDeviceScope {
 public:
  explicit CommDeviceScope(int device);  // -1: nothing
  ~CommDeviceScope();
  CommDeviceScope(const CommDeviceScope&) = delete;
  CommDeviceScope& operator=(const CommDeviceScope&) = delete;

 private:
  int restore_ = -1;
};

// Keeps `thing` until the process exits: memory that queued device work may still write
// after its owner is gone (an abort, a stream that never finished). Reachable, so leak
// checkers do not count it. Thread-safe.
void keepUntilExit(std::shared_ptr<void> thing);

}  // namespace braid
