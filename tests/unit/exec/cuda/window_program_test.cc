// The device windows' collectives (exec/cuda/window_program.h), checked on the host: every
// rank's program for a call runs in the device interpreter (tests/unit/exec/
// device_interpreter.h) with halves of 64 bytes, so calls go in many rounds, starting
// from an odd round and an arbitrary barrier count. Every collective the windows run, at
// 2 to 8 ranks, in and out of place, one-shot and two-shot, with the receive buffer in
// device or in host memory (kernels must then not write it), gives the reference's result.
#include "exec/cuda/window_program.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>

#include "algorithms/builder.h"
#include "exec/reduce.h"
#include "tests/unit/algorithms/coll_check.h"
#include "tests/unit/exec/cuda/device_interpreter.h"

namespace braid {
namespace {

using algo::Collective;
using Kind = DeviceOp::Kind;

constexpr size_t kHalf = 64;
constexpr size_t kGraph = 128;  // the graph region, where captured calls that fit it run

// Runs case c through the windows: twoShot for all-reduce, and receive buffers in host
// memory on the ranks `hostOutput` says; out of place three times in a row (each call
// writes the same result, and reads only what its own call wrote: the interpreter tags
// every byte of the halves). `captured`: as a call captured into a CUDA graph (flag
// barriers; in the graph region when it fits); out of place it runs as graphs would be
// used, replayed between ordinary calls: captured, ordinary, captured, captured in the
// halves (as if it were larger than the region), captured, captured.
test::RunFn windows(const test::CheckCase& c, bool twoShot, bool hostOutput,
                    bool captured = false) {
  return [c, twoShot, hostOutput, captured](const std::vector<algo::Schedule>&,
                                            braidDataType_t type, braidRedOp_t op,
                                            std::vector<SimRank>& ranks, const SimOptions&) {
    const int n = c.nranks;
    test::DeviceState state;
    state.halfBytes = kHalf;
    state.graphBytes = kGraph;
    state.barriers.assign(n, 5);
    std::vector<std::vector<DeviceOp>> programs;
    // Each call: captured, and the graph region it may use.
    using Call = std::pair<bool, size_t>;
    const std::vector<Call> sequence =
        c.inPlace   ? std::vector<Call>{{captured, kGraph}}
        : !captured ? std::vector<Call>{{false, kGraph}, {false, kGraph}, {false, kGraph}}
                    : std::vector<Call>{{true, kGraph}, {false, kGraph}, {true, kGraph},
                                        {true, 0},      {true, kGraph},  {true, kGraph}};
    for (int r = 0; r < n; ++r) {
      WindowCall call;
      call.collective = c.collective;
      call.count = c.count;
      call.elemSize = datatypeSize(type);
      call.root = c.root;
      call.twoShot = twoShot;
      call.recvIsDevice = !(hostOutput && r % 2 == 0);
      WindowCounts counts{3, 5};
      std::vector<DeviceOp> ops;
      size_t scratch = 0;
      state.calls.emplace_back();
      for (const Call& each : sequence) {
        call.captured = each.first;
        WindowProgram p = buildWindowCall(call, r, n, kHalf, &counts, each.second).value();
        ops.insert(ops.end(), p.ops.begin(), p.ops.end());
        state.calls.back().push_back(p.ops.size());
        scratch = std::max(scratch, p.scratchBytes);
      }
      programs.push_back(std::move(ops));
      state.scratchBytes.push_back(scratch);
      state.outputIsHost.push_back(!call.recvIsDevice);
    }
    return test::DeviceInterpreter(type, op, ranks, state).run(programs);
  };
}

// Premul-sum cases: integer-valued data and scalars, so sums are exact in int32 and float32.
int premulValue(int q, uint64_t j) { return static_cast<int>((j * 7 + q * 3) % 41) - 20; }
int premulScalar(int q) { return q % 3 + 2; }  // never 1, rank 0's included

void putValue(braidDataType_t type, uint8_t* at, int x) {
  if (type == braidInt32) {
    const int32_t y = x;
    std::memcpy(at, &y, 4);
  } else {
    const float y = static_cast<float>(x);
    std::memcpy(at, &y, 4);
  }
}

// Runs `coll` with a premul-sum through the windows (every rank's input times its own
// scalar, summed) and returns "" or what differs from the sums computed here.
std::string runPremul(Collective coll, braidDataType_t type, int n, uint64_t count, bool inPlace,
                      bool twoShot, bool hostOutput) {
  const int root = n - 1;
  const bool scatters = coll == Collective::kReduceScatter;
  const uint64_t inElems = scatters ? count * n : count;
  std::vector<SimRank> ranks(n);
  test::DeviceState state;
  state.halfBytes = kHalf;
  state.barriers.assign(n, 5);
  std::vector<std::vector<DeviceOp>> programs;
  for (int r = 0; r < n; ++r) {
    std::vector<uint8_t> input(inElems * 4);
    for (uint64_t j = 0; j < inElems; ++j) putValue(type, &input[j * 4], premulValue(r, j));
    SimRank& sr = ranks[r];
    if (inPlace) {  // the input is the receive buffer (reduce-scatter: its block r)
      sr.output = input;
      sr.inPlace = true;
      sr.outputOffset = scatters ? r * count : 0;
      sr.outputElems = scatters ? count : 0;
    } else {
      sr.input = input;
      sr.output.assign(count * 4, 0xcb);
    }
    std::array<unsigned char, 8> scalar{};
    putValue(type, scalar.data(), premulScalar(r));
    state.scalars.push_back(scalar);
    WindowCall call;
    call.collective = coll;
    call.count = count;
    call.elemSize = 4;
    call.root = root;
    call.twoShot = twoShot;
    call.recvIsDevice = !(hostOutput && r % 2 == 0);
    call.scaleInput = true;
    WindowCounts counts{3, 5};
    WindowProgram p = buildWindowCall(call, r, n, kHalf, &counts).value();
    programs.push_back(std::move(p.ops));
    state.scratchBytes.push_back(p.scratchBytes);
    state.outputIsHost.push_back(!call.recvIsDevice);
  }
  Status st = test::DeviceInterpreter(type, braidSum, ranks, state).run(programs);
  if (!st.isOk()) return st.message();
  for (int r = 0; r < n; ++r) {
    if (coll == Collective::kReduce && r != root) continue;
    const SimRank& sr = ranks[r];
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t j = scatters ? r * count + i : i;
      int sum = 0;
      for (int q = 0; q < n; ++q) sum += premulScalar(q) * premulValue(q, j);
      uint8_t want[4];
      putValue(type, want, sum);
      if (std::memcmp(want, &sr.output[(sr.outputOffset + i) * 4], 4) != 0) {
        return "rank " + std::to_string(r) + " element " + std::to_string(i) + " is not " +
               std::to_string(sum);
      }
    }
  }
  return "";
}

TEST(DeviceWindows, EveryWindowCollectiveMatchesTheReference) {
  const std::pair<braidDataType_t, braidRedOp_t> kTypeOps[] = {{braidFloat32, braidSum},
                                                               {braidInt32, braidMax},
                                                               {braidBfloat16, braidAvg},
                                                               {braidUint8, braidProd},
                                                               {braidFloat64, braidAvg}};
  auto empty = [](const algo::CollArgs& a) { return algo::emptySchedule(a); };
  int cases = 0;
  for (Collective coll : test::kAllCollectives) {
    if (coll == Collective::kAllToAllv) continue;  // a lowered schedule, not a window call
    for (int n = 2; n <= 8; ++n) {
      for (uint64_t count : {uint64_t{1}, uint64_t(n + 1), uint64_t{97}, uint64_t{1500}}) {
        for (bool inPlace : {false, true}) {
          for (bool hostOutput : {false, true}) {
            const bool twoShot = coll == Collective::kAllReduce && n >= 3 && inPlace;
            const auto typeOp = kTypeOps[(count + n + hostOutput) % 5];
            const test::CheckCase c = test::sweepCase(coll, n, count, inPlace, typeOp, 1);
            EXPECT_EQ(test::checkCollective(empty, c, windows(c, twoShot, hostOutput)), "")
                << (twoShot ? "two-shot" : "") << (hostOutput ? " host output" : "");
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 8 * 7 * 4 * 2 * 2);
}

// The same, captured into a CUDA graph: flag barriers, and out of place replayed between
// ordinary calls (the interpreter runs each rank as far as it can before the next, so a
// signal that lands before its peer cleared the last one, a flag left set, or a half
// refilled while a peer still reads it shows).
TEST(DeviceWindows, EveryWindowCollectiveMatchesTheReferenceWhenCaptured) {
  auto empty = [](const algo::CollArgs& a) { return algo::emptySchedule(a); };
  int cases = 0;
  for (Collective coll : test::kAllCollectives) {
    if (coll == Collective::kAllToAllv) continue;
    for (int n = 2; n <= 8; ++n) {
      for (uint64_t count : {uint64_t{1}, uint64_t(n + 1), uint64_t{97}}) {
        for (bool inPlace : {false, true}) {
          const bool twoShot = coll == Collective::kAllReduce && n >= 3 && count > 1;
          const test::CheckCase c =
              test::sweepCase(coll, n, count, inPlace, {braidFloat32, braidSum}, 1);
          EXPECT_EQ(test::checkCollective(empty, c, windows(c, twoShot, false, true)), "")
              << (twoShot ? "two-shot" : "");
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 8 * 7 * 3 * 2);
}

// A captured call in the halves opens and closes with a barrier, signals and waits for
// every peer at each, and leaves the ordinary calls' counts as they were. Its flag sets:
// 1 first, alternating with 0, the last of an odd count set 2 (no two barriers in a row
// share one, across calls neither: the last is never 1). All-gather has 3 rounds (5
// barriers), two-shot all-reduce 3 rounds of 2 (8), reduce 3 (5), and a call of one
// element 1 round (3).
TEST(DeviceWindows, ACapturedCallIsBracketedByFlagBarriersThatNeverRepeatASet) {
  struct Case {
    Collective coll;
    uint64_t count;
    size_t barriers;
  };
  for (const Case& k : {Case{Collective::kAllGather, 40, 5}, Case{Collective::kAllReduce, 40, 8},
                        Case{Collective::kReduce, 40, 5}, Case{Collective::kBroadcast, 1, 3}}) {
    const Collective coll = k.coll;
    WindowCall call;
    call.collective = coll;
    call.count = k.count;  // 40: 160 bytes, rounds of 64, 64 and 32
    call.elemSize = 4;
    call.twoShot = coll == Collective::kAllReduce;
    call.captured = true;
    WindowCounts counts{7, 11};
    WindowProgram p = buildWindowCall(call, 1, 3, kHalf, &counts).value();
    EXPECT_EQ(counts.rounds, 7u);
    EXPECT_EQ(counts.barriers, 11u);
    std::vector<uint64_t> sets;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const DeviceOp& op = p.ops[i];
      EXPECT_NE(op.kind, Kind::kArrive);
      EXPECT_NE(op.kind, Kind::kWaitRank);
      if (op.kind != Kind::kSignal) continue;
      if (op.to == 0) sets.push_back(op.value);
      EXPECT_EQ(op.from, 1);
    }
    ASSERT_EQ(sets.size(), k.barriers);
    for (size_t i = 0; i < sets.size(); ++i) {
      const uint64_t want = i + 1 == sets.size() && sets.size() % 2 == 1 ? 2 : (i + 1) % 2;
      EXPECT_EQ(sets[i], want) << "barrier " << i + 1 << " of " << sets.size();
    }
    // First and last: the bracketing barriers (signals to 0 and 2, then waits for both).
    ASSERT_GE(p.ops.size(), 8u);
    EXPECT_EQ(p.ops[0].kind, Kind::kSignal);
    EXPECT_EQ(p.ops[2].kind, Kind::kWaitSignal);
    EXPECT_EQ(p.ops[3].kind, Kind::kWaitSignal);
    EXPECT_EQ(p.ops.back().kind, Kind::kWaitSignal);
  }
}

// A captured call that fits one round of the graph region runs there, never in the
// halves: one barrier before it writes the region and its own (2 for a one-shot call, 3
// for two-shot). One that does not fit runs in the halves, bracketed (3 for one round);
// so does every captured call when there is no region.
TEST(DeviceWindows, ACapturedCallThatFitsRunsInTheGraphRegionWithFewerBarriers) {
  WindowCall call;
  call.collective = Collective::kAllReduce;
  call.elemSize = 4;
  call.captured = true;
  EXPECT_TRUE(runsInGraphRegion(call, 3, kGraph));  // count 0
  call.count = kGraph / 4;
  EXPECT_TRUE(runsInGraphRegion(call, 3, kGraph));
  EXPECT_FALSE(runsInGraphRegion(call, 3, 0));
  call.captured = false;
  EXPECT_FALSE(runsInGraphRegion(call, 3, kGraph));
  call.captured = true;
  ++call.count;
  EXPECT_FALSE(runsInGraphRegion(call, 3, kGraph));
  // A block per rank: reduce-scatter's count is per rank.
  call.collective = Collective::kReduceScatter;
  call.count = kGraph / 4 / 3;
  EXPECT_TRUE(runsInGraphRegion(call, 3, kGraph));
  EXPECT_FALSE(runsInGraphRegion(call, 4, kGraph));

  struct Case {
    Collective coll;
    bool twoShot;
    uint64_t count;
    int barriers;
    bool inGraph;
  };
  for (const Case& k : {Case{Collective::kAllReduce, false, 32, 2, true},
                        Case{Collective::kAllReduce, true, 32, 3, true},
                        Case{Collective::kAllGather, false, 1, 2, true},
                        Case{Collective::kAllToAll, false, 10, 2, true},
                        Case{Collective::kAllReduce, false, 33, 3, false},
                        Case{Collective::kAllToAll, false, 11, 3, false}}) {
    call.collective = k.coll;
    call.twoShot = k.twoShot;
    call.count = k.count;
    WindowCounts counts{7, 11};
    // Halves of 256 bytes: one round in them too.
    const WindowProgram p = buildWindowCall(call, 1, 3, 2 * kGraph, &counts, kGraph).value();
    EXPECT_EQ(counts.rounds, 7u);
    EXPECT_EQ(counts.barriers, 11u);
    int signals = 0, region = 0, halves = 0;
    for (const DeviceOp& op : p.ops) {
      signals += op.kind == Kind::kSignal && op.to == 0;
      for (const DeviceAddr& a : {op.dst, op.src[0], op.src[1], op.src[2]}) {
        region += a.space == DeviceAddr::Space::kGraphRegion;
        halves += a.space == DeviceAddr::Space::kHalf;
      }
    }
    EXPECT_EQ(signals, k.barriers)
        << "collective " << static_cast<int>(k.coll) << ", count " << k.count;
    EXPECT_EQ(region != 0, k.inGraph);
    EXPECT_EQ(halves != 0, !k.inGraph);
    ASSERT_FALSE(p.ops.empty());
    EXPECT_EQ(p.ops[0].kind, Kind::kSignal);  // the first barrier comes before any write
  }
}

// A round copies in, passes one barrier (this rank's counter first, then a wait for each
// peer) and reads; halves alternate by round and barriers count on from where they were.
TEST(DeviceWindows, RoundsAlternateHalvesAndBarriersCountOn) {
  WindowCall call;
  call.collective = Collective::kAllGather;
  call.count = 40;  // 160 bytes: rounds of 64, 64 and 32
  call.elemSize = 4;
  WindowCounts counts{7, 11};
  WindowProgram p = buildWindowCall(call, 1, 3, kHalf, &counts).value();
  EXPECT_EQ(counts.rounds, 10u);
  EXPECT_EQ(counts.barriers, 14u);
  std::vector<uint64_t> arrived;
  std::vector<int> halves;
  for (const DeviceOp& op : p.ops) {
    if (op.kind == Kind::kArrive) {
      EXPECT_EQ(op.from, 1);
      arrived.push_back(op.value);
    }
    if (op.kind == Kind::kCopy && op.dst.space == DeviceAddr::Space::kHalf) {
      EXPECT_EQ(op.dst.from, 1);
      halves.push_back(op.dst.slot);
    }
  }
  EXPECT_EQ(arrived, (std::vector<uint64_t>{12, 13, 14}));
  EXPECT_EQ(halves, (std::vector<int>{0, 1, 0}));  // rounds 8, 9, 10
  EXPECT_EQ(p.scratchBytes, 0u);
}

// A rank whose receive buffer kernels cannot write reduces into the scratch, sized to a
// round, and copies from it.
TEST(DeviceWindows, AHostReceiveBufferGetsItsReductionThroughTheScratch) {
  WindowCall call;
  call.collective = Collective::kAllReduce;
  call.count = 100;
  call.elemSize = 4;
  call.recvIsDevice = false;
  WindowCounts counts;
  WindowProgram p = buildWindowCall(call, 0, 2, kHalf, &counts).value();
  EXPECT_EQ(p.scratchBytes, kHalf);
  for (const DeviceOp& op : p.ops) {
    if (op.kind == Kind::kReduce) {
      EXPECT_EQ(op.dst.space, DeviceAddr::Space::kScratch);
    }
  }
}

// A premul-sum's input is scaled on its way into the window (kScale), by each rank's own
// scalar: all-reduce (one- and two-shot), reduce-scatter and reduce, 2 to 8 ranks, in and
// out of place, receive buffers in device or host memory, many 64-byte rounds.
TEST(DeviceWindows, APremulSumScalesEachInputAsItIsCopiedIn) {
  int cases = 0;
  for (Collective coll :
       {Collective::kAllReduce, Collective::kReduceScatter, Collective::kReduce}) {
    for (int n = 2; n <= 8; ++n) {
      for (uint64_t count : {uint64_t{1}, uint64_t(n + 1), uint64_t{97}}) {
        for (bool inPlace : {false, true}) {
          for (bool twoShot : {false, true}) {
            if (twoShot && (coll != Collective::kAllReduce || n < 3)) continue;
            const braidDataType_t type = (count + n) % 2 == 0 ? braidInt32 : braidFloat32;
            const bool hostOutput = (count + inPlace) % 2 == 1;
            EXPECT_EQ(runPremul(coll, type, n, count, inPlace, twoShot, hostOutput), "")
                << "collective " << static_cast<int>(coll) << ", " << n << " ranks, count " << count
                << (inPlace ? ", in place" : "") << (twoShot ? ", two-shot" : "");
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 7 * 3 * 2 + 6 * 3 * 2);
}

// Without a premul-sum nothing is scaled; with one, only copies of the input are.
TEST(DeviceWindows, OnlyTheInputsCopyInScales) {
  WindowCall call;
  call.collective = Collective::kReduceScatter;
  call.count = 10;
  call.elemSize = 4;
  WindowCounts counts;
  for (bool scale : {false, true}) {
    call.scaleInput = scale;
    int scales = 0;
    const WindowProgram p = buildWindowCall(call, 1, 4, kHalf, &counts).value();
    for (const DeviceOp& op : p.ops) {
      if (op.kind != Kind::kScale) continue;
      ++scales;
      EXPECT_EQ(op.src[0].space, DeviceAddr::Space::kInput);
      EXPECT_EQ(op.dst.space, DeviceAddr::Space::kHalf);
      EXPECT_EQ(op.dst.from, 1);
    }
    EXPECT_EQ(scales, scale ? 3 * 4 : 0);  // 10 elements in rounds of 4: 3 rounds x 4 blocks
  }
}

// A captured call the region reports as fitting is one round of the window schedule there:
// with slots of whole lines (the region over nranks, rounded down), a reduce-scatter of 3
// ranks a few elements short of the region over 3 runs in the halves, and one that fits a
// slot builds on every rank. Without the schedule's slots the region took the first and
// the lowering refused it ("the graph region holds one round").
TEST(DeviceWindows, ACapturedCallRunsInTheGraphRegionExactlyWhenItsScheduleFitsOneRound) {
  constexpr size_t kRegion = size_t{8} << 20;
  WindowCall call;
  call.collective = Collective::kReduceScatter;
  call.elemSize = 4;
  call.captured = true;
  const uint64_t slot = kRegion / 3 / 64 * 64 / 4;
  for (const uint64_t count : {kRegion / 4 / 3, slot, slot + 1}) {
    call.count = count;
    EXPECT_EQ(runsInGraphRegion(call, 3, kRegion), count <= slot) << count;
    for (int r = 0; r < 3; ++r) {
      WindowCounts counts;
      Expected<WindowProgram> p = buildWindowCall(call, r, 3, size_t{64} << 20, &counts, kRegion);
      EXPECT_TRUE(p.isOk()) << count << " elements, rank " << r << ": "
                            << (p.isOk() ? "" : p.status().message());
    }
  }
}

}  // namespace
}  // namespace braid
