// Tests of the host reduction kernels (exec/reduce.h), both builds, every datatype x op.
//
// Expected values come from a reference written plainly here: integer ops in uint64
// modular arithmetic, floating ops in long double on data chosen so that results are
// exact, and its own float16/bfloat16 codec built on ldexp/nearbyint rather than bit tricks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "exec/reduce.h"
#include "exec/reduce_tables.h"

namespace braid {
namespace {

// ---- Reference codec for binary16-like formats: `mant` fraction bits, exponent bias.
struct Format {
  int mant;
  int bias;
  uint16_t expMask() const { return static_cast<uint16_t>(0x7fff & ~((1 << mant) - 1)); }
};
constexpr Format kHalf{10, 15};
constexpr Format kBfloat{7, 127};

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

// Small values keep every result exact: sums of four in -8..8, products of four in -3..3,
// and quarters for max/min.
long double sampleReal(uint64_t r, braidRedOp_t op) {
  if (op == braidProd) return static_cast<long double>(r % 7) - 3;
  if (op == braidMax || op == braidMin) return (static_cast<long double>(r % 129) - 64) / 4;
  return static_cast<long double>(r % 17) - 8;
}

long double applyReal(braidRedOp_t op, long double x, long double y) {
  if (op == braidProd) return x * y;
  if (op == braidMax) return x > y ? x : y;
  if (op == braidMin) return x < y ? x : y;
  return x + y;
}

template <typename T>
struct FloatRef {
  using Storage = T;
  static T sample(uint64_t r, braidRedOp_t op) { return static_cast<T>(sampleReal(r, op)); }
  static T apply(braidRedOp_t op, T x, T y) { return static_cast<T>(applyReal(op, x, y)); }
  static T divide(T v, int d) { return v / static_cast<T>(d); }
};

template <const Format& F>
struct SmallFloatRef {
  using Storage = uint16_t;
  static uint16_t sample(uint64_t r, braidRedOp_t op) { return refEncode(sampleReal(r, op), F); }
  static uint16_t apply(braidRedOp_t op, uint16_t x, uint16_t y) {
    return refEncode(static_cast<double>(applyReal(op, refDecode(x, F), refDecode(y, F))), F);
  }
  static uint16_t divide(uint16_t v, int d) {  // in float32, then rounded once
    return refEncode(static_cast<float>(refDecode(v, F)) / static_cast<float>(d), F);
  }
};

template <typename F>
void visitType(braidDataType_t dt, F&& f) {
  switch (dt) {
    case braidInt8: return f(IntRef<int8_t>{});
    case braidUint8: return f(IntRef<uint8_t>{});
    case braidInt32: return f(IntRef<int32_t>{});
    case braidUint32: return f(IntRef<uint32_t>{});
    case braidInt64: return f(IntRef<int64_t>{});
    case braidUint64: return f(IntRef<uint64_t>{});
    case braidFloat16: return f(SmallFloatRef<kHalf>{});
    case braidFloat32: return f(FloatRef<float>{});
    case braidFloat64: return f(FloatRef<double>{});
    default: return f(SmallFloatRef<kBfloat>{});
  }
}

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A buffer with `offset` elements before the data (misaligning it for vectors) and a
// canary tail that no kernel may touch.
template <typename R>
struct Buf {
  using S = typename R::Storage;
  static constexpr int kTail = 5;
  std::vector<S> v;
  size_t off, n;
  Buf(size_t count, size_t offset, uint64_t seed, braidRedOp_t op) : off(offset), n(count) {
    v.resize(offset + count + kTail);
    for (size_t i = 0; i < v.size(); ++i) v[i] = R::sample(mix(seed * 1000003 + i), op);
  }
  S* data() { return v.data() + off; }
  S& operator[](size_t i) { return v[off + i]; }
};

// Compares bits, so -0 != +0 and NaN payloads count; checks the tail is intact.
template <typename R>
::testing::AssertionResult sameBits(Buf<R>& got, const std::vector<typename R::Storage>& want,
                                    const Buf<R>& tailRef) {
  using S = typename R::Storage;
  for (size_t i = 0; i < got.v.size(); ++i) {
    bool inData = i >= got.off && i < got.off + got.n;
    const S& w = inData ? want[i - got.off] : tailRef.v[i];
    if (std::memcmp(&got.v[i], &w, sizeof(S)) != 0) {
      uint64_t g = 0, e = 0;
      std::memcpy(&g, &got.v[i], sizeof(S));
      std::memcpy(&e, &w, sizeof(S));
      return ::testing::AssertionFailure() << (inData ? "element " : "outside the data, at ")
                                           << static_cast<long>(i) - static_cast<long>(got.off)
                                           << ": got bits 0x" << std::hex << g << ", want 0x"
                                           << e;
    }
  }
  return ::testing::AssertionSuccess();
}

enum class Alias { kNone, kDstIsA, kDstIsB };
constexpr size_t kCounts[] = {0, 1, 7, 8, 9, 33, 255, 257, 1000, 4097, 20000};
constexpr int kDivisors[] = {1, 3, 4};

using TableFn = const ReduceKernels* (*)(braidDataType_t, braidRedOp_t);
struct Isa {
  const char* name;
  TableFn table;
};
const Isa kIsas[] = {{"generic", &reduceTableGeneric}, {"avx2", &reduceTableAvx2}};

// The kernels of an ISA, or nullptr (and the reason) when this CPU cannot run them.
const ReduceKernels* kernelsOrSkip(int isa, braidDataType_t dt, braidRedOp_t op,
                                   std::string* why) {
  if (isa == 1 && !cpuSupportsReduceAvx2()) {
    *why = "this CPU lacks AVX2, F16C or FMA; the avx2 build cannot run here";
    return nullptr;
  }
  return kIsas[isa].table(dt, op);
}

class ReduceTest : public ::testing::TestWithParam<std::tuple<int, int, int>> {
 protected:
  void SetUp() override {
    std::string why;
    k_ = kernelsOrSkip(std::get<0>(GetParam()), dt(), op(), &why);
    if (k_ == nullptr) GTEST_SKIP() << why;
  }
  braidDataType_t dt() const { return static_cast<braidDataType_t>(std::get<1>(GetParam())); }
  braidRedOp_t op() const { return static_cast<braidRedOp_t>(std::get<2>(GetParam())); }
  const ReduceKernels* k_ = nullptr;
};

TEST_P(ReduceTest, ReduceMatchesReference) {
  visitType(dt(), [&](auto ref) {
    using R = decltype(ref);
    for (size_t count : kCounts) {
      for (size_t off : {0, 1}) {
        for (Alias alias : {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB}) {
          Buf<R> a(count, off, 1, op()), b(count, off, 2, op()), d(count, off, 3, op());
          Buf<R> tail = alias == Alias::kDstIsA ? a : alias == Alias::kDstIsB ? b : d;
          std::vector<typename R::Storage> want(count);
          for (size_t i = 0; i < count; ++i) want[i] = R::apply(op(), a[i], b[i]);
          Buf<R>& dst = alias == Alias::kDstIsA ? a : alias == Alias::kDstIsB ? b : d;
          k_->reduce(dst.data(), a.data(), b.data(), count);
          EXPECT_TRUE(sameBits(dst, want, tail))
              << "count " << count << " offset " << off << " alias " << static_cast<int>(alias);
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
        if (op() != braidAvg && divisor != 3) continue;  // ignored but for avg: try one
        for (Alias alias : {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB}) {
          for (bool second : {false, true}) {
            size_t off = (count + divisor) % 2;
            Buf<R> a(count, off, 4, op()), b(count, off, 5, op()), d(count, off, 6, op());
            Buf<R> e(count, 1 - off, 7, op());
            Buf<R> tail = alias == Alias::kDstIsA ? a : alias == Alias::kDstIsB ? b : d;
            Buf<R> tail1 = e;
            std::vector<typename R::Storage> want(count);
            for (size_t i = 0; i < count; ++i) {
              want[i] = R::apply(op(), a[i], b[i]);
              if (op() == braidAvg) want[i] = R::divide(want[i], divisor);
            }
            Buf<R>& d0 = alias == Alias::kDstIsA ? a : alias == Alias::kDstIsB ? b : d;
            k_->reduceFinal(d0.data(), second ? e.data() : nullptr, a.data(), b.data(), count,
                           divisor);
            std::string where = "count " + std::to_string(count) + " divisor " +
                                std::to_string(divisor) + " alias " +
                                std::to_string(static_cast<int>(alias));
            EXPECT_TRUE(sameBits(d0, want, tail)) << where;
            if (second) {
              EXPECT_TRUE(sameBits(e, want, tail1)) << "dst1, " << where;
            } else {
              EXPECT_EQ(e.v, tail1.v) << "dst1 is null, yet its memory changed";
            }
          }
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
          Buf<R> s(count, count % 2, 8, op()), d(count, 1 - count % 2, 9, op());
          Buf<R> tail = inPlace ? s : d;
          std::vector<typename R::Storage> want(count);
          for (size_t i = 0; i < count; ++i) {
            want[i] = op() == braidAvg ? R::divide(s[i], divisor) : s[i];
          }
          Buf<R>& dst = inPlace ? s : d;
          k_->finalize(dst.data(), s.data(), count, divisor);
          EXPECT_TRUE(sameBits(dst, want, tail))
              << "count " << count << " divisor " << divisor << " in place " << inPlace;
        }
      }
    }
  });
}

// The sequence a ring allreduce runs on one rank: out-of-place, then in place into the
// accumulator, then the final step with dst0 == b and a second copy.
TEST_P(ReduceTest, ChainOfFourRanks) {
  visitType(dt(), [&](auto ref) {
    using R = decltype(ref);
    for (size_t count : {size_t{9}, size_t{1000}, size_t{4097}}) {
      Buf<R> in0(count, 1, 10, op()), in1(count, 1, 11, op()), in2(count, 1, 12, op());
      Buf<R> in3(count, 1, 13, op()), acc(count, 0, 14, op()), copy(count, 1, 15, op());
      Buf<R> accTail = acc, copyTail = copy;
      std::vector<typename R::Storage> want(count);
      for (size_t i = 0; i < count; ++i) {
        auto v = R::apply(op(), R::apply(op(), R::apply(op(), in0[i], in1[i]), in2[i]), in3[i]);
        want[i] = op() == braidAvg ? R::divide(v, 4) : v;
      }
      k_->reduce(acc.data(), in0.data(), in1.data(), count);
      k_->reduce(acc.data(), acc.data(), in2.data(), count);
      k_->reduceFinal(acc.data(), copy.data(), in3.data(), acc.data(), count, 4);
      EXPECT_TRUE(sameBits(acc, want, accTail)) << "count " << count;
      EXPECT_TRUE(sameBits(copy, want, copyTail)) << "count " << count;
    }
  });
}

std::string paramName(const ::testing::TestParamInfo<std::tuple<int, int, int>>& info) {
  return std::string(kIsas[std::get<0>(info.param)].name) + "_" +
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
  void SetUp() override {
    std::string why;
    if (kernelsOrSkip(GetParam(), braidFloat16, braidSum, &why) == nullptr) GTEST_SKIP() << why;
  }
  // x op y for one element.
  uint16_t run(braidDataType_t dt, braidRedOp_t op, uint16_t x, uint16_t y) {
    uint16_t r = 0;
    kIsas[GetParam()].table(dt, op)->reduce(&r, &x, &y, 1);
    return r;
  }
};

TEST_P(SmallFloatTest, HalfEdgeCases) {
  const braidDataType_t h = braidFloat16;
  EXPECT_EQ(run(h, braidSum, 0x3c00, 0x1000), 0x3c00);  // 1 + 2^-11: tie, down to even
  EXPECT_EQ(run(h, braidSum, 0x3c01, 0x1000), 0x3c02);  // tie, up to even
  EXPECT_EQ(run(h, braidSum, 0x0001, 0x0001), 0x0002);  // subnormals
  EXPECT_EQ(run(h, braidSum, 0x03ff, 0x0001), 0x0400);  // largest subnormal + min = min normal
  EXPECT_EQ(run(h, braidProd, 0x0001, 0x3800), 0x0000);  // 2^-25: tie, to even zero
  EXPECT_EQ(run(h, braidProd, 0x0003, 0x3800), 0x0002);  // 1.5 * 2^-24: tie, to 2 * 2^-24
  EXPECT_EQ(run(h, braidSum, 0x7bff, 0x4800), 0x7bff);  // 65504 + 8 stays finite
  EXPECT_EQ(run(h, braidSum, 0x7bff, 0x4c00), 0x7c00);  // 65504 + 16: tie, to Inf
  EXPECT_EQ(run(h, braidSum, 0x7c00, 0x3c00), 0x7c00);  // Inf + 1
  EXPECT_EQ(run(h, braidSum, 0xfc00, 0x3c00), 0xfc00);  // -Inf + 1
  EXPECT_TRUE(isNanBits(run(h, braidSum, 0x7c00, 0xfc00), kHalf));  // Inf - Inf
  EXPECT_TRUE(isNanBits(run(h, braidSum, 0x7e00, 0x3c00), kHalf));  // quiet NaN
  EXPECT_TRUE(isNanBits(run(h, braidProd, 0x7c01, 0x3c00), kHalf));  // signalling NaN
  EXPECT_TRUE(isNanBits(run(h, braidMax, 0x7e00, 0x3c00), kHalf));  // max/min keep NaN...
  EXPECT_TRUE(isNanBits(run(h, braidMin, 0x3c00, 0xfe00), kHalf));  // ...from either side
}

TEST_P(SmallFloatTest, BfloatEdgeCases) {
  const braidDataType_t b = braidBfloat16;
  EXPECT_EQ(run(b, braidSum, 0x3f80, 0x3b80), 0x3f80);  // 1 + 2^-8: tie, down to even
  EXPECT_EQ(run(b, braidSum, 0x3f81, 0x3b80), 0x3f82);  // tie, up to even
  EXPECT_EQ(run(b, braidSum, 0x0001, 0x0001), 0x0002);  // subnormals
  EXPECT_EQ(run(b, braidProd, 0x0001, 0x3f00), 0x0000);  // 2^-134: tie, to even zero
  EXPECT_EQ(run(b, braidProd, 0x0003, 0x3f00), 0x0002);  // tie, up to even
  EXPECT_EQ(run(b, braidSum, 0x7f7e, 0x7b00), 0x7f7e);  // max-ish + half ulp: tie, to even
  EXPECT_EQ(run(b, braidSum, 0x7f7f, 0x7b00), 0x7f80);  // max + half ulp: tie, to Inf
  EXPECT_EQ(run(b, braidSum, 0xff80, 0x3f80), 0xff80);  // -Inf + 1
  EXPECT_TRUE(isNanBits(run(b, braidSum, 0x7f80, 0xff80), kBfloat));  // Inf - Inf
  EXPECT_TRUE(isNanBits(run(b, braidSum, 0x7f81, 0x3f80), kBfloat));  // signalling NaN
  EXPECT_TRUE(isNanBits(run(b, braidSum, 0xffff, 0x3f80), kBfloat));  // rounding must not carry
  EXPECT_TRUE(isNanBits(run(b, braidMax, 0x3f80, 0x7fc0), kBfloat));
}

// Every bit pattern x: x + -0 must give x back (NaN: some NaN), and x * c must round like
// the reference; each product is exact in float32, so the narrowing is the only rounding.
TEST_P(SmallFloatTest, EveryValueRoundsLikeReference) {
  struct Case {
    braidDataType_t dt;
    const Format& f;
    std::vector<uint16_t> factors;
  };
  const Case cases[] = {
      {braidFloat16, kHalf, {0x3800, 0x3555, 0x3c01, 0xbe00, 0x0400, 0x7bff}},
      {braidBfloat16, kBfloat, {0x3f00, 0x3eab, 0x3f81, 0xbfc0, 0x3b80, 0x7f00}}};
  for (const Case& c : cases) {
    std::vector<uint16_t> all(65536), negZero(65536, 0x8000), out(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    kIsas[GetParam()].table(c.dt, braidSum)->reduce(out.data(), all.data(), negZero.data(), all.size());
    for (uint32_t x = 0; x < 65536; ++x) {
      bool ok = isNanBits(x, c.f) ? isNanBits(out[x], c.f) : out[x] == x;
      ASSERT_TRUE(ok) << datatypeName(c.dt) << " round trip of 0x" << std::hex << x;
    }
    const ReduceKernels* prod = kIsas[GetParam()].table(c.dt, braidProd);
    for (uint16_t factor : c.factors) {
      std::vector<uint16_t> fs(65536, factor);
      prod->reduce(out.data(), all.data(), fs.data(), all.size());
      for (uint32_t x = 0; x < 65536; ++x) {
        uint16_t want = refEncode(refDecode(x, c.f) * refDecode(factor, c.f), c.f);
        bool ok = isNanBits(want, c.f) ? isNanBits(out[x], c.f) : out[x] == want;
        ASSERT_TRUE(ok) << datatypeName(c.dt) << " 0x" << std::hex << x << " * 0x" << factor
                        << ": got 0x" << out[x] << ", want 0x" << want;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothBuilds, SmallFloatTest, ::testing::Range(0, 2),
                         [](const auto& info) { return std::string(kIsas[info.param].name); });

// ---- Names, sizes and the run-time choice.
TEST(ReduceInfoTest, NamesAndSizes) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  const char* names[] = {"int8",    "uint8",   "int32",   "uint32",  "int64",
                         "uint64",  "float16", "float32", "float64", "bfloat16"};
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
  for (int t = 0; t < braidNumTypes; ++t) {
    for (int o = 0; o < braidNumOps; ++o) {
      auto dt = static_cast<braidDataType_t>(t);
      auto op = static_cast<braidRedOp_t>(o);
      EXPECT_EQ(&reduceKernels(dt, op), table(dt, op));
    }
  }
}

TEST(ReduceInfoTest, EnvForcesGeneric) {
  // The choice is made once per process, so check it in a fresh one.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("BRAID_REDUCE_ISA", "generic", 1);
        bool generic = std::strcmp(reduceIsa(), "generic") == 0 &&
                       &reduceKernels(braidFloat32, braidSum) ==
                           reduceTableGeneric(braidFloat32, braidSum);
        std::_Exit(generic ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace braid
