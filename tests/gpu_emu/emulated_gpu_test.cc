// The emulated GPU refuses what a GPU refuses and orders what a GPU orders, so the GPU
// path's tests over it (Emulated.*) fail where a real run would.
#include "tests/gpu_emu/emulated_gpu.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/cuda/staging.h"

namespace braid::cuda {
namespace {

// A gate: work queued after it on `stream` waits until open() (a word in pinned memory,
// as the GPU tests hold streams).
struct Gate {
  uint64_t* word = nullptr;
  explicit Gate(void* stream) {
    word = static_cast<uint64_t*>(pinnedAlloc(8).value());
    *word = 0;
    EXPECT_TRUE(streamWaitValue64(stream, word, 1).isOk());
  }
  void open() { reinterpret_cast<std::atomic<uint64_t>*>(word)->store(1); }
  ~Gate() { (void)pinnedFree(word); }
};

TEST(EmulatedGpu, StreamsRunInOrderAndSynchronizeWaitsForAll) {
  ASSERT_TRUE(loadKernels().isOk());  // a kernel's first launch would wait for the gate
  void* s = streamCreate().value();
  auto* d = static_cast<int*>(deviceAlloc(4 * sizeof(int)).value());
  int host[4] = {1, 2, 3, 4}, back[4] = {};
  ASSERT_TRUE(copyAsync(d, host, sizeof(host), s).isOk());
  host[0] = 99;  // taken at the call, as CUDA stages pageable memory
  Gate gate(s);
  const int seven = 7;
  ASSERT_TRUE(launchCopy(d + 3, d + 1, sizeof(int), s).isOk());  // queued behind the gate
  EXPECT_FALSE(streamIdle(s).value());
  // A copy from pageable memory first waits for the stream: it returns after the gate.
  std::atomic<bool> opened{false};
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    opened = true;
    gate.open();
  });
  ASSERT_TRUE(copyAsync(d + 2, &seven, sizeof(int), s).isOk());
  EXPECT_TRUE(opened.load());
  opener.join();
  ASSERT_TRUE(copyAsync(back, d, sizeof(back), s).isOk());  // to pageable: returns when done
  EXPECT_EQ(back[0], 1);
  EXPECT_EQ(back[2], 7);
  EXPECT_EQ(back[3], 2);
  EXPECT_TRUE(streamIdle(s).value());
  EXPECT_TRUE(deviceFree(d).isOk());
  EXPECT_TRUE(streamDestroy(s).isOk());
  EXPECT_FALSE(checkStream(s).isOk());
}

// Host code cannot touch device memory (as on a GPU, where it would fault too); the test
// reads it where the emulated device does (emu::reach).
TEST(EmulatedGpu, DeviceMemoryIsNotZeroedAndIsDeviceKind) {
  auto* d = static_cast<unsigned char*>(deviceAlloc(64).value());
  EXPECT_EQ(memoryKind(d + 63), MemoryKind::kDevice);
  EXPECT_EQ(memoryKind(d + 64), MemoryKind::kHost);
  EXPECT_NE(static_cast<unsigned char*>(emu::reach(d))[0], 0);
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // stream threads may be running
  EXPECT_DEATH(
      {
        volatile unsigned char byte = d[1];
        (void)byte;
      },
      "");
  int local = 0;
  EXPECT_EQ(memoryKind(&local), MemoryKind::kHost);
  EXPECT_TRUE(deviceFree(d).isOk());
  EXPECT_FALSE(deviceFree(d).isOk());
}

TEST(EmulatedGpu, EventsOrderOneStreamAfterAnother) {
  ASSERT_TRUE(loadKernels().isOk());
  void* a = streamCreate().value();
  void* b = streamCreate().value();
  auto* d = static_cast<int*>(deviceAlloc(8).value());
  auto* one = static_cast<int*>(pinnedAlloc(4).value());
  *one = 1;
  Gate gate(a);
  ASSERT_TRUE(copyAsync(d, one, 4, a).isOk());
  void* e = eventCreate().value();
  ASSERT_TRUE(eventRecord(e, a).isOk());
  ASSERT_TRUE(streamWaitEvent(b, e).isOk());
  ASSERT_TRUE(launchCopy(d + 1, d, 4, b).isOk());
  EXPECT_FALSE(streamIdle(b).value());  // held behind a's gate
  gate.open();
  int got[2] = {};
  ASSERT_TRUE(copyAsync(got, d, 8, b).isOk());
  EXPECT_EQ(got[1], 1);
  EXPECT_TRUE(eventDestroy(e).isOk());
  EXPECT_TRUE(deviceFree(d).isOk());
  EXPECT_TRUE(pinnedFree(one).isOk());
}

