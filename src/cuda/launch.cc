// kernels.h: checks a launch's arguments, splits the buffers into an unaligned head,
// 16-byte vectors and a tail, sizes the grid, and hands the launch to the datatype's
// family (reduce_*.cu).
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "core/logging.h"
#include "cuda/kernels.h"
#include "cuda/reduce_family.h"
#include "cuda/relaxed_capture.h"

namespace braid::cuda {
namespace {

using detail::kThreads;

// Bytes per element, in braid.h's order (src/cuda sits below src/exec and its tables).
constexpr size_t kElemSize[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
static_assert(sizeof(kElemSize) / sizeof(kElemSize[0]) == braidNumTypes);

// Enough resident blocks to fill every SM of the current device (2048 threads each on
// sm_80..sm_90); a grid-stride loop covers the rest.
unsigned maxBlocks() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      sms <= 0) {
    cudaGetLastError();
    sms = 132;  // an H100 SXM
  }
  return static_cast<unsigned>(sms) * (2048 / kThreads);
}

unsigned blocksFor(size_t work) {
  static const unsigned kMax = maxBlocks();
  size_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  return blocks > kMax ? kMax : static_cast<unsigned>(blocks);
}

// Elements before the first 16-byte boundary of p (every pointer must share it).
size_t headOf(const void* p, size_t es, size_t count) {
  size_t misalign = reinterpret_cast<uintptr_t>(p) % 16;
  size_t head = misalign == 0 ? 0 : (16 - misalign) / es;
  return head < count ? head : count;
}

// How a launch over `count` elements of `es` bytes is cut: the head and tail element by
// element, nvec 16-byte vectors between (none unless every pointer shares dst's offset
// modulo 16), and the grid for the larger of the two.
struct Split {
  size_t head;
  size_t nvec;
  unsigned blocks;
};
Split splitFor(const void* dst, bool sameOffset, size_t es, size_t count) {
  Split s;
  const size_t lanes = 16 / es;
  s.head = sameOffset ? headOf(dst, es, count) : count;
  s.nvec = (count - s.head) / lanes;
  const size_t scalars = count - s.nvec * lanes;
  s.blocks = blocksFor(s.nvec > scalars ? s.nvec : scalars);
  return s;
}

bool sameOffset16(const void* a, const void* b) {
  return reinterpret_cast<uintptr_t>(a) % 16 == reinterpret_cast<uintptr_t>(b) % 16;
}

Status checkType(const char* kernel, braidDataType_t datatype) {
  if (static_cast<int>(datatype) >= 0 && datatype < braidNumTypes) return Status::ok();
  return invalidArgument(std::string(kernel) + ": datatype " + std::to_string(datatype) +
                         " is not a braidDataType_t");
}

Status checkAligned(const char* kernel, const void* p, size_t es) {
  if (p != nullptr && reinterpret_cast<uintptr_t>(p) % es == 0) return Status::ok();
  return invalidArgument(std::string(kernel) + ": a buffer is NULL or not aligned to its " +
                         std::to_string(es) + "-byte elements");
}

Status launchFailure(const std::string& what, int err) {
  auto e = static_cast<cudaError_t>(err);
  return Status(braidUnhandledCudaError, what + " failed to launch: " + cudaGetErrorName(e) + " (" +
                                             cudaGetErrorString(e) + ")");
}

}  // namespace

Status launchReduce(void* dst, const void* const* srcs, int nsrcs, size_t count,
                    braidDataType_t datatype, braidRedOp_t op, int divisor, void* stream) {
  BRAID_TRY(checkType("reduce kernel", datatype));
  if (static_cast<int>(op) < 0 || op >= braidNumOps) {
    return invalidArgument("reduce kernel: op " + std::to_string(op) + " is not a braidRedOp_t");
  }
  if (nsrcs < 1 || nsrcs > kMaxReduceInputs) {
    return invalidArgument("reduce kernel: " + std::to_string(nsrcs) + " inputs (1.." +
                           std::to_string(kMaxReduceInputs) + " allowed)");
  }
  if (divisor < 1) return invalidArgument("reduce kernel: divisor " + std::to_string(divisor));
  if (count == 0) return Status::ok();
  const size_t es = kElemSize[datatype];
  detail::ReduceParams p{};
  p.dst = dst;
  p.nsrcs = nsrcs;
  p.divisor = divisor;
  p.count = count;
  BRAID_TRY(checkAligned("reduce kernel", dst, es));
  bool sameOffset = true;
  for (int k = 0; k < nsrcs; ++k) {
    BRAID_TRY(checkAligned("reduce kernel", srcs[k], es));
    p.srcs[k] = srcs[k];
    sameOffset = sameOffset && sameOffset16(srcs[k], dst);
  }
  const Split split = splitFor(dst, sameOffset, es, count);
  p.head = split.head;
  p.nvec = split.nvec;
  int err = detail::launchReduceInt(p, datatype, op, split.blocks, stream);
  if (err == -1) err = detail::launchReduceFloat(p, datatype, op, split.blocks, stream);
  if (err == -1) err = detail::launchReduceHalf(p, datatype, op, split.blocks, stream);
  if (err == -1) err = detail::launchReduceFloat8(p, datatype, op, split.blocks, stream);
  if (err != 0) return launchFailure("reduce kernel", err);
  return Status::ok();
}

