// Device calls captured into a CUDA graph, with 2, 3 and 4 ranks as processes sharing one
// GPU: the graph replayed with new inputs, between ordinary calls on the same stream, is
// exact every time; what a replay could not run is refused and leaves the capture intact;
// a rank that stops replaying makes the others' replays end with an error within the
// timeout, not hang. Skips where there is no GPU (Emulated.* runs it over the emulated
// GPU, tests/gpu_emu, whose graphs replay what their capture recorded).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "core/clock.h"
#include "cuda/device.h"
#include "cuda_harness.h"
#include "spawn.h"

namespace braid::test {
namespace {

constexpr size_t kCount = 3000;  // floats: two rounds of the test's 8 KiB halves
constexpr size_t kBlock = 512;   // reduce-scatter's block per rank

float value(int rank, int replay, size_t i) {
  return static_cast<float>((rank + 1) * (replay + 1) + static_cast<int>(i % 7));
}
float rsValue(int rank, int replay, size_t j) {
  return static_cast<float>(rank + replay + static_cast<int>(j % 5));
}

// The job's communicator and a stream of this rank's own.
struct Job {
  braidComm_t comm = nullptr;
  int n = 0, rank = 0;
  void* s = nullptr;
  braidStream_t st = nullptr;
};

// Runs `body` in the job (2 where it cannot be joined), then lets go of both.
int inJob(int (*body)(const Job&)) {
  Job job;
  if (!joinJob(&job.comm, &job.n, &job.rank)) return 2;
  Expected<void*> s = cuda::streamCreate();
  if (!s.isOk()) return 2;
  job.s = s.value();
  job.st = static_cast<braidStream_t>(job.s);
  const int rc = body(job);
  braidCommDestroy(job.comm);
  (void)cuda::streamDestroy(job.s);
  return rc;
}

// A graph of one in-place all-reduce of d (1024 floats) captured on s, or the error.
Expected<void*> captureAllReduce(braidComm_t comm, void* s, float* d) {
  BRAID_TRY(cuda::streamBeginCapture(s));
  if (braidAllReduce(d, d, 1024, braidFloat32, braidSum, comm, static_cast<braidStream_t>(s)) !=
      braidSuccess) {
    (void)cuda::streamEndCapture(s);
    return Status(braidInternalError, braidGetLastError(comm));
  }
  return cuda::streamEndCapture(s);
}

struct Buffers {
  std::vector<void*> all;
  float* make(size_t count) {
    Expected<void*> p = cuda::deviceAlloc(count * sizeof(float));
    all.push_back(p.isOk() ? p.value() : nullptr);
    return static_cast<float*>(all.back());
  }
  bool ok() const {
    for (void* p : all) {
      if (p == nullptr) return false;
    }
    return true;
  }
  ~Buffers() {
    for (void* p : all) (void)cuda::deviceFree(p);
  }
};

// Elements rank a sends rank b in the all-to-all-v (some none), at b * kStride.
size_t a2aCount(int a, int b) { return static_cast<size_t>(a * 3 + b) % 6; }
constexpr size_t kStride = 64;

// A call that cannot be captured is refused during a capture, which then ends intact: an
// all-reduce of a host buffer (it would be staged through the host).
bool refusalLeavesTheCaptureIntact(braidComm_t comm, int rank, void* s) {
  auto* st = static_cast<braidStream_t>(s);
  std::vector<float> host(16, 1.0f);
  if (!cuda::streamBeginCapture(s).isOk()) return false;
  const braidResult_t hosted =
      braidAllReduce(host.data(), host.data(), 16, braidFloat32, braidSum, comm, st);
  const std::string why = braidGetLastError(comm);
  Expected<void*> graph = cuda::streamEndCapture(s);
  if (graph.isOk()) (void)cuda::graphDestroy(graph.value());
  fprintf(stderr, "rank %d: host buffer %d (%s), capture ended: %s\n", rank, hosted, why.c_str(),
          graph.isOk() ? "ok" : graph.status().message().c_str());
  return hosted == braidInvalidUsage && why.find("device memory") != std::string::npos &&
         graph.isOk();
}

// Captures an all-reduce (two rounds), an all-gather, a reduce-scatter, a broadcast, a
// group of two small all-reduces, a send/recv ring (a group) and an all-to-all-v, the
// first device calls of the communicator (the windows are made during the capture); then
// replays the graph four times with new inputs (the third twice in a row), an ordinary
// all-reduce and send/recv ring on the same stream after each, and checks every output
// exactly.
int replayBody(const Job& job) {
  braidComm_t comm = job.comm;  // not a structured binding: lambdas below capture these
  const int n = job.n, rank = job.rank;
  void* s = job.s;
  braidStream_t st = job.st;
  Buffers b;
  float* in = b.make(kCount);
  float* sum = b.make(kCount);
  float* gathered = b.make(kCount * n);
  float* rsIn = b.make(kBlock * n);
  float* rsOut = b.make(kBlock);
  float* bcast = b.make(kCount);
  float* small = b.make(14);
  float* eager = b.make(kCount);
  float* ring = b.make(kCount);
  float* eagerRing = b.make(kBlock);
  float* a2a = b.make(kStride * n);
  if (!b.ok()) return 3;
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  for (int q = 0; q < n; ++q) {
    sc[q] = a2aCount(rank, q);
    rc[q] = a2aCount(q, rank);
    sd[q] = rd[q] = q * kStride;
  }
  auto ringAround = [&](float* into, size_t count) {
    braidGroupStart();
    braidSend(in, count, braidFloat32, next, comm, st);
    braidRecv(into, count, braidFloat32, prev, comm, st);
    return braidGroupEnd();
  };

  if (!cuda::streamBeginCapture(s).isOk()) return 4;
  braidResult_t results[7] = {
      braidAllReduce(in, sum, kCount, braidFloat32, braidSum, comm, st),
      braidAllGather(in, gathered, kCount, braidFloat32, comm, st),
      braidReduceScatter(rsIn, rsOut, kBlock, braidFloat32, braidSum, comm, st),
      braidBroadcast(in, bcast, kCount, braidFloat32, n - 1, comm, st),
      braidSuccess,
      braidSuccess,
      braidSuccess};
  braidGroupStart();
  braidAllReduce(in, small, 7, braidFloat32, braidSum, comm, st);
  braidAllReduce(in + 7, small + 7, 7, braidFloat32, braidMax, comm, st);
  results[4] = braidGroupEnd();
  results[5] = ringAround(ring, kCount);
  results[6] =
      braidAlltoAllv(in, sc.data(), sd.data(), a2a, rc.data(), rd.data(), braidFloat32, comm, st);
  const std::string why = braidGetLastError(comm);
  Expected<void*> graph = cuda::streamEndCapture(s);
  for (braidResult_t r : results) {
    if (r != braidSuccess) {
      fprintf(stderr, "rank %d: a captured call failed: %s\n", rank, why.c_str());
      return 5;
    }
  }
  if (!graph.isOk()) {
    fprintf(stderr, "rank %d: capture: %s\n", rank, graph.status().message().c_str());
    return 5;
  }
  if (!refusalLeavesTheCaptureIntact(comm, rank, s)) return 6;

  int wrong = 0;
  for (int replay = 0; replay < 4; ++replay) {
    std::vector<float> hin(kCount), hrs(kBlock * n);
    for (size_t i = 0; i < kCount; ++i) hin[i] = value(rank, replay, i);
    for (size_t j = 0; j < hrs.size(); ++j) hrs[j] = rsValue(rank, replay, j);
    std::vector<float> hsum(kCount), hgat(kCount * n), hrsOut(kBlock), hb(kCount), hsmall(14),
        heager(kCount), hring(kCount), heagerRing(kBlock), ha2a(kStride * n);
    bool ok = cuda::copyAsync(in, hin.data(), kCount * sizeof(float), s).isOk() &&
              cuda::copyAsync(rsIn, hrs.data(), hrs.size() * sizeof(float), s).isOk() &&
              cuda::graphLaunch(graph.value(), s).isOk() &&
              (replay != 2 || cuda::graphLaunch(graph.value(), s).isOk()) &&
              braidAllReduce(in, eager, kCount, braidFloat32, braidSum, comm, st) == braidSuccess &&
              ringAround(eagerRing, kBlock) == braidSuccess;
    const std::pair<float*, std::vector<float>*> back[] = {
        {sum, &hsum},   {gathered, &hgat},        {rsOut, &hrsOut},
        {bcast, &hb},   {small, &hsmall},         {eager, &heager},
        {ring, &hring}, {eagerRing, &heagerRing}, {a2a, &ha2a}};
    for (const auto& [dev, host] : back) {
      ok = ok && cuda::copyAsync(host->data(), dev, host->size() * sizeof(float), s).isOk();
    }
    ok = ok && cuda::streamSynchronize(s).isOk();
    if (!ok) {
      fprintf(stderr, "rank %d: replay %d failed: %s\n", rank, replay, braidGetLastError(comm));
      return 7;
    }
    const float ranks = static_cast<float>(n * (n + 1) / 2);
    for (size_t i = 0; i < kCount; ++i) {
      const float want = ranks * static_cast<float>(replay + 1) + static_cast<float>(n * (i % 7));
      wrong += hsum[i] != want;
      wrong += heager[i] != want;
      wrong += hb[i] != value(n - 1, replay, i);
      wrong += hring[i] != value(prev, replay, i);
      if (i < kBlock) wrong += heagerRing[i] != value(prev, replay, i);
      for (int q = 0; q < n; ++q) wrong += hgat[q * kCount + i] != value(q, replay, i);
    }
    for (size_t i = 0; i < kBlock; ++i) {
      float want = 0;
      for (int q = 0; q < n; ++q) want += rsValue(q, replay, rank * kBlock + i);
      wrong += hrsOut[i] != want;
    }
    for (int q = 0; q < n; ++q) {
      for (size_t k = 0; k < a2aCount(q, rank); ++k) {
        wrong += ha2a[q * kStride + k] != value(q, replay, rank * kStride + k);
      }
    }
    for (size_t i = 0; i < 7; ++i) {
      float want = 0;
      for (int q = 0; q < n; ++q) want += value(q, replay, i);
      wrong += hsmall[i] != want;
      wrong += hsmall[7 + i] != value(n - 1, replay, 7 + i);  // max: the last rank's
    }
    fprintf(stderr, "rank %d: replay %d, %d wrong so far\n", rank, replay, wrong);
  }
  braidResult_t async = braidSuccess;
  braidCommGetAsyncError(comm, &async);
  (void)cuda::graphDestroy(graph.value());
  return wrong == 0 && async == braidSuccess ? 0 : 1;
}

// After one replay together, the last rank stops replaying (alive, not calling): the
// others' next replay ends within the timeout with the communicator's error naming it.
int stuckReplayBody(const Job& job) {
  braidComm_t comm = job.comm;
  const int n = job.n, rank = job.rank;
  void* s = job.s;
  Buffers b;
  float* d = b.make(1024);
  if (!b.ok()) return 3;
  Expected<void*> graph = captureAllReduce(comm, s, d);
  if (!graph.isOk() || !cuda::graphLaunch(graph.value(), s).isOk() ||
      !cuda::streamSynchronize(s).isOk()) {
    return 4;
  }
  int rc = 0;
  if (rank == n - 1) {
    sleep(6);
  } else {
    const uint64_t t0 = nowNs();
    const bool launched = cuda::graphLaunch(graph.value(), s).isOk();
    const bool synced = cuda::streamSynchronize(s).isOk();
    const double sec = static_cast<double>(nowNs() - t0) / 1e9;
    braidResult_t async = braidSuccess;
    braidCommGetAsyncError(comm, &async);
    const std::string msg = braidGetLastError(comm);
    fprintf(stderr, "rank %d: replay launched %d, synced %d after %.1f s, async %d: %s\n", rank,
            launched, synced, sec, async, msg.c_str());
    const bool named = msg.find("rank " + std::to_string(n - 1)) != std::string::npos ||
                       msg.find("rank(s) " + std::to_string(n - 1)) != std::string::npos ||
                       msg.find("released") != std::string::npos;
    rc = launched && synced && sec < 5.5 && async != braidSuccess && named ? 0 : 1;
  }
  (void)cuda::graphDestroy(graph.value());
  return rc;
}

// One rank: its calls are copies on the stream (no windows), captured as they are: an
// all-reduce and an all-gather of `in`, replayed twice with new inputs, exact.
int oneRankBody(const Job& job) {
  braidComm_t comm = job.comm;
  void* s = job.s;
  braidStream_t st = job.st;
  Buffers b;
  float* in = b.make(kCount);
  float* sum = b.make(kCount);
  float* gathered = b.make(kCount);
  if (!b.ok() || !cuda::streamBeginCapture(s).isOk()) return 3;
  const bool captured =
      braidAllReduce(in, sum, kCount, braidFloat32, braidSum, comm, st) == braidSuccess &&
      braidAllGather(in, gathered, kCount, braidFloat32, comm, st) == braidSuccess;
  Expected<void*> graph = cuda::streamEndCapture(s);
  if (!captured || !graph.isOk()) return 4;
  int wrong = 0;
  for (int replay = 0; replay < 2; ++replay) {
    std::vector<float> hin(kCount), hsum(kCount), hgat(kCount);
    for (size_t i = 0; i < kCount; ++i) hin[i] = value(0, replay, i);
    if (!cuda::copyAsync(in, hin.data(), kCount * sizeof(float), s).isOk() ||
        !cuda::graphLaunch(graph.value(), s).isOk() ||
        !cuda::copyAsync(hsum.data(), sum, kCount * sizeof(float), s).isOk() ||
        !cuda::copyAsync(hgat.data(), gathered, kCount * sizeof(float), s).isOk() ||
        !cuda::streamSynchronize(s).isOk()) {
      return 5;
    }
    for (size_t i = 0; i < kCount; ++i) wrong += (hsum[i] != hin[i]) + (hgat[i] != hin[i]);
  }
  fprintf(stderr, "one rank: %d wrong\n", wrong);
  (void)cuda::graphDestroy(graph.value());
  return wrong == 0 ? 0 : 1;
}

TEST(CudaGraphsOneRank, ItsCopiesAreCapturedAndReplayExactly) {
  SKIP_WITHOUT_DEVICE();
  expectEveryRankPasses(
      1, jobEnv(1), [] { return inJob(oneRankBody); }, 60);
}

class CudaGraphs : public ::testing::TestWithParam<int> {};

TEST_P(CudaGraphs, ReplaysBetweenOrdinaryCallsAreExactAndRefusalsKeepTheCapture) {
  SKIP_WITHOUT_DEVICE();
  Env env = jobEnv(GetParam());
  env["BRAID_CUDA_WINDOW_BYTES"] = "16384";  // halves of 8 KiB: the all-reduce in two rounds
  expectEveryRankPasses(
      GetParam(), env, [] { return inJob(replayBody); }, 90);
}

TEST_P(CudaGraphs, APeerThatStopsReplayingEndsTheOthersReplaysWithAnError) {
  SKIP_WITHOUT_DEVICE();
  Env env = jobEnv(GetParam());
  env["BRAID_TIMEOUT_MS"] = "3000";
  expectEveryRankPasses(
      GetParam(), env, [] { return inJob(stuckReplayBody); }, 60);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaGraphs, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "_ranks"; });

}  // namespace
}  // namespace braid::test
