// Exchange algorithms for all-to-all (pairwise.h). Rank arithmetic, for n
// ranks, rank r and blocks of c elements (block p of the input goes to rank p,
// block p of the output comes from rank p):
//
// Pairwise, out of place: round k = 1..n-1 sends input block r+k to rank r+k
// and receives rank r-k's block into output block r-k (mod n), as one batch.
// The pair (src, dst) meets in round dst - src only.
//
// Pairwise, in place: with the shift above, round k would overwrite block r-k,
// whose input is sent only in round n-k. Instead each round pairs every rank
// with one partner p (a 1-factorization of the complete graph), and the two
// swap: send block p to p while receiving p's block into scratch, then copy
// scratch to block p once the batch is done. Block p is touched in that round
// only. n odd: partner(r, k) = k - r (mod n) for rounds k = 0..n-1, and a rank
// idles in the round where that is itself (2r = k). n even: ranks 0..n-2 play
// the odd pattern on m = n-1 ranks and, instead of idling, pair with rank n-1
// (whose partner in round k is the rank with 2r = k mod m).
//
// Bruck (all-to-all): tmp[i] = input block r+i (a rotation into scratch).
// Round k (d = 2^k < n) sends to rank r+d every tmp block whose index has
// bit k set, and receives the same indexes from rank r-d: packed into
// contiguous scratch, sent in pieces, unpacked. Block i moves d = 2^k for each
// bit of i, so it ends at its destination r+i with its index unchanged; at the
// end tmp[i] holds rank r-i's block for r, i.e. output block q = tmp[r-q].
//
// Bruck (all-gather): after round k rank r holds blocks r..r+2^(k+1)-1. Round
// k (d = 2^k) sends its first m = min(d, n-d) blocks to rank r-d and receives
// blocks r+d..r+d+m-1 from rank r+d. Blocks stay at their place in the output
// (no rotation): both sides address the same absolute blocks, so they cut the
// message identically (at the wrap past block n-1, then in pieces), and a
// round's send range [r, r+m) and receive range [r+d, r+d+m) never overlap.
#include "algorithms/pairwise/pairwise.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "algorithms/builder.h"

namespace braid::algo {
namespace {

int mod(int64_t x, int n) { return static_cast<int>(((x % n) + n) % n); }

// Rank r's partner in round k of the in-place pairing (file comment); r itself
// in the round where r idles (n odd).
int partner(int r, int k, int n) {
  if (n % 2 == 1) return mod(static_cast<int64_t>(k) - r, n);
  const int m = n - 1;
  if (r == m) return mod(static_cast<int64_t>(k) * ((m + 1) / 2), m);  // 2p = k (mod m)
  const int p = mod(static_cast<int64_t>(k) - r, m);
  return p == r ? m : p;
}

void pairwiseInPlace(const CollArgs& a, Schedule* s) {
  const int n = a.nranks;
  const uint64_t c = a.count;
  s->scratchElems = c;
  Builder b(s, a);
  const int rounds = n % 2 == 1 ? n : n - 1;
  for (int k = 0; k < rounds; ++k) {
    const int p = partner(a.rank, k, n);
    if (p == a.rank) continue;
    b.open();
    b.send(p, BufRef::kInput, p * c, c);
    b.recv(p, BufRef::kScratch, 0, c);
    b.close();
    b.copy(BufRef::kScratch, 0, BufRef::kOutput, p * c, c);
  }
}

// Consecutive blocks [first, first + len).
struct Run {
  uint64_t first, len;
};

// The block indexes in [0, n) whose bit k is set.
std::vector<Run> bitRuns(int n, int k) {
  std::vector<Run> runs;
  const uint64_t d = uint64_t{1} << k;
  for (uint64_t j = d; j < static_cast<uint64_t>(n); j += 2 * d) {
    runs.push_back({j, std::min(d, static_cast<uint64_t>(n) - j)});
  }
  return runs;
}

// Blocks [first, first + len) mod n, cut where they wrap past block n-1.
std::vector<Run> wrapped(uint64_t first, uint64_t len, uint64_t n) {
  const uint64_t head = std::min(len, n - first);
  if (head == len) return {{first, len}};
  return {{first, head}, {0, len - head}};
}

uint64_t blocksOf(const std::vector<Run>& runs) {
  uint64_t total = 0;
  for (const Run& run : runs) total += run.len;
  return total;
}

}  // namespace

Schedule pairwiseAllToAll(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  const int n = a.nranks;
  const int r = a.rank;
  const uint64_t c = a.count;
  if (c == 0) return s;
  if (a.inPlace) {
    pairwiseInPlace(a, &s);
    return s;
  }
  Builder b(&s, a);
  b.copy(BufRef::kInput, r * c, BufRef::kOutput, r * c, c);
  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n);
    const int from = mod(r - k, n);
    b.open();
    b.send(to, BufRef::kInput, to * c, c);
    b.recv(from, BufRef::kOutput, from * c, c);
    b.close();
  }
  return s;
}

