// Tests of the device kernels (cuda/kernels.h): every datatype x op against a reference
// written here (exact data: integers in modular uint64, floats in double, float8 through
// its own codec), and, on random bit patterns, against the host kernels, which define the
// semantics. Argument checks run everywhere; anything that launches skips, with the reason
// device detection gives, where there is no GPU (or no CUDA in this build).
#include "cuda/kernels.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda/device.h"
#include "exec/reduce.h"
#include "tests/common/reference.h"
#include "tests/unit/cuda/float8_reference.h"

namespace braid {
namespace {

// A macro: GTEST_SKIP returns from the function it is written in.
#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::hasDevice()) GTEST_SKIP() << cuda::deviceStatus().reason

// Device memory holding `bytes`, freed on scope exit.
struct DeviceBuf {
  void* p = nullptr;
  explicit DeviceBuf(size_t bytes) {
    Expected<void*> got = cuda::deviceAlloc(bytes == 0 ? 1 : bytes);
    EXPECT_TRUE(got.isOk()) << got.status().message();
    if (got.isOk()) p = got.value();
  }
  ~DeviceBuf() {
    if (p != nullptr) {
      EXPECT_TRUE(cuda::deviceFree(p).isOk());
    }
  }
  char* at(size_t off) const { return static_cast<char*>(p) + off; }
};

void toDevice(void* dst, const void* src, size_t bytes) {
  ASSERT_TRUE(cuda::copyAsync(dst, src, bytes, nullptr).isOk());
  ASSERT_TRUE(cuda::streamSynchronize(nullptr).isOk());
}

std::vector<char> fromDevice(const void* src, size_t bytes) {
  std::vector<char> out(bytes);
  EXPECT_TRUE(cuda::copyAsync(out.data(), src, bytes, nullptr).isOk());
  Status st = cuda::streamSynchronize(nullptr);
  EXPECT_TRUE(st.isOk()) << st.message();  // a fault inside a kernel shows here
  return out;
}

bool isFloat(braidDataType_t t) {
  return t == braidFloat16 || t == braidFloat32 || t == braidFloat64 || t == braidBfloat16 ||
         t == braidFloat8e4m3 || t == braidFloat8e5m2;
}

// ---- The reference: input k of element i, and the expected result, as exact values.

int64_t inputOf(braidDataType_t t, braidRedOp_t op, int k, size_t i) {
  if (op == braidProd) return (i + k) % 3 == 0 ? 2 : 1;
  if (op == braidMax || op == braidMin) {
    int64_t v = static_cast<int64_t>((k * 7 + i * 3) % 11);
    return test::isSigned(t) ? v - 5 : v;
  }
  int64_t v = static_cast<int64_t>((k * 3 + i) % 5);  // sums of 8 stay within +-16
  return test::isSigned(t) ? v - 2 : v;
}

// The reduction of k inputs as a double (floats: exact for this data) and as modular bits
// (integers).
struct Expect {
  double value;
  uint64_t bits;
};

Expect expected(braidDataType_t t, braidRedOp_t op, int nsrcs, size_t i, int divisor) {
  int64_t acc = inputOf(t, op, 0, i);
  uint64_t bits = static_cast<uint64_t>(acc);
  for (int k = 1; k < nsrcs; ++k) {
    int64_t v = inputOf(t, op, k, i);
    switch (op) {
      case braidProd:
        acc *= v;
        bits *= static_cast<uint64_t>(v);
        break;
      case braidMax:
        acc = std::max(acc, v);
        bits = static_cast<uint64_t>(acc);
        break;
      case braidMin:
        acc = std::min(acc, v);
        bits = static_cast<uint64_t>(acc);
        break;
      default:
        acc += v;
        bits += static_cast<uint64_t>(v);
        break;
    }
  }
  double value = static_cast<double>(acc);
  if (op == braidAvg) {
    value /= divisor;                             // floats: divisor 4 keeps it exact
    bits = static_cast<uint64_t>(acc / divisor);  // integers truncate toward zero
    if (!test::isSigned(t)) bits = static_cast<uint64_t>(acc) / divisor;
  }
  return {value, bits};
}

void storeValue(braidDataType_t t, void* base, size_t i, double v, uint64_t bits) {
  const size_t es = datatypeSize(t);
  char* p = static_cast<char*>(base) + i * es;
  if (t == braidFloat8e4m3 || t == braidFloat8e5m2) {
    *reinterpret_cast<uint8_t*>(p) =
        test::float8Encode(v, t == braidFloat8e4m3 ? test::kE4m3 : test::kE5m2);
  } else if (isFloat(t)) {
    test::store(t, base, i, v);
  } else {
    std::memcpy(p, &bits, es);  // little endian: the low bytes are the wrapped value
  }
}

class ReduceKernelTest : public ::testing::TestWithParam<std::tuple<int, int>> {
 protected:
  void SetUp() override { SKIP_WITHOUT_DEVICE(); }
  braidDataType_t dt() const { return static_cast<braidDataType_t>(std::get<0>(GetParam())); }
  braidRedOp_t op() const { return static_cast<braidRedOp_t>(std::get<1>(GetParam())); }
};

// K inputs into one, for K = 1..8, aligned, all shifted alike (unaligned head), and shifted
// differently (element by element); in place into input 0 and into its own buffer.
TEST_P(ReduceKernelTest, SumOfKBuffersMatchesReference) {
  const size_t es = datatypeSize(dt());
  const int divisor = op() != braidAvg ? 1 : isFloat(dt()) ? 4 : 3;
  for (size_t count :
       {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{1000}, size_t{70001}}) {
    for (int nsrcs : {1, 2, 3, 5, 8}) {
      for (int layout : {0, 1, 2, 3}) {  // aligned, same shift, different shifts, in place
        SCOPED_TRACE(::testing::Message()
                     << "count " << count << " inputs " << nsrcs << " layout " << layout);
        const size_t pad = 64, slot = count * es + 2 * pad;
        DeviceBuf mem(slot * (nsrcs + 1));
        std::vector<char> host(slot * (nsrcs + 1), 0x5a);
        std::vector<const void*> srcs(nsrcs);
        for (int k = 0; k < nsrcs; ++k) {
          size_t off = slot * k + pad + (layout == 1 || (layout == 2 && k % 2) ? es : 0);
          for (size_t i = 0; i < count; ++i) {
            int64_t v = inputOf(dt(), op(), k, i);
            storeValue(dt(), host.data() + off, i, static_cast<double>(v),
                       static_cast<uint64_t>(v));
          }
          srcs[k] = mem.at(off);
        }
        size_t dstOff = layout == 3 ? static_cast<const char*>(srcs[0]) - mem.at(0)
                                    : slot * nsrcs + pad + (layout == 1 ? es : 0);
        toDevice(mem.p, host.data(), host.size());
        Status st = cuda::launchReduce(mem.at(dstOff), srcs.data(), nsrcs, count, dt(), op(),
                                       divisor, nullptr);
        ASSERT_TRUE(st.isOk()) << st.message();
        std::vector<char> got = fromDevice(mem.p, host.size());
        std::vector<char> want = host;
        for (size_t i = 0; i < count; ++i) {
          Expect e = expected(dt(), op(), nsrcs, i, divisor);
          storeValue(dt(), want.data() + dstOff, i, e.value, e.bits);
        }
        for (size_t b = 0; b < want.size(); ++b) {
          ASSERT_EQ(got[b], want[b])
              << "byte " << b << " (element "
              << (static_cast<long>(b) - static_cast<long>(dstOff)) / static_cast<long>(es)
              << " of the output, or outside it)";
        }
      }
    }
  }
}

bool sameOrBothNan(braidDataType_t t, const char* x, const char* y) {
  const size_t es = datatypeSize(t);
  if (std::memcmp(x, y, es) == 0) return true;
  auto nan = [t](const char* p) {
    uint64_t b = 0;
    std::memcpy(&b, p, datatypeSize(t));
    switch (t) {
      case braidFloat16:
        return (b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0;
      case braidBfloat16:
        return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
      case braidFloat32:
        return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) != 0;
      case braidFloat64:
        return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b << 12) != 0;
      case braidFloat8e4m3:
        return test::float8IsNan(static_cast<uint8_t>(b), test::kE4m3);
      case braidFloat8e5m2:
        return test::float8IsNan(static_cast<uint8_t>(b), test::kE5m2);
      default:
        return false;
    }
  };
  return nan(x) && nan(y);
}

// Two inputs of random bits (NaN, Inf, subnormals, wrapping integers) give what the host
// kernels give, bit for bit (any NaN for a NaN).
TEST_P(ReduceKernelTest, TwoInputsMatchHostKernelsOnRandomBits) {
  const size_t es = datatypeSize(dt()), count = 100003;
  std::mt19937 rng(std::get<0>(GetParam()) * 16 + std::get<1>(GetParam()));
  std::vector<char> a(count * es), b(count * es), host(count * es);
  for (auto* v : {&a, &b}) {
    for (char& c : *v) c = static_cast<char>(rng());
  }
  const int divisor = 3;
  const ReduceKernels& k = reduceKernels(dt(), op());
  k.reduceFinal(host.data(), nullptr, a.data(), b.data(), count, divisor);
  DeviceBuf da(a.size()), db(b.size());
  toDevice(da.p, a.data(), a.size());
  toDevice(db.p, b.data(), b.size());
  const void* srcs[] = {da.p, db.p};
  Status st = cuda::launchReduce(da.p, srcs, 2, count, dt(), op(), divisor, nullptr);
  ASSERT_TRUE(st.isOk()) << st.message();
  std::vector<char> got = fromDevice(da.p, a.size());
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(sameOrBothNan(dt(), &got[i * es], &host[i * es])) << "element " << i;
  }
}

