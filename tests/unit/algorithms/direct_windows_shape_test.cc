// The direct family's window schedules, step by step: the layout each one must keep
// (rounds, slots, pieces, which puts, which waits, lending) because the host windows'
// speed depends on it. Their results are checked by the windows' simulator
// (direct_windows_test.cc).
#include <gtest/gtest.h>

#include "algorithms/direct/direct.h"
#include "algorithms/registry.h"

namespace braid::algo {
namespace {

CollArgs args(Collective c, int rank, int n, uint64_t count, uint64_t windowElems) {
  CollArgs a;
  a.collective = c;
  a.rank = rank;
  a.nranks = n;
  a.count = count;
  a.elemSize = 4;
  a.windowElems = windowElems;
  return a;
}

int countOf(const Schedule& s, OpKind op) {
  int k = 0;
  for (const Step& st : s.steps) k += st.op == op;
  return k;
}

std::vector<Step> stepsOf(const Schedule& s, OpKind op) {
  std::vector<Step> v;
  for (const Step& st : s.steps) {
    if (st.op == op) v.push_back(st);
  }
  return v;
}

TEST(DirectWindowsShape, OneShotRoundsAreWholeAreasAndTheLastIsPartial) {
  // 2.5 areas: three rounds, the last of half an area.
  const Schedule s = windowAllReduce(args(Collective::kAllReduce, 1, 3, 2500, 1000), false);
  EXPECT_TRUE(s.windowed);
  EXPECT_TRUE(s.lendsInput);
  EXPECT_FALSE(s.lendsOutput);
  EXPECT_EQ(countOf(s, OpKind::kBeginRound), 3);
  const std::vector<Step> red = stepsOf(s, OpKind::kReducePeers);
  ASSERT_EQ(red.size(), 3u);
  EXPECT_EQ(red[2].dstOffset, 2000u);
  EXPECT_EQ(red[2].count, 500u);
  EXPECT_EQ(red[2].bufOffset, 2000u);
  EXPECT_TRUE(red[2].ownFromBuffer);  // out of place: its own term from its input
  EXPECT_TRUE(red[2].final);
  EXPECT_EQ(countOf(s, OpKind::kSignal), 6);  // ready and finished per round
}

TEST(DirectWindowsShape, TwoShotOutOfPlacePutsOnlyPeersPiecesInWholeLines) {
  // 1000 floats over 3 ranks: pieces of 336 (21 lines), 336, 328.
  const Schedule s = windowAllReduce(args(Collective::kAllReduce, 1, 3, 1000, 4096), true);
  EXPECT_TRUE(s.lendsInput);
  EXPECT_TRUE(s.lendsOutput);
  const std::vector<Step> puts = stepsOf(s, OpKind::kPut);
  ASSERT_EQ(puts.size(), 3u);  // pieces 0 and 2 in, own piece out
  EXPECT_EQ(puts[0].srcOffset, 0u);
  EXPECT_EQ(puts[0].count, 336u);
  EXPECT_EQ(puts[1].srcOffset, 672u);
  EXPECT_EQ(puts[1].count, 328u);
  EXPECT_EQ(puts[2].src, BufRef::kOutput);
  EXPECT_EQ(puts[2].dst, BufRef::kWindowOut);
  EXPECT_EQ(puts[2].dstOffset, 336u);
  const std::vector<Step> waits = stepsOf(s, OpKind::kWait);
  ASSERT_EQ(waits.size(), 3u);  // every ready, then each peer's done (2 then 0)
  EXPECT_EQ(waits[0].recvPeer, -1);
  EXPECT_EQ(waits[1].recvPeer, 2);
  EXPECT_EQ(waits[1].flag, WinFlag::kDone);
  EXPECT_EQ(waits[2].recvPeer, 0);
  EXPECT_EQ(windowPieceElems(1000, 3, 4), 336u);
  EXPECT_EQ(windowPieceElems(10, 3, 4), 16u);  // one line each; the third piece is empty
}

TEST(DirectWindowsShape, TwoShotInPlaceOrScaledPutsEverythingAndLendsNothing) {
  for (const bool inPlace : {true, false}) {
    CollArgs a = args(Collective::kAllReduce, 0, 4, 1000, 4096);
    a.inPlace = inPlace;
    a.scaledPut = !inPlace;
    const Schedule s = windowAllReduce(a, true);
    EXPECT_FALSE(s.lendsInput);
    EXPECT_FALSE(s.lendsOutput);
    const std::vector<Step> puts = stepsOf(s, OpKind::kPut);
    ASSERT_FALSE(puts.empty());
    EXPECT_EQ(puts[0].count, 1000u);
    for (const Step& st : stepsOf(s, OpKind::kReducePeers)) EXPECT_FALSE(st.ownFromBuffer);
  }
}

TEST(DirectWindowsShape, BlockSlotsAreAreaOverRanksRoundedDownToLines) {
  // 1 MiB areas of floats over 3 ranks: 349504 bytes a slot (87376 floats).
  CollArgs a = args(Collective::kReduceScatter, 2, 3, 100000, (1 << 20) / 4);
  EXPECT_EQ(windowSlotElems(a), 87376u);
  const Schedule s = windowReduceScatter(a);
  EXPECT_EQ(countOf(s, OpKind::kBeginRound), 2);
  const std::vector<Step> puts = stepsOf(s, OpKind::kPut);
  ASSERT_EQ(puts.size(), 4u);  // blocks 0 and 1, two rounds; its own from its input
  EXPECT_EQ(puts[1].srcOffset, 100000u);
  EXPECT_EQ(puts[1].dstOffset, 87376u);
  const std::vector<Step> red = stepsOf(s, OpKind::kReducePeers);
  ASSERT_EQ(red.size(), 2u);
  EXPECT_EQ(red[1].srcOffset, 2u * 87376);
  EXPECT_EQ(red[1].bufOffset, 200000u + 87376);
  EXPECT_EQ(red[1].count, 100000u - 87376);
}

TEST(DirectWindowsShape, AllGatherWaitsPeerByPeerAndCopiesItsOwnBlockFirst) {
  const Schedule s = windowAllGather(args(Collective::kAllGather, 1, 3, 10, 4096));
  EXPECT_TRUE(s.lendsInput);
  ASSERT_EQ(s.steps.size(), 9u);
  EXPECT_EQ(s.steps[3].op, OpKind::kCopy);
  EXPECT_EQ(s.steps[3].dstOffset, 10u);
  EXPECT_EQ(s.steps[4].op, OpKind::kWait);
  EXPECT_EQ(s.steps[4].recvPeer, 2);
  EXPECT_EQ(s.steps[5].op, OpKind::kCopyPeer);
  EXPECT_EQ(s.steps[5].dstOffset, 20u);
  EXPECT_EQ(s.steps[6].recvPeer, 0);
  EXPECT_EQ(s.steps[8].flag, WinFlag::kFinished);
}

TEST(DirectWindowsShape, BroadcastRootAloneWritesAndLends) {
  CollArgs a = args(Collective::kBroadcast, 0, 3, 10, 4096);
  a.root = 1;
  const Schedule other = windowBroadcast(a);
  EXPECT_FALSE(other.steps[0].writes);
  EXPECT_FALSE(other.lendsInput);
  EXPECT_EQ(countOf(other, OpKind::kPut), 0);
  a.rank = 1;
  const Schedule root = windowBroadcast(a);
  EXPECT_TRUE(root.steps[0].writes);
  EXPECT_TRUE(root.lendsInput);
  EXPECT_EQ(countOf(root, OpKind::kWait), 0);
}

TEST(DirectWindowsShape, RegistryBuildsEveryWindowCollective) {
  EXPECT_TRUE(supportsWindows(Algorithm::kTwoShot, Collective::kAllReduce));
  EXPECT_FALSE(supportsWindows(Algorithm::kTwoShot, Collective::kAllGather));
  EXPECT_TRUE(supportsWindows(Algorithm::kPairwise, Collective::kAllToAll));
  EXPECT_FALSE(supportsWindows(Algorithm::kPairwise, Collective::kAllToAllv));
  EXPECT_TRUE(supportsWindows(Algorithm::kLinear, Collective::kGather));
  EXPECT_TRUE(supportsWindows(Algorithm::kDirect, Collective::kReduce));
  EXPECT_FALSE(supportsWindows(Algorithm::kRing, Collective::kAllReduce));
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kBroadcast, Collective::kReduce, Collective::kGather,
                       Collective::kScatter, Collective::kAllToAll}) {
    const Algorithm alg = windowAlgorithm(c);
    EXPECT_TRUE(supportsWindows(alg, c)) << collectiveName(c);
    const Schedule s = buildWindowSchedule(alg, args(c, 0, 2, 100, 4096));
    EXPECT_TRUE(s.windowed) << collectiveName(c);
    EXPECT_EQ(s.steps.front().op, OpKind::kBeginRound) << collectiveName(c);
  }
}

}  // namespace
}  // namespace braid::algo
