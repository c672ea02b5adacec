// Independent reference for collective results: integer-valued inputs chosen
// so every result is exact in every datatype, their expected reductions in
// double, and conversions to and from each datatype written here, apart from
// the library's kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "braid/braid.h"

namespace braid::test {

inline size_t elemSize(braidDataType_t t) {
  switch (t) {
    case braidInt8: case braidUint8: return 1;
    case braidFloat16: case braidBfloat16: return 2;
    case braidInt32: case braidUint32: case braidFloat32: return 4;
    default: return 8;
  }
}

inline bool isSigned(braidDataType_t t) {
  return t != braidUint8 && t != braidUint32 && t != braidUint64;
}

// Exact for the small integers and halves used here.
inline uint16_t toHalf(double v) {
  float f = static_cast<float>(v);
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = (x >> 16) & 0x8000;
  if (f == 0) return sign;
  int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  return sign | static_cast<uint16_t>(exp << 10) | static_cast<uint16_t>((x >> 13) & 0x3ff);
}

inline double fromHalf(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  double mant = h & 0x3ff;
  double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -v : v;
}

inline void store(braidDataType_t t, void* base, size_t i, double v) {
  char* p = static_cast<char*>(base) + i * elemSize(t);
  switch (t) {
    case braidInt8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case braidUint8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case braidInt32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case braidUint32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    case braidInt64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case braidUint64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(p, &x, 8); break; }
    case braidFloat16: { uint16_t x = toHalf(v); std::memcpy(p, &x, 2); break; }
    case braidFloat32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case braidFloat64: std::memcpy(p, &v, 8); break;
    case braidBfloat16: {
      float f = static_cast<float>(v);
      uint32_t x;
      std::memcpy(&x, &f, 4);
      uint16_t b = static_cast<uint16_t>(x >> 16);  // exact values: no rounding needed
      std::memcpy(p, &b, 2);
      break;
    }
    default: break;
  }
}

inline double load(braidDataType_t t, const void* base, size_t i) {
  const char* p = static_cast<const char*>(base) + i * elemSize(t);
  switch (t) {
    case braidInt8: { int8_t x; std::memcpy(&x, p, 1); return x; }
    case braidUint8: { uint8_t x; std::memcpy(&x, p, 1); return x; }
    case braidInt32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case braidUint32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case braidInt64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case braidUint64: { uint64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case braidFloat16: { uint16_t x; std::memcpy(&x, p, 2); return fromHalf(x); }
    case braidFloat32: { float x; std::memcpy(&x, p, 4); return x; }
    case braidFloat64: { double x; std::memcpy(&x, p, 8); return x; }
    case braidBfloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      uint32_t x = static_cast<uint32_t>(b) << 16;
      float f;
      std::memcpy(&f, &x, 4);
      return f;
    }
    default: return 0;
  }
}

// Input of `rank` at element i for (type, op): small integers.
inline double inputValue(braidDataType_t t, braidRedOp_t op, int rank, int nranks, size_t i) {
  if (op == braidProd) return ((i + static_cast<size_t>(rank)) % (nranks + 3) == 0) ? 2 : 1;
  if (op == braidAvg) return static_cast<double>(i % 5 + (rank + i) % nranks);
  double v = static_cast<double>((rank * 7 + i * 3) % 11);
  return isSigned(t) ? v - 5 : v;
}

// For collectives that only move data: a value distinct for every (rank,
// index) within the range the type holds exactly, so misplaced blocks show.
inline double movementValue(braidDataType_t t, int rank, size_t i) {
  uint64_t range = 1ull << 24;
  switch (t) {
    case braidInt8: case braidUint8: case braidBfloat16: range = 256; break;
    case braidFloat16: range = 2048; break;
    default: break;
  }
  uint64_t v = (static_cast<uint64_t>(rank) * 1009 + i) % range;
  if (t == braidInt8) return static_cast<double>(v) - 128;
  return static_cast<double>(v);
}

inline double expectedValue(braidDataType_t t, braidRedOp_t op, int nranks, size_t i) {
  double acc = inputValue(t, op, 0, nranks, i);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(t, op, r, nranks, i);
    switch (op) {
      case braidSum: case braidAvg: acc += v; break;
      case braidProd: acc *= v; break;
      case braidMax: acc = v > acc ? v : acc; break;
      case braidMin: acc = v < acc ? v : acc; break;
      default: break;
    }
  }
  if (op == braidAvg) {
    bool integer = t != braidFloat16 && t != braidFloat32 && t != braidFloat64 && t != braidBfloat16;
    acc = integer ? std::floor(acc / nranks) : acc / nranks;
  }
  return acc;
}

}  // namespace braid::test
