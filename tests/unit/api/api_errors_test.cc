// The C API's argument checks, table-driven: every error path that needs no
// peer returns the right code, names the offending argument in
// braidGetLastError, and changes nothing (output pointers and buffers keep
// their sentinels). Also what a 1-rank communicator (in process, no peers)
// must do right: all-reduce copies, avg divides by 1, host streams run in
// order.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "braid/braid.h"

namespace {

constexpr braidDataType_t kTypes[] = {braidInt8,    braidUint8,   braidInt32,   braidUint32,
                                      braidInt64,   braidUint64,  braidFloat16, braidFloat32,
                                      braidFloat64, braidBfloat16};
constexpr braidRedOp_t kOps[] = {braidSum, braidProd, braidMax, braidMin, braidAvg};
constexpr size_t kTypeBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

braidComm_t const kSentinelComm = reinterpret_cast<braidComm_t>(uintptr_t{0x5e7e5e7e0});
braidStream_t const kSentinelStream = reinterpret_cast<braidStream_t>(uintptr_t{0x5e7e5e7e8});
constexpr int kSentinelInt = -12345;
constexpr braidResult_t kSentinelResult = braidNumResults;  // never a real result
constexpr uint8_t kPattern = 0xa5;

std::string lastError(braidComm_t comm) { return braidGetLastError(comm); }

// A 1-rank communicator: rendezvous with itself in this process.
braidComm_t makeOneRankComm() {
  braidUniqueId id;
  if (braidGetUniqueId(&id) != braidSuccess) return nullptr;
  braidComm_t comm = nullptr;
  if (braidCommInitRank(&comm, 1, id, 0) != braidSuccess) return nullptr;
  return comm;
}

class ApiErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    comm_ = makeOneRankComm();
    ASSERT_NE(comm_, nullptr) << braidGetLastError(nullptr);
    ASSERT_EQ(braidGetUniqueId(&id_), braidSuccess) << braidGetLastError(nullptr);
  }
  static void TearDownTestSuite() {
    if (comm_ != nullptr) {
      EXPECT_EQ(braidCommDestroy(comm_), braidSuccess);
    }
    comm_ = nullptr;
  }

  // Every output a failed call could have written, at its sentinel.
  void resetSentinels() {
    outComm_ = kSentinelComm;
    outStream_ = kSentinelStream;
    outInt_ = kSentinelInt;
    outResult_ = kSentinelResult;
    std::memset(&outId_, kPattern, sizeof(outId_));
    send_.assign(64, 0x11);
    recv_.assign(64, kPattern);
  }
  ::testing::AssertionResult sentinelsIntact() const {
    braidUniqueId pattern;
    std::memset(&pattern, kPattern, sizeof(pattern));
    if (outComm_ != kSentinelComm) return ::testing::AssertionFailure() << "comm written";
    if (outStream_ != kSentinelStream) return ::testing::AssertionFailure() << "stream written";
    if (outInt_ != kSentinelInt) return ::testing::AssertionFailure() << "int written";
    if (outResult_ != kSentinelResult) {
      return ::testing::AssertionFailure() << "asyncError written";
    }
    if (std::memcmp(&outId_, &pattern, sizeof(pattern)) != 0) {
      return ::testing::AssertionFailure() << "unique id written";
    }
    if (recv_ != std::vector<uint8_t>(64, kPattern)) {
      return ::testing::AssertionFailure() << "recvbuff written";
    }
    if (send_ != std::vector<uint8_t>(64, 0x11)) {
      return ::testing::AssertionFailure() << "sendbuff written";
    }
    return ::testing::AssertionSuccess();
  }

  struct Case {
    const char* name;
    std::function<braidResult_t()> call;
    braidResult_t code;
    const char* needle;  // in braidGetLastError(errorComm) and braidGetLastError(NULL)
    braidComm_t errorComm = nullptr;
  };

  void runTable(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name);
      resetSentinels();
      EXPECT_EQ(c.call(), c.code);
      EXPECT_NE(lastError(c.errorComm).find(c.needle), std::string::npos)
          << "braidGetLastError: '" << lastError(c.errorComm) << "', wanted '" << c.needle << "'";
      EXPECT_NE(lastError(nullptr).find(c.needle), std::string::npos) << lastError(nullptr);
      EXPECT_TRUE(sentinelsIntact());
    }
  }

  braidResult_t allReduce(const void* s, void* r, size_t count, int type, int op, braidComm_t comm,
                          braidStream_t stream = nullptr) {
    return braidAllReduce(s, r, count, static_cast<braidDataType_t>(type),
                          static_cast<braidRedOp_t>(op), comm, stream);
  }

  static braidComm_t comm_;
  static braidUniqueId id_;
  braidComm_t outComm_;
  braidStream_t outStream_;
  int outInt_;
  braidResult_t outResult_;
  braidUniqueId outId_;
  std::vector<uint8_t> send_;
  std::vector<uint8_t> recv_;
};

