// braid.hpp over a one-rank communicator: type deduction, in place and out of
// place, and errors as values.
#include <gtest/gtest.h>

#include <vector>

#include "braid/braid.hpp"

namespace {

braid::Communicator oneRank() {
  braidUniqueId id;
  EXPECT_EQ(braidGetUniqueId(&id), braidSuccess);
  braid::Communicator comm;
  braid::Result r = braid::Communicator::initRank(&comm, 1, id, 0);
  EXPECT_TRUE(r.ok()) << r.message();
  return comm;
}

TEST(CppWrapper, AllReduceDeducesTheDatatype) {
  braid::Communicator comm = oneRank();
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.rank(), 0);
  std::vector<double> in = {1.5, -2, 3};
  std::vector<double> out(3, 0);
  ASSERT_TRUE(comm.allReduce<double>(in, out, braidMax).ok());
  EXPECT_EQ(out, in);
  std::vector<int64_t> v = {7, 8};
  ASSERT_TRUE(comm.allReduce<int64_t>(v, braidSum).ok());
  EXPECT_EQ(v, (std::vector<int64_t>{7, 8}));
}

TEST(CppWrapper, APreMulSumOpScalesAndIsRefusedOnceDestroyed) {
  braid::Communicator comm = oneRank();
  braidRedOp_t op = braidSum;
  ASSERT_TRUE(comm.preMulSum<float>(-2.5f, &op).ok());
  std::vector<float> v = {1, -4, 0.5f};
  ASSERT_TRUE(comm.allReduce<float>(v, op).ok());
  EXPECT_EQ(v, (std::vector<float>{-2.5f, 10, -1.25f}));
  std::vector<double> d = {1};
  braid::Result r = comm.allReduce<double>(d, op);  // made for float
  EXPECT_EQ(r.code(), braidInvalidArgument);
  EXPECT_NE(r.message().find("made for float32"), std::string::npos) << r.message();
  ASSERT_TRUE(comm.destroyOp(op).ok());
  EXPECT_EQ(comm.allReduce<float>(v, op).code(), braidInvalidArgument);
  EXPECT_EQ(comm.destroyOp(op).code(), braidInvalidArgument);
}

TEST(CppWrapper, MismatchedSpansAreAnErrorValue) {
  braid::Communicator comm = oneRank();
  std::vector<float> in(4), out(3);
  braid::Result r = comm.allReduce<float>(in, out);
  EXPECT_EQ(r.code(), braidInvalidArgument);
  EXPECT_NE(r.message().find("sizes differ"), std::string::npos);
}

TEST(CppWrapper, AlgorithmQueryAndShrinkReturnResults) {
  braid::Communicator comm = oneRank();
  const char* name = nullptr;
  double us = -1;
  braid::Result r = comm.algorithm<float>(braidCollAllReduce, 1 << 20, &name, &us);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_NE(name, nullptr);
  EXPECT_GE(us, 0);
  r = comm.algorithm<float>(static_cast<braidCollective_t>(42), 8, &name);
  EXPECT_EQ(r.code(), braidInvalidArgument);
  EXPECT_NE(r.message().find("braidCollective_t"), std::string::npos);
  // Excluding this rank itself is misuse; excluding nobody gives a working copy.
  braid::Communicator copy;
  const int self[] = {0};
  r = comm.shrink(self, &copy);
  EXPECT_EQ(r.code(), braidInvalidUsage);
  r = comm.shrink({}, &copy);
  ASSERT_TRUE(r.ok()) << r.message();
  std::vector<int> v{5};
  EXPECT_TRUE(copy.allReduce<int>(v).ok());
  EXPECT_EQ(v[0], 5);
}

}  // namespace
