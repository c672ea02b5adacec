// Micro benchmark of the device windows' per-call CPU work: the program of one call
// (buildWindowCall), its window schedules built for every rank and lowered to this
// rank's device operations (exec/cuda/window_program.h).
//
//   windowCall/cached/<collective>/<nranks>/<bytes>  a shape seen before (WindowPlans):
//                                                    the program copied, values rebased
//   windowCall/built/<collective>/<nranks>/<bytes>   a new shape every call: n schedules
//                                                    built, checked and lowered
// Collective 0: one-shot all-reduce, 1: two-shot all-reduce, 2: all-gather,
// 3: reduce-scatter; float32, halves of 32 MiB (the device windows' default), counter
// "ops": the stream operations the call enqueues.
#include <benchmark/benchmark.h>

#include "exec/cuda/window_program.h"

namespace braid {
namespace {

using algo::Collective;

constexpr size_t kHalf = size_t{32} << 20;

WindowCall callOf(const benchmark::State& state) {
  static constexpr Collective kColls[] = {Collective::kAllReduce, Collective::kAllReduce,
                                          Collective::kAllGather, Collective::kReduceScatter};
  WindowCall call;
  call.collective = kColls[state.range(0)];
  call.twoShot = state.range(0) == 1;
  call.elemSize = 4;
  call.count = static_cast<uint64_t>(state.range(2)) / 4;
  return call;
}

void windowCall(benchmark::State& state, bool cached) {
  const WindowCall call = callOf(state);
  const int nranks = static_cast<int>(state.range(1));
  WindowPlans plans;
  WindowCounts counts;
  size_t ops = 0;
  for (auto _ : state) {
    // Built: a cache of its own every call, so every call is a new shape.
    WindowPlans fresh;
    Expected<WindowProgram> p =
        buildWindowCall(call, 1, nranks, kHalf, &counts, 0, cached ? &plans : &fresh);
    if (!p.isOk()) {
      state.SkipWithError(p.status().message().c_str());
      return;
    }
    ops = p.value().ops.size();
    benchmark::DoNotOptimize(p.value().ops.data());
  }
  state.counters["ops"] = static_cast<double>(ops);
}

void windowArgs(benchmark::internal::Benchmark* b) {
  for (int coll : {0, 1, 2, 3}) {
    for (int n : {2, 8}) {
      for (int64_t bytes : {int64_t{4} << 10, int64_t{64} << 20}) {
        if (coll == 1 && n < 3) continue;
        b->Args({coll, n, bytes});
      }
    }
  }
}

BENCHMARK_CAPTURE(windowCall, cached, true)->Apply(windowArgs);
BENCHMARK_CAPTURE(windowCall, built, false)->Apply(windowArgs);

}  // namespace
}  // namespace braid
