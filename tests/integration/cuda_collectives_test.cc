// Every collective on device buffers, ordered on a CUDA stream, with 2, 3 and 4 ranks as
// processes sharing one GPU, checked exactly against tests/common/reference.h (and the
// float8 codec). Inputs are copied to the device on the stream just before each call and
// results copied back just after, with no wait in between, so right answers also show
// that the call kept the stream's order. Skips, with the reason device detection gives,
// where there is no GPU; the probe runs in a child process, since CUDA state does not
// survive the fork that starts the ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "braid/braid.h"
#include "core/clock.h"
#include "cuda/device.h"
#include "cuda_cases.h"
#include "cuda_harness.h"
#include "spawn.h"
#ifdef BRAID_EMULATED_GPU
#include "tests/gpu_emu/emulated_gpu.h"
#endif

namespace braid::test {
namespace {

// Send/receive around the ring in one group, on device buffers on `stream`, in three
// messages each way.
size_t ringExchange(braidComm_t comm, void* stream, size_t k) {
  int n = 0, r = 0;
  braidCommCount(comm, &n);
  braidCommUserRank(comm, &r);
  std::vector<int32_t> out(k), in(k, -1);
  for (size_t i = 0; i < k; ++i) out[i] = static_cast<int32_t>(r * 100000 + i);
  Expected<void*> mem = cuda::deviceAlloc(2 * k * 4);
  if (!mem.isOk()) return 1u << 30;
  char* d = static_cast<char*>(mem.value());
  auto* s = static_cast<braidStream_t>(stream);
  bool ok = cuda::copyAsync(d, out.data(), k * 4, stream).isOk();
  // In three pieces each way: more messages to one peer than it has send slots.
  braidGroupStart();
  const size_t cuts[] = {0, k / 3, 2 * k / 3, k};
  for (int piece = 0; piece < 3; ++piece) {
    const size_t at = cuts[piece], end = cuts[piece + 1];
    braidSend(d + at * 4, end - at, braidInt32, (r + 1) % n, comm, s);
    braidRecv(d + (k + at) * 4, end - at, braidInt32, (r + n - 1) % n, comm, s);
  }
  ok = braidGroupEnd() == braidSuccess && ok;
  ok = ok && cuda::copyAsync(in.data(), d + k * 4, k * 4, stream).isOk() &&
       cuda::streamSynchronize(stream).isOk() && cuda::deviceFree(d).isOk();
  if (!ok) {
    fprintf(stderr, "rank %d: send/recv failed: %s\n", r, braidGetLastError(comm));
    return 1u << 30;
  }
  size_t wrong = 0;
  const int from = (r + n - 1) % n;
  for (size_t i = 0; i < k; ++i) {
    const auto want = static_cast<int32_t>(from * 100000 + i);
    if (in[i] != want && wrong++ < 3) {
      fprintf(stderr, "rank %d: ring send/recv [%zu] = %d, want %d\n", r, i, in[i], want);
    }
  }
  return wrong;
}

// Sends that share their buffers with receives (nccl-tests' in-place sendrecv): around the
// ring in one group, each rank receives into the very buffer it sends (on one rank, a send
// to itself in place), and swaps two buffers with itself (each receive lands on the other
// send's buffer). Every send must carry its buffer as it was before the group.
size_t inPlaceExchange(braidComm_t comm, void* stream, size_t k) {
  int n = 0, r = 0;
  braidCommCount(comm, &n);
  braidCommUserRank(comm, &r);
  std::vector<int32_t> host(3 * k);
  for (size_t i = 0; i < 3 * k; ++i) host[i] = static_cast<int32_t>(r * 100000 + i);
  Expected<void*> mem = cuda::deviceAlloc(3 * k * 4);
  if (!mem.isOk()) return 1u << 30;
  auto* d = static_cast<int32_t*>(mem.value());
  auto* s = static_cast<braidStream_t>(stream);
  bool ok = cuda::copyAsync(d, host.data(), 3 * k * 4, stream).isOk();
  braidGroupStart();
  braidSend(d, k, braidInt32, (r + 1) % n, comm, s);
  braidRecv(d, k, braidInt32, (r + n - 1) % n, comm, s);
  braidSend(d + k, k, braidInt32, r, comm, s);
  braidRecv(d + 2 * k, k, braidInt32, r, comm, s);
  braidSend(d + 2 * k, k, braidInt32, r, comm, s);
  braidRecv(d + k, k, braidInt32, r, comm, s);
  ok = braidGroupEnd() == braidSuccess && ok;
  ok = ok && cuda::copyAsync(host.data(), d, 3 * k * 4, stream).isOk() &&
       cuda::streamSynchronize(stream).isOk() && cuda::deviceFree(d).isOk();
  if (!ok) {
    fprintf(stderr, "rank %d: in-place send/recv failed: %s\n", r, braidGetLastError(comm));
    return 1u << 30;
  }
  size_t wrong = 0;
  const int from = (r + n - 1) % n;
  for (size_t i = 0; i < 3 * k; ++i) {
    const size_t block = i / k, at = i % k;  // block 1 and 2 swapped
    const size_t src = block == 0 ? at : (block == 1 ? 2 * k + at : k + at);
    const auto want = static_cast<int32_t>((block == 0 ? from : r) * 100000 + src);
    if (host[i] != want && wrong++ < 3) {
      fprintf(stderr, "rank %d: in-place send/recv [%zu] = %d, want %d\n", r, i, host[i], want);
    }
  }
  return wrong;
}

// Every rank sends a different block to every rank (itself too: a copy) and receives one
// from each, in one group that also holds an all-to-all-v (which the windows do not run:
// it is staged after them); under the 4 KiB send slots of the window_rounds path each
// block takes 5 rounds both ways, so a schedule that let a send wait behind its own
// receives deadlocks.
size_t allPairsExchange(braidComm_t comm, void* stream, size_t k) {
  int n = 0, r = 0;
  braidCommCount(comm, &n);
  braidCommUserRank(comm, &r);
  const size_t total = static_cast<size_t>(n) * k, v = 7;  // v: all-to-all-v block
  const size_t all = 2 * total + 2 * n * v;
  std::vector<int32_t> host(all, -1);
  for (size_t i = 0; i < total; ++i) host[i] = static_cast<int32_t>(r * 1000000 + i);
  for (size_t i = 0; i < n * v; ++i) host[2 * total + i] = static_cast<int32_t>(r * 1000 + i);
  Expected<void*> mem = cuda::deviceAlloc(all * 4);
  if (!mem.isOk()) return 1u << 30;
  auto* d = static_cast<int32_t*>(mem.value());
  auto* s = static_cast<braidStream_t>(stream);
  std::vector<size_t> counts(n, v), displs(n);
  for (int p = 0; p < n; ++p) displs[p] = static_cast<size_t>(p) * v;
  bool ok = cuda::copyAsync(d, host.data(), all * 4, stream).isOk();
  braidGroupStart();
  for (int p = 0; p < n; ++p) {
    braidSend(d + static_cast<size_t>(p) * k, k, braidInt32, p, comm, s);
    braidRecv(d + total + static_cast<size_t>(p) * k, k, braidInt32, p, comm, s);
  }
  braidAlltoAllv(d + 2 * total, counts.data(), displs.data(), d + 2 * total + n * v, counts.data(),
                 displs.data(), braidInt32, comm, s);
  ok = braidGroupEnd() == braidSuccess && ok;
  ok = ok && cuda::copyAsync(host.data(), d, all * 4, stream).isOk() &&
       cuda::streamSynchronize(stream).isOk() && cuda::deviceFree(d).isOk();
  if (!ok) {
    fprintf(stderr, "rank %d: all-pairs send/recv failed: %s\n", r, braidGetLastError(comm));
    return 1u << 30;
  }
  size_t wrong = 0;
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < k; ++i) {
      const int32_t want = static_cast<int32_t>(p * 1000000 + static_cast<size_t>(r) * k + i);
      const int32_t got = host[total + static_cast<size_t>(p) * k + i];
      if (got != want && wrong++ < 3) {
        fprintf(stderr, "rank %d: from %d [%zu] = %d, want %d\n", r, p, i, got, want);
      }
    }
    for (size_t i = 0; i < v; ++i) {
      const int32_t want = static_cast<int32_t>(p * 1000 + static_cast<size_t>(r) * v + i);
      const int32_t got = host[2 * total + n * v + static_cast<size_t>(p) * v + i];
      if (got != want && wrong++ < 3) {
        fprintf(stderr, "rank %d: all-to-all-v from %d [%zu] = %d, want %d\n", r, p, i, got, want);
      }
    }
  }
  return wrong;
}

