#include "exec/cuda/window_program.h"

#include <algorithm>

namespace braid {
namespace {

using algo::Collective;
using Kind = DeviceOp::Kind;
using Space = DeviceAddr::Space;

// Elements [lo, hi) of `count` that rank q of n handles in a two-shot round.
uint64_t sliceStart(uint64_t count, int q, int n) {
  return count * static_cast<uint64_t>(q) / static_cast<uint64_t>(n);
}

// Whether a round carries a block for each rank (q's at q * (half / n)).
bool blocksPerRound(Collective c) {
  return c == Collective::kReduceScatter || c == Collective::kAllToAll || c == Collective::kScatter;
}

DeviceAddr at(Space space, uint64_t offset) {
  DeviceAddr a;
  a.space = space;
  a.offset = offset;
  return a;
}

class Builder {
 public:
  // inGraph: a captured call in the graph region (`halfBytes` is then its size).
  Builder(const WindowCall& call, int rank, int nranks, size_t halfBytes, WindowCounts* counts,
          bool inGraph)
      : c_(call),
        me_(rank),
        n_(nranks),
        half_(halfBytes),
        es_(call.elemSize),
        counts_(counts),
        inGraph_(inGraph) {}

  WindowProgram build();

 private:
  // Rank q's half of the current round (or its graph region), `offset` bytes in.
  DeviceAddr half(int q, uint64_t offset) const {
    DeviceAddr a = at(inGraph_ ? Space::kGraphRegion : Space::kHalf, offset);
    a.from = q;
    a.slot = static_cast<uint8_t>(counts_->rounds % 2);
    return a;
  }
  DeviceAddr in(uint64_t elems) const { return at(Space::kInput, elems * es_); }
  DeviceAddr out(uint64_t elems) const { return at(Space::kOutput, elems * es_); }
  void copy(const DeviceAddr& dst, const DeviceAddr& src, uint64_t elems);
  // Input elements into this rank's half: scaled on the way for a premul-sum.
  void copyIn(const DeviceAddr& dst, uint64_t inElem, uint64_t elems);
  void reduce(const DeviceAddr& dst, uint64_t srcOffset, uint64_t elems);
  void reduceTo(uint64_t outElem, uint64_t srcOffset, uint64_t elems);
  void barrier();
  void colorBarriers();  // a captured call's flag sets
  void blocksIn(uint64_t off, uint64_t n, uint64_t chunk);
  void allReduce();
  void oneRound(uint64_t chunk, bool blocks);
  void round() { ++counts_->rounds; }

