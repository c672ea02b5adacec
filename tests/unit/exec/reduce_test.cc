// Tests of the host reduction kernels (exec/reduce.h), both builds, every datatype x op.
//
// Expected values come from a reference written plainly here: integer ops in uint64
// modular arithmetic, floating ops in long double on data chosen so that results are
// exact, and its own float16/bfloat16 codec built on ldexp/rint rather than bit tricks.
#include "exec/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "exec/reduce_tables.h"
#include "tests/unit/cuda/float8_reference.h"

namespace braid {
namespace {

// ---- Reference codec for binary16-like formats: `mant` fraction bits, exponent bias.
struct Format {
  int mant;
  int bias;
  uint16_t expMask() const { return static_cast<uint16_t>(0x7fff & ~((1 << mant) - 1)); }
};
constexpr Format kHalf{10, 15}, kBfloat{7, 127};

bool isNanBits(uint16_t bits, const Format& f) {
  return (bits & f.expMask()) == f.expMask() && (bits & ((1 << f.mant) - 1)) != 0;
}

double refDecode(uint16_t bits, const Format& f) {
  int e = (bits & 0x7fff) >> f.mant;
  int m = bits & ((1 << f.mant) - 1);
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (e == (f.expMask() >> f.mant)) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, 1 - f.bias - f.mant);
  return sign * std::ldexp(m + (1 << f.mant), e - f.bias - f.mant);
}

// Nearest even (std::rint in the default rounding mode). At exponent e (at least the
// minimum) the spacing is 2^(e - mant) and the encoding is ((e - minExp) << mant) + steps,
// which also covers subnormals and a round-up into the next binade. `v` must be exact in a
// double: products of two 16-bit floats are.
uint16_t refEncode(double v, const Format& f) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return static_cast<uint16_t>(0x7fff);
  double mag = std::fabs(v);
  int minExp = 1 - f.bias;
  int e = mag == 0 ? minExp : std::max(std::ilogb(mag), minExp);
  double steps = std::rint(std::ldexp(mag, f.mant - e));
  double largest = std::ldexp(2.0 - std::ldexp(1.0, -f.mant), f.bias);
  if (std::isinf(mag) || std::ldexp(steps, e - f.mant) > largest) return sign | f.expMask();
  return static_cast<uint16_t>(sign | (((e - minExp) << f.mant) + static_cast<int>(steps)));
}

// ---- Reference ops, one type per datatype.
template <typename T>
struct IntRef {
  using Storage = T;
  static T sample(uint64_t r, braidRedOp_t) { return static_cast<T>(r); }  // wraps freely
  static T apply(braidRedOp_t op, T x, T y) {
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    if (op == braidProd) return static_cast<T>(ux * uy);
    if (op == braidMax) return x > y ? x : y;
    if (op == braidMin) return x < y ? x : y;
    return static_cast<T>(ux + uy);
  }
  static T divide(T v, int d) {
    if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<int64_t>(v) / d);
    return static_cast<T>(static_cast<uint64_t>(v) / static_cast<uint64_t>(d));
  }
};

// Floating types go through long double, exact for this data: sums of four in -8..8,
// products of four in -3..3, quarters for max/min. With a Format, T holds its bits.
template <typename T, const Format* F = nullptr>
struct FloatRef {
  using Storage = T;
  static T encode(long double v) {
    if constexpr (F != nullptr) return refEncode(static_cast<double>(v), *F);
    return static_cast<T>(v);
  }
  static long double decode(T v) {
    if constexpr (F != nullptr) return refDecode(v, *F);
    return v;
  }
  static T sample(uint64_t r, braidRedOp_t op) {
    if (op == braidProd) return encode(static_cast<long double>(r % 7) - 3);
    if (op == braidMax || op == braidMin) return encode((r % 129 - 64.0L) / 4);
    return encode(static_cast<long double>(r % 17) - 8);
  }
  static T apply(braidRedOp_t op, T sx, T sy) { return apply(op, decode(sx), decode(sy), &encode); }
  // x op y, exactly, then `enc` (one rounding).
  template <typename Enc>
  static auto apply(braidRedOp_t op, long double x, long double y, Enc enc) {
    if (op == braidProd) return enc(x * y);
    if (op == braidMax) return enc(x > y ? x : y);
    if (op == braidMin) return enc(x < y ? x : y);
    return enc(x + y);
  }
  static T divide(T v, int d) {  // float16 and bfloat16 divide in float32, then round once
    using Div = std::conditional_t<std::is_same_v<T, double>, double, float>;
    return encode(static_cast<Div>(decode(v)) / static_cast<Div>(d));
  }
};

