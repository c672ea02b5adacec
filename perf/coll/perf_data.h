// Check data of the perf tools: integer-valued inputs whose reductions are
// exact in every datatype, in any order, and the expected results computed
// independently of the library (plain loops in int64, one conversion to the
// datatype at the end). Header-only; stateless; thread-safe.
//
// Why the values are safe: every partial result of a reduction over the ranks
// stays an integer of magnitude <= TypeInfo::exactLimit, so each float16,
// bfloat16, float or double operation is exact and no integer type wraps.
//   sum, max, min: values in [-m, m] (signed) or [0, m] (unsigned) with
//                  m = min(exactLimit / nranks, 2^20): |any partial sum| <= nranks*m.
//   prod:          1 almost everywhere, one rank contributes 2 at every third
//                  element, signed types get -1 at some positions: |product| <= 2.
//   avg:           the same value on every rank, so sum = nranks*v is exact and
//                  sum / nranks = v whether the library divides once or
//                  pre-multiplies, in integer or floating arithmetic.
//   mulsum:        sum's values bounded as for 2 * nranks ranks, each rank's scaled by
//                  mulSumScalar(rank) <= 2 before the sum: |any partial sum| <= 2*nranks*m.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "perf/coll/perf_float8.h"
#include "perf/coll/perf_util.h"

namespace braid::perf {

// Stores the integer v (already in range) as element i of a `type` array.
inline void storeElement(braidDataType_t type, void* buf, size_t i, int64_t v) {
  switch (type) {
    case braidInt8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case braidUint8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case braidInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case braidUint32:
      static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v);
      break;
    case braidInt64:
      static_cast<int64_t*>(buf)[i] = v;
      break;
    case braidUint64:
      static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v);
      break;
    case braidFloat16:
      static_cast<uint16_t*>(buf)[i] = halfFromFloat(static_cast<float>(v));
      break;
    case braidFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case braidFloat64:
      static_cast<double*>(buf)[i] = static_cast<double>(v);
      break;
    case braidBfloat16:
      static_cast<uint16_t*>(buf)[i] = bf16FromFloat(static_cast<float>(v));
      break;
    case braidFloat8e4m3:
      static_cast<uint8_t*>(buf)[i] = e4m3FromFloat(static_cast<float>(v));
      break;
    case braidFloat8e5m2:
      static_cast<uint8_t*>(buf)[i] = e5m2FromFloat(static_cast<float>(v));
      break;
    default:
      break;
  }
}

// Element i of a `type` array, widened to double (exact for every check value;
// NaN stays NaN so it never compares equal).
inline double loadElement(braidDataType_t type, const void* buf, size_t i) {
  switch (type) {
    case braidInt8:
      return static_cast<const int8_t*>(buf)[i];
    case braidUint8:
      return static_cast<const uint8_t*>(buf)[i];
    case braidInt32:
      return static_cast<const int32_t*>(buf)[i];
    case braidUint32:
      return static_cast<const uint32_t*>(buf)[i];
    case braidInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case braidUint64:
      return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case braidFloat16:
      return floatFromHalf(static_cast<const uint16_t*>(buf)[i]);
    case braidFloat32:
      return static_cast<const float*>(buf)[i];
    case braidFloat64:
      return static_cast<const double*>(buf)[i];
    case braidBfloat16:
      return floatFromBf16(static_cast<const uint16_t*>(buf)[i]);
    case braidFloat8e4m3:
      return floatFromE4m3(static_cast<const uint8_t*>(buf)[i]);
    case braidFloat8e5m2:
      return floatFromE5m2(static_cast<const uint8_t*>(buf)[i]);
    default:
      return 0.0;
  }
}

// The magnitude bound m of sum/max/min data (see the file comment); >= 0.
inline int64_t checkMagnitude(braidDataType_t type, int nranks) {
  double limit = typeInfo(type).exactLimit / std::max(nranks, 1);
  return static_cast<int64_t>(std::min(limit, static_cast<double>(1 << 20)));
}

// Rank `rank`'s input at element i (an integer exactly representable in type).
inline int64_t checkInput(braidDataType_t type, braidRedOp_t op, int rank, int nranks, size_t i) {
  const TypeInfo& t = typeInfo(type);
  uint64_t idx = static_cast<uint64_t>(i);
  if (op == braidProd) {
    int64_t v = 1;
    if (nranks > 0 && idx % static_cast<uint64_t>(nranks) == static_cast<uint64_t>(rank) &&
        (idx / static_cast<uint64_t>(nranks)) % 3 == 0) {
      v = 2;
    }
    if (t.isSigned && (idx * 7 + static_cast<uint64_t>(rank)) % 5 == 0) v = -v;
    return v;
  }
  int64_t m = checkMagnitude(type, op == kMulSum ? 2 * nranks : nranks);
  // avg: rank-independent so that the mean is exact (see the file comment).
  uint64_t r = op == braidAvg ? 0 : static_cast<uint64_t>(rank);
  // A cheap mix of (i, rank) so neighbours and ranks differ.
  uint64_t h = idx * 2654435761ULL + r * 40503ULL + (idx >> 7) * 97ULL + r * idx * 31ULL;
  if (t.isSigned) {
    uint64_t span = static_cast<uint64_t>(2 * m + 1);
    return static_cast<int64_t>(h % span) - m;
  }
  return static_cast<int64_t>(h % static_cast<uint64_t>(m + 1));
}

// The all-reduce result at element i over ranks 0..nranks-1, in int64.
inline int64_t checkReduced(braidDataType_t type, braidRedOp_t op, int nranks, size_t i) {
  if (nranks <= 0) return 0;
  int64_t acc = checkInput(type, op, 0, nranks, i) * (op == kMulSum ? mulSumScalar(0) : 1);
  for (int r = 1; r < nranks; ++r) {
    int64_t v = checkInput(type, op, r, nranks, i);
    switch (op) {
      case kMulSum:
        acc += mulSumScalar(r) * v;
        break;
      case braidSum:
      case braidAvg:
        acc += v;
        break;
      case braidProd:
        acc *= v;
        break;
      case braidMax:
        acc = std::max(acc, v);
        break;
      case braidMin:
        acc = std::min(acc, v);
        break;
      default:
        break;
    }
  }
  if (op == braidAvg) acc /= nranks;
  return acc;
}

// buf[j] = checkInput(..., first + j) for j < count.
inline void fillCheckInput(braidDataType_t type, braidRedOp_t op, int rank, int nranks, void* buf,
                           size_t count, size_t first = 0) {
  for (size_t j = 0; j < count; ++j) {
    storeElement(type, buf, j, checkInput(type, op, rank, nranks, first + j));
  }
}

// buf[j] = checkReduced(..., first + j) for j < count.
inline void fillCheckReduced(braidDataType_t type, braidRedOp_t op, int nranks, void* buf,
                             size_t count, size_t first = 0) {
  for (size_t j = 0; j < count; ++j) {
    storeElement(type, buf, j, checkReduced(type, op, nranks, first + j));
  }
}

// Elements of `got` that differ from `expected` (numerically; NaN differs).
inline size_t countMismatches(braidDataType_t type, const void* got, const void* expected,
                              size_t count) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!(loadElement(type, got, i) == loadElement(type, expected, i))) ++wrong;
  }
  return wrong;
}

}  // namespace braid::perf
