// The CUDA runtime as the rest of Braid uses it: whether this process has a GPU (and if
// not, why), where a pointer lives, CUDA streams, device and pinned memory, and copies.
//
// Plain C++ (streams and pointers are void*); errors are Status values with code
// braidUnhandledCudaError naming the CUDA call and its error. The runtime is linked
// statically and loads the driver on first use, so a machine without a driver or GPU
// simply reports no device. CUDA state does not survive fork(): a process that forks
// workers which use the GPU must not ask anything here before forking (deviceStatus()
// caches its answer per process). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace braid::cuda {

// Whether this build has the GPU path (nvcc was found at configure time).
bool compiled();

struct DeviceStatus {
  int count = 0;       // devices this process can use
  std::string reason;  // when count is 0: why, for a user (or a skipped test) to read
};
// Asked once per process (cudaGetDeviceCount); errors 34 (stub library), 35 (driver too
// old or missing) and 100 (no device) mean no device, with CUDA's text as the reason.
const DeviceStatus& deviceStatus();
inline bool hasDevice() { return deviceStatus().count > 0; }

// Host: pageable, pinned or unknown to CUDA; device: device or managed memory, which host
// code must not touch unordered. Always kHost when there is no device. Asks the driver's
// cuPointerGetAttributes (no context needed), else cudaPointerGetAttributes.
enum class MemoryKind { kHost, kDevice };
MemoryKind memoryKind(const void* p);
inline bool isDeviceMemory(const void* p) { return memoryKind(p) == MemoryKind::kDevice; }

// Whether `stream` is a live CUDA stream of this process (cudaStreamQuery accepts it).
// The error says why not (no device, or CUDA's answer).
Status checkStream(void* stream);

Status streamSynchronize(void* stream);
Expected<void*> streamCreate();  // non-blocking with respect to the legacy stream
Status streamDestroy(void* stream);

// Whether `stream` is capturing a CUDA graph (cudaStreamIsCapturing; an invalidated
// capture counts, and so does the legacy stream while another stream's capture forbids
// using it).
Expected<bool> streamCapturing(void* stream);
// Tests: capture `stream` into a graph (cudaStreamCaptureModeGlobal, as torch.cuda.graph
// does; threadLocal: cudaStreamCaptureModeThreadLocal, as threads that capture side by
// side must, since in global mode another thread's unsafe call, a copy to pageable memory
// say, invalidates the capture), then end the capture and instantiate the graph (the
// error of a capture invalidated meanwhile), launch it on a stream (a replay), and
// destroy it.
Status streamBeginCapture(void* stream, bool threadLocal = false);
Expected<void*> streamEndCapture(void* stream);
Status graphLaunch(void* graph, void* stream);
Status graphDestroy(void* graph);

Expected<void*> deviceAlloc(size_t bytes);
Status deviceFree(void* p);
Expected<void*> pinnedAlloc(size_t bytes);  // page-locked host memory
Status pinnedFree(void* p);

// CUDA IPC: a handle (CUDA's 64 opaque bytes) to device memory from deviceAlloc, that
// another process on the node opens to map the same memory (ipcOpen; never in the
// process that made it). ipcClose unmaps what ipcOpen mapped.
constexpr size_t kIpcHandleBytes = 64;
struct IpcHandle {
  unsigned char bytes[kIpcHandleBytes];
};
Expected<IpcHandle> ipcHandle(void* devicePtr);
Expected<void*> ipcOpen(const IpcHandle& handle);
Status ipcClose(void* mapped);
// Shareable device memory (braidMemAllocDevice): on the device current on this thread
// (its current context, else the runtime's current device), made with cuMem (cuMemCreate
// asking for POSIX file descriptor handles, mapped read-write for that device) so another
// process on the node can map it from a file descriptor: shareableExport gives one (the
// caller closes it; pass it over a Unix socket with SCM_RIGHTS), shareableImport maps it
// there, shareableUnmap undoes that. Sizes round up to the allocation granularity. Where
// the driver offers no such handles, the memory comes from cudaMalloc (INFO says so) and
// shareableExport refuses it, naming why. shareableFree frees what shareableAlloc made;
// isShareable says whether p is the start of one (a lookup, no CUDA call).
Expected<void*> shareableAlloc(size_t bytes);
bool isShareable(const void* p);
Status shareableFree(void* p);
Expected<int> shareableExport(const void* p, size_t* bytes);
Expected<void*> shareableImport(int fd, size_t bytes);
Status shareableUnmap(void* p);

// The device current on this thread (0 where none was set), and making one current.
Expected<int> currentDevice();
Status setCurrentDevice(int device);
// The PCI bus id ("0000:1b:00.0", lower case) of the device whose context is current on
// this thread, as NCCL binds a communicator to the device current at its init; "" when
// none is: the process has not loaded the driver, or no context is current. Never loads
// the driver or makes a context (a host-only process pays nothing, a forking one starts
// no CUDA before its fork).
std::string boundDeviceBusId();
// The device's UUID (16 bytes), the same in every process whatever its device numbering.
struct DeviceUuid {
  unsigned char bytes[16];
};
Expected<DeviceUuid> deviceUuid(int device);
// Lets work on this thread's current device reach memory allocated on `peer` (this
// process's numbering): cudaDeviceEnablePeerAccess, already enabled being fine. An error
// where the devices have no peer access (cudaDeviceCanAccessPeer). Nothing for the same
// device.
Status enablePeerAccess(int peer);

// Copies between any two kinds of memory (unified addressing), ordered on `stream`.
Status copyAsync(void* dst, const void* src, size_t bytes, void* stream);
Status memsetAsync(void* dst, int value, size_t bytes, void* stream);

// Whether every piece of work on `stream` so far has finished (cudaStreamQuery).
Expected<bool> streamIdle(void* stream);

// Events for ordering streams (no timing): `record` marks the work `stream` has so far;
// `streamWaitEvent` makes later work on `stream` wait for it; `eventSynchronize` blocks.
Expected<void*> eventCreate();
Status eventDestroy(void* event);
Status eventRecord(void* event, void* stream);
Status streamWaitEvent(void* stream, void* event);
Status eventSynchronize(void* event);
// Whether the work `event` marks has run (cudaEventQuery: never blocks; an event never
// recorded has).
Expected<bool> eventDone(void* event);

// Page-locks [p, p + bytes) (page-aligned host memory, a shared mapping too) and maps it
// for every device; the returned address is where device work (kernels, the stream memory
// operations below) reaches it. hostUnregister undoes it.
Expected<void*> hostRegister(void* p, size_t bytes);
Status hostUnregister(void* p);

// Stream memory operations (the driver's cuStreamWriteValue64 / cuStreamWaitValue64):
// once the work before it on `stream` has finished, write `value` to the 8 bytes at
// `deviceAddr` (after that work's writes are visible); or hold back later work on `stream`
// until the 8 bytes at `deviceAddr` are at least `value` (compared as a wrapping counter).
// The GPU waits, no host thread: the caller returns at once. `deviceAddr` is an address
// device work reaches (device memory, or host memory through hostRegister or pinnedAlloc).
Status streamWriteValue64(void* stream, void* deviceAddr, uint64_t value);
Status streamWaitValue64(void* stream, void* deviceAddr, uint64_t value);

}  // namespace braid::cuda