// The pairwise rounds with per-peer counts and displacements (elements; a
// rank's own block moves sendCounts[r] == recvCounts[r] elements). In place
// (NCCL has none), receives land in scratch, packed in peer order, and are
// copied to the output after the last round, when every send has read its
// input: safe for any displacements.
Schedule pairwiseAllToAllv(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  const int n = a.nranks;
  const int r = a.rank;
  Builder b(&s, a);
  std::vector<uint64_t> staged(n, 0);  // in place: where rank p's block waits in scratch
  for (int p = 0; p < n; ++p) {
    staged[p] = s.scratchElems;
    if (a.inPlace) s.scratchElems += a.recvCounts[p];
  }
  auto recvAt = [&](int p) { return a.inPlace ? staged[p] : a.recvDispls[p]; };
  const BufRef landing = a.inPlace ? BufRef::kScratch : BufRef::kOutput;
  b.copy(BufRef::kInput, a.sendDispls[r], landing, recvAt(r), a.recvCounts[r]);
  for (int k = 1; k < n; ++k) {
    const int to = mod(r + k, n);
    const int from = mod(r - k, n);
    b.open();
    b.send(to, BufRef::kInput, a.sendDispls[to], a.sendCounts[to]);
    b.recv(from, landing, recvAt(from), a.recvCounts[from]);
    b.close();
  }
  for (int p = 0; a.inPlace && p < n; ++p) {
    b.copy(BufRef::kScratch, staged[p], BufRef::kOutput, a.recvDispls[p], a.recvCounts[p]);
  }
  return s;
}

Schedule bruckAllToAll(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  const int n = a.nranks;
  const int r = a.rank;
  const uint64_t c = a.count;
  const uint64_t un = static_cast<uint64_t>(n);
  if (c == 0) return s;
  Builder b(&s, a);
  uint64_t most = 0;  // blocks in the largest round
  for (int k = 0; (1 << k) < n; ++k) most = std::max(most, blocksOf(bitRuns(n, k)));
  // Scratch: tmp (n blocks), then the packed send and receive areas.
  const uint64_t packAt = un * c;
  const uint64_t unpackAt = packAt + most * c;
  s.scratchElems = unpackAt + most * c;
  b.copy(BufRef::kInput, r * c, BufRef::kScratch, 0, (un - r) * c);
  b.copy(BufRef::kInput, 0, BufRef::kScratch, (un - r) * c, r * c);
  for (int k = 0; (1 << k) < n; ++k) {
    const std::vector<Run> runs = bitRuns(n, k);
    const uint64_t total = blocksOf(runs) * c;
    uint64_t at = 0;
    for (const Run& run : runs) {
      b.copy(BufRef::kScratch, run.first * c, BufRef::kScratch, packAt + at, run.len * c);
      at += run.len * c;
    }
    b.open();
    b.send(mod(r + (1 << k), n), BufRef::kScratch, packAt, total);
    b.recv(mod(r - (1 << k), n), BufRef::kScratch, unpackAt, total);
    b.close();
    at = 0;
    for (const Run& run : runs) {
      b.copy(BufRef::kScratch, unpackAt + at, BufRef::kScratch, run.first * c, run.len * c);
      at += run.len * c;
    }
  }
  for (int q = 0; q < n; ++q) {
    b.copy(BufRef::kScratch, mod(r - q, n) * c, BufRef::kOutput, q * c, c);
  }
  return s;
}

Schedule bruckAllGather(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  const int n = a.nranks;
  const int r = a.rank;
  const uint64_t c = a.count;
  if (c == 0) return s;
  Builder b(&s, a);
  if (!a.inPlace) b.copy(BufRef::kInput, 0, BufRef::kOutput, r * c, c);
  for (int d = 1; d < n; d *= 2) {
    const uint64_t m = std::min(d, n - d);
    b.open();
    for (const Run& run : wrapped(r, m, n)) {
      b.send(mod(r - d, n), BufRef::kOutput, run.first * c, run.len * c);
    }
    for (const Run& run : wrapped(mod(r + d, n), m, n)) {
      b.recv(mod(r + d, n), BufRef::kOutput, run.first * c, run.len * c);
    }
    b.close();
  }
  return s;
}

}  // namespace braid::algo
