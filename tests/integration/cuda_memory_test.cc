// braidMemAllocDevice: shareable device memory, with 2 ranks as processes sharing one GPU.
// Collectives run on it through the device windows, and a peer maps it from a file
// descriptor passed over a Unix socket (SCM_RIGHTS): what one rank wrote, the other reads
// there, and the other's writes show in the owner's memory. Skips where there is no GPU
// (Emulated.* runs it over the emulated GPU, tests/gpu_emu).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "cuda/device.h"
#include "cuda_harness.h"
#include "spawn.h"
#if BRAID_EMULATED_GPU
#include "exec/cuda/staging.h"
#include "tests/gpu_emu/emulated_gpu.h"
#endif

namespace braid::test {
namespace {

constexpr size_t kCount = 300000;  // floats: 1.2 MB, more than one window round at 1 MiB

// An abstract Unix socket named by the test's TEST_SOCKET.
sockaddr_un socketAddress(socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name = getenv("TEST_SOCKET");
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

// Rank 0 sends (fd, bytes); rank 1 receives them. Both return false on any failure.
bool sendFd(int fd, uint64_t bytes) {
  socklen_t len = 0;
  sockaddr_un a = socketAddress(&len);
  int s = -1;
  bool connected = false;
  for (int i = 0; i < 500 && !connected; ++i) {  // rank 1 may not listen yet
    if (s >= 0) close(s);                        // a fresh socket for each try
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    connected = s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), len) == 0;
    if (!connected) usleep(10000);
  }
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{&bytes, sizeof(bytes)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  const bool sent = connected && sendmsg(s, &msg, 0) == static_cast<ssize_t>(sizeof(bytes));
  if (s >= 0) close(s);
  return sent;
}

int listenForFd() {
  socklen_t len = 0;
  sockaddr_un a = socketAddress(&len);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 1) != 0) {
    close(s);
    return -1;
  }
  return s;
}

