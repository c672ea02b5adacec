// Internal to src/cuda's .cu files: loading a kernel without launching it.
#pragma once

#include <cuda_runtime.h>

namespace braid::cuda::detail {

// Loads `kernel` into the current context now and launches nothing: with CUDA's lazy
// loading (the default since CUDA 12.2) a kernel's first launch loads it, and loading may
// wait for every stream of the context, one that waits for this thread's next call too
// (kernels.h loadKernels). Returns the cudaError_t.
template <typename Kernel>
int loadOnly(Kernel* kernel) {
  cudaFuncAttributes attributes;
  return static_cast<int>(cudaFuncGetAttributes(&attributes, kernel));
}

}  // namespace braid::cuda::detail