braidComm_t ApiErrors::comm_ = nullptr;
braidUniqueId ApiErrors::id_;

TEST_F(ApiErrors, NullOutputPointers) {
  braidComm_t c = comm_;
  runTable({
      {"GetVersion", [] { return braidGetVersion(nullptr); }, braidInvalidArgument, "version"},
      {"GetUniqueId", [] { return braidGetUniqueId(nullptr); }, braidInvalidArgument, "uniqueId"},
      {"CommCount", [c] { return braidCommCount(c, nullptr); }, braidInvalidArgument, "count", c},
      {"CommUserRank", [c] { return braidCommUserRank(c, nullptr); }, braidInvalidArgument, "rank",
       c},
      {"GetAsyncError", [c] { return braidCommGetAsyncError(c, nullptr); }, braidInvalidArgument,
       "asyncError", c},
      {"StreamCreate", [] { return braidStreamCreate(nullptr); }, braidInvalidArgument, "stream"},
      {"InitRank", [this] { return braidCommInitRank(nullptr, 1, id_, 0); }, braidInvalidArgument,
       "comm"},
  });
}

TEST_F(ApiErrors, QueriesOnBadComms) {
  int local = 0;
  braidComm_t madeUp = reinterpret_cast<braidComm_t>(&local);
  runTable({
      {"Count NULL comm", [this] { return braidCommCount(nullptr, &outInt_); },
       braidInvalidArgument, "comm"},
      {"Count made-up comm", [&, this] { return braidCommCount(madeUp, &outInt_); },
       braidInvalidArgument, "live communicator"},
      {"UserRank NULL comm", [this] { return braidCommUserRank(nullptr, &outInt_); },
       braidInvalidArgument, "comm"},
      {"AsyncError made-up comm", [&, this] { return braidCommGetAsyncError(madeUp, &outResult_); },
       braidInvalidArgument, "live communicator"},
      {"Destroy NULL", [] { return braidCommDestroy(nullptr); }, braidInvalidArgument, "comm"},
      {"Destroy made-up", [&] { return braidCommDestroy(madeUp); }, braidInvalidArgument,
       "live communicator"},
      {"Finalize made-up", [&] { return braidCommFinalize(madeUp); }, braidInvalidArgument,
       "live communicator"},
      {"Abort made-up", [&] { return braidCommAbort(madeUp); }, braidInvalidArgument,
       "live communicator"},
      {"TraceMarker made-up", [&] { return braidTraceMarker(madeUp, "step"); },
       braidInvalidArgument, "live communicator"},
  });
}

// A marker needs a name; on a communicator that does not trace it does nothing.
TEST_F(ApiErrors, TraceMarkerArguments) {
  braidComm_t c = comm_;
  runTable({
      {"TraceMarker NULL name", [c] { return braidTraceMarker(c, nullptr); },
       braidInvalidArgument, "name", c},
  });
  EXPECT_EQ(braidTraceMarker(comm_, "step 1"), braidSuccess);
}