bool receiveFd(int listener, int* fd, uint64_t* bytes) {
  int s = accept(listener, nullptr, nullptr);
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{bytes, sizeof(*bytes)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const bool got = s >= 0 && recvmsg(s, &msg, 0) == static_cast<ssize_t>(sizeof(*bytes));
  cmsghdr* c = got ? CMSG_FIRSTHDR(&msg) : nullptr;
  if (c != nullptr && c->cmsg_type == SCM_RIGHTS) std::memcpy(fd, CMSG_DATA(c), sizeof(int));
  if (s >= 0) close(s);
  return c != nullptr && c->cmsg_type == SCM_RIGHTS;
}

bool toHost(std::vector<float>* host, const void* device, void* stream) {
  return cuda::copyAsync(host->data(), device, host->size() * sizeof(float), stream).isOk() &&
         cuda::streamSynchronize(stream).isOk();
}

int sharedMemoryBody() {
  braidComm_t comm = nullptr;
  int r = 0;
  if (!joinJob(&comm, nullptr, &r)) return 2;
  const int listener = r == 1 ? listenForFd() : -1;
  Expected<void*> s = cuda::streamCreate();
  void *send = nullptr, *recv = nullptr;
  if (!s.isOk() || braidMemAllocDevice(&send, kCount * sizeof(float)) != braidSuccess ||
      braidMemAllocDevice(&recv, kCount * sizeof(float)) != braidSuccess ||
      !cuda::isDeviceMemory(send) || (r == 1 && listener < 0)) {
    fprintf(stderr, "rank %d: set-up failed: %s\n", r, braidGetLastError(nullptr));
    return 3;
  }
  auto* st = static_cast<braidStream_t>(s.value());
  std::vector<float> mine(kCount), got(kCount);
  for (size_t i = 0; i < kCount; ++i) mine[i] = static_cast<float>((i % 1000) * (r + 1));
  if (!cuda::copyAsync(send, mine.data(), kCount * sizeof(float), s.value()).isOk()) return 4;
  // A collective on it, through the device windows: 1 + 2 times each value.
  if (braidAllReduce(send, recv, kCount, braidFloat32, braidSum, comm, st) != braidSuccess ||
      !toHost(&got, recv, s.value())) {
    return 5;
  }
  for (size_t i = 0; i < kCount; ++i) {
    if (got[i] != static_cast<float>((i % 1000) * 3)) {
      fprintf(stderr, "rank %d: all-reduce element %zu is %g\n", r, i, got[i]);
      return 6;
    }
  }
  // Rank 1 maps rank 0's send buffer from its descriptor, reads it, and writes its own
  // values into it; rank 0 then sees them in its memory.
  int rc = 0;
  if (r == 0) {
    size_t bytes = 0;
    Expected<int> fd = cuda::shareableExport(send, &bytes);
    if (!fd.isOk() || bytes < kCount * sizeof(float) || !sendFd(fd.value(), bytes)) rc = 7;
    if (fd.isOk()) close(fd.value());
  } else {
    int fd = -1;
    uint64_t bytes = 0;
    Expected<void*> peer = Status(braidInternalError, "no descriptor");
    if (receiveFd(listener, &fd, &bytes)) peer = cuda::shareableImport(fd, bytes);
    if (fd >= 0) close(fd);
    if (!peer.isOk() || !toHost(&got, peer.value(), s.value())) {
      fprintf(stderr, "rank 1: mapping rank 0's memory failed: %s\n",
              peer.isOk() ? "copy" : peer.status().message().c_str());
      rc = 8;
    } else {
      for (size_t i = 0; i < kCount && rc == 0; ++i) {
        if (got[i] != static_cast<float>(i % 1000)) rc = 9;
      }
      if (!cuda::copyAsync(peer.value(), mine.data(), kCount * sizeof(float), s.value()).isOk() ||
          !cuda::streamSynchronize(s.value()).isOk() ||
          !cuda::shareableUnmap(peer.value()).isOk()) {
        rc = 10;
      }
    }
    close(listener);
  }
  // A host barrier: rank 1's writes are done before rank 0 reads.
  int one = 1, sum = 0;
  if (braidAllReduce(&one, &sum, 1, braidInt32, braidSum, comm, nullptr) != braidSuccess) rc = 11;
  if (r == 0 && rc == 0 && toHost(&got, send, s.value())) {
    for (size_t i = 0; i < kCount && rc == 0; ++i) {
      if (got[i] != static_cast<float>((i % 1000) * 2)) rc = 12;
    }
  }
  (void)cuda::streamSynchronize(s.value());
  if (braidMemFree(send) != braidSuccess || braidMemFree(recv) != braidSuccess) rc = 13;
  if (braidMemFree(send) != braidInvalidArgument) rc = 14;  // already freed
  braidCommDestroy(comm);
  if (rc != 0) fprintf(stderr, "rank %d: failed with %d\n", r, rc);
  return rc;
}

TEST(CudaMemory, PeersMapBraidMemAllocDeviceMemoryFromADescriptor) {
  SKIP_WITHOUT_DEVICE();
  Env env = jobEnv(2);
  env["TEST_SOCKET"] = "braid-cuda-memory-" + std::to_string(getpid());
  expectEveryRankPasses(2, env, sharedMemoryBody, 120);
}

#if BRAID_EMULATED_GPU
// A rank on the second of two GPUs: all-reduces of 4 to 24 MiB (staged, the pinned pool
// lets the smaller buffers go, on the reaper's thread), then the communicator destroyed
// from a thread that never set its device (as a finalizer's may) and the reaper's queue
// run. Every CUDA call Braid made, on any of its threads, was on device 1: a thread that
// never set its device would have made a context on device 0 (on a GPU, hundreds of MiB
// of one the process does not use).
int secondDeviceBody() {
  constexpr size_t kStep = size_t{1} << 20;  // floats: 4 MiB, the pinned pool's step
  constexpr int kCalls = 6;
  if (!cuda::setCurrentDevice(1).isOk()) return 2;
  braidComm_t comm = nullptr;
  int n = 0, r = 0;
  if (!joinJob(&comm, &n, &r)) return 3;
  Expected<void*> s = cuda::streamCreate();
  Expected<void*> mem = cuda::deviceAlloc(kCalls * kStep * sizeof(float));
  if (!s.isOk() || !mem.isOk()) return 4;
  auto* d = static_cast<float*>(mem.value());
  std::vector<float> host(kCalls * kStep, 1.0f);
  bool ok = cuda::copyAsync(d, host.data(), host.size() * sizeof(float), s.value()).isOk();
  for (int k = 1; k <= kCalls && ok; ++k) {  // back to back: the proxy thread lets go too
    ok = braidAllReduce(d, d, k * kStep, braidFloat32, braidSum, comm,
                        static_cast<braidStream_t>(s.value())) == braidSuccess;
  }
  ok = ok && cuda::copyAsync(host.data(), d, sizeof(float), s.value()).isOk() &&
       cuda::streamSynchronize(s.value()).isOk();
  const float first = host[0];  // summed by every call: n^kCalls
  (void)cuda::streamDestroy(s.value());
  (void)cuda::deviceFree(mem.value());
  std::thread([comm] { braidCommDestroy(comm); }).join();
  awaitReleases();
  const uint32_t contexts = cuda::emu::devicesWithContext();
  std::fprintf(stderr, "rank %d: calls %s, first %g, contexts on devices 0x%x\n", r,
               ok ? "ok" : "failed", first, contexts);
  float want = 1;
  for (int k = 0; k < kCalls; ++k) want *= static_cast<float>(n);
  return ok && first == want && contexts == 2u ? 0 : 1;
}

TEST(CudaMemory, ARankOnTheSecondGpuMakesNoContextOnTheFirst) {
  for (const char* ipc : {"0", "1"}) {
    Env env = jobEnv(2);
    env["BRAID_EMU_DEVICES"] = "2";
    env["BRAID_CUDA_IPC"] = ipc;
    expectEveryRankPasses(2, env, secondDeviceBody, 120);
  }
}
#endif

}  // namespace
}  // namespace braid::test
