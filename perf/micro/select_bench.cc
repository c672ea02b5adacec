// Micro benchmark of the per-call CPU work before any byte moves: building a
// schedule (algo::buildSchedule) and choosing the algorithm
// (Selector::chooseForCall, which remembers the last answer per collective,
// and Selector::choose, the full ranking it falls back to).
//
//   schedule/<algorithm>/<nranks>/<bytes>  all-reduce of float32
//   chooseForCall/repeat/<nranks>          the same size every call (a training loop)
//   chooseForCall/alternate/<nranks>       two sizes in turn: every call ranks again
//   choose/<nranks>                        the ranking itself
//   lower/<algorithm>/<nranks>/<bytes>     the CUDA executor's part: the schedule built
//                                          with 4 MiB device slots, then lowered to
//                                          device operations (counter "ops": the stream
//                                          operations a call enqueues)
// The selector prices on one node of host ranks with this VM's measured
// figures (REFERENCE.md: 0.17 us a step, ~25 GB/s a core).
#include <benchmark/benchmark.h>

#include <string>

#include "algorithms/registry.h"
#include "exec/cuda/device_program.h"
#include "select/select.h"

namespace braid {
namespace {

using algo::Algorithm;
using algo::Collective;

algo::CollArgs allReduceArgs(int nranks, int64_t bytes) {
  algo::CollArgs args;
  args.collective = Collective::kAllReduce;
  args.rank = 0;
  args.nranks = nranks;
  args.elemSize = 4;
  args.count = static_cast<uint64_t>(bytes) / 4;
  args.maxStepElems = (size_t{128} << 10) / 4;  // one 128 KiB shm slot
  return args;
}

void scheduleBench(benchmark::State& state, Algorithm a) {
  algo::CollArgs args = allReduceArgs(static_cast<int>(state.range(0)), state.range(1));
  for (auto _ : state) {
    algo::Schedule s = algo::buildSchedule(a, args);
    benchmark::DoNotOptimize(s.steps.data());
  }
  state.counters["steps"] = static_cast<double>(algo::buildSchedule(a, args).steps.size());
}

void lowerBench(benchmark::State& state, Algorithm a) {
  const int nranks = static_cast<int>(state.range(0));
  algo::CollArgs args = allReduceArgs(nranks, state.range(1));
  constexpr size_t kSlot = size_t{4} << 20;  // BRAID_CUDA_P2P_SLOT_BYTES's default
  args.maxStepElems = kSlot / 4;
  size_t ops = 0;
  for (auto _ : state) {
    algo::Schedule s = algo::buildSchedule(a, args);
    PairCounts counts(nranks);
    Expected<std::vector<DeviceOp>> program = lowerSchedule(s, 4, kSlot, &counts);
    if (!program.isOk()) {
      state.SkipWithError(program.status().message().c_str());
      return;
    }
    ops = program.value().size();
    benchmark::DoNotOptimize(program.value().data());
  }
  state.counters["ops"] = static_cast<double>(ops);
}

Selector hostSelector(int nranks) {
  CostInputs in;
  in.nranks = nranks;
  in.nodes = 1;
  in.ranksPerNode = nranks;
  in.intra = LinkCost{0.17, 25.0};
  in.inter = in.intra;
  in.source = "micro benchmark";
  return Selector(AlgoPolicy::parse("").value(), in);
}

void chooseForCallBench(benchmark::State& state, bool alternate) {
  Selector selector = hostSelector(static_cast<int>(state.range(0)));
  const uint64_t sizes[2] = {uint64_t{1} << 20, uint64_t{1} << 21};
  uint64_t i = 0;
  for (auto _ : state) {
    auto choice = selector.chooseForCall(Collective::kAllReduce, sizes[alternate ? (i++ & 1) : 0]);
    benchmark::DoNotOptimize(choice);
  }
}

void chooseBench(benchmark::State& state) {
  Selector selector = hostSelector(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto choice = selector.choose(Collective::kAllReduce, uint64_t{1} << 20);
    benchmark::DoNotOptimize(choice);
  }
}

const bool kRegistered = [] {
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHalvingDoubling,
                      Algorithm::kDirect, Algorithm::kTwoShot}) {
    std::string name = std::string("schedule/") + algo::algorithmName(a);
    benchmark::RegisterBenchmark(name.c_str(), scheduleBench, a)
        ->ArgsProduct({{2, 4, 8}, {8, int64_t{64} << 20}});
  }
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHalvingDoubling}) {
    std::string name = std::string("lower/") + algo::algorithmName(a);
    benchmark::RegisterBenchmark(name.c_str(), lowerBench, a)
        ->ArgsProduct({{2, 4, 8}, {8, int64_t{128} << 20}});
  }
  benchmark::RegisterBenchmark("chooseForCall/repeat", chooseForCallBench, false)->Arg(2)->Arg(8);
  benchmark::RegisterBenchmark("chooseForCall/alternate", chooseForCallBench, true)->Arg(2)->Arg(8);
  benchmark::RegisterBenchmark("choose", chooseBench)->Arg(2)->Arg(8);
  return true;
}();

}  // namespace
}  // namespace braid