// Lazy loading: a kernel's first launch waits for every stream, one held at a gate too,
// until loadKernels has loaded them all; then a launch returns at once.
TEST(EmulatedGpu, AKernelsFirstLaunchWaitsForEveryStreamUnlessLoadedFirst) {
  emu::forgetLoadedKernels();
  void* held = streamCreate().value();
  void* s = streamCreate().value();
  auto* d = static_cast<int*>(deviceAlloc(2 * sizeof(int)).value());
  {
    Gate gate(held);
    std::atomic<bool> opened{false};
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      opened = true;
      gate.open();
    });
    ASSERT_TRUE(launchCopy(d + 1, d, sizeof(int), s).isOk());
    EXPECT_TRUE(opened.load());  // it returned only after the held stream ran
    opener.join();
  }
  emu::forgetLoadedKernels();
  ASSERT_TRUE(loadKernels().isOk());
  {
    Gate gate(held);
    ASSERT_TRUE(launchCopy(d + 1, d, sizeof(int), s).isOk());
    EXPECT_TRUE(streamSynchronize(s).isOk());  // ran while the other stream is held
    EXPECT_FALSE(streamIdle(held).value());
    gate.open();
  }
  EXPECT_TRUE(deviceFree(d).isOk());
  EXPECT_TRUE(streamDestroy(s).isOk());
  EXPECT_TRUE(streamDestroy(held).isOk());
}

TEST(EmulatedGpu, KernelsOnPageableMemoryFaultAndTheFaultSticks) {
  // Forked: the fault is sticky for the rest of the process.
  pid_t pid = fork();
  if (pid == 0) {
    void* s = streamCreate().value();
    std::vector<float> pageable(16, 1.0f);
    auto* d = static_cast<float*>(deviceAlloc(64).value());
    const void* srcs[] = {pageable.data(), d};
    bool ok = launchReduce(d, srcs, 2, 16, braidFloat32, braidSum, 1, s).isOk();  // queued
    Status synced = streamSynchronize(s);
    ok = ok && !synced.isOk() && synced.message().find("pageable") != std::string::npos;
    ok = ok && !streamSynchronize(s).isOk();  // still
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(EmulatedGpu, CopiesPastAnAllocationAndMemoryOpsOnPageableMemoryAreRefused) {
  void* s = streamCreate().value();
  auto* d = static_cast<char*>(deviceAlloc(64).value());
  char host[128] = {};
  EXPECT_FALSE(copyAsync(d + 32, host, 64, s).isOk());
  uint64_t word = 0;
  EXPECT_FALSE(streamWaitValue64(s, &word, 1).isOk());
  EXPECT_FALSE(streamWriteValue64(s, &word, 1).isOk());
  EXPECT_TRUE(deviceFree(d).isOk());
}

// cudaFree and cudaFreeHost wait for the device: freeing here returns only once a stream
// held on another thread's word has run.
TEST(EmulatedGpu, FreeingWaitsForEveryStreamAsCudaFreeDoes) {
  void* held = streamCreate().value();
  for (bool device : {true, false}) {
    Gate gate(held);
    void* p = device ? deviceAlloc(64).value() : pinnedAlloc(64).value();
    std::atomic<bool> opened{false};
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      opened = true;
      gate.open();
    });
    EXPECT_TRUE((device ? deviceFree(p) : pinnedFree(p)).isOk());
    EXPECT_TRUE(opened.load()) << (device ? "deviceFree" : "pinnedFree");
    opener.join();
  }
  EXPECT_TRUE(streamDestroy(held).isOk());
}

