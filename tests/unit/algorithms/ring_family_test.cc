// Ring all-gather, reduce-scatter, broadcast and reduce (algorithms/ring) run
// through the simulator checker (coll_check.h), whose expected values come from
// tests/common/reference.h: nranks 1..17, 32 and 64, odd counts and counts around
// nranks, step sizes from 1 element up, in place and out of place, every root
// kind, every datatype and op, FIFOs of one message for the chains. Besides the
// results, the schedules' shapes are checked directly: ring neighbours only,
// steps within maxStepElems, rounds of the expected steps, and in place no input
// element read after the output aliasing it was written.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/ring/ring.h"
#include "coll_check.h"

namespace braid::test {
namespace {

using algo::BufRef;
using algo::Collective;
using algo::OpKind;
using algo::Schedule;
using algo::Step;

constexpr Collective kFamily[] = {Collective::kAllGather, Collective::kReduceScatter,
                                  Collective::kBroadcast, Collective::kReduce};
constexpr braidDataType_t kTypes[] = {braidInt8,    braidUint8,   braidInt32,   braidUint32,
                                      braidInt64,   braidUint64,  braidFloat16, braidFloat32,
                                      braidFloat64, braidBfloat16};
constexpr braidRedOp_t kOps[] = {braidSum, braidProd, braidMax, braidMin, braidAvg};

using BuildFn = Schedule (*)(const algo::CollArgs&);

BuildFn ringFor(Collective c) {
  switch (c) {
    case Collective::kAllGather:
      return algo::ringAllGather;
    case Collective::kReduceScatter:
      return algo::ringReduceScatter;
    case Collective::kBroadcast:
      return algo::ringBroadcast;
    default:
      return algo::ringReduce;
  }
}

bool isChain(Collective c) { return c == Collective::kBroadcast || c == Collective::kReduce; }

std::vector<int> rootsFor(Collective c, int n) {
  if (!isChain(c)) return {0};
  std::vector<int> roots = {0, n / 2, n - 1};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

int mod(int x, int n) { return ((x % n) + n) % n; }

algo::CollArgs argsOf(const CheckCase& c, int r) {
  algo::CollArgs a;
  a.collective = c.collective;
  a.rank = r;
  a.nranks = c.nranks;
  a.count = c.count;
  a.elemSize = static_cast<uint32_t>(elemSize(c.datatype));
  a.inPlace = c.inPlace;
  a.root = c.root;
  a.maxStepElems = c.maxStepElems;
  return a;
}

// Where element 0 of the input and of the output lie in one rank's storage
// when in place (NCCL's layouts, as in schedule.h).
void inPlaceBases(const CheckCase& c, int r, uint64_t* in, uint64_t* out) {
  *in = c.collective == Collective::kAllGather ? r * c.count : 0;
  *out = c.collective == Collective::kReduceScatter ? r * c.count : 0;
}

// Structural problems of rank r's schedule, independent of the data: a peer
// that is not a ring neighbour, a step over maxStepElems, and (in place) an
// input element read after a write to the output element aliasing it. A step
// reads before it writes, so reading and writing the same element is fine.
std::string shapeProblems(const CheckCase& c, int r) {
  const Schedule s = ringFor(c.collective)(argsOf(c, r));
  const int n = c.nranks;
  uint64_t inBase = 0, outBase = 0;
  inPlaceBases(c, r, &inBase, &outBase);
  std::vector<bool> clobbered(c.inPlace ? c.count * n : 0);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    const std::string at = "rank " + std::to_string(r) + " step " + std::to_string(i) + ": ";
    if (st.sendPeer != -1 && st.sendPeer != mod(r + 1, n)) return at + "sends to a non-neighbour";
    if (st.recvPeer != -1 && st.recvPeer != mod(r - 1, n)) return at + "recvs from a non-neighbour";
    if (n > 1 && st.count > c.maxStepElems) return at + "count over maxStepElems";
    if (!c.inPlace || st.count == 0) continue;
    for (uint64_t j = 0; j < st.count && st.src == BufRef::kInput; ++j) {
      if (clobbered.at(inBase + st.srcOffset + j)) return at + "reads an overwritten input element";
    }
    // A plain copy onto itself (the executor skips it) changes nothing.
    const bool noop = st.op == OpKind::kCopy && !st.final && st.src == BufRef::kInput &&
                      inBase + st.srcOffset == outBase + st.dstOffset;
    for (uint64_t j = 0; j < st.count && st.dst == BufRef::kOutput && !noop; ++j) {
      clobbered.at(outBase + st.dstOffset + j) = true;
    }
  }
  return "";
}

// Checks results through the simulator and every rank's shape.
void expectRight(const CheckCase& c) {
  SCOPED_TRACE(c.describe());
  EXPECT_EQ(checkCollective(ringFor(c.collective), c), "");
  for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(shapeProblems(c, r), "");
}

class RingFamilySweep : public ::testing::TestWithParam<std::tuple<Collective, bool>> {};

// Every nranks up to 17: counts 0, 1, around nranks and odd larger ones; step
// sizes that cut blocks into many pieces only where that stays fast.
TEST_P(RingFamilySweep, SmallRingsManyCounts) {
  const auto [coll, inPlace] = GetParam();
  for (int n = 1; n <= 17; ++n) {
    std::vector<uint64_t> counts = {0, 1, uint64_t(n - 1), uint64_t(n + 1), 1009};
    // The reference costs n^2 to n^3 per element: the largest count on a few rings.
    if (n <= 3 || n == 8 || n == 17) counts.push_back(20011);
    for (uint64_t count : counts) {
      std::vector<uint64_t> steps = {64, 1 << 16};
      if (count <= 1009) steps.push_back(3);
      if (count < 1009) steps.push_back(1);
      for (uint64_t maxStep : steps) {
        for (int root : rootsFor(coll, n)) {
          CheckCase c;
          c.collective = coll;
          c.nranks = n;
          c.count = count;
          c.root = root;
          c.inPlace = inPlace;
          c.maxStepElems = maxStep;
          expectRight(c);
        }
      }
    }
  }
}

// Large rings with few counts.
TEST_P(RingFamilySweep, LargeRings) {
  const auto [coll, inPlace] = GetParam();
  for (int n : {32, 64}) {
    for (uint64_t count : {uint64_t{1}, uint64_t(n - 1), uint64_t(n + 1), uint64_t(8 * n + 5)}) {
      for (uint64_t maxStep : {uint64_t{3}, uint64_t{1} << 16}) {
        for (int root : rootsFor(coll, n)) {
          CheckCase c;
          c.collective = coll;
          c.nranks = n;
          c.count = count;
          c.root = root;
          c.inPlace = inPlace;
          c.maxStepElems = maxStep;
          expectRight(c);
        }
      }
    }
  }
}

// Every datatype, and every op for the reducing collectives (the others carry
// data unchanged, so the op does not matter to them).
TEST_P(RingFamilySweep, EveryDatatypeAndOp) {
  const auto [coll, inPlace] = GetParam();
  const bool reduces = coll == Collective::kReduceScatter || coll == Collective::kReduce;
  for (auto [n, count, maxStep] : {std::tuple{3, 13, 4}, std::tuple{6, 1009, 64}}) {
    for (braidDataType_t type : kTypes) {
      for (braidRedOp_t op : kOps) {
        if (!reduces && op != braidSum) continue;
        for (int root : rootsFor(coll, n)) {
          CheckCase c;
          c.collective = coll;
          c.nranks = n;
          c.count = count;
          c.datatype = type;
          c.op = op;
          c.root = root;
          c.inPlace = inPlace;
          c.maxStepElems = maxStep;
          expectRight(c);
        }
      }
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<RingFamilySweep::ParamType>& info) {
  return std::string(algo::collectiveName(std::get<0>(info.param))) +
         (std::get<1>(info.param) ? "InPlace" : "OutOfPlace");
}

INSTANTIATE_TEST_SUITE_P(Ring, RingFamilySweep,
                         ::testing::Combine(::testing::ValuesIn(kFamily), ::testing::Bool()),
                         paramName);

Schedule build(Collective coll, int n, int r, uint64_t count, uint64_t maxStep,
               bool inPlace = false, int root = 0) {
  CheckCase c;
  c.collective = coll;
  c.nranks = n;
  c.count = count;
  c.maxStepElems = maxStep;
  c.inPlace = inPlace;
  c.root = root;
  return ringFor(coll)(argsOf(c, r));
}

// How often each output element is written, by steps with dst kOutput.
std::vector<int> outputWrites(const Schedule& s, uint64_t outputElems) {
  std::vector<int> writes(outputElems);
  for (const Step& st : s.steps) {
    if (st.dst != BufRef::kOutput) continue;
    for (uint64_t j = 0; j < st.count; ++j) ++writes.at(st.dstOffset + j);
  }
  return writes;
}

// 23 elements in steps of 4: six rounds (the last of 3), each a copy of the
// rank's own piece, its send, and n - 1 receives of the blocks r-1, r-2, ...
TEST(RingFamilyShape, AllGatherRounds) {
  const int n = 5;
  const uint64_t count = 23;
  for (int r = 0; r < n; ++r) {
    const Schedule s = build(Collective::kAllGather, n, r, count, 4);
    ASSERT_EQ(s.steps.size(), 6u * (n + 1));
    for (size_t q = 0; q < 6; ++q) {
      const Step* round = &s.steps[q * (n + 1)];
      const uint64_t w = q * 4, len = q == 5 ? 3 : 4;
      EXPECT_EQ(round[0].op, OpKind::kCopy);
      EXPECT_EQ(round[0].dstOffset, r * count + w);
      EXPECT_EQ(round[1].op, OpKind::kSend);
      EXPECT_EQ(round[1].src, BufRef::kInput);
      EXPECT_EQ(round[1].srcOffset, w);
      for (int k = 1; k < n; ++k) {
        EXPECT_EQ(round[k + 1].op, k < n - 1 ? OpKind::kRecvCopySend : OpKind::kRecv);
        EXPECT_EQ(round[k + 1].dstOffset, mod(r - k, n) * count + w);
      }
      for (int k = 0; k <= n; ++k) EXPECT_EQ(round[k].count, len);
    }
    for (int w : outputWrites(s, n * count)) EXPECT_EQ(w, 1);
    // In place the rank's own block is already there: no copy, never written.
    const Schedule inPlace = build(Collective::kAllGather, n, r, count, 4, true);
    EXPECT_EQ(inPlace.steps.size(), 6u * n);
    std::vector<int> writes = outputWrites(inPlace, n * count);
    for (uint64_t j = 0; j < n * count; ++j) EXPECT_EQ(writes[j], j / count == uint64_t(r) ? 0 : 1);
  }
}

// Ten elements in steps of 3: four rounds of n steps; the round's last step
// reduces input block r into the output window, finalised.
TEST(RingFamilyShape, ReduceScatterRounds) {
  const int n = 4;
  const uint64_t count = 10;
  for (int r = 0; r < n; ++r) {
    const Schedule s = build(Collective::kReduceScatter, n, r, count, 3);
    ASSERT_EQ(s.steps.size(), 4u * n);
    for (size_t q = 0; q < 4; ++q) {
      const Step* round = &s.steps[q * n];
      const uint64_t w = q * 3;
      std::vector<bool> blockRead(n);
      for (int k = 0; k < n; ++k) {
        const OpKind want = k == 0      ? OpKind::kSend
                            : k < n - 1 ? OpKind::kRecvReduceSend
                                        : OpKind::kRecvReduce;
        EXPECT_EQ(round[k].op, want);
        EXPECT_EQ(round[k].src, BufRef::kInput);
        EXPECT_EQ(round[k].srcOffset % count, w);
        EXPECT_EQ(round[k].count, q == 3 ? 1u : 3u);
        EXPECT_EQ(round[k].final, k == n - 1);
        blockRead[round[k].srcOffset / count] = true;
      }
      EXPECT_EQ(round[n - 1].srcOffset, r * count + w);
      EXPECT_EQ(round[n - 1].dst, BufRef::kOutput);
      EXPECT_EQ(round[n - 1].dstOffset, w);
      EXPECT_EQ(std::count(blockRead.begin(), blockRead.end(), true), n);
    }
    for (int w : outputWrites(s, count)) EXPECT_EQ(w, 1);
  }
}

// Root 2 of 4, ten elements in pieces of 3: root sends (and copies), 3 and 0
// forward, 1 ends the chain; only the root reads its input.
TEST(RingFamilyShape, BroadcastChain) {
  const int n = 4, root = 2;
  const OpKind want[] = {OpKind::kRecvCopySend, OpKind::kRecv, OpKind::kSend,
                         OpKind::kRecvCopySend};
  for (int r = 0; r < n; ++r) {
    const Schedule s = build(Collective::kBroadcast, n, r, 10, 3, false, root);
    ASSERT_EQ(s.steps.size(), r == root ? 8u : 4u);
    for (const Step& st : s.steps) {
      if (st.op == OpKind::kCopy) continue;
      EXPECT_EQ(st.op, want[r]);
      EXPECT_EQ(st.src == BufRef::kInput, r == root);
    }
    for (int w : outputWrites(s, 10)) EXPECT_EQ(w, 1);
  }
  EXPECT_EQ(build(Collective::kBroadcast, n, root, 10, 3, true, root).steps.size(), 4u);
}

// Root 2 of 4: 3 starts, 0 and 1 add their part, the root finishes; only the
// root writes its output.
TEST(RingFamilyShape, ReduceChain) {
  const int n = 4, root = 2;
  const OpKind want[] = {OpKind::kRecvReduceSend, OpKind::kRecvReduceSend, OpKind::kRecvReduce,
                         OpKind::kSend};
  for (int r = 0; r < n; ++r) {
    const Schedule s = build(Collective::kReduce, n, r, 10, 3, false, root);
    ASSERT_EQ(s.steps.size(), 4u);
    for (const Step& st : s.steps) {
      EXPECT_EQ(st.op, want[r]);
      EXPECT_EQ(st.final, r == root);
    }
    std::vector<int> writes = outputWrites(s, 10);
    EXPECT_EQ(std::count(writes.begin(), writes.end(), 1), r == root ? 10 : 0);
  }
}

// One rank: one copy, finalised for the reducing collectives; nothing at all
// for zero elements.
TEST(RingFamilyShape, OneRankAndNoElements) {
  for (Collective coll : kFamily) {
    SCOPED_TRACE(algo::collectiveName(coll));
    const Schedule s = build(coll, 1, 0, 100, 7);
    ASSERT_EQ(s.steps.size(), 1u);
    EXPECT_EQ(s.steps[0].op, OpKind::kCopy);
    EXPECT_EQ(s.steps[0].count, 100u);
    EXPECT_EQ(s.steps[0].final,
              !(coll == Collective::kAllGather || coll == Collective::kBroadcast));
    EXPECT_TRUE(build(coll, 5, 3, 0, 7).steps.empty());
  }
}

// A chain has no cycle, so it pipelines through FIFOs of one message, with any root.
TEST(RingFamily, ChainsRunWithOneMessageFifos) {
  for (Collective coll : {Collective::kBroadcast, Collective::kReduce}) {
    for (int n : {2, 3, 5, 17}) {
      for (int root = 0; root < n; ++root) {
        for (bool inPlace : {false, true}) {
          CheckCase c;
          c.collective = coll;
          c.nranks = n;
          c.count = 1009;
          c.root = root;
          c.inPlace = inPlace;
          c.maxStepElems = 7;
          c.fifoMessages = 1;
          expectRight(c);
        }
      }
    }
  }
}

// The rings, like ring all-reduce, need FIFOs of two messages from three ranks
// on (every rank sends before any receives); two ranks exchange and manage
// with one. The simulator must say so rather than hang or pass.
TEST(RingFamily, RingsNeedTwoMessageFifos) {
  for (Collective coll : {Collective::kAllGather, Collective::kReduceScatter}) {
    CheckCase c;
    c.collective = coll;
    c.count = 100;
    c.maxStepElems = 8;
    c.fifoMessages = 1;
    c.nranks = 2;
    expectRight(c);
    c.nranks = 3;
    SCOPED_TRACE(c.describe());
    EXPECT_NE(checkCollective(ringFor(coll), c).find("deadlock"), std::string::npos);
  }
}

}  // namespace
}  // namespace braid::test
