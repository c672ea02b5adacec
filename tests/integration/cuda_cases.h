// Test helpers for device collectives (cuda_collectives_test.cc): exact inputs and
// expected results per datatype (tests/common/reference.h, plus the float8 codec), and
// runOnDevice, which runs one collective on device buffers on a stream and counts the
// wrong elements. Header-only, inline, for one test binary.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "braid/braid.h"
#include "colls.h"
#include "cuda/device.h"
#include "tests/common/reference.h"
#include "tests/unit/cuda/float8_reference.h"

namespace braid::test {

// ---- Data: reference.h's, except float8 sums (partial sums stay exact in float8 whatever
// order an algorithm adds in).
inline bool isFloat8(braidDataType_t t) { return t == braidFloat8e4m3 || t == braidFloat8e5m2; }
inline const Float8Format& formatOf(braidDataType_t t) {
  return t == braidFloat8e4m3 ? kE4m3 : kE5m2;
}
inline size_t sizeOf(braidDataType_t t) { return isFloat8(t) ? 1 : elemSize(t); }

inline void put(braidDataType_t t, void* base, size_t i, double v) {
  if (isFloat8(t)) {
    static_cast<uint8_t*>(base)[i] = float8Encode(v, formatOf(t));
  } else {
    store(t, base, i, v);
  }
}

inline double get(braidDataType_t t, const void* base, size_t i) {
  return isFloat8(t) ? float8Decode(static_cast<const uint8_t*>(base)[i], formatOf(t))
                     : load(t, base, i);
}

inline double input(braidDataType_t t, braidRedOp_t op, int rank, int n, size_t i) {
  if (isFloat8(t) && (op == braidSum || op == braidAvg)) return double((rank + i) % 3) - 1;
  return inputValue(t, op, rank, n, i);
}

inline double reduced(braidDataType_t t, braidRedOp_t op, int n, size_t i) {
  if (!isFloat8(t)) return expectedValue(t, op, n, i);
  double acc = input(t, op, 0, n, i);
  for (int r = 1; r < n; ++r) {
    double v = input(t, op, r, n, i);
    acc = op == braidProd  ? acc * v
          : op == braidMax ? std::max(acc, v)
          : op == braidMin ? std::min(acc, v)
                           : acc + v;
  }
  if (op == braidAvg) acc = static_cast<float>(acc) / static_cast<float>(n);  // rounds once
  return float8Decode(float8Encode(acc, formatOf(t)), formatOf(t));
}

// A premul-sum's scalar on `rank` (braidRedOpCreatePreMulSum): a different one per rank,
// never 1 on rank 0 (so one rank scales too), small enough that every scaled sum of the
// sum inputs stays exact in the type.
inline double preMulScalar(braidDataType_t t, int rank) {
  return isFloat8(t) ? 2 - rank % 2 : rank + 2;
}

inline double preMulReduced(braidDataType_t t, int n, size_t i) {
  double acc = 0;
  for (int r = 0; r < n; ++r) acc += preMulScalar(t, r) * input(t, braidSum, r, n, i);
  return acc;
}

enum class PreMul { kNone, kHostImmediate, kDeviceScalar };

struct Case {
  int coll;
  braidDataType_t t;
  braidRedOp_t op;
  size_t k;
  bool inPlace;
  int root;
  bool hostMemory = false;  // the buffers in pageable host memory, still on the CUDA stream
  // A reduction with a premul-sum op (c.op ignored), its scalar by value or in device
  // memory; the op is destroyed as soon as the call returns, and a device scalar is
  // overwritten on the stream right after the call (the call must not see either).
  PreMul preMul = PreMul::kNone;
};

// all-to-all-v counts: rank s sends m(s, d) elements to rank d, packed.
inline size_t vcount(int s, int d, size_t k) { return (s + 2 * d) % 3 + k; }

// Runs one collective on device memory on `stream`; returns the number of wrong elements
// (or a large number when the call failed).
inline size_t runOnDevice(braidComm_t comm, void* stream, const Case& c) {
  int n = 0, r = 0;
  braidCommCount(comm, &n);
  braidCommUserRank(comm, &r);
  const size_t es = sizeOf(c.t), k = c.k;
  const bool reduces = c.coll == kAllReduce || c.coll == kReduceScatter || c.coll == kReduce;
  const bool preMul = reduces && c.preMul != PreMul::kNone;
  const braidRedOp_t vop = preMul ? braidSum : reduces ? c.op : braidSum;
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  size_t vin = 0, vout = 0;
  for (int p = 0; p < n; ++p) {
    sc[p] = vcount(r, p, k), sd[p] = vin, vin += sc[p];
    rc[p] = vcount(p, r, k), rd[p] = vout, vout += rc[p];
  }
  const bool bigOut = c.coll == kAllGather || c.coll == kGather || c.coll == kAllToAll;
  const bool bigIn = c.coll == kReduceScatter || c.coll == kScatter || c.coll == kAllToAll;
  const size_t inElems = c.coll == kAllToAllv ? vin : bigIn ? n * k : k;
  const size_t outElems = c.coll == kAllToAllv ? vout : bigOut ? n * k : k;
  // One device allocation: output region, then input region (out of place).
  const size_t outBytes = outElems * es, bytes = outBytes + inElems * es + 64;
  std::vector<char> image(bytes, 0x5a);
  char* hostIn = image.data() + outBytes;
  for (size_t i = 0; i < inElems; ++i) put(c.t, hostIn, i, input(c.t, vop, r, n, i));
  std::vector<char> hostBuffers(c.hostMemory ? bytes : 0);
  Expected<void*> mem = c.hostMemory ? Expected<void*>(static_cast<void*>(hostBuffers.data()))
                                     : cuda::deviceAlloc(bytes);
  if (!mem.isOk()) {
    fprintf(stderr, "rank %d: %s\n", r, mem.status().message().c_str());
    return 1u << 30;
  }
  char* base = static_cast<char*>(mem.value());
  const void* send = base + outBytes;
  void* recv = base;
  size_t recvAt = 0;  // where recv starts in the image
  if (c.inPlace && c.coll != kAllToAllv) {
    size_t at = (c.coll == kAllGather || c.coll == kGather) ? r * k : 0;
    std::memmove(image.data() + at * es, hostIn, inElems * es);  // may overlap
    send = base + at * es;
    if (c.coll == kReduceScatter || c.coll == kScatter) recvAt = r * k * es;
    recv = base + recvAt;
  }
  auto* s = static_cast<braidStream_t>(stream);
  bool copied = cuda::copyAsync(base, image.data(), bytes, stream).isOk();
  braidResult_t res = braidSuccess;
  braidRedOp_t op = c.op;
  unsigned char scalar[8] = {}, later[8] = {};
  put(c.t, scalar, 0, preMulScalar(c.t, r));
  put(c.t, later, 0, 3);
  void* deviceScalar = nullptr;
  if (preMul && c.preMul == PreMul::kDeviceScalar) {
    Expected<void*> d = cuda::deviceAlloc(64);
    deviceScalar = d.isOk() ? d.value() : nullptr;
    copied = copied && deviceScalar != nullptr &&
             cuda::copyAsync(deviceScalar, scalar, es, stream).isOk();
  }
  if (preMul && copied) {
    res = braidRedOpCreatePreMulSum(
        &op, deviceScalar != nullptr ? deviceScalar : scalar, c.t,
        deviceScalar != nullptr ? braidScalarDevice : braidScalarHostImmediate, comm);
    put(c.t, scalar, 0, 5);  // a value is copied when the op is made
  }
  switch (res != braidSuccess ? -1 : c.coll) {
    case kAllReduce:
      res = braidAllReduce(send, recv, k, c.t, op, comm, s);
      break;
    case kAllGather:
      res = braidAllGather(send, recv, k, c.t, comm, s);
      break;
    case kReduceScatter:
      res = braidReduceScatter(send, recv, k, c.t, op, comm, s);
      break;
    case kBroadcast:
      res = braidBroadcast(send, recv, k, c.t, c.root, comm, s);
      break;
    case kReduce:
      res = braidReduce(send, recv, k, c.t, op, c.root, comm, s);
      break;
    case kGather:
      res = braidGather(send, recv, k, c.t, c.root, comm, s);
      break;
    case kScatter:
      res = braidScatter(send, recv, k, c.t, c.root, comm, s);
      break;
    case kAllToAll:
      res = braidAlltoAll(send, recv, k, c.t, comm, s);
      break;
    case kAllToAllv:
      res = braidAlltoAllv(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), c.t, comm, s);
      break;
  }
  if (preMul && res == braidSuccess) res = braidRedOpDestroy(op, comm);
  if (deviceScalar != nullptr) {
    copied = copied && cuda::copyAsync(deviceScalar, later, es, stream).isOk();
  }
  copied = copied && cuda::copyAsync(image.data(), base, bytes, stream).isOk() &&
           cuda::streamSynchronize(stream).isOk() &&
           (c.hostMemory || cuda::deviceFree(base).isOk()) &&
           (deviceScalar == nullptr || cuda::deviceFree(deviceScalar).isOk());
  if (res != braidSuccess || !copied) {
    fprintf(stderr, "rank %d: %s%s failed: %s\n", r, kCollNames[c.coll],
            c.hostMemory ? " on host memory" : "", braidGetLastError(comm));
    return 1u << 30;
  }
  auto in = [&](int p, size_t i) { return input(c.t, vop, p, n, i); };
  size_t wrong = 0;
  for (size_t j = 0; j < outElems; ++j) {
    double want = 0;
    bool defined = true;
    switch (c.coll) {
      case kAllReduce:
        want = preMul ? preMulReduced(c.t, n, j) : reduced(c.t, c.op, n, j);
        break;
      case kReduce:
        want = preMul ? preMulReduced(c.t, n, j) : reduced(c.t, c.op, n, j);
        defined = r == c.root;
        break;
      case kReduceScatter:
        want = preMul ? preMulReduced(c.t, n, r * k + j) : reduced(c.t, c.op, n, r * k + j);
        break;
      case kAllGather:
        want = in(j / k, j % k);
        break;
      case kGather:
        want = in(j / k, j % k), defined = r == c.root;
        break;
      case kBroadcast:
        want = in(c.root, j);
        break;
      case kScatter:
        want = in(c.root, r * k + j);
        break;
      case kAllToAll:
        want = in(j / k, r * k + j % k);
        break;
      case kAllToAllv: {
        int p = 0;
        while (j >= rd[p] + rc[p]) ++p;
        size_t from = 0;  // where p's block for r starts in p's input
        for (int q = 0; q < r; ++q) from += vcount(p, q, k);
        want = in(p, from + (j - rd[p]));
        break;
      }
    }
    if (!defined) continue;
    double got = get(c.t, image.data() + recvAt, j);
    if (got != want && !(std::isnan(got) && std::isnan(want)) && wrong++ < 3) {
      fprintf(stderr,
              "rank %d %s n=%d k=%zu t=%d op=%d premul=%d root=%d inPlace=%d: [%zu]=%g want %g\n",
              r, kCollNames[c.coll], n, k, c.t, c.op, static_cast<int>(c.preMul), c.root,
              c.inPlace, j, got, want);
    }
  }
  return wrong;
}

}  // namespace braid::test
