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

Step copy(BufRef src, BufRef dst, uint64_t srcOff, uint64_t dstOff, uint64_t count) {
  return step(OpKind::kCopy, src, dst, -1, -1, srcOff, dstOff, count);
}
// The steps as one batch: every step but the last has batchWithNext.
std::vector<Step> batch(std::vector<Step> steps) {
  for (size_t i = 0; i + 1 < steps.size(); ++i) steps[i].batchWithNext = true;
  return steps;
}
std::vector<Step> concat(std::vector<Step> a, const std::vector<Step>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
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

TEST(Simulator, BatchCompletesWhereSequentialStepsDeadlock) {
  // Each rank sends two messages, then receives two, over FIFOs of one
  // message: one after another the second send never finds room; as one batch
  // the receives drain the FIFOs while the sends wait.
  std::vector<Step> a = {send(1, 0, 5), send(1, 5, 5), recv(1, 0, 5), recv(1, 5, 5)};
  std::vector<Step> b = {send(0, 0, 5), send(0, 5, 5), recv(0, 0, 5), recv(0, 5, 5)};
  auto ranks = int32Ranks(2, 10, 10);
  EXPECT_ERROR(run(schedules({a, b}), ranks, 1), braidInvalidUsage,
               "rank 0 step 1 of 4 (send, 5 elements) waits for room to send to rank 1 "
               "(FIFO full: 1 messages)");
  ranks = int32Ranks(2, 10, 10);
  ASSERT_TRUE(run(schedules({batch(a), batch(b)}), ranks, 1).isOk());
  std::vector<int32_t> want0, want1;
  for (int32_t i = 0; i < 10; ++i) {
    want0.push_back(100 + i);
    want1.push_back(i);
  }
  EXPECT_EQ(outputOf(ranks[0]), want0);
  EXPECT_EQ(outputOf(ranks[1]), want1);
}

TEST(Simulator, BatchStepsWithDifferentPeersDoNotWaitForEachOther) {
  // Rank 0's receive from rank 1 needs rank 0's later send to rank 2 first
  // (2 -> 1 -> 0): a deadlock in order, fine in a batch.
  std::vector<Step> r0 = {recv(1, 0, 1), recv(2, 1, 1), send(2, 0, 1)};
  std::vector<Step> r1 = {recv(2, 0, 1), send(0, 0, 1)};
  std::vector<Step> r2 = {send(0, 0, 1), recv(0, 0, 1), send(1, 1, 1)};
  auto ranks = int32Ranks(3, 2, 2);
  EXPECT_ERROR(run(schedules({r0, r1, r2}), ranks), braidInvalidUsage, "deadlock");
  ranks = int32Ranks(3, 2, 2);
  ASSERT_TRUE(run(schedules({batch(r0), r1, r2}), ranks).isOk());
  EXPECT_EQ(outputOf(ranks[0]), (std::vector<int32_t>{100, 200}));
  EXPECT_EQ(outputOf(ranks[1]), (std::vector<int32_t>{201, -1}));
  EXPECT_EQ(outputOf(ranks[2]), (std::vector<int32_t>{0, -1}));
}

TEST(Simulator, BatchKeepsStepOrderPerPeer) {
  // Rank 1 lists its receives from rank 0 in the order rank 0 sends: the
  // first lands at offset 4; different sizes would mismatch if reordered.
  auto s = schedules({batch({send(1, 0, 2), send(1, 2, 3), send(2, 0, 1)}),
                      batch({recv(2, 6, 1), recv(0, 4, 2), recv(0, 0, 3)}),
                      batch({recv(0, 0, 1), send(1, 1, 1)})});
  auto ranks = int32Ranks(3, 7, 7);
  ASSERT_TRUE(run(s, ranks, 1).isOk());
  EXPECT_EQ(outputOf(ranks[1]), (std::vector<int32_t>{2, 3, 4, -1, 0, 1, 201}));
  // A step that both receives and sends waits for the earlier steps of both
  // its peers: rank 1 forwards rank 0's second message to rank 2 only after
  // its first send to rank 2.
  s = schedules(
      {{send(1, 0, 1), send(1, 1, 1)},
       batch({recv(0, 0, 1), send(2, 3, 1), step(OpKind::kRecvCopySend, kNo, kOut, 2, 0, 0, 1, 1)}),
       {recv(1, 0, 1), recv(1, 1, 1)}});
  ranks = int32Ranks(3, 4, 2);
  ASSERT_TRUE(run(s, ranks, 1).isOk());
  EXPECT_EQ(outputOf(ranks[1]), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(outputOf(ranks[2]), (std::vector<int32_t>{103, 1}));
}

TEST(Simulator, BatchZeroCountStepsAreDoneAtOnce) {
  Step junk = step(OpKind::kRecv, kNo, kOut, -1, 1, 0, 0, 0);
  auto s = schedules({concat(batch({junk, junk}), batch({junk, send(1, 0, 2), junk})),
                      batch({junk, recv(0, 0, 2), copy(kIn, kOut, 1, 2, 1), junk})});
  s[1].steps.back().batchWithNext = true;  // a batch may end the schedule
  auto ranks = int32Ranks(2, 3, 3);
  ASSERT_TRUE(run(s, ranks).isOk());
  EXPECT_EQ(outputOf(ranks[1]), (std::vector<int32_t>{0, 1, 101}));
}

TEST(Simulator, BatchDeadlockNamesTheWaitingStepsOfTheBatch) {
  // Rank 1's first receive has no matching send; its second waits behind it
  // (not named), its forwarding step heads the lane to rank 2 but waits for
  // the first receive; rank 2 waits outside any batch.
  Step fwd = step(OpKind::kRecvCopySend, kNo, kOut, 2, 0, 0, 3, 1);
  auto s = schedules(
      {{}, batch({recv(0, 0, 1), recv(0, 1, 1), fwd, copy(kIn, kOut, 0, 2, 1)}), {recv(1, 0, 1)}});
  auto ranks = int32Ranks(3, 4, 4);
  Status st = run(s, ranks);
  EXPECT_ERROR(st, braidInvalidUsage,
               "deadlock: no rank can run its next step; rank 1 batch of steps 0-3 (3 not "
               "done): step 0 of 4 (recv, 1 elements) waits for a message from rank 0, step 2 "
               "of 4 (recvCopySend, 1 elements) waits for step 0 (an earlier receive from rank "
               "0); rank 2 step 0 of 1 (recv, 1 elements) waits for a message from rank 1");
  EXPECT_EQ(st.message().find("step 1 of 4"), std::string::npos) << st.message();
  // Rank 1 never receives: rank 0's second send waits for room (FIFOs of one
  // message) once its receive is done.
  auto a = batch({send(1, 0, 1), send(1, 1, 1), recv(1, 0, 1)});
  auto b = batch({send(0, 0, 1), send(0, 1, 1)});
  ranks = int32Ranks(2, 2, 2);
  st = run(schedules({a, b}), ranks, 1);
  EXPECT_ERROR(st, braidInvalidUsage,
               "no rank can run its next step; rank 0 batch of steps 0-2 (1 not done): step 1 of "
               "3 (send, 1 elements) waits for room to send to rank 1 (FIFO full: 1 messages)");
  EXPECT_EQ(st.message().find("; rank 1"), std::string::npos) << st.message();
}

TEST(Simulator, RaceInABatchIsMalformed) {
  // The receive writes output [0, 4) while the copy reads [2, 4) of it.
  auto s = schedules({batch({recv(1, 0, 4), copy(kOut, kScr, 2, 0, 2)}), {send(0, 0, 4)}});
  s[0].scratchElems = 2;
  auto ranks = int32Ranks(2, 4, 4);
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "race in a batch: rank 0 step 0 of 2 (recv, 4 elements) writes output elements "
               "[0, 4) and step 1 reads output elements [2, 4), but the steps of a batch (here "
               "0-1) run concurrently");
  // In order, the same steps are fine; so are a batch's reads of one region.
  s[0].steps[0].batchWithNext = false;
  ASSERT_TRUE(run(s, ranks).isOk());
  s = schedules({batch({send(1, 0, 4), send(2, 1, 2), copy(kIn, kOut, 0, 0, 4)}),
                 {recv(0, 0, 4)},
                 {recv(0, 0, 2)}});
  ranks = int32Ranks(3, 4, 4);
  ASSERT_TRUE(run(s, ranks).isOk());
  // Two writes race too, in place through the input/output alias as well.
  s = schedules({batch({recv(1, 0, 2), recv(1, 1, 2, kScr)}), {send(0, 0, 2), send(0, 0, 2)}});
  s[0].steps[1].dst = kOut;
  ranks = int32Ranks(2, 4, 4);
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "step 0 of 2 (recv, 2 elements) writes output elements [0, 2) and step 1 writes "
               "output elements [1, 3)");
  s = schedules({batch({send(1, 2, 2), recv(1, 3, 1)}), {recv(0, 0, 2), send(0, 0, 1)}});
  ranks = int32Ranks(2, 4, 4);
  ranks[0].output = ranks[0].input;
  ranks[0].inPlace = true;
  EXPECT_ERROR(run(s, ranks), braidInvalidUsage,
               "reads input elements [2, 4) and step 1 writes output elements [3, 4)");
}

}  // namespace
}  // namespace braid