// releaseLater (exec/cuda/staging.h) returns at once while its free waits for a held
// stream, then runs its jobs in order, each with the device current that was current where
// it was queued (the reaper thread's own, device 0, would get a context of its own on a GPU
// the process does not use).
TEST(EmulatedGpu, ReleaseLaterReturnsAtOnceAndRunsInOrderOnTheCallersDevice) {
  ASSERT_EQ(setenv("BRAID_EMU_DEVICES", "2", 1), 0);
  void* held = streamCreate().value();
  std::mutex mu;
  std::vector<int> seen;  // 10 x the job + the device it ran on
  auto job = [&](int i) {
    return [&, i] {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(10 * i + currentDevice().value());
    };
  };
  auto count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size();
  };
  {
    Gate gate(held);
    void* p = deviceAlloc(64).value();
    ASSERT_TRUE(setCurrentDevice(1).isOk());
    const auto t0 = std::chrono::steady_clock::now();
    releaseLater([p] { EXPECT_TRUE(deviceFree(p).isOk()); });
    releaseLater(job(1));
    ASSERT_TRUE(setCurrentDevice(0).isOk());
    releaseLater(job(2));
    const auto queued = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(queued, std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(count(), 0u);  // behind the free, which waits for the held stream
    gate.open();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (count() < 2 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  EXPECT_EQ(seen, (std::vector<int>{11, 20}));
  EXPECT_TRUE(streamSynchronize(held).isOk());
  EXPECT_TRUE(streamDestroy(held).isOk());
  ASSERT_EQ(unsetenv("BRAID_EMU_DEVICES"), 0);
}

// On a GPU a free waiting for the whole device holds the process's other CUDA calls (a
// cudaEventDestroy waited 28 s on an H200 behind another thread's cudaFree, for a held
// stream): here too.
TEST(EmulatedGpu, AFreeWaitingForAHeldStreamHoldsOtherThreadsCalls) {
  void* held = streamCreate().value();
  std::atomic<bool> called{false};
  {
    Gate gate(held);
    void* p = deviceAlloc(64).value();
    std::thread freeing([p] { EXPECT_TRUE(deviceFree(p).isOk()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::thread other([&called] {
      void* e = eventCreate().value();
      EXPECT_TRUE(eventDestroy(e).isOk());
      called = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(called.load());
    gate.open();
    freeing.join();
    other.join();
  }
  EXPECT_TRUE(called.load());
  EXPECT_TRUE(streamDestroy(held).isOk());
}

// releaseAfter: the reaper starts no free while a call's work on a held stream has not run
// (its event), so the process's other calls go on meanwhile; once it has, the frees run.
TEST(EmulatedGpu, ReleaseAfterHoldsTheFreesUntilTheWorkHasRun) {
  void* held = streamCreate().value();
  void* event = eventCreate().value();
  std::atomic<bool> freed{false};
  {
    Gate gate(held);
    ASSERT_TRUE(eventRecord(event, held).isOk());  // a failed call's part, behind the gate
    void* p = deviceAlloc(64).value();
    releaseAfter([event] { return eventDone(event).value(); });
    releaseLater([p, &freed] {
      EXPECT_TRUE(deviceFree(p).isOk());
      freed = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(freed.load());
    std::atomic<bool> called{false};  // on a thread: a free in progress would hold it
    std::thread other([&called] {
      void* e = eventCreate().value();
      EXPECT_TRUE(eventDestroy(e).isOk());
      called = true;
    });
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!called.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(called.load()) << "another thread's CUDA call waited for the held stream";
    gate.open();
    other.join();
    awaitReleases();
  }
  EXPECT_TRUE(freed.load());
  EXPECT_TRUE(eventDestroy(event).isOk());
  EXPECT_TRUE(streamDestroy(held).isOk());
}

// Staged buffers given back while a stream is held: the pool keeps four and frees the
// rest, which must not make the giving thread (a call being issued, the staged proxy)
// wait for the device as cudaFreeHost would.
TEST(EmulatedGpu, StagedBuffersGoBackWithoutWaitingForAHeldStream) {
  void* held = streamCreate().value();
  void* work = streamCreate().value();
  Gate gate(held);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    gate.open();
  });
  std::vector<void*> device;
  {
    std::vector<StagedBuffers> staged;
    for (size_t i = 1; i <= 6; ++i) {  // six sizes in use at once
      const size_t bytes = (size_t{4} << 20) * i;
      device.push_back(deviceAlloc(bytes).value());
      Expected<StagedBuffers> s = StagedBuffers::stageIn({{device.back(), bytes, false}}, work);
      EXPECT_TRUE(s.isOk()) << s.status().message();
      if (s.isOk()) staged.push_back(std::move(s).value());
    }
    EXPECT_TRUE(streamSynchronize(work).isOk());
    const auto t0 = std::chrono::steady_clock::now();
    staged.clear();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  }
  opener.join();
  for (void* d : device) EXPECT_TRUE(deviceFree(d).isOk());
  EXPECT_TRUE(streamDestroy(work).isOk());
  EXPECT_TRUE(streamDestroy(held).isOk());
}

TEST(EmulatedGpu, WaitValueComparesAsAWrappingCounter) {
  void* s = streamCreate().value();
  auto* w = static_cast<uint64_t*>(deviceAlloc(8).value());
  auto* word = static_cast<std::atomic<uint64_t>*>(emu::reach(w));
  word->store(~uint64_t{0} - 1);                                  // just below wrapping
  ASSERT_TRUE(streamWaitValue64(s, w, ~uint64_t{0} - 3).isOk());  // already past
  ASSERT_TRUE(streamWaitValue64(s, w, 1).isOk());                 // after the wrap
  EXPECT_FALSE(streamIdle(s).value());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(streamIdle(s).value());
  word->store(1);
  EXPECT_TRUE(streamSynchronize(s).isOk());
  EXPECT_TRUE(deviceFree(w).isOk());
}

TEST(EmulatedGpu, IpcHandlesMapInAnotherProcessOnly) {
  auto* d = static_cast<int*>(deviceAlloc(4096).value());
  auto* view = static_cast<int*>(emu::reach(d));
  view[10] = 7;
  IpcHandle h = ipcHandle(d + 100).value();  // an inner address: the whole allocation's
  EXPECT_FALSE(ipcOpen(h).isOk());           // not in the process that made it
  pid_t pid = fork();
  if (pid == 0) {
    Expected<void*> p = ipcOpen(h);
    if (!p.isOk()) _exit(2);
    auto* m = static_cast<int*>(p.value());
    auto* mv = static_cast<int*>(emu::reach(m));
    const bool base = mv[10] == 7 && memoryKind(m) == MemoryKind::kDevice;
    mv[11] = 8;
    _exit(base && ipcClose(m).isOk() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(view[11], 8);
  EXPECT_TRUE(deviceFree(d).isOk());
}

// Streams that share a hardware queue: a wait on one holds back the other stream's work
// queued behind it, even the write that would end the wait; the same streams on queues of
// their own do not.
TEST(EmulatedGpu, AWaitHoldsBackAnotherStreamsWorkInTheirSharedQueue) {
  for (int queues : {1, 0}) {
    emu::shareQueues(queues);
    void* a = streamCreate().value();
    void* b = streamCreate().value();
    emu::shareQueues(0);
    auto* w = static_cast<uint64_t*>(pinnedAlloc(8).value());
    auto* word = reinterpret_cast<std::atomic<uint64_t>*>(w);
    word->store(0);
    ASSERT_TRUE(streamWaitValue64(a, w, 1).isOk());
    ASSERT_TRUE(streamWriteValue64(b, w, 1).isOk());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(streamIdle(b).value(), queues == 0) << queues << " queue(s)";
    EXPECT_EQ(word->load(), queues == 0 ? 1u : 0u);
    word->store(1);  // the host ends the wait: both go on
    EXPECT_TRUE(streamSynchronize(a).isOk());
    EXPECT_TRUE(streamSynchronize(b).isOk());
    EXPECT_TRUE(pinnedFree(w).isOk());
    EXPECT_TRUE(streamDestroy(a).isOk());
    EXPECT_TRUE(streamDestroy(b).isOk());
  }
}

}  // namespace
}  // namespace braid::cuda
