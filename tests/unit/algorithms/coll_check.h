// Checks a schedule generator for any collective through the simulator:
// builds every rank's buffers as NCCL lays them out (in place included),
// fills inputs with exact small integers (tests/common/reference.h), runs
// every rank's schedule, and compares each rank's output with an independent
// reference. Returns "" when right, else the first problems found.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "algorithms/reference.h"
#include "algorithms/schedule.h"
#include "exec/simulator.h"
#include "tests/common/reference.h"

namespace braid::test {

using ScheduleFn = std::function<algo::Schedule(const algo::CollArgs&)>;
// What runs every rank's schedule on the buffers: the simulator, or another executor's
// model (the device lowering's interpreter, tests/unit/exec/device_program_test.cc).
using RunFn = std::function<Status(const std::vector<algo::Schedule>&, braidDataType_t,
                                   braidRedOp_t, std::vector<SimRank>&, const SimOptions&)>;

struct CheckCase {
  algo::Collective collective = algo::Collective::kAllReduce;
  int nranks = 1;
  uint64_t count = 0;
  braidDataType_t datatype = braidFloat32;
  braidRedOp_t op = braidSum;
  int root = 0;
  bool inPlace = false;
  uint64_t maxStepElems = 1 << 16;
  size_t fifoMessages = 2;
  // all-to-all-v: counts[src][dst] elements (displacements are packed, with a
  // gap of one element between blocks so misplaced writes show).
  std::vector<std::vector<uint64_t>> vcounts;
  std::string describe() const;
};

constexpr algo::Collective kAllCollectives[] = {
    algo::Collective::kAllReduce, algo::Collective::kAllGather, algo::Collective::kReduceScatter,
    algo::Collective::kBroadcast, algo::Collective::kReduce,    algo::Collective::kGather,
    algo::Collective::kScatter,   algo::Collective::kAllToAll,  algo::Collective::kAllToAllv};

// The sweeps' case: root spread by count, in place where the collective has it, and for
// all-to-all-v random counts up to `count` seeded by (n, count).
inline CheckCase sweepCase(algo::Collective coll, int n, uint64_t count, bool inPlace,
                           std::pair<braidDataType_t, braidRedOp_t> typeOp, uint64_t maxStep) {
  CheckCase c;
  c.collective = coll;
  c.nranks = n;
  c.count = count;
  c.datatype = typeOp.first;
  c.op = typeOp.second;
  c.root = static_cast<int>((count * 7 + 3) % static_cast<uint64_t>(n));
  c.inPlace = inPlace && coll != algo::Collective::kAllToAllv;
  c.maxStepElems = maxStep;
  if (coll == algo::Collective::kAllToAllv) {
    std::mt19937 rng(static_cast<uint32_t>(n * 31 + count));
    c.vcounts.assign(n, std::vector<uint64_t>(n));
    for (auto& row : c.vcounts) {
      for (auto& x : row) x = rng() % (count + 1);
    }
  }
  return c;
}

// Runs the case through `run` (default: the simulator); "" on success, else what went
// wrong (its error or the first mismatches).
std::string checkCollective(const ScheduleFn& build, const CheckCase& c, const RunFn& run = {});

// ---- implementation (header-only so every test binary can use it) ----

inline std::string CheckCase::describe() const {
  return std::string(algo::collectiveName(collective)) + " n=" + std::to_string(nranks) +
         " count=" + std::to_string(count) + " type=" + std::to_string(datatype) +
         " op=" + std::to_string(op) + " root=" + std::to_string(root) +
         (inPlace ? " in-place" : " out-of-place") + " maxStep=" + std::to_string(maxStepElems) +
         " fifo=" + std::to_string(fifoMessages);
}

namespace detail {

// Packed displacements with a one-element gap after each block.
inline std::vector<uint64_t> displs(const std::vector<uint64_t>& counts, uint64_t* total) {
  std::vector<uint64_t> d(counts.size());
  uint64_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    d[i] = at;
    at += counts[i] + 1;
  }
  *total = at;
  return d;
}

}  // namespace detail