// float8: as FloatRef, with the float8 codec and data whose sums of two are exact in both
// formats (avg then rounds once, like the kernel); max/min see values that round.
template <const test::Float8Format* F>
struct Float8Ref {
  using Storage = uint8_t;
  static uint8_t encode(long double v) { return test::float8Encode(static_cast<double>(v), *F); }
  static long double decode(uint8_t v) { return test::float8Decode(v, *F); }
  static uint8_t sample(uint64_t r, braidRedOp_t op) {
    if (op == braidProd) return encode(static_cast<long double>(r % 7) - 3);
    if (op == braidMax || op == braidMin) return encode((r % 129 - 64.0L) / 4);
    return encode(static_cast<long double>(r % 9) - 4);
  }
  static uint8_t apply(braidRedOp_t op, uint8_t sx, uint8_t sy) {
    return FloatRef<uint8_t, nullptr>::apply(op, decode(sx), decode(sy), &encode);
  }
  static uint8_t divide(uint8_t v, int d) {
    return encode(static_cast<float>(decode(v)) / static_cast<float>(d));
  }
};

// The reference of each datatype, in braid.h's enum order.
using Refs = std::tuple<IntRef<int8_t>, IntRef<uint8_t>, IntRef<int32_t>, IntRef<uint32_t>,
                        IntRef<int64_t>, IntRef<uint64_t>, FloatRef<uint16_t, &kHalf>,
                        FloatRef<float>, FloatRef<double>, FloatRef<uint16_t, &kBfloat>,
                        Float8Ref<&test::kE4m3>, Float8Ref<&test::kE5m2>>;

template <typename F, size_t... I>
void visitType(braidDataType_t dt, F&& f, std::index_sequence<I...>) {
  ((static_cast<size_t>(dt) == I ? f(std::tuple_element_t<I, Refs>{}) : void()), ...);
}
template <typename F>
void visitType(braidDataType_t dt, F&& f) {
  visitType(dt, f, std::make_index_sequence<std::tuple_size_v<Refs>>());
}

// A buffer with `offset` elements before the data (misaligning it for vectors) and a
// canary tail; `before` keeps its first contents to show what a kernel touched.
template <typename R>
struct Buf {
  using S = typename R::Storage;
  std::vector<S> v, before;
  size_t off, n;
  Buf(size_t count, size_t offset, uint64_t seed, braidRedOp_t op) : off(offset), n(count) {
    std::mt19937_64 rng(seed);
    v.resize(offset + count + 5);
    for (S& x : v) x = R::sample(rng(), op);
    before = v;
  }
  S* data() { return v.data() + off; }
  S& operator[](size_t i) { return v[off + i]; }
};

// Compares bits, so -0 != +0 and NaN payloads count; outside the data nothing may change.
template <typename R>
::testing::AssertionResult sameBits(const Buf<R>& got,
                                    const std::vector<typename R::Storage>& want) {
  using S = typename R::Storage;
  for (size_t i = 0; i < got.v.size(); ++i) {
    bool inData = i >= got.off && i < got.off + got.n;
    const S& w = inData ? want[i - got.off] : got.before[i];
    if (std::memcmp(&got.v[i], &w, sizeof(S)) != 0) {
      uint64_t g = 0, e = 0;
      std::memcpy(&g, &got.v[i], sizeof(S));
      std::memcpy(&e, &w, sizeof(S));
      return ::testing::AssertionFailure() << (inData ? "element " : "outside the data, at ")
                                           << static_cast<long>(i) - static_cast<long>(got.off)
                                           << ": got bits 0x" << std::hex << g << ", want 0x" << e;
    }
  }
  return ::testing::AssertionSuccess();
}

constexpr size_t kCounts[] = {0, 1, 7, 8, 9, 33, 255, 257, 1000, 4097, 20000};
constexpr int kDivisors[] = {1, 3, 4};

using TableFn = const ReduceKernels* (*)(braidDataType_t, braidRedOp_t);
const char* const kIsaNames[] = {"generic", "avx2"};
const TableFn kTables[] = {&reduceTableGeneric, &reduceTableAvx2};

// Skips, with the reason, a build this CPU cannot run.
void skipUnlessRunnable(int isa) {
  if (isa == 1 && !cpuSupportsReduceAvx2()) GTEST_SKIP() << "this CPU lacks AVX2, F16C or FMA";
}