// The scale kernel (a premul-sum's) gives the host's ReduceKernels::scale bit for bit on
// random bits, in place and out, unaligned too, with the scalar by value or read on the
// device (op ignored: run once per datatype).
TEST_P(ReduceKernelTest, ScaleMatchesHostKernelsOnRandomBits) {
  if (op() != braidSum) GTEST_SKIP() << "scaling does not depend on the op";
  SKIP_WITHOUT_DEVICE();
  const size_t es = datatypeSize(dt()), count = 100003;
  std::mt19937 rng(std::get<0>(GetParam()) + 77);
  std::vector<char> in((count + 1) * es), host(count * es);
  for (char& c : in) c = static_cast<char>(rng());
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    char scalar[8];
    for (char& c : scalar) c = static_cast<char>(rng());
    if (round == 0) std::memcpy(scalar, in.data() + es, es);  // a value the input holds
    const size_t skew = round == 3 ? es : 0;  // unaligned: no 16-byte vectors
    reduceKernels(dt(), braidSum).scale(host.data(), in.data() + skew, count, scalar);
    DeviceBuf src(in.size()), dst(count * es + 16), dscalar(8);
    toDevice(src.p, in.data(), in.size());
    toDevice(dscalar.p, scalar, 8);
    const bool inPlace = round == 2, onDevice = round % 2 == 1;
    void* out = inPlace ? src.at(skew) : dst.p;
    Status st = cuda::launchScale(out, src.at(skew), count, dt(), onDevice ? dscalar.p : nullptr,
                                  onDevice ? nullptr : scalar, nullptr);
    ASSERT_TRUE(st.isOk()) << st.message();
    std::vector<char> got = fromDevice(out, count * es);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_TRUE(sameOrBothNan(dt(), &got[i * es], &host[i * es])) << "element " << i;
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
  return std::string(datatypeName(static_cast<braidDataType_t>(std::get<0>(info.param)))) + "_" +
         redOpName(static_cast<braidRedOp_t>(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, ReduceKernelTest,
                         ::testing::Combine(::testing::Range(0, int{braidNumTypes}),
                                            ::testing::Range(0, int{braidNumOps})),
                         paramName);

TEST(CopyKernelTest, CopiesEveryByteAndNothingElse) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng(7);
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{100003}}) {
    for (size_t srcShift : {0, 3}) {
      for (size_t dstShift : {0, 3, 5}) {
        SCOPED_TRACE(::testing::Message()
                     << bytes << " bytes, shifts " << srcShift << "/" << dstShift);
        const size_t slot = bytes + 64;
        std::vector<char> host(2 * slot);
        for (char& c : host) c = static_cast<char>(rng());
        DeviceBuf mem(host.size());
        toDevice(mem.p, host.data(), host.size());
        Status st = cuda::launchCopy(mem.at(slot + dstShift), mem.at(srcShift), bytes, nullptr);
        ASSERT_TRUE(st.isOk()) << st.message();
        std::vector<char> want = host;
        std::memcpy(want.data() + slot + dstShift, host.data() + srcShift, bytes);
        EXPECT_EQ(fromDevice(mem.p, host.size()), want);
      }
    }
  }
}

