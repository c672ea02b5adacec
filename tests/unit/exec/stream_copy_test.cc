// streamCopy / streamLines (exec/stream_copy.h): byte-exact at every
// alignment of source and destination and every length around the line and
// threshold boundaries, and nothing outside [dst, dst + bytes) is touched.
#include "exec/stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace braid {
namespace {

void check(size_t bytes, size_t srcShift, size_t dstShift, bool always) {
  constexpr size_t kGuard = 128;
  std::vector<uint8_t> src(bytes + 256), dst(bytes + 256 + 2 * kGuard);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (uint8_t& b : dst) b = 0xa5;
  uint8_t* d = dst.data() + kGuard + dstShift;
  const uint8_t* s = src.data() + srcShift;
  if (always) {
    streamLines(d, s, bytes);
  } else {
    streamCopy(d, s, bytes);
  }
  size_t wrong = 0;
  for (size_t i = 0; i < bytes; ++i) wrong += d[i] != s[i];
  EXPECT_EQ(wrong, 0u) << bytes << " bytes, src +" << srcShift << ", dst +" << dstShift;
  for (uint8_t* p = dst.data(); p < d; ++p) ASSERT_EQ(*p, 0xa5) << "wrote before dst";
  for (uint8_t* p = d + bytes; p < dst.data() + dst.size(); ++p) {
    ASSERT_EQ(*p, 0xa5) << "wrote past dst + " << bytes;
  }
}

TEST(StreamCopy, ExactAtEveryAlignmentAndLength) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000},
                       kStreamMinBytes - 1, kStreamMinBytes, kStreamMinBytes + 77,
                       size_t{1} << 20}) {
    for (size_t srcShift : {0, 1, 8, 63}) {
      for (size_t dstShift : {0, 3, 16, 60}) {
        check(bytes, srcShift, dstShift, false);
        check(bytes, srcShift, dstShift, true);
      }
    }
  }
}

}  // namespace
}  // namespace braid