class ReduceTest : public ::testing::TestWithParam<std::tuple<int, int, int>> {
 protected:
  void SetUp() override { skipUnlessRunnable(std::get<0>(GetParam())); }
  braidDataType_t dt() const { return static_cast<braidDataType_t>(std::get<1>(GetParam())); }
  braidRedOp_t op() const { return static_cast<braidRedOp_t>(std::get<2>(GetParam())); }
  const ReduceKernels* k() const { return kTables[std::get<0>(GetParam())](dt(), op()); }
};

TEST_P(ReduceTest, ReduceMatchesReference) {
  visitType(dt(), [&](auto ref) {
    using R = decltype(ref);
    for (size_t count : kCounts) {
      for (size_t off : {0, 1}) {
        for (int alias : {0, 1, 2}) {  // dst is its own buffer, a or b
          SCOPED_TRACE(::testing::Message()
                       << "count " << count << " offset " << off << " alias " << alias);
          Buf<R> a(count, off, 1, op()), b(count, off, 2, op()), d(count, off, 3, op());
          std::vector<typename R::Storage> want(count);
          for (size_t i = 0; i < count; ++i) want[i] = R::apply(op(), a[i], b[i]);
          Buf<R>& dst = *std::array{&d, &a, &b}[alias];
          k()->reduce(dst.data(), a.data(), b.data(), count);
          EXPECT_TRUE(sameBits(dst, want));
        }
      }
    }
  });
}

TEST_P(ReduceTest, ReduceFinalDividesAndCopies) {
  visitType(dt(), [&](auto ref) {
    using R = decltype(ref);
    for (size_t count : kCounts) {
      for (int divisor : kDivisors) {
        if (op() != braidAvg && divisor != 3) continue;  // only avg divides: one is enough
        for (int alias : {0, 1, 2}) {                    // dst is its own buffer, a or b
          SCOPED_TRACE(::testing::Message()
                       << "count " << count << " divisor " << divisor << " alias " << alias);
          size_t off = (count + divisor) % 2;  // both alignments, across counts
          Buf<R> a(count, off, 4, op()), b(count, off, 5, op()), d(count, off, 6, op());
          Buf<R> d1(count, 1 - off, 7, op());
          std::vector<typename R::Storage> want(count);
          for (size_t i = 0; i < count; ++i) {
            want[i] = R::apply(op(), a[i], b[i]);
            if (op() == braidAvg) want[i] = R::divide(want[i], divisor);
          }
          Buf<R>& d0 = *std::array{&d, &a, &b}[alias];
          Buf<R> saved = d0;  // for a second run with dst1 null
          k()->reduceFinal(d0.data(), d1.data(), a.data(), b.data(), count, divisor);
          EXPECT_TRUE(sameBits(d0, want));
          EXPECT_TRUE(sameBits(d1, want)) << "dst1";
          d0 = saved;
          d1.v = d1.before;
          k()->reduceFinal(d0.data(), nullptr, a.data(), b.data(), count, divisor);
          EXPECT_TRUE(sameBits(d0, want)) << "dst1 null";
          EXPECT_EQ(d1.v, d1.before) << "dst1 null";
        }
      }
    }
  });
}

TEST_P(ReduceTest, FinalizeDividesOnlyForAvg) {
  visitType(dt(), [&](auto ref) {
    using R = decltype(ref);
    for (size_t count : kCounts) {
      for (int divisor : kDivisors) {
        for (bool inPlace : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << "count " << count << " divisor " << divisor << " in place " << inPlace);
          Buf<R> s(count, count % 2, 8, op()), d(count, 1 - count % 2, 9, op());
          std::vector<typename R::Storage> want(count);
          for (size_t i = 0; i < count; ++i) {
            want[i] = op() == braidAvg ? R::divide(s[i], divisor) : s[i];
          }
          Buf<R>& dst = inPlace ? s : d;
          k()->finalize(dst.data(), s.data(), count, divisor);
          EXPECT_TRUE(sameBits(dst, want));
        }
      }
    }
  });
}

