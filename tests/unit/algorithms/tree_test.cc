// Double binary tree (algorithms/tree): the trees' shape for nranks 1..130,
// then all-reduce, broadcast and reduce through the simulator checker
// (coll_check.h, expected values from tests/common/reference.h): nranks 1..17,
// 31, 32, 33 and 64, counts 0, 1, around nranks and odd larger ones, steps from
// one element up, in place and out of place, roots 0, middle and last, every
// datatype and op, the FIFO sizes needed. Besides the results, every schedule's
// shape: peers are tree links, messages within maxStepElems, only the root
// finalises, in place no input element read after its output alias was written,
// no non-root reduce output written or broadcast input read, and pipelining by
// depth (tree.cc).
#include "algorithms/tree/tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "coll_check.h"

namespace braid::test {
namespace {

using algo::BufRef;
using algo::Collective;
using algo::OpKind;
using algo::Schedule;
using algo::Step;
using algo::TreeLinks;

constexpr Collective kFamily[] = {Collective::kAllReduce, Collective::kBroadcast,
                                  Collective::kReduce};
constexpr braidDataType_t kTypes[] = {braidInt8,    braidUint8,   braidInt32,   braidUint32,
                                      braidInt64,   braidUint64,  braidFloat16, braidFloat32,
                                      braidFloat64, braidBfloat16};
constexpr braidRedOp_t kOps[] = {braidSum, braidProd, braidMax, braidMin, braidAvg};

int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// Problems with tree t over n ranks: links that disagree, a rank reached twice
// or never from rank 0, a tree deeper than ceil(log2 n).
std::string treeProblems(int n, int t) {
  const std::string at = "n=" + std::to_string(n) + " tree " + std::to_string(t) + ": ";
  std::vector<TreeLinks> links(n);
  for (int r = 0; r < n; ++r) links[r] = algo::doubleBinaryTree(r, n, t);
  if (links[0].parent != -1) return at + "rank 0 has a parent";
  std::vector<int> depth(n, -1);
  std::vector<int> frontier = {0};
  depth[0] = 0;
  while (!frontier.empty()) {
    const int r = frontier.back();
    frontier.pop_back();
    if (links[r].child0 != -1 && links[r].child0 == links[r].child1) return at + "twin children";
    for (int c : {links[r].child0, links[r].child1}) {
      if (c == -1) continue;
      const std::string link = std::to_string(r) + " -> " + std::to_string(c);
      if (c < 0 || c >= n) return at + "child out of range: " + link;
      if (depth[c] != -1) return at + "rank reached twice: " + link;
      if (links[c].parent != r) return at + "child's parent is not its parent: " + link;
      depth[c] = depth[r] + 1;
      frontier.push_back(c);
    }
  }
  for (int r = 0; r < n; ++r) {
    if (depth[r] == -1) return at + "rank " + std::to_string(r) + " unreachable from the root";
    if (depth[r] > ceilLog2(n)) return at + "rank " + std::to_string(r) + " too deep";
  }
  return "";
}

bool interior(const TreeLinks& l) { return l.child0 != -1 || l.child1 != -1; }

TEST(DoubleBinaryTree, ShapeForEveryRankCountUpTo130) {
  for (int n = 1; n <= 130; ++n) {
    for (int t : {0, 1}) EXPECT_EQ(treeProblems(n, t), "");
    // Every rank but the root is interior in at most one tree, so it forwards
    // at most half of the data; and from 3 ranks no rank is another's parent in
    // both trees, which lets broadcast and reduce run with one-message FIFOs.
    for (int r = 1; r < n; ++r) {
      const TreeLinks l0 = algo::doubleBinaryTree(r, n, 0), l1 = algo::doubleBinaryTree(r, n, 1);
      EXPECT_FALSE(interior(l0) && interior(l1)) << "n=" << n << " rank " << r;
      EXPECT_TRUE(n < 3 || l0.parent != l1.parent) << "n=" << n << " rank " << r;
    }
  }
}

TEST(DoubleBinaryTree, EightRanksAsDocumented) {
  // tree 0: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7
  // tree 1: 0 -> 3; 3 -> 1, 5; 1 -> 7, 2; 5 -> 4, 6
  const int parents[2][8] = {{-1, 2, 4, 2, 0, 6, 4, 6}, {-1, 3, 1, 0, 5, 3, 5, 1}};
  for (int t : {0, 1}) {
    for (int r = 0; r < 8; ++r) EXPECT_EQ(algo::doubleBinaryTree(r, 8, t).parent, parents[t][r]);
  }
  const TreeLinks four = algo::doubleBinaryTree(4, 8, 0);
  EXPECT_EQ(four.child0, 2);
  EXPECT_EQ(four.child1, 6);
  const TreeLinks one = algo::doubleBinaryTree(1, 8, 1);
  EXPECT_EQ(one.child0, 7);
  EXPECT_EQ(one.child1, 2);
}

TEST(DoubleBinaryTree, DegenerateArguments) {
  for (auto [r, n] : {std::pair{0, 1}, std::pair{-1, 4}, std::pair{4, 4}}) {
    const TreeLinks l = algo::doubleBinaryTree(r, n, 0);
    EXPECT_TRUE(l.parent == -1 && l.child0 == -1 && l.child1 == -1) << r << " of " << n;
  }
}

algo::Schedule (*treeFor(Collective c))(const algo::CollArgs&) {
  if (c == Collective::kAllReduce) return algo::treeAllReduce;
  return c == Collective::kBroadcast ? algo::treeBroadcast : algo::treeReduce;
}

std::vector<int> rootsFor(Collective c, int n) {
  if (c == Collective::kAllReduce) return {0};
  std::vector<int> roots = {0, n / 2, n - 1};
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

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

bool isLink(int peer, int r, int n, int root) {
  const int v = (r - root + n) % n;
  for (int t : {0, 1}) {
    const TreeLinks l = algo::doubleBinaryTree(v, n, t);
    for (int w : {l.parent, l.child0, l.child1}) {
      if (w != -1 && (w + root) % n == peer) return true;
    }
  }
  return false;
}

// Structural problems of rank r's schedule that the results alone may not show.
std::string shapeProblems(const CheckCase& c, int r) {
  const Schedule s = treeFor(c.collective)(argsOf(c, r));
  const int n = c.nranks;
  const int root = c.collective == Collective::kAllReduce ? 0 : c.root;
  std::vector<bool> clobbered(c.count);
  uint64_t finalised = 0;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    const std::string at = "rank " + std::to_string(r) + " step " + std::to_string(i) + ": ";
    for (int peer : {st.sendPeer, st.recvPeer}) {
      if (peer != -1 && !isLink(peer, r, n, root)) return at + "talks to a non-neighbour";
    }
    const bool moves = st.sendPeer != -1 || st.recvPeer != -1;  // a local copy may be longer
    if (moves && st.count > c.maxStepElems) return at + "message over maxStepElems";
    if (st.count == 0) return at + "an empty step";
    if (st.final) finalised += st.count;
    if (st.final && r != root) return at + "finalises off the root";
    if (c.collective == Collective::kReduce && r != root && st.dst == BufRef::kOutput) {
      return at + "writes a non-root reduce output";
    }
    if (c.collective == Collective::kBroadcast && r != root && st.src == BufRef::kInput) {
      return at + "reads a non-root broadcast input";
    }
    if (!c.inPlace) continue;
    for (uint64_t j = 0; j < st.count && st.src == BufRef::kInput; ++j) {
      if (clobbered[st.srcOffset + j]) return at + "reads an overwritten input element";
    }
    for (uint64_t j = 0; j < st.count && st.dst == BufRef::kOutput; ++j) {
      clobbered[st.dstOffset + j] = true;
    }
  }
  const bool reduces = c.collective != Collective::kBroadcast;
  if (reduces && r == root && finalised != c.count) {
    return "root finalises " + std::to_string(finalised) + " of " + std::to_string(c.count);
  }
  return "";
}

void expectRight(const CheckCase& c) {
  SCOPED_TRACE(c.describe());
  EXPECT_EQ(checkCollective(treeFor(c.collective), c), "");
  for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(shapeProblems(c, r), "");
}

CheckCase makeCase(Collective coll, int n, uint64_t count, uint64_t maxStep, int root,
                   bool inPlace) {
  CheckCase c;
  c.collective = coll;
  c.nranks = n;
  c.count = count;
  c.maxStepElems = maxStep;
  c.root = root;
  c.inPlace = inPlace;
  return c;
}

class TreeSweep : public ::testing::TestWithParam<std::tuple<Collective, bool>> {};

// Every nranks up to 17; one-element steps only where that stays fast.
TEST_P(TreeSweep, SmallTreesManyCounts) {
  const auto [coll, inPlace] = GetParam();
  for (int n = 1; n <= 17; ++n) {
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t(n - 1), uint64_t(n + 1),
                           uint64_t{1009}, uint64_t{20011}}) {
      std::vector<uint64_t> steps = {64, 1 << 16};
      if (count <= 1009) steps.push_back(5);
      if (count < 1009) steps.push_back(1);
      for (uint64_t maxStep : steps) {
        for (int root : rootsFor(coll, n)) {
          expectRight(makeCase(coll, n, count, maxStep, root, inPlace));
        }
      }
    }
  }
}

