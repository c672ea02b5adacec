// floor_probe: what this machine's memory system allows, for issue 5's floor A.
//
//   floor A = ceil(log2 P) x one-way latency + 2 P n / B
//
// needs two numbers this program measures, in the same run as the peers:
//  - B: STREAM bandwidth (copy, scale, add, triad; STREAM's byte counts) of 1
//    and 2 threads, each pinned to its own CPU, for a given working set (the
//    bytes of all arrays together). Each sample repeats the kernel until it
//    lasts ~200 us, so small, in-cache working sets are timed too; the best
//    sample of each kernel counts (STREAM's rule), after one untimed pass that
//    faults the pages in.
//  - one-way latency: two processes hand a cache-line flag back and forth in a
//    shared mapping; one way is half a round trip. "spin": pinned to different
//    CPUs, spinning. "yield": both pinned to one CPU, sched_yield between
//    looks (what ranks sharing a core pay).
//
// And floor B, what an all-reduce of private buffers between 2 ranks on 2
// cores cannot beat: each rank's n input bytes must reach the other core. The
// exchange probe times that alone, in the steady state of repeated calls: two
// processes pinned to CPUs 0 and 1, each round copying n bytes from a private
// buffer into its shared slot (whose lines the peer read last round), handing
// over, and copying the peer's slot into a private buffer; a round also waits
// until the peer has read the slot before it is written again. The best of
// plain and streaming (non-temporal) stores for the slot counts.
//
// And floor C, the same for buffers peers read where they lie (braidMemAlloc,
// braidCommRegister): no copy in or out, but each rank's n input bytes are
// still read by the other core. Each round of the in-place probe flags its
// input ready, waits for the peer's, sums both inputs into a private output
// (float32), then flags it is done with the peer's input and waits for the
// peer's flag (a caller may change its input once the call returns).
//
// And the single-copy floor, what a collective of private buffers that moves
// each byte once cannot beat: each round of the single-copy probe flags its input
// ready, waits for the peer's, reads the peer's private input with one
// process_vm_readv (cross-memory attach, no shared mapping), flags it is done and
// waits for the peer's flag. "single_copy": both ways at once, like an all-gather
// of 2 ranks; "single_copy_one": one side reads while the other only hands off,
// like a broadcast of 2 ranks. "_burst": the same with up to 64 reads back to
// back between hand-offs (a burst moves ~4 MiB a side; none from 4 MiB up), per
// read, which prices the copy alone: the difference is what a hand-off costs.
// The buffers start on pages (PageBuffer says why).
//
// Output, one fact a line (perf/compare/compare.py parses it):
//   stream <threads> <working set bytes> <kernel> <GB/s>
//   latency spin|yield <one-way us>
//   exchange <bytes per rank> <us per round>
//   # exchange <bytes>: plain stores <us>, streaming <us>   (both, for the reader)
//   inplace <bytes per rank> <us per round>
//   single_copy <bytes per rank> <us per round>      (absent where the system refuses it)
//   single_copy_one <bytes> <us per round>
//   single_copy_burst | single_copy_one_burst <bytes> <us per read>
//
//   floor_probe [--quick] [--latency-only | --stream-only] [--exchange n,n,...]
//               [--inplace n,n,...] [--single-copy n,n,...] [working set bytes ...]
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "exec/stream_copy.h"

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int onlineCpus() { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); }

bool pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// ---- STREAM -------------------------------------------------------------

enum class Kernel { kCopy, kScale, kAdd, kTriad };
constexpr Kernel kKernels[] = {Kernel::kCopy, Kernel::kScale, Kernel::kAdd, Kernel::kTriad};

const char* kernelName(Kernel k) {
  switch (k) {
    case Kernel::kCopy: return "copy";
    case Kernel::kScale: return "scale";
    case Kernel::kAdd: return "add";
    case Kernel::kTriad: return "triad";
  }
  return "?";
}

// Arrays a kernel touches (STREAM counts each once per element).
int arraysOf(Kernel k) { return k == Kernel::kAdd || k == Kernel::kTriad ? 3 : 2; }

// One thread's share [lo, hi) of the arrays, `reps` times.
void runKernel(Kernel k, double* a, double* b, double* c, size_t lo, size_t hi, long reps) {
  const double s = 3.0;
  for (long r = 0; r < reps; ++r) {
    switch (k) {
      case Kernel::kCopy:
        for (size_t i = lo; i < hi; ++i) c[i] = a[i];
        break;
      case Kernel::kScale:
        for (size_t i = lo; i < hi; ++i) b[i] = s * c[i];
        break;
      case Kernel::kAdd:
        for (size_t i = lo; i < hi; ++i) c[i] = a[i] + b[i];
        break;
      case Kernel::kTriad:
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
        break;
    }
    // Keeps the compiler from folding repetitions of an idempotent kernel.
    asm volatile("" ::: "memory");
  }
}

