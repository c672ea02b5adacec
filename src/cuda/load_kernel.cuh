// Internal to src/cuda's .cu files: loading a kernel without launching it, and launching one.
#pragma once

#include <cuda_runtime.h>

#include <tuple>

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

// Launches kernel<<<blocks, threads, 0, stream>>>(args...) and returns that launch's own
// cudaError_t. cudaGetLastError after a <<<>>> launch would return any earlier runtime
// call's error on this thread instead: one the application ignored, or one Braid reported
// already (an IPC open refused while the windows were set up failed good wait kernels on an
// H200). A failed launch's error is reported here, so it is not left for the next check.
template <typename... Params, typename... Args>
int launchKernel(void (*kernel)(Params...), unsigned blocks, unsigned threads, cudaStream_t stream,
                 Args... args) {
  std::tuple<Params...> values(args...);  // each argument as the kernel's parameter type
  void* argv[sizeof...(Params)];
  std::apply(
      [&](auto&... v) {
        int i = 0;
        ((argv[i++] = static_cast<void*>(&v)), ...);
      },
      values);
  const cudaError_t err = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks),
                                           dim3(threads), argv, 0, stream);
  if (err != cudaSuccess) (void)cudaGetLastError();
  return static_cast<int>(err);
}

}  // namespace braid::cuda::detail
