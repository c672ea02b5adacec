// kernels.h and device.h in a build without CUDA: no device, and every call says why.
#include "cuda/device.h"
#include "cuda/kernels.h"

namespace braid::cuda {
namespace {

const char kNoCuda[] =
    "this Braid was built without CUDA (nvcc was not found at configure time, or "
    "BRAID_ENABLE_CUDA=OFF)";

Status notBuilt() { return Status(braidUnhandledCudaError, kNoCuda); }

}  // namespace

bool compiled() { return false; }

const DeviceStatus& deviceStatus() {
  static const DeviceStatus status{0, kNoCuda};
  return status;
}

MemoryKind memoryKind(const void*) { return MemoryKind::kHost; }
Status checkStream(void*) { return Status(braidInvalidArgument, kNoCuda); }
Status streamSynchronize(void*) { return notBuilt(); }
Expected<void*> streamCreate() { return notBuilt(); }
Status streamDestroy(void*) { return notBuilt(); }
Expected<bool> streamCapturing(void*) { return notBuilt(); }
Status streamBeginCapture(void*, bool) { return notBuilt(); }
Expected<void*> streamEndCapture(void*) { return notBuilt(); }
Status graphLaunch(void*, void*) { return notBuilt(); }
Status graphDestroy(void*) { return notBuilt(); }
Expected<void*> deviceAlloc(size_t) { return notBuilt(); }
Status deviceFree(void*) { return notBuilt(); }
Expected<void*> pinnedAlloc(size_t) { return notBuilt(); }
Status pinnedFree(void*) { return notBuilt(); }
Expected<IpcHandle> ipcHandle(void*) { return notBuilt(); }
Expected<void*> ipcOpen(const IpcHandle&) { return notBuilt(); }
Status ipcClose(void*) { return notBuilt(); }
Expected<void*> shareableAlloc(size_t) { return notBuilt(); }
bool isShareable(const void*) { return false; }
Status shareableFree(void*) { return notBuilt(); }
Expected<int> shareableExport(const void*, size_t*) { return notBuilt(); }
Expected<void*> shareableImport(int, size_t) { return notBuilt(); }
Status shareableUnmap(void*) { return notBuilt(); }
Expected<int> currentDevice() { return notBuilt(); }
Status setCurrentDevice(int) { return notBuilt(); }
std::string boundDeviceBusId() { return ""; }
Expected<DeviceUuid> deviceUuid(int) { return notBuilt(); }
Status enablePeerAccess(int) { return notBuilt(); }
Status copyAsync(void*, const void*, size_t, void*) { return notBuilt(); }
Status memsetAsync(void*, int, size_t, void*) { return notBuilt(); }
Expected<bool> streamIdle(void*) { return notBuilt(); }
Expected<void*> eventCreate() { return notBuilt(); }
Status eventDestroy(void*) { return notBuilt(); }
Status eventRecord(void*, void*) { return notBuilt(); }
Status streamWaitEvent(void*, void*) { return notBuilt(); }
Status eventSynchronize(void*) { return notBuilt(); }
Expected<bool> eventDone(void*) { return notBuilt(); }
Expected<void*> hostRegister(void*, size_t) { return notBuilt(); }
Status hostUnregister(void*) { return notBuilt(); }
Status streamWriteValue64(void*, void*, uint64_t) { return notBuilt(); }
Status streamWaitValue64(void*, void*, uint64_t) { return notBuilt(); }

Status launchReduce(void*, const void* const*, int, size_t, braidDataType_t, braidRedOp_t, int,
                    void*) {
  return notBuilt();
}
Status launchCopy(void*, const void*, size_t, void*) { return notBuilt(); }
Status launchBump(void*, void*) { return notBuilt(); }
Status loadKernels() { return notBuilt(); }
Status launchWait(const void*, uint64_t, void*) { return notBuilt(); }
Status launchScale(void*, const void*, size_t, braidDataType_t, const void*, const void*, void*) {
  return notBuilt();
}

}  // namespace braid::cuda
