// Ring all-gather and reduce-scatter, chain broadcast and reduce: rank arithmetic only.
//
// All-gather and reduce-scatter move blocks of `count` elements, block b being
// rank b's. They run in rounds: the round at w covers elements [w, w + len) of
// every block, len <= maxStepElems, so each step is one FIFO message and, as in
// ringAllReduce, the first send of a round always fits. Within a round, at ring
// step k = 0..n-1 rank r handles
//   all-gather      block r - k: k = 0 sends its own block, every later step
//                   receives block r - k from r - 1 (which sent it at step k - 1)
//                   and forwards it, except at k = n - 1;
//   reduce-scatter  block r - 1 - k: k = 0 sends its input block r - 1, every
//                   later step adds its own contribution to what r - 1 sent, so
//                   at k = n - 1 block r - n = r is complete on rank r.
// Reduce-scatter reads input block r only at that last step, which writes the
// output window aliasing it in place, so no input is read after it is overwritten.
//
// Broadcast and reduce are chains cut into pieces of at most maxStepElems that
// pipeline down the chain: broadcast runs root -> root+1 -> ... -> root-1, reduce
// runs root+1 -> root+2 -> ... -> root. A chain has no cycle, so it cannot
// deadlock even on FIFOs of one message; the rings need two, as all-reduce does.
#include <algorithm>

#include "algorithms/ring/ring.h"

namespace braid::algo {
namespace {

int mod(int x, int n) { return ((x % n) + n) % n; }

Schedule emptySchedule(const CollArgs& a) {
  Schedule s;
  s.rank = a.rank;
  s.nranks = a.nranks;
  s.count = a.count;
  return s;
}

uint64_t maxStep(const CollArgs& a) { return std::max<uint64_t>(1, a.maxStepElems); }

uint64_t pieces(const CollArgs& a) { return (a.count + maxStep(a) - 1) / maxStep(a); }

// One rank alone: output = input, finalised where the collective reduces (avg
// divides by 1), as ringAllReduce does.
Schedule singleRank(const CollArgs& a, bool final) {
  Schedule s = emptySchedule(a);
  s.steps.push_back({OpKind::kCopy, BufRef::kInput, BufRef::kOutput, -1, -1, 0, 0, a.count, final});
  return s;
}

}  // namespace

Schedule ringAllGather(const CollArgs& a) {
  if (a.count == 0) return emptySchedule(a);
  if (a.nranks == 1) return singleRank(a, false);
  Schedule s = emptySchedule(a);
  const int n = a.nranks;
  const int r = a.rank;
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  const uint64_t c = a.count;
  s.steps.reserve(pieces(a) * (n + 1));
  for (uint64_t w = 0; w < c; w += maxStep(a)) {
    const uint64_t len = std::min(maxStep(a), c - w);
    auto at = [&](int block) { return static_cast<uint64_t>(mod(block, n)) * c + w; };
    // In place the input already is output block r.
    if (!a.inPlace) {
      s.steps.push_back({OpKind::kCopy, BufRef::kInput, BufRef::kOutput, -1, -1, w, at(r), len});
    }
    s.steps.push_back({OpKind::kSend, BufRef::kInput, BufRef::kNone, next, -1, w, 0, len});
    for (int k = 1; k < n; ++k) {
      const bool last = k == n - 1;
      s.steps.push_back({last ? OpKind::kRecv : OpKind::kRecvCopySend, BufRef::kNone,
                         BufRef::kOutput, last ? -1 : next, prev, 0, at(r - k), len});
    }
  }
  return s;
}

Schedule ringReduceScatter(const CollArgs& a) {
  if (a.count == 0) return emptySchedule(a);
  if (a.nranks == 1) return singleRank(a, true);
  Schedule s = emptySchedule(a);
  const int n = a.nranks;
  const int r = a.rank;
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  const uint64_t c = a.count;
  s.steps.reserve(pieces(a) * n);
  for (uint64_t w = 0; w < c; w += maxStep(a)) {
    const uint64_t len = std::min(maxStep(a), c - w);
    auto at = [&](int block) { return static_cast<uint64_t>(mod(block, n)) * c + w; };
    s.steps.push_back({OpKind::kSend, BufRef::kInput, BufRef::kNone, next, -1, at(r - 1), 0, len});
    for (int k = 1; k < n - 1; ++k) {
      s.steps.push_back({OpKind::kRecvReduceSend, BufRef::kInput, BufRef::kNone, next, prev,
                         at(r - 1 - k), 0, len});
    }
    s.steps.push_back(
        {OpKind::kRecvReduce, BufRef::kInput, BufRef::kOutput, -1, prev, at(r), w, len, true});
  }
  return s;
}

Schedule ringBroadcast(const CollArgs& a) {
  if (a.count == 0) return emptySchedule(a);
  if (a.nranks == 1) return singleRank(a, false);
  Schedule s = emptySchedule(a);
  const int n = a.nranks;
  const int r = a.rank;
  const int pos = mod(r - a.root, n);  // 0: the root, n - 1: the end of the chain
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  const bool rootCopies = pos == 0 && !a.inPlace;
  s.steps.reserve(pieces(a) * (rootCopies ? 2 : 1));
  for (uint64_t w = 0; w < a.count; w += maxStep(a)) {
    const uint64_t len = std::min(maxStep(a), a.count - w);
    if (pos == 0) {
      // Send before copying so the next rank can start.
      s.steps.push_back({OpKind::kSend, BufRef::kInput, BufRef::kNone, next, -1, w, 0, len});
      if (rootCopies) {
        s.steps.push_back({OpKind::kCopy, BufRef::kInput, BufRef::kOutput, -1, -1, w, w, len});
      }
    } else if (pos < n - 1) {
      s.steps.push_back(
          {OpKind::kRecvCopySend, BufRef::kNone, BufRef::kOutput, next, prev, 0, w, len});
    } else {
      s.steps.push_back({OpKind::kRecv, BufRef::kNone, BufRef::kOutput, -1, prev, 0, w, len});
    }
  }
  return s;
}

Schedule ringReduce(const CollArgs& a) {
  if (a.count == 0) return emptySchedule(a);
  if (a.nranks == 1) return singleRank(a, true);
  Schedule s = emptySchedule(a);
  const int n = a.nranks;
  const int r = a.rank;
  const int pos = mod(r - a.root - 1, n);  // 0: root + 1 starts, n - 1: the root
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  s.steps.reserve(pieces(a));
  for (uint64_t w = 0; w < a.count; w += maxStep(a)) {
    const uint64_t len = std::min(maxStep(a), a.count - w);
    if (pos == 0) {
      s.steps.push_back({OpKind::kSend, BufRef::kInput, BufRef::kNone, next, -1, w, 0, len});
    } else if (pos < n - 1) {
      s.steps.push_back(
          {OpKind::kRecvReduceSend, BufRef::kInput, BufRef::kNone, next, prev, w, 0, len});
    } else {
      s.steps.push_back(
          {OpKind::kRecvReduce, BufRef::kInput, BufRef::kOutput, -1, prev, w, w, len, true});
    }
  }
  return s;
}

}  // namespace braid::algo
