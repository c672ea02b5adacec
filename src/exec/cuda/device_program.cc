#include "exec/cuda/device_program.h"

#include <algorithm>
#include <string>

namespace braid {
namespace {

using algo::BufRef;
using algo::OpKind;
using algo::Step;
using Kind = DeviceOp::Kind;
using Space = DeviceAddr::Space;

class Lowering {
 public:
  Lowering(const algo::Schedule& s, size_t es, size_t slotBytes, PairCounts counts, bool captured)
      : s_(s),
        es_(es),
        sliceElems_(slotBytes / es),
        captured_(captured),
        counts_(std::move(counts)) {}

  Status run();
  std::vector<DeviceOp>& ops() { return ops_; }
  PairCounts& counts() { return counts_; }

 private:
  uint64_t slices(const Step& st) const { return (st.count + sliceElems_ - 1) / sliceElems_; }
  DeviceAddr buffer(BufRef ref, uint64_t elemOffset) const;
  Status batch(size_t begin, size_t end);
  void slice(const Step& st, uint64_t i);
  void local(const Step& st);
  void counter(Kind kind, int from, int to, uint64_t value);
  void copy(const DeviceAddr& dst, const DeviceAddr& src, uint64_t bytes);
  void reduce(const DeviceAddr& dst, const DeviceAddr& a, const DeviceAddr* b, uint64_t bytes,
              bool final);