int everyCollectiveBody() {
  braidComm_t comm = nullptr;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  Expected<void*> stream = cuda::streamCreate();
  if (!stream.isOk()) {
    fprintf(stderr, "%s\n", stream.status().message().c_str());
    return 3;
  }
  int n = 0;
  braidCommCount(comm, &n);
  const std::pair<braidDataType_t, braidRedOp_t> kTypeOps[] = {
      {braidFloat32, braidSum},    {braidInt32, braidMax},      {braidBfloat16, braidAvg},
      {braidFloat16, braidMin},    {braidInt8, braidProd},      {braidFloat64, braidAvg},
      {braidFloat8e4m3, braidSum}, {braidFloat8e5m2, braidAvg}, {braidFloat8e4m3, braidProd}};
  // TEST_SMALL (compute-sanitizer's runs, scripts/gpu_check.sh): every collective at one
  // size, float32 only, one premul-sum each.
  const bool small = getenv("TEST_SMALL") != nullptr;
  const std::vector<size_t> sizes =
      small ? std::vector<size_t>{1009} : std::vector<size_t>{0, 1, 1009, 70001};
  size_t wrong = 0;
  int seq = 0;
  for (int coll = 0; coll < kNumColls; ++coll) {
    for (size_t k : sizes) {
      for (bool inPlace : {false, true}) {
        for (const auto& [t, op] : kTypeOps) {
          if ((k != 1009 || small) && t != braidFloat32) continue;
          wrong += runOnDevice(comm, stream.value(), {coll, t, op, k, inPlace, ++seq % n});
        }
      }
    }
  }
  // Host buffers on the CUDA stream (an extension: NCCL would fault): device work must
  // reach them only through device copies, whichever path runs the call.
  for (int coll = 0; coll < kNumColls; ++coll) {
    for (size_t k : {size_t{1}, size_t{1009}}) {
      Case c{coll, braidFloat32, braidSum, k, false, ++seq % n};
      c.hostMemory = true;
      wrong += runOnDevice(comm, stream.value(), c);
    }
  }
  // Premul-sum ops: each rank's input scaled on the device by its own scalar, then summed.
  for (int coll : {kAllReduce, kReduceScatter, kReduce}) {
    for (PreMul how : {PreMul::kHostImmediate, PreMul::kDeviceScalar}) {
      for (braidDataType_t t : {braidFloat32, braidBfloat16, braidInt8, braidUint32, braidFloat64,
                                braidFloat16, braidFloat8e4m3, braidFloat8e5m2}) {
        if (small && t != braidFloat32) continue;
        Case c{coll, t, braidSum, 1009, (seq & 1) != 0, ++seq % n};
        c.preMul = how;
        wrong += runOnDevice(comm, stream.value(), c);
      }
      for (size_t k : {size_t{0}, size_t{1}, size_t{70001}}) {
        if (small) break;
        Case c{coll, braidFloat32, braidSum, k, (seq & 1) != 0, ++seq % n};
        c.preMul = how;
        wrong += runOnDevice(comm, stream.value(), c);
      }
      Case c{coll, braidFloat32, braidSum, 1009, false, ++seq % n};
      c.preMul = how;
      c.hostMemory = true;
      wrong += runOnDevice(comm, stream.value(), c);
    }
  }
  wrong += ringExchange(comm, stream.value(), 5000);
  wrong += inPlaceExchange(comm, stream.value(), 5000);
  wrong += allPairsExchange(comm, stream.value(), 5000);
  // The barrier, and a NULL stream (the legacy default stream, complete on return).
  if (braidBarrier(comm, static_cast<braidStream_t>(stream.value())) != braidSuccess) {
    fprintf(stderr, "barrier failed: %s\n", braidGetLastError(comm));
    ++wrong;
  }
  wrong += runOnDevice(comm, nullptr, {kAllReduce, braidFloat32, braidSum, 777, false, 0});
  (void)cuda::streamDestroy(stream.value());
  braidCommDestroy(comm);
  return wrong == 0 ? 0 : 1;
}