  const WindowCall& c_;
  const int me_, n_;
  const size_t half_, es_;
  WindowCounts* counts_;
  const bool inGraph_;
  WindowProgram p_;
};

void Builder::copy(const DeviceAddr& dst, const DeviceAddr& src, uint64_t elems) {
  if (elems == 0) return;
  DeviceOp op;
  op.kind = Kind::kCopy;
  op.dst = dst;
  op.src[0] = src;
  op.bytes = elems * es_;
  p_.ops.push_back(op);
}

void Builder::copyIn(const DeviceAddr& dst, uint64_t inElem, uint64_t elems) {
  copy(dst, in(inElem), elems);
  if (c_.scaleInput && elems != 0) p_.ops.back().kind = Kind::kScale;
}

// dst = the reduction of every rank's half at srcOffset (in rank order).
void Builder::reduce(const DeviceAddr& dst, uint64_t srcOffset, uint64_t elems) {
  if (elems == 0) return;
  DeviceOp op;
  op.kind = Kind::kReduce;
  op.dst = dst;
  for (int q = 0; q < n_; ++q) op.src[q] = half(q, srcOffset);
  op.nsrcs = n_;
  op.bytes = elems * es_;
  op.final = true;
  p_.ops.push_back(op);
}

// The reduction into the receive buffer at outElem, through the scratch when kernels
// cannot write the receive buffer.
void Builder::reduceTo(uint64_t outElem, uint64_t srcOffset, uint64_t elems) {
  if (c_.recvIsDevice) {
    reduce(out(outElem), srcOffset, elems);
    return;
  }
  p_.scratchBytes = std::max<size_t>(p_.scratchBytes, elems * es_);
  reduce(at(Space::kScratch, 0), srcOffset, elems);
  copy(out(outElem), at(Space::kScratch, 0), elems);
}

void Builder::barrier() {
  const uint64_t e = ++counts_->barriers;
  if (c_.captured) {  // flags (their set once the count is known): a signal, then a wait
    DeviceOp op;
    op.value = e;
    for (const Kind kind : {Kind::kSignal, Kind::kWaitSignal}) {
      op.kind = kind;
      for (int q = 0; q < n_; ++q) {
        if (q == me_) continue;
        op.from = kind == Kind::kSignal ? me_ : q;
        op.to = kind == Kind::kSignal ? q : me_;
        p_.ops.push_back(op);
      }
    }
    return;
  }
  DeviceOp op;
  op.kind = Kind::kArrive;
  op.from = me_;
  op.value = e;
  p_.ops.push_back(op);
  op.kind = Kind::kWaitRank;
  for (int q = 0; q < n_; ++q) {
    if (q == me_) continue;
    op.from = q;
    p_.ops.push_back(op);
  }
}

// Elements [off, off + n) of each of the n blocks of the input into this rank's half,
// block q at q * chunk elements.
void Builder::blocksIn(uint64_t off, uint64_t n, uint64_t chunk) {
  for (int q = 0; q < n_; ++q) {
    copyIn(half(me_, q * chunk * es_), q * c_.count + off, n);
  }
}

void Builder::allReduce() {
  const uint64_t chunk = half_ / es_;
  for (uint64_t off = 0; off < c_.count; off += chunk) {
    const uint64_t n = std::min(chunk, c_.count - off);
    round();
    copyIn(half(me_, 0), off, n);
    barrier();
    if (!c_.twoShot) {
      reduceTo(off, 0, n);
      continue;
    }
    const uint64_t lo = sliceStart(n, me_, n_), hi = sliceStart(n, me_ + 1, n_);
    reduce(half(me_, lo * es_), lo * es_, hi - lo);
    barrier();
    for (int q = 0; q < n_; ++q) {
      const uint64_t qlo = sliceStart(n, q, n_), qhi = sliceStart(n, q + 1, n_);
      copy(out(off + qlo), half(q, qlo * es_), qhi - qlo);
    }
  }
}

// One round per chunk of the other collectives; `blocks`: a round carries `chunk`
// elements of each of n blocks (reduce-scatter, all-to-all, scatter).
void Builder::oneRound(uint64_t chunk, bool blocks) {
  const bool root = me_ == c_.root;
  const uint64_t block = c_.count;
  for (uint64_t off = 0; off < c_.count; off += chunk) {
    const uint64_t n = std::min(chunk, c_.count - off);
    round();
    switch (c_.collective) {
      case Collective::kReduceScatter:
      case Collective::kAllToAll:
        blocksIn(off, n, chunk);
        break;
      case Collective::kScatter:
        if (root) blocksIn(off, n, chunk);
        break;
      case Collective::kBroadcast:
        if (root) copy(half(me_, 0), in(off), n);
        break;
      case Collective::kGather:
        if (!root) copy(half(me_, 0), in(off), n);
        break;
      default:
        copyIn(half(me_, 0), off, n);
        break;  // all-gather, reduce
    }
    barrier();
    const uint64_t mine = blocks ? static_cast<uint64_t>(me_) * chunk * es_ : 0;
    switch (c_.collective) {
      case Collective::kReduceScatter:
        reduceTo(off, mine, n);
        break;
      case Collective::kReduce:
        if (root) reduceTo(off, 0, n);
        break;
      case Collective::kAllToAll:
        for (int q = 0; q < n_; ++q) copy(out(q * block + off), half(q, mine), n);
        break;
      case Collective::kScatter:
        copy(out(off), root ? in(me_ * block + off) : half(c_.root, mine), n);
        break;
      case Collective::kBroadcast:
        copy(out(off), root ? in(off) : half(c_.root, 0), n);
        break;
      case Collective::kAllGather:
      case Collective::kGather:
        if (c_.collective == Collective::kGather && !root) break;
        for (int q = 0; q < n_; ++q) {
          copy(out(q * block + off), q == me_ ? in(off) : half(q, 0), n);
        }
        break;
      default:
        break;
    }
  }
}

WindowProgram Builder::build() {
  const uint64_t perBlock = half_ / (es_ * static_cast<size_t>(n_));
  if (c_.captured) barrier();  // every rank is done with the halves or the graph region
  if (c_.collective == Collective::kAllReduce) {
    allReduce();
  } else if (blocksPerRound(c_.collective)) {
    oneRound(perBlock, true);
  } else {
    oneRound(half_ / es_, false);
  }
  if (c_.captured && !inGraph_) barrier();  // every rank is done reading the halves
  if (c_.captured) colorBarriers();
  return std::move(p_);
}

// Barrier e of k takes flag set e % 2, and the last of an odd count set 2: no two barriers
// in a row share a set, within the call or across calls (each starts with set 1 and ends
// with 0 or 2). One barrier alone (a call with nothing to move) gets a second.
void Builder::colorBarriers() {
  if (counts_->barriers == 1) barrier();
  const uint64_t k = counts_->barriers;
  for (DeviceOp& op : p_.ops) {
    if (op.kind != Kind::kSignal && op.kind != Kind::kWaitSignal) continue;
    op.value = k % 2 == 1 && op.value == k ? 2 : op.value % 2;
  }
}

}  // namespace

bool runsInGraphRegion(const WindowCall& call, int nranks, size_t graphBytes) {
  const uint64_t blocks = blocksPerRound(call.collective) ? static_cast<uint64_t>(nranks) : 1;
  return call.captured && graphBytes != 0 && call.count <= graphBytes / (call.elemSize * blocks);
}

WindowProgram buildWindowCall(const WindowCall& call, int rank, int nranks, size_t halfBytes,
                              WindowCounts* counts, size_t graphBytes) {
  WindowCounts own;  // a captured call's count from zero, every replay alike
  const bool inGraph = runsInGraphRegion(call, nranks, graphBytes);
  return Builder(call, rank, nranks, inGraph ? graphBytes : halfBytes,
                 call.captured ? &own : counts, inGraph)
      .build();
}

}  // namespace braid