// Larger trees, whose ranks have two children, with few counts.
TEST_P(TreeSweep, LargeTrees) {
  const auto [coll, inPlace] = GetParam();
  for (int n : {31, 32, 33, 64}) {
    for (uint64_t count : {uint64_t{1}, uint64_t(n - 1), uint64_t(n + 1), uint64_t{1009}}) {
      for (uint64_t maxStep : {uint64_t{5}, uint64_t{1} << 16}) {
        for (int root : rootsFor(coll, n)) {
          expectRight(makeCase(coll, n, count, maxStep, root, inPlace));
        }
      }
    }
  }
}

// Every datatype, and every op for the reducing collectives.
TEST_P(TreeSweep, EveryDatatypeAndOp) {
  const auto [coll, inPlace] = GetParam();
  for (auto [n, count, maxStep] : {std::tuple{3, 13, 4}, std::tuple{11, 1009, 64}}) {
    for (braidDataType_t type : kTypes) {
      for (braidRedOp_t op : kOps) {
        if (coll == Collective::kBroadcast && op != braidSum) continue;
        for (int root : rootsFor(coll, n)) {
          CheckCase c = makeCase(coll, n, count, maxStep, root, inPlace);
          c.datatype = type;
          c.op = op;
          expectRight(c);
        }
      }
    }
  }
}

