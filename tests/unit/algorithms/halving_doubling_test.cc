// Halving-doubling all-reduce, reduce-scatter and all-gather
// (algorithms/halving_doubling) run through the simulator and checked against
// the independent reference of coll_check.h: nranks 1..17 and some large and
// odd ones (the fold), counts 0, 1, n-1, n+1 and primes, several step sizes,
// in place and out of place, FIFOs of one and two messages, every datatype x
// op. Also checks the schedule's shape: no message over maxStepElems, and for
// a power of two 2*log2(n) exchange rounds with the expected partners.
#include "algorithms/halving_doubling/halving_doubling.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coll_check.h"

namespace braid::test {
namespace {

using algo::Collective;
using algo::OpKind;

constexpr braidDataType_t kTypes[] = {braidInt8,    braidUint8,   braidInt32,   braidUint32,
                                      braidInt64,   braidUint64,  braidFloat16, braidFloat32,
                                      braidFloat64, braidBfloat16};
constexpr braidRedOp_t kOps[] = {braidSum, braidProd, braidMax, braidMin, braidAvg};
constexpr Collective kCollectives[] = {Collective::kAllReduce, Collective::kReduceScatter,
                                       Collective::kAllGather};

algo::Schedule build(const algo::CollArgs& a) {
  switch (a.collective) {
    case Collective::kAllReduce:
      return algo::halvingDoublingAllReduce(a);
    case Collective::kReduceScatter:
      return algo::halvingDoublingReduceScatter(a);
    default:
      return algo::halvingDoublingAllGather(a);
  }
}

// Runs the case through the checker; also reports any message (a step with a
// peer) larger than maxStepElems.
std::string check(const CheckCase& c) {
  std::string tooBig;
  auto fn = [&](const algo::CollArgs& a) {
    algo::Schedule s = build(a);
    for (size_t i = 0; i < s.steps.size() && tooBig.empty(); ++i) {
      const algo::Step& st = s.steps[i];
      if ((st.sendPeer >= 0 || st.recvPeer >= 0) && st.count > a.maxStepElems) {
        tooBig = c.describe() + ": rank " + std::to_string(a.rank) + " step " + std::to_string(i) +
                 " moves " + std::to_string(st.count) + " elements";
      }
    }
    return s;
  };
  std::string why = checkCollective(fn, c);
  return why.empty() ? tooBig : why;
}

CheckCase makeCase(Collective coll, int n, uint64_t count, uint64_t maxStep, bool inPlace) {
  CheckCase c;
  c.collective = coll;
  c.nranks = n;
  c.count = count;
  c.maxStepElems = maxStep;
  c.inPlace = inPlace;
  // Vary the reduction and the FIFO depth with the case, cheaply.
  c.op = kOps[(n + count) % 5];
  c.datatype = count % 2 ? braidInt32 : braidFloat32;
  c.fifoMessages = 1 + (n + maxStep) % 2;
  return c;
}

class HalvingDoubling : public ::testing::TestWithParam<Collective> {};

TEST_P(HalvingDoubling, SmallRanksManyCountsAndSteps) {
  for (int n = 1; n <= 17; ++n) {
    const uint64_t un = static_cast<uint64_t>(n);
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, un - 1, un + 1, uint64_t{1009}}) {
      for (uint64_t maxStep : {1, 7, 64, 1 << 16}) {
        if (count == 1009 && maxStep == 1 && n % 4 != 1) continue;  // slowest: a few n
        for (bool inPlace : {false, true}) {
          EXPECT_EQ(check(makeCase(GetParam(), n, count, maxStep, inPlace)), "");
        }
      }
    }
  }
}

TEST_P(HalvingDoubling, LargeCount) {
  for (int n : {2, 3, 5, 8, 12, 17}) {
    EXPECT_EQ(check(makeCase(GetParam(), n, 20011, 64, n % 2 == 0)), "");
    EXPECT_EQ(check(makeCase(GetParam(), n, 20011, 1 << 16, n % 2 == 1)), "");
  }
}

TEST_P(HalvingDoubling, ManyRanks) {
  for (int n : {24, 31, 32, 33, 64}) {
    const uint64_t un = static_cast<uint64_t>(n);
    for (uint64_t count : {uint64_t{1}, un - 1, un + 1, uint64_t{1009}}) {
      for (uint64_t maxStep : {7, 1 << 16}) {
        EXPECT_EQ(check(makeCase(GetParam(), n, count, maxStep, count % 2 == 0)), "");
      }
    }
  }
}

