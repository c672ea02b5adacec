// The lowering of window schedules to the device windows (exec/cuda/window_lowering.h,
// window_program.h), beyond each collective's results (window_program_test.cc): calls of
// different collectives back to back, whose rounds and waits differ by rank, read only
// what their own call wrote; a broadcast's receivers wait for the root alone; a send
// buffer kernels cannot read is only copied from; schedules that cannot be lowered are
// refused; lowered calls are reused by shape; a round stays within its stream operations.
#include "exec/cuda/window_lowering.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "exec/cuda/window_program.h"
#include "tests/unit/exec/cuda/device_interpreter.h"

namespace braid {
namespace {

using algo::BufRef;
using algo::Collective;
using algo::OpKind;
using algo::Step;
using algo::WinFlag;
using Kind = DeviceOp::Kind;

constexpr size_t kHalf = 64;

struct Each {
  Collective coll;
  int root;
  bool twoShot;
};

// Every collective in turn on the same buffers (input and output of n * count int32),
// each of 3 rounds of 64-byte halves, roots moving; the last an all-reduce, whose sums
// are checked. The interpreter runs each rank as far as it can before the next, so a
// rank that refills a half a peer still reads (its own call's or the last one's) shows.
std::string runSequence(int n) {
  const uint64_t count = 40;
  const std::vector<Each> calls = {
      {Collective::kBroadcast, n - 1, false}, {Collective::kGather, 0, false},
      {Collective::kScatter, n / 2, false},   {Collective::kReduce, 1, false},
      {Collective::kAllToAll, 0, false},      {Collective::kAllGather, 0, false},
      {Collective::kBroadcast, 0, false},     {Collective::kAllReduce, 0, n >= 3},
      {Collective::kReduceScatter, 0, false}, {Collective::kAllReduce, 0, false}};
  std::vector<SimRank> ranks(n);
  test::DeviceState state;
  state.halfBytes = kHalf;
  state.barriers.assign(n, 5);
  std::vector<std::vector<DeviceOp>> programs;
  for (int r = 0; r < n; ++r) {
    ranks[r].input.resize(n * count * 4);
    for (uint64_t j = 0; j < n * count; ++j) {
      const int32_t x = static_cast<int32_t>((j * 5 + r * 11) % 23) - 11;
      std::memcpy(&ranks[r].input[j * 4], &x, 4);
    }
    ranks[r].output.assign(n * count * 4, 0xcb);
    WindowCounts counts{3, 5};
    WindowPlans plans;
    std::vector<DeviceOp> ops;
    state.calls.emplace_back();
    for (const Each& each : calls) {
      WindowCall call;
      call.collective = each.coll;
      call.count = count;
      call.elemSize = 4;
      call.root = each.root;
      call.twoShot = each.twoShot;
      Expected<WindowProgram> p = buildWindowCall(call, r, n, kHalf, &counts, 0, &plans);
      if (!p.isOk()) return p.status().message();
      ops.insert(ops.end(), p.value().ops.begin(), p.value().ops.end());
      state.calls.back().push_back(p.value().ops.size());
    }
    programs.push_back(std::move(ops));
  }
  Status st = test::DeviceInterpreter(braidInt32, braidSum, ranks, state).run(programs);
  if (!st.isOk()) return st.message();
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < count; ++i) {
      int32_t want = 0, got = 0;
      for (int q = 0; q < n; ++q) want += static_cast<int32_t>((i * 5 + q * 11) % 23) - 11;
      std::memcpy(&got, &ranks[r].output[i * 4], 4);
      if (got != want) return "rank " + std::to_string(r) + " element " + std::to_string(i);
    }
  }
  return "";
}

TEST(WindowLowering, CallsOfEveryCollectiveBackToBackReadOnlyTheirOwnCallsBytes) {
  for (int n = 2; n <= 8; ++n) EXPECT_EQ(runSequence(n), "") << n << " ranks";
}

// A receiver of a broadcast waits for the root's counter alone in its rounds, and for the
// other ranks' only at the end (their last round's flag, which the next call's first
// round would wait for); the root waits for every peer before it refills a half.
TEST(WindowLowering, ABroadcastsReceiversWaitForTheRootAlone) {
  WindowCall call;
  call.collective = Collective::kBroadcast;
  call.count = 40;  // 3 rounds
  call.elemSize = 4;
  call.root = 2;
  WindowCounts counts;
  const WindowProgram p = buildWindowCall(call, 0, 4, kHalf, &counts).value();
  size_t lastCopy = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].kind == Kind::kCopy) lastCopy = i;
  }
  int onRoot = 0, onOthers = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].kind != Kind::kWaitRank) continue;
    if (p.ops[i].from == 2) {
      ++onRoot;
    } else {
      ++onOthers;
      EXPECT_GT(i, lastCopy);
    }
  }
  EXPECT_EQ(onRoot, 3);
  EXPECT_EQ(onOthers, 2);
  WindowCounts rootCounts;
  int rootWaits = 0;
  const WindowProgram root = buildWindowCall(call, 2, 4, kHalf, &rootCounts).value();
  for (const DeviceOp& op : root.ops) {
    rootWaits += op.kind == Kind::kWaitRank;
  }
  EXPECT_EQ(rootWaits, 3 * 3);  // rounds 1 and 2 refill, and the end
}

