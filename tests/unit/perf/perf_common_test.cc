// Unit tests of the perf tools' pure parts: size parsing and stepping, flags,
// bus-bandwidth factors, float16/bfloat16 conversion, and the check data
// (exact in every datatype, expected values right under the library's own
// arithmetic in any reduction order).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "perf/coll/perf_args.h"
#include "perf/coll/perf_data.h"
#include "perf/coll/perf_util.h"

namespace braid::perf {
namespace {

TEST(PerfSize, ParsesSuffixes) {
  size_t v = 0;
  EXPECT_TRUE(parseSize("8", &v));
  EXPECT_EQ(v, 8u);
  EXPECT_TRUE(parseSize("0", &v));
  EXPECT_EQ(v, 0u);
  EXPECT_TRUE(parseSize("1K", &v));
  EXPECT_EQ(v, 1024u);
  EXPECT_TRUE(parseSize("64k", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(parseSize("32M", &v));
  EXPECT_EQ(v, 32u << 20);
  EXPECT_TRUE(parseSize("2G", &v));
  EXPECT_EQ(v, size_t{2} << 30);
}

TEST(PerfSize, RejectsGarbageAndOverflow) {
  size_t v = 77;
  for (const char* bad :
       {"", "abc", "1X", "1KK", "-1", "+1", "K", "1.5M", "99999999999999999999", "17179869184G"}) {
    EXPECT_FALSE(parseSize(bad, &v)) << bad;
  }
  EXPECT_EQ(v, 77u);  // untouched on failure
}

TEST(PerfSize, StepsByFactorOrIncrement) {
  EXPECT_EQ(sizeSteps(8, 1 << 20, 4, 1 << 20),
            (std::vector<size_t>{8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288}));
  EXPECT_EQ(sizeSteps(1024, 4096, 1, 1024), (std::vector<size_t>{1024, 2048, 3072, 4096}));
  EXPECT_EQ(sizeSteps(1024, 4000, 1, 1024), (std::vector<size_t>{1024, 2048, 3072}));
  EXPECT_EQ(sizeSteps(32 << 20, 32 << 20, 1, 1 << 20), (std::vector<size_t>{32 << 20}));
  // A factor wins over the increment.
  EXPECT_EQ(sizeSteps(1, 8, 2, 1), (std::vector<size_t>{1, 2, 4, 8}));
  // Steps that cannot grow end the list instead of looping.
  EXPECT_EQ(sizeSteps(0, 100, 2, 1), (std::vector<size_t>{0}));
  EXPECT_EQ(sizeSteps(5, 100, 1, 0), (std::vector<size_t>{5}));
  EXPECT_EQ(sizeSteps(SIZE_MAX - 1, SIZE_MAX, 4, 0), (std::vector<size_t>{SIZE_MAX - 1}));
  EXPECT_TRUE(sizeSteps(10, 5, 2, 1).empty());
}

TEST(PerfBandwidth, Factors) {
  EXPECT_DOUBLE_EQ(allReduceBusBwFactor(1), 0.0);
  EXPECT_DOUBLE_EQ(allReduceBusBwFactor(2), 1.0);
  EXPECT_DOUBLE_EQ(allReduceBusBwFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(allReduceBusBwFactor(8), 1.75);
  EXPECT_DOUBLE_EQ(gatherBusBwFactor(4), 0.75);
  EXPECT_DOUBLE_EQ(gatherBusBwFactor(1), 0.0);
  EXPECT_DOUBLE_EQ(unitBusBwFactor(16), 1.0);
  EXPECT_DOUBLE_EQ(algBandwidth(2'000'000'000, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(algBandwidth(1000, 0.0), 0.0);
}

TEST(PerfFormat, TimeHasNcclTestsPrecision) {
  EXPECT_EQ(formatTime(12.345), "  12.35");
  EXPECT_EQ(formatTime(123.45), "  123.5");
  EXPECT_EQ(formatTime(12345.6), "  12346");
}

// ------------------------------------------------------------------ float16

TEST(PerfHalf, KnownValues) {
  EXPECT_EQ(halfFromFloat(0.0f), 0x0000);
  EXPECT_EQ(halfFromFloat(-0.0f), 0x8000);
  EXPECT_EQ(halfFromFloat(1.0f), 0x3c00);
  EXPECT_EQ(halfFromFloat(-2.0f), 0xc000);
  EXPECT_EQ(halfFromFloat(65504.0f), 0x7bff);
  EXPECT_EQ(halfFromFloat(65519.0f), 0x7bff);
  EXPECT_EQ(halfFromFloat(65520.0f), 0x7c00);  // ties to even: overflows
  EXPECT_EQ(halfFromFloat(1e30f), 0x7c00);
  EXPECT_EQ(halfFromFloat(-INFINITY), 0xfc00);
  EXPECT_EQ(halfFromFloat(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(halfFromFloat(std::ldexp(1.0f, -25)), 0x0000);  // tie to even (0)
  EXPECT_EQ(halfFromFloat(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(halfFromFloat(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 ulp: tie to even (2)
  EXPECT_EQ(halfFromFloat(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(halfFromFloat(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up into normals
  EXPECT_EQ(halfFromFloat(2049.0f), 0x6800);                   // tie to even: 2048
  EXPECT_EQ(halfFromFloat(2051.0f), 0x6802);                   // tie to even: 2052
  uint16_t nan = halfFromFloat(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(floatFromHalf(nan)));
  EXPECT_EQ(floatFromHalf(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(floatFromHalf(0x3555), 0.333251953125f);
  EXPECT_EQ(floatFromHalf(0xfc00), -INFINITY);
}

TEST(PerfHalf, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaN payloads
    ASSERT_EQ(halfFromFloat(floatFromHalf(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

#ifdef __FLT16_MAX__
// The compiler's _Float16 conversion is an independent round-to-nearest-even.
TEST(PerfHalf, MatchesCompilerOnRandomFloats) {
  std::mt19937 gen(7);
  for (int i = 0; i < 2'000'000; ++i) {
    uint32_t bits = static_cast<uint32_t>(gen());
    float f = bitsFloat(bits);
    if (std::isnan(f)) continue;
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t refBits;
    std::memcpy(&refBits, &ref, 2);
    ASSERT_EQ(halfFromFloat(f), refBits) << std::hexfloat << f;
  }
  // And densely around the half range, where random bits rarely land.
  for (uint32_t bits = 0x33000000u; bits < 0x47800000u; bits += 0x1fu) {
    float f = bitsFloat(bits);
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t refBits;
    std::memcpy(&refBits, &ref, 2);
    ASSERT_EQ(halfFromFloat(f), refBits) << std::hexfloat << f;
  }
}
#endif

// ------------------------------------------------------------------ bfloat16

TEST(PerfBf16, KnownValuesAndRounding) {
  EXPECT_EQ(bf16FromFloat(1.0f), 0x3f80);
  EXPECT_EQ(bf16FromFloat(-2.0f), 0xc000);
  EXPECT_EQ(bf16FromFloat(256.0f), 0x4380);
  EXPECT_EQ(bf16FromFloat(bitsFloat(0x3f808000u)), 0x3f80);  // tie, even below
  EXPECT_EQ(bf16FromFloat(bitsFloat(0x3f818000u)), 0x3f82);  // tie, even above
  EXPECT_EQ(bf16FromFloat(bitsFloat(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(bf16FromFloat(bitsFloat(0x3f807fffu)), 0x3f80);  // below the tie
  EXPECT_EQ(bf16FromFloat(257.0f), 0x4380);                  // 257 -> 256 (tie to even)
  EXPECT_EQ(bf16FromFloat(INFINITY), 0x7f80);
  EXPECT_EQ(bf16FromFloat(bitsFloat(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_TRUE(std::isnan(floatFromBf16(bf16FromFloat(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low half must stay NaN, not become inf.
  EXPECT_TRUE(std::isnan(floatFromBf16(bf16FromFloat(bitsFloat(0x7f800001u)))));
  EXPECT_EQ(floatFromBf16(0x3f80), 1.0f);
}

TEST(PerfBf16, EveryBf16RoundTrips) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0) continue;
    ASSERT_EQ(bf16FromFloat(floatFromBf16(static_cast<uint16_t>(b))), b) << std::hex << b;
  }
}

// ------------------------------------------------------------------ check data

// One operation as the library performs it: in the datatype's own arithmetic
// (16-bit floats widened to float and rounded back after every operation,
// integers wrapping), so that an inexact or wrapping step shows up.
double applyInType(braidDataType_t type, braidRedOp_t op, double a, double b) {
  double r = 0;
  switch (op) {
    case braidSum:
    case braidAvg:
      r = a + b;
      break;
    case braidProd:
      r = a * b;
      break;
    case braidMax:
      r = std::max(a, b);
      break;
    case braidMin:
      r = std::min(a, b);
      break;
    default:
      break;
  }
  switch (type) {
    case braidInt8:
      return static_cast<int8_t>(static_cast<int64_t>(r));
    case braidUint8:
      return static_cast<uint8_t>(static_cast<int64_t>(r));
    case braidInt32:
      return static_cast<int32_t>(static_cast<int64_t>(r));
    case braidUint32:
      return static_cast<uint32_t>(static_cast<int64_t>(r));
    case braidFloat16:
      return floatFromHalf(halfFromFloat(static_cast<float>(r)));
    case braidBfloat16:
      return floatFromBf16(bf16FromFloat(static_cast<float>(r)));
    case braidFloat32:
      return static_cast<float>(r);
    default:
      return r;  // 64-bit types: every value here is far below 2^53
  }
}

// The reduction over ranks in a given order, in the datatype, then avg's
// division (integer types truncate, floats divide and round).
double reduceInType(braidDataType_t type, braidRedOp_t op, int nranks, size_t i,
                    const std::vector<int>& order) {
  std::vector<uint8_t> tmp(8);
  auto in = [&](int r) {  // mulsum: scaled in the type first, as the library scales
    storeElement(type, tmp.data(), 0, checkInput(type, op, r, nranks, i));
    double v = loadElement(type, tmp.data(), 0);
    return op == kMulSum ? applyInType(type, braidProd, v, double(mulSumScalar(r))) : v;
  };
  const braidRedOp_t arith = op == kMulSum ? braidSum : op;
  double acc = in(order[0]);
  for (size_t k = 1; k < order.size(); ++k) acc = applyInType(type, arith, acc, in(order[k]));
  if (op == braidAvg) {
    if (typeInfo(type).isFloat) {
      acc = applyInType(type, braidSum, acc / nranks, 0.0);
    } else {
      acc = std::trunc(acc / nranks);
    }
  }
  return acc;
}

class PerfCheckData
    : public ::testing::TestWithParam<std::tuple<braidDataType_t, braidRedOp_t, int>> {};

TEST_P(PerfCheckData, InputsExactAndExpectedMatchesAnyOrder) {
  auto [type, op, nranks] = GetParam();
  const TypeInfo& t = typeInfo(type);
  constexpr size_t kCount = 3000;
  std::vector<int> forward(nranks), backward(nranks), split;
  for (int r = 0; r < nranks; ++r) forward[r] = r, backward[r] = nranks - 1 - r;
  for (int r = 0; r < nranks; r += 2) split.push_back(r);
  for (int r = 1; r < nranks; r += 2) split.push_back(r);

  std::vector<uint8_t> expected(kCount * t.size), input(kCount * t.size);
  fillCheckReduced(type, op, nranks, expected.data(), kCount);
  size_t nonzero = 0, negative = 0, rankDiffers = 0;
  for (int r = 0; r < nranks; ++r) {
    fillCheckInput(type, op, r, nranks, input.data(), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      int64_t v = checkInput(type, op, r, nranks, i);
      ASSERT_EQ(loadElement(type, input.data(), i), static_cast<double>(v))
          << t.name << " rank " << r << " element " << i << " is not exact";
      if (!t.isSigned) {
        ASSERT_GE(v, 0);
      }
      nonzero += v != 0;
      negative += v < 0;
      if (r > 0) rankDiffers += v != checkInput(type, op, 0, nranks, i);
    }
  }
  for (size_t i = 0; i < kCount; ++i) {
    double want = loadElement(type, expected.data(), i);
    ASSERT_EQ(want, static_cast<double>(checkReduced(type, op, nranks, i)));
    for (const auto* order : {&forward, &backward, &split}) {
      ASSERT_EQ(reduceInType(type, op, nranks, i, *order), want)
          << t.name << " " << opName(op) << " nranks " << nranks << " element " << i;
    }
  }
  // The data must be able to catch a wrong answer: not all zero, signed types
  // see negatives, and ranks differ (except for avg, rank-independent by design).
  if (checkMagnitude(type, op == kMulSum ? 2 * nranks : nranks) > 0 || op == braidProd) {
    EXPECT_GT(nonzero, kCount * nranks / 2);
    if (t.isSigned) {
      EXPECT_GT(negative, 0u);
    }
    if (nranks > 1 && op != braidAvg) {
      EXPECT_GT(rankDiffers, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesOpsRanks, PerfCheckData,
    ::testing::Combine(::testing::Values(braidInt8, braidUint8, braidInt32, braidUint32, braidInt64,
                                         braidUint64, braidFloat16, braidFloat32, braidFloat64,
                                         braidBfloat16),
                       ::testing::Values(braidSum, braidProd, braidMax, braidMin, braidAvg,
                                         kMulSum),
                       ::testing::Values(1, 2, 3, 4, 7, 16, 17, 64)),
    [](const auto& info) {
      return std::string(typeInfo(std::get<0>(info.param)).name) + "_" +
             opName(std::get<1>(info.param)) + "_" + std::to_string(std::get<2>(info.param));
    });

TEST(PerfCheckData, ProductHasTwosAndSigns) {
  // Every third group of nranks elements carries one 2, so products are not all 1.
  EXPECT_EQ(std::abs(checkReduced(braidFloat32, braidProd, 4, 0)), 2);
  EXPECT_EQ(std::abs(checkReduced(braidFloat32, braidProd, 4, 4)), 1);
  EXPECT_EQ(checkReduced(braidUint8, braidProd, 4, 1), 2);
}

TEST(PerfCheckData, CountMismatches) {
  std::vector<float> a{1, 2, 3, 4}, b{1, 2, 3, 4};
  EXPECT_EQ(countMismatches(braidFloat32, a.data(), b.data(), 4), 0u);
  b[2] = 5;
  EXPECT_EQ(countMismatches(braidFloat32, a.data(), b.data(), 4), 1u);
  EXPECT_EQ(countMismatches(braidFloat32, a.data(), b.data(), 2), 0u);  // only the first n
  a[2] = b[2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(countMismatches(braidFloat32, a.data(), b.data(), 4), 1u);  // NaN is always wrong
  std::vector<uint16_t> h{halfFromFloat(3.0f)}, g{halfFromFloat(-3.0f)};
  EXPECT_EQ(countMismatches(braidFloat16, h.data(), g.data(), 1), 1u);
}

// ------------------------------------------------------------------ flags

bool parse(std::vector<std::string> words, PerfArgs* args, std::string* error) {
  words.insert(words.begin(), "all_reduce_perf");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  return parsePerfArgs(static_cast<int>(words.size()), argv.data(), args, error);
}

TEST(PerfArgsTest, DefaultsAreNcclTests) {
  PerfArgs a;
  std::string error;
  ASSERT_TRUE(parse({}, &a, &error)) << error;
  EXPECT_EQ(a.minBytes, 32u << 20);
  EXPECT_EQ(a.maxBytes, 32u << 20);
  EXPECT_EQ(a.stepFactor, 1u);
  EXPECT_EQ(a.stepBytes, 1u << 20);
  EXPECT_EQ(a.iters, 20);
  EXPECT_EQ(a.warmupIters, 1);
  EXPECT_EQ(a.check, 1);
  EXPECT_EQ(a.types, std::vector<braidDataType_t>{braidFloat32});
  EXPECT_EQ(a.ops, std::vector<braidRedOp_t>{braidSum});
  EXPECT_EQ(a.average, AverageMode::kMean);
}

TEST(PerfArgsTest, ParsesEveryFlag) {
  PerfArgs a;
  std::string error;
  ASSERT_TRUE(parse({"-b", "8", "-e", "1M", "-f", "4",           "-i", "2K",  "-n", "5",
                     "-w", "0", "-c", "0",  "-d", "all",         "-o", "all", "-r", "2",
                     "-a", "3", "-z", "1",  "-J", "/tmp/x.json", "-T", "2.5"},
                    &a, &error))
      << error;
  EXPECT_EQ(a.minBytes, 8u);
  EXPECT_EQ(a.maxBytes, 1u << 20);
  EXPECT_EQ(a.stepFactor, 4u);
  EXPECT_EQ(a.stepBytes, 2048u);
  EXPECT_EQ(a.iters, 5);
  EXPECT_EQ(a.warmupIters, 0);
  EXPECT_EQ(a.check, 0);
  EXPECT_EQ(a.types.size(), 10u);
  EXPECT_EQ(a.ops.size(), 6u);  // mulsum too
  EXPECT_EQ(a.root, 2);
  EXPECT_EQ(a.average, AverageMode::kMax);
  EXPECT_EQ(a.blocking, 1);
  EXPECT_EQ(a.jsonPath, "/tmp/x.json");
  EXPECT_DOUBLE_EQ(a.timeoutSec, 2.5);

  PerfArgs b;
  ASSERT_TRUE(parse({"--datatype", "float16", "--op", "avg", "--minbytes", "1K"}, &b, &error));
  EXPECT_EQ(b.types, std::vector<braidDataType_t>{braidFloat16});
  EXPECT_EQ(b.ops, std::vector<braidRedOp_t>{braidAvg});
  EXPECT_EQ(b.minBytes, 1024u);
  const std::pair<const char*, braidDataType_t> kNames[] = {
      {"int8", braidInt8},        {"uint8", braidUint8},     {"int32", braidInt32},
      {"uint32", braidUint32},    {"int64", braidInt64},     {"uint64", braidUint64},
      {"half", braidFloat16},     {"float16", braidFloat16}, {"float", braidFloat32},
      {"float32", braidFloat32},  {"double", braidFloat64},  {"float64", braidFloat64},
      {"bfloat16", braidBfloat16}};
  for (const auto& [name, type] : kNames) {
    PerfArgs c;
    ASSERT_TRUE(parse({"-d", name}, &c, &error)) << name;
    EXPECT_EQ(c.types, std::vector<braidDataType_t>{type}) << name;
  }
}

// -G (nccl-tests' --cudagraph): launches of a graph of the timed calls, device buffers only.
TEST(PerfArgsTest, CudaGraphLaunchesGoWithDeviceBuffers) {
  PerfArgs a;
  std::string error;
  EXPECT_EQ(a.graphLaunches, 0);
  ASSERT_TRUE(parse({"-D", "1", "-G", "10"}, &a, &error)) << error;
  EXPECT_EQ(a.graphLaunches, 10);
  PerfArgs b;
  ASSERT_TRUE(parse({"--device", "1", "--cudagraph", "3"}, &b, &error)) << error;
  EXPECT_EQ(b.graphLaunches, 3);
  PerfArgs c;
  EXPECT_FALSE(parse({"-G", "2"}, &c, &error));
  EXPECT_NE(error.find("-D 1"), std::string::npos) << error;
}

TEST(PerfArgsTest, RejectsBadValues) {
  std::string error;
  for (std::vector<std::string> bad :
       std::vector<std::vector<std::string>>{{"-d", "complex"},
                                             {"-o", "xor"},
                                             {"-a", "4"},
                                             {"-n", "0"},
                                             {"-b", "1X"},
                                             {"-b", "2M", "-e", "1M"},
                                             {"-b", "1K", "-e", "1M", "-i", "0"},
                                             {"-T", "0"},
                                             {"-G", "5"},  // CUDA graphs need -D 1
                                             {"-G", "-1", "-D", "1"},
                                             {"-q"},
                                             {"stray"}}) {
    PerfArgs a;
    error.clear();
    EXPECT_FALSE(parse(bad, &a, &error)) << bad[0];
    EXPECT_FALSE(error.empty()) << bad[0];
  }
}

}  // namespace
}  // namespace braid::perf