// The wait kernel returns once the word reaches the value, compared as a wrapping
// counter, and holds its stream until then; loading every kernel twice is harmless.
TEST(WaitKernelTest, ReturnsOnceTheWordReachesTheValueAsAWrappingCounter) {
  SKIP_WITHOUT_DEVICE();
  ASSERT_TRUE(cuda::loadKernels().isOk());
  ASSERT_TRUE(cuda::loadKernels().isOk());
  Expected<void*> s = cuda::streamCreate();
  Expected<void*> page = cuda::pinnedAlloc(8);
  ASSERT_TRUE(s.isOk() && page.isOk());
  auto* word = static_cast<std::atomic<uint64_t>*>(page.value());
  struct Case {
    uint64_t before, value, after;
  };
  const Case cases[] = {{5, 7, 7}, {~uint64_t{0} - 1, 1, 2}, {3, 4, uint64_t{1} << 62}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.before << " -> " << c.after << " for " << c.value);
    word->store(c.before);
    ASSERT_TRUE(cuda::launchWait(word, c.value, s.value()).isOk());
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_FALSE(cuda::streamIdle(s.value()).value());
    word->store(c.after);
    EXPECT_TRUE(cuda::streamSynchronize(s.value()).isOk());
  }
  ASSERT_TRUE(cuda::launchWait(word, 2, s.value()).isOk());  // already past: returns
  EXPECT_TRUE(cuda::streamSynchronize(s.value()).isOk());
  EXPECT_TRUE(cuda::pinnedFree(page.value()).isOk());
  EXPECT_TRUE(cuda::streamDestroy(s.value()).isOk());
}

