// pointToPointPlan (exec/call.h): how a group's sends and receives run so that every send
// reads its buffer as it was when the group began. Each plan is run here the way the
// executors run it (copies before, the batch delivered by hand, copies after) and the
// receive buffers compared with the senders' data as it was before the group.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "exec/call.h"

namespace braid {
namespace {

Call send(const void* p, size_t count, int peer) {
  Call c;
  c.kind = Call::Kind::kSend;
  c.send = p;
  c.count = count;
  c.datatype = braidInt32;
  c.peer = peer;
  return c;
}

Call recv(void* p, size_t count, int peer) {
  Call c;
  c.kind = Call::Kind::kRecv;
  c.recv = p;
  c.count = count;
  c.datatype = braidInt32;
  c.peer = peer;
  return c;
}

std::vector<const Call*> pointers(const std::vector<Call>& calls) {
  std::vector<const Call*> out;
  for (const Call& c : calls) out.push_back(&c);
  return out;
}

// Runs `plan` on this rank as an executor would: the copies before, then each remote
// receive filled with what its peer sends (`incoming`, by peer) once every remote send has
// read its buffer (`outgoing` gets what each send read), then the copies after.
void runPlan(PointToPointPlan plan, const std::map<int, std::vector<int32_t>>& incoming,
             std::map<int, std::vector<int32_t>>* outgoing) {
  std::vector<char> scratch(plan.scratchBytes);
  placeScratch(&plan, scratch.data());
  for (const auto& c : plan.before) std::memmove(c.dst, c.src, c.bytes);
  for (const PointToPointPlan::Remote& r : plan.remote) {  // a send reads before any lands
    const Call& c = *r.call;
    if (c.kind != Call::Kind::kSend) continue;
    const auto* p = static_cast<const int32_t*>(c.send);
    (*outgoing)[c.peer].assign(p, p + c.count);
  }
  for (const PointToPointPlan::Remote& r : plan.remote) {
    const Call& c = *r.call;
    if (c.kind != Call::Kind::kRecv) continue;
    std::memcpy(r.recv, incoming.at(c.peer).data(), c.count * sizeof(int32_t));
  }
  for (const auto& c : plan.after) std::memcpy(c.dst, c.src, c.bytes);
}

TEST(PointToPointPlan, ASendToSelfInPlaceMovesNothing) {
  std::vector<int32_t> buf{1, 2, 3, 4};
  std::vector<Call> calls{send(buf.data(), 4, 0), recv(buf.data(), 4, 0)};
  Expected<PointToPointPlan> plan = pointToPointPlan(pointers(calls), 0);
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  EXPECT_TRUE(plan.value().before.empty());
  EXPECT_TRUE(plan.value().after.empty());
  EXPECT_TRUE(plan.value().remote.empty());
  EXPECT_EQ(plan.value().scratchBytes, 0u);
}

TEST(PointToPointPlan, ASendToSelfOutOfPlaceIsOneCopy) {
  std::vector<int32_t> a{1, 2, 3}, b(3, -1);
  std::vector<Call> calls{recv(b.data(), 3, 2), send(a.data(), 3, 2)};
  Expected<PointToPointPlan> plan = pointToPointPlan(pointers(calls), 2);
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  ASSERT_EQ(plan.value().before.size(), 1u);
  EXPECT_EQ(plan.value().scratchBytes, 0u);
  std::map<int, std::vector<int32_t>> out;
  runPlan(plan.value(), {}, &out);
  EXPECT_EQ(b, (std::vector<int32_t>{1, 2, 3}));
}

// Two sends to self whose receives land on each other's send buffers: a swap.
TEST(PointToPointPlan, SendsToSelfThatSwapBuffersGoThroughScratch) {
  std::vector<int32_t> a{1, 2}, b{3, 4};
  std::vector<Call> calls{send(a.data(), 2, 0), recv(b.data(), 2, 0), send(b.data(), 2, 0),
                          recv(a.data(), 2, 0)};
  Expected<PointToPointPlan> plan = pointToPointPlan(pointers(calls), 0);
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  EXPECT_GE(plan.value().scratchBytes, 16u);
  std::map<int, std::vector<int32_t>> out;
  runPlan(plan.value(), {}, &out);
  EXPECT_EQ(a, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(b, (std::vector<int32_t>{1, 2}));
}

// nccl-tests' in-place sendrecv: send the buffer to the next rank, receive into it from
// the previous one. The next rank gets the data from before the group.
TEST(PointToPointPlan, AReceiveIntoTheSendBufferLandsAfterTheSendReadIt) {
  std::vector<int32_t> buf{10, 11, 12};
  std::vector<Call> calls{send(buf.data(), 3, 2), recv(buf.data(), 3, 0)};
  Expected<PointToPointPlan> plan = pointToPointPlan(pointers(calls), 1);
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  EXPECT_EQ(plan.value().remote.size(), 2u);
  EXPECT_EQ(plan.value().after.size(), 1u);
  std::map<int, std::vector<int32_t>> out;
  runPlan(plan.value(), {{0, {7, 8, 9}}}, &out);
  EXPECT_EQ(out[2], (std::vector<int32_t>{10, 11, 12}));
  EXPECT_EQ(buf, (std::vector<int32_t>{7, 8, 9}));
}

// A send to self out of place beside a send of its receive buffer to another rank.
TEST(PointToPointPlan, ASendToSelfIntoABufferSentElsewhereLandsAfterThatSend) {
  std::vector<int32_t> a{1, 2}, b{5, 6};
  std::vector<Call> calls{send(a.data(), 2, 0), recv(b.data(), 2, 0), send(b.data(), 2, 1)};
  Expected<PointToPointPlan> plan = pointToPointPlan(pointers(calls), 0);
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  std::map<int, std::vector<int32_t>> out;
  runPlan(plan.value(), {}, &out);
  EXPECT_EQ(out[1], (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(b, (std::vector<int32_t>{1, 2}));
}

TEST(PointToPointPlan, PartialOverlapsAndUnpairedSendsToSelfAreInvalidUsage) {
  std::vector<int32_t> buf(8, 0);
  const std::vector<std::vector<Call>> bad{
      // a receive over part of a send buffer
      {send(buf.data(), 4, 1), recv(buf.data() + 2, 4, 2)},
      // a receive over a send buffer of another size
      {send(buf.data(), 4, 1), recv(buf.data(), 3, 2)},
      // two receives into one buffer
      {recv(buf.data(), 4, 1), recv(buf.data(), 4, 2)},
      // a send to self with no receive, and a receive with no send
      {send(buf.data(), 4, 0)},
      {recv(buf.data(), 4, 0)},
      // a send to self whose receive has another size
      {send(buf.data(), 4, 0), recv(buf.data() + 4, 2, 0)},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    Expected<PointToPointPlan> plan = pointToPointPlan(pointers(bad[i]), 0);
    ASSERT_FALSE(plan.isOk()) << "case " << i;
    EXPECT_EQ(plan.status().code(), braidInvalidUsage) << "case " << i;
  }
}

// A plan is made for its group's calls: the same calls find it, a group apart from them in
// any one thing (or made no plan, or failed its checks) does not.
TEST(PointToPointPlan, IsTheSameGroupsOnly) {
  int32_t a[4] = {}, b[4] = {}, c[4] = {};
  const std::vector<Call> group = {send(a, 4, 1), recv(b, 4, 2)};
  PointToPointPlan plan;
  EXPECT_FALSE(sameGroup(plan, pointers(group)));
  ASSERT_TRUE(pointToPointPlan(pointers(group), 0, &plan).isOk());
  const std::vector<Call> copy = group;  // other Call objects, the same calls
  EXPECT_TRUE(sameGroup(plan, pointers(copy)));
  std::vector<std::vector<Call>> apart(7, group);
  apart[0][1].recv = c;                                          // a buffer
  apart[1][0].count = 3;                                         // a count
  apart[2][0].datatype = braidFloat32;                           // a datatype
  apart[3][1].peer = 1;                                          // a peer
  apart[4] = {group[1], group[0]};                               // the order
  apart[5].push_back(send(c, 4, 3));                             // a call more
  apart[6][1].kind = Call::Kind::kSend;                          // a kind
  apart[6][1].send = b;
  for (size_t i = 0; i < apart.size(); ++i) {
    EXPECT_FALSE(sameGroup(plan, pointers(apart[i]))) << i;
  }
  // A group that fails its checks (a receive overlapping a send) leaves no plan behind.
  const std::vector<Call> bad = {send(a, 4, 1), recv(a + 1, 2, 2)};
  EXPECT_FALSE(pointToPointPlan(pointers(bad), 0, &plan).isOk());
  EXPECT_FALSE(sameGroup(plan, pointers(group)));
  EXPECT_FALSE(sameGroup(plan, pointers(bad)));
}

}  // namespace
}  // namespace braid
