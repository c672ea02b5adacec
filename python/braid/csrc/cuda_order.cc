// CUDA tensors through the native backend, ordered as ProcessGroupNCCL orders them: the
// Braid call is issued on torch's current stream of the tensors' device (so it runs after
// the work that produced them there, with no host synchronisation), the tensors are
// recorded on that stream for the caching allocator, and the Work records an event after
// the call that wait() makes the caller's current stream wait for. A call made on a side
// stream is ordered on that side stream. Built only against a torch with CUDA headers
// (BRAID_TORCH_CUDA); without them, launchCuda refuses CUDA tensors with a message.
#ifdef BRAID_TORCH_CUDA

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include "process_group_braid.h"

namespace braid::torch_ext {

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::launchCuda(
    c10d::OpType type, const std::string& what, at::Device device,
    std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep, BraidWork::Call call,
    BraidWork::After after) {
  c10::cuda::CUDAStream stream = at::cuda::getCurrentCUDAStream(device.index());
  for (const std::vector<at::Tensor>* list : {&outputs, &keep}) {
    for (const at::Tensor& t : *list) {
      if (t.defined() && t.is_cuda() && t.storage().data_ptr().get() != nullptr) {
        c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream);
      }
    }
  }
  auto handle = reinterpret_cast<braidStream_t>(stream.stream());
  // Whichever thread issues it (this one, or the worker behind earlier calls), the call and
  // its copies into list outputs are enqueued on the caller's stream.
  BraidWork::Call onStream = [call = std::move(call), stream, handle](braidComm_t c,
                                                                      braidStream_t) {
    c10::cuda::CUDAStreamGuard guard(stream);
    return call(c, handle);
  };
  BraidWork::After afterOnStream;
  if (after) {
    afterOnStream = [after = std::move(after), stream]() {
      c10::cuda::CUDAStreamGuard guard(stream);
      after();
    };
  }
  auto work = c10::make_intrusive<BraidWork>(getRank(), type, what, executor_, std::move(outputs),
                                             std::move(onStream), std::move(afterOnStream));
  work->keep(std::move(keep));
  executor_->submit(work);
  executor_->waitFor(work.get(), std::chrono::milliseconds(0));  // enqueued, not run
  if (std::exception_ptr error = work->exception()) {
    std::rethrow_exception(error);
  }
  work->setCudaStream(stream);
  return work;
}

}  // namespace braid::torch_ext

#endif  // BRAID_TORCH_CUDA
