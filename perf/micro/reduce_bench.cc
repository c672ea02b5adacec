// Micro benchmark of the host reduction kernels: every datatype x op of the
// build in use (reduceIsa(): AVX2 where the CPU has it), the portable build's
// sum per datatype for reference, and memcpy of the same bytes.
//
// Bytes per second count memory traffic: 2 reads + 1 write per element for a
// kernel, 1 read + 1 write for memcpy, so the numbers compare directly. Sizes
// are per buffer: 64 KiB (three buffers stay in L2) and 16 MiB (from memory,
// or L3 where it is large). Names: reduce/<isa>/<type>/<op>/<bytes>.
//   braid-micro --benchmark_filter='reduce/avx2/float32'
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "exec/reduce.h"
#include "exec/reduce_tables.h"

namespace braid {
namespace {

constexpr int64_t kSmall = int64_t{64} << 10;
constexpr int64_t kLarge = int64_t{16} << 20;

// Buffers hold zeros: a valid value of every type, and never a subnormal (which would
// measure the CPU's slow path rather than the kernel).
void reduceBench(benchmark::State& state, const ReduceKernels* k, braidDataType_t dt) {
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

void registerKernel(const char* isa, const ReduceKernels* k, braidDataType_t dt,
                    braidRedOp_t op) {
  if (k == nullptr) return;
  std::string name = std::string("reduce/") + isa + "/" + datatypeName(dt) + "/" + redOpName(op);
  benchmark::RegisterBenchmark(name.c_str(), reduceBench, k, dt)->Arg(kSmall)->Arg(kLarge);
}

// Registered before main() runs (a static initialiser, as BENCHMARK() does).
const bool kRegistered = [] {
  benchmark::RegisterBenchmark("memcpy", memcpyBench)->Arg(kSmall)->Arg(kLarge);
  for (int t = 0; t < braidNumTypes; ++t) {
    auto dt = static_cast<braidDataType_t>(t);
    for (int o = 0; o < braidNumOps; ++o) {
      auto op = static_cast<braidRedOp_t>(o);
      registerKernel(reduceIsa(), &reduceKernels(dt, op), dt, op);
    }
  }
  for (int t = 0; t < braidNumTypes; ++t) {
    auto dt = static_cast<braidDataType_t>(t);
    if (std::strcmp(reduceIsa(), "generic") != 0) {
      registerKernel("generic", reduceTableGeneric(dt, braidSum), dt, braidSum);
    }
  }
  return true;
}();

}  // namespace
}  // namespace braid
