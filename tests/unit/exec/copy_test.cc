// copyBytes (exec/copy.h): byte-exact with nothing outside [dst, dst + bytes) touched, at
// every distance from the source around the 4 KiB aliasing window it moves itself, and
// at the sizes around the window's limits; the window is where the header says.
#include "exec/copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace braid {
namespace {

// Page-aligned storage, so that a shift fixes the distance modulo 4 KiB.
struct Pages {
  explicit Pages(size_t bytes) {
    if (posix_memalign(&p, 4096, bytes) != 0) p = nullptr;
  }
  ~Pages() { free(p); }
  uint8_t* data() const { return static_cast<uint8_t*>(p); }
  void* p = nullptr;
};

void check(size_t bytes, size_t ahead) {
  constexpr size_t kGuard = 4096;
  Pages src(bytes + 4096), dst(bytes + 2 * kGuard + 4096);
  ASSERT_NE(src.data(), nullptr);
  ASSERT_NE(dst.data(), nullptr);
  const size_t dstBytes = bytes + 2 * kGuard + 4096;
  for (size_t i = 0; i < bytes; ++i) src.data()[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t i = 0; i < dstBytes; ++i) dst.data()[i] = 0xa5;
  uint8_t* d = dst.data() + kGuard + ahead;
  copyBytes(d, src.data(), bytes);
  size_t wrong = 0;
  for (size_t i = 0; i < bytes; ++i) wrong += d[i] != src.data()[i];
  EXPECT_EQ(wrong, 0u) << bytes << " bytes, dst " << ahead << " past src";
  for (uint8_t* p = dst.data(); p < d; ++p) ASSERT_EQ(*p, 0xa5) << "wrote before dst";
  for (uint8_t* p = d + bytes; p < dst.data() + dstBytes; ++p) {
    ASSERT_EQ(*p, 0xa5) << "wrote past dst + " << bytes;
  }
}

TEST(CopyBytes, ExactAtEveryDistanceAroundTheAliasingWindow) {
  for (size_t bytes : {0ul, 1ul, 63ul, 2047ul, 2048ul, 2049ul, 4096ul + 17, 131072ul + 5}) {
    for (size_t ahead = 0; ahead <= 72; ++ahead) check(bytes, ahead);
    for (size_t ahead : {4032ul, 4080ul, 4095ul}) check(bytes, ahead);
  }
}

TEST(CopyBytes, ExactAtTheWindowsSizeLimits) {
  for (size_t bytes : {(1ul << 20) - 1, 1ul << 20, (1ul << 20) + 65}) {
    for (size_t ahead : {0ul, 16ul, 63ul, 64ul}) check(bytes, ahead);
  }
}

TEST(CopyBytes, MovesItselfOnlyADestinationJustPastItsSource) {
  alignas(4096) static char page[2 * 4096 + 128];
#if defined(__x86_64__)
  EXPECT_TRUE(copyAvoidsMemcpy(page + 16, page, 4096));
  EXPECT_TRUE(copyAvoidsMemcpy(page + 4096 + 1, page, 128 << 10));
  EXPECT_TRUE(copyAvoidsMemcpy(page + 63, page, 2048));
#endif
  EXPECT_FALSE(copyAvoidsMemcpy(page + 4096, page, 128 << 10));  // same offset in the page
  EXPECT_FALSE(copyAvoidsMemcpy(page + 64, page, 128 << 10));
  EXPECT_FALSE(copyAvoidsMemcpy(page, page + 16, 128 << 10));  // behind: memcpy is fine
  EXPECT_FALSE(copyAvoidsMemcpy(page + 16, page, 2047));       // vectors, not rep movsb
  EXPECT_FALSE(copyAvoidsMemcpy(page + 16, page, 1 << 20));    // streamed
}

}  // namespace
}  // namespace braid
