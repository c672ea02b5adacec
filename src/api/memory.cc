// braidMemAlloc / braidMemFree and buffer registration.
//
// First version: page-aligned private memory, so every call that takes it
// works; making it mappable by peers (shared memory the direct algorithms
// read in place) is the next step of issue 5.
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "api/handle.h"

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

}  // namespace

extern "C" {

braidResult_t braidMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return finish(nullptr, invalidArgument("ptr is NULL"));
  if (size == 0) return finish(nullptr, invalidArgument("size is 0"));
  void* p = nullptr;
  size_t rounded = (size + kPage - 1) / kPage * kPage;
  if (rounded < size || posix_memalign(&p, kPage, rounded) != 0) {
    return finish(nullptr, Status(braidSystemError, "braidMemAlloc: cannot allocate " +
                                                        std::to_string(size) + " bytes"));
  }
  *ptr = p;
  return braidSuccess;
}

braidResult_t braidMemFree(void* ptr) {
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
