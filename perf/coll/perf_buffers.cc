// The perf tools' buffers: see perf_buffers.h.
#include "perf/coll/perf_buffers.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#ifdef BRAID_PERF_CUDA
#include <cuda_runtime.h>
#endif

namespace braid::perf {
namespace {
constexpr size_t kAlign = 64;
constexpr size_t kPage = 4096;
}  // namespace

HostBuffer::~HostBuffer() {
  if (shared_) {
    (void)braidMemFree(data_);
  } else {
    std::free(data_);
  }
}

bool HostBuffer::allocate(size_t bytes, bool shared, braidComm_t registerWith, size_t unalign) {
  void* p = nullptr;
  shared_ = shared;
  bytes_ = bytes;
  unalign_ = unalign;
  size_t total = std::max(bytes + unalign, kAlign);
  if (registerWith != nullptr) {
    // Whole pages: braidCommRegister shares only those (runtime/shared_memory.cc).
    total = (total + kPage - 1) / kPage * kPage;
  }
  if (shared) {
    if (braidMemAlloc(&p, total) != braidSuccess) return false;
  } else if (posix_memalign(&p, registerWith != nullptr ? kPage : kAlign, total) != 0) {
    return false;
  }
  std::memset(p, 0, total);  // fault the pages in before timing
  data_ = static_cast<char*>(p);
  void* registration = nullptr;
  return registerWith == nullptr ||
         braidCommRegister(registerWith, p, total, &registration) == braidSuccess;
}

#ifdef BRAID_PERF_CUDA
DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) (void)cudaFree(data_);
}

bool DeviceBuffer::allocate(size_t bytes, size_t unalign, std::string* error) {
  bytes_ = bytes;
  unalign_ = unalign;
  const size_t total = std::max(bytes + unalign, kAlign);
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, total);
  if (err == cudaSuccess) err = cudaMemset(p, 0, total);
  if (err != cudaSuccess) {
    *error = std::string("cudaMalloc/cudaMemset: ") + cudaGetErrorString(err);
    return false;
  }
  data_ = static_cast<char*>(p);
  return mirror_.allocate(bytes);
}

bool DeviceBuffer::toDevice(char* dst, const char* src, size_t n) {
  return cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice) == cudaSuccess;
}
bool DeviceBuffer::toHost(char* dst, const char* src, size_t n) {
  return cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) == cudaSuccess;
}
bool DeviceBuffer::setDevice(int index) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) return false;
  return cudaSetDevice(index % count) == cudaSuccess;
}
bool DeviceBuffer::synchronize(braidStream_t stream) {
  return cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess;
}
braidStream_t DeviceBuffer::createStream() {
  cudaStream_t s = nullptr;
  return cudaStreamCreate(&s) == cudaSuccess ? reinterpret_cast<braidStream_t>(s) : nullptr;
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
bool DeviceBuffer::allocate(size_t, size_t, std::string* error) {
  *error = "this build has no CUDA (configure with nvcc found)";
  return false;
}
bool DeviceBuffer::toDevice(char*, const char*, size_t) { return false; }
bool DeviceBuffer::toHost(char*, const char*, size_t) { return false; }
bool DeviceBuffer::setDevice(int) { return false; }
bool DeviceBuffer::synchronize(braidStream_t) { return true; }
braidStream_t DeviceBuffer::createStream() { return nullptr; }
void DeviceBuffer::destroyStream(braidStream_t) {}
void* DeviceBuffer::capture(braidStream_t, void (*)(void*), void*) { return nullptr; }
bool DeviceBuffer::launch(void*, braidStream_t) { return false; }
void DeviceBuffer::destroyGraph(void*) {}
#endif

}  // namespace braid::perf