// Device buffers with a host stream are refused, naming what to pass instead.
int hostStreamBody() {
  braidComm_t comm = nullptr;
  if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
  braidStream_t host = nullptr;
  braidStreamCreate(&host);
  Expected<void*> mem = cuda::deviceAlloc(64);
  if (!mem.isOk()) return 3;
  braidResult_t res =
      braidAllReduce(mem.value(), mem.value(), 16, braidFloat32, braidSum, comm, host);
  bool named = std::string(braidGetLastError(comm)).find("cudaStream_t") != std::string::npos;
  (void)cuda::deviceFree(mem.value());
  braidStreamDestroy(host);
  braidCommDestroy(comm);
  if (res != braidInvalidUsage || !named) {
    fprintf(stderr, "got %d: %s\n", res, braidGetLastError(nullptr));
    return 1;
  }
  return 0;
}

// A device all-reduce returns before its stream runs it (the stream is held by a gate,
// a stream wait on a pinned word this thread opens afterwards), and a second call on
// another stream, whose input is the first call's output, runs after it: the result is
// n times the first sum only if the second waited for the first.
int asyncBody() {
  braidComm_t comm = nullptr;
  int n = 0, r = 0;
  if (!joinJob(&comm, &n, &r)) return 2;
  const size_t k = 300000;  // 1.2 MB: one round of the default windows
  Expected<void*> s1 = cuda::streamCreate(), s2 = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(3 * k * 4);
  Gate gate;
  if (!s1.isOk() || !s2.isOk() || !mem.isOk() || !gate.ok()) return 3;
  float* d = static_cast<float*>(mem.value());
  std::vector<float> host(k);
  for (size_t i = 0; i < k; ++i) host[i] = static_cast<float>((r + 1) * (i % 97));
  // A first call sets the windows up (that may wait for the device), then the gate.
  if (!cuda::copyAsync(d, host.data(), k * 4, s1.value()).isOk() ||
      braidAllReduce(d + k, d + 2 * k, k, braidFloat32, braidSum, comm,
                     static_cast<braidStream_t>(s1.value())) != braidSuccess ||
      !cuda::streamSynchronize(s1.value()).isOk() || !gate.hold(s1.value())) {
    return 4;
  }
  // TEST_PREMUL: the second call is a premul-sum by 1, whose scaling must read the input
  // after the first call has written it too.
  braidRedOp_t second = braidSum;
  float one = 1.0f;
  if (getenv("TEST_PREMUL") != nullptr &&
      braidRedOpCreatePreMulSum(&second, &one, braidFloat32, braidScalarHostImmediate, comm) !=
          braidSuccess) {
    return 5;
  }
  gate.arm();  // a call that waited for its stream would wait for the gate
  const uint64_t t0 = nowNs();
  braidResult_t a = braidAllReduce(d, d + k, k, braidFloat32, braidSum, comm,
                                   static_cast<braidStream_t>(s1.value()));
  braidResult_t b = braidAllReduce(d + k, d + 2 * k, k, braidFloat32, second, comm,
                                   static_cast<braidStream_t>(s2.value()));
  const double ms = static_cast<double>(nowNs() - t0) / 1e6;
  Expected<bool> idle1 = cuda::streamIdle(s1.value()), idle2 = cuda::streamIdle(s2.value());
  gate.open();
  bool ok = a == braidSuccess && b == braidSuccess && idle1.isOk() && !idle1.value() &&
            idle2.isOk() && !idle2.value() && ms < 10000;
  if (!ok) {
    fprintf(stderr, "rank %d: results %d %d, %.1f ms, streams idle %d %d: %s\n", r, a, b, ms,
            idle1.isOk() && idle1.value(), idle2.isOk() && idle2.value(), braidGetLastError(comm));
  }
  std::vector<float> out(2 * k);
  ok = cuda::streamSynchronize(s2.value()).isOk() &&
       cuda::copyAsync(out.data(), d + k, 2 * k * 4, s1.value()).isOk() &&
       cuda::streamSynchronize(s1.value()).isOk() && ok;
  size_t wrong = 0;
  const float ranks = static_cast<float>(n * (n + 1) / 2);
  for (size_t i = 0; i < k; ++i) {
    const float want = ranks * static_cast<float>(i % 97);
    if ((out[i] != want || out[k + i] != want * static_cast<float>(n)) && wrong++ < 3) {
      fprintf(stderr, "rank %d: [%zu] = %g, %g; want %g, %g\n", r, i, out[i], out[k + i], want,
              want * static_cast<float>(n));
    }
  }
  (void)cuda::streamDestroy(s1.value());
  (void)cuda::streamDestroy(s2.value());
  (void)cuda::deviceFree(mem.value());
  braidCommDestroy(comm);
  return ok && wrong == 0 ? 0 : 1;
}

