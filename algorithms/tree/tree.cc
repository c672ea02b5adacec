// Double binary tree arithmetic and the tree collectives built on it.
//
// The trees. Rank 0 is the root of both trees and has one child in each; the
// other m = n - 1 ranks sit at positions 1..m of an in-order binary tree (as in
// NCCL's tree 0): the node at position p, whose lowest set bit is b, has
//   child0 = p - b/2               (when b >= 2; always in range)
//   child1 = p + b/2               (or, while that is past m, p + b/4, p + b/8, ...)
//   parent = p + b if bit 2b of p is clear, else p - b; p - b when p + b > m
// and the top position (the highest power of two <= m) hangs below rank 0.
// Odd positions are leaves and even positions interior, and the depth is
// 1 + floor(log2 m) <= ceil(log2 n).
//   Tree 0 places rank r at position r. Tree 1 places rank r at position
// r mod m + 1 (every rank shifted one place, rank m wrapping to position 1), so
// the interior ranks of tree 1 (even positions, ranks 1, 3, 5, ...) are leaves
// of tree 0 and vice versa: every rank but the root is interior in at most one
// tree, so no rank forwards more than half of the data. E.g. n = 8 (m = 7):
//   tree 0: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7
//   tree 1: 0 -> 3; 3 -> 1, 5; 1 -> 7, 2; 5 -> 4, 6
// Broadcast and reduce use the same trees over ranks relabelled (r - root) mod
// n, so that args.root is the root of both.
//
// The schedules. Half h of the data (the first half rounded up, then the
// rest) travels through tree h in pieces of at most maxStepElems. Reduce-up of
// a piece: a leaf sends its input to its parent; a rank with one child
// receives, reduces with its input and sends on (kRecvReduceSend); a rank with
// two children first reduces child0's message with its input into a partial
// (kRecvReduce) and then child1's with the partial, sending the result on. The
// root's last reduction writes the final value (final = true, so avg divides
// exactly once) and broadcast-down copies that value to every rank
// (kRecvCopySend, kRecv), so all ranks end bitwise identical.
//
// Pipelining without deadlock. Every rank walks the same slots (s, t), for
// s = ..., -1, 0, 1, ... and t = 0, 1. In slot (s, t) a rank at depth d of tree
// t does the reduce-up of piece s + d of half t and then the broadcast-down of
// piece s - d (broadcast and reduce: only one of them), so every message sent
// in slot (s, t) is received in slot (s + 1, t): a piece climbs or descends one
// level per slot. Had all ranks handled the same piece in a slot, each slot
// would wait for a piece to cross the whole tree (and for all-reduce to come
// back), and a rank's next piece with it: time would grow with the depth. (In
// a model where a step takes as long as its count and FIFOs hold two messages,
// all-reduce took 5x count for 4 ranks and 22x for 128 with a fixed lag
// between up and down; it takes about 3x for any n this way.)
//   It cannot deadlock: run the slots in order and, within slot (s, t), the
// reduce-ups from the root to the leaves, then the broadcast-downs from the
// leaves to the root. Every step finds its message (sent in the previous slot
// of tree t), and a tree-t message is taken before its channel carries the next
// tree-t one, so a channel holds at most one message of each tree. The ranks
// form a Kahn network: a schedule that completes in one order completes in
// every order, so FIFOs of two messages per direction suffice. Broadcast and
// reduce need one: their messages all go down (or all up), and for n >= 3 no
// rank is another's parent in both trees (parents other than rank 0 are even
// in tree 0 and odd in tree 1, and rank 0's two children differ), so a channel
// carries the messages of one tree, one at a time; for n = 2 it is a chain.
//
// Buffers. All-reduce keeps partials in its output (in place the input element
// it overwrites is never read again). Reduce keeps them in scratch on non-root
// ranks, whose output must not be written, and broadcast's non-root ranks never
// read their input.
#include "algorithms/tree/tree.h"

#include <algorithm>
#include <array>
#include <vector>

