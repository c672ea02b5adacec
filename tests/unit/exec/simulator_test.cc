// Self-test of the schedule simulator (exec/simulator.h): hand-built schedules
// that are wrong in one way each (deadlock, a message nobody receives, a size
// mismatch, out-of-bounds access, malformed steps) must be reported with a
// message that names the rank, the step and the cause; small right ones must
// compute what the step semantics say.
#include "exec/simulator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace braid {
namespace {

using algo::BufRef;
using algo::OpKind;
using algo::Schedule;
using algo::Step;

constexpr BufRef kNo = BufRef::kNone;
constexpr BufRef kIn = BufRef::kInput;
constexpr BufRef kOut = BufRef::kOutput;
constexpr BufRef kScr = BufRef::kScratch;

Step step(OpKind op, BufRef src, BufRef dst, int sendPeer, int recvPeer, uint64_t srcOff,
          uint64_t dstOff, uint64_t count, bool final = false) {
  return Step{op, src, dst, sendPeer, recvPeer, srcOff, dstOff, count, final};
}
Step send(int peer, uint64_t off, uint64_t count) {
  return step(OpKind::kSend, kIn, kNo, peer, -1, off, 0, count);
}
Step recv(int peer, uint64_t off, uint64_t count, BufRef dst = kOut) {
  return step(OpKind::kRecv, kNo, dst, -1, peer, 0, off, count);
}

std::vector<Schedule> schedules(std::vector<std::vector<Step>> steps) {
  std::vector<Schedule> out(steps.size());
  for (size_t r = 0; r < steps.size(); ++r) {
    out[r].rank = static_cast<int>(r);
    out[r].nranks = static_cast<int>(steps.size());
    out[r].steps = std::move(steps[r]);
  }
  return out;
}

// int32 ranks: input[i] = 100 * rank + i, output filled with -1.
std::vector<SimRank> int32Ranks(int n, size_t inElems, size_t outElems) {
  std::vector<SimRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    std::vector<int32_t> in(inElems), out(outElems, -1);
    for (size_t i = 0; i < inElems; ++i) in[i] = 100 * r + static_cast<int32_t>(i);
    ranks[r].input.resize(inElems * 4);
    ranks[r].output.resize(outElems * 4);
    std::memcpy(ranks[r].input.data(), in.data(), inElems * 4);
    std::memcpy(ranks[r].output.data(), out.data(), outElems * 4);
  }
  return ranks;
}

std::vector<int32_t> outputOf(const SimRank& r) {
  std::vector<int32_t> v(r.output.size() / 4);
  std::memcpy(v.data(), r.output.data(), v.size() * 4);
  return v;
}

Status run(const std::vector<Schedule>& s, std::vector<SimRank>& ranks, size_t fifo = 2,
           braidRedOp_t op = braidSum) {
  SimOptions o;
  o.fifoMessages = fifo;
  return simulate(s, braidInt32, op, ranks, o);
}

#define EXPECT_ERROR(status, want, text)                           \
  do {                                                             \
    Status st_ = (status);                                         \
    EXPECT_EQ(st_.code(), (want)) << st_.message();                \
    EXPECT_NE(st_.message().find(text), std::string::npos)         \
        << "message: " << st_.message() << "\nwanted: " << (text); \
  } while (0)

TEST(Simulator, DeadlockWhenBothRanksReceiveFirst) {
  auto s = schedules({{recv(1, 0, 4), send(1, 0, 4)}, {recv(0, 0, 4), send(0, 0, 4)}});
  auto ranks = int32Ranks(2, 4, 4);
  Status st = run(s, ranks);
  EXPECT_ERROR(st, braidInvalidUsage, "deadlock");
  EXPECT_ERROR(st, braidInvalidUsage,
               "rank 0 step 0 of 2 (recv, 4 elements) waits for a message from rank 1");
  EXPECT_ERROR(st, braidInvalidUsage,
               "rank 1 step 0 of 2 (recv, 4 elements) waits for a message from rank 0");
}

TEST(Simulator, DeadlockNamesOnlyBlockedRanksAndTheirStep) {
  // Rank 2 finishes; ranks 0 and 1 get one step in, then wait for each other.
  auto s = schedules({{send(1, 0, 1), recv(1, 0, 1), recv(1, 1, 1)},
                      {recv(0, 0, 1), recv(0, 1, 1), send(0, 0, 1)},
                      {}});
  auto ranks = int32Ranks(3, 2, 2);
  Status st = run(s, ranks);
  EXPECT_ERROR(st, braidInvalidUsage,
               "rank 0 step 1 of 3 (recv, 1 elements) waits for a message from rank 1");
  EXPECT_ERROR(st, braidInvalidUsage,
               "rank 1 step 1 of 3 (recv, 1 elements) waits for a message from rank 0");
  EXPECT_EQ(st.message().find("rank 2"), std::string::npos) << st.message();
}