TEST_P(HalvingDoubling, EveryTypeAndOp) {
  for (auto [n, count] : {std::pair{6, 37}, std::pair{8, 64}}) {
    for (braidDataType_t type : kTypes) {
      for (braidRedOp_t op : kOps) {
        for (bool inPlace : {false, true}) {
          CheckCase c = makeCase(GetParam(), n, count, 5, inPlace);
          c.datatype = type;
          c.op = op;
          EXPECT_EQ(check(c), "");
        }
      }
    }
  }
}

std::string collName(const ::testing::TestParamInfo<Collective>& info) {
  return algo::collectiveName(info.param);
}

INSTANTIATE_TEST_SUITE_P(Collectives, HalvingDoubling, ::testing::ValuesIn(kCollectives), collName);

algo::CollArgs allReduceArgs(int rank, int n, uint64_t count) {
  algo::CollArgs a;
  a.rank = rank;
  a.nranks = n;
  a.count = count;
  a.elemSize = 4;
  return a;
}

// A power of two needs no fold: log2(n) halving rounds (send, recvReduce) with
// partners r ^ n/2 .. r ^ 1, then log2(n) doubling rounds (send, recv) with
// r ^ 1 .. r ^ n/2; every round is one batch when a half fits in one step. A
// rank sends 2(n-1)/n of the data, as a ring does.
TEST(HalvingDoublingShape, PowerOfTwoAllReduceHasTwoLog2NRounds) {
  const uint64_t count = 1000;
  for (int n : {2, 4, 8, 16, 32}) {
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    for (int r = 0; r < n; ++r) {
      const algo::Schedule s = algo::halvingDoublingAllReduce(allReduceArgs(r, n, count));
      ASSERT_EQ(s.steps.size(), 4u * log2n) << "n " << n << " rank " << r;
      uint64_t sent = 0;
      for (int round = 0; round < 2 * log2n; ++round) {
        const algo::Step& send = s.steps[2 * round];
        const algo::Step& recv = s.steps[2 * round + 1];
        const bool halving = round < log2n;
        const int mask = halving ? n >> (round + 1) : 1 << (round - log2n);
        SCOPED_TRACE("n " + std::to_string(n) + " rank " + std::to_string(r) + " round " +
                     std::to_string(round));
        EXPECT_EQ(send.op, OpKind::kSend);
        EXPECT_TRUE(send.batchWithNext);
        EXPECT_EQ(send.sendPeer, r ^ mask);
        EXPECT_EQ(recv.op, halving ? OpKind::kRecvReduce : OpKind::kRecv);
        EXPECT_FALSE(recv.batchWithNext);
        EXPECT_EQ(recv.recvPeer, r ^ mask);
        EXPECT_EQ(recv.final, round == log2n - 1);
        sent += send.count;
      }
      // Every half is a run of near-equal shares: 2(n-1) shares sent in all.
      const uint64_t shares = 2 * static_cast<uint64_t>(n - 1);
      EXPECT_GE(sent, shares * (count / n));
      EXPECT_LE(sent, shares * ((count + n - 1) / n));
    }
  }
}

// With a fold, the folded-out even ranks talk only to their odd partner, and
// every other rank has the power-of-two schedule's rounds.
TEST(HalvingDoublingShape, FoldedOutRanksTalkOnlyToTheirPartner) {
  for (int n : {3, 5, 6, 7, 12}) {
    int p = 1;
    while (2 * p <= n) p *= 2;
    for (int r = 0; r < 2 * (n - p); r += 2) {
      const algo::Schedule s = algo::halvingDoublingAllReduce(allReduceArgs(r, n, 100));
      for (const algo::Step& st : s.steps) {
        EXPECT_TRUE(st.sendPeer == r + 1 || st.recvPeer == r + 1) << "n " << n << " rank " << r;
        EXPECT_TRUE(st.sendPeer < 0 || st.recvPeer < 0) << "n " << n << " rank " << r;
      }
    }
  }
}

TEST(HalvingDoublingShape, OneRankIsOneCopy) {
  for (Collective coll : kCollectives) {
    algo::CollArgs a = allReduceArgs(0, 1, 10);
    a.collective = coll;
    const algo::Schedule s = build(a);
    ASSERT_EQ(s.steps.size(), 1u);
    EXPECT_EQ(s.steps[0].op, OpKind::kCopy);
    EXPECT_EQ(s.steps[0].count, 10u);
    EXPECT_EQ(s.steps[0].final, coll != Collective::kAllGather);
  }
}

}  // namespace
}  // namespace braid::test
