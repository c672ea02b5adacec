// Several ranks in one process on device buffers: a thread each, as the NCCL drop-in's
// group across communicators runs them, or one thread driving them all in one group, as
// ncclCommInitAll's caller does (torch.nn.DataParallel's torch.cuda.nccl, nccl-tests'
// -g). CUDA IPC cannot open a handle in the process that made it, so the ranks reach
// each other's device windows by address; every call is exact and returns, as with ranks
// in processes, and one thread destroys the ranks one after another without waiting for
// the others (no teardown barrier among threads). The ranks' streams share CUDA's
// hardware queues (BRAID_EMU_CONNECTIONS=1 makes the emulated GPU's streams share one, so
// a wait enqueued before the write that ends it stalls there for good): every wait is
// enqueued after its write (api/cuda_ipc.h). Skips where there is no GPU (Emulated.* runs
// it over the emulated GPU, tests/gpu_emu).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "cuda/device.h"
#include "cuda_harness.h"
#include "spawn.h"
#if BRAID_EMULATED_GPU
#include "tests/gpu_emu/emulated_gpu.h"
#endif

namespace braid::test {
namespace {

constexpr size_t kCount = 70000;  // floats per rank

// Ranks that are threads of one process on one GPU cannot capture (their streams share
// CUDA's hardware queues, where a replay's wait could stand in front of its peers' work
// for good; api/cuda_ipc.h): an all-reduce on a capturing stream is refused with the
// reason, the capture ends intact and its (empty) graph launches, and the all-reduce then
// made outside the capture, d[0, kCount) into d[kCount, 2 kCount), is exact (every rank:
// n * sum(i)). Thread-local capture: the other ranks' threads copy to pageable memory
// meanwhile, which would invalidate a capture in global mode.
bool captureIsRefusedIntact(braidComm_t comm, void* s, float* d, int n) {
  if (!cuda::streamBeginCapture(s, /*threadLocal=*/true).isOk()) return false;
  const braidResult_t captured = braidAllReduce(d, d + kCount, kCount, braidFloat32, braidSum, comm,
                                                static_cast<braidStream_t>(s));
  const std::string why = braidGetLastError(comm);
  Expected<void*> graph = cuda::streamEndCapture(s);
  if (captured != braidInvalidUsage || why.find("threads of one process") == std::string::npos ||
      !graph.isOk() || !cuda::graphLaunch(graph.value(), s).isOk() ||
      !cuda::graphDestroy(graph.value()).isOk()) {
    std::fprintf(stderr, "capture: %d (%s), graph %s\n", captured, why.c_str(),
                 graph.isOk() ? "ok" : graph.status().message().c_str());
    return false;
  }
  std::vector<float> host(kCount);
  if (braidAllReduce(d, d + kCount, kCount, braidFloat32, braidSum, comm,
                     static_cast<braidStream_t>(s)) != braidSuccess ||
      !cuda::copyAsync(host.data(), d + kCount, kCount * sizeof(float), s).isOk() ||
      !cuda::streamSynchronize(s).isOk()) {
    return false;
  }
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) {
    wrong += host[i] != static_cast<float>(n * (n * (n + 1) / 2 + n * static_cast<int>(i % 7)));
  }
  return wrong == 0;
}

// One rank's thread: an all-reduce, an all-gather into a device buffer and a send/recv
// ring on its own stream, each checked exactly, then an all-reduce refused in a capture
// and made outside it. 0 when every result is right.
int oneRank(const braidUniqueId& id, int n, int rank) {
  braidComm_t comm = nullptr;
  if (braidCommInitRank(&comm, n, id, rank) != braidSuccess) return 2;
  Expected<void*> s = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(kCount * sizeof(float) * (n + 1));
  if (!s.isOk() || !mem.isOk()) return 3;
  auto* st = static_cast<braidStream_t>(s.value());
  float* d = static_cast<float*>(mem.value());  // kCount to reduce, then n * kCount
  std::vector<float> host(kCount * (n + 1));
  for (size_t i = 0; i < kCount; ++i) host[i] = static_cast<float>(rank + 1) + i % 7;
  bool ok = cuda::copyAsync(d, host.data(), kCount * sizeof(float), s.value()).isOk();
  ok = ok && braidAllReduce(d, d, kCount, braidFloat32, braidSum, comm, st) == braidSuccess;
  ok = ok && braidAllGather(d, d + kCount, kCount, braidFloat32, comm, st) == braidSuccess;
  // Send/recv around the ring, grouped: what rank - 1 sent lands in host[0..kCount).
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  ok = ok && braidGroupStart() == braidSuccess;
  ok = ok &&
       braidSend(d + kCount * (rank + 1), kCount, braidFloat32, next, comm, st) == braidSuccess;
  ok = ok && braidRecv(d, kCount, braidFloat32, prev, comm, st) == braidSuccess;
  ok = ok && braidGroupEnd() == braidSuccess;
  ok = ok && cuda::copyAsync(host.data(), d, host.size() * sizeof(float), s.value()).isOk() &&
       cuda::streamSynchronize(s.value()).isOk();
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) {
    const float sum = static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(i % 7));
    wrong += host[i] != sum ? 1 : 0;  // every gathered block is the same sum
    for (int q = 0; q < n; ++q) wrong += host[kCount * (q + 1) + i] != sum ? 1 : 0;
  }
  const bool refused = ok && wrong == 0 && captureIsRefusedIntact(comm, s.value(), d, n);
  std::fprintf(stderr, "rank %d (thread): calls %s, %zu wrong, capture %s\n", rank,
               ok ? "ok" : "failed", wrong, refused ? "refused intact" : "failed");
  (void)cuda::streamDestroy(s.value());
  (void)cuda::deviceFree(mem.value());
  braidCommDestroy(comm);
  return ok && wrong == 0 && refused ? 0 : 1;
}