// Staged calls, then the windows, on another stream: on 3+ ranks a send/recv before any
// device collective is staged (the proxy), and the all-reduce that follows on another
// stream, reading what it received, makes the windows. Rank 0's first stream is held for
// 300 ms and the others call the all-reduce 100 ms late, so the send/recv runs after the
// all-reduce call on rank 0 and before it elsewhere: the windows' set-up (host
// collectives) must wait for the staged calls' on every rank, or rank 0 sets up while the
// others wait in the send/recv for it, until the timeout. The all-reduce must see the
// received data: its stream waits for the staged call's copies back (a communicator's
// device calls are ordered across streams whichever path runs them).
int stagedThenWindowsBody() {
  braidComm_t comm = nullptr;
  int n = 0, r = 0;
  if (!joinJob(&comm, &n, &r)) return 2;
  const size_t k = size_t{4} << 20;
  Expected<void*> s1 = cuda::streamCreate(), s2 = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(3 * k * 4);
  if (!s1.isOk() || !s2.isOk() || !mem.isOk()) return 3;
  auto* d = static_cast<int32_t*>(mem.value());
  std::vector<int32_t> host(k);
  for (size_t i = 0; i < k; ++i) host[i] = static_cast<int32_t>((r + 1) * 10 + i % 7);
  Gate gate;
  bool ok = gate.ok() && (r != 0 || gate.hold(s1.value()));
  if (r == 0) gate.arm(300);
  ok = cuda::copyAsync(d, host.data(), k * 4, s1.value()).isOk() && ok;
  braidGroupStart();
  braidSend(d, k, braidInt32, (r + 1) % n, comm, static_cast<braidStream_t>(s1.value()));
  braidRecv(d + k, k, braidInt32, (r + n - 1) % n, comm, static_cast<braidStream_t>(s1.value()));
  ok = braidGroupEnd() == braidSuccess && ok;
  if (r != 0) usleep(100000);  // the send/recv has run here by now
  ok = ok && braidAllReduce(d + k, d + 2 * k, k, braidInt32, braidSum, comm,
                            static_cast<braidStream_t>(s2.value())) == braidSuccess;
  ok = ok && cuda::copyAsync(host.data(), d + 2 * k, k * 4, s2.value()).isOk() &&
       cuda::streamSynchronize(s2.value()).isOk() && cuda::streamSynchronize(s1.value()).isOk();
  if (!ok) fprintf(stderr, "rank %d: a call failed: %s\n", r, braidGetLastError(comm));
  size_t wrong = 0;
  for (size_t i = 0; ok && i < k; ++i) {
    const auto want = static_cast<int32_t>(10 * n * (n + 1) / 2 + n * static_cast<int>(i % 7));
    if (host[i] != want && wrong++ < 3) {
      fprintf(stderr, "rank %d: [%zu] = %d, want %d\n", r, i, host[i], want);
    }
  }
  (void)cuda::streamDestroy(s1.value());
  (void)cuda::streamDestroy(s2.value());
  (void)cuda::deviceFree(mem.value());
  braidCommDestroy(comm);
  return ok && wrong == 0 ? 0 : 1;
}

