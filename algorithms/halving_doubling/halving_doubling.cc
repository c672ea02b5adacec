// Recursive halving-doubling (Rabenseifner) as pure rank arithmetic.
//
// Ranks and the fold. p is the largest power of two <= n and rem = n - p. The
// first 2*rem ranks pair up: even rank 2i ("E", folded out) hands its data to
// odd rank 2i+1 ("O"), which stands for both in the power-of-two phase as
// newrank i; rank r >= 2*rem is newrank r - rem. Newrank nr serves the real
// ranks firstServed(nr) .. firstServed(nr+1)-1 (two for an O, one otherwise),
// and its partner at distance `mask` is newrank nr ^ mask.
//
// Ranges. The collective's elements (all-reduce: count; reduce-scatter and
// all-gather: n blocks of count, block q being rank q's) are split at
// bound(0) = 0 <= ... <= bound(p) = total, and newrank nr finishes the halving
// owning [bound(nr), bound(nr+1)): a near-equal split for all-reduce, the
// blocks of the ranks nr serves otherwise. The halving round at distance mask
// splits the range of nr's aligned group of 2*mask newranks in two; nr keeps
// its half, reduces the partner's contribution into it and sends the other
// half. Only the last round (mask 1) finalises (avg divides there, once), so
// each final value is computed by one rank and copied to the others: all ranks
// end bitwise identical. Doubling retraces the rounds, exchanging owned ranges.
//
// The fold is pipelined. In its first halving round O reduces E's pieces of
// its kept half as they arrive and passes E's pieces of the other half,
// reduced with its own, straight on to its partner (kRecvReduceSend). O
// forwards every final value E needs as soon as it has it (all-reduce: all;
// reduce-scatter: block 2i; all-gather: every block but E's own). E's schedule
// is O's traffic with E mirrored, in O's order and batches, so the pair cannot
// deadlock on bounded FIFOs however they interleave.
//
// Messages. An exchange cuts what each side sends into pieces of at most
// maxStepElems (both partners cut the same ranges the same way) and puts piece
// k of the send and piece k of the receive in one batch. Reduce-scatter's last
// halving round also cuts at block boundaries so O can keep block 2i+1 and
// forward block 2i piece by piece. Local copies are not cut.
#include "algorithms/halving_doubling/halving_doubling.h"

#include <algorithm>
#include <vector>

namespace braid::algo {
namespace {

// Elements [lo, hi) of the collective.
struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
};

bool contains(Range r, uint64_t e) { return e >= r.lo && e < r.hi; }

// Where the collective's element e lives on this rank: buf[e - base].
struct Loc {
  BufRef buf = BufRef::kNone;
  uint64_t base = 0;
};

// A step and the collective element its data starts at (for mirroring).
struct Emit {
  Step step;
  uint64_t elem = 0;
};

struct Fold {
  explicit Fold(int nranks) : n(nranks) {
    while (2 * p <= n) p *= 2;
    rem = n - p;
  }
  bool foldedOut(int r) const { return r < 2 * rem && r % 2 == 0; }
  int newrank(int r) const { return r < 2 * rem ? r / 2 : r - rem; }
  int realRank(int nr) const { return nr < rem ? 2 * nr + 1 : nr + rem; }
  int firstServed(int nr) const { return nr < rem ? 2 * nr : nr + rem; }

  int n;
  int p = 1;
  int rem = 0;
};

// Rank `rank`'s own input and output as ranges of the collective's elements.
Range inputRange(const CollArgs& a, int rank) {
  if (a.collective != Collective::kAllGather) {
    return {0, a.collective == Collective::kReduceScatter ? a.nranks * a.count : a.count};
  }
  return {rank * a.count, (rank + 1) * a.count};
}
Range outputRange(const CollArgs& a, int rank) {
  if (a.collective == Collective::kReduceScatter) return {rank * a.count, (rank + 1) * a.count};
  return {0, a.collective == Collective::kAllGather ? a.nranks * a.count : a.count};
}

// Builds the steps of one active (not folded-out) rank.
class Planner {
 public:
  Planner(const CollArgs& a, int rank);
  std::vector<Emit> plan();
  uint64_t scratchElems() const { return scratch_; }

 private:
  uint64_t bound(int nr) const;
  Range groupRange(int first, int size) const { return {bound(first), bound(first + size)}; }
  std::vector<Range> pieces(Range r, uint64_t cut) const;
  void push(OpKind op, Loc src, Loc dst, int sendPeer, int recvPeer, Range piece, bool final,
            bool batchWithNext);
  void halving();
  void halvingRound(bool first, bool last, int peer, Range give, Range keep);
  void finalReduce(int peer, Loc src, Range piece);
  void doubling();
  void exchangeWithFoldPeer();

