// Micro benchmark of handing a buffer from one core to another through shared
// memory: this process fills S bytes of a MAP_SHARED buffer from private
// memory and raises a flag; a forked partner on the other CPU reads all S
// bytes and answers. One iteration is one such round, so it holds both the
// producer's copy and the consumer's read of what was just written.
//
//   crossCoreCopy/plain/S      memcpy into the shared buffer
//   crossCoreCopy/streamed/S   exec/stream_copy.h's streamLines (non-temporal)
//
// The consumer read every line last round, so a plain store must take each
// line back first (read-for-ownership + invalidation); streamed stores do not,
// and the consumer then reads from memory. This is the bound on any schedule
// over private buffers (window copy-ins, FIFO slots), and why stream_copy.h
// switches at 24 KiB. Needs 2 CPUs.
//
//   copyAliasing/memcpy/S/D    memcpy of S bytes in one process, the destination D bytes
//                              past the source modulo 4 KiB
//   copyAliasing/copyBytes/S/D exec/copy.h's copyBytes, the same
//
// glibc's `rep movsb` (a few KiB to ~1 MiB) is many times slower at D = 1..63 on AMD Zen;
// copyBytes steps around it (exec/copy.h).
#include <benchmark/benchmark.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "exec/copy.h"
#include "exec/stream_copy.h"

namespace braid {
namespace {

struct alignas(64) Flags {
  std::atomic<uint64_t> posted{0};
  alignas(64) std::atomic<uint64_t> read{0};
};
constexpr uint64_t kStop = ~uint64_t{0};

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

[[noreturn]] void consumer(Flags* f, const char* data, size_t bytes) {
  pinTo(1);
  uint64_t seen = 0;
  uint64_t sum = 0;
  for (;;) {
    uint64_t v;
    while ((v = f->posted.load(std::memory_order_acquire)) == seen) {
    }
    if (v == kStop) _exit(static_cast<int>(sum & 1));
    for (size_t i = 0; i < bytes; i += 8) {
      uint64_t w;
      std::memcpy(&w, data + i, 8);
      sum += w;
    }
    seen = v;
    f->read.store(v, std::memory_order_release);
  }
}

void crossCoreCopy(benchmark::State& state, bool streamed) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
    state.SkipWithError("needs a second CPU");
    return;
  }
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t mapped = 4096 + bytes;
  void* mem = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    state.SkipWithError("mmap failed");
    return;
  }
  auto* flags = new (mem) Flags();
  char* shared = static_cast<char*>(mem) + 4096;
  std::memset(shared, 1, bytes);
  std::vector<char> src(bytes, 2);
  pid_t child = fork();
  if (child < 0) {
    munmap(mem, mapped);
    state.SkipWithError("fork failed");
    return;
  }
  if (child == 0) consumer(flags, shared, bytes);
  cpu_set_t saved;
  sched_getaffinity(0, sizeof(saved), &saved);
  pinTo(0);
  uint64_t round = 0;
  for (auto _ : state) {
    if (streamed) {
      streamLines(shared, src.data(), bytes);
    } else {
      std::memcpy(shared, src.data(), bytes);
    }
    flags->posted.store(++round, std::memory_order_release);
    while (flags->read.load(std::memory_order_acquire) != round) {
    }
  }
  flags->posted.store(kStop, std::memory_order_release);
  waitpid(child, nullptr, 0);
  sched_setaffinity(0, sizeof(saved), &saved);
  munmap(mem, mapped);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

BENCHMARK_CAPTURE(crossCoreCopy, plain, false)
    ->RangeMultiplier(8)
    ->Range(8 << 10, 16 << 20)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(crossCoreCopy, streamed, true)
    ->RangeMultiplier(8)
    ->Range(8 << 10, 16 << 20)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void copyAliasing(benchmark::State& state, bool ours) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t ahead = static_cast<size_t>(state.range(1));
  void* a = nullptr;
  void* b = nullptr;
  if (posix_memalign(&a, 4096, bytes + 4096) != 0 || posix_memalign(&b, 4096, bytes + 4096) != 0) {
    free(a);
    state.SkipWithError("allocation failed");
    return;
  }
  char* src = static_cast<char*>(a);
  char* dst = static_cast<char*>(b) + ahead;
  std::memset(src, 1, bytes);
  std::memset(dst, 2, bytes);
  for (auto _ : state) {
    if (ours) {
      copyBytes(dst, src, bytes);
    } else {
      std::memcpy(dst, src, bytes);
    }
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  free(a);
  free(b);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

BENCHMARK_CAPTURE(copyAliasing, memcpy, false)
    ->ArgsProduct({{4 << 10, 128 << 10, 4 << 20}, {0, 16, 48, 64}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(copyAliasing, copyBytes, true)
    ->ArgsProduct({{4 << 10, 128 << 10, 4 << 20}, {0, 16, 48, 64}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace braid
