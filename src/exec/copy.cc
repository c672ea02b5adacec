#include "exec/copy.h"

#include <cstdint>
#include <cstring>

#include "exec/stream_copy.h"

namespace braid {
namespace {

// The sizes glibc copies with `rep movsb` on this class of machine: above them it streams
// or loops, below them it moves vectors; neither minds the distance.
constexpr size_t kAliasMinBytes = 2 << 10;
constexpr size_t kAliasMaxBytes = 1 << 20;

}  // namespace

bool copyAvoidsMemcpy(const void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  const uintptr_t ahead =
      (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  return bytes >= kAliasMinBytes && bytes < kAliasMaxBytes && ahead != 0 && ahead < 64;
#else
  return false;
#endif
}

void copyBytes(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  if (copyAvoidsMemcpy(dst, src, bytes)) {
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    const size_t whole = bytes / 64 * 64;
    moveLines<false>(d, s, bytes / 64);
    std::memcpy(d + whole, s + whole, bytes % 64);
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

}  // namespace braid
