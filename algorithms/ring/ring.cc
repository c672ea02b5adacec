#include "algorithms/ring/ring.h"

#include <algorithm>

namespace braid::algo {
namespace {

// Chunk c of a round: the round's elements split into n near-equal parts.
struct Chunk {
  uint64_t offset;
  uint64_t count;
};

Chunk roundChunk(uint64_t roundStart, uint64_t roundCount, int n, int c) {
  uint64_t base = roundCount / n;
  uint64_t extra = roundCount % n;
  uint64_t uc = static_cast<uint64_t>(c);
  return {roundStart + uc * base + std::min<uint64_t>(uc, extra), base + (uc < extra ? 1 : 0)};
}

int mod(int x, int n) { return ((x % n) + n) % n; }

}  // namespace

Schedule ringAllReduce(const CollArgs& a) {
  Schedule s;
  s.rank = a.rank;
  s.nranks = a.nranks;
  s.count = a.count;
  const int n = a.nranks;
  const int r = a.rank;
  if (a.count == 0) return s;
  if (n == 1) {
    // A single rank still finalises (avg divides by 1): one local step.
    s.steps.push_back({OpKind::kCopy, BufRef::kInput, BufRef::kOutput, -1, -1, 0, 0, a.count, true});
    return s;
  }
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  const uint64_t maxStep = std::max<uint64_t>(1, a.maxStepElems);
  const uint64_t perRound = maxStep * static_cast<uint64_t>(n);
  const size_t rounds = (a.count + perRound - 1) / perRound;
  s.steps.reserve(rounds * 2 * (n - 1));
  for (uint64_t start = 0; start < a.count; start += perRound) {
    const uint64_t roundCount = std::min(perRound, a.count - start);
    auto chunk = [&](int k) { return roundChunk(start, roundCount, n, mod(k, n)); };
    // Reduce-scatter: after n-1 steps rank r holds the final chunk r+1.
    Chunk c = chunk(r);
    s.steps.push_back({OpKind::kSend, BufRef::kInput, BufRef::kNone, next, -1, c.offset, 0,
                       c.count, false});
    for (int k = 1; k < n - 1; ++k) {
      c = chunk(r - k);
      s.steps.push_back({OpKind::kRecvReduceSend, BufRef::kInput, BufRef::kNone, next, prev,
                         c.offset, 0, c.count, false});
    }
    c = chunk(r + 1);
    s.steps.push_back({OpKind::kRecvReduceCopySend, BufRef::kInput, BufRef::kOutput, next, prev,
                       c.offset, c.offset, c.count, true});
    // All-gather: pass each final chunk on until it has been everywhere.
    for (int j = 0; j < n - 1; ++j) {
      c = chunk(r - j);
      const bool last = j == n - 2;
      s.steps.push_back({last ? OpKind::kRecv : OpKind::kRecvCopySend, BufRef::kNone,
                         BufRef::kOutput, last ? -1 : next, prev, 0, c.offset, c.count, false});
    }
  }
  return s;
}

}  // namespace braid::algo