// Two ranks whose first device calls are a send and a receive (no collective ever): the
// pair makes the device windows, so the second exchange is only enqueued and returns while
// its stream is held by a gate (the staged path would wait for the stream, that is for
// the gate), and each rank gets the other's data.
int pairFirstBody() {
  braidComm_t comm = nullptr;
  int r = 0;
  if (!joinJob(&comm, nullptr, &r)) return 2;
  const int peer = 1 - r;
  const size_t k = 1 << 20;  // 4 MiB: one send slot
  Expected<void*> s = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(2 * k * 4);
  Gate gate;
  if (!s.isOk() || !mem.isOk() || !gate.ok()) return 3;
  float* d = static_cast<float*>(mem.value());
  auto* stream = static_cast<braidStream_t>(s.value());
  std::vector<float> host(k);
  for (size_t i = 0; i < k; ++i) host[i] = static_cast<float>((r + 1) * (i % 97));
  auto exchange = [&] {
    braidGroupStart();
    braidResult_t a = braidSend(d, k, braidFloat32, peer, comm, stream);
    braidResult_t b = braidRecv(d + k, k, braidFloat32, peer, comm, stream);
    return braidGroupEnd() == braidSuccess && a == braidSuccess && b == braidSuccess;
  };
  if (!cuda::copyAsync(d, host.data(), k * 4, s.value()).isOk() || !exchange() ||
      !cuda::streamSynchronize(s.value()).isOk() || !gate.hold(s.value())) {
    fprintf(stderr, "rank %d: first exchange: %s\n", r, braidGetLastError(comm));
    return 4;
  }
#ifdef BRAID_EMULATED_GPU
  // Windows a send/recv made are small: this buffer (8 MiB), 2 MiB of halves and 16 MiB of
  // send slots, not the 128 MiB of halves a collective's get.
  const size_t inUse = cuda::emu::deviceBytesInUse();
  if (inUse > (size_t{32} << 20)) {
    fprintf(stderr, "rank %d: %zu bytes of device memory in use\n", r, inUse);
    return 5;
  }
#endif
  gate.arm();
  const uint64_t t0 = nowNs();
  const bool sent = exchange();
  const double ms = static_cast<double>(nowNs() - t0) / 1e6;
  Expected<bool> idle = cuda::streamIdle(s.value());
  gate.open();
  std::vector<float> out(k);
  bool ok = sent && idle.isOk() && !idle.value() && ms < 10000 &&
            cuda::copyAsync(out.data(), d + k, k * 4, s.value()).isOk() &&
            cuda::streamSynchronize(s.value()).isOk();
  if (!ok) fprintf(stderr, "rank %d: %.1f ms: %s\n", r, ms, braidGetLastError(comm));
  size_t wrong = 0;
  for (size_t i = 0; i < k; ++i) {
    const float want = static_cast<float>((peer + 1) * (i % 97));
    if (out[i] != want && wrong++ < 3)
      fprintf(stderr, "rank %d: [%zu] = %g, want %g\n", r, i, out[i], want);
  }
  (void)cuda::streamDestroy(s.value());
  (void)cuda::deviceFree(mem.value());
  braidCommDestroy(comm);
  return ok && wrong == 0 ? 0 : 1;
}