// While a stream captures a graph in global mode (torch.cuda.graph's default), each
// host-side call of the device layer on other objects works and leaves the capture intact,
// as a communicator's set-up during a captured first call needs (on an H200 three
// unrelaxed calls invalidated such a capture). Each call runs in a capture of its own, so
// a failure names the call; the last capture replays its copy. All but shareableFree.
TEST(CudaDeviceTest, HostSideCallsLeaveAGlobalCaptureIntact) {
  SKIP_WITHOUT_DEVICE();
  Expected<void*> a = cuda::streamCreate();
  Expected<void*> b = cuda::streamCreate();
  Expected<void*> buf = cuda::deviceAlloc(64);
  ASSERT_TRUE(a.isOk() && b.isOk() && buf.isOk());
  char* d = static_cast<char*>(buf.value());
  std::vector<char> host(64, 0);
  for (int i = 0; i < 32; ++i) host[static_cast<size_t>(i)] = static_cast<char>(i + 1);
  toDevice(d, host.data(), host.size());
  std::vector<std::string> failed;
  void* graph = nullptr;
  auto during = [&](const char* what, const std::function<Status()>& call) {
    ASSERT_TRUE(cuda::streamBeginCapture(a.value()).isOk());
    ASSERT_TRUE(cuda::launchCopy(d + 32, d, 32, a.value()).isOk());  // captured, not run
    const Status st = call();
    if (!st.isOk()) failed.push_back(std::string(what) + ": " + st.message());
    Expected<void*> g = cuda::streamEndCapture(a.value());
    if (!g.isOk()) {
      failed.push_back(std::string(what) + " invalidated the capture: " + g.status().message());
      return;
    }
    if (graph != nullptr) {
      EXPECT_TRUE(cuda::graphDestroy(graph).isOk());
    }
    graph = g.value();
  };
  void* mem = nullptr;
  during("deviceAlloc", [&] {
    Expected<void*> m = cuda::deviceAlloc(1 << 20);
    if (m.isOk()) mem = m.value();
    return m.status();
  });
  if (mem != nullptr) during("ipcHandle", [&] { return cuda::ipcHandle(mem).status(); });
  during("currentDevice, deviceUuid, enablePeerAccess", [&] {
    Expected<int> device = cuda::currentDevice();
    if (!device.isOk()) return device.status();
    Status st = cuda::deviceUuid(device.value()).status();
    return st.isOk() ? cuda::enablePeerAccess(device.value()) : st;
  });
  during("checkStream", [&] { return cuda::checkStream(b.value()); });
  during("streamIdle", [&] { return cuda::streamIdle(b.value()).status(); });
  during("streamSynchronize", [&] { return cuda::streamSynchronize(b.value()); });
  void* s = nullptr;
  during("streamCreate", [&] {
    Expected<void*> got = cuda::streamCreate();
    if (got.isOk()) s = got.value();
    return got.status();
  });
  if (s != nullptr) during("streamDestroy", [&] { return cuda::streamDestroy(s); });
  void* e = nullptr;
  during("eventCreate", [&] {
    Expected<void*> got = cuda::eventCreate();
    if (got.isOk()) e = got.value();
    return got.status();
  });
  if (e != nullptr) {
    during("eventRecord", [&] { return cuda::eventRecord(e, b.value()); });
    during("eventSynchronize", [&] { return cuda::eventSynchronize(e); });
    during("eventDestroy", [&] { return cuda::eventDestroy(e); });
  }
  void* pinned = nullptr;
  during("pinnedAlloc", [&] {
    Expected<void*> got = cuda::pinnedAlloc(4096);
    if (got.isOk()) pinned = got.value();
    return got.status();
  });
  if (pinned != nullptr) during("pinnedFree", [&] { return cuda::pinnedFree(pinned); });
  void* page = std::aligned_alloc(4096, 4096);
  bool registered = false;
  during("hostRegister", [&] {
    Expected<void*> got = cuda::hostRegister(page, 4096);
    registered = got.isOk();
    return got.status();
  });
  if (registered) during("hostUnregister", [&] { return cuda::hostUnregister(page); });
  std::free(page);
  void* shared = nullptr;
  during("shareableAlloc", [&] {
    Expected<void*> got = cuda::shareableAlloc(1 << 20);
    if (got.isOk()) shared = got.value();
    return got.status();
  });
  during("loadKernels", [&] { return cuda::loadKernels(); });
  if (mem != nullptr) during("deviceFree", [&] { return cuda::deviceFree(mem); });
  // Not during a capture: shareableFree (braidMemFree) synchronises the device before it
  // unmaps, and a device synchronisation invalidates any capture (seen on an H200).
  if (shared != nullptr) {
    EXPECT_TRUE(cuda::shareableFree(shared).isOk());
  }
  std::string all;
  for (const std::string& f : failed) all += f + "\n";
  EXPECT_TRUE(failed.empty()) << all;
  ASSERT_NE(graph, nullptr);
  std::vector<char> zero(64, 0);
  toDevice(d + 32, zero.data(), 32);
  ASSERT_TRUE(cuda::graphLaunch(graph, a.value()).isOk());
  ASSERT_TRUE(cuda::streamSynchronize(a.value()).isOk());
  std::vector<char> want = host;
  std::memcpy(want.data() + 32, host.data(), 32);
  EXPECT_EQ(fromDevice(d, host.size()), want);
  EXPECT_TRUE(cuda::graphDestroy(graph).isOk());
  EXPECT_TRUE(cuda::deviceFree(d).isOk());
  EXPECT_TRUE(cuda::streamDestroy(a.value()).isOk());
  EXPECT_TRUE(cuda::streamDestroy(b.value()).isOk());
}

