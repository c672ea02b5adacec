// Micro benchmark of a whole call's bookkeeping, through the C API: braidAllReduce of
// 8 bytes of host memory on the NULL stream of a 1-rank communicator, where no byte
// crosses a link and the call is its argument checks, the communicator's lookup, the
// algorithm's choice, the schedule cache and the one-rank copy.
//
//   call/all_reduce_8B/1rank   time per call
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "braid/braid.h"

namespace {

braidComm_t oneRankComm() {
  static braidComm_t comm = [] {
    braidUniqueId id;
    braidComm_t c = nullptr;
    if (braidGetUniqueId(&id) != braidSuccess || braidCommInitRank(&c, 1, id, 0) != braidSuccess) {
      std::fprintf(stderr, "call_bench: no 1-rank communicator: %s\n", braidGetLastError(nullptr));
      std::abort();
    }
    return c;
  }();
  return comm;
}

void callAllReduce8B(benchmark::State& state) {
  braidComm_t comm = oneRankComm();
  float in[2] = {1.0f, 2.0f};
  float out[2] = {};
  for (auto _ : state) {
    if (braidAllReduce(in, out, 2, braidFloat32, braidSum, comm, nullptr) != braidSuccess) {
      state.SkipWithError(braidGetLastError(comm));
      break;
    }
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(callAllReduce8B)->Name("call/all_reduce_8B/1rank");

}  // namespace
