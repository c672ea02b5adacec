// Micro benchmark of a device call's host-side cost, through the C API: a 1-rank
// communicator's all-reduce and all-gather of device memory on a CUDA stream, in place
// (nothing to move) and out of place (one copy), and a send to itself in place in a group:
// the argument checks, the stream's and buffers' classification, the executor's choice
// and the enqueue. Every 256th call waits for the stream, so the queue stays short.
// In braid-micro it runs on the machine's GPU (skipped without one); in braid-micro-emu
// (tests/gpu_emu) on the emulated GPU, whose enqueue is a host queue: the same host work
// before it, a different enqueue.
//
//   device_call/<collective>/<placement>   time per call
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "braid/braid.h"
#include "cuda/device.h"

namespace {

struct DeviceWorld {
  braidComm_t comm = nullptr;
  void* stream = nullptr;
  char* buf = nullptr;  // 2 x 4 KiB
  const char* why = nullptr;
};

const DeviceWorld& world() {
  static DeviceWorld w = [] {
    DeviceWorld d;
    if (!braid::cuda::hasDevice()) {
      d.why = "no CUDA device";
      return d;
    }
    braidUniqueId id;
    if (braidGetUniqueId(&id) != braidSuccess || braidCommInitRank(&d.comm, 1, id, 0) != braidSuccess) {
      std::fprintf(stderr, "device_call_bench: %s\n", braidGetLastError(nullptr));
      std::abort();
    }
    braid::Expected<void*> s = braid::cuda::streamCreate();
    braid::Expected<void*> b = braid::cuda::deviceAlloc(8192);
    if (!s.isOk() || !b.isOk()) {
      d.why = "cannot make a stream or device memory";
      return d;
    }
    d.stream = s.value();
    d.buf = static_cast<char*>(b.value());
    return d;
  }();
  return w;
}

template <typename Call>
void runCalls(benchmark::State& state, Call call) {
  const DeviceWorld& w = world();
  if (w.why != nullptr) {
    state.SkipWithError(w.why);
    return;
  }
  int64_t n = 0;
  for (auto _ : state) {
    if (call(w) != braidSuccess) {
      state.SkipWithError(braidGetLastError(w.comm));
      break;
    }
    if (++n % 256 == 0) (void)braid::cuda::streamSynchronize(w.stream);
  }
  (void)braid::cuda::streamSynchronize(w.stream);
}

braidStream_t streamOf(const DeviceWorld& w) { return static_cast<braidStream_t>(w.stream); }

void allReduceInPlace(benchmark::State& state) {
  runCalls(state, [](const DeviceWorld& w) {
    return braidAllReduce(w.buf, w.buf, 2, braidFloat32, braidSum, w.comm, streamOf(w));
  });
}
BENCHMARK(allReduceInPlace)->Name("device_call/all_reduce_8B/in_place");

void allReduceOutOfPlace(benchmark::State& state) {
  runCalls(state, [](const DeviceWorld& w) {
    return braidAllReduce(w.buf, w.buf + 4096, 2, braidFloat32, braidSum, w.comm, streamOf(w));
  });
}
BENCHMARK(allReduceOutOfPlace)->Name("device_call/all_reduce_8B/out_of_place");

void allGatherInPlace(benchmark::State& state) {
  runCalls(state, [](const DeviceWorld& w) {
    return braidAllGather(w.buf, w.buf, 16, braidFloat32, w.comm, streamOf(w));
  });
}
BENCHMARK(allGatherInPlace)->Name("device_call/all_gather_64B/in_place");

void sendToSelfInPlace(benchmark::State& state) {
  runCalls(state, [](const DeviceWorld& w) {
    braidGroupStart();
    braidSend(w.buf, 16, braidFloat32, 0, w.comm, streamOf(w));
    braidRecv(w.buf, 16, braidFloat32, 0, w.comm, streamOf(w));
    return braidGroupEnd();
  });
}
BENCHMARK(sendToSelfInPlace)->Name("device_call/sendrecv_64B/in_place");

}  // namespace
