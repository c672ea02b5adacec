// Internal to src/cuda: a scope in which this thread's CUDA graph capture mode is relaxed.
#pragma once

#include <cuda_runtime_api.h>

namespace braid::cuda::detail {

// For the life of one call that CUDA counts unsafe during a graph capture (allocating,
// freeing, page-locking, IPC, querying or synchronising a stream, loading kernels): this
// thread's capture mode is relaxed, so the call neither fails nor invalidates a capture
// the application is making in global mode (torch.cuda.graph's default), on another
// thread or on this one (a call's first use of a communicator sets it up while the
// caller captures), as NCCL's own allocations do.
class RelaxedCapture {
 public:
  RelaxedCapture() {
    if (cudaThreadExchangeStreamCaptureMode(&mode_) != cudaSuccess) {
      cudaGetLastError();
      swapped_ = false;
    }
  }
  ~RelaxedCapture() {
    if (swapped_) (void)cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  bool swapped_ = true;
};

}  // namespace braid::cuda::detail
