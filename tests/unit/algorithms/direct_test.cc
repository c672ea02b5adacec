// The direct family (one-shot and two-shot all-reduce, direct all-gather,
// reduce-scatter, broadcast) through the simulator.
#include "algorithms/direct/direct.h"

#include <gtest/gtest.h>

#include "coll_check.h"

namespace braid::test {
namespace {

using algo::Collective;

struct Fn {
  const char* name;
  ScheduleFn fn;
  Collective c;
};

const Fn kFns[] = {
    {"oneshot", algo::directAllReduce, Collective::kAllReduce},
    {"twoshot", algo::twoShotAllReduce, Collective::kAllReduce},
    {"allgather", algo::directAllGather, Collective::kAllGather},
    {"reducescatter", algo::directReduceScatter, Collective::kReduceScatter},
    {"broadcast", algo::directBroadcast, Collective::kBroadcast},
    {"reduce", algo::directReduce, Collective::kReduce},
};

TEST(Direct, EveryRankCountStepAndPlacement) {
  for (const Fn& f : kFns) {
    for (int n : {1, 2, 3, 4, 5, 7, 8, 13, 17}) {
      for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t(n - 1), uint64_t(n + 1),
                             uint64_t{1009}}) {
        for (uint64_t step : {uint64_t{1}, uint64_t{7}, uint64_t{1} << 16}) {
          if (step == 1 && count > 100) continue;
          for (bool inPlace : {false, true}) {
            CheckCase c;
            c.collective = f.c;
            c.nranks = n;
            c.count = count;
            c.maxStepElems = step;
            c.inPlace = inPlace;
            c.root = n / 2;
            EXPECT_EQ(checkCollective(f.fn, c), "") << f.name;
          }
        }
      }
    }
  }
}

TEST(Direct, EveryTypeAndOp) {
  const braidDataType_t kTypes[] = {braidInt8,   braidUint8,  braidInt32,   braidUint32,
                                    braidInt64,  braidUint64, braidFloat16, braidFloat32,
                                    braidFloat64, braidBfloat16};
  for (const Fn& f : kFns) {
    for (braidDataType_t t : kTypes) {
      for (int op = 0; op < braidNumOps; ++op) {
        CheckCase c;
        c.collective = f.c;
        c.nranks = 6;
        c.count = 211;
        c.datatype = t;
        c.op = static_cast<braidRedOp_t>(op);
        c.maxStepElems = 32;
        c.root = 5;
        EXPECT_EQ(checkCollective(f.fn, c), "") << f.name;
      }
    }
  }
}

TEST(Direct, OneShotIsOneExchangePerPieceWithEveryPeer) {
  algo::CollArgs a;
  a.rank = 2;
  a.nranks = 5;
  a.count = 100;
  a.elemSize = 4;
  a.maxStepElems = 1 << 16;
  algo::Schedule s = algo::directAllReduce(a);
  int sends = 0, recvs = 0;
  for (const auto& st : s.steps) {
    sends += st.op == algo::OpKind::kSend;
    recvs += st.op == algo::OpKind::kRecv;
  }
  EXPECT_EQ(sends, 4);
  EXPECT_EQ(recvs, 4);
  EXPECT_EQ(s.scratchElems, 500u);
}

}  // namespace
}  // namespace braid::test
