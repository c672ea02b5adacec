// Rank arithmetic of the direct family. Data moves in pieces of at most
// maxStepElems so every message fits a FIFO; the sends and receives of one
// piece form one batch (any pattern in a batch completes). Received pieces land
// in scratch slot p (rank p's contribution); the rank's own piece is copied to
// its slot after the batch, so the local reduction reads only scratch and in
// place is safe. Reductions run in rank order with final=true on the last, so
// avg divides once and all ranks agree bitwise.
#include "algorithms/direct/direct.h"

#include <algorithm>

#include "algorithms/builder.h"

namespace braid::algo {
namespace {

Step send(int peer, BufRef src, uint64_t off, uint64_t count) {
  Step s{OpKind::kSend, src, BufRef::kNone, peer, -1, off, 0, count, false};
  s.batchWithNext = true;
  return s;
}

Step recv(int peer, BufRef dst, uint64_t off, uint64_t count) {
  Step s{OpKind::kRecv, BufRef::kNone, dst, -1, peer, 0, off, count, false};
  s.batchWithNext = true;
  return s;
}

Step local(OpKind op, BufRef src, uint64_t srcOff, BufRef dst, uint64_t dstOff, uint64_t count,
           bool final) {
  return Step{op, src, dst, -1, -1, srcOff, dstOff, count, final};
}

void endBatch(Schedule& s) {
  if (!s.steps.empty()) s.steps.back().batchWithNext = false;
}

// The own piece (input at srcOff) joins scratch slot `rank`, then the n slots are reduced
// in rank order into dst at dstOff.
void reduceSlots(Schedule& s, const CollArgs& a, uint64_t slot, uint64_t len, uint64_t srcOff,
                 BufRef dst, uint64_t dstOff) {
  s.steps.push_back(local(OpKind::kCopy, BufRef::kInput, srcOff, BufRef::kScratch,
                          a.rank * slot, len, false));
  s.steps.push_back(local(OpKind::kCopy, BufRef::kScratch, 0, dst, dstOff, len, false));
  for (int p = 1; p < a.nranks; ++p) {
    s.steps.push_back(local(OpKind::kReduceLocal, BufRef::kScratch, p * slot, dst, dstOff, len,
                            p == a.nranks - 1));
  }
}

// Sends piece [off, off+len) of `src` to `targets` (all other ranks, or all
// but those whose piece differs) and receives `len` elements from every other
// rank into scratch slot p; then the own piece joins slot `rank` and the slots
// are reduced in rank order into dst.
void exchangeAndReduce(Schedule& s, const CollArgs& a, uint64_t slot, uint64_t len,
                       uint64_t (*srcOffsetFor)(const CollArgs&, int peer, uint64_t base),
                       uint64_t base, BufRef dst, uint64_t dstOff) {
  for (int p = 0; p < a.nranks; ++p) {
    if (p != a.rank) s.steps.push_back(send(p, BufRef::kInput, srcOffsetFor(a, p, base), len));
  }
  for (int p = 0; p < a.nranks; ++p) {
    if (p != a.rank) s.steps.push_back(recv(p, BufRef::kScratch, p * slot, len));
  }
  endBatch(s);
  reduceSlots(s, a, slot, len, srcOffsetFor(a, a.rank, base), dst, dstOff);
}

uint64_t sameOffset(const CollArgs&, int, uint64_t base) { return base; }
uint64_t blockOffset(const CollArgs& a, int peer, uint64_t base) { return peer * a.count + base; }

bool single(const CollArgs& a, Schedule& s, bool final) {
  if (a.count == 0) return true;
  if (a.nranks > 1) return false;
  s.steps.push_back(local(OpKind::kCopy, BufRef::kInput, 0, BufRef::kOutput, 0, a.count, final));
  return true;
}

uint64_t pieceOf(const CollArgs& a) { return std::max<uint64_t>(1, a.maxStepElems); }

}  // namespace

namespace {

// All-reduce (every rank's whole input) and reduce-scatter (block r of every
// rank's input) differ only in where a peer's piece starts.
Schedule reduceDirect(const CollArgs& a,
                      uint64_t (*srcOffsetFor)(const CollArgs&, int, uint64_t)) {
  Schedule s = emptySchedule(a);
  if (single(a, s, true)) return s;
  const uint64_t m = std::min(pieceOf(a), a.count);
  s.scratchElems = m * a.nranks;
  for (uint64_t off = 0; off < a.count; off += m) {
    const uint64_t len = std::min(m, a.count - off);
    exchangeAndReduce(s, a, m, len, srcOffsetFor, off, BufRef::kOutput, off);
  }
  return s;
}

}  // namespace

Schedule directAllReduce(const CollArgs& a) { return reduceDirect(a, sameOffset); }

Schedule directReduceScatter(const CollArgs& a) { return reduceDirect(a, blockOffset); }

Schedule directAllGather(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (single(a, s, false)) return s;
  const uint64_t m = pieceOf(a);
  if (!a.inPlace) {
    s.steps.push_back(local(OpKind::kCopy, BufRef::kInput, 0, BufRef::kOutput,
                            a.rank * a.count, a.count, false));
  }
  for (uint64_t off = 0; off < a.count; off += m) {
    const uint64_t len = std::min(m, a.count - off);
    for (int p = 0; p < a.nranks; ++p) {
      if (p != a.rank) s.steps.push_back(send(p, BufRef::kInput, off, len));
    }
    for (int p = 0; p < a.nranks; ++p) {
      if (p != a.rank) s.steps.push_back(recv(p, BufRef::kOutput, p * a.count + off, len));
    }
    endBatch(s);
  }
  return s;
}

Schedule directBroadcast(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (single(a, s, false)) return s;
  const uint64_t m = pieceOf(a);
  for (uint64_t off = 0; off < a.count; off += m) {
    const uint64_t len = std::min(m, a.count - off);
    if (a.rank == a.root) {
      for (int p = 0; p < a.nranks; ++p) {
        if (p != a.root) s.steps.push_back(send(p, BufRef::kInput, off, len));
      }
      endBatch(s);
    } else {
      s.steps.push_back(recv(a.root, BufRef::kOutput, off, len));
      endBatch(s);
    }
  }
  if (a.rank == a.root && !a.inPlace) {
    s.steps.push_back(local(OpKind::kCopy, BufRef::kInput, 0, BufRef::kOutput, 0, a.count, false));
  }
  return s;
}

// Every rank's piece to the root, which reduces them in rank order; the other ranks only
// send (they have no output).
Schedule directReduce(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (single(a, s, true)) return s;
  const uint64_t m = std::min(pieceOf(a), a.count);
  if (a.rank != a.root) {
    for (uint64_t off = 0; off < a.count; off += m) {
      s.steps.push_back(send(a.root, BufRef::kInput, off, std::min(m, a.count - off)));
      endBatch(s);
    }
    return s;
  }
  s.scratchElems = m * a.nranks;
  for (uint64_t off = 0; off < a.count; off += m) {
    const uint64_t len = std::min(m, a.count - off);
    for (int p = 0; p < a.nranks; ++p) {
      if (p != a.rank) s.steps.push_back(recv(p, BufRef::kScratch, p * m, len));
    }
    endBatch(s);
    reduceSlots(s, a, m, len, off, BufRef::kOutput, off);
  }
  return s;
}

Schedule twoShotAllReduce(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  if (single(a, s, true)) return s;
  const int n = a.nranks;
  const uint64_t m = pieceOf(a);
  const uint64_t perRound = m * n;
  // A chunk never exceeds m nor ceil(count / n): scratch slots of that size.
  const uint64_t slot = std::min<uint64_t>(m, (a.count + n - 1) / n);
  s.scratchElems = slot * n;
  for (uint64_t start = 0; start < a.count; start += perRound) {
    const uint64_t roundCount = std::min(perRound, a.count - start);
    // Chunk p of the round: near-equal parts, at most m elements.
    auto chunkOff = [&](int p) {
      const uint64_t b = roundCount / n, e = roundCount % n;
      return start + p * b + std::min<uint64_t>(p, e);
    };
    auto chunkLen = [&](int p) { return roundCount / n + (static_cast<uint64_t>(p) < roundCount % n); };
    const uint64_t mine = chunkLen(a.rank);
    // Reduce-scatter: chunk p goes to rank p; rank r reduces chunk r.
    for (int p = 0; p < n; ++p) {
      if (p != a.rank && chunkLen(p) > 0) s.steps.push_back(send(p, BufRef::kInput, chunkOff(p), chunkLen(p)));
    }
    for (int p = 0; p < n; ++p) {
      if (p != a.rank && mine > 0) s.steps.push_back(recv(p, BufRef::kScratch, p * slot, mine));
    }
    endBatch(s);
    if (mine > 0) {
      s.steps.push_back(local(OpKind::kCopy, BufRef::kInput, chunkOff(a.rank), BufRef::kScratch,
                              a.rank * slot, mine, false));
      s.steps.push_back(local(OpKind::kCopy, BufRef::kScratch, 0, BufRef::kOutput,
                              chunkOff(a.rank), mine, false));
      for (int p = 1; p < n; ++p) {
        s.steps.push_back(local(OpKind::kReduceLocal, BufRef::kScratch, p * slot, BufRef::kOutput,
                                chunkOff(a.rank), mine, p == n - 1));
      }
    }
    // All-gather the reduced chunks.
    for (int p = 0; p < n; ++p) {
      if (p != a.rank && mine > 0) s.steps.push_back(send(p, BufRef::kOutput, chunkOff(a.rank), mine));
    }
    for (int p = 0; p < n; ++p) {
      if (p != a.rank && chunkLen(p) > 0) s.steps.push_back(recv(p, BufRef::kOutput, chunkOff(p), chunkLen(p)));
    }
    endBatch(s);
  }
  return s;
}

}  // namespace braid::algo