TEST_F(ApiErrors, InitRankArguments) {
  braidUniqueId zeros;
  std::memset(&zeros, 0, sizeof(zeros));
  runTable({
      {"nranks 0", [this] { return braidCommInitRank(&outComm_, 0, id_, 0); }, braidInvalidArgument,
       "nranks"},
      {"nranks -1", [this] { return braidCommInitRank(&outComm_, -1, id_, 0); },
       braidInvalidArgument, "nranks"},
      {"rank -1", [this] { return braidCommInitRank(&outComm_, 2, id_, -1); }, braidInvalidArgument,
       "rank -1"},
      {"rank == nranks", [this] { return braidCommInitRank(&outComm_, 2, id_, 2); },
       braidInvalidArgument, "rank 2"},
      {"rank INT_MAX", [this] { return braidCommInitRank(&outComm_, 1, id_, INT_MAX); },
       braidInvalidArgument, "rank"},
      {"zeroed unique id", [&, this] { return braidCommInitRank(&outComm_, 1, zeros, 0); },
       braidInvalidArgument, "commId"},
  });
}

TEST_F(ApiErrors, InitRankConfig) {
  braidConfig_t badMagic = BRAID_CONFIG_INITIALIZER;
  badMagic.magic = 0xdeadbeef;
  braidConfig_t badSize = BRAID_CONFIG_INITIALIZER;
  badSize.size = 4;
  braidConfig_t nonBlocking = BRAID_CONFIG_INITIALIZER;
  nonBlocking.blocking = 0;
  braidConfig_t negTimeout = BRAID_CONFIG_INITIALIZER;
  negTimeout.timeoutMs = -5;
  braidConfig_t zeroTimeout = BRAID_CONFIG_INITIALIZER;
  zeroTimeout.timeoutMs = 0;
  braidConfig_t pigeon = BRAID_CONFIG_INITIALIZER;
  pigeon.netName = "carrier-pigeon";
  braidConfig_t empty = BRAID_CONFIG_INITIALIZER;
  empty.netName = ",";
  auto init = [this](braidConfig_t* cfg) {
    return [this, cfg] { return braidCommInitRankConfig(&outComm_, 1, id_, 0, cfg); };
  };
  runTable({
      {"bad magic", init(&badMagic), braidInvalidArgument, "config"},
      {"bad size", init(&badSize), braidInvalidArgument, "config"},
      {"blocking 0", init(&nonBlocking), braidInvalidArgument, "blocking"},
      {"timeoutMs -5", init(&negTimeout), braidInvalidArgument, "timeoutMs"},
      {"timeoutMs 0", init(&zeroTimeout), braidInvalidArgument, "timeoutMs"},
      {"unknown transport", init(&pigeon), braidInvalidArgument, "carrier-pigeon"},
      {"no transport", init(&empty), braidInvalidArgument, "BRAID_TRANSPORTS"},
  });
}