namespace braid::algo {
namespace {

int highestPowerOfTwoAtMost(int m) {
  int p = 1;
  while (p <= m / 2) p *= 2;
  return p;
}

// Links of position `pos` (1..m) of the in-order tree; position 0 is the root.
TreeLinks inOrderLinks(int pos, int m) {
  TreeLinks l;
  const int b = pos & -pos;
  l.parent = (pos & (2 * b)) != 0 ? pos - b : pos + b;
  if (l.parent > m) l.parent = pos - b;
  if (b >= 2) l.child0 = pos - b / 2;
  for (int h = b / 2; h >= 1; h /= 2) {
    if (pos + h <= m) {
      l.child1 = pos + h;
      break;
    }
  }
  return l;
}

int positionOf(int rank, int m, int tree) {
  if (rank == 0) return 0;
  return tree == 0 ? rank : rank % m + 1;
}

int rankAt(int pos, int m, int tree) {
  if (pos <= 0) return pos;  // the root, or -1 for no link
  return tree == 0 ? pos : (pos == 1 ? m : pos - 1);
}

struct Piece {
  uint64_t offset = 0;
  uint64_t count = 0;
};

// pieces[t][i]: piece i of half t, each at most maxStep elements.
std::array<std::vector<Piece>, 2> splitHalves(uint64_t count, uint64_t maxStep) {
  std::array<std::vector<Piece>, 2> pieces;
  const uint64_t half0 = (count + 1) / 2;
  const uint64_t ends[2] = {half0, count};
  uint64_t at = 0;
  for (int t = 0; t < 2; ++t) {
    for (; at < ends[t]; at += std::min(maxStep, ends[t] - at)) {
      pieces[t].push_back({at, std::min(maxStep, ends[t] - at)});
    }
  }
  return pieces;
}

// What one rank needs to emit the steps of one tree's pieces.
struct TreeRole {
  TreeLinks links;  // real ranks
  // Where a rank with two children keeps the partial of a piece; kScratch means
  // offset 0 of scratch, else the piece's own offset.
  BufRef partial = BufRef::kOutput;
  BufRef rootSource = BufRef::kOutput;  // what the root broadcasts
  int lead = 0;  // slot s: reduce-up of piece s + lead, broadcast-down of s - lead
};

Step makeStep(OpKind op, BufRef src, uint64_t srcOffset, BufRef dst, uint64_t dstOffset,
              int sendPeer, int recvPeer, uint64_t count, bool final = false) {
  Step s{op, src, dst};
  s.srcOffset = srcOffset;
  s.dstOffset = dstOffset;
  s.sendPeer = sendPeer;
  s.recvPeer = recvPeer;
  s.count = count;
  s.final = final;
  return s;
}

void reduceUp(const TreeRole& role, const Piece& p, std::vector<Step>* steps) {
  const TreeLinks& l = role.links;
  const uint64_t n = p.count;
  if (l.child0 < 0 && l.child1 < 0) {
    if (l.parent >= 0) {
      steps->push_back(
          makeStep(OpKind::kSend, BufRef::kInput, p.offset, BufRef::kNone, 0, l.parent, -1, n));
    }
    return;
  }
  BufRef src = BufRef::kInput;
  uint64_t srcOffset = p.offset;
  if (l.child0 >= 0 && l.child1 >= 0) {
    const uint64_t partialOffset = role.partial == BufRef::kScratch ? 0 : p.offset;
    steps->push_back(makeStep(OpKind::kRecvReduce, src, srcOffset, role.partial, partialOffset, -1,
                              l.child0, n));
    src = role.partial;
    srcOffset = partialOffset;
  }
  const int last = l.child1 >= 0 ? l.child1 : l.child0;
  if (l.parent >= 0) {
    steps->push_back(
        makeStep(OpKind::kRecvReduceSend, src, srcOffset, BufRef::kNone, 0, l.parent, last, n));
  } else {
    steps->push_back(makeStep(OpKind::kRecvReduce, src, srcOffset, BufRef::kOutput, p.offset, -1,
                              last, n, /*final=*/true));
  }
}

void broadcastDown(const TreeRole& role, const Piece& p, std::vector<Step>* steps) {
  const TreeLinks& l = role.links;
  const uint64_t n = p.count;
  BufRef src = role.rootSource;
  const int first = l.child0 >= 0 ? l.child0 : l.child1;
  const int second = l.child0 >= 0 ? l.child1 : -1;
  if (l.parent >= 0) {
    src = BufRef::kOutput;
    const OpKind op = first >= 0 ? OpKind::kRecvCopySend : OpKind::kRecv;
    steps->push_back(makeStep(op, BufRef::kNone, 0, BufRef::kOutput, p.offset, first, l.parent, n));
  } else if (first >= 0) {
    steps->push_back(makeStep(OpKind::kSend, src, p.offset, BufRef::kNone, 0, first, -1, n));
  }
  if (second >= 0) {
    steps->push_back(makeStep(OpKind::kSend, src, p.offset, BufRef::kNone, 0, second, -1, n));
  }
}

// Schedule header, plus the single local step of a one-rank communicator.
// Returns true when the schedule is already complete.
bool startSchedule(const CollArgs& a, bool final, Schedule* s) {
  s->rank = a.rank;
  s->nranks = a.nranks;
  s->count = a.count;
  if (a.count == 0) return true;
  if (a.nranks > 1) return false;
  s->steps.push_back(
      makeStep(OpKind::kCopy, BufRef::kInput, 0, BufRef::kOutput, 0, -1, -1, a.count, final));
  return true;
}

// Depth of virtual rank v in tree t: the links followed up to the root.
int depthOf(int v, int n, int t) {
  int d = 0;
  for (int p = doubleBinaryTree(v, n, t).parent; p >= 0; p = doubleBinaryTree(p, n, t).parent) {
    ++d;
  }
  return d;
}

// Roles in the trees rooted at `root`.
std::array<TreeRole, 2> rolesFor(const CollArgs& a, int root) {
  std::array<TreeRole, 2> roles;
  const int n = a.nranks;
  const int v = (a.rank - root + n) % n;
  auto real = [&](int w) { return w < 0 ? w : (w + root) % n; };
  for (int t = 0; t < 2; ++t) {
    const TreeLinks l = doubleBinaryTree(v, n, t);
    roles[t].links = {real(l.parent), real(l.child0), real(l.child1)};
    roles[t].lead = depthOf(v, n, t);
  }
  return roles;
}

// Emits the rank's slots (see the top of the file): reduce-ups when `up`,
// broadcast-downs when `down`.
void emitSlots(const std::array<TreeRole, 2>& roles, const CollArgs& a, bool up, bool down,
               Schedule* s) {
  const auto pieces = splitHalves(a.count, std::max<uint64_t>(1, a.maxStepElems));
  const int64_t rounds = static_cast<int64_t>(pieces[0].size());  // half 1 has no more
  const int64_t lead = std::max(roles[0].lead, roles[1].lead);
  auto valid = [&](int t, int64_t i) { return i >= 0 && i < int64_t(pieces[t].size()); };
  for (int64_t slot = -lead; slot < rounds + lead; ++slot) {
    for (int t = 0; t < 2; ++t) {
      const int64_t upPiece = slot + roles[t].lead;
      const int64_t downPiece = slot - roles[t].lead;
      if (up && valid(t, upPiece)) reduceUp(roles[t], pieces[t][upPiece], &s->steps);
      if (down && valid(t, downPiece)) broadcastDown(roles[t], pieces[t][downPiece], &s->steps);
    }
  }
}

}  // namespace

TreeLinks doubleBinaryTree(int rank, int nranks, int tree) {
  TreeLinks l;
  const int m = nranks - 1;
  if (m < 1 || rank < 0 || rank >= nranks) return l;
  if (rank == 0) {
    l.child0 = rankAt(highestPowerOfTwoAtMost(m), m, tree);
    return l;
  }
  const TreeLinks pos = inOrderLinks(positionOf(rank, m, tree), m);
  return {rankAt(pos.parent, m, tree), rankAt(pos.child0, m, tree), rankAt(pos.child1, m, tree)};
}

Schedule treeAllReduce(const CollArgs& a) {
  Schedule s;
  if (startSchedule(a, /*final=*/true, &s)) return s;
  emitSlots(rolesFor(a, 0), a, /*up=*/true, /*down=*/true, &s);
  return s;
}

Schedule treeBroadcast(const CollArgs& a) {
  Schedule s;
  if (startSchedule(a, /*final=*/false, &s)) return s;
  std::array<TreeRole, 2> roles = rolesFor(a, a.root);
  for (TreeRole& r : roles) r.rootSource = BufRef::kInput;
  emitSlots(roles, a, /*up=*/false, /*down=*/true, &s);
  if (a.rank == a.root && !a.inPlace) {
    // After the sends, so that the root's children start at once.
    s.steps.push_back(
        makeStep(OpKind::kCopy, BufRef::kInput, 0, BufRef::kOutput, 0, -1, -1, a.count));
  }
  return s;
}

Schedule treeReduce(const CollArgs& a) {
  Schedule s;
  if (startSchedule(a, /*final=*/true, &s)) return s;
  std::array<TreeRole, 2> roles = rolesFor(a, a.root);
  if (a.rank != a.root) {
    bool twoChildren = false;
    for (TreeRole& r : roles) {
      r.partial = BufRef::kScratch;
      twoChildren |= r.links.child0 >= 0 && r.links.child1 >= 0;
    }
    // One piece's partial at a time: it is sent on before the next piece starts.
    if (twoChildren) {
      s.scratchElems = std::min<uint64_t>(std::max<uint64_t>(1, a.maxStepElems), (a.count + 1) / 2);
    }
  }
  emitSlots(roles, a, /*up=*/true, /*down=*/false, &s);
  return s;
}

}  // namespace braid::algo
