// C entry points for memory peers map and buffer registration: argument checks here,
// the memory itself in the runtime (runtime/shared_memory.h).
#include "braid/braid.h"
#include "runtime/last_error.h"
#include "runtime/live_handles.h"
#include "runtime/shared_memory.h"

using namespace braid;

extern "C" {

braidResult_t braidMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return finish(nullptr, invalidArgument("ptr is NULL"));
  if (size == 0) return finish(nullptr, invalidArgument("size is 0"));
  Expected<void*> p = allocShared(size);
  if (!p.isOk()) return finish(nullptr, p.status());
  *ptr = p.value();
  return braidSuccess;
}

braidResult_t braidMemAllocDevice(void** ptr, size_t size) {
  if (ptr == nullptr) return finish(nullptr, invalidArgument("ptr is NULL"));
  if (size == 0) return finish(nullptr, invalidArgument("size is 0"));
  Expected<void*> p = allocDeviceShared(size);
  if (!p.isOk()) return finish(nullptr, p.status());
  *ptr = p.value();
  return braidSuccess;
}

braidResult_t braidMemFree(void* ptr) {
  if (ptr == nullptr) return braidSuccess;
  return finish(nullptr, freeShared(ptr));
}

braidResult_t braidCommRegister(const braidComm_t comm, void* buff, size_t size, void** handle) {
  if (comm == nullptr || !isLiveComm(comm)) {
    return finish(nullptr, invalidArgument("comm is not a live communicator"));
  }
  if (buff == nullptr) return finish(comm, invalidArgument("buff is NULL"));
  if (handle == nullptr) return finish(comm, invalidArgument("handle is NULL"));
  *handle = registerBuffer(comm, buff, size);
  return braidSuccess;
}

braidResult_t braidCommDeregister(const braidComm_t comm, void* handle) {
  if (comm == nullptr || !isLiveComm(comm)) {
    return finish(nullptr, invalidArgument("comm is not a live communicator"));
  }
  if (handle == nullptr) return finish(comm, invalidArgument("handle is NULL"));
  return finish(comm, deregisterBuffer(comm, handle));
}

}  // extern "C"
