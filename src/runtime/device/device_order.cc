#include "runtime/device/device_order.h"

#include <vector>

#include "cuda/device.h"
#include "exec/cuda/staging.h"

namespace braid {

Expected<std::shared_ptr<DeviceOrder>> DeviceOrder::create() {
  std::shared_ptr<DeviceOrder> order(new DeviceOrder);
  BRAID_ASSIGN_OR_RETURN(order->event_, cuda::eventCreate());
  return order;
}

DeviceOrder::~DeviceOrder() {
  if (event_ != nullptr) (void)cuda::eventDestroy(event_);
}

Status DeviceOrder::after(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  // Also on the same stream handle: a destroyed stream's address may come back as a new
  // stream while the old one's work still runs.
  return any_ ? cuda::streamWaitEvent(stream, event_) : Status::ok();
}

Status DeviceOrder::mark(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  BRAID_TRY(cuda::eventRecord(event_, stream));
  any_ = true;
  return Status::ok();
}

Status DeviceOrder::synchronize() {
  std::lock_guard<std::mutex> lock(mu_);
  return any_ ? cuda::eventSynchronize(event_) : Status::ok();
}

void DeviceOrder::holdReleases() {
  releaseAfter([order = shared_from_this()] {
    std::lock_guard<std::mutex> lock(order->mu_);
    if (!order->any_) return true;
    Expected<bool> done = cuda::eventDone(order->event_);
    return !done.isOk() || done.value();  // a failed query: the context is gone, nothing runs
  });
}

void DeviceOrder::holdReleasesFor(void* stream) {
  (void)mark(stream);
  holdReleases();
}

CommDeviceScope::CommDeviceScope(int device) {
  if (device < 0) return;
  Expected<int> current = cuda::currentDevice();
  if (!current.isOk() || current.value() == device) return;
  if (cuda::setCurrentDevice(device).isOk()) restore_ = current.value();
}

CommDeviceScope::~CommDeviceScope() {
  if (restore_ >= 0) (void)cuda::setCurrentDevice(restore_);
}

void keepUntilExit(std::shared_ptr<void> thing) {
  static auto* kept = new std::vector<std::shared_ptr<void>>;
  static std::mutex keptMu;
  std::lock_guard<std::mutex> lock(keptMu);
  kept->push_back(std::move(thing));
}

}  // namespace braid