  const CollArgs& a_;
  Fold fold_;
  int rank_;
  int nr_;
  int foldPeer_;  // E, when this rank is an O; else -1
  Loc in_, out_, work_;
  uint64_t scratch_ = 0;
  std::vector<Emit> emits_;
};

Planner::Planner(const CollArgs& a, int rank)
    : a_(a),
      fold_(a.nranks),
      rank_(rank),
      nr_(fold_.newrank(rank)),
      foldPeer_(nr_ < fold_.rem ? rank - 1 : -1),
      in_{BufRef::kInput, inputRange(a, rank).lo},
      out_{BufRef::kOutput, outputRange(a, rank).lo},
      work_{BufRef::kOutput, 0} {
  if (a.collective != Collective::kReduceScatter) return;
  // The output holds one block: work in scratch, sized for the first kept half.
  // A non-O rank with a single round reduces straight from input to output.
  const int half = fold_.p / 2;
  const Range keep = (nr_ & half) ? groupRange(half, half) : groupRange(0, half);
  work_ = {BufRef::kScratch, keep.lo};
  if (fold_.p > 2 || foldPeer_ >= 0) scratch_ = keep.hi - keep.lo;
}

uint64_t Planner::bound(int nr) const {
  if (a_.collective != Collective::kAllReduce) return fold_.firstServed(nr) * a_.count;
  const uint64_t base = a_.count / fold_.p, extra = a_.count % fold_.p;
  return nr * base + std::min<uint64_t>(nr, extra);
}

// Pieces of at most maxStepElems, also cut at multiples of `cut` when non-zero.
std::vector<Range> Planner::pieces(Range r, uint64_t cut) const {
  const uint64_t maxStep = std::max<uint64_t>(1, a_.maxStepElems);
  std::vector<Range> out;
  for (uint64_t lo = r.lo; lo < r.hi;) {
    uint64_t hi = lo + std::min(maxStep, r.hi - lo);
    if (cut != 0) hi = std::min(hi, (lo / cut + 1) * cut);
    out.push_back({lo, hi});
    lo = hi;
  }
  return out;
}

void Planner::push(OpKind op, Loc src, Loc dst, int sendPeer, int recvPeer, Range piece, bool final,
                   bool batchWithNext) {
  Step s{op, src.buf, dst.buf, sendPeer, recvPeer};
  s.srcOffset = src.buf == BufRef::kNone ? 0 : piece.lo - src.base;
  s.dstOffset = dst.buf == BufRef::kNone ? 0 : piece.lo - dst.base;
  s.count = piece.hi - piece.lo;
  s.final = final;
  s.batchWithNext = batchWithNext;
  emits_.push_back({s, piece.lo});
}

std::vector<Emit> Planner::plan() {
  switch (a_.collective) {
    case Collective::kAllReduce:
      halving();
      doubling();
      break;
    case Collective::kReduceScatter:
      halving();
      break;
    default:
      exchangeWithFoldPeer();
      doubling();
      break;
  }
  return std::move(emits_);
}

void Planner::halving() {
  for (int mask = fold_.p / 2; mask >= 1; mask /= 2) {
    const int group = nr_ & ~(2 * mask - 1);
    const Range lower = groupRange(group, mask), upper = groupRange(group + mask, mask);
    const bool keepUpper = (nr_ & mask) != 0;
    halvingRound(mask == fold_.p / 2, mask == 1, fold_.realRank(nr_ ^ mask),
                 keepUpper ? lower : upper, keepUpper ? upper : lower);
  }
}

// Sends `give` to `peer` and reduces its contribution to `keep` into `keep`.
// The first round reads the input; an O first folds E's piece of `keep` in and
// passes E's piece of `give`, reduced with its own, straight on.
void Planner::halvingRound(bool first, bool last, int peer, Range give, Range keep) {
  const bool foldIn = first && foldPeer_ >= 0;
  const Loc giveSrc = first ? in_ : work_;
  const Loc keepSrc = first && !foldIn ? in_ : work_;
  const uint64_t cut = last && a_.collective == Collective::kReduceScatter ? a_.count : 0;
  const std::vector<Range> gp = pieces(give, cut), kp = pieces(keep, cut);
  for (size_t k = 0; k < std::max(gp.size(), kp.size()); ++k) {
    const bool both = k < gp.size() && k < kp.size();
    if (foldIn && k < kp.size()) {
      push(OpKind::kRecvReduce, in_, work_, -1, foldPeer_, kp[k], false, false);
    }
    if (k < gp.size()) {
      if (foldIn) {
        push(OpKind::kRecvReduceSend, in_, {}, peer, foldPeer_, gp[k], false, both);
      } else {
        push(OpKind::kSend, giveSrc, {}, peer, -1, gp[k], false, both);
      }
    }
    if (k >= kp.size()) continue;
    if (last) {
      finalReduce(peer, keepSrc, kp[k]);
    } else {
      push(OpKind::kRecvReduce, keepSrc, work_, -1, peer, kp[k], false, false);
    }
  }
}

// The last reduction of a piece: into the output where it is this rank's, and
// on to E at once where E needs it.
void Planner::finalReduce(int peer, Loc src, Range piece) {
  const Loc dst = contains(outputRange(a_, rank_), piece.lo) ? out_ : work_;
  if (foldPeer_ >= 0 && contains(outputRange(a_, foldPeer_), piece.lo)) {
    push(OpKind::kRecvReduceCopySend, src, dst, foldPeer_, peer, piece, true, false);
  } else {
    push(OpKind::kRecvReduce, src, dst, -1, peer, piece, true, false);
  }
}

// Recursive doubling in the output; an O forwards all it receives to E.
void Planner::doubling() {
  for (int mask = 1; mask < fold_.p; mask *= 2) {
    const int group = nr_ & ~(mask - 1);
    const int peer = fold_.realRank(nr_ ^ mask);
    const std::vector<Range> gp = pieces(groupRange(group, mask), 0);
    const std::vector<Range> kp = pieces(groupRange(group ^ mask, mask), 0);
    for (size_t k = 0; k < std::max(gp.size(), kp.size()); ++k) {
      const bool both = k < gp.size() && k < kp.size();
      if (k < gp.size()) push(OpKind::kSend, out_, {}, peer, -1, gp[k], false, both);
      if (k >= kp.size()) continue;
      if (foldPeer_ >= 0) {
        push(OpKind::kRecvCopySend, {}, out_, foldPeer_, peer, kp[k], false, false);
      } else {
        push(OpKind::kRecv, {}, out_, -1, peer, kp[k], false, false);
      }
    }
  }
}

// All-gather's start: own block into the output; an O swaps blocks with its E.
void Planner::exchangeWithFoldPeer() {
  if (!a_.inPlace) push(OpKind::kCopy, in_, out_, -1, -1, inputRange(a_, rank_), false, false);
  if (foldPeer_ < 0) return;
  const std::vector<Range> gp = pieces(inputRange(a_, rank_), 0);
  const std::vector<Range> kp = pieces(inputRange(a_, foldPeer_), 0);
  for (size_t k = 0; k < std::max(gp.size(), kp.size()); ++k) {
    const bool both = k < gp.size() && k < kp.size();
    if (k < gp.size()) push(OpKind::kSend, in_, {}, foldPeer_, -1, gp[k], false, both);
    if (k < kp.size()) push(OpKind::kRecv, {}, out_, -1, foldPeer_, kp[k], false, false);
  }
}

// E's steps: what its O receives from it, E sends from its input; what O
// sends it, E receives into its output; in O's order, batched as O batches.
std::vector<Step> mirror(const CollArgs& a, const std::vector<Emit>& partner) {
  const int e = a.rank, o = a.rank + 1;
  const Loc in{BufRef::kInput, inputRange(a, e).lo}, out{BufRef::kOutput, outputRange(a, e).lo};
  std::vector<Step> steps;
  std::vector<size_t> batchOf;
  size_t batch = 0;
  if (a.collective == Collective::kAllGather && !a.inPlace) {
    steps.push_back({OpKind::kCopy, in.buf, out.buf, -1, -1, 0, inputRange(a, e).lo, a.count});
    batchOf.push_back(batch++);
  }
  for (const Emit& m : partner) {
    const Step& s = m.step;
    if (s.recvPeer == e) {
      steps.push_back({OpKind::kSend, in.buf, BufRef::kNone, o, -1, m.elem - in.base, 0, s.count});
      batchOf.push_back(batch);
    } else if (s.sendPeer == e) {
      steps.push_back(
          {OpKind::kRecv, BufRef::kNone, out.buf, -1, o, 0, m.elem - out.base, s.count});
      batchOf.push_back(batch);
    }
    if (!s.batchWithNext) ++batch;
  }
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    steps[i].batchWithNext = batchOf[i + 1] == batchOf[i];
  }
  return steps;
}

