// The perf tools' device buffers over CUDA's runtime (or, in a build without CUDA, none):
// see perf_buffers.h. tests/gpu_emu/perf_device_buffers_emu.cc is the same over the
// emulated GPU.
#include <algorithm>
#include <string>

#include "perf/coll/perf_buffers.h"

#ifdef BRAID_PERF_CUDA
#include <cuda_runtime.h>
#endif

namespace braid::perf {
namespace {
constexpr size_t kAlign = 64;
}  // namespace

#ifdef BRAID_PERF_CUDA
DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) (void)cudaFree(data_);
}

bool DeviceBuffer::allocate(size_t bytes, size_t unalign, braidStream_t stream,
                            std::string* error) {
  bytes_ = bytes;
  unalign_ = unalign;
  const size_t total = std::max(bytes + unalign, kAlign);
  void* p = nullptr;
  auto s = reinterpret_cast<cudaStream_t>(stream);
  cudaError_t err = cudaMalloc(&p, total);
  if (err == cudaSuccess) err = cudaMemsetAsync(p, 0, total, s);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  if (err != cudaSuccess) {
    *error = std::string("cudaMalloc/cudaMemset: ") + cudaGetErrorString(err);
    return false;
  }
  data_ = static_cast<char*>(p);
  return mirror_.allocate(bytes);
}

bool DeviceBuffer::toDevice(char* dst, const char* src, size_t n, braidStream_t stream) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  return cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s) == cudaSuccess &&
         cudaStreamSynchronize(s) == cudaSuccess;
}
bool DeviceBuffer::toHost(char* dst, const char* src, size_t n, braidStream_t stream) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  return cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s) == cudaSuccess &&
         cudaStreamSynchronize(s) == cudaSuccess;
}
int DeviceBuffer::deviceCount(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    return 0;
  }
  return count;
}
bool DeviceBuffer::setDevice(int index) { return cudaSetDevice(index) == cudaSuccess; }
bool DeviceBuffer::synchronize(braidStream_t stream) {
  return cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess;
}
braidStream_t DeviceBuffer::createStream() {
  cudaStream_t s = nullptr;
  return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess
             ? reinterpret_cast<braidStream_t>(s)
             : nullptr;
}
void DeviceBuffer::destroyStream(braidStream_t stream) {
  if (stream != nullptr) (void)cudaStreamDestroy(reinterpret_cast<cudaStream_t>(stream));
}
void* DeviceBuffer::capture(braidStream_t stream, void (*enqueue)(void*), void* arg) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return nullptr;
  enqueue(arg);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaStreamEndCapture(s, &graph) != cudaSuccess) return nullptr;
  const bool made = cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  (void)cudaGraphDestroy(graph);
  return made ? exec : nullptr;
}
bool DeviceBuffer::launch(void* graph, braidStream_t stream) {
  return cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph),
                         reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess;
}
void DeviceBuffer::destroyGraph(void* graph) {
  (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}
#else
DeviceBuffer::~DeviceBuffer() = default;
bool DeviceBuffer::allocate(size_t, size_t, braidStream_t, std::string* error) {
  *error = "this build has no CUDA (configure with nvcc found)";
  return false;
}
bool DeviceBuffer::toDevice(char*, const char*, size_t, braidStream_t) { return false; }
bool DeviceBuffer::toHost(char*, const char*, size_t, braidStream_t) { return false; }
int DeviceBuffer::deviceCount(std::string* why) {
  *why = "this build has no CUDA (configure with nvcc found)";
  return 0;
}
bool DeviceBuffer::setDevice(int) { return false; }
bool DeviceBuffer::synchronize(braidStream_t) { return true; }
braidStream_t DeviceBuffer::createStream() { return nullptr; }
void DeviceBuffer::destroyStream(braidStream_t) {}
void* DeviceBuffer::capture(braidStream_t, void (*)(void*), void*) { return nullptr; }
bool DeviceBuffer::launch(void*, braidStream_t) { return false; }
void DeviceBuffer::destroyGraph(void*) {}
#endif

}  // namespace braid::perf