// A failed call leaves nothing behind that fails the next launch: CUDA keeps a thread's
// last error for cudaGetLastError, and a launch checked that way failed good wait kernels
// on an H200 after the windows' set-up had an IPC open refused (a handle of this process).
TEST(CudaDeviceTest, AFailedCallDoesNotFailTheNextLaunch) {
  SKIP_WITHOUT_DEVICE();
  DeviceBuf mem(1 << 16);
  Expected<cuda::IpcHandle> h = cuda::ipcHandle(mem.p);
  ASSERT_TRUE(h.isOk()) << h.status().message();
  EXPECT_FALSE(cuda::ipcOpen(h.value()).isOk());  // CUDA refuses this process's own handle
  EXPECT_FALSE(cuda::setCurrentDevice(1 << 20).isOk());
  Expected<void*> s = cuda::streamCreate();
  Expected<void*> page = cuda::pinnedAlloc(4096);
  ASSERT_TRUE(s.isOk() && page.isOk());
  auto* word = static_cast<uint64_t*>(page.value());
  *word = 5;
  Status st = cuda::launchWait(word, 3, s.value());  // already past: returns at once
  EXPECT_TRUE(st.isOk()) << st.message();
  st = cuda::launchCopy(static_cast<char*>(mem.p) + 64, mem.p, 64, s.value());
  EXPECT_TRUE(st.isOk()) << st.message();
  EXPECT_TRUE(cuda::streamSynchronize(s.value()).isOk());
  EXPECT_TRUE(cuda::pinnedFree(page.value()).isOk());
  EXPECT_TRUE(cuda::streamDestroy(s.value()).isOk());
}

