// braidMemAlloc / braidMemFree and buffer registration.
//
// braidMemAlloc returns a shared-memory region (core/shared_alloc.h) that
// peers on the node map by name, so collectives on it skip the copy into the
// shared window. Where /dev/shm cannot hold it, private memory (logged): every
// call still works, only without that shortcut.
#include <cstdlib>
#include <mutex>
#include <set>

#include "api/handle.h"
#include "core/logging.h"
#include "core/shared_alloc.h"
#include "transports/shm/shm_transport.h"

using namespace braid;

namespace {

constexpr size_t kPage = 4096;

struct Registration {
  braidComm* comm;
  void* buff;
  size_t size;
};

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
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
  static std::unique_ptr<Transport> shm = transport::shm::makeShmTransport();
  Expected<std::unique_ptr<SharedRegion>> region = shm->createRegion(rounded);
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

braidResult_t braidMemFree(void* ptr) {
  if (ptr == nullptr) return braidSuccess;
  if (SharedAllocations::instance().remove(ptr)) return braidSuccess;
  std::lock_guard<std::mutex> lock(registryMutex());
  if (privateAllocations().erase(ptr) == 0) {
    return finish(nullptr, invalidArgument("ptr was not returned by braidMemAlloc (or was freed)"));
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
  *handle = new Registration{comm, buff, size};
  return braidSuccess;
}

braidResult_t braidCommDeregister(const braidComm_t comm, void* handle) {
  if (comm == nullptr || !isLiveComm(comm)) {
    return finish(nullptr, invalidArgument("comm is not a live communicator"));
  }
  if (handle == nullptr) return finish(comm, invalidArgument("handle is NULL"));
  std::lock_guard<std::mutex> lock(registryMutex());
  auto* reg = static_cast<Registration*>(handle);
  if (reg->comm != comm) {
    return finish(comm, invalidArgument("handle was registered with another communicator"));
  }
  delete reg;
  return braidSuccess;
}

}  // extern "C"
