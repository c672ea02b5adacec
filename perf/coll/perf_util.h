// Pure helpers of the perf tools: datatype and op tables, size parsing and
// stepping, bus-bandwidth factors, float16/bfloat16 conversion, table
// formatting. Header-only so that unit tests need no library; nothing here
// talks to a communicator. Stateless; thread-safe.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "braid/braid.h"

namespace braid::perf {

// ---------------------------------------------------------------- datatypes

struct TypeInfo {
  braidDataType_t type;
  const char* name;   // as nccl-tests prints it
  const char* alias;  // the other accepted spelling ("" when none)
  size_t size;
  bool isSigned;
  bool isFloat;
  // Largest magnitude up to which every integer is exact in the type (and no
  // integer type wraps): data kept under it reduce exactly in any order.
  double exactLimit;
};

inline constexpr TypeInfo kTypes[] = {
    {braidInt8, "int8", "char", 1, true, false, 127.0},
    {braidUint8, "uint8", "", 1, false, false, 255.0},
    {braidInt32, "int32", "int", 4, true, false, 2147483647.0},
    {braidUint32, "uint32", "", 4, false, false, 4294967295.0},
    {braidInt64, "int64", "", 8, true, false, 9007199254740992.0},
    {braidUint64, "uint64", "", 8, false, false, 9007199254740992.0},
    {braidFloat16, "half", "float16", 2, true, true, 2048.0},
    {braidFloat32, "float", "float32", 4, true, true, 16777216.0},
    {braidFloat64, "double", "float64", 8, true, true, 9007199254740992.0},
    {braidBfloat16, "bfloat16", "bf16", 2, true, true, 256.0},
    {braidFloat8e4m3, "f8e4m3", "float8e4m3", 1, true, true, 16.0},
    {braidFloat8e5m2, "f8e5m2", "float8e5m2", 1, true, true, 8.0},
};

// The entry for a valid datatype (callers validate; an invalid one gets int8's).
inline const TypeInfo& typeInfo(braidDataType_t type) {
  for (const TypeInfo& t : kTypes) {
    if (t.type == type) return t;
  }
  return kTypes[0];
}

// "float", "float32", ... or "all" (every type, in enum order). False on an
// unknown name; *out is set only on success.
inline bool parseTypes(const char* name, std::vector<braidDataType_t>* out) {
  std::vector<braidDataType_t> types;
  for (const TypeInfo& t : kTypes) {
    if (std::strcmp(name, "all") == 0 || std::strcmp(name, t.name) == 0 ||
        (t.alias[0] != '\0' && std::strcmp(name, t.alias) == 0)) {
      types.push_back(t.type);
    }
  }
  if (types.empty()) return false;
  *out = std::move(types);
  return true;
}

// ---------------------------------------------------------------- ops

// nccl-tests' "mulsum": a premul-sum op (braidRedOpCreatePreMulSum) the tool makes per
// datatype, each rank's scalar mulSumScalar(rank). Its value here only names the op: the
// call passes the op the communicator made.
inline constexpr braidRedOp_t kMulSum = braidNumOps;
inline constexpr int kNumPerfOps = braidNumOps + 1;
inline constexpr const char* kOpNames[] = {"sum", "prod", "max", "min", "avg", "mulsum"};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == kNumPerfOps);
inline int64_t mulSumScalar(int rank) { return 1 + rank % 2; }

inline const char* opName(braidRedOp_t op) {
  int i = static_cast<int>(op);
  return (i >= 0 && i < kNumPerfOps) ? kOpNames[i] : "none";
}

// "sum", "prod", "max", "min", "avg", "mulsum" or "all". False on an unknown name.
inline bool parseOps(const char* name, std::vector<braidRedOp_t>* out) {
  std::vector<braidRedOp_t> ops;
  for (int i = 0; i < kNumPerfOps; ++i) {
    if (std::strcmp(name, "all") == 0 || std::strcmp(name, kOpNames[i]) == 0) {
      ops.push_back(static_cast<braidRedOp_t>(i));
    }
  }
  if (ops.empty()) return false;
  *out = std::move(ops);
  return true;
}

