// The checker itself: the ring all-reduce passes it; a schedule with a wrong
// destination fails it with the mismatch named.
#include <gtest/gtest.h>

#include "algorithms/ring/ring.h"
#include "coll_check.h"

namespace braid::test {
namespace {

TEST(CollCheck, RingAllReducePassesInAndOutOfPlace) {
  for (bool inPlace : {false, true}) {
    CheckCase c;
    c.nranks = 5;
    c.count = 103;
    c.inPlace = inPlace;
    c.maxStepElems = 7;
    EXPECT_EQ(checkCollective(algo::ringAllReduce, c), "");
  }
}

TEST(CollCheck, AWrongScheduleIsCaught) {
  CheckCase c;
  c.nranks = 3;
  c.count = 12;
  auto broken = [](const algo::CollArgs& a) {
    algo::Schedule s = algo::ringAllReduce(a);
    for (auto& st : s.steps) {
      if (st.op == algo::OpKind::kRecv && st.dstOffset > 0) st.dstOffset -= 1;
    }
    return s;
  };
  std::string why = checkCollective(broken, c);
  EXPECT_NE(why.find("want"), std::string::npos) << why;
}

}  // namespace
}  // namespace braid::test
