// Rank arithmetic of the hierarchical family; see hierarchical.h for the
// scheme. Everything is built from two ring passes over a group of ranks
// (reduce-scatter, all-gather) and a chain, each given the blocks it moves.
#include "algorithms/hierarchical/hierarchical.h"

#include <algorithm>
#include <limits>
#include <map>

namespace braid::algo {
namespace {

struct Block {
  uint64_t offset;
  uint64_t count;
};

// The communicator's nodes (see hierarchical.h) and this rank's place in them.
struct Topo {
  std::vector<std::vector<int>> nodes;
  int node = 0;   // this rank's node
  int local = 0;  // this rank's index in its node
  bool equal = true;
};

// An ordered group of ranks (a ring or a chain) and this rank's position in it.
struct Group {
  std::vector<int> ranks;
  int pos = -1;  // -1: not a member
  int size() const { return static_cast<int>(ranks.size()); }
  int at(int p) const { return ranks[((p % size()) + size()) % size()]; }
};

int wrap(int x, int n) { return ((x % n) + n) % n; }

Topo topoOf(const CollArgs& a) {
  Topo t;
  std::map<int, int> index;  // node id -> node number, by lowest rank
  const bool valid = static_cast<int>(a.nodeOf.size()) == a.nranks;
  for (int r = 0; r < a.nranks; ++r) {
    const int id = valid ? a.nodeOf[r] : 0;
    auto it = index.emplace(id, static_cast<int>(index.size())).first;
    if (it->second == static_cast<int>(t.nodes.size())) t.nodes.emplace_back();
    std::vector<int>& members = t.nodes[it->second];
    if (r == a.rank) {
      t.node = it->second;
      t.local = static_cast<int>(members.size());
    }
    members.push_back(r);
  }
  for (const auto& m : t.nodes) t.equal = t.equal && m.size() == t.nodes[0].size();
  return t;
}

// One node holding every rank, node by node: the fallback ring's order.
Topo flatten(const Topo& t, int rank) {
  Topo f;
  f.nodes.emplace_back();
  for (const auto& m : t.nodes) {
    for (int r : m) {
      if (r == rank) f.local = static_cast<int>(f.nodes[0].size());
      f.nodes[0].push_back(r);
    }
  }
  return f;
}

Group intraGroup(const Topo& t) { return {t.nodes[t.node], t.local}; }

Group railGroup(const Topo& t) {
  Group g{{}, t.node};
  for (const auto& m : t.nodes) g.ranks.push_back(m[t.local]);
  return g;
}

Schedule emptySchedule(const CollArgs& a) {
  Schedule s;
  s.rank = a.rank;
  s.nranks = a.nranks;
  s.count = a.count;
  return s;
}

uint64_t maxStep(const CollArgs& a) { return std::max<uint64_t>(1, a.maxStepElems); }

uint64_t saturatingMul(uint64_t x, uint64_t y) {
  return x > std::numeric_limits<uint64_t>::max() / y ? std::numeric_limits<uint64_t>::max()
                                                      : x * y;
}

// Part k of [start, start + count) cut into n near-equal parts.
Block split(uint64_t start, uint64_t count, int n, int k) {
  const uint64_t base = count / n, extra = count % n, uk = static_cast<uint64_t>(k);
  return {start + uk * base + std::min(uk, extra), base + (uk < extra ? 1 : 0)};
}

void push(Schedule& s, OpKind op, BufRef src, uint64_t srcOff, BufRef dst, uint64_t dstOff,
          int sendPeer, int recvPeer, uint64_t count, bool final = false) {
  s.steps.push_back({op, src, dst, sendPeer, recvPeer, srcOff, dstOff, count, final});
}

// Ring reduce-scatter over g: member p ends with blocks[p] (read from src on
// every member) reduced over the group, written to dst at dstOff. As in
// ringReduceScatter, member p reads its own block only at its last step.
void ringReduceScatter(Schedule& s, const Group& g, BufRef src, const std::vector<Block>& blocks,
                       BufRef dst, uint64_t dstOff, bool final) {
  const int n = g.size(), p = g.pos;
  auto blk = [&](int b) { return blocks[wrap(b, n)]; };
  if (n == 1) {
    if (final || src != dst || blocks[0].offset != dstOff) {
      push(s, OpKind::kCopy, src, blocks[0].offset, dst, dstOff, -1, -1, blocks[0].count, final);
    }
    return;
  }
  const int next = g.at(p + 1), prev = g.at(p - 1);
  push(s, OpKind::kSend, src, blk(p - 1).offset, BufRef::kNone, 0, next, -1, blk(p - 1).count);
  for (int k = 1; k < n - 1; ++k) {
    const Block b = blk(p - 1 - k);
    push(s, OpKind::kRecvReduceSend, src, b.offset, BufRef::kNone, 0, next, prev, b.count);
  }
  push(s, OpKind::kRecvReduce, src, blk(p).offset, dst, dstOff, -1, prev, blk(p).count, final);
}

// Ring all-gather over g inside the output: member p holds blocks[p] and ends
// with all of them.
void ringAllGather(Schedule& s, const Group& g, const std::vector<Block>& blocks) {
  const int n = g.size(), p = g.pos;
  if (n == 1) return;
  const int next = g.at(p + 1), prev = g.at(p - 1);
  const BufRef out = BufRef::kOutput;
  push(s, OpKind::kSend, out, blocks[p].offset, BufRef::kNone, 0, next, -1, blocks[p].count);
  for (int k = 1; k < n; ++k) {
    const Block b = blocks[wrap(p - k, n)];
    if (k == n - 1) {
      push(s, OpKind::kRecv, BufRef::kNone, 0, out, b.offset, -1, prev, b.count);
    } else {
      push(s, OpKind::kRecvCopySend, BufRef::kNone, 0, out, b.offset, next, prev, b.count);
    }
  }
}

// One piece down a chain: the head sends it from src, the others receive it
// into the output and pass it on.
void chainPiece(Schedule& s, const Group& g, BufRef src, Block b) {
  const int n = g.size(), p = g.pos;
  if (p < 0 || n == 1) return;
  const int next = p + 1 < n ? g.ranks[p + 1] : -1;
  if (p == 0) {
    push(s, OpKind::kSend, src, b.offset, BufRef::kNone, 0, next, -1, b.count);
  } else {
    push(s, next >= 0 ? OpKind::kRecvCopySend : OpKind::kRecv, BufRef::kNone, 0, BufRef::kOutput,
         b.offset, next, g.ranks[p - 1], b.count);
  }
}

// The nodes the ring-based collectives run on: the real ones when all are
// the same size, else one node-ordered ring.
Topo ringTopo(const CollArgs& a) {
  Topo t = topoOf(a);
  return t.equal ? t : flatten(t, a.rank);
}

}  // namespace

Schedule hierarchicalAllReduce(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (a.count == 0) return s;
  const Topo t = ringTopo(a);
  const int nodes = static_cast<int>(t.nodes.size());
  const int locals = static_cast<int>(t.nodes[0].size());
  const Group intra = intraGroup(t), rail = railGroup(t);
  const uint64_t perRound = saturatingMul(maxStep(a), static_cast<uint64_t>(nodes) * locals);
  std::vector<Block> blocks;
  for (uint64_t start = 0; start < a.count; start += perRound) {
    const uint64_t roundCount = std::min(perRound, a.count - start);
    auto sub = [&](int i, int j) {
      const Block chunk = split(start, roundCount, locals, i);
      return split(chunk.offset, chunk.count, nodes, j);
    };
    for (int j = 0; locals > 1 && j < nodes; ++j) {
      blocks.clear();
      for (int p = 0; p < locals; ++p) blocks.push_back(sub(p, j));
      ringReduceScatter(s, intra, BufRef::kInput, blocks, BufRef::kOutput, blocks[t.local].offset,
                        nodes == 1);
    }
    if (nodes > 1 || locals == 1) {
      blocks.clear();
      for (int q = 0; q < nodes; ++q) blocks.push_back(sub(t.local, q));
      const BufRef src = locals > 1 ? BufRef::kOutput : BufRef::kInput;
      ringReduceScatter(s, rail, src, blocks, BufRef::kOutput, blocks[t.node].offset, true);
      ringAllGather(s, rail, blocks);
    }
    for (int j = 0; locals > 1 && j < nodes; ++j) {
      blocks.clear();
      for (int p = 0; p < locals; ++p) blocks.push_back(sub(p, j));
      ringAllGather(s, intra, blocks);
    }
  }
  return s;
}

Schedule hierarchicalAllGather(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (a.count == 0) return s;
  const Topo t = ringTopo(a);
  const Group intra = intraGroup(t), rail = railGroup(t);
  const uint64_t c = a.count;
  std::vector<Block> blocks;
  for (uint64_t w = 0; w < c; w += maxStep(a)) {
    const uint64_t len = std::min(maxStep(a), c - w);
    // In place the input already is output block `rank`.
    if (!a.inPlace) {
      push(s, OpKind::kCopy, BufRef::kInput, w, BufRef::kOutput, a.rank * c + w, -1, -1, len);
    }
    blocks.clear();
    for (int r : rail.ranks) blocks.push_back({r * c + w, len});
    ringAllGather(s, rail, blocks);
    for (const auto& members : t.nodes) {
      blocks.clear();
      for (int r : members) blocks.push_back({r * c + w, len});
      ringAllGather(s, intra, blocks);
    }
  }
  return s;
}

Schedule hierarchicalReduceScatter(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (a.count == 0) return s;
  const Topo t = ringTopo(a);
  const int nodes = static_cast<int>(t.nodes.size());
  const bool staged = nodes > 1 && t.nodes[0].size() > 1;  // node sums wait in scratch
  const Group intra = intraGroup(t), rail = railGroup(t);
  const uint64_t c = a.count, slot = std::min(maxStep(a), c);
  if (staged) s.scratchElems = nodes * slot;
  std::vector<Block> blocks;
  for (uint64_t w = 0; w < c; w += maxStep(a)) {
    const uint64_t len = std::min(maxStep(a), c - w);
    for (int q = 0; intra.size() > 1 && q < nodes; ++q) {
      blocks.clear();
      for (int r : t.nodes[q]) blocks.push_back({r * c + w, len});
      if (staged) {
        ringReduceScatter(s, intra, BufRef::kInput, blocks, BufRef::kScratch, q * slot, false);
      } else {
        ringReduceScatter(s, intra, BufRef::kInput, blocks, BufRef::kOutput, w, true);
      }
    }
    if (intra.size() > 1 && !staged) continue;
    blocks.clear();
    for (int q = 0; q < nodes; ++q) {
      blocks.push_back(staged ? Block{q * slot, len} : Block{rail.ranks[q] * c + w, len});
    }
    ringReduceScatter(s, rail, staged ? BufRef::kScratch : BufRef::kInput, blocks, BufRef::kOutput,
                      w, true);
  }
  return s;
}

Schedule hierarchicalBroadcast(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (a.count == 0) return s;
  const Topo t = topoOf(a);
  const int nodes = static_cast<int>(t.nodes.size());
  int rootNode = 0;
  for (int q = 0; q < nodes; ++q) {
    for (int r : t.nodes[q]) rootNode = r == a.root ? q : rootNode;
  }
  auto head = [&](int q) { return q == rootNode ? a.root : t.nodes[q][0]; };
  Group heads, inNode;
  for (int k = 0; k < nodes; ++k) {
    const int h = head(wrap(rootNode + k, nodes));
    if (h == a.rank) heads.pos = k;
    heads.ranks.push_back(h);
  }
  inNode.ranks.push_back(head(t.node));
  for (int r : t.nodes[t.node]) {
    if (r != inNode.ranks[0]) inNode.ranks.push_back(r);
  }
  for (int p = 0; p < inNode.size(); ++p) inNode.pos = inNode.ranks[p] == a.rank ? p : inNode.pos;
  const bool isRoot = a.rank == a.root;
  const BufRef src = isRoot ? BufRef::kInput : BufRef::kOutput;
  for (uint64_t w = 0; w < a.count; w += maxStep(a)) {
    const Block b{w, std::min(maxStep(a), a.count - w)};
    chainPiece(s, heads, src, b);
    chainPiece(s, inNode, src, b);
    if (isRoot && !a.inPlace) {
      push(s, OpKind::kCopy, BufRef::kInput, w, BufRef::kOutput, w, -1, -1, b.count);
    }
  }
  return s;
}

}  // namespace braid::algo