class CudaCollectives : public ::testing::TestWithParam<int> {};

TEST_P(CudaCollectives, DeviceCallsReturnAtOnceAndKeepTheirOrderAcrossStreams) {
  SKIP_WITHOUT_DEVICE();
  const int n = GetParam();
  for (bool premul : {false, true}) {
    Env env = jobEnv(n);
    env["BRAID_TIMEOUT_MS"] = "60000";
    if (premul) env["TEST_PREMUL"] = "1";
    expectEveryRankPasses(n, env, asyncBody, 180);
  }
}

// The staged path (BRAID_CUDA_IPC=0, or ranks on two nodes) returns at once too, and
// orders its calls across streams alike (runtime/device/staged_proxy.h).
TEST_P(CudaCollectives, StagedCallsReturnAtOnceAndKeepTheirOrderAcrossStreams) {
  SKIP_WITHOUT_DEVICE();
  const int n = GetParam();
  for (bool premul : {false, true}) {
    Env env = jobEnv(n);
    env["BRAID_TIMEOUT_MS"] = "60000";
    env["BRAID_CUDA_IPC"] = "0";
    if (premul) env["TEST_PREMUL"] = "1";
    expectEveryRankPasses(n, env, asyncBody, 180);
    env.erase("BRAID_CUDA_IPC");
    expectEveryRankPasses(
        n, env, [] { return onTwoNodes(asyncBody); }, 180);
  }
}