// The whole job in one process: TEST_THREADS ranks.
int threadsBody() {
  const int n = std::atoi(std::getenv("TEST_THREADS"));
  braidUniqueId id;
  if (braidGetUniqueId(&id) != braidSuccess) return 2;
  std::vector<std::atomic<int>> rc(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] { rc[static_cast<size_t>(r)] = oneRank(id, n, r); });
  }
  for (std::thread& t : threads) t.join();
  for (const std::atomic<int>& c : rc) {
    if (c != 0) return c;
  }
  return 0;
}

// One thread drives every rank: one group of an all-reduce per rank, each on its own
// stream (the first device call, so the group sets up, side by side), then the streams
// are synchronised and every result checked.
int oneThreadBody() {
  const int n = std::atoi(std::getenv("TEST_THREADS"));
  braidUniqueId id;
  if (braidGetUniqueId(&id) != braidSuccess) return 2;
  std::vector<braidComm_t> comms(static_cast<size_t>(n), nullptr);
  std::vector<std::thread> inits;
  for (int r = 0; r < n; ++r) {
    inits.emplace_back([&, r] { braidCommInitRank(&comms[static_cast<size_t>(r)], n, id, r); });
  }
  for (std::thread& t : inits) t.join();
  std::vector<void*> streams, mems;
  std::vector<float> host(kCount);
  bool ok = true;
  for (int r = 0; r < n && ok; ++r) {
    Expected<void*> s = cuda::streamCreate();
    Expected<void*> mem = cuda::deviceAlloc(kCount * sizeof(float));
    ok = s.isOk() && mem.isOk() && comms[static_cast<size_t>(r)] != nullptr;
    if (!ok) break;
    streams.push_back(s.value());
    mems.push_back(mem.value());
    std::fill(host.begin(), host.end(), static_cast<float>(r + 1));
    ok = cuda::copyAsync(mem.value(), host.data(), kCount * sizeof(float), s.value()).isOk();
  }
  if (!ok) return 3;
  braidGroupStart();
  for (int r = 0; r < n; ++r) {
    float* d = static_cast<float*>(mems[static_cast<size_t>(r)]);
    braidAllReduce(d, d, kCount, braidFloat32, braidSum, comms[static_cast<size_t>(r)],
                   static_cast<braidStream_t>(streams[static_cast<size_t>(r)]));
  }
  const braidResult_t grouped = braidGroupEnd();
  size_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    void* s = streams[static_cast<size_t>(r)];
    ok = ok &&
         cuda::copyAsync(host.data(), mems[static_cast<size_t>(r)], kCount * sizeof(float), s)
             .isOk() &&
         cuda::streamSynchronize(s).isOk();
    for (float v : host) wrong += v != static_cast<float>(n * (n + 1) / 2) ? 1 : 0;
  }
  for (void* s : streams) (void)cuda::streamDestroy(s);
  for (void* m : mems) (void)cuda::deviceFree(m);
  // One after another from this thread: a teardown barrier among the ranks would hold the
  // first destroy for the timeout (20 s).
  const auto t0 = std::chrono::steady_clock::now();
  for (braidComm_t c : comms) braidCommDestroy(c);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
#if BRAID_EMULATED_GPU
  const size_t left = cuda::emu::deviceBytesInUse();  // the last rank freed every window
#else
  const size_t left = 0;
#endif
  std::fprintf(stderr,
               "one thread, %d ranks: group %d, synced %d, %zu wrong, destroyed in %.2f s, "
               "%zu device bytes left\n",
               n, grouped, ok, wrong, sec, left);
  return grouped == braidSuccess && ok && wrong == 0 && sec < 10 && left == 0 ? 0 : 1;
}

class CudaThreads : public ::testing::TestWithParam<int> {};

TEST_P(CudaThreads, RanksAsThreadsOfOneProcessRunEveryCallExactly) {
  SKIP_WITHOUT_DEVICE();
  Env env;  // one process: the unique id is the rendezvous
  env["TEST_THREADS"] = std::to_string(GetParam());
  env["BRAID_TIMEOUT_MS"] = "20000";
  env["BRAID_EMU_CONNECTIONS"] = "1";
  expectEveryRankPasses(1, env, threadsBody, 90);
}

TEST_P(CudaThreads, OneThreadDrivesEveryRankInAGroup) {
  SKIP_WITHOUT_DEVICE();
  Env env;
  env["TEST_THREADS"] = std::to_string(GetParam());
  env["BRAID_TIMEOUT_MS"] = "20000";
  env["BRAID_EMU_CONNECTIONS"] = "1";
  expectEveryRankPasses(1, env, oneThreadBody, 90);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaThreads, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "_ranks"; });

}  // namespace
}  // namespace braid::test
