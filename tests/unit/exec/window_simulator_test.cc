// The windows' simulator catches what would break on real windows: each test breaks a
// correct window schedule one way (a missing wait, a put not ordered by kBeginRound with
// writes, a missing or early kFinished, aliasing, a wait never satisfied, a short window)
// and asserts the error that names it; the correct schedule passes.
#include "exec/window_simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "algorithms/registry.h"
#include "tests/unit/algorithms/coll_check.h"

namespace braid::test {
namespace {

using algo::Algorithm;
using algo::Collective;
using algo::OpKind;
using algo::Step;
using algo::WinFlag;
using ::testing::HasSubstr;

using Mutate = std::function<void(int rank, algo::Schedule&)>;

struct Case {
  Algorithm alg = Algorithm::kDirect;
  Collective coll = Collective::kAllReduce;
  int n = 3;
  uint64_t count = 100;
  bool inPlace = false;
  int root = 0;
  uint64_t windowBytes = 4096;  // what the simulator gives
  uint64_t buildElems = 0;      // what the schedules were built for (0: the same)
  std::vector<bool> lendInput, lendOutput;
  uint64_t seed = 0;
};

// "" when the (mutated) schedules run right, else the error.
std::string run(const Case& k, const Mutate& mutate = {}) {
  CheckCase c;
  c.collective = k.coll;
  c.nranks = k.n;
  c.count = k.count;
  c.inPlace = k.inPlace;
  c.root = k.root;
  auto build = [&](algo::CollArgs a) {
    a.windowElems = k.buildElems != 0 ? k.buildElems : k.windowBytes / 4;
    algo::Schedule s = algo::buildWindowSchedule(k.alg, a);
    if (mutate) mutate(a.rank, s);
    return s;
  };
  auto sim = [&](const std::vector<algo::Schedule>& s, braidDataType_t dt, braidRedOp_t op,
                 std::vector<SimRank>& ranks, const SimOptions&) {
    WindowSimOptions o;
    o.windowBytes = k.windowBytes;
    o.lendInput = k.lendInput;
    o.lendOutput = k.lendOutput;
    o.seed = k.seed;
    return simulateWindows(s, dt, op, ranks, o);
  };
  return checkCollective(build, c, sim);
}

// Index of the `nth` step of `op` (and `flag`, for signals and waits) in s.
size_t find(const algo::Schedule& s, OpKind op, int nth, WinFlag flag = WinFlag::kReady) {
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    const bool sync = op == OpKind::kSignal || op == OpKind::kWait;
    if (st.op == op && (!sync || st.flag == flag) && nth-- == 0) return i;
  }
  ADD_FAILURE() << "no such step";
  return 0;
}

// Rank `rank` without its `nth` step of `op` (of `flag` for signals and waits).
Mutate drop(int rank, OpKind op, int nth, WinFlag flag = WinFlag::kReady) {
  return [=](int r, algo::Schedule& s) {
    if (r == rank) s.steps.erase(s.steps.begin() + find(s, op, nth, flag));
  };
}

TEST(WindowSimulator, CorrectSchedulesPass) {
  Case k;
  EXPECT_EQ(run(k), "");
  k.coll = Collective::kBroadcast;
  k.count = 3000;  // three rounds
  k.lendInput.assign(3, true);
  EXPECT_EQ(run(k), "");
}

TEST(WindowSimulator, AReadOfAPeerNotOrderedAfterItsPutIsARace) {
  // All-gather: rank 1 waits for rank 2, then rank 0; without the second wait it reads
  // rank 0's area that rank 0 has put (it ran first) but nothing orders the read after.
  Case k;
  k.coll = Collective::kAllGather;
  EXPECT_EQ(run(k), "");
  const std::string err = run(k, drop(1, OpKind::kWait, 1));
  EXPECT_THAT(err, HasSubstr("race: rank 1"));
  EXPECT_THAT(err, HasSubstr("not ordered after its write"));
  // Rank 0 lends its input instead: the read comes before the lending is published.
  k.lendInput = {true, false, false};
  EXPECT_THAT(run(k, drop(1, OpKind::kWait, 1)), HasSubstr("not ordered after its kReady"));
}

TEST(WindowSimulator, APutNotOrderedByBeginRoundWithWritesIsARace) {
  // Broadcast over three rounds: the root alone writes and waits for nobody but the
  // kBeginRound with writes; without it, its third round's put reuses the first round's
  // half while nothing says the others are done reading it.
  Case k;
  k.coll = Collective::kBroadcast;
  k.count = 3000;
  k.root = 0;
  const std::string err = run(k, [](int r, algo::Schedule& s) {
    if (r != 0) return;
    for (Step& st : s.steps) st.writes = false;
  });
  EXPECT_THAT(err, HasSubstr("race: rank 0"));
  EXPECT_THAT(err, HasSubstr("kBeginRound with writes must order it"));
}

TEST(WindowSimulator, ACallsFirstPutIsOrderedOnlyByItsBeginRound) {
  // A broadcast, then a one-shot all-reduce: inside the all-reduce its waits would order
  // the puts, but its first put into a half follows the broadcast's reads of it, which
  // only kBeginRound with writes orders (no barrier between calls).
  const int n = 3;
  std::vector<algo::Schedule> bcast, ar;
  std::vector<SimRank> rb(n), ra(n);
  for (int r = 0; r < n; ++r) {
    algo::CollArgs a;
    a.rank = r;
    a.nranks = n;
    a.count = 2048;  // two rounds of 1024 floats
    a.elemSize = 4;
    a.windowElems = 1024;
    a.collective = Collective::kBroadcast;
    bcast.push_back(algo::buildWindowSchedule(Algorithm::kDirect, a));
    a.collective = Collective::kAllReduce;
    ar.push_back(algo::buildWindowSchedule(Algorithm::kDirect, a));
    rb[r].input.assign(2048 * 4, 1);
    rb[r].output.assign(2048 * 4, 0);
    ra[r] = rb[r];
  }
  WindowSimOptions o;
  o.windowBytes = 4096;
  std::vector<SimRank> rb2 = rb, ra2 = ra;
  EXPECT_TRUE(simulateWindows(
                  {{&bcast, &rb, braidFloat32, braidSum}, {&ar, &ra, braidFloat32, braidSum}}, o)
                  .isOk());
  for (algo::Schedule& s : ar) {
    for (Step& st : s.steps) st.writes = false;
  }
  const Status st = simulateWindows(
      {{&bcast, &rb2, braidFloat32, braidSum}, {&ar, &ra2, braidFloat32, braidSum}}, o);
  EXPECT_THAT(st.message(), HasSubstr("race: rank 0 call 1"));
}

TEST(WindowSimulator, AMissingFinishedLeavesTheLenderWaiting) {
  Case k;
  k.coll = Collective::kBroadcast;
  k.count = 2000;
  k.lendInput = {true, false, false};  // the root, rank 0, lends its input
  EXPECT_EQ(run(k), "");
  const std::string err = run(k, drop(2, OpKind::kSignal, 1, WinFlag::kFinished));
  EXPECT_THAT(err, HasSubstr("deadlock"));
  EXPECT_THAT(err, HasSubstr("rank 0 ends call 0 having lent a buffer"));
  EXPECT_THAT(err, HasSubstr("rank 2's finished is 1 (want 2)"));
  // Not lent, nobody waits for it: the same schedules are right.
  k.lendInput.clear();
  EXPECT_EQ(run(k, drop(2, OpKind::kSignal, 1, WinFlag::kFinished)), "");
}

TEST(WindowSimulator, AFinishedRaisedBeforeTheReadReturnsTheLentBufferEarly) {
  Case k;
  k.coll = Collective::kBroadcast;
  k.lendInput = {true, false, false};
  const std::string err = run(k, [](int r, algo::Schedule& s) {
    if (r == 0) return;
    // begin, ready, wait, copy, finished -> begin, ready, wait, finished, copy
    const size_t f = find(s, OpKind::kSignal, 0, WinFlag::kFinished);
    std::swap(s.steps[f], s.steps[f - 1]);
  });
  EXPECT_THAT(err, HasSubstr("race:"));
  EXPECT_THAT(err, HasSubstr("lent input"));
}

TEST(WindowSimulator, AnOwnTermReadFromTheBufferTheResultOverwritesIsAliasing) {
  Case k;
  k.inPlace = true;
  EXPECT_EQ(run(k), "");
  EXPECT_THAT(run(k,
                  [](int, algo::Schedule& s) {
                    for (Step& st : s.steps) st.ownFromBuffer = st.op == OpKind::kReducePeers;
                  }),
              HasSubstr("aliasing"));
}

TEST(WindowSimulator, LendingAnInputTheOutputOverwritesIsARace) {
  // In place, all-to-all writes its output block q over input block q, which rank q
  // reads where the input is lent.
  Case k;
  k.alg = Algorithm::kPairwise;
  k.coll = Collective::kAllToAll;
  k.inPlace = true;
  k.lendInput.assign(3, true);
  EXPECT_EQ(run(k), "");  // the schedule does not lend in place
  const Mutate lend = [](int, algo::Schedule& s) { s.lendsInput = true; };
  EXPECT_THAT(run(k, lend), HasSubstr("race:"));
  // One-shot reads its own term where it lends it: the result overwrites it.
  k.alg = Algorithm::kDirect;
  k.coll = Collective::kAllReduce;
  EXPECT_THAT(run(k, lend), HasSubstr("aliasing"));
}

TEST(WindowSimulator, AWaitNeverSatisfiedIsADeadlock) {
  Case k;
  const std::string err = run(k, [](int r, algo::Schedule& s) {
    if (r != 1) return;
    Step w{OpKind::kWait};
    w.recvPeer = 2;
    w.flag = WinFlag::kDone;  // one-shot raises no kDone
    s.steps.insert(s.steps.begin() + 1, w);
  });
  EXPECT_THAT(err, HasSubstr("deadlock"));
  EXPECT_THAT(err, HasSubstr("rank 2's done is 0 (want 1)"));
}

TEST(WindowSimulator, ASmallerWindowThanTheScheduleIsOutOfBounds) {
  Case k;
  k.count = 2000;
  k.buildElems = 2048;  // 8 KiB of floats, in 4 KiB areas
  EXPECT_THAT(run(k), HasSubstr("out of bounds"));
}

TEST(WindowSimulator, UnequalRoundCountsAreLeftovers) {
  Case k;
  EXPECT_THAT(run(k,
                  [](int r, algo::Schedule& s) {
                    if (r != 0) return;
                    s.steps.push_back(Step{OpKind::kBeginRound});
                    Step ready{OpKind::kSignal};
                    s.steps.push_back(ready);
                  }),
              HasSubstr("leftovers"));
}

TEST(WindowSimulator, ARoundWithoutReadyIsMalformed) {
  Case k;
  k.count = 2000;
  EXPECT_THAT(run(k, drop(1, OpKind::kSignal, 0)), HasSubstr("malformed"));
}

TEST(WindowSimulator, ALentOutputReadBeforeItsOwnerWroteItIsStale) {
  Case k;
  k.alg = Algorithm::kTwoShot;
  k.count = 1000;
  k.lendInput.assign(3, true);
  k.lendOutput.assign(3, true);
  EXPECT_EQ(run(k), "");
  // Rank 0 raises kDone before it reduces its piece.
  const std::string err = run(k, [](int r, algo::Schedule& s) {
    if (r != 0) return;
    const size_t red = find(s, OpKind::kReducePeers, 0);
    const size_t done = find(s, OpKind::kSignal, 0, WinFlag::kDone);
    const Step d = s.steps[done];
    s.steps.erase(s.steps.begin() + done);
    s.steps.insert(s.steps.begin() + red, d);
  });
  EXPECT_THAT(err, HasSubstr("race:"));
  EXPECT_THAT(err, HasSubstr("output"));
}

TEST(WindowSimulator, NoDroppedSyncStepGoesUnnoticed) {
  // Flags and rounds order the data; they do not move it. So without any one of them a
  // schedule either still runs right or the simulator reports it: results are never
  // wrong silently, whatever the interleaving and lending.
  const std::pair<Algorithm, Collective> kinds[] = {
      {Algorithm::kDirect, Collective::kAllReduce},
      {Algorithm::kTwoShot, Collective::kAllReduce},
      {Algorithm::kDirect, Collective::kAllGather},
      {Algorithm::kDirect, Collective::kReduceScatter},
      {Algorithm::kDirect, Collective::kBroadcast},
      {Algorithm::kPairwise, Collective::kAllToAll},
      {Algorithm::kDirect, Collective::kReduce},
      {Algorithm::kLinear, Collective::kGather},
      {Algorithm::kLinear, Collective::kScatter}};
  int reported = 0, runs = 0;
  for (const auto& [alg, coll] : kinds) {
    for (uint64_t seed : {0, 5}) {
      Case k;
      k.alg = alg;
      k.coll = coll;
      k.count = 700;  // three rounds, more for the block collectives
      k.windowBytes = 1024;
      k.root = 1;
      k.seed = seed;
      k.lendInput = {true, seed == 0, true};
      k.lendOutput = {true, true, seed == 0};
      algo::CollArgs a;
      a.collective = coll;
      a.rank = 1;
      a.nranks = 3;
      a.count = 700;
      a.elemSize = 4;
      a.root = 1;
      a.windowElems = 256;
      const algo::Schedule mine = algo::buildWindowSchedule(alg, a);
      for (size_t i = 0; i < mine.steps.size(); ++i) {
        if (!algo::isWindowSync(mine.steps[i].op)) continue;
        const std::string err = run(k, [&](int r, algo::Schedule& s) {
          if (r != 1) return;
          if (s.steps[i].op == OpKind::kBeginRound) {
            s.steps[i].writes = false;
          } else {
            s.steps.erase(s.steps.begin() + i);
          }
        });
        EXPECT_EQ(err.find("output["), std::string::npos) << err;
        reported += !err.empty();
        ++runs;
      }
    }
  }
  EXPECT_GT(reported, runs / 2);  // most of them matter (214 of 348)
}

TEST(WindowSimulator, TheFifoAndWindowSimulatorsRefuseEachOthersSchedules) {
  algo::CollArgs a;
  a.count = 4;
  a.elemSize = 4;
  a.windowElems = 16;
  std::vector<algo::Schedule> win = {algo::buildWindowSchedule(Algorithm::kDirect, a)};
  std::vector<SimRank> ranks(1);
  ranks[0].input.assign(16, 0);
  ranks[0].output.assign(16, 0);
  EXPECT_FALSE(simulate(win, braidFloat32, braidSum, ranks).isOk());
  std::vector<algo::Schedule> fifo = {algo::buildSchedule(Algorithm::kDirect, a)};
  WindowSimOptions o;
  o.windowBytes = 64;
  EXPECT_THAT(simulateWindows(fifo, braidFloat32, braidSum, ranks, o).message(),
              HasSubstr("not windowed"));
  EXPECT_TRUE(simulateWindows(win, braidFloat32, braidSum, ranks, o).isOk());
}

}  // namespace
}  // namespace braid::test
