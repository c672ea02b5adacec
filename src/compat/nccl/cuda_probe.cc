// CUDA facts without depending on CUDA: the drop-in must load on a machine
// with no CUDA at all, so it links neither libcuda nor libcudart. When the
// application has CUDA's runtime loaded (every CUDA program does), its
// functions are found in the process; otherwise there is no device and every
// pointer is host memory.
#include <dlfcn.h>

#include <atomic>

#include "compat/nccl/compat.h"

namespace braid::nccl {
namespace {

using GetDeviceFn = decltype(&cudaGetDevice);
using PointerAttributesFn = decltype(&cudaPointerGetAttributes);

// Looks `name` up in the process, then in a CUDA runtime already loaded
// (RTLD_NOLOAD: never loads one).
void* findCudaRuntime(const char* name) {
  if (void* f = dlsym(RTLD_DEFAULT, name)) return f;
  static const char* const kSonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                         "libcudart.so"};
  for (const char* soname : kSonames) {
    void* lib = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr) continue;
    void* f = dlsym(lib, name);
    dlclose(lib);  // NOLOAD took a reference to a library that stays loaded
    if (f != nullptr) return f;
  }
  return nullptr;
}

template <typename Fn>
Fn cudaFunction(std::atomic<void*>& cache, const char* name) {
  void* f = cache.load(std::memory_order_relaxed);
  if (f == nullptr) {
    f = findCudaRuntime(name);
    if (f != nullptr) cache.store(f, std::memory_order_relaxed);
  }
  return reinterpret_cast<Fn>(f);
}

std::atomic<void*> gGetDevice{nullptr};
std::atomic<void*> gSetDevice{nullptr};
std::atomic<void*> gPointerAttributes{nullptr};
std::atomic<void*> gDeviceCount{nullptr};

}  // namespace

int currentCudaDevice() {
  auto getDevice = cudaFunction<GetDeviceFn>(gGetDevice, "cudaGetDevice");
  int device = 0;
  if (getDevice == nullptr || getDevice(&device) != cudaSuccess) return 0;
  return device;
}

DeviceScope::DeviceScope(int device) {
  auto getDevice = cudaFunction<GetDeviceFn>(gGetDevice, "cudaGetDevice");
  auto setDevice = cudaFunction<decltype(&cudaSetDevice)>(gSetDevice, "cudaSetDevice");
  int current = 0;
  if (getDevice == nullptr || setDevice == nullptr || getDevice(&current) != cudaSuccess ||
      current == device) {
    return;
  }
  if (setDevice(device) == cudaSuccess) saved_ = current;  // else the call runs as it is
}

DeviceScope::~DeviceScope() {
  if (saved_ < 0) return;
  auto setDevice = cudaFunction<decltype(&cudaSetDevice)>(gSetDevice, "cudaSetDevice");
  (void)setDevice(saved_);
}

bool isCudaDevicePointer(const void* p) {
  if (p == nullptr) return false;
  auto attributes = cudaFunction<PointerAttributesFn>(gPointerAttributes, "cudaPointerGetAttributes");
  if (attributes == nullptr) return false;
  cudaPointerAttributes a{};
  if (attributes(&a, p) != cudaSuccess) return false;
  return a.type == cudaMemoryTypeDevice;
}

bool cudaProgramHasDevice() {
  auto count = cudaFunction<decltype(&cudaGetDeviceCount)>(gDeviceCount, "cudaGetDeviceCount");
  int n = 0;
  return count != nullptr && count(&n) == cudaSuccess && n > 0;
}

}  // namespace braid::nccl
