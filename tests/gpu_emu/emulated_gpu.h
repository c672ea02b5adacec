// An emulated GPU for tests: src/cuda's device.h and kernels.h over host memory and
// threads, so the GPU path's host-side logic (stream order, CUDA IPC between processes,
// stream memory operations on the windows' counters, staging, error paths) runs where
// there is no GPU. Test-only: libbraid and the drop-in never link it; braid_static_emu
// (tests/gpu_emu/CMakeLists.txt) is braid_static's objects over this instead of src/cuda.
//
// The model, and what it checks that a GPU would also refuse:
// - Device memory is a memfd per allocation, filled with a pattern, as cudaMalloc's memory
//   is not zeroed, mapped twice: the address Braid gets is PROT_NONE, so host code that
//   touches device memory faults as on a GPU; the emulated device works on the other
//   mapping (reach()). An IPC handle names the owner's pid and fd; another
//   process maps /proc/<pid>/fd/<fd>. Opening a handle in the process that made it fails.
// - A stream is a worker thread that runs its operations in order; nullptr is one
//   process-wide stream (without the legacy stream's implicit synchronisation).
// - Kernels and stream memory operations fault on pageable host memory (not device,
//   pinned or registered) and on a device range they overrun; a fault is sticky, as a
//   GPU's is: every later synchronisation returns it.
// - Freeing device or pinned memory waits for every stream, as cudaFree and cudaFreeHost
//   wait for the device: a free on a path that must not block shows up as the wait. So do
//   page-locking and unlocking host memory and opening and closing IPC handles, which CUDA
//   may make wait (not established either way): a test that holds a stream makes its
//   first device call, which sets the windows up, before. Allocating does not wait (seen on an
//   H200: a pinned allocation while a stream was held returned at once).
// - A stream capturing a graph (streamBeginCapture) records its work without running it,
//   each operation with the values it was given (graphLaunch queues them all again on a
//   stream, as a replay does), and refuses to be synchronised or queried, which
//   invalidates the capture; device.h's allocating, freeing and page-locking calls are relaxed
//   about captures, as the real ones are (src/cuda/device.cc), so they are not checked.
// - Kernels load lazily, as CUDA's do by default since 12.2: a kernel's first launch in
//   the process waits for every stream first (CUDA says loading may synchronise the
//   context; with ranks as threads of one process that is a deadlock, seen on an H200),
//   unless kernels.h's loadKernels ran, which loads them all without waiting (whether
//   CUDA's explicit loading waits is not established).
// - Copies follow CUDA's pageable rules: from pageable memory the stream is synchronised
//   and the data taken before the call returns; to pageable memory the call returns once
//   the copy is done.
// - Streams of a process share hardware queues when BRAID_EMU_CONNECTIONS=N (or
//   shareQueues) says so, as a CUDA context's streams share CUDA_DEVICE_MAX_CONNECTIONS
//   queues: stream k in the order they were made goes to queue k % N, and a queue runs its
//   operations one at a time in the order they were queued, so a wait holds back the
//   other streams' work behind it. (A GPU runs independent kernels of one queue side by
//   side; waits and the work that depends on them hold it as here.) By default each
//   stream runs on its own.
// - BRAID_EMU_DEVICES=N (1 by default, at most 8) devices, each thread with a current one
//   (setCurrentDevice); a stream belongs to its maker's, and each device's streams share
//   queues of their own. Every device reaches every allocation (peer access always on).
// Not modelled: the GPU's memory ordering (all of this is coherent host memory), kernel
// concurrency, timing; BRAID_EMU_JITTER_US=N delays each stream operation by a random
// 0..N us, so stream work lands late against the host (scripts/test.sh reruns the device
// failure, ordering and threads tests so).
//
// Thread-safe. Like CUDA's, its state does not survive fork().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"

namespace braid::cuda::emu {

// Where an address range lives, as a GPU sees it.
enum class Region { kPageable, kDevice, kPinned, kRegistered };

// The region holding all of [p, p + bytes); a range that starts in a device, pinned or
// registered allocation and runs past its end reads as kPageable with `overrun` set.
Region regionOf(const void* p, size_t bytes, bool* overrun = nullptr);
inline bool gpuReaches(const void* p, size_t bytes) {
  return bytes == 0 || regionOf(p, bytes) != Region::kPageable;
}

// Where the emulated device's work reaches p: device memory's own view of it (host code
// cannot touch device memory: its addresses are mapped PROT_NONE), or p itself.
void* reach(const void* p);

// Bytes of device memory this process allocated and has not freed (its peers' mappings
// not counted).
size_t deviceBytesInUse();

// The devices this process has made a context on, a bit each. A call that needs one
// (allocating, freeing, registering, IPC, streams, events, work on a stream) makes the
// calling thread's current device's, and a thread's current device is 0 until it sets
// one: a thread of Braid's that never sets it makes device 0's, as on a GPU (where that
// costs hundreds of MiB on a GPU the process does not use).
uint32_t devicesWithContext();

// An error of this emulation: braidUnhandledCudaError, "emulated GPU: " + what.
Status emulated(const std::string& what);

// Records a fault (a kernel touching memory a GPU cannot reach); the first one sticks.
void fault(const std::string& what);
// The sticky fault as an error, or ok.
Status stickyFault();

// Queues `op` on `stream` (nullptr: the default stream); it runs after everything queued
// there before it. Fails for a stream that is not live.
Status enqueue(void* stream, std::function<void()> op);
// Blocks until everything queued on `stream` so far has run.
Status drain(void* stream);
// Blocks until everything queued on every stream so far has run: what cudaFree and
// cudaFreeHost wait for (a stream held on a counter holds them too, as on a GPU), and
// here also hostRegister/hostUnregister and ipcOpen/ipcClose.
void drainAll();

// Forgets which kernels were loaded, as a new process would: their next launches load them.
void forgetLoadedKernels();

// Streams made from now on share n hardware queues (0: each runs on its own), over
// BRAID_EMU_CONNECTIONS.
void shareQueues(int n);

// While on, every streamWaitValue64 fails at once, enqueueing nothing: a fault a test
// injects to reach the error paths of a call enqueued in part.
void refuseStreamWaits(bool on);

}  // namespace braid::cuda::emu
