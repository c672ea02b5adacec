// The device-independent parts of the staged path: which bytes of each call's buffers are
// staged (exec/cuda/device_call.h regionsOf, from braid.h's layouts, written out here by hand), and
// how overlapping regions merge (in-place layouts must stay one span). Runs everywhere.
#include <gtest/gtest.h>

#include <vector>

#include "exec/cuda/device_call.h"
#include "exec/cuda/staging.h"

namespace braid {
namespace {

using algo::Collective;

char gSend[1 << 16], gRecv[1 << 16];

Call collective(Collective c, size_t count, braidDataType_t t, int root = 0) {
  Call op;
  op.collective = c;
  op.send = gSend;
  op.recv = gRecv;
  op.count = count;
  op.datatype = t;
  op.root = root;
  return op;
}

// (send bytes, recv bytes) staged for `op` on rank `rank` of `nranks`.
std::pair<size_t, size_t> bytesOf(const Call& op, int rank, int nranks) {
  std::vector<StagedRegion> r = regionsOf(op, rank, nranks);
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].ptr, gSend);
  EXPECT_FALSE(r[0].written) << "the send buffer is never written";
  EXPECT_EQ(r[1].ptr, gRecv);
  EXPECT_TRUE(r[1].written);
  return {r[0].bytes, r[1].bytes};
}

TEST(StagedRegions, EveryCollectiveStagesWhatBraidHLaysOut) {
  using P = std::pair<size_t, size_t>;
  const int n = 4;
  const size_t k = 10;  // float32: 40 bytes per block, 160 for all ranks
  struct Case {
    Collective c;
    int root;
    int rank;
    P want;
  };
  const Case cases[] = {
      {Collective::kAllReduce, 0, 1, {40, 40}},     {Collective::kAllGather, 0, 1, {40, 160}},
      {Collective::kReduceScatter, 0, 1, {160, 40}}, {Collective::kAllToAll, 0, 1, {160, 160}},
      {Collective::kBroadcast, 2, 2, {40, 40}},     {Collective::kBroadcast, 2, 1, {0, 40}},
      {Collective::kReduce, 3, 3, {40, 40}},        {Collective::kReduce, 3, 0, {40, 0}},
      {Collective::kGather, 1, 1, {40, 160}},       {Collective::kGather, 1, 2, {40, 0}},
      {Collective::kScatter, 0, 0, {160, 40}},      {Collective::kScatter, 0, 3, {0, 40}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(bytesOf(collective(c.c, k, braidFloat32, c.root), c.rank, n), c.want)
        << algo::collectiveName(c.c) << " root " << c.root << " rank " << c.rank;
  }
  // Element sizes: float8 is one byte, float64 eight.
  EXPECT_EQ(bytesOf(collective(Collective::kAllReduce, k, braidFloat8e5m2), 0, n), P(10, 10));
  EXPECT_EQ(bytesOf(collective(Collective::kAllGather, k, braidFloat64), 0, n), P(80, 320));
}

TEST(StagedRegions, AllToAllvStagesUpToTheFurthestBlock) {
  Call op = collective(Collective::kAllToAllv, 0, braidInt32);
  op.sendCounts = {3, 0, 5};
  op.sendDispls = {10, 0, 2};  // furthest end: 10 + 3 = 13 elements
  op.recvCounts = {1, 4, 0};
  op.recvDispls = {0, 20, 100};  // a zero count does not extend it: 20 + 4 = 24
  EXPECT_EQ(bytesOf(op, 1, 3), std::make_pair(size_t{13 * 4}, size_t{24 * 4}));
}

TEST(StagedRegions, SendAndReceiveStageTheirOwnBuffer) {
  Call send;
  send.kind = Call::Kind::kSend;
  send.send = gSend;
  send.count = 7;
  send.datatype = braidInt64;
  std::vector<StagedRegion> s = regionsOf(send, 0, 2);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].ptr, gSend);
  EXPECT_EQ(s[0].bytes, 56u);
  EXPECT_FALSE(s[0].written);
  Call recv = send;
  recv.kind = Call::Kind::kRecv;
  recv.send = nullptr;
  recv.recv = gRecv;
  std::vector<StagedRegion> r = regionsOf(recv, 0, 2);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].ptr, gRecv);
  EXPECT_EQ(r[0].bytes, 56u);
  EXPECT_TRUE(r[0].written);
}

TEST(StagedSpans, OverlappingRegionsMergeAndOthersStayApart) {
  char* b = gRecv;
  auto at = [b](size_t off) { return reinterpret_cast<uintptr_t>(b + off); };
  // An in-place all-gather on rank 2 of 4: send is block 2 inside recv; a separate buffer
  // after a gap; a region that only touches the end of another (not overlapping); an empty one.
  std::vector<StagedRegion> regions = {
      {b + 1000, 100, false}, {b + 80, 40, false}, {b, 160, true},
      {b + 160, 8, false},    {b + 500, 0, true}};
  std::vector<StagedSpan> spans = mergeOverlapping(regions);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].start, at(0));
  EXPECT_EQ(spans[0].bytes, 160u);
  EXPECT_EQ(spans[1].start, at(160));
  EXPECT_EQ(spans[1].bytes, 8u);
  EXPECT_EQ(spans[2].start, at(1000));
  EXPECT_EQ(spans[2].bytes, 100u);
  // A region reaching past the one it starts in extends the span.
  spans = mergeOverlapping({{b, 100, false}, {b + 50, 100, true}, {b + 149, 10, false}});
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].bytes, 159u);
}

}  // namespace
}  // namespace braid
