#include "compat/nccl/scale.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace braid::nccl {
namespace {

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf, nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exp = 113;
    while ((man & 0x400u) == 0) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t floatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (absx >= 0x477ff000u) return sign | 0x7c00u;  // rounds past the largest half
  if (absx < 0x38800000u) {                        // half subnormal or zero
    const float a = std::bit_cast<float>(absx);
    // Scaled so the half's last bit is one; the float addition rounds to even.
    const float scaled = a * 16777216.0f;  // 2^24
    return sign | static_cast<uint16_t>(__builtin_nearbyintf(scaled));
  }
  const uint32_t exp = (absx >> 23) - 112;
  uint32_t man = absx & 0x7fffffu;
  uint32_t h = (exp << 10) | (man >> 13);
  const uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // nearest, ties to even
  return sign | static_cast<uint16_t>(h);
}

float bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  return std::bit_cast<float>(bits);
}

uint16_t floatToBf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // nan
  x += 0x7fffu + ((x >> 16) & 1u);  // nearest, ties to even
  return static_cast<uint16_t>(x >> 16);
}

// A float8 format: e4m3 (no infinities, 448 the largest) or e5m2 (IEEE-like,
// 57344 the largest). Rounding saturates to the largest finite value, as
// CUDA's SATFINITE conversions (and Braid's float8 reductions) do.
struct Fp8 {
  int manBits;
  int bias;
  float max;
  uint8_t maxBits;
  bool ieee;  // e5m2: exponent all ones is inf/nan
};
constexpr Fp8 kE4m3{3, 7, 448.0f, 0x7e, false};
constexpr Fp8 kE5m2{2, 15, 57344.0f, 0x7b, true};

template <const Fp8& F>
float fp8ToFloat(uint8_t b) {
  const int expBits = 7 - F.manBits;
  const int exp = (b >> F.manBits) & ((1 << expBits) - 1);
  const int man = b & ((1 << F.manBits) - 1);
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  if (F.ieee && exp == (1 << expBits) - 1) return man == 0 ? sign * INFINITY : NAN;
  if (!F.ieee && (b & 0x7f) == 0x7f) return NAN;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(man), 1 - F.bias - F.manBits);
  return sign * std::ldexp(1.0f + std::ldexp(static_cast<float>(man), -F.manBits), exp - F.bias);
}

template <const Fp8& F>
uint8_t floatToFp8(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f)) return sign | 0x7f;
  const float a = std::fabs(f);
  if (a >= F.max) return sign | F.maxBits;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  --e;                // a = m' * 2^e, m' in [1, 2)
  const int minExp = 1 - F.bias;
  // The step between neighbours at a's exponent (subnormals share the smallest).
  const int quantum = std::max(e, minExp) - F.manBits;
  // Exact in float; nearbyint rounds ties to even.
  const uint32_t q = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, -quantum)));
  // q counts quanta: below 2^(manBits+1) it is (implicit one + mantissa) or a
  // subnormal mantissa; rounding up to the next binade carries into the exponent.
  uint32_t bits;
  if (e < minExp) {
    bits = q;  // subnormal (q == 2^manBits is the smallest normal's pattern)
  } else {
    uint32_t exp = static_cast<uint32_t>(e + F.bias);
    uint32_t man = q - (1u << F.manBits);
    if (man == (1u << F.manBits)) {
      ++exp;
      man = 0;
    }
    bits = (exp << F.manBits) | man;
  }
  if (bits > F.maxBits) bits = F.maxBits;
  return sign | static_cast<uint8_t>(bits);
}

template <float (*ToFloat)(uint8_t), uint8_t (*FromFloat)(float)>
void scale8(void* dst, const void* src, size_t count, const void* scalar) {
  const float s = ToFloat(*static_cast<const uint8_t*>(scalar));
  const uint8_t* in = static_cast<const uint8_t*>(src);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < count; ++i) out[i] = FromFloat(ToFloat(in[i]) * s);
}

template <typename T, typename Wide>
void scaleAs(void* dst, const void* src, size_t count, const void* scalar) {
  T s;
  std::memcpy(&s, scalar, sizeof(T));
  const T* in = static_cast<const T*>(src);
  T* out = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) {
    out[i] = static_cast<T>(static_cast<Wide>(in[i]) * static_cast<Wide>(s));
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void scale16(void* dst, const void* src, size_t count, const void* scalar) {
  uint16_t raw;
  std::memcpy(&raw, scalar, 2);
  const float s = ToFloat(raw);
  const uint16_t* in = static_cast<const uint16_t*>(src);
  uint16_t* out = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < count; ++i) out[i] = FromFloat(ToFloat(in[i]) * s);
}

}  // namespace

size_t elementSize(braidDataType_t datatype) {
  // Indexed by Braid's datatype values (NCCL's): int8, uint8, int32, uint32,
  // int64, uint64, float16, float32, float64, bfloat16, float8 e4m3, e5m2.
  static constexpr size_t kSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  static_assert(sizeof(kSizes) / sizeof(kSizes[0]) == braidNumTypes, "a datatype has no size");
  return kSizes[datatype];
}

void scaleBuffer(void* dst, const void* src, size_t count, braidDataType_t datatype,
                 const void* scalar) {
  switch (datatype) {
    // Integers multiply in unsigned 64-bit arithmetic: wrapping, as NCCL's do.
    case braidInt8: scaleAs<int8_t, uint64_t>(dst, src, count, scalar); break;
    case braidUint8: scaleAs<uint8_t, uint64_t>(dst, src, count, scalar); break;
    case braidInt32: scaleAs<int32_t, uint64_t>(dst, src, count, scalar); break;
    case braidUint32: scaleAs<uint32_t, uint64_t>(dst, src, count, scalar); break;
    case braidInt64: scaleAs<int64_t, uint64_t>(dst, src, count, scalar); break;
    case braidUint64: scaleAs<uint64_t, uint64_t>(dst, src, count, scalar); break;
    case braidFloat16: scale16<halfToFloat, floatToHalf>(dst, src, count, scalar); break;
    case braidFloat32: scaleAs<float, float>(dst, src, count, scalar); break;
    case braidFloat64: scaleAs<double, double>(dst, src, count, scalar); break;
    case braidBfloat16: scale16<bf16ToFloat, floatToBf16>(dst, src, count, scalar); break;
    case braidFloat8e4m3:
      scale8<fp8ToFloat<kE4m3>, floatToFp8<kE4m3>>(dst, src, count, scalar);
      break;
    case braidFloat8e5m2:
      scale8<fp8ToFloat<kE5m2>, floatToFp8<kE5m2>>(dst, src, count, scalar);
      break;
    default: break;
  }
}

}  // namespace braid::nccl