std::string paramName(const ::testing::TestParamInfo<std::tuple<int, int, int>>& info) {
  return std::string(kIsaNames[std::get<0>(info.param)]) + "_" +
         datatypeName(static_cast<braidDataType_t>(std::get<1>(info.param))) + "_" +
         redOpName(static_cast<braidRedOp_t>(std::get<2>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, ReduceTest,
                         ::testing::Combine(::testing::Range(0, 2),
                                            ::testing::Range(0, int{braidNumTypes}),
                                            ::testing::Range(0, int{braidNumOps})),
                         paramName);

// ---- float16 / bfloat16 conversions, through the kernels of each build.
class SmallFloatTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { skipUnlessRunnable(GetParam()); }
};

// Each case is x op y for one element; kAnyNan accepts any NaN.
TEST_P(SmallFloatTest, EdgeCasesRoundToNearestEven) {
  constexpr uint32_t kAnyNan = 0x10000;
  constexpr braidDataType_t h = braidFloat16, b = braidBfloat16;
  struct Case {
    braidDataType_t dt;
    braidRedOp_t op;
    uint16_t x, y;
    uint32_t want;
  };
  const Case cases[] = {
      {h, braidSum, 0x3c00, 0x1000, 0x3c00},    // 1 + 2^-11: tie, down to even
      {h, braidSum, 0x3c01, 0x1000, 0x3c02},    // tie, up to even
      {h, braidSum, 0x0001, 0x0001, 0x0002},    // subnormals
      {h, braidProd, 0x0001, 0x3800, 0x0000},   // 2^-25: tie, to even zero
      {h, braidSum, 0x7bff, 0x4c00, 0x7c00},    // 65504 + 16: tie, to Inf
      {h, braidSum, 0x7c00, 0x3c00, 0x7c00},    // Inf + 1
      {h, braidSum, 0xfc00, 0x3c00, 0xfc00},    // -Inf + 1
      {h, braidSum, 0x7c00, 0xfc00, kAnyNan},   // Inf - Inf
      {h, braidSum, 0x7e00, 0x3c00, kAnyNan},   // quiet NaN
      {h, braidProd, 0x7c01, 0x3c00, kAnyNan},  // signalling NaN
      {h, braidMax, 0x7e00, 0x3c00, kAnyNan},   // max and min keep a NaN...
      {h, braidMin, 0x3c00, 0xfe00, kAnyNan},   // ...from either side
      {b, braidSum, 0x3f80, 0x3b80, 0x3f80},    // 1 + 2^-8: tie, down to even
      {b, braidSum, 0x3f81, 0x3b80, 0x3f82},    // tie, up to even
      {b, braidSum, 0x0001, 0x0001, 0x0002},    // subnormals
      {b, braidProd, 0x0001, 0x3f00, 0x0000},   // 2^-134: tie, to even zero
      {b, braidSum, 0x7f7f, 0x7b00, 0x7f80},    // max + half ulp: tie, to Inf
      {b, braidSum, 0xff80, 0x3f80, 0xff80},    // -Inf + 1
      {b, braidSum, 0x7f80, 0xff80, kAnyNan},   // Inf - Inf
      {b, braidSum, 0x7f81, 0x3f80, kAnyNan},   // signalling NaN
      {b, braidSum, 0xffff, 0x3f80, kAnyNan},   // negative NaN, full payload
      {b, braidMax, 0x3f80, 0x7fc0, kAnyNan},
  };
  for (const Case& c : cases) {  // 17 copies: 16 take the vector path, one the scalar tail
    std::vector<uint16_t> x(17, c.x), y(17, c.y), got(17);
    kTables[GetParam()](c.dt, c.op)->reduce(got.data(), x.data(), y.data(), got.size());
    for (uint16_t g : got) {
      bool ok = c.want == kAnyNan ? isNanBits(g, c.dt == h ? kHalf : kBfloat) : g == c.want;
      ASSERT_TRUE(ok) << datatypeName(c.dt) << " " << redOpName(c.op) << " 0x" << std::hex << c.x
                      << ", 0x" << c.y << ": got 0x" << g;
    }
  }
}

// Every bit pattern x times c must round like the reference (for NaN: be NaN). Products
// of two 16-bit floats are exact in float32, so the narrowing is the only rounding; c = 1
// checks that every value survives widening and narrowing.
TEST_P(SmallFloatTest, EveryValueRoundsLikeReference) {
  struct Case {
    braidDataType_t dt;
    const Format& f;
    std::vector<uint16_t> factors;
  };
  const Case cases[] = {
      {braidFloat16, kHalf, {0x3c00, 0x3800, 0x3555, 0x3c01, 0xbe00, 0x0400, 0x7bff}},
      {braidBfloat16, kBfloat, {0x3f80, 0x3f00, 0x3eab, 0x3f81, 0xbfc0, 0x3b80, 0x7f00}}};
  for (const Case& c : cases) {
    std::vector<uint16_t> all(65536), out(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    for (uint16_t factor : c.factors) {
      std::vector<uint16_t> fs(65536, factor);
      kTables[GetParam()](c.dt, braidProd)->reduce(out.data(), all.data(), fs.data(), 65536);
      for (uint32_t x = 0; x < 65536; ++x) {
        uint16_t want = refEncode(refDecode(x, c.f) * refDecode(factor, c.f), c.f);
        bool ok = isNanBits(want, c.f) ? isNanBits(out[x], c.f) : out[x] == want;
        ASSERT_TRUE(ok) << datatypeName(c.dt) << " 0x" << std::hex << x << " * 0x" << factor
                        << ": got 0x" << out[x] << ", want 0x" << want;
      }
    }
  }
}

// float8: every pair of bit patterns, summed and multiplied, rounds like the reference (for
// NaN: is NaN). This covers subnormals, ties, saturation of overflow and of Inf to the
// largest finite value, and e4m3's lack of Inf.
TEST_P(SmallFloatTest, Float8EveryPairRoundsLikeReference) {
  const std::pair<braidDataType_t, const test::Float8Format*> formats[] = {
      {braidFloat8e4m3, &test::kE4m3}, {braidFloat8e5m2, &test::kE5m2}};
  std::vector<uint8_t> x(65536), y(65536), out(65536);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<uint8_t>(i >> 8);
    y[i] = static_cast<uint8_t>(i);
  }
  for (const auto& [dt, f] : formats) {
    for (braidRedOp_t op : {braidSum, braidProd, braidMax}) {
      kTables[GetParam()](dt, op)->reduce(out.data(), x.data(), y.data(), out.size());
      for (size_t i = 0; i < out.size(); ++i) {
        long double a = test::float8Decode(x[i], *f), b = test::float8Decode(y[i], *f);
        uint8_t want = FloatRef<uint8_t, nullptr>::apply(
            op, a, b, [f = f](long double v) { return test::float8Encode(double(v), *f); });
        if (op == braidMax && (std::isnan(a) || std::isnan(b))) want = 0x7f;
        bool ok = test::float8IsNan(want, *f) ? test::float8IsNan(out[i], *f) : out[i] == want;
        ASSERT_TRUE(ok) << datatypeName(dt) << " " << redOpName(op) << " 0x" << std::hex
                        << int{x[i]} << ", 0x" << int{y[i]} << ": got 0x" << int{out[i]}
                        << ", want 0x" << int{want};
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothBuilds, SmallFloatTest, ::testing::Range(0, 2),
                         [](const auto& info) { return std::string(kIsaNames[info.param]); });

// ---- Names, sizes and the run-time choice.
TEST(ReduceInfoTest, NamesAndSizes) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  const char* names[] = {"int8",    "uint8",   "int32",    "uint32",     "int64",     "uint64",
                         "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  static_assert(std::size(sizes) == braidNumTypes && std::size(names) == braidNumTypes);
  for (int t = 0; t < braidNumTypes; ++t) {
    EXPECT_EQ(datatypeSize(static_cast<braidDataType_t>(t)), sizes[t]);
    EXPECT_STREQ(datatypeName(static_cast<braidDataType_t>(t)), names[t]);
  }
  EXPECT_EQ(datatypeSize(braidNumTypes), 0u);
  EXPECT_STREQ(datatypeName(braidNumTypes), "invalid");
  EXPECT_STREQ(redOpName(braidSum), "sum");
  EXPECT_STREQ(redOpName(braidAvg), "avg");
  EXPECT_STREQ(redOpName(braidNumOps), "invalid");
  EXPECT_EQ(reduceTableGeneric(braidNumTypes, braidSum), nullptr);
  EXPECT_EQ(reduceTableGeneric(braidFloat32, braidNumOps), nullptr);
}

TEST(ReduceInfoTest, PicksAvx2WhereSupported) {
  if (std::getenv("BRAID_REDUCE_ISA") != nullptr) GTEST_SKIP() << "BRAID_REDUCE_ISA is set";
  bool avx2 = cpuSupportsReduceAvx2();
  EXPECT_STREQ(reduceIsa(), avx2 ? "avx2" : "generic");
  TableFn table = avx2 ? &reduceTableAvx2 : &reduceTableGeneric;
  for (int i = 0; i < int{braidNumTypes} * int{braidNumOps}; ++i) {
    auto dt = static_cast<braidDataType_t>(i / braidNumOps);
    auto op = static_cast<braidRedOp_t>(i % braidNumOps);
    EXPECT_EQ(&reduceKernels(dt, op), table(dt, op));
  }
}

TEST(ReduceInfoTest, EnvForcesGeneric) {
  // The choice is made once per process, so check it in a fresh one.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("BRAID_REDUCE_ISA", "generic", 1);
        bool generic =
            &reduceKernels(braidInt8, braidMax) == reduceTableGeneric(braidInt8, braidMax);
        std::_Exit(generic && std::strcmp(reduceIsa(), "generic") == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace braid