// Threads that run one kernel together, released by a spinning barrier so
// that a sample's start costs no system call.
class Team {
 public:
  explicit Team(int threads) : threads_(threads) {}

  // Seconds for `reps` passes of `k` over n elements, split evenly; the time
  // is from release until the last thread finishes.
  double run(Kernel k, double* a, double* b, double* c, size_t n, long reps) {
    std::atomic<int> ready{0}, done{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> workers;
    for (int t = 1; t < threads_; ++t) {
      workers.emplace_back([&, t] {
        pinTo(t % onlineCpus());
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        runKernel(k, a, b, c, n * t / threads_, n * (t + 1) / threads_, reps);
        done.fetch_add(1, std::memory_order_release);
      });
    }
    while (ready.load() != threads_ - 1) {
    }
    Clock::time_point t0 = Clock::now();
    go.store(true, std::memory_order_release);
    runKernel(k, a, b, c, 0, n / threads_, reps);
    while (done.load(std::memory_order_acquire) != threads_ - 1) {
    }
    double s = secondsSince(t0);
    for (auto& w : workers) w.join();
    return s;
  }

 private:
  int threads_;
};

// Best GB/s of kernel `k` with `threads` threads over `workingSet` bytes.
double streamBandwidth(Kernel k, int threads, size_t workingSet, int samples) {
  size_t n = std::max<size_t>(workingSet / arraysOf(k) / sizeof(double), 64 * threads);
  std::vector<double> a(n, 1.0), b(n, 2.0), c(n, 0.5);
  Team team(threads);
  team.run(k, a.data(), b.data(), c.data(), n, 1);  // faults pages in, warms caches
  double bytesPerRep = static_cast<double>(arraysOf(k) * n * sizeof(double));
  double once = std::max(team.run(k, a.data(), b.data(), c.data(), n, 1), 1e-8);
  long reps = std::max(1L, static_cast<long>(200e-6 / once));
  double best = 0;
  for (int s = 0; s < samples; ++s) {
    double t = team.run(k, a.data(), b.data(), c.data(), n, reps);
    best = std::max(best, bytesPerRep * reps / t / 1e9);
  }
  return best;
}

// ---- one-way latency --------------------------------------------------

struct alignas(64) Flag {
  std::atomic<uint64_t> value{0};
};

// Round trips between this process and a forked child pinned to cpuA / cpuB;
// returns one-way microseconds (best of a few batches), or -1 on failure.
double handOffUs(int cpuA, int cpuB, bool yield, int roundTrips) {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("floor_probe: mmap");
    return -1;
  }
  Flag* flag = new (mem) Flag();
  auto waitFor = [&](uint64_t want) {
    while (flag->value.load(std::memory_order_acquire) != want) {
      if (yield) sched_yield();
    }
  };
  constexpr int kBatches = 5;
  pid_t child = fork();
  if (child < 0) {
    std::perror("floor_probe: fork");
    munmap(mem, 4096);
    return -1;
  }
  if (child == 0) {  // answers odd values with the next even one
    pinTo(cpuB);
    for (uint64_t v = 1; v < 2ull * roundTrips * kBatches; v += 2) {
      waitFor(v);
      flag->value.store(v + 1, std::memory_order_release);
    }
    _exit(0);
  }
  pinTo(cpuA);
  double best = 1e30;
  uint64_t v = 0;
  for (int batch = 0; batch < kBatches; ++batch) {
    Clock::time_point t0 = Clock::now();
    for (int i = 0; i < roundTrips; ++i) {
      flag->value.store(++v, std::memory_order_release);
      waitFor(++v);
    }
    best = std::min(best, secondsSince(t0) / roundTrips / 2 * 1e6);
  }
  int status = 0;
  waitpid(child, &status, 0);
  munmap(mem, 4096);
  return status == 0 ? best : -1;
}

// ---- exchange (floor B) ------------------------------------------------