TEST(Simulator, BoundedFifoDeadlocksWhereALargerOneDoesNot) {
  // Each rank sends three messages before it receives any: fine with room for
  // three, a deadlock on FIFOs of two.
  std::vector<Step> a = {send(1, 0, 1), send(1, 1, 1), send(1, 2, 1),
                         recv(1, 0, 1), recv(1, 1, 1), recv(1, 2, 1)};
  std::vector<Step> b = a;
  for (Step& st : b) (st.sendPeer >= 0 ? st.sendPeer : st.recvPeer) = 0;
  auto s = schedules({a, b});
  auto ranks = int32Ranks(2, 3, 3);
  Status st = run(s, ranks, 2);
  EXPECT_ERROR(st, braidInvalidUsage,
               "rank 0 step 2 of 6 (send, 1 elements) waits for room to send to rank 1 "
               "(FIFO full: 2 messages)");
  EXPECT_ERROR(st, braidInvalidUsage, "rank 1 step 2 of 6 (send, 1 elements) waits for room");
  ranks = int32Ranks(2, 3, 3);
  ASSERT_TRUE(run(s, ranks, 3).isOk());
  EXPECT_EQ(outputOf(ranks[0]), (std::vector<int32_t>{100, 101, 102}));
  EXPECT_EQ(outputOf(ranks[1]), (std::vector<int32_t>{0, 1, 2}));
}

TEST(Simulator, LeftoverMessage) {
  auto s = schedules({{send(1, 0, 3), send(1, 1, 2)}, {recv(0, 0, 3)}});
  auto ranks = int32Ranks(2, 3, 3);
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "leftover messages: 1 message(s) from rank 0 to rank 1 never received (first "
               "sent by step 1, 2 elements)");
}

TEST(Simulator, SizeMismatch) {
  auto s = schedules({{send(1, 0, 4)}, {recv(0, 0, 5)}});
  auto ranks = int32Ranks(2, 5, 5);
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "size mismatch: rank 1 step 0 of 1 (recv, 5 elements) expects 5 elements from "
               "rank 0, whose step 0 sent 4");
}

TEST(Simulator, OutOfBoundsRead) {
  auto s = schedules({{send(1, 2, 4)}, {recv(0, 0, 4)}});
  auto ranks = int32Ranks(2, 5, 5);
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "out of bounds: rank 0 step 0 of 1 (send, 4 elements) reads input elements "
               "[2, 6) but the input holds 5 elements");
}

TEST(Simulator, OutOfBoundsWrite) {
  auto s = schedules({{send(1, 0, 4)}, {recv(0, 3, 4)}});
  auto ranks = int32Ranks(2, 5, 6);
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "out of bounds: rank 1 step 0 of 1 (recv, 4 elements) writes output elements "
               "[3, 7) but the output holds 6 elements");
}

TEST(Simulator, OutOfBoundsScratchAndHugeOffset) {
  auto s = schedules({{send(1, 0, 4)}, {recv(0, 0, 4, kScr)}});
  s[1].scratchElems = 3;
  auto ranks = int32Ranks(2, 4, 4);
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "writes scratch elements [0, 4) but the scratch holds 3 elements");
  // An offset near 2^64 must not wrap around the bounds check.
  s = schedules({{send(1, ~uint64_t{0} - 1, 4)}, {recv(0, 0, 4)}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage, "out of bounds: rank 0 step 0");
  s = schedules({{send(1, 2, ~uint64_t{0})}, {recv(0, 0, 4)}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "reads input elements [2, 18446744073709551615) but the input holds 4 elements");
}

TEST(Simulator, InPlaceBoundsAreTheOutputs) {
  auto s = schedules({{send(1, 0, 4)}, {recv(0, 0, 4)}});
  auto ranks = int32Ranks(2, 8, 3);
  ranks[0].inPlace = true;  // the input is the 3-element output
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "rank 0 step 0 of 1 (send, 4 elements) reads input elements [0, 4) but the "
               "input holds 3 elements");
}

TEST(Simulator, ZeroCountStepsAreIgnoredByBothSides) {
  // Wrong in every way but count 0: executors skip such steps without looking.
  Step junk = step(OpKind::kRecvReduceSend, kNo, kIn, 7, 9, 1000, 1000, 0);
  auto s = schedules({{junk, send(1, 0, 2), junk}, {junk, recv(0, 0, 2), junk}});
  auto ranks = int32Ranks(2, 2, 2);
  ASSERT_TRUE(run(s, ranks).isOk());
  EXPECT_EQ(outputOf(ranks[1]), (std::vector<int32_t>{0, 1}));
  // Only zero-count steps: nothing to do, nothing sent.
  s = schedules({{junk}, {junk}});
  ASSERT_TRUE(run(s, ranks).isOk());
}