inline std::string checkCollective(const ScheduleFn& build, const CheckCase& c, const RunFn& run) {
  using algo::Collective;
  const int n = c.nranks;
  const size_t es = elemSize(c.datatype);
  const braidRedOp_t valueOp = algo::reduces(c.collective) ? c.op : braidSum;
  std::vector<algo::RankLayout> lay(n);
  std::vector<std::vector<uint64_t>> sd(n), rd(n), sc(n), rc(n);
  for (int r = 0; r < n; ++r) {
    lay[r] = algo::rankLayout(c.collective, n, r, c.count, c.root, c.inPlace);
    if (c.collective == Collective::kAllToAllv) {
      for (int p = 0; p < n; ++p) {
        sc[r].push_back(c.vcounts[r][p]);
        rc[r].push_back(c.vcounts[p][r]);
      }
      sd[r] = detail::displs(sc[r], &lay[r].inputElems);
      rd[r] = detail::displs(rc[r], &lay[r].outputElems);
    }
  }
  // Reductions need values whose results stay exact; movement needs values
  // that tell every (rank, index) apart.
  const bool reducing = algo::reduces(c.collective);
  auto value = [&](int p, uint64_t i) {
    return reducing ? inputValue(c.datatype, valueOp, p, n, i) : movementValue(c.datatype, p, i);
  };
  std::vector<algo::Schedule> scheds;
  std::vector<SimRank> ranks(n);
  for (int r = 0; r < n; ++r) {
    const algo::RankLayout& l = lay[r];
    algo::CollArgs a;
    a.collective = c.collective;
    a.rank = r;
    a.nranks = n;
    a.count = c.count;
    a.elemSize = static_cast<uint32_t>(es);
    a.inPlace = c.inPlace;
    a.root = c.root;
    a.maxStepElems = c.maxStepElems;
    a.sendCounts = sc[r];
    a.sendDispls = sd[r];
    a.recvCounts = rc[r];
    a.recvDispls = rd[r];
    scheds.push_back(build(a));
    SimRank& sr = ranks[r];
    sr.input.assign(l.inputElems * es, 0);
    for (uint64_t i = 0; i < l.inputElems; ++i) {
      store(c.datatype, sr.input.data(), i, value(r, i));
    }
    sr.output.assign((l.inPlace ? l.storageElems : l.outputElems) * es, 0x5a);
    if (l.inPlace) {
      sr.inPlace = true;
      sr.inPlaceOffset = l.inPlaceOffset;
      sr.outputOffset = l.outputOffset;
      sr.outputElems = l.outputWindow;
      std::copy(sr.input.begin(), sr.input.end(), sr.output.begin() + l.inPlaceOffset * es);
    }
  }
  SimOptions opts;
  opts.fifoMessages = c.fifoMessages;
  Status st = run ? run(scheds, c.datatype, c.op, ranks, opts)
                  : simulate(scheds, c.datatype, c.op, ranks, opts);
  if (!st.isOk()) return c.describe() + ": " + (run ? "" : "simulator: ") + st.message();
  // Expected value of rank r's output element j, or false when not defined.
  auto expected = [&](int r, uint64_t j, double* v) -> bool {
    if (c.collective == Collective::kAllToAllv) {
      for (int p = 0; p < n; ++p) {
        if (j >= rd[r][p] && j < rd[r][p] + rc[r][p]) {
          *v = value(p, sd[p][r] + (j - rd[r][p]));
          return true;
        }
      }
      return false;  // a gap
    }
    const algo::OutputSource from = algo::outputSource(c.collective, r, c.count, c.root, j);
    switch (from.kind) {
      case algo::OutputSource::Kind::kReduce:
        *v = expectedValue(c.datatype, c.op, n, from.index);
        return true;
      case algo::OutputSource::Kind::kCopy:
        *v = value(from.from, from.index);
        return true;
      case algo::OutputSource::Kind::kUndefined:
        break;
    }
    return false;
  };
  std::string problems;
  int shown = 0;
  for (int r = 0; r < n; ++r) {
    const algo::RankLayout& l = lay[r];
    const uint8_t* out = ranks[r].output.data() + (l.inPlace ? l.outputOffset * es : 0);
    for (uint64_t j = 0; j < l.outputElems; ++j) {
      double want = 0;
      if (!expected(r, j, &want)) continue;
      double got = load(c.datatype, out, j);
      if (got == want) continue;
      if (shown++ < 4) {
        problems += "rank " + std::to_string(r) + " output[" + std::to_string(j) +
                    "] = " + std::to_string(got) + ", want " + std::to_string(want) + "; ";
      }
    }
  }
  if (!problems.empty()) return c.describe() + ": " + problems;
  return "";
}

}  // namespace braid::test
