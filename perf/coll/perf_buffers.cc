// The perf tools' host buffers: see perf_buffers.h.
#include "perf/coll/perf_buffers.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>


namespace braid::perf {
namespace {
constexpr size_t kAlign = 64;
constexpr size_t kPage = 4096;
}  // namespace

HostBuffer::~HostBuffer() {
  if (shared_) {
    (void)braidMemFree(data_);
  } else {
    std::free(data_);
  }
}

bool HostBuffer::allocate(size_t bytes, bool shared, braidComm_t registerWith, size_t unalign) {
  void* p = nullptr;
  shared_ = shared;
  bytes_ = bytes;
  unalign_ = unalign;
  size_t total = std::max(bytes + unalign, kAlign);
  if (registerWith != nullptr) {
    // Whole pages: braidCommRegister shares only those (runtime/shared_memory.cc).
    total = (total + kPage - 1) / kPage * kPage;
  }
  if (shared) {
    if (braidMemAlloc(&p, total) != braidSuccess) return false;
  } else if (posix_memalign(&p, registerWith != nullptr ? kPage : kAlign, total) != 0) {
    return false;
  }
  std::memset(p, 0, total);  // fault the pages in before timing
  data_ = static_cast<char*>(p);
  void* registration = nullptr;
  return registerWith == nullptr ||
         braidCommRegister(registerWith, p, total, &registration) == braidSuccess;
}

}  // namespace braid::perf