TEST(Simulator, MalformedSteps) {
  auto ranks = int32Ranks(2, 4, 4);
  auto s = schedules({{send(2, 0, 1)}, {}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "malformed step: rank 0 step 0 of 1 (send, 1 elements): peer 2 is not another "
               "rank of 2");
  s = schedules({{send(0, 0, 1)}, {}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage, "peer 0 is not another rank");
  s = schedules({{step(OpKind::kSend, kIn, kNo, -1, -1, 0, 0, 1)}, {}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage, "has no sendPeer");
  s = schedules({{step(OpKind::kRecv, kNo, kOut, 1, 1, 0, 0, 1)}, {send(0, 0, 1)}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage, "sets a sendPeer it has no data for");
  s = schedules({{step(OpKind::kRecvReduce, kNo, kOut, -1, 1, 0, 0, 1)}, {send(0, 0, 1)}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage, "has no src buffer");
  s = schedules({{recv(1, 0, 1, kIn)}, {send(0, 0, 1)}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage, "writes the (const) input");
  s = schedules({{step(OpKind::kCopy, kOut, kOut, -1, -1, 0, 1, 2)}, {}});
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage, "src and dst overlap without being equal");
  s = schedules({{}, {}});
  s[1].rank = 0;
  EXPECT_ERROR(run(s, ranks), braidInvalidArgument, "schedules[1] says rank 0 of 2");
  s = schedules({{}});
  EXPECT_ERROR(run(s, ranks), braidInvalidArgument, "1 schedules for 2 ranks");
  s = schedules({{}, {}});
  EXPECT_ERROR(run(s, ranks, 0), braidInvalidArgument, "fifoMessages");
}

TEST(Simulator, StepSemantics) {
  // Rank 0 sends input[0..2); rank 1 reduce-sends its input with it to rank 2;
  // rank 2 reduces, finalises (avg over 3), writes and sends to rank 0, which
  // copies it on to rank 1 and keeps it; rank 1 receives into its output.
  auto s = schedules({{send(1, 0, 2), step(OpKind::kRecvCopySend, kNo, kOut, 1, 2, 0, 0, 2)},
                      {step(OpKind::kRecvReduceSend, kIn, kNo, 2, 0, 0, 0, 2), recv(0, 0, 2)},
                      {step(OpKind::kRecvReduceCopySend, kIn, kOut, 0, 1, 0, 0, 2, true)}});
  auto ranks = int32Ranks(3, 2, 2);
  ASSERT_TRUE(run(s, ranks, 2, braidAvg).isOk());
  // (0 + 100 + 200) / 3, (1 + 101 + 201) / 3
  std::vector<int32_t> want = {100, 101};
  for (int r = 0; r < 3; ++r) EXPECT_EQ(outputOf(ranks[r]), want) << "rank " << r;
  // kRecvReduce (final divides, else not) and kCopy (final divides by nranks).
  s = schedules({{send(1, 0, 2), send(1, 2, 1)},
                 {step(OpKind::kRecvReduce, kIn, kOut, -1, 0, 0, 0, 2, true),
                  step(OpKind::kRecvReduce, kIn, kOut, -1, 0, 2, 2, 1),
                  step(OpKind::kCopy, kIn, kOut, -1, -1, 3, 3, 1, true)}});
  ranks = int32Ranks(2, 4, 4);
  ASSERT_TRUE(run(s, ranks, 2, braidAvg).isOk());
  EXPECT_EQ(outputOf(ranks[1]), (std::vector<int32_t>{50, 51, 104, 51}));
  EXPECT_EQ(outputOf(ranks[0]), (std::vector<int32_t>{-1, -1, -1, -1}));
  // A non-final in-place copy onto itself changes nothing; with max, a final
  // copy does not divide.
  s = schedules({{step(OpKind::kCopy, kIn, kOut, -1, -1, 1, 1, 2),
                  step(OpKind::kCopy, kIn, kOut, -1, -1, 3, 0, 1, true)}});
  ranks = int32Ranks(1, 4, 4);
  ranks[0].output = ranks[0].input;
  ranks[0].inPlace = true;
  ASSERT_TRUE(run(s, ranks, 2, braidMax).isOk());
  EXPECT_EQ(outputOf(ranks[0]), (std::vector<int32_t>{3, 1, 2, 3}));
}

}  // namespace
}  // namespace braid
