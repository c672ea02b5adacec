// Ring all-reduce (algorithms/ring) run through the simulator for many nranks,
// counts and step sizes, in place and out of place, every datatype x op.
//
// Inputs are small integers, so every result is exact; expected values come
// from a reference written here (int64 / double arithmetic, its own
// float16/bfloat16 encoder), not from the library's kernels. Also checks the
// schedule's shape directly and that every rank ends bitwise identical.
#include "algorithms/ring/ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "exec/simulator.h"

namespace braid {
namespace {

using algo::OpKind;

constexpr braidDataType_t kTypes[] = {braidInt8,    braidUint8,   braidInt32,   braidUint32,
                                      braidInt64,   braidUint64,  braidFloat16, braidFloat32,
                                      braidFloat64, braidBfloat16};
constexpr braidRedOp_t kOps[] = {braidSum, braidProd, braidMax, braidMin, braidAvg};

size_t sizeOf(braidDataType_t t) {
  switch (t) {
    case braidInt8:
    case braidUint8: return 1;
    case braidFloat16:
    case braidBfloat16: return 2;
    case braidInt32:
    case braidUint32:
    case braidFloat32: return 4;
    default: return 8;
  }
}

bool isUnsigned(braidDataType_t t) {
  return t == braidUint8 || t == braidUint32 || t == braidUint64;
}
bool isFloat(braidDataType_t t) {
  return t == braidFloat16 || t == braidFloat32 || t == braidFloat64 || t == braidBfloat16;
}

// Round to nearest even into a binary16-like format with `mant` fraction bits
// and exponent bias `bias`: at exponent e (at least the minimum) the spacing is
// 2^(e - mant) and the bits are ((e - minExp) << mant) + steps, which covers
// subnormals and a carry into the next binade. Values here are far from Inf.
uint16_t encodeSmallFloat(double v, int mant, int bias) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double mag = std::fabs(v);
  int minExp = 1 - bias;
  int exp = 0;
  std::frexp(mag, &exp);  // mag = f * 2^exp, f in [0.5, 1)
  int e = mag == 0 ? minExp : std::max(exp - 1, minExp);
  double steps = std::nearbyint(std::ldexp(mag, mant - e));
  return static_cast<uint16_t>(sign | (((e - minExp) << mant) + static_cast<int>(steps)));
}

// Stores a value (exact in the type, or for avg the float result) as `t`.
void store(braidDataType_t t, double v, uint8_t* out) {
  auto put = [&](auto x) { std::memcpy(out, &x, sizeof(x)); };
  switch (t) {
    case braidInt8: put(static_cast<int8_t>(v)); break;
    case braidUint8: put(static_cast<uint8_t>(v)); break;
    case braidInt32: put(static_cast<int32_t>(v)); break;
    case braidUint32: put(static_cast<uint32_t>(v)); break;
    case braidInt64: put(static_cast<int64_t>(v)); break;
    case braidUint64: put(static_cast<uint64_t>(v)); break;
    case braidFloat16: put(encodeSmallFloat(v, 10, 15)); break;
    case braidFloat32: put(static_cast<float>(v)); break;
    case braidFloat64: put(v); break;
    case braidBfloat16: put(encodeSmallFloat(v, 7, 127)); break;
    default: break;
  }
}

// Rank r's element i: -5..5 (0..10 unsigned) for sum/max/min/avg; for prod
// mostly 1, a few 2s (never more than 3 per element among 17 ranks) and, for
// signed types, some -1s.
int64_t inputValue(braidDataType_t t, braidRedOp_t op, int r, uint64_t i) {
  if (op == braidProd) {
    if ((r * 3 + i) % 7 == 0) return 2;
    return (!isUnsigned(t) && (r + i) % 5 == 0) ? -1 : 1;
  }
  int64_t v = static_cast<int64_t>((r * 7 + i * 3) % 11);
  return isUnsigned(t) ? v : v - 5;
}

// The result for element i, as the value to store in `t`.
double expectedValue(braidDataType_t t, braidRedOp_t op, int n, uint64_t i) {
  int64_t acc = inputValue(t, op, 0, i);
  for (int r = 1; r < n; ++r) {
    int64_t v = inputValue(t, op, r, i);
    if (op == braidProd)
      acc *= v;
    else if (op == braidMax)
      acc = std::max(acc, v);
    else if (op == braidMin)
      acc = std::min(acc, v);
    else
      acc += v;
  }
  if (op != braidAvg) return static_cast<double>(acc);
  if (!isFloat(t)) return static_cast<double>(acc / n);  // truncates, like C
  if (t == braidFloat64) return static_cast<double>(acc) / n;
  // float32, float16 and bfloat16 divide in float32 (then round once more).
  return static_cast<double>(static_cast<float>(acc) / static_cast<float>(n));
}

struct Case {
  braidDataType_t type;
  braidRedOp_t op;
  int n;
  uint64_t count;
  uint64_t maxStep;
  bool inPlace;
  std::string describe() const {
    return "type " + std::to_string(type) + " op " + std::to_string(op) + " nranks " +
           std::to_string(n) + " count " + std::to_string(count) + " maxStepElems " +
           std::to_string(maxStep) + (inPlace ? " in place" : " out of place");
  }
};

std::vector<algo::Schedule> ringSchedules(const Case& c) {
  std::vector<algo::Schedule> out;
  for (int r = 0; r < c.n; ++r) {
    algo::CollArgs a;
    a.rank = r;
    a.nranks = c.n;
    a.count = c.count;
    a.elemSize = static_cast<uint32_t>(sizeOf(c.type));
    a.inPlace = c.inPlace;
    a.maxStepElems = c.maxStep;
    out.push_back(algo::ringAllReduce(a));
  }
  return out;
}

// What ring.h promises about the schedule's shape. Per round a rank has
// 2n - 1 steps (send; n - 2 recvReduceSend; recvReduceCopySend; n - 2
// recvCopySend; recv), which send 2(n - 1) messages and receive 2(n - 1): the
// reduce-scatter's last receive and the all-gather's first send are one step.
::testing::AssertionResult checkRankShape(const Case& c, int r, const algo::Schedule& s) {
  const uint64_t perRound = c.maxStep * static_cast<uint64_t>(c.n);
  const uint64_t rounds = (c.count + perRound - 1) / perRound;
  const size_t stepsPerRound = 2 * c.n - 1;
  const auto& steps = s.steps;
  size_t want = c.count == 0 ? 0 : c.n == 1 ? 1 : rounds * stepsPerRound;
  if (steps.size() != want) {
    return ::testing::AssertionFailure()
           << "rank " << r << " has " << steps.size() << " steps, expected " << want;
  }
  if (c.n == 1) {
    if (c.count > 0 && (steps[0].op != OpKind::kCopy || !steps[0].final)) {
      return ::testing::AssertionFailure() << "one rank: expected one final copy";
    }
    return ::testing::AssertionSuccess();
  }
  size_t sends = 0, recvs = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const algo::Step& st = steps[i];
    if (st.count > c.maxStep) {
      return ::testing::AssertionFailure() << "rank " << r << " step " << i << " moves " << st.count
                                           << " elements (maxStepElems " << c.maxStep << ")";
    }
    if (i % stepsPerRound == 0 && (st.op != OpKind::kSend || st.sendPeer != (r + 1) % c.n)) {
      return ::testing::AssertionFailure()
             << "rank " << r << " step " << i << " does not start a round with a send to "
             << (r + 1) % c.n;
    }
    bool peersOk = (st.sendPeer < 0 || st.sendPeer == (r + 1) % c.n) &&
                   (st.recvPeer < 0 || st.recvPeer == (r + c.n - 1) % c.n);
    if (!peersOk) {
      return ::testing::AssertionFailure()
             << "rank " << r << " step " << i << " talks to a rank other than its neighbours";
    }
    sends += st.sendPeer >= 0;
    recvs += st.recvPeer >= 0;
  }
  if (sends != rounds * 2 * (c.n - 1) || recvs != sends) {
    return ::testing::AssertionFailure()
           << "rank " << r << " sends " << sends << " and receives " << recvs
           << " messages, expected " << rounds * 2 * (c.n - 1) << " each";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult checkShape(const Case& c, const std::vector<algo::Schedule>& s) {
  for (int r = 0; r < c.n; ++r) {
    ::testing::AssertionResult ok = checkRankShape(c, r, s[r]);
    if (!ok) return ok;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult runCase(const Case& c, size_t fifoMessages = 2) {
  const size_t es = sizeOf(c.type);
  const size_t bytes = c.count * es;
  std::vector<algo::Schedule> s = ringSchedules(c);
  ::testing::AssertionResult shape = checkShape(c, s);
  if (!shape) return shape << " (" << c.describe() << ")";
  std::vector<SimRank> ranks(c.n);
  std::vector<std::vector<uint8_t>> inputs(c.n, std::vector<uint8_t>(bytes));
  for (int r = 0; r < c.n; ++r) {
    for (uint64_t i = 0; i < c.count; ++i) {
      store(c.type, static_cast<double>(inputValue(c.type, c.op, r, i)), &inputs[r][i * es]);
    }
    ranks[r].inPlace = c.inPlace;
    ranks[r].output = c.inPlace ? inputs[r] : std::vector<uint8_t>(bytes, 0xab);
    if (!c.inPlace) ranks[r].input = inputs[r];
  }
  SimOptions opts;
  opts.fifoMessages = fifoMessages;
  Status st = simulate(s, c.type, c.op, ranks, opts);
  if (!st.isOk()) return ::testing::AssertionFailure() << c.describe() << ": " << st.message();
  std::vector<uint8_t> want(bytes);
  for (uint64_t i = 0; i < c.count; ++i) {
    store(c.type, expectedValue(c.type, c.op, c.n, i), &want[i * es]);
  }
  for (int r = 0; r < c.n; ++r) {
    if (ranks[r].output != ranks[0].output) {
      return ::testing::AssertionFailure()
             << c.describe() << ": rank " << r << " differs bitwise from rank 0";
    }
    if (!c.inPlace && ranks[r].input != inputs[r]) {
      return ::testing::AssertionFailure() << c.describe() << ": rank " << r << " input changed";
    }
  }
  for (uint64_t i = 0; i < c.count; ++i) {
    if (std::memcmp(&ranks[0].output[i * es], &want[i * es], es) != 0) {
      return ::testing::AssertionFailure()
             << c.describe() << ": element " << i << " is wrong (first of possibly many)";
    }
  }
  return ::testing::AssertionSuccess();
}

class RingAllReduce : public ::testing::TestWithParam<std::tuple<braidDataType_t, braidRedOp_t>> {};

TEST_P(RingAllReduce, SmallRanksManyCountsAndSteps) {
  auto [type, op] = GetParam();
  for (int n = 1; n <= 17; ++n) {
    const uint64_t counts[] = {0, 1, static_cast<uint64_t>(n - 1), static_cast<uint64_t>(n + 1),
                               1009};
    for (uint64_t count : counts) {
      for (uint64_t maxStep : {1, 3, 7, 64}) {
        // The prime with one-element steps is the slowest case: half the ranks.
        if (count == 1009 && maxStep == 1 && n % 2 == 0) continue;
        for (bool inPlace : {false, true}) {
          ASSERT_TRUE(runCase({type, op, n, count, maxStep, inPlace}));
        }
      }
    }
  }
}

TEST_P(RingAllReduce, LargeCount) {
  auto [type, op] = GetParam();
  for (int n : {2, 3, 8, 17}) {
    ASSERT_TRUE(runCase({type, op, n, 100003, 64, n % 2 == 0}));
    ASSERT_TRUE(runCase({type, op, n, 100003, 1 << 16, n % 2 == 1}));
  }
}

std::string paramName(const ::testing::TestParamInfo<RingAllReduce::ParamType>& info) {
  static const char* types[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                                "uint64", "float16", "float32", "float64", "bfloat16"};
  static const char* ops[] = {"sum", "prod", "max", "min", "avg"};
  return std::string(types[std::get<0>(info.param)]) + "_" + ops[std::get<1>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(AllTypesAllOps, RingAllReduce,
                         ::testing::Combine(::testing::ValuesIn(kTypes), ::testing::ValuesIn(kOps)),
                         paramName);

TEST(RingAllReduceManyRanks, Float32AndInt32) {
  for (int n : {32, 64, 128}) {
    for (braidDataType_t type : {braidFloat32, braidInt32}) {
      for (braidRedOp_t op : kOps) {
        for (uint64_t count : {uint64_t{1}, uint64_t(n - 1), uint64_t(n + 1), uint64_t{1009}}) {
          ASSERT_TRUE(runCase({type, op, n, count, count == 1009 ? 7u : 1u, count % 2 == 0}));
        }
      }
    }
  }
}

TEST(RingAllReduceFifo, NeedsTwoMessagesPerDirection) {
  // Every rank sends first, then receives and sends in one step: with room for
  // one message per direction nobody has room, which is why the executor caps a
  // step at half a FIFO.
  Case c{braidInt32, braidSum, 4, 100, 8, false};
  ::testing::AssertionResult r = runCase(c, 1);
  ASSERT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("deadlock"), std::string::npos) << r.message();
  EXPECT_TRUE(runCase(c, 2));
}

}  // namespace
}  // namespace braid