// Out of place, a rank reads its own term from its input; from a send buffer kernels
// cannot read (host memory), it copies the input in and reduces from its half.
TEST(WindowLowering, ASendBufferKernelsCannotReadIsOnlyCopiedFrom) {
  WindowCall call;
  call.collective = Collective::kAllReduce;
  call.count = 40;
  call.elemSize = 4;
  for (bool device : {true, false}) {
    call.sendIsDevice = device;
    WindowCounts counts;
    int reads = 0;
    const WindowProgram p = buildWindowCall(call, 1, 3, kHalf, &counts).value();
    for (const DeviceOp& op : p.ops) {
      if (op.kind != Kind::kReduce) continue;
      for (int i = 0; i < op.nsrcs; ++i) reads += op.src[i].space == DeviceAddr::Space::kInput;
    }
    EXPECT_EQ(reads, device ? 3 : 0);
  }
}

Step step(OpKind op, BufRef src, BufRef dst, uint64_t count, WinFlag flag = WinFlag::kReady) {
  Step s{op, src, dst};
  s.count = count;
  s.flag = flag;
  s.writes = true;
  s.final = true;
  return s;
}

// Two ranks, one round: each puts 4 elements, signals kReady, waits, then reduces.
std::vector<algo::Schedule> twoRanks() {
  std::vector<algo::Schedule> all(2);
  for (int r = 0; r < 2; ++r) {
    all[r].rank = r;
    all[r].nranks = 2;
    all[r].windowed = true;
    all[r].steps = {step(OpKind::kBeginRound, BufRef::kNone, BufRef::kNone, 0),
                    step(OpKind::kPut, BufRef::kInput, BufRef::kWindowIn, 4),
                    step(OpKind::kSignal, BufRef::kNone, BufRef::kNone, 0),
                    step(OpKind::kWait, BufRef::kNone, BufRef::kNone, 0),
                    step(OpKind::kReducePeers, BufRef::kWindowIn, BufRef::kOutput, 4)};
  }
  return all;
}

TEST(WindowLowering, SchedulesThatCannotBeLoweredAreRefused) {
  LoweringLayout layout;
  layout.elemSize = 4;
  layout.areaBytes = kHalf;
  ASSERT_TRUE(lowerWindowSchedules(twoRanks(), 0, layout).isOk());
  // A wait for a flag the peer never raises.
  std::vector<algo::Schedule> all = twoRanks();
  all[1].steps[3].flag = WinFlag::kDone;
  EXPECT_FALSE(lowerWindowSchedules(all, 0, layout).isOk());
  // Ranks that disagree on the rounds.
  all = twoRanks();
  all[1].steps.push_back(step(OpKind::kBeginRound, BufRef::kNone, BufRef::kNone, 0));
  EXPECT_FALSE(lowerWindowSchedules(all, 0, layout).isOk());
  // A step beyond the area.
  all = twoRanks();
  all[0].steps[1].count = kHalf / 4 + 1;
  all[0].steps[4].count = kHalf / 4 + 1;
  EXPECT_FALSE(lowerWindowSchedules(all, 0, layout).isOk());
  // Rank 0's kWindowOut where rank 1 reads rank 0's kWindowIn: not in the same bytes.
  all = twoRanks();
  all[0].steps.insert(all[0].steps.begin() + 2,
                      step(OpKind::kPut, BufRef::kInput, BufRef::kWindowOut, 4));
  EXPECT_FALSE(windowOutMayAlias(all));
  EXPECT_FALSE(lowerWindowSchedules(all, 1, layout).isOk());
  layout.areaBytes = kHalf / 2;
  layout.outBytes = kHalf / 2;
  EXPECT_TRUE(lowerWindowSchedules(all, 1, layout).isOk());
}