  const algo::Schedule& s_;
  const size_t es_;
  const uint64_t sliceElems_;
  const bool captured_;  // graph slots and flags (device_program.h)
  PairCounts counts_;
  std::vector<DeviceOp> ops_;
};

DeviceAddr Lowering::buffer(BufRef ref, uint64_t elemOffset) const {
  DeviceAddr a;
  a.space = ref == BufRef::kInput ? Space::kInput
                                  : (ref == BufRef::kOutput ? Space::kOutput : Space::kScratch);
  a.offset = elemOffset * es_;
  return a;
}

void Lowering::counter(Kind kind, int from, int to, uint64_t value) {
  DeviceOp op;
  op.kind = kind;
  op.from = from;
  op.to = to;
  op.value = value;
  ops_.push_back(op);
}

void Lowering::copy(const DeviceAddr& dst, const DeviceAddr& src, uint64_t bytes) {
  DeviceOp op;
  op.kind = Kind::kCopy;
  op.dst = dst;
  op.src[0] = src;
  op.bytes = bytes;
  ops_.push_back(op);
}

void Lowering::reduce(const DeviceAddr& dst, const DeviceAddr& a, const DeviceAddr* b,
                      uint64_t bytes, bool final) {
  DeviceOp op;
  op.kind = Kind::kReduce;
  op.dst = dst;
  op.src[0] = a;
  if (b != nullptr) op.src[1] = *b;
  op.nsrcs = b != nullptr ? 2 : 1;
  op.bytes = bytes;
  op.final = final;
  ops_.push_back(op);
}

// A copy or local reduction, whole.
void Lowering::local(const Step& st) {
  const uint64_t bytes = st.count * es_;
  const DeviceAddr src = buffer(st.src, st.srcOffset), dst = buffer(st.dst, st.dstOffset);
  if (st.op == OpKind::kReduceLocal) {
    reduce(dst, dst, &src, bytes, st.final);
  } else if (st.final) {
    reduce(dst, src, nullptr, bytes, true);  // avg divides; other ops copy
  } else {
    copy(dst, src, bytes);
  }
}

// Slice i of a step that receives and/or sends: wait for the data and the free slot,
// move or reduce it, then post and release.
void Lowering::slice(const Step& st, uint64_t i) {
  const uint64_t off = i * sliceElems_;
  const uint64_t bytes = std::min(sliceElems_, st.count - off) * es_;
  const int me = s_.rank, p = st.recvPeer, q = st.sendPeer;
  DeviceAddr in, out;
  uint64_t kin = 0, kout = 0;
  const Space slots = captured_ ? Space::kGraphSlot : Space::kSlot;
  if (algo::needsRecv(st.op)) {
    kin = ++counts_.received[static_cast<size_t>(p)];
    if (captured_) {
      counter(Kind::kWaitFull, p, me, kin % 2);
    } else {
      counter(Kind::kWaitPosted, p, me, kin);
    }
    in.space = slots;
    in.from = p;
    in.to = me;
    in.slot = static_cast<uint8_t>(kin % 2);
  }
  if (algo::needsSend(st.op)) {
    kout = ++counts_.sent[static_cast<size_t>(q)];
    if (captured_) {
      counter(Kind::kWaitFreed, me, q, kout % 2);
    } else if (kout > 2) {
      counter(Kind::kWaitConsumed, me, q, kout - 2);
    }
    out.space = slots;
    out.from = me;
    out.to = q;
    out.slot = static_cast<uint8_t>(kout % 2);
  }
  const DeviceAddr src = buffer(st.src, st.srcOffset + off);
  const DeviceAddr dst = buffer(st.dst, st.dstOffset + off);
  switch (st.op) {
    case OpKind::kSend:
      copy(out, src, bytes);
      break;
    case OpKind::kRecv:
      copy(dst, in, bytes);
      break;
    case OpKind::kRecvReduce:
      reduce(dst, src, &in, bytes, st.final);
      break;
    case OpKind::kRecvReduceSend:
      reduce(out, src, &in, bytes, false);
      break;
    case OpKind::kRecvReduceCopySend:
      reduce(dst, src, &in, bytes, st.final);
      copy(out, dst, bytes);
      break;
    case OpKind::kRecvCopySend:
      copy(dst, in, bytes);
      copy(out, dst, bytes);
      break;
    default:
      break;  // local(): no slices; window steps are refused before (lowerSchedule)
  }
  if (kout != 0) counter(captured_ ? Kind::kFill : Kind::kPost, me, q, captured_ ? kout % 2 : kout);
  if (kin != 0) counter(captured_ ? Kind::kFree : Kind::kConsume, p, me, captured_ ? kin % 2 : kin);
}

// The batch [begin, end) in rounds. A slice's round is its place in its lane: among the
// batch's slices to its send peer (pure sends) or from its receive peer (the rest), so a
// send of round i waits for a slot its receiver emptied in its round i - 2. Every lane
// must come out in step order (what the other side expects); it does unless
// receive-and-send steps to one peer receive from different peers at different paces,
// which lowering refuses.
Status Lowering::batch(size_t begin, size_t end) {
  struct Piece {
    size_t step;
    uint64_t slice, round;
  };
  std::vector<uint64_t> sendLane(counts_.sent.size(), 0), recvLane(counts_.sent.size(), 0);
  std::vector<Piece> sends, rest;
  for (size_t j = begin; j < end; ++j) {
    const Step& st = s_.steps[j];
    if (st.count == 0) continue;
    if (algo::isLocal(st.op)) {
      local(st);
      continue;
    }
    const bool pure = st.op == OpKind::kSend;
    uint64_t& lane = pure ? sendLane[static_cast<size_t>(st.sendPeer)]
                          : recvLane[static_cast<size_t>(st.recvPeer)];
    for (uint64_t i = 0; i < slices(st); ++i) (pure ? sends : rest).push_back({j, i, lane++});
  }
  auto byRound = [](const Piece& a, const Piece& b) {
    return a.round != b.round ? a.round < b.round : a.step < b.step;
  };
  std::stable_sort(sends.begin(), sends.end(), byRound);
  std::stable_sort(rest.begin(), rest.end(), byRound);
  std::vector<size_t> lastTo(counts_.sent.size(), begin), lastFrom(counts_.sent.size(), begin);
  size_t a = 0, b = 0;
  while (a < sends.size() || b < rest.size()) {
    const bool takeSend = a < sends.size() && (b == rest.size() || sends[a].round <= rest[b].round);
    const Piece& p = takeSend ? sends[a++] : rest[b++];
    const Step& st = s_.steps[p.step];
    for (const bool send : {true, false}) {
      const int peer = send ? st.sendPeer : st.recvPeer;
      if (peer < 0) continue;
      size_t& at = (send ? lastTo : lastFrom)[static_cast<size_t>(peer)];
      if (p.step < at) {
        return Status(braidInternalError,
                      "device lowering: step " + std::to_string(p.step) + " would " +
                          (send ? "send to" : "receive from") + " rank " + std::to_string(peer) +
                          " out of step order (a pure send and a receive-and-send step to one "
                          "peer, or such steps paced by different senders, in one batch)");
      }
      at = p.step;
    }
    slice(st, p.slice);
  }
  return Status::ok();
}

Status Lowering::run() {
  if (sliceElems_ == 0)
    return Status(braidInternalError, "device lowering: slot below one element");
  const size_t nsteps = s_.steps.size();
  for (const Step& st : s_.steps) {
    for (int peer : {st.sendPeer, st.recvPeer}) {
      if (st.count != 0 &&
          (peer >= s_.nranks || peer == s_.rank || peer >= static_cast<int>(counts_.sent.size()))) {
        return Status(braidInternalError,
                      "device lowering: step peer " + std::to_string(peer) + " out of range");
      }
    }
  }
  for (size_t begin = 0; begin < nsteps;) {
    size_t end = begin;
    while (end < nsteps && s_.steps[end].batchWithNext) ++end;
    end = std::min(end + 1, nsteps);
    if (end - begin == 1) {
      const Step& st = s_.steps[begin];
      if (st.count != 0 && algo::isLocal(st.op)) local(st);
      for (uint64_t i = 0; st.count != 0 && !algo::isLocal(st.op) && i < slices(st); ++i) {
        slice(st, i);
      }
      begin = end;
      continue;
    }
    BRAID_TRY(batch(begin, end));
    begin = end;
  }
  return Status::ok();
}

}  // namespace

Expected<std::vector<DeviceOp>> lowerSchedule(const algo::Schedule& schedule, size_t elemSize,
                                              size_t slotBytes, PairCounts* counts, bool captured) {
  if (elemSize == 0) return Status(braidInternalError, "device lowering: element size 0");
  if (schedule.windowed) {
    return Status(braidInternalError, "device lowering: a window schedule needs the windows");
  }
  Lowering l(schedule, elemSize, slotBytes, *counts, captured);
  BRAID_TRY(l.run());
  *counts = std::move(l.counts());
  return std::move(l.ops());
}

}  // namespace braid
