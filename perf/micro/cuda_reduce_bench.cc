// braid-cuda-micro: the device reduce kernel (the sum of K device buffers into one, as the
// direct algorithms use it) beside a device-to-device copy of the same buffer size.
//
//   build/perf/micro/braid-cuda-micro
//
// Bandwidth is memory traffic: (K + 1) x bytes for a K-input reduction, 2 x bytes for a
// copy, so the reduce kernel's bytes_per_second divided by the copy's is the fraction of
// copy bandwidth it reaches (issue 7 asks for 85% at K = 2, 4, 8 and 256 MiB). Each timed
// iteration is 10 launches and one stream synchronisation. Without a device every
// benchmark reports the reason and measures nothing.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "cuda/device.h"
#include "cuda/kernels.h"

namespace braid {
namespace {

constexpr size_t kBytes = size_t{256} << 20;
constexpr int kLaunchesPerIteration = 10;

// Device buffers for one benchmark, freed at the end of it.
struct Buffers {
  std::vector<void*> ptrs;
  ~Buffers() {
    for (void* p : ptrs) (void)cuda::deviceFree(p);
  }
  bool make(benchmark::State& state, int count) {
    for (int i = 0; i < count; ++i) {
      Expected<void*> p = cuda::deviceAlloc(kBytes);
      if (!p.isOk()) {
        state.SkipWithError(p.status().message().c_str());
        return false;
      }
      ptrs.push_back(p.value());
      (void)cuda::memsetAsync(p.value(), 0, kBytes, nullptr);
    }
    return true;
  }
};

// Runs `launch` kLaunchesPerIteration times per iteration and times them to completion.
template <typename Launch>
void timeLaunches(benchmark::State& state, int64_t trafficPerLaunch, Launch launch) {
  Status st = cuda::streamSynchronize(nullptr);
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunchesPerIteration && st.isOk(); ++i) st = launch();
    if (st.isOk()) st = cuda::streamSynchronize(nullptr);
    if (!st.isOk()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.SetBytesProcessed(state.iterations() * kLaunchesPerIteration * trafficPerLaunch);
}

bool haveDevice(benchmark::State& state) {
  if (cuda::hasDevice()) return true;
  state.SkipWithError(cuda::deviceStatus().reason.c_str());
  return false;
}

void BM_CudaReduceKBuffers(benchmark::State& state) {
  if (!haveDevice(state)) return;
  const int k = static_cast<int>(state.range(0));
  const auto dt = static_cast<braidDataType_t>(state.range(1));
  const size_t es = dt == braidFloat32 ? 4 : dt == braidFloat8e4m3 ? 1 : 2;
  Buffers b;
  if (!b.make(state, k + 1)) return;
  std::vector<const void*> srcs(b.ptrs.begin() + 1, b.ptrs.end());
  timeLaunches(state, static_cast<int64_t>((k + 1) * kBytes), [&] {
    return cuda::launchReduce(b.ptrs[0], srcs.data(), k, kBytes / es, dt, braidSum, 1, nullptr);
  });
}
BENCHMARK(BM_CudaReduceKBuffers)
    ->ArgNames({"K", "dtype"})
    ->ArgsProduct({{2, 4, 8}, {braidFloat32, braidBfloat16, braidFloat8e4m3}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_CudaMemcpyDeviceToDevice(benchmark::State& state) {
  if (!haveDevice(state)) return;
  Buffers b;
  if (!b.make(state, 2)) return;
  timeLaunches(state, static_cast<int64_t>(2 * kBytes),
               [&] { return cuda::copyAsync(b.ptrs[0], b.ptrs[1], kBytes, nullptr); });
}
BENCHMARK(BM_CudaMemcpyDeviceToDevice)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CudaCopyKernel(benchmark::State& state) {
  if (!haveDevice(state)) return;
  Buffers b;
  if (!b.make(state, 2)) return;
  timeLaunches(state, static_cast<int64_t>(2 * kBytes),
               [&] { return cuda::launchCopy(b.ptrs[0], b.ptrs[1], kBytes, nullptr); });
}
BENCHMARK(BM_CudaCopyKernel)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace braid

BENCHMARK_MAIN();