// ---- What holds everywhere, with or without a device.

TEST(CudaDeviceTest, NoDeviceComesWithAReason) {
  const cuda::DeviceStatus& s = cuda::deviceStatus();
  if (s.count > 0) {
    EXPECT_TRUE(cuda::compiled());
    EXPECT_TRUE(s.reason.empty()) << s.reason;
  } else {
    EXPECT_NE(s.reason, "");
    EXPECT_NE(s.reason.find(cuda::compiled() ? "no CUDA device" : "without CUDA"),
              std::string::npos)
        << s.reason;
  }
}

TEST(CudaDeviceTest, HostMemoryIsHost) {
  int onStack = 0;
  std::vector<char> onHeap(100);
  EXPECT_EQ(cuda::memoryKind(&onStack), cuda::MemoryKind::kHost);
  EXPECT_EQ(cuda::memoryKind(onHeap.data()), cuda::MemoryKind::kHost);
  EXPECT_EQ(cuda::memoryKind(nullptr), cuda::MemoryKind::kHost);
}

TEST(CudaDeviceTest, DeviceMemoryIsDevice) {
  SKIP_WITHOUT_DEVICE();
  DeviceBuf mem(4096);
  EXPECT_EQ(cuda::memoryKind(mem.p), cuda::MemoryKind::kDevice);
  EXPECT_EQ(cuda::memoryKind(mem.at(100)), cuda::MemoryKind::kDevice);
  Expected<void*> pinned = cuda::pinnedAlloc(4096);
  ASSERT_TRUE(pinned.isOk()) << pinned.status().message();
  EXPECT_EQ(cuda::memoryKind(pinned.value()), cuda::MemoryKind::kHost);
  EXPECT_TRUE(cuda::pinnedFree(pinned.value()).isOk());
}

