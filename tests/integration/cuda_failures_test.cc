// Device calls when something goes wrong, with 2, 3 and 4 ranks as processes sharing one
// GPU, through the device windows and staged: a peer that never calls, a peer that dies,
// and an abort while a call is held on its stream. Never a hang: an error that names the
// rank, streams that finish. Skips where there is no GPU (Emulated.* runs it over the
// emulated GPU, tests/gpu_emu).
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
#if BRAID_EMULATED_GPU
#include "tests/gpu_emu/emulated_gpu.h"
#endif

namespace braid::test {
namespace {

// The last rank never makes the call: the others' calls return, their streams finish
// within the timeout (the barriers are released) and the communicator reports the error.
int stuckPeerBody() {
  braidComm_t comm = nullptr;
  int n = 0, r = 0;
  if (!joinJob(&comm, &n, &r)) return 2;
  Expected<void*> s = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(4096);
  if (!s.isOk() || !mem.isOk()) return 3;
  auto* st = static_cast<braidStream_t>(s.value());
  float* d = static_cast<float*>(mem.value());
  // One call every rank makes, so the windows are set up everywhere.
  if (braidAllReduce(d, d, 16, braidFloat32, braidSum, comm, st) != braidSuccess ||
      !cuda::streamSynchronize(s.value()).isOk()) {
    return 4;
  }
  int rc = 0;
  const bool dies = getenv("TEST_PEER_DIES") != nullptr;
  if (r == n - 1) {
    if (dies) _exit(0);  // gone, its sockets closed by the kernel
    sleep(8);            // alive and answering, but not calling
  } else {
    const uint64_t t0 = nowNs();
    braidResult_t a = braidAllReduce(d, d, 16, braidFloat32, braidSum, comm, st);
    const bool synced = cuda::streamSynchronize(s.value()).isOk();
    const double sec = static_cast<double>(nowNs() - t0) / 1e9;
    braidResult_t async = braidSuccess;
    braidCommGetAsyncError(comm, &async);
    braidResult_t later = braidAllReduce(d, d, 16, braidFloat32, braidSum, comm, st);
    const std::string msg = braidGetLastError(comm);
    fprintf(stderr, "rank %d: call %d, synced %d after %.1f s, async error %d, later call %d: %s\n",
            r, a, synced, sec, async, later, msg.c_str());
    // The windows release their barriers; the staged path's host collective times out.
    const char* ipc = getenv("BRAID_CUDA_IPC");
    const bool staged = ipc != nullptr && std::string(ipc) == "0";
    const std::string last = "rank " + std::to_string(n - 1);
    const bool says = dies     ? msg.find(last) != std::string::npos
                      : staged ? msg.find("timed out waiting for " + last) != std::string::npos
                               : msg.find("device windows") != std::string::npos;
    // A death may be known before the call: then the call itself fails, naming it.
    rc = (a == braidSuccess || dies) && synced && sec < (dies ? 10 : 30) && async != braidSuccess &&
                 later != braidSuccess && says
             ? 0
             : 1;
  }
  (void)cuda::streamDestroy(s.value());
  (void)cuda::deviceFree(mem.value());
  braidCommDestroy(comm);
  return rc;
}

// braidCommAbort while a call is held back on its stream (a gate), staged or on the
// windows, returns at once: it does not wait for the stream, and what the stream will
// still touch (pinned copies, the proxy's words, the windows and their counters) stays
// allocated; once the gate opens the stream finishes. A first call, not held, sets the
// windows or the proxy up: setting up maps memory and page-locks it, which CUDA may make
// wait for the device (NCCL sets up its connections at the first call too).
int abortHeldBody() {
  braidComm_t comm = nullptr;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  Expected<void*> s = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(1 << 20);
  Gate gate;
  if (!s.isOk() || !mem.isOk() || !gate.ok()) return 3;
  float* d = static_cast<float*>(mem.value());
  if (braidAllReduce(d, d, 1 << 18, braidFloat32, braidSum, comm,
                     static_cast<braidStream_t>(s.value())) != braidSuccess ||
      !cuda::streamSynchronize(s.value()).isOk() || !gate.hold(s.value())) {
    return 4;
  }
  // TEST_EARLY_ABORT: rank 0 aborts without the second call, the others call once it is
  // gone, so their call fails at issue and nothing of it is queued when they abort.
  int rank = 0;
  braidCommUserRank(comm, &rank);
  const bool early = getenv("TEST_EARLY_ABORT") != nullptr;
  if (early && rank != 0) usleep(300000);
  const uint64_t t0 = nowNs();
  braidResult_t a = early && rank == 0
                        ? braidSuccess
                        : braidAllReduce(d, d, 1 << 18, braidFloat32, braidSum, comm,
                                         static_cast<braidStream_t>(s.value()));
  const uint64_t t1 = nowNs();
  // Progress as it goes: a rank killed for hanging shows where (its output is kept).
  fprintf(stderr, "call %d returned after %.2f s\n", a, static_cast<double>(t1 - t0) / 1e9);
  braidResult_t aborted = braidCommAbort(comm);
  const double sec = static_cast<double>(nowNs() - t1) / 1e9;
  fprintf(stderr, "abort %d returned after %.2f s\n", aborted, sec);
  gate.open();
  const bool synced = cuda::streamSynchronize(s.value()).isOk();
  fprintf(stderr, "call %d, abort %d after %.2f s, stream synced %d\n", a, aborted, sec, synced);
  (void)cuda::streamDestroy(s.value());
  (void)cuda::deviceFree(mem.value());
  // A peer that aborted first may already be gone when this rank calls.
  const bool called = a == braidSuccess || a == braidRemoteError;
  return called && aborted == braidSuccess && sec < 10 && synced ? 0 : 1;
}

// A call on a stream that is capturing a CUDA graph (global mode, as torch.cuda.graph
// captures), alone or in a group: staged, it is refused with braidInvalidUsage before
// anything is set up or enqueued; through the windows it is captured (and makes the
// windows: allocations, IPC, page-locking, relaxed about captures, src/cuda/device.cc),
// and does not run until the graph is launched, which this test never does (replays:
// cuda_graphs_test.cc). Meanwhile a call on another stream runs. The capture then ends
// intact, and calls on its stream are exact.
int captureBody() {
  braidComm_t comm = nullptr;
  int n = 0, rank = 0;
  if (!joinJob(&comm, &n, &rank)) return 2;
  constexpr size_t kCount = 4096;
  Expected<void*> a = cuda::streamCreate();
  Expected<void*> b = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(kCount * sizeof(float));
  if (!a.isOk() || !b.isOk() || !mem.isOk()) return 3;
  auto* sa = static_cast<braidStream_t>(a.value());
  auto* sb = static_cast<braidStream_t>(b.value());
  float* d = static_cast<float*>(mem.value());
  std::vector<float> host(kCount, static_cast<float>(rank + 1));
  if (!cuda::copyAsync(d, host.data(), kCount * sizeof(float), b.value()).isOk() ||
      !cuda::streamSynchronize(b.value()).isOk() || !cuda::streamBeginCapture(a.value()).isOk()) {
    return 4;
  }
  const braidResult_t alone = braidAllReduce(d, d, kCount, braidFloat32, braidSum, comm, sa);
  const std::string why = braidGetLastError(comm);
  braidGroupStart();
  braidAllReduce(d, d, kCount, braidFloat32, braidSum, comm, sa);
  const braidResult_t grouped = braidGroupEnd();
  const braidResult_t other = braidAllReduce(d, d, kCount, braidFloat32, braidSum, comm, sb);
  const bool otherSynced = cuda::streamSynchronize(b.value()).isOk();
  Expected<void*> graph = cuda::streamEndCapture(a.value());
  const Status ended = graph.status();
  if (graph.isOk()) (void)cuda::graphDestroy(graph.value());
  const braidResult_t after = braidAllReduce(d, d, kCount, braidFloat32, braidSum, comm, sa);
  bool exact = cuda::copyAsync(host.data(), d, kCount * sizeof(float), a.value()).isOk() &&
               cuda::streamSynchronize(a.value()).isOk();
  // Two sums of every rank's (r + 1): n (n + 1) / 2 times n.
  const float want = static_cast<float>(n * (n + 1) / 2 * n);
  for (float v : host) exact = exact && v == want;
  fprintf(stderr,
          "rank %d: alone %d (%s), grouped %d, other stream %d synced %d, "
          "capture ended: %s, after %d, exact %d\n",
          rank, alone, why.c_str(), grouped, other, otherSynced,
          ended.isOk() ? "ok" : ended.message().c_str(), after, exact);
  (void)cuda::streamDestroy(a.value());
  (void)cuda::streamDestroy(b.value());
  (void)cuda::deviceFree(mem.value());
  braidCommDestroy(comm);
  const char* ipc = getenv("BRAID_CUDA_IPC");
  const braidResult_t expected =
      ipc != nullptr && std::string(ipc) == "0" ? braidInvalidUsage : braidSuccess;
  const bool said =
      expected == braidSuccess || why.find("capturing a CUDA graph") != std::string::npos;
  return alone == expected && said && grouped == expected && other == braidSuccess && otherSynced &&
                 ended.isOk() && after == braidSuccess && exact
             ? 0
             : 1;
}

#if BRAID_EMULATED_GPU
// A call that fails to enqueue part way (the emulated GPU refuses stream waits on rank 0)
// while its stream is held: the call returns the error at once, without waiting for the
// stream; the stream still finishes cleanly once the gate opens (staged, the pinned copies
// it reads are kept, or the emulated GPU would fault); the peers' calls end in an error
// (staged, the timeout's; the windows release their barriers) and every later call is
// refused.
int enqueuedInPartBody() {
  braidComm_t comm = nullptr;
  int rank = 0;
  if (!joinJob(&comm, nullptr, &rank)) return 2;
  Expected<void*> s = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(1 << 16);
  Gate gate;
  if (!s.isOk() || !mem.isOk() || !gate.ok()) return 3;
  auto* st = static_cast<braidStream_t>(s.value());
  float* d = static_cast<float*>(mem.value());
  if (braidAllReduce(d, d, 1 << 12, braidFloat32, braidSum, comm, st) != braidSuccess ||
      !cuda::streamSynchronize(s.value()).isOk() || !gate.hold(s.value())) {
    return 4;
  }
  gate.arm(10000);  // were the call to wait for the stream, it would take 10 s
  if (rank == 0) cuda::emu::refuseStreamWaits(true);
  const uint64_t t0 = nowNs();
  const braidResult_t a = braidAllReduce(d, d, 1 << 12, braidFloat32, braidSum, comm, st);
  const double sec = static_cast<double>(nowNs() - t0) / 1e9;
  cuda::emu::refuseStreamWaits(false);
  gate.open();
  const bool synced = cuda::streamSynchronize(s.value()).isOk();
  braidResult_t async = braidSuccess;
  braidCommGetAsyncError(comm, &async);
  const braidResult_t later = braidAllReduce(d, d, 16, braidFloat32, braidSum, comm, st);
  const std::string msg = braidGetLastError(comm);
  fprintf(stderr, "rank %d: call %d after %.2f s, synced %d, async %d, later %d: %s\n", rank, a,
          sec, synced, async, later, msg.c_str());
  (void)cuda::streamDestroy(s.value());
  (void)cuda::deviceFree(mem.value());
  braidCommDestroy(comm);
  const char* ipc = getenv("BRAID_CUDA_IPC");
  const bool staged = ipc != nullptr && std::string(ipc) == "0";
  // Through the windows a peer's call may find the barriers released already.
  const bool callOk = rank == 0 ? a != braidSuccess && sec < 2
                                : a == braidSuccess || (!staged && a == braidRemoteError);
  // Staged, the peers' host collective times out waiting for rank 0.
  const char* why = !staged ? "enqueueing a call failed" : rank == 0 ? "enqueued in part" : "rank 0";
  const bool says = msg.find(why) != std::string::npos;
  return callOk && synced && async != braidSuccess && later != braidSuccess && says ? 0 : 1;
}
#endif

class CudaFailures : public ::testing::TestWithParam<int> {};

// A peer that never calls: through the windows, the watch thread releases the barriers;
// staged, the proxy's host collective times out, raises the error and lets the stream go.
TEST_P(CudaFailures, APeerThatNeverCallsEndsInAnErrorNotAHang) {
  SKIP_WITHOUT_DEVICE();
  const int n = GetParam();
  for (const char* ipc : {"1", "0"}) {
    Env env = jobEnv(n);
    env["BRAID_TIMEOUT_MS"] = "3000";
    env["BRAID_CUDA_IPC"] = ipc;
    expectEveryRankPasses(n, env, stuckPeerBody, 120);
  }
}

TEST_P(CudaFailures, AnAbortReturnsWhileACallIsHeldOnItsStream) {
  SKIP_WITHOUT_DEVICE();
  const int n = GetParam();
  for (const char* ipc : {"0", "1"}) {
    Env env = jobEnv(n);
    env["BRAID_TIMEOUT_MS"] = "30000";
    env["BRAID_CUDA_IPC"] = ipc;
    env["BRAID_DEBUG"] = "INFO";  // shown only if a rank fails
    expectEveryRankPasses(n, env, abortHeldBody, 60);
    env["TEST_EARLY_ABORT"] = "1";
    expectEveryRankPasses(n, env, abortHeldBody, 60);
  }
}

// A peer that dies after the first call: the others' device calls, through the windows
// and staged, end in an error naming it, their streams finished, well within the timeout.
TEST_P(CudaFailures, APeerThatDiesEndsInAnErrorNotAHang) {
  SKIP_WITHOUT_DEVICE();
  const int n = GetParam();
  for (const char* ipc : {"1", "0"}) {
    Env env = jobEnv(n);
    env["BRAID_TIMEOUT_MS"] = "20000";
    env["BRAID_CUDA_IPC"] = ipc;
    env["TEST_PEER_DIES"] = "1";
    expectEveryRankPasses(n, env, stuckPeerBody, 120);
  }
}

// Through the windows and staged.
TEST_P(CudaFailures, ACallOnACapturingStreamIsRefusedAndTheCaptureStaysIntact) {
  SKIP_WITHOUT_DEVICE();
  for (const char* ipc : {"1", "0"}) {
    Env env = jobEnv(GetParam());
    env["BRAID_CUDA_IPC"] = ipc;
    expectEveryRankPasses(GetParam(), env, captureBody, 60);
  }
}

#if BRAID_EMULATED_GPU
TEST_P(CudaFailures, ACallEnqueuedInPartFailsWithoutWaitingForItsStream) {
  for (const char* ipc : {"0", "1"}) {
    Env env = jobEnv(GetParam());
    env["BRAID_TIMEOUT_MS"] = "3000";
    env["BRAID_CUDA_IPC"] = ipc;
    expectEveryRankPasses(GetParam(), env, enqueuedInPartBody, 60);
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(Ranks, CudaFailures, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "_ranks"; });

}  // namespace
}  // namespace braid::test