// Page-aligned private memory, zeroed: the exchange and single-copy probes' buffers
// start on pages, as large allocations do. Two heap blocks side by side sit 16 bytes
// apart modulo 4 KiB, and a copy whose destination lies 8 or 16 bytes past its source
// modulo 4 KiB runs at a quarter of the speed (on AMD EPYC: rep movsb, so glibc's
// memcpy at 64 KiB and the kernel's copy in process_vm_readv; a load seems to wait on
// the store just before it, 4K aliasing): the probes timed the layout, not the copy.
class PageBuffer {
 public:
  explicit PageBuffer(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~PageBuffer() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  char* data() const { return data_; }

 private:
  size_t bytes_;
  char* data_;
};

struct alignas(64) Counters {
  std::atomic<uint64_t> written{0};  // rounds whose slot is filled
  alignas(64) std::atomic<uint64_t> read{0};  // rounds whose peer slot was read
};

// One process's side of `rounds` exchange rounds; `me` is 0 or 1.
void exchangeRounds(int me, char* slots, Counters* ctr, size_t bytes, char* src, char* dst,
                    bool streaming, long rounds, uint64_t base) {
  Counters& mine = ctr[me];
  Counters& peer = ctr[1 - me];
  for (long r = 1; r <= rounds; ++r) {
    uint64_t round = base + static_cast<uint64_t>(r);
    while (peer.read.load(std::memory_order_acquire) + 1 < round) {
    }
    if (streaming) {
      braid::streamLines(slots + me * bytes, src, bytes);  // as Braid's windows stream
    } else {
      std::memcpy(slots + me * bytes, src, bytes);
    }
    mine.written.store(round, std::memory_order_release);
    while (peer.written.load(std::memory_order_acquire) < round) {
    }
    std::memcpy(dst, slots + (1 - me) * bytes, bytes);
    mine.read.store(round, std::memory_order_release);
  }
}

// Runs `round(me, counters, shared, rounds, base)` in two processes pinned to
// CPUs 0 and 1 (me 0 and 1) over a fresh shared mapping: two Counters, then
// `sharedBytes` zeroed bytes. `batches` timed batches of `rounds` after one
// that warms up (about 20 MiB moved per batch at `bytesPerRound`, at least 5
// rounds); `check(me)` says whether a side's results are right. Microseconds
// per round (best batch), or -1.
template <typename Round, typename Check>
double pairedRoundsUs(size_t sharedBytes, size_t bytesPerRound, int batches, Round round,
                      Check check) {
  const size_t map = sizeof(Counters) * 2 + sharedBytes;
  void* mem = mmap(nullptr, map, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("floor_probe: mmap");
    return -1;
  }
  auto* ctr = new (mem) Counters[2]();
  char* shared = static_cast<char*>(mem) + sizeof(Counters) * 2;
  const long rounds = std::max(5L, static_cast<long>((20u << 20) / bytesPerRound));
  pid_t child = fork();
  if (child < 0) {
    std::perror("floor_probe: fork");
    munmap(mem, map);
    return -1;
  }
  int me = child == 0 ? 1 : 0;
  pinTo(me);
  double best = 1e30;
  uint64_t base = 0;
  for (int b = 0; b <= batches; ++b) {
    Clock::time_point t0 = Clock::now();
    round(me, ctr, shared, rounds, base);
    base += static_cast<uint64_t>(rounds);
    if (b > 0) best = std::min(best, secondsSince(t0) / static_cast<double>(rounds) * 1e6);
  }
  if (child == 0) _exit(check(me) ? 0 : 1);
  int status = 0;
  waitpid(child, &status, 0);
  bool ok = status == 0 && check(me);
  munmap(mem, map);
  return ok ? best : -1;
}

// Microseconds per exchange round of `bytes` each way (best batch), or -1.
double exchangeUs(size_t bytes, bool streaming, int batches) {
  bytes = std::max<size_t>(bytes / 64 * 64, 64);
  PageBuffer srcPages(bytes), dstPages(bytes);
  char* src = srcPages.data();
  char* dst = dstPages.data();
  if (src == nullptr || dst == nullptr) {
    std::perror("floor_probe: mmap");
    return -1;
  }
  return pairedRoundsUs(
      2 * bytes, bytes, batches,
      [&](int me, Counters* ctr, char* slots, long n, uint64_t base) {
        if (src[0] == 0) std::memset(src, me + 2, bytes);
        exchangeRounds(me, slots, ctr, bytes, src, dst, streaming, n, base);
      },
      [&](int me) { return dst[bytes - 1] == (me == 0 ? 3 : 2); });
}

// ---- in place (floor C) -------------------------------------------------

// One process's side of `rounds` in-place all-reduce rounds; `me` is 0 or 1.
void inPlaceRounds(int me, const float* inputs, Counters* ctr, size_t count, float* out,
                   long rounds, uint64_t base) {
  Counters& mine = ctr[me];
  Counters& peer = ctr[1 - me];
  const float* own = inputs + static_cast<size_t>(me) * count;
  const float* theirs = inputs + static_cast<size_t>(1 - me) * count;
  for (long r = 1; r <= rounds; ++r) {
    uint64_t round = base + static_cast<uint64_t>(r);
    mine.written.store(round, std::memory_order_release);  // my input is ready
    while (peer.written.load(std::memory_order_acquire) < round) {
    }
    for (size_t i = 0; i < count; ++i) out[i] = own[i] + theirs[i];
    mine.read.store(round, std::memory_order_release);  // done with the peer's input
    while (peer.read.load(std::memory_order_acquire) < round) {
    }
  }
}

// Microseconds per in-place round of `bytes` per rank (best batch), or -1.
double inPlaceUs(size_t bytes, int batches) {
  const size_t count = std::max<size_t>(bytes / 64 * 64, 64) / sizeof(float);
  std::vector<float> out(count, 0.0F);
  return pairedRoundsUs(
      2 * count * sizeof(float), count * sizeof(float), batches,
      [&](int me, Counters* ctr, char* shared, long n, uint64_t base) {
        auto* inputs = reinterpret_cast<float*>(shared);
        // Each rank writes its own input, on its own CPU, as a caller would.
        float* own = inputs + static_cast<size_t>(me) * count;
        if (own[0] != static_cast<float>(me + 1)) std::fill(own, own + count, me + 1.0F);
        inPlaceRounds(me, inputs, ctr, count, out.data(), n, base);
      },
      [&](int) { return out[0] == 3.0F && out[count - 1] == 3.0F; });
}

// ---- single copy ---------------------------------------------------------


// How the single-copy probe reads: both sides at once or one while the other
// waits, one read per hand-off or `reads` reads back to back between hand-offs.
struct SingleCopyMode {
  bool both;
  int reads;
};

// One process's side of `rounds` single-copy rounds: `src` lies at the same address
// in both processes (allocated before the fork), each filled by its owner.
bool singleCopyRounds(int me, pid_t peer, Counters* ctr, size_t bytes, const char* src, char* dst,
                      SingleCopyMode mode, long rounds, uint64_t base) {
  Counters& mine = ctr[me];
  Counters& theirs = ctr[1 - me];
  const bool reads = mode.both || me == 0;
  bool ok = true;
  for (long r = 1; r <= rounds; ++r) {
    uint64_t round = base + static_cast<uint64_t>(r);
    mine.written.store(round, std::memory_order_release);
    while (theirs.written.load(std::memory_order_acquire) < round) {
    }
    for (int k = 0; reads && k < mode.reads; ++k) {
      iovec local{dst, bytes};
      iovec remote{const_cast<char*>(src), bytes};
      ok = ok && process_vm_readv(peer, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes);
    }
    mine.read.store(round, std::memory_order_release);
    while (theirs.read.load(std::memory_order_acquire) < round) {
    }
  }
  return ok;
}

// Microseconds per single-copy read of `bytes` (best batch; a round of `mode.reads`
// reads counts as that many), or -1.
double singleCopyUs(size_t bytes, SingleCopyMode mode, int batches) {
  bytes = std::max<size_t>(bytes / 64 * 64, 64);
  PageBuffer srcPages(bytes), dstPages(bytes);
  char* src = srcPages.data();
  char* dst = dstPages.data();
  if (src == nullptr || dst == nullptr) {
    std::perror("floor_probe: mmap");
    return -1;
  }
  const pid_t parent = getpid();
  pid_t child = -1;  // the parent learns it through the shared page
  bool ok = true;
  const double us = pairedRoundsUs(
      sizeof(pid_t), bytes * static_cast<size_t>(mode.reads), batches,
      [&](int me, Counters* ctr, char* shared, long n, uint64_t base) {
        auto* childPid = reinterpret_cast<std::atomic<pid_t>*>(shared);
        if (src[0] == 0) {
          std::memset(src, me + 2, bytes);
          if (me == 1) childPid->store(getpid());
          while (childPid->load() == 0) {
          }
          child = childPid->load();
        }
        ok = singleCopyRounds(me, me == 0 ? child : parent, ctr, bytes, src, dst,
                              mode, n, base) && ok;
      },
      [&](int me) { return ok && (!mode.both && me == 1 ? true : dst[bytes - 1] == 3 - me); });
  return us < 0 ? us : us / mode.reads;
}

// Restores the affinity the program started with (the latency probe pins).
class AffinityGuard {
 public:
  AffinityGuard() { sched_getaffinity(0, sizeof(saved_), &saved_); }
  ~AffinityGuard() { sched_setaffinity(0, sizeof(saved_), &saved_); }

