// Internal to src/cuda: what launch.cc hands to each datatype family's .cu file. Plain
// C++, so launch.cc needs no CUDA compiler.
#pragma once

#include <cstddef>
#include <cstdint>

#include "braid/braid.h"

namespace braid::cuda::detail {

constexpr int kMaxInputs = 8;
constexpr unsigned kThreads = 256;

// One reduction, split by launch.cc: elements [0, head) and [head + nvec * lanes, count)
// go element by element, the nvec 16-byte vectors between them as vectors.
struct ReduceParams {
  const void* srcs[kMaxInputs];
  void* dst;
  int nsrcs;
  int divisor;
  size_t count;
  size_t head;
  size_t nvec;
};

// One scaling (a premul-sum's): dst[i] = src[i] * the scalar, read through scalarPtr on the
// device when not NULL, else `value`'s bytes. Split as ReduceParams are.
struct ScaleParams {
  const void* src;
  void* dst;
  const void* scalarPtr;
  unsigned char value[8];
  size_t count;
  size_t head;
  size_t nvec;
};

// Each launches on `stream` and returns the cudaError_t of the launch as an int (0: done),
// or -1 when `datatype` is not of its family. With blocks 0 (the bump and the wait: word NULL) each
// only loads its kernel into the current context (kernels.h loadKernels).
int launchReduceInt(const ReduceParams& p, braidDataType_t datatype, braidRedOp_t op,
                    unsigned blocks, void* stream);
int launchReduceFloat(const ReduceParams& p, braidDataType_t datatype, braidRedOp_t op,
                      unsigned blocks, void* stream);
int launchReduceHalf(const ReduceParams& p, braidDataType_t datatype, braidRedOp_t op,
                     unsigned blocks, void* stream);
int launchReduceFloat8(const ReduceParams& p, braidDataType_t datatype, braidRedOp_t op,
                       unsigned blocks, void* stream);
int launchScaleInt(const ScaleParams& p, braidDataType_t datatype, unsigned blocks, void* stream);
int launchScaleFloat(const ScaleParams& p, braidDataType_t datatype, unsigned blocks,
                     void* stream);
int launchScaleHalf(const ScaleParams& p, braidDataType_t datatype, unsigned blocks, void* stream);
int launchScaleFloat8(const ScaleParams& p, braidDataType_t datatype, unsigned blocks,
                      void* stream);
// *word += 1 (kernels.h launchBump).
int launchBumpWord(void* word, void* stream);
// Returns once *word reaches value (kernels.h launchWait).
int launchWaitWord(const void* word, uint64_t value, void* stream);
// Bytes [0, head) and [head + 16 * nvec, bytes) one by one, the vectors between as vectors.
int launchCopyBytes(void* dst, const void* src, size_t bytes, size_t head, size_t nvec,
                    unsigned blocks, void* stream);

}  // namespace braid::cuda::detail