// A shape seen before is not built again: the same operations, barrier values counting
// on from the caller's; the half the first round takes is part of the shape (3 rounds a
// call: the first and third calls start in the same half).
TEST(WindowLowering, ACallOfAShapeSeenBeforeReusesItsProgram) {
  WindowCall call;
  call.collective = Collective::kAllGather;
  call.count = 40;  // 3 rounds
  call.elemSize = 4;
  WindowPlans plans;
  WindowCounts counts{0, 0};
  const WindowProgram first = buildWindowCall(call, 1, 3, kHalf, &counts, 0, &plans).value();
  EXPECT_EQ(plans.size(), 1u);
  const WindowProgram second = buildWindowCall(call, 1, 3, kHalf, &counts, 0, &plans).value();
  EXPECT_EQ(plans.size(), 2u);  // its first round is the other half's
  const WindowProgram third = buildWindowCall(call, 1, 3, kHalf, &counts, 0, &plans).value();
  EXPECT_EQ(plans.size(), 2u);
  EXPECT_EQ(counts.barriers, 9u);
  ASSERT_EQ(first.ops.size(), third.ops.size());
  for (size_t i = 0; i < first.ops.size(); ++i) {
    EXPECT_EQ(first.ops[i].kind, third.ops[i].kind);
    EXPECT_EQ(first.ops[i].dst.slot, third.ops[i].dst.slot);
    if (first.ops[i].kind == Kind::kArrive || first.ops[i].kind == Kind::kWaitRank) {
      EXPECT_EQ(third.ops[i].value, first.ops[i].value + 6);
    }
  }
  EXPECT_NE(second.ops.size(), 0u);
}

// What a round may enqueue on the stream, each operation costing about a launch on the
// GPU: one barrier (two-shot: two, its pieces reduced, then gathered), a wait per peer
// for each, and at most one copy per block moved in plus one per block moved out (a
// reduction counting as one; through the scratch, one more).
struct Budget {
  int barriers, copies, reductions;
};

Budget budgetOf(Collective c, bool twoShot, int n, bool root, bool hostOutput) {
  const int h = hostOutput ? 1 : 0;
  switch (c) {
    case Collective::kAllReduce:
      return twoShot ? Budget{2, 1 + n, 1} : Budget{1, 1 + h, 1};
    case Collective::kReduceScatter:
      return {1, n + h, 1};
    case Collective::kReduce:
      return {1, 1 + (root ? h : 0), root ? 1 : 0};
    case Collective::kAllGather:
    case Collective::kAllToAll:
      return {1, (c == Collective::kAllToAll ? n : 1) + n, 0};
    case Collective::kBroadcast:
      return {1, root ? 2 : 1, 0};
    case Collective::kGather:
      return {1, root ? n : 1, 0};
    case Collective::kScatter:
      return {1, root ? n + 1 : 1, 0};
    default:
      return {0, 0, 0};
  }
}

TEST(WindowLowering, ARoundTakesNoMoreBarriersWaitsOrCopiesThanItsBudget) {
  constexpr size_t kBig = size_t{1} << 20;
  for (Collective coll : {Collective::kAllReduce, Collective::kAllGather,
                          Collective::kReduceScatter, Collective::kBroadcast, Collective::kAllToAll,
                          Collective::kReduce, Collective::kGather, Collective::kScatter}) {
    for (int n : {2, 4, 8}) {
      for (bool twoShot : {false, true}) {
        if (twoShot && (coll != Collective::kAllReduce || n < 3)) continue;
        for (bool hostOutput : {false, true}) {
          for (int rank : {0, 1}) {
            const bool blocks = coll == Collective::kReduceScatter ||
                                coll == Collective::kAllToAll || coll == Collective::kScatter;
            WindowCall call;
            call.collective = coll;
            call.elemSize = 4;
            call.twoShot = twoShot;
            call.recvIsDevice = !hostOutput;
            call.count = 8 * (blocks ? kBig / n / 64 * 64 : kBig) / 4;  // 8 rounds
            WindowCounts counts;
            const WindowProgram p = buildWindowCall(call, rank, n, kBig, &counts).value();
            ASSERT_EQ(counts.rounds, 8u);
            int arrives = 0, waits = 0, copies = 0, reductions = 0;
            for (const DeviceOp& op : p.ops) {
              arrives += op.kind == Kind::kArrive;
              waits += op.kind == Kind::kWaitRank;
              copies += op.kind == Kind::kCopy || op.kind == Kind::kScale;
              reductions += op.kind == Kind::kReduce;
            }
            const Budget b = budgetOf(coll, twoShot, n, rank == 0, hostOutput);
            const std::string what = std::string(algo::collectiveName(coll)) +
                                     " n=" + std::to_string(n) + " rank " + std::to_string(rank) +
                                     (twoShot ? " two-shot" : "") + (hostOutput ? " host" : "");
            EXPECT_EQ(arrives, 8 * b.barriers) << what;
            EXPECT_LE(waits, 8 * b.barriers * (n - 1)) << what;
            EXPECT_LE(copies, 8 * b.copies) << what;
            EXPECT_EQ(reductions, 8 * b.reductions) << what;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace braid
