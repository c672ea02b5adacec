// Micro benchmark of the shared-memory flag hand-off between two processes:
// a cache-line flag in a MAP_SHARED mapping, bounced between this process and
// a forked partner. One iteration is one round trip; the one_way counter is
// half of it (the latency a flag-based one-shot collective pays per step).
//
//   handOff/spin_cross_core   pinned to CPUs 0 and 1, both spin (needs 2 CPUs)
//   handOff/yield_same_core   both pinned to CPU 0, sched_yield between looks
//                             (what ranks sharing a core pay)
// The partner answers until it sees the stop value, then exits; the benchmark
// waits for it, so no process outlives a run.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <new>

namespace braid {
namespace {

constexpr uint64_t kStop = ~uint64_t{0};

struct alignas(64) SharedFlag {
  std::atomic<uint64_t> value{0};
};

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

// Waits until the flag differs from `seen`; returns the new value.
uint64_t waitChange(SharedFlag* f, uint64_t seen, bool yield) {
  uint64_t v;
  while ((v = f->value.load(std::memory_order_acquire)) == seen) {
    if (yield) sched_yield();
  }
  return v;
}

// Partner: answers each odd value v with v + 1.
[[noreturn]] void partner(SharedFlag* f, int cpu, bool yield) {
  pinTo(cpu);
  uint64_t seen = 0;
  for (;;) {
    uint64_t v = waitChange(f, seen, yield);
    if (v == kStop) _exit(0);
    seen = v + 1;
    f->value.store(seen, std::memory_order_release);
  }
}

void handOff(benchmark::State& state, int cpuSelf, int cpuPartner, bool yield) {
  if (cpuPartner >= sysconf(_SC_NPROCESSORS_ONLN)) {
    state.SkipWithError("needs a second CPU");
    return;
  }
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    state.SkipWithError("mmap of the shared flag failed");
    return;
  }
  auto* flag = new (mem) SharedFlag();
  pid_t child = fork();
  if (child < 0) {
    munmap(mem, 4096);
    state.SkipWithError("fork failed");
    return;
  }
  if (child == 0) partner(flag, cpuPartner, yield);
  cpu_set_t saved;
  sched_getaffinity(0, sizeof(saved), &saved);
  pinTo(cpuSelf);
  uint64_t v = 0;
  for (auto _ : state) {
    flag->value.store(++v, std::memory_order_release);
    v = waitChange(flag, v, yield);
  }
  flag->value.store(kStop, std::memory_order_release);
  waitpid(child, nullptr, 0);
  sched_setaffinity(0, sizeof(saved), &saved);
  munmap(mem, 4096);
  // Hand-offs per second, inverted: seconds per one-way hand-off ("170n s").
  state.counters["one_way"] = benchmark::Counter(static_cast<double>(state.iterations()) * 2,
                                                 benchmark::Counter::kIsRate |
                                                     benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(handOff, spin_cross_core, 0, 1, false)->UseRealTime();
BENCHMARK_CAPTURE(handOff, yield_same_core, 0, 0, true)->UseRealTime();

}  // namespace
}  // namespace braid