TEST_F(ApiErrors, AllReduceArguments) {
  braidComm_t c = comm_;
  int local = 0;
  braidComm_t madeUp = reinterpret_cast<braidComm_t>(&local);
  // A destroyed Braid stream: recognised as such with or without a GPU. (A made-up
  // pointer is taken to be a cudaStream_t where there is a device, as NCCL takes it:
  // CudaStreams.WithoutADeviceAnUnknownStreamIsRefusedWithTheReason covers it.)
  braidStream_t notAStream = nullptr;
  ASSERT_EQ(braidStreamCreate(&notAStream), braidSuccess);
  ASSERT_EQ(braidStreamDestroy(notAStream), braidSuccess);
  auto ar = [this](size_t count, int type, int op, braidComm_t comm, const void* s = nullptr,
                   void* r = nullptr, braidStream_t stream = nullptr) {
    return [=, this] {
      const void* sb = s != nullptr ? s : send_.data();
      void* rb = r != nullptr ? r : recv_.data();
      return allReduce(sb, rb, count, type, op, comm, stream);
    };
  };
  runTable({
      {"NULL comm", ar(4, braidFloat32, braidSum, nullptr), braidInvalidArgument, "comm is NULL"},
      {"made-up comm", ar(4, braidFloat32, braidSum, madeUp), braidInvalidArgument,
       "live communicator", madeUp},
      {"datatype -1", ar(4, -1, braidSum, c), braidInvalidArgument, "datatype -1", c},
      {"datatype 12", ar(4, 12, braidSum, c), braidInvalidArgument, "datatype 12", c},
      {"datatype 99", ar(4, 99, braidSum, c), braidInvalidArgument, "datatype 99", c},
      {"op -1", ar(4, braidFloat32, -1, c), braidInvalidArgument, "op -1", c},
      {"op 5", ar(4, braidFloat32, 5, c), braidInvalidArgument, "op 5", c},
      {"NULL sendbuff",
       [this, c] { return allReduce(nullptr, recv_.data(), 4, braidFloat32, braidSum, c); },
       braidInvalidArgument, "sendbuff", c},
      {"NULL recvbuff",
       [this, c] { return allReduce(send_.data(), nullptr, 4, braidFloat32, braidSum, c); },
       braidInvalidArgument, "recvbuff", c},
      {"overlapping buffers",
       [this, c] {
         return allReduce(recv_.data(), recv_.data() + 4, 4, braidFloat32, braidSum, c);
       },
       braidInvalidArgument, "overlap", c},
      {"count SIZE_MAX", ar(SIZE_MAX, braidFloat32, braidSum, c), braidInvalidArgument, "count", c},
      {"count -5 (as size_t)", ar(static_cast<size_t>(-5), braidInt8, braidSum, c),
       braidInvalidArgument, "count", c},
      {"count SIZE_MAX / 4 float64", ar(SIZE_MAX / 4, braidFloat64, braidSum, c),
       braidInvalidArgument, "count", c},
      {"destroyed stream", ar(4, braidFloat32, braidSum, c, nullptr, nullptr, notAStream),
       braidInvalidArgument, "destroyed", c},
  });
}

