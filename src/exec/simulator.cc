#include "exec/simulator.h"

#include <algorithm>
#include <cstring>

#include "exec/simulator_internal.h"

namespace braid {
namespace sim {

std::string Simulator::stepName(int r, size_t i) const {
  const Step& st = sched_[r].steps[i];
  return "step " + std::to_string(i) + " of " + std::to_string(sched_[r].steps.size()) + " (" +
         algo::opKindName(st.op) + ", " + std::to_string(st.count) + " elements)";
}

Buffer Simulator::buffer(int r, BufRef ref) {
  if (ref == BufRef::kScratch) return Buffer{scratch_[r].data(), scratch_[r].size() / es_, 2};
  return userBuffer(ranks_[r], ref, es_);
}

Status Simulator::checkArgs() {
  if (es_ == 0 || static_cast<int>(op_) < 0 || op_ >= braidNumOps) {
    return invalidArgument("simulate: invalid datatype or op");
  }
  if (n_ < 1 || ranks_.size() != sched_.size()) {
    return invalidArgument("simulate: " + std::to_string(sched_.size()) + " schedules for " +
                           std::to_string(ranks_.size()) + " ranks");
  }
  if (opts_.fifoMessages < 1) return invalidArgument("simulate: fifoMessages must be >= 1");
  for (int r = 0; r < n_; ++r) {
    if (sched_[r].rank != r || sched_[r].nranks != n_) {
      return invalidArgument("malformed schedule: schedules[" + std::to_string(r) + "] says rank " +
                             std::to_string(sched_[r].rank) + " of " +
                             std::to_string(sched_[r].nranks) + ", expected rank " +
                             std::to_string(r) + " of " + std::to_string(n_));
    }
    scratch_.emplace_back(sched_[r].scratchElems * es_, opts_.scratchFill);
    const std::vector<Step>& steps = sched_[r].steps;
    for (size_t i = 0; i < steps.size(); ++i) BRAID_TRY(checkStep(r, i));
    for (size_t b = 0; b < steps.size(); b = batchEnd(steps, b)) {
      BRAID_TRY(checkRaces(r, b, batchEnd(steps, b)));
    }
  }
  fifos_.resize(size_t(n_) * n_);
  batch_.resize(n_);
  for (Batch& b : batch_) {
    b.sendLanes.resize(n_);
    b.recvLanes.resize(n_);
  }
  return Status::ok();
}


Status Simulator::checkRange(int r, size_t i, BufRef ref, uint64_t off, uint64_t count,
                             bool write) {
  Buffer b = buffer(r, ref);
  if (off <= b.elems && count <= b.elems - off) return Status::ok();
  const uint64_t end = count > UINT64_MAX - off ? UINT64_MAX : off + count;  // no wrap
  return invalidUsage("out of bounds: " + where(r, i) + (write ? " writes " : " reads ") +
                      bufName(ref) + " elements [" + std::to_string(off) + ", " +
                      std::to_string(end) + ") but the " + bufName(ref) + " holds " +
                      std::to_string(b.elems) + " elements");
}

Status Simulator::checkStep(int r, size_t i) {
  const Step& st = sched_[r].steps[i];
  if (st.count == 0) return Status::ok();  // executors skip it without looking
  auto bad = [&](const std::string& why) {
    return invalidUsage("malformed step: " + where(r, i) + ": " + why);
  };
  for (int32_t peer : {st.sendPeer, st.recvPeer}) {
    if (peer >= n_ || peer < -1 || peer == r) {
      return bad("peer " + std::to_string(peer) + " is not another rank of " + std::to_string(n_));
    }
  }
  if (needsSend(st.op) != (st.sendPeer >= 0)) {
    return bad(needsSend(st.op) ? "has no sendPeer" : "sets a sendPeer it has no data for");
  }
  if (needsRecv(st.op) != (st.recvPeer >= 0)) {
    return bad(needsRecv(st.op) ? "has no recvPeer" : "sets a recvPeer it would not use");
  }
  if (needsSrc(st.op) && st.src == BufRef::kNone) return bad("has no src buffer");
  if (needsDst(st.op) && st.dst == BufRef::kNone) return bad("has no dst buffer");
  if (needsDst(st.op) && st.dst == BufRef::kInput) return bad("writes the (const) input");
  if (needsSrc(st.op)) BRAID_TRY(checkRange(r, i, st.src, st.srcOffset, st.count, false));
  if (needsDst(st.op)) BRAID_TRY(checkRange(r, i, st.dst, st.dstOffset, st.count, true));
  if (needsSrc(st.op) && needsDst(st.op) &&
      buffer(r, st.src).storage == buffer(r, st.dst).storage) {
    // Compare addresses: in place, input and output start at different places.
    const uint8_t* a = buffer(r, st.src).data + st.srcOffset * es_;
    const uint8_t* b = buffer(r, st.dst).data + st.dstOffset * es_;
    const size_t bytes = st.count * es_;
    if (a != b && a < b + bytes && b < a + bytes) {
      return bad("src and dst overlap without being equal");
    }
  }
  return Status::ok();
}

bool Simulator::ready(int r, const Step& st) {
  if (st.recvPeer >= 0 && fifo(st.recvPeer, r).empty()) return false;
  return st.sendPeer < 0 || fifo(r, st.sendPeer).size() < opts_.fifoMessages;
}

Status Simulator::execute(int r, size_t i) {
  const Step& st = sched_[r].steps[i];
  const ReduceKernels& k = reduceKernels(dtype_, op_);
  const int divisor = st.final ? n_ : 1;
  const size_t bytes = st.count * es_;
  uint8_t* s = needsSrc(st.op) ? buffer(r, st.src).data + st.srcOffset * es_ : nullptr;
  uint8_t* d = needsDst(st.op) ? buffer(r, st.dst).data + st.dstOffset * es_ : nullptr;
  if (st.op == OpKind::kCopy) {
    if (st.final || s != d) k.finalize(d, s, st.count, divisor);
    return Status::ok();
  }
  if (st.op == OpKind::kReduceLocal) {  // dst = dst op src
    if (st.final) {
      k.reduceFinal(d, nullptr, d, s, st.count, divisor);
    } else {
      k.reduce(d, d, s, st.count);
    }
    return Status::ok();
  }
  Message in;
  if (st.recvPeer >= 0) {
    std::deque<Message>& q = fifo(st.recvPeer, r);
    in = std::move(q.front());
    q.pop_front();
    if (in.count != st.count) {
      return invalidUsage("size mismatch: " + where(r, i) + " expects " + std::to_string(st.count) +
                          " elements from rank " + std::to_string(st.recvPeer) + ", whose step " +
                          std::to_string(in.step) + " sent " + std::to_string(in.count));
    }
  }
  Message out{st.count, i, std::vector<uint8_t>(st.sendPeer >= 0 ? bytes : 0)};
  const uint8_t* m = in.data.data();
  switch (st.op) {
    case OpKind::kSend: std::memcpy(out.data.data(), s, bytes); break;
    case OpKind::kRecv: std::memcpy(d, m, bytes); break;
    case OpKind::kRecvReduce:
      if (st.final) {
        k.reduceFinal(d, nullptr, s, m, st.count, divisor);
      } else {
        k.reduce(d, s, m, st.count);
      }
      break;
    case OpKind::kRecvReduceSend: k.reduce(out.data.data(), s, m, st.count); break;
    case OpKind::kRecvReduceCopySend:
      k.reduceFinal(d, out.data.data(), s, m, st.count, divisor);
      break;
    case OpKind::kRecvCopySend:
      std::memcpy(d, m, bytes);
      std::memcpy(out.data.data(), m, bytes);
      break;
    default: break;  // local and window steps move no message
  }
  if (st.sendPeer >= 0) fifo(r, st.sendPeer).push_back(std::move(out));
  return Status::ok();
}






Status Simulator::deadlock() {
  std::string msg = "deadlock: no rank can run its next step;";
  for (int r = 0; r < n_; ++r) {
    if (batch_[r].left > 0) msg += " " + waiting(r) + ";";
  }
  msg.pop_back();
  return invalidUsage(msg);
}

Status Simulator::leftovers() {
  std::string msg;
  for (int src = 0; src < n_; ++src) {
    for (int dst = 0; dst < n_; ++dst) {
      const std::deque<Message>& q = fifo(src, dst);
      if (q.empty()) continue;
      msg += (msg.empty() ? "" : "; ") + std::to_string(q.size()) + " message(s) from rank " +
             std::to_string(src) + " to rank " + std::to_string(dst) +
             " never received (first sent by step " + std::to_string(q.front().step) + ", " +
             std::to_string(q.front().count) + " elements)";
    }
  }
  if (msg.empty()) return Status::ok();
  return invalidUsage("leftover messages: " + msg);
}

Status Simulator::run() {
  BRAID_TRY(checkArgs());
  for (;;) {
    bool progressed = false;
    bool done = true;
    for (int r = 0; r < n_; ++r) {
      if (batch_[r].left == 0 && !nextBatch(r)) continue;
      done = false;
      BRAID_TRY(advance(r, &progressed));
    }
    if (done) return leftovers();
    if (!progressed) return deadlock();
  }
}

}  // namespace sim

Status simulate(const std::vector<algo::Schedule>& schedules, braidDataType_t datatype,
                braidRedOp_t op, std::vector<SimRank>& ranks, const SimOptions& options) {
  for (const algo::Schedule& s : schedules) {
    if (s.windowed) return invalidUsage("a window schedule needs the windows' simulator");
  }
  return sim::Simulator(schedules, datatype, op, ranks, options).run();
}

}  // namespace braid
