// Reference codec for the OCP float8 types (e4m3, e5m2), written from the format's
// definition with ldexp/rint, apart from the kernels' bit tricks: decoding is exact, and
// encoding rounds to nearest even and saturates to the largest finite value (Inf too), as
// CUDA's __NV_SATFINITE conversions do. NaN encodes as 0x7f (with its sign).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace braid::test {

struct Float8Format {
  int mant;      // fraction bits
  int bias;      // exponent bias
  bool hasInf;   // e5m2: the top exponent is Inf/NaN; e4m3: only S.1111.111 is NaN
  int maxCode;   // the largest finite magnitude's bits
};
inline constexpr Float8Format kE4m3{3, 7, false, 0x7e};
inline constexpr Float8Format kE5m2{2, 15, true, 0x7b};

inline bool float8IsNan(uint8_t bits, const Float8Format& f) {
  int mag = bits & 0x7f;
  if (!f.hasInf) return mag == 0x7f;
  int topExp = (1 << (7 - f.mant)) - 1;
  return (mag >> f.mant) == topExp && (mag & ((1 << f.mant) - 1)) != 0;
}

inline double float8Decode(uint8_t bits, const Float8Format& f) {
  int e = (bits & 0x7f) >> f.mant;
  int m = bits & ((1 << f.mant) - 1);
  double sign = (bits & 0x80) ? -1.0 : 1.0;
  if (float8IsNan(bits, f)) return NAN;
  if (f.hasInf && e == (1 << (7 - f.mant)) - 1) return sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, 1 - f.bias - f.mant);
  return sign * std::ldexp(m + (1 << f.mant), e - f.bias - f.mant);
}

// `v` must be exact in a double (sums and products of two float8 values are).
inline uint8_t float8Encode(double v, const Float8Format& f) {
  uint8_t sign = std::signbit(v) ? 0x80 : 0;
  if (std::isnan(v)) return sign | 0x7f;
  double mag = std::fabs(v);
  double largest = float8Decode(static_cast<uint8_t>(f.maxCode), f);
  if (mag >= largest) return static_cast<uint8_t>(sign | f.maxCode);  // Inf too
  int minExp = 1 - f.bias;
  int e = mag == 0 ? minExp : std::max(std::ilogb(mag), minExp);
  double steps = std::rint(std::ldexp(mag, f.mant - e));
  if (std::ldexp(steps, e - f.mant) > largest) return static_cast<uint8_t>(sign | f.maxCode);
  return static_cast<uint8_t>(sign | (((e - minExp) << f.mant) + static_cast<int>(steps)));
}

}  // namespace braid::test