// braidRedOpCreatePreMulSum / braidRedOpDestroy, and calls naming a premul-sum op that
// is not theirs to use: each refused by name, changing nothing.
TEST_F(ApiErrors, PreMulSumArguments) {
  braidComm_t c = comm_;
  braidComm_t other = makeOneRankComm();
  ASSERT_NE(other, nullptr);
  const float two = 2;
  braidRedOp_t made = braidSum, fromOther = braidSum, destroyed = braidSum;
  ASSERT_EQ(braidRedOpCreatePreMulSum(&made, const_cast<float*>(&two), braidFloat32,
                                      braidScalarHostImmediate, c),
            braidSuccess);
  EXPECT_GE(static_cast<int>(made), braidNumOps);
  ASSERT_EQ(braidRedOpCreatePreMulSum(&fromOther, const_cast<float*>(&two), braidFloat32,
                                      braidScalarHostImmediate, other),
            braidSuccess);
  ASSERT_EQ(braidRedOpCreatePreMulSum(&destroyed, const_cast<float*>(&two), braidFloat32,
                                      braidScalarDevice, c),
            braidSuccess);
  ASSERT_EQ(braidRedOpDestroy(destroyed, c), braidSuccess);
  braidRedOp_t out = braidSum;
  auto create = [&out](void* scalar, int type, int residence, braidComm_t comm,
                       braidRedOp_t* where = nullptr) {
    return [=, &out] {
      return braidRedOpCreatePreMulSum(where != nullptr ? where : &out, scalar,
                                       static_cast<braidDataType_t>(type),
                                       static_cast<braidScalarResidence_t>(residence), comm);
    };
  };
  void* scalar = const_cast<float*>(&two);
  runTable({
      {"create: NULL comm", create(scalar, braidFloat32, 1, nullptr), braidInvalidArgument,
       "comm"},
      {"create: NULL op",
       [&] {
         return braidRedOpCreatePreMulSum(nullptr, scalar, braidFloat32, braidScalarHostImmediate,
                                          c);
       },
       braidInvalidArgument, "op is NULL", c},
      {"create: NULL scalar", create(nullptr, braidFloat32, 1, c), braidInvalidArgument,
       "scalar is NULL", c},
      {"create: datatype 12", create(scalar, 12, 1, c), braidInvalidArgument, "datatype 12", c},
      {"create: residence 2", create(scalar, braidFloat32, 2, c), braidInvalidArgument,
       "residence 2", c},
      {"destroy: a built-in op", [c] { return braidRedOpDestroy(braidSum, c); },
       braidInvalidArgument, "built-in", c},
      {"destroy: twice", [c, destroyed] { return braidRedOpDestroy(destroyed, c); },
       braidInvalidArgument, "not a live op", c},
      {"destroy: another comm's op", [c, fromOther] { return braidRedOpDestroy(fromOther, c); },
       braidInvalidArgument, "not a live op", c},
      {"all-reduce: another datatype",
       [this, c, made] { return allReduce(send_.data(), recv_.data(), 4, braidInt32, made, c); },
       braidInvalidArgument, "made for float32 and is used with int32", c},
      {"all-reduce: a destroyed op",
       [this, c, destroyed] {
         return allReduce(send_.data(), recv_.data(), 4, braidFloat32, destroyed, c);
       },
       braidInvalidArgument, "braidRedOpCreatePreMulSum", c},
      {"all-reduce: another comm's op",
       [this, c, fromOther] {
         return allReduce(send_.data(), recv_.data(), 4, braidFloat32, fromOther, c);
       },
       braidInvalidArgument, "braidRedOpCreatePreMulSum", c},
  });
  EXPECT_EQ(out, braidSum) << "a failed create wrote its op";
  // One rank: the sum is the input times the scalar.
  const float in[3] = {1.5f, -3.0f, 0.25f};
  float result[3] = {};
  ASSERT_EQ(braidAllReduce(in, result, 3, braidFloat32, made, c, nullptr), braidSuccess)
      << braidGetLastError(c);
  EXPECT_EQ(result[0], 3.0f);
  EXPECT_EQ(result[1], -6.0f);
  EXPECT_EQ(result[2], 0.5f);
  EXPECT_EQ(braidRedOpDestroy(made, c), braidSuccess);
  EXPECT_EQ(braidRedOpDestroy(fromOther, other), braidSuccess);
  EXPECT_EQ(braidCommDestroy(other), braidSuccess);
}

TEST_F(ApiErrors, StreamArguments) {
  int local = 0;
  braidStream_t notAStream = reinterpret_cast<braidStream_t>(&local);
  runTable({
      {"Synchronize made-up", [&] { return braidStreamSynchronize(notAStream); },
       braidInvalidArgument, "stream"},
      {"Destroy made-up", [&] { return braidStreamDestroy(notAStream); }, braidInvalidArgument,
       "stream"},
      {"Destroy NULL", [] { return braidStreamDestroy(nullptr); }, braidInvalidArgument, "stream"},
  });
}

TEST_F(ApiErrors, DeregisterArguments) {
  braidComm_t c = comm_;
  std::vector<char> buffer(4096);
  void* handle = nullptr;
  ASSERT_EQ(braidCommRegister(c, buffer.data(), buffer.size(), &handle), braidSuccess);
  int local = 0;
  runTable({
      {"made-up handle", [c, &local] { return braidCommDeregister(c, &local); },
       braidInvalidArgument, "braidCommRegister", c},
      {"NULL handle", [c] { return braidCommDeregister(c, nullptr); }, braidInvalidArgument,
       "handle", c},
  });
  EXPECT_EQ(braidCommDeregister(c, handle), braidSuccess);
  // Once deregistered, the handle is unknown: no double free.
  EXPECT_EQ(braidCommDeregister(c, handle), braidInvalidArgument);
  EXPECT_NE(lastError(c).find("deregistered"), std::string::npos) << lastError(c);
}

