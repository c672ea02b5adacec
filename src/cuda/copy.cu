// The copy kernel: bytes, in 16-byte vectors between an unaligned head and tail.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/load_kernel.cuh"
#include "cuda/reduce_family.h"

namespace braid::cuda::detail {
namespace {

__global__ void __launch_bounds__(kThreads)
    copyKernel(uint8_t* dst, const uint8_t* src, size_t bytes, size_t head, size_t nvec) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint4* s = reinterpret_cast<const uint4*>(src + head);
  uint4* d = reinterpret_cast<uint4*>(dst + head);
  for (size_t v = tid; v < nvec; v += stride) d[v] = s[v];
  const size_t tailStart = head + nvec * 16;
  const size_t scalars = head + (bytes - tailStart);
  for (size_t j = tid; j < scalars; j += stride) {
    const size_t i = j < head ? j : tailStart + (j - head);
    dst[i] = src[i];
  }
}

__global__ void bumpKernel(volatile unsigned long long* word) { *word = *word + 1; }

// Spins until *word, loaded with acquire at system scope, reaches `value` as a wrapping
// counter ((int64)(*word - value) >= 0, as cuStreamWaitValue64's GEQ compares). Before
// sm_70 (no acquire loads, no nanosleep): volatile loads, then a system-wide fence.
__global__ void waitKernel(const unsigned long long* word, unsigned long long value) {
  for (;;) {
    unsigned long long now;
#if __CUDA_ARCH__ >= 700
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(now) : "l"(word) : "memory");
#else
    now = *static_cast<const volatile unsigned long long*>(word);
#endif
    if (static_cast<long long>(now - value) >= 0) break;
#if __CUDA_ARCH__ >= 700
    __nanosleep(256);
#endif
  }
#if __CUDA_ARCH__ < 700
  __threadfence_system();
#endif
}

}  // namespace

int launchBumpWord(void* word, void* stream) {
  if (word == nullptr) return loadOnly(bumpKernel);
  return launchKernel(bumpKernel, 1, 1, static_cast<cudaStream_t>(stream),
                      static_cast<volatile unsigned long long*>(word));
}

int launchWaitWord(const void* word, uint64_t value, void* stream) {
  if (word == nullptr) return loadOnly(waitKernel);
  return launchKernel(waitKernel, 1, 1, static_cast<cudaStream_t>(stream),
                      static_cast<const unsigned long long*>(word), value);
}

int launchCopyBytes(void* dst, const void* src, size_t bytes, size_t head, size_t nvec,
                    unsigned blocks, void* stream) {
  if (blocks == 0) return loadOnly(copyKernel);
  return launchKernel(copyKernel, blocks, kThreads, static_cast<cudaStream_t>(stream),
                      static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes, head,
                      nvec);
}

}  // namespace braid::cuda::detail
