// Which of CUDA's device-wide frees hold the process's other CUDA calls while they wait for
// a held stream (gpu_check.sh's `holds` step; a GPU only). On an H200 (2026-11-27) another
// thread's cudaEventDestroy waited 28 s behind a cudaFree waiting for a held stream; the
// emulated GPU (tests/gpu_emu) assumes cudaFreeHost, cudaHostRegister and
// cudaHostUnregister do the same. For each call: a kernel holds a stream until a mapped
// word is set, a thread makes the call, another thread then times cudaEventCreate and
// cudaEventDestroy, and the word is set after 2 s whatever happens.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace {

__global__ void spinUntilSet(volatile int* word) {
  while (*word == 0) {
  }
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(err));
  std::exit(1);
}

}  // namespace

int main() {
  int* word = nullptr;
  check(cudaHostAlloc(&word, sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  int* wordOnDevice = nullptr;
  check(cudaHostGetDevicePointer(&wordOnDevice, word, 0), "cudaHostGetDevicePointer");
  cudaStream_t held;
  check(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking), "cudaStreamCreate");
  const size_t bytes = size_t{1} << 20;
  void* device = nullptr;
  void* pinned = nullptr;
  void* registered = std::malloc(bytes);
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  check(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
  void* toRegister = std::malloc(bytes);
  check(cudaHostRegister(registered, bytes, cudaHostRegisterDefault), "cudaHostRegister");
  struct Case {
    const char* name;
    std::function<cudaError_t()> call;
  };
  const Case cases[] = {
      {"cudaFree", [&] { return cudaFree(device); }},
      {"cudaFreeHost", [&] { return cudaFreeHost(pinned); }},
      {"cudaHostUnregister", [&] { return cudaHostUnregister(registered); }},
      {"cudaHostRegister", [&] { return cudaHostRegister(toRegister, bytes, 0); }},
  };
  for (const Case& c : cases) {
    reinterpret_cast<std::atomic<int>*>(word)->store(0);
    spinUntilSet<<<1, 1, 0, held>>>(wordOnDevice);
    check(cudaGetLastError(), "launch");
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<double> callMs{-1};
    std::thread caller([&] {
      cudaSetDevice(0);
      check(c.call(), c.name);
      callMs = msSince(t0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::atomic<double> otherMs{-1};
    std::thread other([&] {
      cudaSetDevice(0);
      const auto t1 = std::chrono::steady_clock::now();
      cudaEvent_t e;
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      check(cudaEventDestroy(e), "cudaEventDestroy");
      otherMs = msSince(t1);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(1800));
    reinterpret_cast<std::atomic<int>*>(word)->store(1);  // the stream goes on
    other.join();
    caller.join();
    check(cudaStreamSynchronize(held), "cudaStreamSynchronize");
    std::printf(
        "%-19s returned after %7.1f ms; another thread's event create+destroy took "
        "%7.1f ms: %s\n",
        c.name, callMs.load(), otherMs.load(),
        otherMs.load() > 1000 ? "HELD behind it" : "not held");
  }
  (void)cudaHostUnregister(toRegister);
  std::free(registered);
  std::free(toRegister);
  return 0;
}