Schedule plan(const CollArgs& a) {
  Schedule s;
  s.rank = a.rank;
  s.nranks = a.nranks;
  s.count = a.count;
  if (a.count == 0) return s;
  if (a.nranks == 1) {
    // A single rank still finalises (avg divides by 1): one local step.
    const bool reduces = a.collective != Collective::kAllGather;
    s.steps.push_back(
        {OpKind::kCopy, BufRef::kInput, BufRef::kOutput, -1, -1, 0, 0, a.count, reduces});
    return s;
  }
  const Fold fold(a.nranks);
  const bool foldedOut = fold.foldedOut(a.rank);
  Planner planner(a, foldedOut ? a.rank + 1 : a.rank);
  std::vector<Emit> emits = planner.plan();
  if (foldedOut) {
    s.steps = mirror(a, emits);
    return s;
  }
  s.scratchElems = planner.scratchElems();
  s.steps.reserve(emits.size());
  for (const Emit& m : emits) s.steps.push_back(m.step);
  return s;
}

CollArgs as(const CollArgs& args, Collective c) {
  CollArgs a = args;
  a.collective = c;
  return a;
}

}  // namespace

Schedule halvingDoublingAllReduce(const CollArgs& args) {
  return plan(as(args, Collective::kAllReduce));
}

Schedule halvingDoublingReduceScatter(const CollArgs& args) {
  return plan(as(args, Collective::kReduceScatter));
}

Schedule halvingDoublingAllGather(const CollArgs& args) {
  return plan(as(args, Collective::kAllGather));
}

}  // namespace braid::algo
