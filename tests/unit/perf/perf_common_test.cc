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

TEST(PerfFormat, NumbersHaveNcclTestsPrecision) {
  // As many decimals as fit the column (2, 1, 0), then exponent form.
  EXPECT_EQ(formatFloat(12.345, 7), "  12.35");
  EXPECT_EQ(formatFloat(123.45, 7), " 123.45");
  EXPECT_EQ(formatFloat(12345.6, 7), "12345.6");
  EXPECT_EQ(formatFloat(1234567.8, 7), "1234568");
  EXPECT_EQ(formatFloat(12345678.0, 7), "1.2e+07");
  EXPECT_EQ(formatFloat(0.5, 6), "  0.50");
  EXPECT_EQ(formatFloat(1234.5, 6), "1234.5");
  EXPECT_EQ(formatFloat(123456.0, 6), "123456");
  EXPECT_EQ(formatFloat(1234567.0, 6), " 1e+06");
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
    case braidFloat8e4m3:
      return floatFromE4m3(e4m3FromFloat(static_cast<float>(r)));
    case braidFloat8e5m2:
      return floatFromE5m2(e5m2FromFloat(static_cast<float>(r)));
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

// float8 against the OCP formats' tables: e4m3 (bias 7, no infinities, 0x7f
// NaN, largest 448), e5m2 (bias 15, binary16's top byte).
TEST(PerfFloat8, KnownValuesAndRounding) {
  EXPECT_EQ(e4m3FromFloat(1.0f), 0x38);
  EXPECT_EQ(e4m3FromFloat(-2.0f), 0xc0);
  EXPECT_EQ(e4m3FromFloat(0.5f), 0x30);
  EXPECT_EQ(e4m3FromFloat(16.0f), 0x58);
  EXPECT_EQ(e4m3FromFloat(17.0f), 0x58);  // halfway: to even (16)
  EXPECT_EQ(e4m3FromFloat(19.0f), 0x5a);  // halfway: to even (20)
  EXPECT_EQ(e4m3FromFloat(448.0f), 0x7e);
  EXPECT_EQ(e4m3FromFloat(1000.0f), 0x7e);               // saturates
  EXPECT_EQ(e4m3FromFloat(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(e4m3FromFloat(0.0f), 0x00);
  EXPECT_TRUE(std::isnan(floatFromE4m3(0x7f)));
  EXPECT_EQ(floatFromE4m3(0x7e), 448.0f);
  EXPECT_EQ(floatFromE4m3(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(e5m2FromFloat(1.0f), 0x3c);
  EXPECT_EQ(e5m2FromFloat(-1.0f), 0xbc);
  EXPECT_EQ(e5m2FromFloat(57344.0f), 0x7b);
  EXPECT_EQ(e5m2FromFloat(9.0f), 0x48);   // halfway between 8 and 10: to even (8)
  EXPECT_EQ(e5m2FromFloat(11.0f), 0x4a);  // halfway between 10 and 12: to even (12)
  EXPECT_EQ(floatFromE5m2(0x7c), INFINITY);
  EXPECT_TRUE(std::isnan(floatFromE5m2(0x7e)));
}

TEST(PerfFloat8, EveryValueRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    const uint8_t code = static_cast<uint8_t>(b);
    const float e4 = floatFromE4m3(code);
    if (!std::isnan(e4)) {
      EXPECT_EQ(e4m3FromFloat(e4), code) << b;
    }
    const float e5 = floatFromE5m2(code);
    if (!std::isnan(e5)) {
      EXPECT_EQ(e5m2FromFloat(e5), code) << b;
    }
  }
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
                                         braidBfloat16, braidFloat8e4m3, braidFloat8e5m2),
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
  EXPECT_EQ(a.nThreads, 1);
  EXPECT_EQ(a.nGpus, 1);
  EXPECT_EQ(a.minBytes, 32u << 20);
  EXPECT_EQ(a.maxBytes, 32u << 20);
  EXPECT_EQ(a.stepFactor, 1u);
  EXPECT_EQ(a.stepBytes, 1u << 20);
  EXPECT_EQ(a.iters, 20);
  EXPECT_EQ(a.aggIters, 1);
  EXPECT_EQ(a.warmupIters, 1);
  EXPECT_EQ(a.runCycles, 1);
  EXPECT_EQ(a.parallelInit, 0);
  EXPECT_EQ(a.check, 1);
  EXPECT_EQ(a.types, std::vector<braidDataType_t>{braidFloat32});
  EXPECT_EQ(a.ops, std::vector<braidRedOp_t>{braidSum});
  EXPECT_EQ(a.root, 0);
  EXPECT_EQ(a.blocking, 0);
  EXPECT_EQ(a.streamNull, 0);
  EXPECT_EQ(a.graphLaunches, 0);
  EXPECT_EQ(a.reportCpuTime, 0);
  EXPECT_EQ(a.reportTimestamps, 0);
  EXPECT_EQ(a.average, AverageMode::kMean);
  EXPECT_EQ(a.localRegister, 0);
  EXPECT_EQ(a.ctaPolicy, -1);  // not set
  EXPECT_EQ(a.deviceImpl, 0);
  EXPECT_EQ(a.deviceCtaCount, 16);
  EXPECT_EQ(a.memoryReport, 0);
  EXPECT_EQ(a.unalign, 0);
  EXPECT_EQ(a.perIterTiming, 0);
  EXPECT_EQ(a.perIterSkip, 0);
  EXPECT_EQ(a.memAlloc, 0);
  EXPECT_EQ(a.deviceBuffers, 0);
  EXPECT_EQ(noEffectOptions(a), "");
}

// Every nccl-tests option, by its short and its long name.
TEST(PerfArgsTest, ParsesEveryNcclTestsOption) {
  const std::vector<std::string> kShort = {
      "-t", "2",   "-g", "3",  "-b",          "8",  "-e", "1M", "-i", "2K",  "-f", "4",  "-n",
      "5",  "-m",  "2",  "-w", "0",           "-N", "3",  "-p", "1",  "-c",  "0",  "-o", "all",
      "-d", "all", "-r", "2",  "-z",          "3",  "-y", "1",  "-T", "2.5", "-G", "7",  "-C",
      "1",  "-S",  "1",  "-J", "/tmp/x.json", "-a", "3",  "-R", "2",  "-x",  "1",  "-D", "1",
      "-V", "32",  "-M", "1",  "-u",          "3",  "-I", "1",  "-K", "2"};
  const std::vector<std::string> kLong = {"--nthreads",
                                          "2",
                                          "--ngpus",
                                          "3",
                                          "--minbytes",
                                          "8",
                                          "--maxbytes",
                                          "1M",
                                          "--stepbytes",
                                          "2K",
                                          "--stepfactor",
                                          "4",
                                          "--iters",
                                          "5",
                                          "--agg_iters",
                                          "2",
                                          "--warmup_iters",
                                          "0",
                                          "--run_cycles",
                                          "3",
                                          "--parallel_init",
                                          "1",
                                          "--check",
                                          "0",
                                          "--op",
                                          "all",
                                          "--datatype",
                                          "all",
                                          "--root",
                                          "2",
                                          "--blocking",
                                          "3",
                                          "--stream_null",
                                          "1",
                                          "--timeout",
                                          "2.5",
                                          "--cudagraph",
                                          "7",
                                          "--report_cputime",
                                          "1",
                                          "--report_timestamps",
                                          "1",
                                          "--output_file",
                                          "/tmp/x.json",
                                          "--average",
                                          "3",
                                          "--local_register",
                                          "2",
                                          "--cta_policy",
                                          "1",
                                          "--device_implementation",
                                          "1",
                                          "--device_cta_count",
                                          "32",
                                          "--memory_report",
                                          "1",
                                          "--unalign",
                                          "3",
                                          "--per_iter_timing",
                                          "1",
                                          "--per_iter_skip",
                                          "2"};
  for (const std::vector<std::string>& words : {kShort, kLong}) {
    PerfArgs a;
    std::string error;
    ASSERT_TRUE(parse(words, &a, &error)) << error;
    EXPECT_EQ(a.nThreads, 2);
    EXPECT_EQ(a.nGpus, 3);
    EXPECT_EQ(a.minBytes, 8u);
    EXPECT_EQ(a.maxBytes, 1u << 20);
    EXPECT_EQ(a.stepBytes, 2048u);
    EXPECT_EQ(a.stepFactor, 4u);
    EXPECT_EQ(a.iters, 5);
    EXPECT_EQ(a.aggIters, 2);
    EXPECT_EQ(a.warmupIters, 0);
    EXPECT_EQ(a.runCycles, 3);
    EXPECT_EQ(a.parallelInit, 1);
    EXPECT_EQ(a.check, 0);
    EXPECT_EQ(a.ops.size(), 6u);     // mulsum too
    EXPECT_EQ(a.types.size(), 12u);  // float8 e4m3 and e5m2 too
    EXPECT_EQ(a.root, 2);
    EXPECT_EQ(a.blocking, 3);
    EXPECT_EQ(a.streamNull, 1);
    EXPECT_DOUBLE_EQ(a.timeoutSec, 2.5);
    EXPECT_EQ(a.graphLaunches, 7);
    EXPECT_EQ(a.reportCpuTime, 1);
    EXPECT_EQ(a.reportTimestamps, 1);
    EXPECT_EQ(a.jsonPath, "/tmp/x.json");
    EXPECT_EQ(a.average, AverageMode::kMax);
    EXPECT_EQ(a.localRegister, 2);
    EXPECT_EQ(a.ctaPolicy, 1);
    EXPECT_EQ(a.deviceImpl, 1);
    EXPECT_EQ(a.deviceCtaCount, 32);
    EXPECT_EQ(a.memoryReport, 1);
    EXPECT_EQ(a.unalign, 3);
    EXPECT_EQ(a.perIterTiming, 1);
    EXPECT_EQ(a.perIterSkip, 2);
    // What has no effect on Braid is named, once each.
    const std::string none = noEffectOptions(a);
    for (const char* flag : {"-x", "-D", "-V", "-R 2", "-G"}) {
      EXPECT_NE(none.find(flag), std::string::npos) << flag << " in " << none;
    }
  }
}

// Braid's own choices sit on letters nccl-tests does not use.
TEST(PerfArgsTest, BraidOptionsAreSeparate) {
  PerfArgs a;
  std::string error;
  ASSERT_TRUE(parse({"-A", "ring", "-E", "1", "-G", "2"}, &a, &error)) << error;
  EXPECT_EQ(a.algo, "ring");
  EXPECT_EQ(a.deviceBuffers, 1);
  EXPECT_EQ(noEffectOptions(a), "");  // -G runs on device buffers
  PerfArgs b;
  ASSERT_TRUE(parse({"--algo", "tree", "--memalloc", "1", "--device_buffers", "0"}, &b, &error));
  EXPECT_EQ(b.algo, "tree");
  EXPECT_EQ(b.memAlloc, 1);
  // nccl-tests' -R and -D keep nccl-tests' meanings: registration, device implementation.
  PerfArgs c;
  ASSERT_TRUE(parse({"-R", "1"}, &c, &error)) << error;
  EXPECT_EQ(c.localRegister, 1);
  EXPECT_EQ(c.memAlloc, 0);
  EXPECT_EQ(c.deviceBuffers, 0);
  const std::string usage = perfUsage();
  EXPECT_LT(usage.find("-R, --local_register"), usage.find("Braid's own options"));
  EXPECT_GT(usage.find("-P, --memalloc"), usage.find("Braid's own options"));
  EXPECT_GT(usage.find("-E, --device_buffers"), usage.find("Braid's own options"));
}

TEST(PerfArgsTest, TypeNames) {
  std::string error;
  const std::pair<const char*, braidDataType_t> kNames[] = {
      {"int8", braidInt8},         {"uint8", braidUint8},       {"int32", braidInt32},
      {"uint32", braidUint32},     {"int64", braidInt64},       {"uint64", braidUint64},
      {"half", braidFloat16},      {"float16", braidFloat16},   {"float", braidFloat32},
      {"float32", braidFloat32},   {"double", braidFloat64},    {"float64", braidFloat64},
      {"bfloat16", braidBfloat16}, {"f8e4m3", braidFloat8e4m3}, {"f8e5m2", braidFloat8e5m2}};
  for (const auto& [name, type] : kNames) {
    PerfArgs c;
    ASSERT_TRUE(parse({"-d", name}, &c, &error)) << name;
    EXPECT_EQ(c.types, std::vector<braidDataType_t>{type}) << name;
  }
}

TEST(PerfArgsTest, RejectsBadValues) {
  std::string error;
  for (std::vector<std::string> bad :
       std::vector<std::vector<std::string>>{{"-d", "complex"},
                                             {"-o", "xor"},
                                             {"-a", "4"},
                                             {"-n", "0"},
                                             {"-t", "0"},
                                             {"-g", "0"},
                                             {"-m", "0"},
                                             {"-z", "4"},
                                             {"-V", "129"},
                                             {"-R", "3"},
                                             {"-b", "1X"},
                                             {"-b", "2M", "-e", "1M"},
                                             {"-b", "1K", "-e", "1M", "-i", "0"},
                                             {"-T", "0"},
                                             {"-D", "1"},   // nccl-tests: -D > 0 needs -R 2
                                             {"-K", "20"},  // leaves none of the 20
                                             {"-G", "2", "-E", "1", "-g", "2"},
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