// Broadcast and reduce use each channel for one tree only, so FIFOs of one
// message suffice; all-reduce's channels may carry a message of each tree and
// need two (tree.cc). The simulator must say so.
TEST_P(TreeSweep, FifoMessagesNeeded) {
  const auto [coll, inPlace] = GetParam();
  for (int n : {2, 3, 5, 8, 13, 33}) {
    for (int root : rootsFor(coll, n)) {
      CheckCase c = makeCase(coll, n, 2003, 7, root, inPlace);
      c.fifoMessages = 1;
      if (coll != Collective::kAllReduce) {
        expectRight(c);
        continue;
      }
      SCOPED_TRACE(c.describe());
      EXPECT_NE(checkCollective(treeFor(coll), c).find("deadlock"), std::string::npos);
      c.fifoMessages = 2;
      expectRight(c);
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<TreeSweep::ParamType>& info) {
  return std::string(algo::collectiveName(std::get<0>(info.param))) +
         (std::get<1>(info.param) ? "InPlace" : "OutOfPlace");
}

INSTANTIATE_TEST_SUITE_P(Tree, TreeSweep,
                         ::testing::Combine(::testing::ValuesIn(kFamily), ::testing::Bool()),
                         paramName);

Schedule build(Collective coll, int n, int r, uint64_t count, uint64_t maxStep, int root = 0) {
  return treeFor(coll)(argsOf(makeCase(coll, n, count, maxStep, root, false), r));
}

// One rank: one copy, finalised for the reducing collectives; nothing at all
// for zero elements.
TEST(TreeShape, OneRankAndNoElements) {
  for (Collective coll : kFamily) {
    SCOPED_TRACE(algo::collectiveName(coll));
    const Schedule s = build(coll, 1, 0, 100, 7);
    ASSERT_EQ(s.steps.size(), 1u);
    EXPECT_EQ(s.steps[0].op, OpKind::kCopy);
    EXPECT_EQ(s.steps[0].count, 100u);
    EXPECT_EQ(s.steps[0].final, coll != Collective::kBroadcast);
    for (int r = 0; r < 5; ++r) EXPECT_TRUE(build(coll, 5, r, 0, 7).steps.empty());
  }
}

// Each half crosses each tree edge once up and once down, in pieces.
TEST(TreeShape, AllReduceMessageCounts) {
  const int n = 8;
  const uint64_t count = 40, maxStep = 7;  // halves of 20: three pieces each
  uint64_t sent = 0, received = 0, messages = 0;
  for (int r = 0; r < n; ++r) {
    for (const Step& st : build(Collective::kAllReduce, n, r, count, maxStep).steps) {
      if (st.sendPeer != -1) {
        sent += st.count;
        ++messages;
      }
      if (st.recvPeer != -1) received += st.count;
    }
  }
  EXPECT_EQ(sent, 2 * (n - 1) * count);  // (n - 1) edges per tree, up and down
  EXPECT_EQ(received, sent);
  EXPECT_EQ(messages, 2u * 2 * (n - 1) * 3);
}

// All-reduce pipelines by depth (tree.cc): a rank at depth d of a tree sends
// 2d + 1 pieces of that tree's half up before the first comes back down, so a
// leaf does not wait for a round trip through the tree per piece.
TEST(TreeShape, AllReduceRunsAheadByDepth) {
  const int n = 13;
  const uint64_t count = 2 * 5 * 40, half = count / 2, maxStep = 5;  // 40 pieces per half
  for (int r = 1; r < n; ++r) {
    for (int t : {0, 1}) {
      const int parent = algo::doubleBinaryTree(r, n, t).parent;
      int depth = 0;
      for (int p = r; p != 0; p = algo::doubleBinaryTree(p, n, t).parent) ++depth;
      auto inHalf = [&](uint64_t offset) { return (offset < half) == (t == 0); };
      int sentUp = 0;
      for (const Step& st : build(Collective::kAllReduce, n, r, count, maxStep).steps) {
        const bool down = st.op == OpKind::kRecv || st.op == OpKind::kRecvCopySend;
        if (down && st.recvPeer == parent && inHalf(st.dstOffset)) break;
        if (!down && st.sendPeer == parent && inHalf(st.srcOffset)) ++sentUp;
      }
      EXPECT_EQ(sentUp, 2 * depth + 1) << "rank " << r << " tree " << t;
    }
  }
}

// Broadcast and reduce pipeline by depth too: a rank at depths d0 and d1 of the
// two trees handles piece k of tree 0 in slot k + d0 (broadcast; reduce: k - d0)
// and piece j of tree 1 in slot j + d1 (j - d1), tree 0 first in a slot. So
// before its k-th tree-0 message it has k + d0 - d1 (k - d0 + d1) tree-1
// messages, within [0, pieces]. The trees are told apart by the parent.
TEST(TreeShape, BroadcastAndReduceRunAheadByDepth) {
  const int n = 13, root = 2, pieces = 20;
  const uint64_t count = 2 * 5 * pieces, maxStep = 5;
  for (Collective coll : {Collective::kBroadcast, Collective::kReduce}) {
    const bool down = coll == Collective::kBroadcast;
    for (int r = 0; r < n; ++r) {
      if (r == root) continue;
      const int v = (r - root + n) % n;
      int parent[2], depth[2] = {0, 0};
      for (int t : {0, 1}) {
        parent[t] = (algo::doubleBinaryTree(v, n, t).parent + root) % n;
        for (int p = v; p != 0; p = algo::doubleBinaryTree(p, n, t).parent) ++depth[t];
      }
      const int shift = down ? depth[0] - depth[1] : depth[1] - depth[0];
      int seen[2] = {0, 0};
      for (const Step& st : build(coll, n, r, count, maxStep, root).steps) {
        const int peer = down ? st.recvPeer : st.sendPeer;
        if (peer != parent[0] && peer != parent[1]) continue;
        if (peer == parent[0]) {
          EXPECT_EQ(seen[1], std::clamp(seen[0] + shift, 0, pieces))
              << algo::collectiveName(coll) << " rank " << r << " tree-0 piece " << seen[0];
        }
        ++seen[peer == parent[0] ? 0 : 1];
      }
      EXPECT_EQ(seen[0], pieces);
      EXPECT_EQ(seen[1], pieces);
    }
  }
}

// Non-root ranks of a reduce with two children keep partials in scratch of one
// piece; leaves and the root need none. With 8 ranks, ranks 1..6 after the root
// have two children in one of the trees and rank 7 after it is a leaf in both.
TEST(TreeShape, ReduceScratch) {
  const int n = 8, root = 3;
  for (int r = 0; r < n; ++r) {
    const Schedule s = build(Collective::kReduce, n, r, 1000, 64, root);
    bool usesScratch = false;
    for (const Step& st : s.steps) usesScratch |= st.dst == BufRef::kScratch;
    EXPECT_EQ(s.scratchElems, usesScratch ? 64u : 0u) << "rank " << r;
    const int v = (r - root + n) % n;
    EXPECT_EQ(usesScratch, v >= 1 && v <= 6) << "rank " << r;
  }
}

}  // namespace
}  // namespace braid::test
