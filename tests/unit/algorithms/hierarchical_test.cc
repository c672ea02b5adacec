// The hierarchical family (algorithms/hierarchical) through the simulator
// checker (coll_check.h), whose expected values come from an independent
// reference: node shapes equal and unequal, contiguous and interleaved, counts
// around the node arithmetic, step sizes from 3 elements up, in place and out
// of place, several types and ops. Shapes are checked on the schedules
// themselves: steps within maxStepElems, network messages only along rails,
// and each rank's network traffic as the arithmetic in hierarchical.h says.
#include "algorithms/hierarchical/hierarchical.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "coll_check.h"

namespace braid::test {
namespace {

using algo::Collective;
using algo::Schedule;

struct Family {
  const char* name;
  Schedule (*fn)(const algo::CollArgs&);
  Collective c;
};

const Family kFamily[] = {
    {"allreduce", algo::hierarchicalAllReduce, Collective::kAllReduce},
    {"allgather", algo::hierarchicalAllGather, Collective::kAllGather},
    {"reducescatter", algo::hierarchicalReduceScatter, Collective::kReduceScatter},
    {"broadcast", algo::hierarchicalBroadcast, Collective::kBroadcast},
};

// `nodes` nodes of `locals` ranks, ranks of a node contiguous.
std::vector<int> grid(int nodes, int locals) {
  std::vector<int> v;
  for (int q = 0; q < nodes; ++q) v.insert(v.end(), locals, q);
  return v;
}

std::vector<std::vector<int>> shapes() {
  std::vector<std::vector<int>> s;
  for (auto [n, l] :
       {std::pair{1, 1}, {1, 4}, {2, 1}, {2, 2}, {2, 3}, {3, 2}, {4, 2}, {2, 4}, {3, 3}}) {
    s.push_back(grid(n, l));
  }
  s.push_back({0, 0, 0, 1});           // uneven [3, 1]
  s.push_back({0, 1, 1, 2, 2});        // uneven [1, 2, 2]
  s.push_back({0, 1, 0, 1, 0, 1});     // interleaved, r % 2
  s.push_back({7, 3, 3, 7, 5, 5});     // arbitrary ids, equal sizes
  s.push_back({2, 0, 1, 0, 2, 2, 1});  // arbitrary ids, uneven [3, 2, 2]
  return s;
}

// Builds with `nodes` as nodeOf, and checks every step fits maxStepElems.
ScheduleFn withNodes(const Family& f, const std::vector<int>& nodes) {
  return [fn = f.fn, nodes](algo::CollArgs a) {
    a.nodeOf = nodes;
    Schedule s = fn(a);
    for (const algo::Step& st : s.steps) EXPECT_LE(st.count, a.maxStepElems);
    return s;
  };
}

std::string run(const Family& f, const std::vector<int>& nodes, CheckCase c) {
  c.collective = f.c;
  c.nranks = static_cast<int>(nodes.size());
  const std::string err = checkCollective(withNodes(f, nodes), c);
  return err.empty() ? err
                     : std::string(f.name) + " nodes=" + std::to_string(nodes.size()) + ": " + err;
}

TEST(Hierarchical, EveryShapeCountStepAndPlacement) {
  for (const Family& f : kFamily) {
    for (const auto& nodes : shapes()) {
      const int n = static_cast<int>(nodes.size());
      for (uint64_t count :
           {uint64_t{0}, uint64_t{1}, uint64_t(n - 1), uint64_t(n + 1), uint64_t{1009}}) {
        for (uint64_t step : {uint64_t{3}, uint64_t{64}, uint64_t{1} << 16}) {
          for (bool inPlace : {false, true}) {
            for (int root : {0, n - 1, n / 2}) {
              if (f.c != Collective::kBroadcast && root != 0) continue;
              CheckCase c;
              c.count = count;
              c.maxStepElems = step;
              c.inPlace = inPlace;
              c.root = root;
              EXPECT_EQ(run(f, nodes, c), "");
            }
          }
        }
      }
    }
  }
}

TEST(Hierarchical, LargeGrids) {
  for (const Family& f : kFamily) {
    for (const auto& nodes : {grid(16, 4), grid(8, 8)}) {
      const int n = static_cast<int>(nodes.size());
      for (uint64_t count : {uint64_t{1}, uint64_t(n + 1), uint64_t{1009}}) {
        CheckCase c;
        c.count = count;
        c.maxStepElems = 64;
        c.inPlace = count == 1;
        c.root = n - 3;
        EXPECT_EQ(run(f, nodes, c), "");
      }
    }
  }
}

TEST(Hierarchical, TypesAndOps) {
  const braidDataType_t kTypes[] = {braidInt32, braidFloat16, braidFloat32, braidBfloat16,
                                    braidUint8};
  for (const Family& f : kFamily) {
    for (const auto& nodes : {grid(2, 3), std::vector<int>{0, 1, 1, 2, 2}}) {
      for (braidDataType_t t : kTypes) {
        for (int op = 0; op < braidNumOps; ++op) {
          CheckCase c;
          c.count = 37;
          c.maxStepElems = 5;
          c.datatype = t;
          c.op = static_cast<braidRedOp_t>(op);
          c.root = 2;
          EXPECT_EQ(run(f, nodes, c), "") << "type " << t << " op " << op;
        }
      }
    }
  }
}

TEST(Hierarchical, FifoOfOneIsEnoughForBroadcast) {
  for (const auto& nodes : {grid(3, 3), std::vector<int>{0, 1, 1, 2, 2}}) {
    CheckCase c;
    c.count = 100;
    c.maxStepElems = 7;
    c.fifoMessages = 1;
    c.root = 4;
    EXPECT_EQ(run(kFamily[3], nodes, c), "");
  }
}

// Every rank's schedule for `nodes`.
std::vector<Schedule> build(const Family& f, const std::vector<int>& nodes, uint64_t count,
                            uint64_t step, int root = 0) {
  std::vector<Schedule> out;
  for (int r = 0; r < static_cast<int>(nodes.size()); ++r) {
    algo::CollArgs a;
    a.collective = f.c;
    a.rank = r;
    a.nranks = static_cast<int>(nodes.size());
    a.count = count;
    a.maxStepElems = step;
    a.root = root;
    a.nodeOf = nodes;
    out.push_back(f.fn(a));
  }
  return out;
}

// Elements each rank sends to other nodes, checking on the way that every
// step fits maxStepElems and every network message stays on a rail: between
// ranks of the same local index (how many lower ranks share the node).
std::vector<uint64_t> networkSent(const std::vector<Schedule>& scheds,
                                  const std::vector<int>& nodes, uint64_t step) {
  std::vector<uint64_t> sent(scheds.size(), 0);
  std::vector<int> local(nodes.size(), 0);
  for (size_t r = 0; r < nodes.size(); ++r) {
    for (size_t p = 0; p < r; ++p) local[r] += nodes[p] == nodes[r] ? 1 : 0;
  }
  for (size_t r = 0; r < scheds.size(); ++r) {
    for (const algo::Step& st : scheds[r].steps) {
      EXPECT_LE(st.count, step);
      if (st.sendPeer < 0 || nodes[st.sendPeer] == nodes[r]) continue;
      EXPECT_EQ(local[st.sendPeer], local[r]) << "rank " << r;
      sent[r] += st.count;
    }
  }
  return sent;
}

TEST(Hierarchical, AllReduceTrafficStaysOnRails) {
  // Grids, and nodes interleaved (r % 2) or named out of order.
  const std::vector<std::vector<int>> shapes = {grid(4, 2), grid(2, 4),         grid(3, 3),
                                                grid(4, 4), {0, 1, 0, 1, 0, 1}, {7, 3, 3, 7, 5, 5}};
  for (const auto& nodes : shapes) {
    const int l = static_cast<int>(std::count(nodes.begin(), nodes.end(), nodes[0]));
    const int n = static_cast<int>(nodes.size()) / l;
    const uint64_t count = uint64_t{4096} * n * l;  // every round splits evenly
    for (uint64_t step : {uint64_t{64}, uint64_t{1} << 16}) {
      const auto sent = networkSent(build(kFamily[0], nodes, count, step), nodes, step);
      const uint64_t want = 2 * (count / l) * (n - 1) / n;
      for (uint64_t s : sent) EXPECT_EQ(s, want) << n << "x" << l << " step " << step;
    }
  }
}

TEST(Hierarchical, GatherScatterTrafficStaysOnRails) {
  const int n = 3, l = 4;
  const std::vector<int> nodes = grid(n, l);
  const uint64_t count = 1000;
  for (const Family* f : {&kFamily[1], &kFamily[2]}) {
    const auto sent = networkSent(build(*f, nodes, count, 64), nodes, 64);
    for (uint64_t s : sent) EXPECT_EQ(s, (n - 1) * count) << f->name;
  }
}

TEST(Hierarchical, BroadcastCrossesTheNetworkOncePerNode) {
  const std::vector<int> nodes = {0, 0, 1, 1, 1, 2};
  const uint64_t count = 300;
  for (int root : {0, 3, 5}) {
    uint64_t total = 0;
    for (const Schedule& s : build(kFamily[3], nodes, count, 64, root)) {
      for (const algo::Step& st : s.steps) {
        if (st.sendPeer >= 0 && nodes[st.sendPeer] != nodes[s.rank]) total += st.count;
      }
    }
    EXPECT_EQ(total, 2 * count) << "root " << root;
  }
}

TEST(Hierarchical, OneNodeIsAPlainRing) {
  // nodeOf empty, all equal, or of the wrong size: the same single ring.
  for (const Family& f : kFamily) {
    const auto ref = build(f, {5, 5, 5, 5, 5}, 777, 16);
    for (const auto& nodes : {std::vector<int>{}, std::vector<int>{1, 2}}) {
      for (int r = 0; r < 5; ++r) {
        algo::CollArgs a;
        a.collective = f.c;
        a.rank = r;
        a.nranks = 5;
        a.count = 777;
        a.maxStepElems = 16;
        a.nodeOf = nodes;
        const Schedule s = f.fn(a);
        ASSERT_EQ(s.steps.size(), ref[r].steps.size()) << f.name;
        for (size_t i = 0; i < s.steps.size(); ++i) {
          EXPECT_EQ(s.steps[i].sendPeer, ref[r].steps[i].sendPeer);
          EXPECT_EQ(s.steps[i].recvPeer, ref[r].steps[i].recvPeer);
          EXPECT_EQ(s.steps[i].count, ref[r].steps[i].count);
        }
        for (const algo::Step& st : s.steps) {
          if (st.sendPeer >= 0) {
            EXPECT_EQ(st.sendPeer, (r + 1) % 5) << f.name;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace braid::test