TEST_F(ApiErrors, ZeroCountWithNullBuffersIsAccepted) {
  for (braidDataType_t t : kTypes) {
    EXPECT_EQ(braidAllReduce(nullptr, nullptr, 0, t, braidSum, comm_, nullptr), braidSuccess)
        << braidGetLastError(comm_);
  }
  resetSentinels();
  EXPECT_EQ(braidAllReduce(send_.data(), recv_.data(), 0, braidFloat32, braidSum, comm_, nullptr),
            braidSuccess);
  EXPECT_TRUE(sentinelsIntact());
}

TEST_F(ApiErrors, UseAfterDestroy) {
  braidComm_t dead = makeOneRankComm();
  ASSERT_NE(dead, nullptr) << braidGetLastError(nullptr);
  ASSERT_EQ(braidCommDestroy(dead), braidSuccess);
  runTable({
      {"AllReduce",
       [&, this] { return allReduce(send_.data(), recv_.data(), 4, braidFloat32, braidSum, dead); },
       braidInvalidArgument, "live communicator", dead},
      {"Count", [&, this] { return braidCommCount(dead, &outInt_); }, braidInvalidArgument,
       "live communicator", dead},
      {"UserRank", [&, this] { return braidCommUserRank(dead, &outInt_); }, braidInvalidArgument,
       "live communicator", dead},
      {"GetAsyncError", [&, this] { return braidCommGetAsyncError(dead, &outResult_); },
       braidInvalidArgument, "live communicator", dead},
      {"Finalize", [&] { return braidCommFinalize(dead); }, braidInvalidArgument,
       "live communicator", dead},
      {"Destroy twice", [&] { return braidCommDestroy(dead); }, braidInvalidArgument,
       "live communicator", dead},
      {"Abort", [&] { return braidCommAbort(dead); }, braidInvalidArgument, "live communicator",
       dead},
  });
}

TEST_F(ApiErrors, ErrorsOnOneCommDoNotLeakIntoAnother) {
  braidComm_t other = makeOneRankComm();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(allReduce(send_.data(), recv_.data(), 4, 77, braidSum, comm_), braidInvalidArgument);
  EXPECT_NE(lastError(comm_).find("datatype 77"), std::string::npos);
  EXPECT_EQ(lastError(other).find("datatype 77"), std::string::npos) << lastError(other);
  EXPECT_EQ(braidCommDestroy(other), braidSuccess);
}

TEST(ApiStrings, ErrorStringsAreNonEmptyAndDistinct) {
  std::set<std::string> seen;
  for (int code = braidSuccess; code < braidNumResults; ++code) {
    const char* s = braidGetErrorString(static_cast<braidResult_t>(code));
    ASSERT_NE(s, nullptr) << code;
    EXPECT_GT(std::strlen(s), 0u) << code;
    EXPECT_TRUE(seen.insert(s).second) << "duplicate text for " << code << ": " << s;
  }
  for (int code : {-1, static_cast<int>(braidNumResults), 1000}) {
    const char* s = braidGetErrorString(static_cast<braidResult_t>(code));
    ASSERT_NE(s, nullptr);
    EXPECT_GT(std::strlen(s), 0u);
  }
  int v = 0;
  ASSERT_EQ(braidGetVersion(&v), braidSuccess);
  EXPECT_EQ(v, BRAID_VERSION_CODE);
}

// ---- 1-rank communicators do the right thing.

