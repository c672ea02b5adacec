// Copies into memory that another core reads next (shared windows, shm FIFO
// slots), with non-temporal stores from kStreamMinBytes up.
//
// Why: a peer that read a line last round holds it in its cache; a plain store
// must first take the line back (a read-for-ownership and an invalidation per
// line). Below about 16 KiB the store buffer hides that and the plain copy wins,
// hence kStreamMinBytes. Streaming also stays within 2x of plain stores where the
// vCPUs' placement favours them, while plain stores can be several times slower.
// Ends with a store fence, so a release store that follows (a flag, a FIFO
// head) publishes the data.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace braid {

// Across cores (braid-micro crossCoreCopy): 1 MiB 483 us plain, 42 us streamed; 8 KiB plain 0.48 us.
constexpr size_t kStreamMinBytes = 24 << 10;
// Outputs from this size up (a call's whole output, in private memory) are written with
// streaming stores too: they outgrow the caches anyway, and a plain store would first read
// every line from memory.
constexpr size_t kStreamOutMinBytes = 4 << 20;

#if defined(__x86_64__)
// Copies `lines` 64-byte lines with 16-byte loads, into dst with streaming (kStreamed) or
// plain stores (exec/copy.h).
template <bool kStreamed>
inline void moveLines(char* d, const char* s, size_t lines) {
  for (size_t i = 0; i < lines; ++i, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    if constexpr (kStreamed) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d), a);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16), b);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 32), c);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 48), e);
    }
  }
}
#endif

// Always streams (callers that split one large copy into small blocks).
inline void streamLines(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  // Plain stores up to the first 64-byte line of dst, streamed lines, plain tail.
  const size_t head = std::min<size_t>(bytes, (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  moveLines<true>(d, s, bytes / 64);
  std::memcpy(d + bytes / 64 * 64, s + bytes / 64 * 64, bytes % 64);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Streams from kStreamMinBytes up, copies plainly below.
inline void streamCopy(void* dst, const void* src, size_t bytes) {
  if (bytes < kStreamMinBytes) {
    std::memcpy(dst, src, bytes);
  } else {
    streamLines(dst, src, bytes);
  }
}

}  // namespace braid