// One rank: every collective and the self send/recv are copies enqueued on the stream
// (its schedule's local steps), exact like the others.
TEST(CudaOneRank, EveryCollectiveOnDeviceBuffersIsExact) {
  SKIP_WITHOUT_DEVICE();
  Env env = jobEnv(1);
  env["BRAID_TIMEOUT_MS"] = "60000";
  expectEveryRankPasses(1, env, everyCollectiveBody, 300);
}

TEST(CudaOrder, StagedCallsThenTheWindowsOnAnotherStreamKeepTheirOrder) {
  SKIP_WITHOUT_DEVICE();
  for (int n : {3, 4}) {
    Env env = jobEnv(n);
    env["BRAID_TIMEOUT_MS"] = "10000";
    expectEveryRankPasses(n, env, stagedThenWindowsBody, 120);
  }
}

// Ranks whose windows would be laid out differently (here BRAID_CUDA_WINDOW_BYTES differs
// on rank 1) must not use them: each would find the peers' send slots where they are not.
// They see it when they exchange handles, and every call is staged instead, exact.
TEST(CudaWindows, RanksThatDisagreeOnTheLayoutAreStagedInstead) {
  SKIP_WITHOUT_DEVICE();
  Env env = jobEnv(2);
  env["BRAID_TIMEOUT_MS"] = "60000";
  expectEveryRankPasses(
      2, env,
      [] {
        if (std::string(getenv("BRAID_RANK")) == "1")
          setenv("BRAID_CUDA_WINDOW_BYTES", "4194304", 1);
        return everyCollectiveBody();
      },
      300);
}

TEST(CudaPairs, ASendAndReceiveMakeTheWindowsOnTwoRanks) {
  SKIP_WITHOUT_DEVICE();
  Env env = jobEnv(2);
  env["BRAID_TIMEOUT_MS"] = "60000";
  expectEveryRankPasses(2, env, pairFirstBody, 180);
}

// The paths a device call can take: the device windows (CUDA IPC) as configured by
// default, the windows in 4 KiB rounds with every all-reduce two-shot (many rounds, and
// the slices of the two-shot uneven), the same rounds waiting through the wait kernel
// (BRAID_CUDA_WAITS=kernel) instead of stream memory waits, staged through host memory
// (its waits stream memory waits, or the wait kernel),
// and the schedules BRAID_ALGO names lowered to device work over 4 KiB slots (every
// family: ring, tree, halving-doubling, Bruck, pairwise, linear, direct), and ranks on two
// nodes (staged).
enum class DevicePath {
  kWindows,
  kWindowRounds,
  kKernelWaits,
  kStaged,
  kStagedKernelWaits,
  kRingSchedules,
  kTreeSchedules,
  kHalvingSchedules,
  kTwoNodes
};
const char* pathName(DevicePath p) {
  switch (p) {
    case DevicePath::kWindows:
      return "windows";
    case DevicePath::kWindowRounds:
      return "window_rounds";
    case DevicePath::kKernelWaits:
      return "kernel_waits";
    case DevicePath::kStaged:
      return "staged";
    case DevicePath::kStagedKernelWaits:
      return "staged_kernel_waits";
    case DevicePath::kRingSchedules:
      return "ring_schedules";
    case DevicePath::kTreeSchedules:
      return "tree_schedules";
    case DevicePath::kHalvingSchedules:
      return "halving_schedules";
    case DevicePath::kTwoNodes:
      return "two_nodes";
  }
  return "?";
}
class CudaPaths : public ::testing::TestWithParam<std::tuple<int, DevicePath>> {};

