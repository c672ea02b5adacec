#include "exec/cuda/window_lowering.h"

#include <algorithm>
#include <string>

#include "exec/cuda/window_analysis.h"

namespace braid {
namespace {

using algo::BufRef;
using algo::OpKind;
using algo::Schedule;
using algo::Step;
using algo::WinFlag;
using Kind = DeviceOp::Kind;
using Space = DeviceAddr::Space;

using window::flagOf;
using window::refuse;
using window::Values;

class Lowerer {
 public:
  Lowerer(const std::vector<Schedule>& all, int rank, const LoweringLayout& l, const Values& v)
      : s_(all[static_cast<size_t>(rank)]),
        me_(rank),
        n_(static_cast<int>(all.size())),
        l_(l),
        v_(v),
        es_(l.elemSize),
        waited_(all.size(), 0) {}

  Expected<LoweredWindowCall> run();

 private:
  Status step(size_t* i);
  Status put(size_t* i);
  Status reducePeers(size_t* i);
  Status copyPeer(const Step& st);
  Expected<DeviceAddr> area(int q, BufRef ref, uint64_t elems, uint64_t count) const;
  Expected<DeviceAddr> buffer(BufRef ref, uint64_t elems) const;
  // A rank's own buffer where it stands for its area `ref` (kInput for kWindowIn).
  static BufRef ownBuffer(BufRef ref) {
    return ref == BufRef::kWindowOut ? BufRef::kOutput : BufRef::kInput;
  }
  Expected<DeviceAddr> at(int q, BufRef ref, uint64_t elems, uint64_t count) const {
    return ref == BufRef::kWindowIn || ref == BufRef::kWindowOut ? area(q, ref, elems, count)
                                                                 : buffer(ref, elems);
  }
  void data(Kind kind, const DeviceAddr& dst, const DeviceAddr& src, uint64_t count);
  void reach(uint64_t value);
  void waitFor(int q, uint64_t value);
  void flagBarrier();
  void color();

