// The window schedules (algorithms/direct/direct_windows.cc, through
// algo::buildWindowSchedule) run by the windows' simulator against the independent
// reference of coll_check.h: every window collective, nranks 1..17, 32, 64, the count
// sweep of the other families, windows small enough for many rounds (a last partial one
// included) and counts below nranks, in place and out of place, every rank lending or not
// (every combination at small n), calls back to back, random interleavings.
#include <gtest/gtest.h>

#include <iterator>
#include <random>

#include "algorithms/registry.h"
#include "coll_check.h"
#include "exec/window_simulator.h"

namespace braid::test {
namespace {

using algo::Algorithm;
using algo::Collective;

struct WinCase {
  Algorithm alg;
  Collective coll;
};

const WinCase kWindowCases[] = {
    {Algorithm::kDirect, Collective::kAllReduce}, {Algorithm::kTwoShot, Collective::kAllReduce},
    {Algorithm::kDirect, Collective::kAllGather}, {Algorithm::kDirect, Collective::kReduceScatter},
    {Algorithm::kDirect, Collective::kBroadcast}, {Algorithm::kPairwise, Collective::kAllToAll},
    {Algorithm::kDirect, Collective::kReduce},    {Algorithm::kLinear, Collective::kGather},
    {Algorithm::kLinear, Collective::kScatter},
};

const std::pair<braidDataType_t, braidRedOp_t> kTypeOps[] = {{braidFloat32, braidSum},
                                                             {braidInt32, braidMax},
                                                             {braidBfloat16, braidAvg},
                                                             {braidUint8, braidProd}};

struct WinRun {
  uint64_t windowBytes = 4096;
  WindowSimOptions sim;  // windowBytes is set from the above
  bool twice = false;    // the same call twice, back to back (the first on copies)
  bool scaled = false;   // built with CollArgs::scaledPut
};

std::string check(const WinCase& w, const CheckCase& c, const WinRun& run) {
  const size_t es = elemSize(c.datatype);
  auto build = [&](algo::CollArgs a) {
    a.windowElems = run.windowBytes / es;
    a.scaledPut = run.scaled;
    return algo::buildWindowSchedule(w.alg, a);
  };
  auto sim = [&](const std::vector<algo::Schedule>& s, braidDataType_t dt, braidRedOp_t op,
                 std::vector<SimRank>& ranks, const SimOptions&) {
    WindowSimOptions o = run.sim;
    o.windowBytes = run.windowBytes;
    if (!run.twice) return simulateWindows(s, dt, op, ranks, o);
    std::vector<SimRank> first = ranks;
    return simulateWindows({{&s, &first, dt, op}, {&s, &ranks, dt, op}}, o);
  };
  const std::string err = checkCollective(build, c, sim);
  if (err.empty()) return "";
  std::string lends;
  for (bool b : run.sim.lendInput) lends += b ? '1' : '0';
  lends += '/';
  for (bool b : run.sim.lendOutput) lends += b ? '1' : '0';
  return std::string(algo::algorithmName(w.alg)) + " window=" + std::to_string(run.windowBytes) +
         " lends(in/out)=" + lends + " seed=" + std::to_string(run.sim.seed) +
         (run.twice ? " twice" : "") + (run.scaled ? " scaled" : "") + ": " + err;
}

std::vector<bool> bits(uint64_t mask, int n) {
  std::vector<bool> v(n);
  for (int q = 0; q < n; ++q) v[q] = (mask >> (q % 64)) & 1;
  return v;
}

// One window collective a test, so ctest runs them side by side.
class WindowSweep : public ::testing::TestWithParam<int> {};

TEST_P(WindowSweep, EveryRankCountWindowAndPlacement) {
  const WinCase& w = kWindowCases[GetParam()];
  std::vector<int> ranks;
  for (int n = 1; n <= 17; ++n) ranks.push_back(n);
  ranks.push_back(32);
  ranks.push_back(64);
  std::mt19937_64 rng(36 + GetParam());
  int cases = 0;
  for (int n : ranks) {
    std::vector<uint64_t> counts = {0, 1, uint64_t(n - 1), uint64_t(n + 1), 97};
    if (n <= 17) counts.push_back(1500);
    for (uint64_t count : counts) {
      for (bool inPlace : {false, true}) {
        // Windows of 3 lines (a round is a few elements; slots fall below a line for
        // n > 3; at least an element per rank) and of a page (the host's smallest).
        for (uint64_t window : {std::max<uint64_t>(192, 8 * n), uint64_t{4096}}) {
          const CheckCase c = sweepCase(w.coll, n, count, inPlace, kTypeOps[(count + n) % 4], 0);
          WinRun run;
          run.windowBytes = window;
          run.sim.lendInput = bits(rng(), n);
          run.sim.lendOutput = bits(rng(), n);
          run.sim.seed = cases % 3 == 0 ? rng() | 1 : 0;
          EXPECT_EQ(check(w, c, run), "");
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 17 * 24 + 2 * 20);
}

INSTANTIATE_TEST_SUITE_P(DirectWindows, WindowSweep,
                         ::testing::Range(0, static_cast<int>(std::size(kWindowCases))),
                         [](const auto& info) {
                           const WinCase& w = kWindowCases[info.param];
                           return std::string(algo::algorithmName(w.alg)) + "_" +
                                  algo::collectiveName(w.coll);
                         });

TEST(DirectWindows, EveryLendingCombinationAtSmallN) {
  for (const WinCase& w : kWindowCases) {
    for (int n = 2; n <= 4; ++n) {
      const uint64_t masks = uint64_t{1} << n;
      for (uint64_t in = 0; in < masks; ++in) {
        // Outputs are lent only by two-shot: every combination there, one elsewhere.
        const uint64_t outs = w.alg == Algorithm::kTwoShot ? masks : 1;
        for (uint64_t out = 0; out < outs; ++out) {
          for (bool inPlace : {false, true}) {
            const CheckCase c = sweepCase(w.coll, n, 1000, inPlace, {braidFloat32, braidSum}, 0);
            WinRun run;
            run.windowBytes = 1024;
            run.sim.lendInput = bits(in, n);
            run.sim.lendOutput = bits(out, n);
            run.sim.seed = in * 131 + out;
            run.twice = true;
            EXPECT_EQ(check(w, c, run), "");
          }
        }
      }
    }
  }
}

TEST(DirectWindows, BackToBackCallsInEitherHalfUnderRandomInterleavings) {
  std::mt19937_64 rng(7);
  for (const WinCase& w : kWindowCases) {
    for (int n : {2, 3, 5, 8}) {
      for (uint64_t seed = 1; seed <= 12; ++seed) {
        const CheckCase c =
            sweepCase(w.coll, n, 200 + seed * 37, seed % 2 == 0, kTypeOps[seed % 4], 0);
        WinRun run;
        run.windowBytes = 256;
        run.twice = true;
        run.sim.seed = seed;
        run.sim.roundsBefore = seed % 3;
        run.sim.lendInput = bits(rng(), n);
        run.sim.lendOutput = bits(rng(), n);
        EXPECT_EQ(check(w, c, run), "");
      }
    }
  }
}

TEST(DirectWindows, TwoShotKeepsItsPiecesWhereTheInputAreaHasThem) {
  // One area per half (the device windows): a rank's reduced piece overwrites its own
  // piece of its input area, which only it reads.
  const WinCase w{Algorithm::kTwoShot, Collective::kAllReduce};
  for (int n : {1, 2, 3, 4, 7, 16}) {
    for (uint64_t count : {uint64_t{1}, uint64_t(n + 1), uint64_t{97}, uint64_t{1500}}) {
      for (bool inPlace : {false, true}) {
        const CheckCase c = sweepCase(w.coll, n, count, inPlace, kTypeOps[(count + n) % 4], 0);
        WinRun run;
        run.windowBytes = 512;
        run.twice = true;
        run.sim.oneAreaPerHalf = true;
        run.sim.seed = count + n;
        EXPECT_EQ(check(w, c, run), "");
      }
    }
  }
}

// Every rank's schedule and buffers (inputs of small integers) for one window call.
struct PlainCall {
  std::vector<algo::Schedule> schedules;
  std::vector<SimRank> ranks;
};

PlainCall plainCall(const WinCase& w, int n, uint64_t count, uint64_t windowBytes) {
  PlainCall p;
  CheckCase c;
  c.collective = w.coll;
  c.nranks = n;
  c.count = count;
  c.root = n - 1;
  for (int r = 0; r < n; ++r) {
    algo::CollArgs a;
    a.collective = w.coll;
    a.rank = r;
    a.nranks = n;
    a.count = count;
    a.elemSize = 4;
    a.root = c.root;
    a.windowElems = windowBytes / 4;
    p.schedules.push_back(algo::buildWindowSchedule(w.alg, a));
    const algo::RankLayout l = algo::rankLayout(c.collective, n, r, c.count, c.root, c.inPlace);
    SimRank sr;
    sr.input.assign(l.inputElems * 4, static_cast<uint8_t>(r));
    sr.output.assign(l.outputElems * 4, 0);
    p.ranks.push_back(std::move(sr));
  }
  return p;
}

TEST(DirectWindows, DifferentCollectivesBackToBack) {
  // Calls follow one another with no barrier: a call's first rounds overwrite halves that
  // slow peers may still read from the last call, and lenders return under peers' reads.
  std::mt19937_64 rng(11);
  for (const WinCase& before : kWindowCases) {
    for (const WinCase& w : kWindowCases) {
      for (int n : {2, 3, 5}) {
        const PlainCall a = plainCall(before, n, 300, 512);
        const PlainCall b = plainCall(w, n, 200, 512);
        std::vector<SimRank> ra = a.ranks, rb = b.ranks;
        const CheckCase c = sweepCase(w.coll, n, 250, rng() % 2 == 0, {braidFloat32, braidSum}, 0);
        WinRun run;
        run.windowBytes = 512;
        run.sim.seed = rng() | 1;
        run.sim.lendInput = bits(rng(), n);
        run.sim.lendOutput = bits(rng(), n);
        // The checked call comes third, after calls of two other collectives.
        const std::string err = checkCollective(
            [&](algo::CollArgs x) {
              x.windowElems = 128;
              return algo::buildWindowSchedule(w.alg, x);
            },
            c,
            [&](const std::vector<algo::Schedule>& s, braidDataType_t dt, braidRedOp_t op,
                std::vector<SimRank>& ranks, const SimOptions&) {
              WindowSimOptions o = run.sim;
              o.windowBytes = 512;
              return simulateWindows({{&a.schedules, &ra, braidFloat32, braidSum},
                                      {&b.schedules, &rb, braidFloat32, braidMax},
                                      {&s, &ranks, dt, op}},
                                     o);
            });
        EXPECT_EQ(err, "") << algo::collectiveName(before.coll) << ", "
                           << algo::collectiveName(w.coll) << " then the checked call";
      }
    }
  }
}

TEST(DirectWindows, ScaledPutsReadNoOwnInput) {
  for (const WinCase& w : kWindowCases) {
    for (int n : {1, 2, 3, 6}) {
      for (bool inPlace : {false, true}) {
        const CheckCase c = sweepCase(w.coll, n, 777, inPlace, {braidFloat32, braidSum}, 0);
        WinRun run;
        run.scaled = true;
        run.windowBytes = 512;
        run.sim.lendInput = bits(~uint64_t{0}, n);
        run.sim.lendOutput = bits(~uint64_t{0}, n);
        EXPECT_EQ(check(w, c, run), "");
        algo::CollArgs a;
        a.collective = w.coll;
        a.nranks = n;
        a.count = 777;
        a.elemSize = 4;
        a.windowElems = 128;
        a.scaledPut = true;
        const algo::Schedule s = algo::buildWindowSchedule(w.alg, a);
        for (const algo::Step& st : s.steps) EXPECT_FALSE(st.ownFromBuffer);
        // A scaled input is only read scaled: never lent.
        if (w.coll == Collective::kAllReduce || w.coll == Collective::kReduceScatter) {
          EXPECT_FALSE(s.lendsInput);
        }
      }
    }
  }
}

TEST(DirectWindows, EveryTypeAndOp) {
  const braidDataType_t kTypes[] = {braidInt8,    braidUint8,   braidInt32,   braidUint32,
                                    braidInt64,   braidUint64,  braidFloat16, braidFloat32,
                                    braidFloat64, braidBfloat16};
  for (const WinCase& w : kWindowCases) {
    for (braidDataType_t t : kTypes) {
      for (int op = 0; op < braidNumOps; ++op) {
        CheckCase c = sweepCase(w.coll, 6, 211, false, {t, static_cast<braidRedOp_t>(op)}, 0);
        c.root = 5;
        WinRun run;
        run.windowBytes = 256;
        run.sim.lendInput = bits(0x15, 6);
        EXPECT_EQ(check(w, c, run), "");
      }
    }
  }
}

}  // namespace
}  // namespace braid::test