// Small integers in every type's encoding (float16/bfloat16 by their bits).
std::vector<uint8_t> pattern(braidDataType_t t, size_t count) {
  std::vector<uint8_t> out(count * kTypeBytes[t]);
  for (size_t i = 0; i < count; ++i) {
    int v = static_cast<int>(i % 9) + 1;  // 1..9
    uint8_t* p = &out[i * kTypeBytes[t]];
    auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
    switch (t) {
      case braidInt8: put(static_cast<int8_t>(-v)); break;
      case braidUint8: put(static_cast<uint8_t>(v)); break;
      case braidInt32: put(static_cast<int32_t>(-v)); break;
      case braidUint32: put(static_cast<uint32_t>(v)); break;
      case braidInt64: put(static_cast<int64_t>(-v)); break;
      case braidUint64: put(static_cast<uint64_t>(v)); break;
      case braidFloat16: put(static_cast<uint16_t>(0x3c00 + (v << 6))); break;  // 1 + v/16
      case braidFloat32: put(static_cast<float>(v) / 4); break;
      case braidFloat64: put(static_cast<double>(v) / 8); break;
      case braidBfloat16: put(static_cast<uint16_t>(0xbf80 + (v << 2))); break;  // -(1 + v/32)
      default: break;
    }
  }
  return out;
}

TEST_F(ApiErrors, OneRankAllReduceCopiesEveryTypeAndOp) {
  int n = 0, r = -1;
  ASSERT_EQ(braidCommCount(comm_, &n), braidSuccess);
  ASSERT_EQ(braidCommUserRank(comm_, &r), braidSuccess);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(r, 0);
  for (braidDataType_t t : kTypes) {
    for (braidRedOp_t op : kOps) {
      SCOPED_TRACE(std::to_string(t) + " op " + std::to_string(op));
      for (size_t count : {size_t{1}, size_t{1000}, size_t{70001}}) {
        std::vector<uint8_t> in = pattern(t, count);
        std::vector<uint8_t> out(in.size() + 16, kPattern);
        ASSERT_EQ(braidAllReduce(in.data(), out.data(), count, t, op, comm_, nullptr), braidSuccess)
            << braidGetLastError(comm_);
        EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + in.size()), in);
        EXPECT_EQ(std::vector<uint8_t>(out.begin() + in.size(), out.end()),
                  std::vector<uint8_t>(16, kPattern))
            << "wrote past count";
        std::vector<uint8_t> inPlace = in;
        ASSERT_EQ(braidAllReduce(inPlace.data(), inPlace.data(), count, t, op, comm_, nullptr),
                  braidSuccess);
        EXPECT_EQ(inPlace, in);
      }
    }
  }
}

TEST_F(ApiErrors, HostStreamRunsQueuedAllReducesInOrder) {
  braidStream_t stream = kSentinelStream;
  ASSERT_EQ(braidStreamCreate(&stream), braidSuccess);
  ASSERT_NE(stream, kSentinelStream);
  // Operation k copies buffer k into buffer k + 1 (a 1-rank all-reduce is a
  // copy for every op): only in-order execution carries buffer 0 to the end.
  constexpr int kQueued = 10;
  constexpr size_t kCount = 4099;
  std::vector<std::vector<int32_t>> bufs(kQueued + 1, std::vector<int32_t>(kCount, -1));
  for (size_t i = 0; i < kCount; ++i) bufs[0][i] = static_cast<int32_t>(i * 3 + 1);
  for (int k = 0; k < kQueued; ++k) {
    ASSERT_EQ(braidAllReduce(bufs[k].data(), bufs[k + 1].data(), kCount, braidInt32, kOps[k % 5],
                             comm_, stream),
              braidSuccess)
        << braidGetLastError(comm_);
  }
  ASSERT_EQ(braidStreamSynchronize(stream), braidSuccess);
  for (int k = 1; k <= kQueued; ++k) EXPECT_EQ(bufs[k], bufs[0]) << "buffer " << k;
  braidResult_t async = kSentinelResult;
  ASSERT_EQ(braidCommGetAsyncError(comm_, &async), braidSuccess);
  EXPECT_EQ(async, braidSuccess);
  EXPECT_EQ(braidStreamSynchronize(nullptr), braidSuccess);
  EXPECT_EQ(braidStreamDestroy(stream), braidSuccess);
  EXPECT_EQ(braidStreamSynchronize(stream), braidInvalidArgument) << "destroyed stream";
  std::vector<int32_t> after(kCount, -1);
  EXPECT_EQ(
      braidAllReduce(bufs[0].data(), after.data(), kCount, braidInt32, braidSum, comm_, stream),
      braidInvalidArgument);
  EXPECT_NE(lastError(comm_).find("destroyed"), std::string::npos) << lastError(comm_);
  EXPECT_EQ(after, std::vector<int32_t>(kCount, -1));
}

