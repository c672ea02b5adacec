// The premul-sum scaling (ReduceKernels::scale, exec/reduce.h) of both kernel builds: one
// rounding to nearest even per element, float8 saturating, integers wrapping. Expected bit
// patterns are worked out by hand from the formats.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "exec/reduce.h"
#include "exec/reduce_tables.h"

namespace {

// Which build a test runs: the generic one, then (where the CPU has it) the AVX2 one.
int gBuild = 0;

void scaleBuffer(void* dst, const void* src, size_t count, braidDataType_t type,
                 const void* scalar) {
  const braid::ReduceKernels* k = gBuild == 0 ? braid::reduceTableGeneric(type, braidSum)
                                              : braid::reduceTableAvx2(type, braidSum);
  k->scale(dst, src, count, scalar);
}

template <typename T>
T scaled(T x, T scalar, braidDataType_t type) {
  T out;
  scaleBuffer(&out, &x, 1, type, &scalar);
  return out;
}

// Runs `body` once per kernel build this CPU has.
template <typename F>
void forEachBuild(F body) {
  for (gBuild = 0; gBuild < (braid::cpuSupportsReduceAvx2() ? 2 : 1); ++gBuild) {
    SCOPED_TRACE(gBuild == 0 ? "generic build" : "avx2 build");
    body();
  }
}

bool isNan16(uint16_t b, braidDataType_t t) {
  return t == braidFloat16 ? (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0
                           : (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
}

TEST(Scale, ScalingByOneKeepsEveryValue) {
  forEachBuild([] {
    for (braidDataType_t t : {braidFloat16, braidBfloat16}) {
      const uint16_t one = t == braidFloat16 ? 0x3c00 : 0x3f80;
      for (uint32_t b = 0; b < 65536; ++b) {
        if (isNan16(static_cast<uint16_t>(b), t)) continue;
        ASSERT_EQ(scaled<uint16_t>(static_cast<uint16_t>(b), one, t), b) << "type " << t;
      }
    }
    for (braidDataType_t t : {braidFloat8e4m3, braidFloat8e5m2}) {
      const uint8_t one = t == braidFloat8e4m3 ? 0x38 : 0x3c;
      for (uint32_t b = 0; b < 256; ++b) {
        const uint32_t mag = b & 0x7f;
        if (t == braidFloat8e4m3 && mag == 0x7f) continue;  // nan
        if (t == braidFloat8e5m2 && mag >= 0x7c) continue;  // inf, nan
        ASSERT_EQ(scaled<uint8_t>(static_cast<uint8_t>(b), one, t), b) << "type " << t;
      }
    }
  });
}

TEST(Scale, RoundsToNearestEvenOnce) {
  forEachBuild([] {
    // half: (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 -> 1 + 2^-9
    EXPECT_EQ(scaled<uint16_t>(0x3c01, 0x3c01, braidFloat16), 0x3c02);
    // bfloat16: (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 -> 1 + 2^-6
    EXPECT_EQ(scaled<uint16_t>(0x3f81, 0x3f81, braidBfloat16), 0x3f82);
    // e4m3: 1.125 * 1.125 = 1.265625 -> 1.25; 1.125 * 1.5 = 1.6875, the tie of
    // 1.625 (odd mantissa) and 1.75 (even) -> 1.75
    EXPECT_EQ(scaled<uint8_t>(0x39, 0x39, braidFloat8e4m3), 0x3a);
    EXPECT_EQ(scaled<uint8_t>(0x39, 0x3c, braidFloat8e4m3), 0x3e);
    // e5m2: 1.25 * 1.25 = 1.5625 -> 1.5
    EXPECT_EQ(scaled<uint8_t>(0x3d, 0x3d, braidFloat8e5m2), 0x3e);
    // e4m3 subnormals: 2^-9 * 0.5 = 2^-10, a tie of 0 and 2^-9 -> 0
    EXPECT_EQ(scaled<uint8_t>(0x01, 0x30, braidFloat8e4m3), 0x00);
    EXPECT_EQ(scaled<uint8_t>(0x03, 0x30, braidFloat8e4m3), 0x02);  // 1.5 * 2^-9 -> 2 * 2^-9
  });
}

TEST(Scale, Float8SaturatesAndHalfOverflows) {
  forEachBuild([] {
    EXPECT_EQ(scaled<uint8_t>(0x7e, 0x40, braidFloat8e4m3), 0x7e);      // 448 * 2 -> 448
    EXPECT_EQ(scaled<uint8_t>(0xfe, 0x40, braidFloat8e4m3), 0xfe);      // -448 * 2 -> -448
    EXPECT_EQ(scaled<uint8_t>(0x7b, 0x40, braidFloat8e5m2), 0x7b);      // 57344 * 2 -> 57344
    EXPECT_EQ(scaled<uint16_t>(0x7bff, 0x4000, braidFloat16), 0x7c00);  // 65504 * 2 -> inf
  });
}

TEST(Scale, IntegersWrapAndWholeBuffersScale) {
  forEachBuild([] {
    EXPECT_EQ(scaled<int8_t>(100, 3, braidInt8), 44);     // 300 - 256
    EXPECT_EQ(scaled<uint8_t>(200, 2, braidUint8), 144);  // 400 - 256
    EXPECT_EQ(scaled<int32_t>(-7, 3, braidInt32), -21);
    EXPECT_EQ(scaled<uint64_t>(1ull << 63, 2, braidUint64), 0u);
    std::vector<double> in = {1.5, -2.0, 0.25}, out(3);
    const double s = -4.0;
    scaleBuffer(out.data(), in.data(), in.size(), braidFloat64, &s);
    EXPECT_EQ(out, (std::vector<double>{-6.0, 8.0, -1.0}));
  });
}

}  // namespace