TEST(CudaDeviceTest, LaunchArgumentsAreCheckedBeforeAnyLaunch) {
  alignas(16) float a[4] = {}, b[4] = {};
  const void* two[] = {a, b};
  const void* nine[9] = {a, a, a, a, a, a, a, a, a};
  const void* withNull[] = {a, nullptr};
  struct Case {
    const char* what;
    Status status;
    const char* mention;
  };
  const Case cases[] = {
      {"no inputs", cuda::launchReduce(a, two, 0, 4, braidFloat32, braidSum, 1, nullptr),
       "0 inputs"},
      {"nine inputs", cuda::launchReduce(a, nine, 9, 4, braidFloat32, braidSum, 1, nullptr),
       "9 inputs"},
      {"datatype 12",
       cuda::launchReduce(a, two, 2, 4, static_cast<braidDataType_t>(12), braidSum, 1, nullptr),
       "datatype 12"},
      {"op 5",
       cuda::launchReduce(a, two, 2, 4, braidFloat32, static_cast<braidRedOp_t>(5), 1, nullptr),
       "op 5"},
      {"divisor 0", cuda::launchReduce(a, two, 2, 4, braidFloat32, braidAvg, 0, nullptr),
       "divisor 0"},
      {"misaligned",
       cuda::launchReduce(reinterpret_cast<char*>(a) + 1, two, 2, 3, braidFloat32, braidSum, 1,
                          nullptr),
       "aligned"},
      {"NULL input", cuda::launchReduce(a, withNull, 2, 4, braidFloat32, braidSum, 1, nullptr),
       "NULL"},
      {"scale: no scalar", cuda::launchScale(a, b, 4, braidFloat32, nullptr, nullptr, nullptr),
       "exactly one"},
      {"scale: two scalars", cuda::launchScale(a, b, 4, braidFloat32, a, b, nullptr),
       "exactly one"},
      {"scale: datatype 12",
       cuda::launchScale(a, b, 4, static_cast<braidDataType_t>(12), nullptr, b, nullptr),
       "datatype 12"},
      {"scale: misaligned",
       cuda::launchScale(reinterpret_cast<char*>(a) + 1, b, 3, braidFloat32, nullptr, b, nullptr),
       "aligned"},
      {"wait: NULL word", cuda::launchWait(nullptr, 1, nullptr), "NULL"},
      {"wait: misaligned", cuda::launchWait(reinterpret_cast<char*>(a) + 4, 1, nullptr),
       "aligned"},
  };
  for (const Case& c : cases) {
    if (!cuda::compiled()) {
      EXPECT_EQ(c.status.code(), braidUnhandledCudaError) << c.what;
      continue;
    }
    EXPECT_EQ(c.status.code(), braidInvalidArgument) << c.what << ": " << c.status.message();
    EXPECT_NE(c.status.message().find(c.mention), std::string::npos) << c.status.message();
  }
}

TEST(CudaDeviceTest, LaunchWithoutDeviceFailsWithCudaError) {
  if (cuda::hasDevice()) GTEST_SKIP() << "this machine has a device; the launch would work";
  alignas(16) float a[4] = {}, b[4] = {};
  const void* two[] = {a, b};
  Status st = cuda::launchReduce(a, two, 2, 4, braidFloat32, braidSum, 1, nullptr);
  EXPECT_EQ(st.code(), braidUnhandledCudaError) << st.message();
  EXPECT_EQ(cuda::launchCopy(a, b, 16, nullptr).code(), braidUnhandledCudaError);
  EXPECT_EQ(cuda::launchWait(a, 1, nullptr).code(), braidUnhandledCudaError);
  EXPECT_FALSE(cuda::deviceAlloc(16).isOk());
}

}  // namespace
}  // namespace braid
