// What the emulated GPU's sources share (tests/gpu_emu): not part of its interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace braid::cuda::emu {

// Blocks until the 8 bytes at `addr` reach `value`, compared as a wrapping counter (as
// CU_STREAM_WAIT_VALUE_GEQ does): a brief spin, then futex sleeps. Writers here wake the
// word; host code that stores without a wake is seen within a millisecond.
void waitAtLeast(void* addr, uint64_t value);

// Why a kernel or memory operation may not touch [p, p + bytes), or "".
std::string unreachable(const char* what, const void* p, size_t bytes);

// Whether refuseStreamWaits is on.
bool refusingStreamWaits();

// BRAID_EMU_DEVICES (1 by default, at most kMaxDevices), and this thread's current device.
constexpr int kMaxDevices = 8;
int deviceCount();
int& currentDeviceOfThread();

// The calling thread's current device gets a context (devicesWithContext), as any CUDA call
// that needs one makes it. The call first waits for a device-wide wait in progress.
void makeContext();

// deviceFree's wait for the whole device, for its scope: as on a GPU, where cudaFree on one
// thread holds the process's other CUDA calls (an H200 held a cudaEventDestroy 28 s behind a
// cudaFree waiting for a held stream), makeContext waits for it. Whether cudaFreeHost and
// cudaHostRegister/Unregister hold them too is not measured (scripts/probe_free_holds.cu):
// here they only wait. Holding them too deadlocks the staged calls of ranks that are threads
// (the pinned pool's frees): see "Failure model on the device" in docs/gpu.md.
class DeviceWideWait {
 public:
  DeviceWideWait();
  ~DeviceWideWait();
  DeviceWideWait(const DeviceWideWait&) = delete;
  DeviceWideWait& operator=(const DeviceWideWait&) = delete;
};

}  // namespace braid::cuda::emu