Status launchScale(void* dst, const void* src, size_t count, braidDataType_t datatype,
                   const void* scalarDevice, const void* scalarValue, void* stream) {
  BRAID_TRY(checkType("scale kernel", datatype));
  if ((scalarDevice == nullptr) == (scalarValue == nullptr)) {
    return invalidArgument("scale kernel: exactly one of scalarDevice and scalarValue is given");
  }
  if (count == 0) return Status::ok();
  const size_t es = kElemSize[datatype];
  BRAID_TRY(checkAligned("scale kernel", src, es));
  BRAID_TRY(checkAligned("scale kernel", dst, es));
  detail::ScaleParams p{};
  p.src = src;
  p.dst = dst;
  p.scalarPtr = scalarDevice;
  if (scalarValue != nullptr) std::memcpy(p.value, scalarValue, es);
  p.count = count;
  const Split split = splitFor(dst, sameOffset16(src, dst), es, count);
  p.head = split.head;
  p.nvec = split.nvec;
  int err = detail::launchScaleInt(p, datatype, split.blocks, stream);
  if (err == -1) err = detail::launchScaleFloat(p, datatype, split.blocks, stream);
  if (err == -1) err = detail::launchScaleHalf(p, datatype, split.blocks, stream);
  if (err == -1) err = detail::launchScaleFloat8(p, datatype, split.blocks, stream);
  if (err != 0) return launchFailure("scale kernel", err);
  return Status::ok();
}

Status launchBump(void* word, void* stream) {
  BRAID_TRY(checkAligned("bump kernel", word, 8));
  int err = detail::launchBumpWord(word, stream);
  if (err != 0) return launchFailure("bump kernel", err);
  return Status::ok();
}

Status launchWait(const void* word, uint64_t value, void* stream) {
  if (word == nullptr) return invalidArgument("wait kernel: the word is NULL");
  BRAID_TRY(checkAligned("wait kernel", word, 8));
  int err = detail::launchWaitWord(word, value, stream);
  if (err != 0) return launchFailure("wait kernel", err);
  return Status::ok();
}

Status launchCopy(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::ok();
  if (dst == nullptr || src == nullptr) return invalidArgument("copy kernel: a buffer is NULL");
  const Split split = splitFor(dst, sameOffset16(src, dst), 1, bytes);
  int err = detail::launchCopyBytes(dst, src, bytes, split.head, split.nvec, split.blocks, stream);
  if (err != 0) return launchFailure("copy kernel", err);
  return Status::ok();
}

Status loadKernels() {
  static auto* mu = new std::mutex;         // never destroyed: a call at exit stays safe
  static auto* loaded = new std::set<int>;  // devices whose contexts hold every kernel
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return Status::ok();  // no device yet: its first launch says why
  }
  std::lock_guard<std::mutex> lock(*mu);
  if (loaded->count(device) != 0) return Status::ok();
  const detail::RelaxedCapture relaxed;
  const auto start = std::chrono::steady_clock::now();
  const detail::ReduceParams p{};
  const detail::ScaleParams q{};
  for (int t = 0; t < braidNumTypes; ++t) {
    const auto datatype = static_cast<braidDataType_t>(t);
    for (int o = 0; o < braidNumOps; ++o) {
      const auto op = static_cast<braidRedOp_t>(o);
      int err = detail::launchReduceInt(p, datatype, op, 0, nullptr);
      if (err == -1) err = detail::launchReduceFloat(p, datatype, op, 0, nullptr);
      if (err == -1) err = detail::launchReduceHalf(p, datatype, op, 0, nullptr);
      if (err == -1) err = detail::launchReduceFloat8(p, datatype, op, 0, nullptr);
      if (err != 0) return launchFailure("loading the reduce kernel", err);
    }
    int err = detail::launchScaleInt(q, datatype, 0, nullptr);
    if (err == -1) err = detail::launchScaleFloat(q, datatype, 0, nullptr);
    if (err == -1) err = detail::launchScaleHalf(q, datatype, 0, nullptr);
    if (err == -1) err = detail::launchScaleFloat8(q, datatype, 0, nullptr);
    if (err != 0) return launchFailure("loading the scale kernel", err);
  }
  int err = detail::launchCopyBytes(nullptr, nullptr, 0, 0, 0, 0, nullptr);
  if (err == 0) err = detail::launchBumpWord(nullptr, nullptr);
  if (err == 0) err = detail::launchWaitWord(nullptr, 0, nullptr);
  if (err != 0) return launchFailure("loading the copy, bump and wait kernels", err);
  loaded->insert(device);
  BRAID_INFO(
      "kernels loaded on device %d in %.1f ms", device,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return Status::ok();
}

}  // namespace braid::cuda
