// Micro benchmark of the host reduction kernels, each build, beside memcpy.
//
// Bytes per second count memory traffic: 2 reads + 1 write per element for a kernel,
// 1 read + 1 write for memcpy, so the numbers compare directly. Sizes are per buffer:
// 64 KiB (three buffers stay in L2) and 16 MiB (from memory, or L3 where it is large).
// Run: reduce_bench [--benchmark_filter=avx2]
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "exec/reduce.h"
#include "exec/reduce_tables.h"

namespace braid {
namespace {

using TableFn = const ReduceKernels* (*)(braidDataType_t, braidRedOp_t);

constexpr int64_t kSmall = int64_t{64} << 10;
constexpr int64_t kLarge = int64_t{16} << 20;

// Buffers hold zeros: a valid value of every type, and never a subnormal (which would
// measure the CPU's slow path rather than the kernel).
void reduceBench(benchmark::State& state, TableFn table, braidDataType_t dt, braidRedOp_t op) {
  if (table == &reduceTableAvx2 && !cpuSupportsReduceAvx2()) {
    state.SkipWithError("this CPU lacks AVX2, F16C or FMA");
    return;
  }
  const ReduceKernels* k = table(dt, op);
  size_t bytes = static_cast<size_t>(state.range(0));
  size_t count = bytes / datatypeSize(dt);
  std::vector<unsigned char> a(bytes), b(bytes), d(bytes);
  for (auto _ : state) {
    k->reduce(d.data(), a.data(), b.data(), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * static_cast<int64_t>(bytes));
}

void memcpyBench(benchmark::State& state) {
  size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<unsigned char> src(bytes), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * static_cast<int64_t>(bytes));
}

#define BRAID_REDUCE_BENCH(isa, table, dt, op)                                   \
  BENCHMARK_CAPTURE(reduceBench, isa##_##dt##_##op, table, braid##dt, braid##op) \
      ->Arg(kSmall)                                                              \
      ->Arg(kLarge)

BENCHMARK(memcpyBench)->Arg(kSmall)->Arg(kLarge);
BRAID_REDUCE_BENCH(avx2, &reduceTableAvx2, Float32, Sum);
BRAID_REDUCE_BENCH(avx2, &reduceTableAvx2, Bfloat16, Sum);
BRAID_REDUCE_BENCH(avx2, &reduceTableAvx2, Float16, Sum);
BRAID_REDUCE_BENCH(avx2, &reduceTableAvx2, Int32, Max);
BRAID_REDUCE_BENCH(avx2, &reduceTableAvx2, Float64, Sum);
BRAID_REDUCE_BENCH(generic, &reduceTableGeneric, Float32, Sum);
BRAID_REDUCE_BENCH(generic, &reduceTableGeneric, Bfloat16, Sum);
BRAID_REDUCE_BENCH(generic, &reduceTableGeneric, Float16, Sum);
BRAID_REDUCE_BENCH(generic, &reduceTableGeneric, Int32, Max);
BRAID_REDUCE_BENCH(generic, &reduceTableGeneric, Float64, Sum);

}  // namespace
}  // namespace braid

BENCHMARK_MAIN();