// ---------------------------------------------------------------- sizes

// "4096", "64K", "32M", "1G" (binary multiples, upper or lower case, as
// nccl-tests). False on anything else, including overflow and negatives.
inline bool parseSize(const char* text, size_t* out) {
  if (text == nullptr || *text == '\0' || *text == '-' || *text == '+') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || errno == ERANGE) return false;
  unsigned long long mult = 1;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      mult = 1ULL << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      mult = 1ULL << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      mult = 1ULL << 30;
      ++end;
      break;
    default:
      return false;
  }
  if (*end != '\0') return false;
  if (value > SIZE_MAX / mult) return false;
  *out = static_cast<size_t>(value * mult);
  return true;
}

// The byte sizes nccl-tests visits: from min to max, multiplying by factor
// when it is above 1, else adding increment. A step that would not grow the
// size (factor on 0, increment 0) or would overflow ends the list.
inline std::vector<size_t> sizeSteps(size_t minBytes, size_t maxBytes, size_t factor,
                                     size_t increment) {
  std::vector<size_t> sizes;
  for (size_t size = minBytes; size <= maxBytes;) {
    sizes.push_back(size);
    size_t next;
    if (factor > 1) {
      if (size > SIZE_MAX / factor) break;
      next = size * factor;
    } else {
      if (size > SIZE_MAX - increment) break;
      next = size + increment;
    }
    if (next <= size) break;
    size = next;
  }
  return sizes;
}

// ---------------------------------------------------------------- bandwidth

// busbw = algbw x factor: what each rank's busiest link carries, relative to S.
inline double allReduceBusBwFactor(int nranks) {
  return nranks > 0 ? 2.0 * (nranks - 1) / nranks : 0.0;
}
// all-gather, reduce-scatter, all-to-all, gather, scatter (S = the whole array).
inline double gatherBusBwFactor(int nranks) {
  return nranks > 0 ? static_cast<double>(nranks - 1) / nranks : 0.0;
}
// broadcast, reduce, sendrecv, hypercube.
inline double unitBusBwFactor(int /*nranks*/) { return 1.0; }

// GB/s (1e9 bytes per second) of `bytes` moved in `seconds`; 0 when either is 0.
inline double algBandwidth(size_t bytes, double seconds) {
  return seconds > 0.0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

// How -a combines per-rank times: the result of the all-reduce the harness ran.
enum class AverageMode { kRankZero = 0, kMean = 1, kMin = 2, kMax = 3 };

// ---------------------------------------------------------------- 16-bit floats

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE binary16, rounded to nearest even; overflow goes to infinity, NaN stays
// a (quiet) NaN with its sign, tiny values become subnormals or zero.
inline uint16_t halfFromFloat(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  int exp = static_cast<int>(absx >> 23) - 127;
  if (exp < -14) {               // subnormal half (or zero): value = mant * 2^-24
    if (exp < -25) return sign;  // below half the smallest subnormal (2^-25)
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;  // 24 bits, value mant*2^(exp-23)
    int shift = -exp - 1;                            // to units of 2^-24: (exp-23)+24 = exp+1
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into exponent: fine
  return static_cast<uint16_t>(sign | h);
}

inline float floatFromHalf(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

// bfloat16 (the top half of a float32), rounded to nearest even; NaN stays NaN.
inline uint16_t bf16FromFloat(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16);
}

inline float floatFromBf16(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }

// ---------------------------------------------------------------- formatting

// nccl-tests' number format: `width` wide, with as many decimals (2, 1, 0) as
// fit, else in exponent form.
inline std::string formatFloat(double value, int width) {
  char buf[64];
  for (int decimals = 2; decimals >= 0; --decimals) {
    if (std::snprintf(buf, sizeof buf, "%*.*f", width, decimals, value) <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return buf;
}

}  // namespace braid::perf