TEST_F(ApiErrors, StreamErrorsAreCheckedAtEnqueue) {
  braidStream_t stream = nullptr;
  ASSERT_EQ(braidStreamCreate(&stream), braidSuccess);
  resetSentinels();
  EXPECT_EQ(allReduce(send_.data(), recv_.data(), 4, 42, braidSum, comm_, stream),
            braidInvalidArgument);
  EXPECT_NE(lastError(comm_).find("datatype 42"), std::string::npos);
  ASSERT_EQ(braidStreamSynchronize(stream), braidSuccess);
  EXPECT_TRUE(sentinelsIntact());
  braidResult_t async = kSentinelResult;
  ASSERT_EQ(braidCommGetAsyncError(comm_, &async), braidSuccess);
  EXPECT_EQ(async, braidSuccess);
  EXPECT_EQ(braidStreamDestroy(stream), braidSuccess);
}

}  // namespace

// ---------------------------------------------------------------- algorithm query

TEST_F(ApiErrors, GetAlgorithmArguments) {
  const char* name = "untouched";
  double us = -1;
  int local = 0;
  braidComm_t madeUp = reinterpret_cast<braidComm_t>(&local);
  auto query = [&](braidComm_t c, int coll, size_t count, int type) {
    return braidCommGetAlgorithm(c, static_cast<braidCollective_t>(coll), count,
                                 static_cast<braidDataType_t>(type), &name, &us);
  };
  runTable({
      {"NULL comm", [&] { return query(nullptr, braidCollAllReduce, 8, braidFloat32); },
       braidInvalidArgument, "comm is NULL"},
      {"made-up comm", [&] { return query(madeUp, braidCollAllReduce, 8, braidFloat32); },
       braidInvalidArgument, "live communicator"},
      {"collective -1", [&] { return query(comm_, -1, 8, braidFloat32); }, braidInvalidArgument,
       "not a braidCollective_t", comm_},
      {"collective 9", [&] { return query(comm_, braidNumCollectives, 8, braidFloat32); },
       braidInvalidArgument, "not a braidCollective_t", comm_},
      {"datatype 99", [&] { return query(comm_, braidCollAllReduce, 8, 99); },
       braidInvalidArgument, "datatype 99", comm_},
      {"count (size_t)-1", [&] { return query(comm_, braidCollAllReduce, SIZE_MAX, braidFloat32); },
       braidInvalidArgument, "too large", comm_},
  });
  EXPECT_STREQ(name, "untouched");
  EXPECT_EQ(us, -1);
}

TEST_F(ApiErrors, GetAlgorithmNamesWhatACallRunsAndHonoursNullOutputs) {
  const char* name = nullptr;
  double us = -1;
  ASSERT_EQ(braidCommGetAlgorithm(comm_, braidCollAllReduce, 1 << 20, braidFloat32, &name, &us),
            braidSuccess)
      << braidGetLastError(comm_);
  ASSERT_NE(name, nullptr);
  // One rank: any algorithm copies; the model predicts no link time.
  EXPECT_GE(us, 0);
  for (int c = 0; c < braidNumCollectives; ++c) {
    name = nullptr;
    EXPECT_EQ(braidCommGetAlgorithm(comm_, static_cast<braidCollective_t>(c), 64, braidInt8, &name,
                                    nullptr),
              braidSuccess);
    EXPECT_NE(name, nullptr) << "collective " << c;
  }
  EXPECT_EQ(braidCommGetAlgorithm(comm_, braidCollGather, 64, braidInt8, nullptr, nullptr),
            braidSuccess);
}