  const Schedule& s_;
  const int me_, n_;
  const LoweringLayout& l_;
  const Values& v_;
  const size_t es_;
  std::vector<uint64_t> waited_;  // by peer: the highest value this rank waited for
  uint64_t reached_ = 0;          // the highest value this rank arrived at
  uint64_t flagBarriers_ = 0;     // captured: flag barriers so far
  int round_ = -1;
  LoweredWindowCall out_;
};

Expected<DeviceAddr> Lowerer::area(int q, BufRef ref, uint64_t elems, uint64_t count) const {
  if (elems + count > l_.areaBytes / es_) return refuse("a step beyond the window area");
  DeviceAddr a;
  a.space = l_.space;
  a.from = q;
  a.slot = static_cast<uint8_t>((l_.firstRound + static_cast<uint64_t>(round_)) % 2);
  a.offset = (ref == BufRef::kWindowOut ? l_.outBytes : 0) + elems * es_;
  return a;
}

Expected<DeviceAddr> Lowerer::buffer(BufRef ref, uint64_t elems) const {
  DeviceAddr a;
  switch (ref) {
    case BufRef::kInput:
      a.space = Space::kInput;
      break;
    case BufRef::kOutput:
      a.space = Space::kOutput;
      break;
    case BufRef::kScratch:
      a.space = Space::kScratch;
      break;
    default:
      return refuse(std::string("a step on buffer ") + algo::bufRefName(ref));
  }
  a.offset = elems * es_;
  return a;
}

void Lowerer::data(Kind kind, const DeviceAddr& dst, const DeviceAddr& src, uint64_t count) {
  if (count == 0) return;
  DeviceOp op;
  op.kind = kind;
  op.dst = dst;
  op.src[0] = src;
  op.bytes = count * es_;
  out_.ops.push_back(op);
}

// Ordinary: this rank's counter through every value up to `value`. Captured: a flag
// barrier for each.
void Lowerer::reach(uint64_t value) {
  for (; reached_ < value; ++reached_) {
    if (l_.captured) {
      flagBarrier();
      continue;
    }
    DeviceOp op;
    op.kind = Kind::kArrive;
    op.from = me_;
    op.value = reached_ + 1;
    out_.ops.push_back(op);
  }
}

void Lowerer::waitFor(int q, uint64_t value) {
  if (l_.captured || q == me_ || waited_[static_cast<size_t>(q)] >= value) return;
  waited_[static_cast<size_t>(q)] = value;
  DeviceOp op;
  op.kind = Kind::kWaitRank;
  op.from = q;
  op.value = value;
  out_.ops.push_back(op);
}

// Signals to every peer, then waits for every peer's (their set once the count is known).
void Lowerer::flagBarrier() {
  DeviceOp op;
  op.value = ++flagBarriers_;
  for (const Kind kind : {Kind::kSignal, Kind::kWaitSignal}) {
    op.kind = kind;
    for (int q = 0; q < n_; ++q) {
      if (q == me_) continue;
      op.from = kind == Kind::kSignal ? me_ : q;
      op.to = kind == Kind::kSignal ? q : me_;
      out_.ops.push_back(op);
    }
  }
}

// Barrier e of k takes flag set e % 2, and the last of an odd count set 2: no two barriers
// in a row share a set, within the call or across calls (each starts with set 1 and ends
// with 0 or 2). One barrier alone (a call with nothing to move) gets a second.
void Lowerer::color() {
  if (flagBarriers_ == 1) flagBarrier();
  const uint64_t k = flagBarriers_;
  for (DeviceOp& op : out_.ops) {
    if (op.kind != Kind::kSignal && op.kind != Kind::kWaitSignal) continue;
    op.value = k % 2 == 1 && op.value == k ? 2 : op.value % 2;
  }
}

Status Lowerer::step(size_t* i) {
  const Step& st = s_.steps[*i];
  const int ready = static_cast<int>(WinFlag::kReady);
  switch (st.op) {
    case OpKind::kBeginRound:
      ++round_;
      if (!st.writes || round_ == 0) return Status::ok();  // round 0: the last call's end
      if (l_.captured) {
        if (reached_ < v_.at(round_ - 1, ready)) return refuse("a refill before its flag");
        return Status::ok();
      }
      for (int q = 0; q < n_; ++q) waitFor(q, v_.at(round_ - 1, ready));
      return Status::ok();
    case OpKind::kSignal:
      reach(v_.at(round_, flagOf(st)));
      return Status::ok();
    case OpKind::kWait: {
      const uint64_t value = v_.at(round_, flagOf(st));
      if (l_.captured) {  // the flag barrier, at this rank's own signal or here
        if (reached_ < value && v_.signals(me_, round_, flagOf(st))) {
          return refuse("a captured rank waits for a flag before it raises its own");
        }
        reach(value);
        return Status::ok();
      }
      for (int q = 0; q < n_; ++q) {
        if (st.recvPeer < 0 || st.recvPeer == q) waitFor(q, value);
      }
      return Status::ok();
    }
    case OpKind::kPut:
      return put(i);
    case OpKind::kReducePeers:
      return reducePeers(i);
    case OpKind::kCopyPeer:
      return copyPeer(st);
    case OpKind::kCopy: {
      if (st.count == 0) return Status::ok();
      BRAID_ASSIGN_OR_RETURN(DeviceAddr dst, at(me_, st.dst, st.dstOffset, st.count));
      BRAID_ASSIGN_OR_RETURN(DeviceAddr src, at(me_, st.src, st.srcOffset, st.count));
      data(Kind::kCopy, dst, src, st.count);
      return Status::ok();
    }
    default:
      return refuse(std::string("a ") + algo::opKindName(st.op) + " step");
  }
}

// This put and the ones right after it of the same source into the same area, at the
// same displacement, as one copy (the gaps between them are unread).
Status Lowerer::put(size_t* i) {
  const Step& first = s_.steps[*i];
  if (first.dst != BufRef::kWindowIn && first.dst != BufRef::kWindowOut) {
    return refuse("a put into a buffer");
  }
  uint64_t end = first.dstOffset + first.count;
  const bool merges = first.src == BufRef::kInput && first.dst == BufRef::kWindowIn;
  for (size_t j = *i + 1; merges && j < s_.steps.size(); ++j) {
    const Step& next = s_.steps[j];
    if (next.op != OpKind::kPut || next.src != first.src || next.dst != first.dst ||
        next.dstOffset < end ||
        next.srcOffset - next.dstOffset != first.srcOffset - first.dstOffset ||
        next.dstOffset < first.dstOffset || next.count == 0) {
      break;
    }
    end = next.dstOffset + next.count;
    *i = j;
  }
  const uint64_t count = end - first.dstOffset;
  if (count == 0) return Status::ok();
  BRAID_ASSIGN_OR_RETURN(DeviceAddr dst, area(me_, first.dst, first.dstOffset, count));
  BRAID_ASSIGN_OR_RETURN(DeviceAddr src, buffer(first.src, first.srcOffset));
  const bool scales = l_.scaleInput && first.src == BufRef::kInput;
  data(scales ? Kind::kScale : Kind::kCopy, dst, src, count);
  return Status::ok();
}

// One reduction over the n ranks. Fused with the put of its result (two-shot's piece):
// into the area, then copied into the buffer. Into a receive buffer kernels cannot
// write: into the scratch (after the schedule's own), then copied.
Status Lowerer::reducePeers(size_t* i) {
  const Step& st = s_.steps[*i];
  if (n_ > kMaxDeviceSources) return refuse("a reduction over more ranks than a kernel takes");
  DeviceOp op;
  op.kind = Kind::kReduce;
  op.nsrcs = n_;
  op.bytes = st.count * es_;
  op.final = st.final;
  for (int q = 0; q < n_; ++q) {
    Expected<DeviceAddr> src = q == me_ && st.ownFromBuffer
                                   ? buffer(ownBuffer(st.src), st.bufOffset)
                                   : area(q, st.src, st.srcOffset, st.count);
    BRAID_TRY(src.status());
    op.src[q] = src.value();
  }
  BRAID_ASSIGN_OR_RETURN(DeviceAddr dst, at(me_, st.dst, st.dstOffset, st.count));
  if (window::fusesWithPut(s_, *i)) {
    const Step& put = s_.steps[++*i];
    BRAID_ASSIGN_OR_RETURN(op.dst, area(me_, put.dst, put.dstOffset, put.count));
  } else if (st.dst == BufRef::kOutput && !l_.recvIsDevice) {
    op.dst.space = Space::kScratch;
    op.dst.offset = s_.scratchElems * es_;
    out_.scratchBytes = std::max<size_t>(out_.scratchBytes, op.dst.offset + op.bytes);
  } else {
    op.dst = dst;
  }
  if (st.count == 0) return Status::ok();
  out_.ops.push_back(op);
  if (op.dst.space != dst.space) data(Kind::kCopy, dst, op.dst, st.count);
  return Status::ok();
}

// A peer's area, or this rank's own buffer where it copies its own.
Status Lowerer::copyPeer(const Step& st) {
  if (st.count == 0) return Status::ok();
  if (st.recvPeer < 0 || st.recvPeer >= n_) return refuse("a copy from no rank");
  BRAID_ASSIGN_OR_RETURN(DeviceAddr src, st.recvPeer == me_
                                             ? buffer(ownBuffer(st.src), st.bufOffset)
                                             : area(st.recvPeer, st.src, st.srcOffset, st.count));
  BRAID_ASSIGN_OR_RETURN(DeviceAddr dst, at(me_, st.dst, st.dstOffset, st.count));
  data(Kind::kCopy, dst, src, st.count);
  return Status::ok();
}

Expected<LoweredWindowCall> Lowerer::run() {
  out_.scratchBytes = s_.scratchElems * es_;
  if (l_.captured) flagBarrier();  // every rank is done with the area it writes
  for (size_t i = 0; i < s_.steps.size(); ++i) BRAID_TRY(step(&i));
  reach(v_.count);
  if (l_.captured) {
    if (l_.space == Space::kHalf) flagBarrier();  // every rank is done reading the halves
    color();
  } else if (v_.rounds > 0) {  // the next call's first rounds refill after these waits
    for (int q = 0; q < n_; ++q)
      waitFor(q, v_.at(v_.rounds - 1, static_cast<int>(WinFlag::kReady)));
  }
  out_.rounds = static_cast<uint64_t>(v_.rounds);
  out_.barriers = v_.count;
  return std::move(out_);
}

}  // namespace

Expected<LoweredWindowCall> lowerWindowSchedules(const std::vector<algo::Schedule>& all, int rank,
                                                 const LoweringLayout& layout) {
  if (rank < 0 || rank >= static_cast<int>(all.size())) return refuse("no such rank");
  if (layout.elemSize == 0) return refuse("elements of 0 bytes");
  BRAID_ASSIGN_OR_RETURN(Values values, window::valuesOf(all));
  BRAID_TRY(window::checkSignals(all, values));
  if (layout.space == Space::kGraphRegion && values.rounds > 1) {
    return refuse("the graph region holds one round");
  }
  if (layout.outBytes == 0 && !windowOutMayAlias(all)) {
    return refuse("kWindowOut cannot share the area");
  }
  return Lowerer(all, rank, layout, values).run();
}

}  // namespace braid