TEST_P(CudaPaths, EveryCollectiveOnDeviceBuffersIsExact) {
  SKIP_WITHOUT_DEVICE();
  const auto [n, path] = GetParam();
  Env env = jobEnv(n);
  env["BRAID_TIMEOUT_MS"] = "60000";
  if (path == DevicePath::kWindowRounds || path == DevicePath::kKernelWaits) {
    env["BRAID_CUDA_WINDOW_BYTES"] = "8192";  // halves of 4 KiB
    env["BRAID_CUDA_P2P_SLOT_BYTES"] = "4096";
    env["BRAID_CUDA_TWO_SHOT_BYTES"] = "0";
  }
  if (path == DevicePath::kKernelWaits || path == DevicePath::kStagedKernelWaits) {
    env["BRAID_CUDA_WAITS"] = "kernel";
  }
  if (path == DevicePath::kStaged || path == DevicePath::kStagedKernelWaits) {
    env["BRAID_CUDA_IPC"] = "0";
  }
  const char* algos = path == DevicePath::kRingSchedules   ? "ring,linear,pairwise"
                      : path == DevicePath::kTreeSchedules ? "tree,direct,linear,bruck,pairwise"
                      : path == DevicePath::kHalvingSchedules
                          ? "halving_doubling,tree,linear,bruck,pairwise"
                          : nullptr;
  if (algos != nullptr) {
    env["BRAID_ALGO"] = algos;
    env["BRAID_CUDA_P2P_SLOT_BYTES"] = "4096";
  }
  if (path == DevicePath::kTwoNodes) {
    expectEveryRankPasses(
        n, env, [] { return onTwoNodes(everyCollectiveBody); }, 300);
  } else {
    expectEveryRankPasses(n, env, everyCollectiveBody, 300);
  }
}

TEST_P(CudaCollectives, DeviceBuffersOnAHostStreamAreInvalidUsage) {
  SKIP_WITHOUT_DEVICE();
  const int n = GetParam();
  expectEveryRankPasses(n, jobEnv(n), hostStreamBody, 120);
}

// Without a device, a stream that is not one of braidStreamCreate's is refused before
// anything runs, and the message says why it could not be a CUDA stream either.
TEST(CudaStreams, WithoutADeviceAnUnknownStreamIsRefusedWithTheReason) {
  static const std::string reason = probeDevice();
  if (reason.empty()) GTEST_SKIP() << "this machine has a device (the stream would be queried)";
  auto outcomes = runRanks(1, jobEnv(1), [](int) {
    braidComm_t comm = nullptr;
    if (braidCommInitFromEnv(&comm, nullptr) != braidSuccess) return 2;
    int notAStream = 0;
    float buf[4] = {1, 2, 3, 4};
    braidResult_t res = braidAllReduce(buf, buf, 4, braidFloat32, braidSum, comm,
                                       reinterpret_cast<braidStream_t>(&notAStream));
    std::string msg = braidGetLastError(comm);
    braidCommDestroy(comm);
    fprintf(stderr, "%d: %s\n", res, msg.c_str());
    const bool says =
        msg.find("stream") != std::string::npos &&
        msg.find(cuda::compiled() ? "no CUDA device" : "braidStreamCreate") != std::string::npos;
    return res == braidInvalidArgument && says && buf[3] == 4 ? 0 : 1;
  });
  EXPECT_EQ(outcomes[0].exitCode, 0) << outcomes[0].output;
}

INSTANTIATE_TEST_SUITE_P(Ranks, CudaCollectives, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return std::to_string(info.param) + "_ranks"; });
INSTANTIATE_TEST_SUITE_P(
    Ranks, CudaPaths,
    ::testing::Combine(::testing::Values(2, 3, 4),
                       ::testing::Values(DevicePath::kWindows, DevicePath::kWindowRounds,
                                         DevicePath::kKernelWaits, DevicePath::kStaged,
                                         DevicePath::kStagedKernelWaits, DevicePath::kRingSchedules,
                                         DevicePath::kTreeSchedules, DevicePath::kHalvingSchedules,
                                         DevicePath::kTwoNodes)),
    [](const auto& info) {
      return std::to_string(std::get<0>(info.param)) + "_ranks_" +
             pathName(std::get<1>(info.param));
    });

}  // namespace
}  // namespace braid::test
