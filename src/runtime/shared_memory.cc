// Memory peers on the node map: braidMemAlloc's and braidMemAllocDevice's allocations,
// and buffer registration.
//
// braidMemAllocDevice returns shareable device memory (cuda/device.h's shareableAlloc:
// cuMem with POSIX file descriptor handles), which braidMemFree also frees.
//
// braidMemAlloc returns a shared-memory region (core/shared_alloc.h) that
// peers on the node map by name, so collectives on it skip the copy into the
// shared window. Where /dev/shm cannot hold it, private memory (logged): every
// call still works, only without that shortcut.
//
// braidCommRegister gives a host buffer the same shortcut: the pages under it,
// where they are private anonymous memory (malloc, new, anonymous mmap), are
// re-backed at the same address by such a region, contents kept, until
// braidCommDeregister puts private pages back (contents kept). A child forked
// meanwhile gets copy-on-write pages of them (a fork handler): its writes stay
// its own, as with private memory, but until it writes a page it sees the
// parent's later writes there.
// Only a buffer that covers whole pages (start and end page-aligned:
// posix_memalign(4096), mmap) is re-backed: re-backing copies the pages, then
// maps the region over them, and a write another thread made in between to
// other data on a shared first or last page would be lost.
#include <pthread.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include "core/logging.h"
#include "core/proc_maps.h"
#include "core/shared_alloc.h"
#include "cuda/device.h"
#include "runtime/shared_memory.h"
#include "transports/registry.h"

namespace braid {
namespace {

constexpr size_t kPage = 4096;
// Smaller buffers are not shared: the windows copy them anyway (exec/host/shared_windows_plans.cc).
constexpr size_t kShareMinBytes = 4 << 10;

struct Registration {
  braidComm* comm;
  void* buff;
  size_t size;
  void* shared;  // buff when registration shared its pages (SharedAllocations), or null
};

Transport& shmTransport() {
  // The shm transport from the registry: its regions are what peers map by name.
  static std::unique_ptr<Transport> shm = std::move(transport::makeTransport("shm")).value();
  return *shm;
}

// Whether [lo, hi) is private anonymous read-write memory only: no file, no
// shared or special mapping whose meaning a re-backing would change.
bool privateAnonymous(uintptr_t lo, uintptr_t hi) {
  return mapsCover(lo, hi, [](const MapsEntry& e) {
    return std::strncmp(e.perms, "rw-p", 4) == 0 && e.inode == 0 &&
           (e.path[0] == '\0' || std::strcmp(e.path, "[heap]") == 0);
  });
}

// Shares the pages under [buff, buff + size) for registration; null when they
// stay private (device memory, already shared, not plain private memory, no room).
void* sharePages(void* buff, size_t size) {
  if (size < kShareMinBytes || cuda::memoryKind(buff) != cuda::MemoryKind::kHost) return nullptr;
  if (reinterpret_cast<uintptr_t>(buff) % kPage != 0 || size % kPage != 0) {
    BRAID_INFO("braidCommRegister: the buffer stays private (it does not start and end on "
               "page boundaries; allocate it with posix_memalign(4096) and a size in whole "
               "pages for peers to read it in place)");
    return nullptr;
  }
  const auto lo = reinterpret_cast<uintptr_t>(buff);
  if (SharedAllocations::instance().overlaps(lo, lo + size) || !privateAnonymous(lo, lo + size)) {
    return nullptr;  // already shared, or not plain private memory
  }
  static std::once_flag forkHandlers;
  std::call_once(forkHandlers, [] {
    pthread_atfork([] { SharedAllocations::instance().lockForFork(); },
                   [] { SharedAllocations::instance().unlockInParent(); },
                   [] { SharedAllocations::instance().privatizeInChild(); });
  });
  Expected<std::unique_ptr<SharedRegion>> region =
      shmTransport().shareRegion(buff, size);
  if (!region.isOk()) {
    BRAID_INFO("braidCommRegister: the buffer stays private (%s)",
               region.status().message().c_str());
    return nullptr;
  }
  SharedAllocations::instance().add(std::move(region).value());
  return buff;
}

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}

// Live registrations (braidCommRegister's handles).
std::set<Registration*>& registrations() {
  static auto* s = new std::set<Registration*>();
  return *s;
}

// Puts private pages back under a registration's buffer (if it shared them) and frees it.
void release(Registration* reg) {
  if (reg->shared != nullptr) SharedAllocations::instance().remove(reg->shared);
  registrations().erase(reg);
  delete reg;
}

// Allocations that fell back to private memory.
std::set<void*>& privateAllocations() {
  static auto* s = new std::set<void*>();
  return *s;
}

}  // namespace

Expected<void*> allocShared(size_t size) {
  size_t rounded = (size + kPage - 1) / kPage * kPage;
  if (rounded < size) return invalidArgument("size is too large");
  Expected<std::unique_ptr<SharedRegion>> region = shmTransport().createRegion(rounded);
  if (region.isOk()) {
    void* p = region.value()->base();
    SharedAllocations::instance().add(std::move(region).value());
    return p;
  }
  BRAID_INFO("braidMemAlloc: private memory instead of shared (%s)",
             region.status().message().c_str());
  void* p = nullptr;
  if (posix_memalign(&p, kPage, rounded) != 0) {
    return Status(braidSystemError,
                  "braidMemAlloc: cannot allocate " + std::to_string(size) + " bytes");
  }
  std::lock_guard<std::mutex> lock(registryMutex());
  privateAllocations().insert(p);
  return p;
}

Expected<void*> allocDeviceShared(size_t size) {
  if (!cuda::compiled() || !cuda::hasDevice()) {
    return Status(braidUnhandledCudaError, "braidMemAllocDevice: " + cuda::deviceStatus().reason +
                                               " (braidMemAlloc gives host memory peers map)");
  }
  Expected<void*> p = cuda::shareableAlloc(size);
  if (!p.isOk()) return p.status().withContext("braidMemAllocDevice: ");
  return p.value();
}

Status freeShared(void* ptr) {
  if (SharedAllocations::instance().remove(ptr)) return Status::ok();
  if (cuda::isShareable(ptr)) return cuda::shareableFree(ptr);
  std::lock_guard<std::mutex> lock(registryMutex());
  if (privateAllocations().erase(ptr) == 0) {
    return invalidArgument(
        "ptr was not returned by braidMemAlloc or braidMemAllocDevice (or was freed)");
  }
  free(ptr);
  return Status::ok();
}

void* registerBuffer(braidComm* comm, void* buff, size_t size) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto* reg = new Registration{comm, buff, size, sharePages(buff, size)};
  registrations().insert(reg);
  return reg;
}

Status deregisterBuffer(braidComm* comm, void* handle) {
  std::lock_guard<std::mutex> lock(registryMutex());
  auto* reg = static_cast<Registration*>(handle);
  if (registrations().count(reg) == 0) {
    return invalidArgument("handle was not returned by braidCommRegister (or is deregistered)");
  }
  if (reg->comm != comm) return invalidArgument("handle was registered with another communicator");
  release(reg);
  return Status::ok();
}



void dropRegistrations(braidComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<Registration*> mine;
  for (Registration* reg : registrations()) {
    if (reg->comm == comm) mine.push_back(reg);
  }
  for (Registration* reg : mine) release(reg);
}

}  // namespace braid
