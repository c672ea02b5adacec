// braidMemAlloc / braidMemAllocDevice / braidMemFree and buffer registration.
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

#include "api/handle.h"
#include "core/logging.h"
#include "core/proc_maps.h"
#include "core/shared_alloc.h"
#include "cuda/device.h"
#include "transports/shm/shm_transport.h"

using namespace braid;

namespace {

constexpr size_t kPage = 4096;
// Smaller buffers are not shared: the windows copy them anyway (exec/window.cc).
constexpr size_t kShareMinBytes = 4 << 10;

struct Registration {
  braidComm* comm;
  void* buff;
  size_t size;
  void* shared;  // buff when registration shared its pages (SharedAllocations), or null
};

Transport& shmTransport() {
  static std::unique_ptr<Transport> shm = transport::shm::makeShmTransport();
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

extern "C" {

braidResult_t braidMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return finish(nullptr, invalidArgument("ptr is NULL"));
  if (size == 0) return finish(nullptr, invalidArgument("size is 0"));
  size_t rounded = (size + kPage - 1) / kPage * kPage;
  if (rounded < size) return finish(nullptr, invalidArgument("size is too large"));
  Expected<std::unique_ptr<SharedRegion>> region = shmTransport().createRegion(rounded);
  if (region.isOk()) {
    *ptr = region.value()->base();
    SharedAllocations::instance().add(std::move(region).value());
    return braidSuccess;
  }
  BRAID_INFO("braidMemAlloc: private memory instead of shared (%s)",
             region.status().message().c_str());
  void* p = nullptr;
  if (posix_memalign(&p, kPage, rounded) != 0) {
    return finish(nullptr, Status(braidSystemError, "braidMemAlloc: cannot allocate " +
                                                        std::to_string(size) + " bytes"));
  }
  std::lock_guard<std::mutex> lock(registryMutex());
  privateAllocations().insert(p);
  *ptr = p;
  return braidSuccess;
}

braidResult_t braidMemAllocDevice(void** ptr, size_t size) {
  if (ptr == nullptr) return finish(nullptr, invalidArgument("ptr is NULL"));
  if (size == 0) return finish(nullptr, invalidArgument("size is 0"));
  if (!cuda::compiled() || !cuda::hasDevice()) {
    return finish(nullptr, Status(braidUnhandledCudaError,
                                  "braidMemAllocDevice: " + cuda::deviceStatus().reason +
                                      " (braidMemAlloc gives host memory peers map)"));
  }
  Expected<void*> p = cuda::shareableAlloc(size);
  if (!p.isOk()) return finish(nullptr, p.status().withContext("braidMemAllocDevice: "));
  *ptr = p.value();
  return braidSuccess;
}

braidResult_t braidMemFree(void* ptr) {
  if (ptr == nullptr) return braidSuccess;
  if (SharedAllocations::instance().remove(ptr)) return braidSuccess;
  if (cuda::isShareable(ptr)) return finish(nullptr, cuda::shareableFree(ptr));
  std::lock_guard<std::mutex> lock(registryMutex());
  if (privateAllocations().erase(ptr) == 0) {
    return finish(nullptr,
                  invalidArgument("ptr was not returned by braidMemAlloc or braidMemAllocDevice "
                                  "(or was freed)"));
  }
  free(ptr);
  return braidSuccess;
}

braidResult_t braidCommRegister(const braidComm_t comm, void* buff, size_t size, void** handle) {
  if (comm == nullptr || !isLiveComm(comm)) {
    return finish(nullptr, invalidArgument("comm is not a live communicator"));
  }
  if (buff == nullptr) return finish(comm, invalidArgument("buff is NULL"));
  if (handle == nullptr) return finish(comm, invalidArgument("handle is NULL"));
  std::lock_guard<std::mutex> lock(registryMutex());
  auto* reg = new Registration{comm, buff, size, sharePages(buff, size)};
  registrations().insert(reg);
  *handle = reg;
  return braidSuccess;
}

braidResult_t braidCommDeregister(const braidComm_t comm, void* handle) {
  if (comm == nullptr || !isLiveComm(comm)) {
    return finish(nullptr, invalidArgument("comm is not a live communicator"));
  }
  if (handle == nullptr) return finish(comm, invalidArgument("handle is NULL"));
  std::lock_guard<std::mutex> lock(registryMutex());
  auto* reg = static_cast<Registration*>(handle);
  if (registrations().count(reg) == 0) {
    return finish(comm, invalidArgument(
                            "handle was not returned by braidCommRegister (or is deregistered)"));
  }
  if (reg->comm != comm) {
    return finish(comm, invalidArgument("handle was registered with another communicator"));
  }
  release(reg);
  return braidSuccess;
}

}  // extern "C"

namespace braid {

void dropRegistrations(braidComm* comm) {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<Registration*> mine;
  for (Registration* reg : registrations()) {
    if (reg->comm == comm) mine.push_back(reg);
  }
  for (Registration* reg : mine) release(reg);
}

}  // namespace braid
