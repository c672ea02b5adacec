// Memory peers on the node map: host allocations in shared memory (private memory where
// /dev/shm cannot hold them), shareable device memory, and registered buffers whose
// private pages are re-backed by shared memory while registered.
#pragma once

#include <cstddef>

#include "core/status.h"

struct braidComm;

namespace braid {

// braidMemAlloc's memory (size > 0), braidMemAllocDevice's, and braidMemFree of either.
Expected<void*> allocShared(size_t size);
Expected<void*> allocDeviceShared(size_t size);
Status freeShared(void* ptr);

// braidCommRegister's handle for [buff, buff + size) on comm (its pages shared where they
// can be), braidCommDeregister, and every registration of comm ended (destroy and abort).
void* registerBuffer(braidComm* comm, void* buff, size_t size);
Status deregisterBuffer(braidComm* comm, void* handle);
void dropRegistrations(braidComm* comm);

}  // namespace braid