 private:
  cpu_set_t saved_;
};

int usage() {
  std::fprintf(stderr,
               "usage: floor_probe [--quick] [--latency-only | --stream-only] "
               "[--exchange n,n,...] [--inplace n,n,...] [--single-copy n,n,...] "
               "[working-set bytes ...]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, stream = true, latency = true;
  std::vector<size_t> sets, exchanges, inplaces, singles;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--latency-only") {
      stream = false;
    } else if (a == "--stream-only") {
      latency = false;
    } else if ((a == "--exchange" || a == "--inplace" || a == "--single-copy") && i + 1 < argc) {
      std::vector<size_t>& into = a == "--exchange" ? exchanges
                                  : a == "--inplace" ? inplaces
                                                     : singles;
      for (const char* p = argv[++i]; *p != '\0';) {
        char* end = nullptr;
        unsigned long long v = std::strtoull(p, &end, 10);
        if (end == p || v == 0 || (*end != ',' && *end != '\0')) {
          std::fprintf(stderr, "floor_probe: %s wants sizes in bytes, comma-separated\n",
                       a.c_str());
          return usage();
        }
        into.push_back(static_cast<size_t>(v));
        p = *end == ',' ? end + 1 : end;
      }
    } else if (a == "-h" || a == "--help") {
      return usage();
    } else {
      char* end = nullptr;
      unsigned long long v = std::strtoull(a.c_str(), &end, 10);
      if (end == a.c_str() || *end != '\0' || v == 0) {
        std::fprintf(stderr, "floor_probe: '%s' is not a working-set size in bytes\n", a.c_str());
        return usage();
      }
      sets.push_back(static_cast<size_t>(v));
    }
  }
  if (sets.empty()) {
    for (size_t s = size_t{64} << 10; s <= size_t{512} << 20; s *= 4) sets.push_back(s);
  }
  int cpus = onlineCpus();
  if (latency) {
    AffinityGuard guard;
    int trips = quick ? 2000 : 20000;
    if (cpus >= 2) std::printf("latency spin %.3f\n", handOffUs(0, 1, false, trips));
    std::printf("latency yield %.3f\n", handOffUs(0, 0, true, trips / 4));
    std::fflush(stdout);
  }
  if (cpus >= 2 && !exchanges.empty()) {
    AffinityGuard guard;
    int batches = quick ? 3 : 10;
    for (size_t n : exchanges) {
      double plain = exchangeUs(n, false, batches), streaming = exchangeUs(n, true, batches);
      double best = plain < 0 ? streaming : streaming < 0 ? plain : std::min(plain, streaming);
      std::printf("exchange %zu %.3f\n# exchange %zu: plain stores %.3f us, streaming %.3f us\n",
                  n, best, n, plain, streaming);
      std::fflush(stdout);
    }
  }
  if (cpus >= 2 && !inplaces.empty()) {
    AffinityGuard guard;
    int batches = quick ? 3 : 10;
    for (size_t n : inplaces) {
      std::printf("inplace %zu %.3f\n", n, inPlaceUs(n, batches));
      std::fflush(stdout);
    }
  }
  if (cpus >= 2 && !singles.empty()) {
    AffinityGuard guard;
    int batches = quick ? 3 : 10;
    for (size_t n : singles) {
      // Back to back, enough reads that a batch moves ~4 MiB a side: what the copy
      // itself costs, without the hand-off between reads.
      const int burst = static_cast<int>(std::clamp<size_t>((size_t{4} << 20) / n, 1, 64));
      for (bool both : {true, false}) {
        const char* kind = both ? "single_copy" : "single_copy_one";
        const double us = singleCopyUs(n, {both, 1}, batches);
        if (us > 0) std::printf("%s %zu %.3f\n", kind, n, us);
        const double burstUs = burst > 1 ? singleCopyUs(n, {both, burst}, batches) : -1;
        if (burstUs > 0) {
          std::printf("%s_burst %zu %.3f\n# %s %zu: %.3f us a read with a hand-off each, "
                      "%.3f us a read in bursts of %d\n",
                      kind, n, burstUs, kind, n, us, burstUs, burst);
        }
        std::fflush(stdout);
      }
    }
  }
  if (stream) {
    AffinityGuard guard;
    pinTo(0);  // the first thread of a team; the others take CPUs 1, 2, ...
    int samples = quick ? 3 : 10;
    for (size_t ws : sets) {
      for (int threads = 1; threads <= std::min(2, cpus); ++threads) {
        for (Kernel k : kKernels) {
          std::printf("stream %d %zu %s %.2f\n", threads, ws, kernelName(k),
                      streamBandwidth(k, threads, ws, samples));
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}
