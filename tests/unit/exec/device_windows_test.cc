// The device windows' collectives (exec/device_windows.h), checked on the host: every
// rank's program for a call runs in the device interpreter (tests/unit/exec/
// device_interpreter.h) with halves of 64 bytes, so calls go in many rounds, starting
// from an odd round and an arbitrary barrier count. Every collective the windows run, at
// 2 to 8 ranks, in and out of place, one-shot and two-shot, with the receive buffer in
// device or in host memory (kernels must then not write it), gives the reference's result.
#include "exec/device_windows.h"

#include <gtest/gtest.h>

#include "algorithms/builder.h"
#include "exec/reduce.h"
#include "tests/unit/algorithms/coll_check.h"
#include "tests/unit/exec/device_interpreter.h"

namespace braid {
namespace {

using algo::Collective;
using Kind = DeviceOp::Kind;

constexpr size_t kHalf = 64;

// Runs case c through the windows: twoShot for all-reduce, and receive buffers in host
// memory on the ranks `hostOutput` says.
test::RunFn windows(const test::CheckCase& c, bool twoShot, bool hostOutput) {
  return [c, twoShot, hostOutput](const std::vector<algo::Schedule>&, braidDataType_t type,
                                  braidRedOp_t op, std::vector<SimRank>& ranks, const SimOptions&) {
    const int n = c.nranks;
    test::DeviceState state;
    state.halfBytes = kHalf;
    state.barriers.assign(n, 5);
    std::vector<std::vector<DeviceOp>> programs;
    for (int r = 0; r < n; ++r) {
      WindowCall call;
      call.collective = c.collective;
      call.count = c.count;
      call.elemSize = datatypeSize(type);
      call.root = c.root;
      call.twoShot = twoShot;
      call.recvIsDevice = !(hostOutput && r % 2 == 0);
      WindowCounts counts{3, 5};
      WindowProgram p = buildWindowCall(call, r, n, kHalf, &counts);
      programs.push_back(std::move(p.ops));
      state.scratchBytes.push_back(p.scratchBytes);
      state.outputIsHost.push_back(!call.recvIsDevice);
    }
    return test::DeviceInterpreter(type, op, ranks, state).run(programs);
  };
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

// A round copies in, passes one barrier (this rank's counter first, then a wait for each
// peer) and reads; halves alternate by round and barriers count on from where they were.
TEST(DeviceWindows, RoundsAlternateHalvesAndBarriersCountOn) {
  WindowCall call;
  call.collective = Collective::kAllGather;
  call.count = 40;  // 160 bytes: rounds of 64, 64 and 32
  call.elemSize = 4;
  WindowCounts counts{7, 11};
  WindowProgram p = buildWindowCall(call, 1, 3, kHalf, &counts);
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
  WindowProgram p = buildWindowCall(call, 0, 2, kHalf, &counts);
  EXPECT_EQ(p.scratchBytes, kHalf);
  for (const DeviceOp& op : p.ops) {
    if (op.kind == Kind::kReduce) {
      EXPECT_EQ(op.dst.space, DeviceAddr::Space::kScratch);
    }
  }
}

}  // namespace
}  // namespace braid
