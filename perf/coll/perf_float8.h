// float8 of the perf tools' check data: OCP e4m3 ("fn": no infinities, 0x7f is
// NaN, largest 448) and e5m2 (binary16's top byte), as NCCL's Float8e4m3 and
// Float8e5m2. Round to nearest even. Header-only; pure; thread-safe.
#pragma once

#include <cmath>
#include <cstdint>

#include "perf/coll/perf_util.h"

namespace braid::perf {

inline float floatFromE4m3(uint8_t b) {
  const int exp = (b >> 3) & 0xf;
  const int mant = b & 0x7;
  if (exp == 0xf && mant == 0x7) return std::nanf("");
  float v = exp == 0 ? std::ldexp(static_cast<float>(mant), -9)
                     : std::ldexp(static_cast<float>(8 + mant), exp - 10);
  return (b & 0x80) ? -v : v;
}

// Values past 448 saturate to 448 (NVIDIA's satfinite conversion).
inline uint8_t e4m3FromFloat(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return static_cast<uint8_t>(sign | 0x7f);
  float a = std::fabs(f);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7e);
  if (a < std::ldexp(1.0f, -6)) {  // subnormal: steps of 2^-9 (8 steps reach the first normal)
    return static_cast<uint8_t>(sign | static_cast<int>(std::nearbyint(std::ldexp(a, 9))));
  }
  int e = std::ilogb(a);
  int q = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - e)));  // 8..16
  if (q == 16) {
    q = 8;
    ++e;
  }
  if (e > 8) return static_cast<uint8_t>(sign | 0x7e);
  return static_cast<uint8_t>(sign | ((e + 7) << 3) | (q - 8));
}

inline float floatFromE5m2(uint8_t b) { return floatFromHalf(static_cast<uint16_t>(b << 8)); }

inline uint8_t e5m2FromFloat(float f) {
  uint16_t h = halfFromFloat(f);
  if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) return static_cast<uint8_t>((h >> 8) | 0x02);
  uint32_t hi = h >> 8;
  uint32_t lo = h & 0xffu;
  if (lo > 0x80u || (lo == 0x80u && (hi & 1u))) ++hi;  // may carry into the exponent: fine
  return static_cast<uint8_t>(hi);
}

}  // namespace braid::perf
