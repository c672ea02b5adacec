// ncclMemAlloc/Free and buffer and window registration, over Braid's
// braidMemAlloc/Free and braidCommRegister/Deregister.
#include <algorithm>
#include <cstdint>

#include "compat/nccl/compat.h"

namespace braid::nccl {

// Frees the windows a communicator still holds (at destroy or abort).
void freeWindows(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->mu);
  for (ncclWindow_t w : comm->windows) delete w;
  comm->windows.clear();
}

}  // namespace braid::nccl

using namespace braid::nccl;

extern "C" {

// A CUDA program (its runtime loaded, a device present) gets device memory peers can map
// (cuMem, shareable by file descriptor), as from NCCL; otherwise braidMemAlloc's host
// memory, which peers on the node map (an extension). braidMemFree frees either.
ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(nullptr, ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  if (size == 0) return fail(nullptr, ncclInvalidArgument, "ncclMemAlloc: size is 0");
  if (cudaProgramHasDevice()) return fromBraid(nullptr, braidMemAllocDevice(ptr, size));
  return fromBraid(nullptr, braidMemAlloc(ptr, size));
}

ncclResult_t ncclMemFree(void* ptr) { return fromBraid(nullptr, braidMemFree(ptr)); }

// NCCL 2.28's device API (nccl_device.h): communicators that kernels use directly.
// Braid has none; a caller (PyTorch's symmetric memory) learns so and falls back.
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void* /*requirements*/, void* devComm) {
  (void)devComm;
  return fail(comm, ncclInvalidUsage,
              "ncclDevCommCreate: Braid's NCCL has no device-side communicators "
              "(NCCL's device API); use the host API");
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void* devComm) {
  (void)devComm;
  return fail(comm, ncclInvalidUsage,
              "ncclDevCommDestroy: Braid's NCCL has no device-side communicators");
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  CommGuard guard(comm, "ncclCommRegister");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r);
  if (inner == nullptr) return r;
  return fromBraid(comm, braidCommRegister(inner, buff, size, handle));
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  CommGuard guard(comm, "ncclCommDeregister");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r, /*allowRevoked=*/true);
  if (inner == nullptr) return r;
  return fromBraid(comm, braidCommDeregister(inner, handle));
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags) {
  CommGuard guard(comm, "ncclCommWindowRegister");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r);
  if (inner == nullptr) return r;
  if (win == nullptr) return fail(comm, ncclInvalidArgument, "ncclCommWindowRegister: win is NULL");
  if (buff == nullptr || size == 0) {
    return fail(comm, ncclInvalidArgument, "ncclCommWindowRegister: buff is NULL or size is 0");
  }
  if ((winFlags & ~NCCL_WIN_COLL_SYMMETRIC) != 0) {
    return fail(comm, ncclInvalidArgument,
                "ncclCommWindowRegister: winFlags " + std::to_string(winFlags) +
                    " is not NCCL_WIN_DEFAULT or NCCL_WIN_COLL_SYMMETRIC");
  }
  if ((winFlags & NCCL_WIN_COLL_SYMMETRIC) != 0 &&
      reinterpret_cast<uintptr_t>(buff) % NCCL_WIN_REQUIRED_ALIGNMENT != 0) {
    return fail(comm, ncclInvalidArgument,
                "ncclCommWindowRegister: a symmetric window must start on a " +
                    std::to_string(NCCL_WIN_REQUIRED_ALIGNMENT) +
                    "-byte boundary (ncclMemAlloc's memory does)");
  }
  void* registration = nullptr;
  if ((r = fromBraid(comm, braidCommRegister(inner, buff, size, &registration))) != ncclSuccess) {
    return r;
  }
  auto* w = new ncclWindow_vidmem{comm, buff, size, winFlags, registration};
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    comm->windows.push_back(w);
  }
  *win = w;
  return ncclSuccess;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  CommGuard guard(comm, "ncclCommWindowDeregister");
  if (!guard.ok()) return guard.result();
  ncclResult_t r;
  braidComm_t inner = guard.ready(&r, /*allowRevoked=*/true);
  if (inner == nullptr) return r;
  {
    std::lock_guard<std::mutex> lock(comm->mu);
    auto it = std::find(comm->windows.begin(), comm->windows.end(), win);
    if (it == comm->windows.end()) win = nullptr;
    if (win != nullptr) comm->windows.erase(it);
  }
  if (win == nullptr) {
    return fail(comm, ncclInvalidArgument,
                "ncclCommWindowDeregister: win is not a window registered on this communicator");
  }
  r = fromBraid(comm, braidCommDeregister(inner, win->registration));
  delete win;
  return r;
}

}  // extern "C"

BRAID_NCCL_ALIAS(ncclMemAlloc)
BRAID_NCCL_ALIAS(ncclMemFree)
BRAID_NCCL_ALIAS(ncclDevCommCreate)
BRAID_NCCL_ALIAS(ncclDevCommDestroy)
BRAID_NCCL_ALIAS(ncclCommRegister)
BRAID_NCCL_ALIAS(ncclCommDeregister)
BRAID_NCCL_ALIAS(ncclCommWindowRegister)
BRAID_NCCL_ALIAS(ncclCommWindowDeregister)
