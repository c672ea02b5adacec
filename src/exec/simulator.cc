#include "exec/simulator.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>

#include "exec/reduce.h"

namespace braid {
namespace {

using algo::BufRef;
using algo::OpKind;
using algo::Step;

struct Message {
  uint64_t count;
  size_t step;  // the sender's step index, for messages
  std::vector<uint8_t> data;
};

// Where a BufRef of one rank lives. `storage` tells aliases apart: in place,
// input and output are the same storage.
struct Buffer {
  uint8_t* data = nullptr;
  uint64_t elems = 0;
  int storage = -1;
};

// Steps of a rank's current batch that are not done yet, queued per peer in
// step order: a step runs when it heads every lane it is in (its send lane,
// its receive lane) and its FIFOs allow. Steps without a peer (copies) have no
// order among themselves and wait in `local`.
struct Lane {
  std::vector<size_t> steps;
  size_t head = 0;
  bool empty() const { return head == steps.size(); }
  size_t front() const { return steps[head]; }
};

struct Batch {
  size_t begin = 0, end = 0;  // steps [begin, end) of the schedule
  size_t left = 0;            // steps of the batch not done
  std::vector<size_t> local;
  std::vector<int> peers;                  // peers with a lane in this batch
  std::vector<Lane> sendLanes, recvLanes;  // by peer; unused for a batch of one step
};

// One past the last step of the batch that starts at `begin`.
size_t batchEnd(const std::vector<Step>& steps, size_t begin) {
  size_t e = begin;
  while (e < steps.size() && steps[e].batchWithNext) ++e;
  return std::min(e + 1, steps.size());
}

bool isLocal(OpKind op) { return op == OpKind::kCopy || op == OpKind::kReduceLocal; }
bool needsRecv(OpKind op) { return op != OpKind::kSend && !isLocal(op); }
bool needsSend(OpKind op) {
  return op == OpKind::kSend || op == OpKind::kRecvReduceSend ||
         op == OpKind::kRecvReduceCopySend || op == OpKind::kRecvCopySend;
}
bool needsSrc(OpKind op) { return op != OpKind::kRecv && op != OpKind::kRecvCopySend; }
bool needsDst(OpKind op) { return op != OpKind::kSend && op != OpKind::kRecvReduceSend; }

const char* bufName(BufRef b) {
  switch (b) {
    case BufRef::kInput: return "input";
    case BufRef::kOutput: return "output";
    case BufRef::kScratch: return "scratch";
    case BufRef::kNone: break;
  }
  return "none";
}

class Simulator {
 public:
  Simulator(const std::vector<algo::Schedule>& s, braidDataType_t dt, braidRedOp_t op,
            std::vector<SimRank>& ranks, const SimOptions& o)
      : sched_(s),
        ranks_(ranks),
        opts_(o),
        n_(static_cast<int>(s.size())),
        dtype_(dt),
        op_(op),
        es_(datatypeSize(dt)) {}

  Status run();

 private:
  Status checkArgs();
  Status checkStep(int r, size_t i);
  Status checkRange(int r, size_t i, BufRef ref, uint64_t off, uint64_t count, bool write);
  Status checkRaces(int r, size_t begin, size_t end);
  Buffer buffer(int r, BufRef ref);
  std::string stepName(int r, size_t i) const;
  std::string where(int r, size_t i) const {
    return "rank " + std::to_string(r) + " " + stepName(r, i);
  }
  std::deque<Message>& fifo(int src, int dst) { return fifos_[size_t(src) * n_ + dst]; }
  bool ready(int r, const Step& st);
  bool nextBatch(int r);
  bool runnable(int r, size_t i);
  Status advance(int r, bool* progressed);
  Status execute(int r, size_t i);
  std::string waitsFor(int r, size_t i);
  std::string waiting(int r);
  Status deadlock();
  Status leftovers();

  const std::vector<algo::Schedule>& sched_;
  std::vector<SimRank>& ranks_;
  SimOptions opts_;
  int n_;
  braidDataType_t dtype_;
  braidRedOp_t op_;
  size_t es_;
  std::vector<std::vector<uint8_t>> scratch_;
  std::vector<std::deque<Message>> fifos_;
  std::vector<Batch> batch_;  // each rank's current batch
};

std::string Simulator::stepName(int r, size_t i) const {
  const Step& st = sched_[r].steps[i];
  return "step " + std::to_string(i) + " of " + std::to_string(sched_[r].steps.size()) + " (" +
         algo::opKindName(st.op) + ", " + std::to_string(st.count) + " elements)";
}

Buffer Simulator::buffer(int r, BufRef ref) {
  SimRank& rk = ranks_[r];
  auto make = [&](std::vector<uint8_t>& v, int storage) {
    return Buffer{v.data(), v.size() / es_, storage};
  };
  switch (ref) {
    case BufRef::kInput:
      if (!rk.inPlace) return make(rk.input, 0);
    {
      // The input never extends past the storage it shares with the output;
      // an empty `input` means "to the end of the output".
      const uint64_t room = rk.output.size() / es_ - rk.inPlaceOffset;
      const uint64_t declared = rk.input.size() / es_;
      return Buffer{rk.output.data() + rk.inPlaceOffset * es_,
                    rk.input.empty() || rk.outputElems != 0 ? room : std::min(room, declared), 1};
    }
    case BufRef::kOutput:
      if (rk.outputElems == 0) return make(rk.output, 1);
      return Buffer{rk.output.data() + rk.outputOffset * es_, rk.outputElems, 1};
    case BufRef::kScratch: return make(scratch_[r], 2);
    case BufRef::kNone: break;
  }
  return Buffer{};
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
    scratch_.emplace_back(sched_[r].scratchElems * es_);
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

// The steps of a batch run concurrently on a real executor, so none may write
// memory another reads or writes: sort the batch's accesses by address and
// compare each with the furthest-reaching earlier write (and earlier access).
// A step's src and dst are disjoint or equal (checkStep); equal ones count as
// one write.
Status Simulator::checkRaces(int r, size_t begin, size_t end) {
  if (end - begin < 2) return Status::ok();
  struct Access {
    const uint8_t* lo;
    const uint8_t* hi;
    bool write;
    size_t step;
    BufRef ref;
    uint64_t offset;
  };
  std::vector<Access> acc;
  for (size_t i = begin; i < end; ++i) {
    const Step& st = sched_[r].steps[i];
    if (st.count == 0) continue;
    const size_t bytes = st.count * es_;
    const uint8_t* d = needsDst(st.op) ? buffer(r, st.dst).data + st.dstOffset * es_ : nullptr;
    const uint8_t* s = needsSrc(st.op) ? buffer(r, st.src).data + st.srcOffset * es_ : nullptr;
    if (d != nullptr) acc.push_back({d, d + bytes, true, i, st.dst, st.dstOffset});
    if (s != nullptr && s != d) acc.push_back({s, s + bytes, false, i, st.src, st.srcOffset});
  }
  std::sort(acc.begin(), acc.end(), [](const Access& a, const Access& b) { return a.lo < b.lo; });
  const Access* anyFar = nullptr;
  const Access* writeFar = nullptr;
  auto name = [&](const Access& a) {
    const uint64_t c = sched_[r].steps[a.step].count;
    return std::string(a.write ? "writes " : "reads ") + bufName(a.ref) + " elements [" +
           std::to_string(a.offset) + ", " + std::to_string(a.offset + c) + ")";
  };
  for (const Access& a : acc) {
    const Access* other = a.write ? anyFar : writeFar;
    if (other != nullptr && other->hi > a.lo) {
      const Access& first = other->step < a.step ? *other : a;
      const Access& second = other->step < a.step ? a : *other;
      return invalidUsage("race in a batch: " + where(r, first.step) + " " + name(first) +
                          " and step " + std::to_string(second.step) + " " + name(second) +
                          ", but the steps of a batch (here " + std::to_string(begin) + "-" +
                          std::to_string(end - 1) + ") run concurrently");
    }
    if (anyFar == nullptr || a.hi > anyFar->hi) anyFar = &a;
    if (a.write && (writeFar == nullptr || a.hi > writeFar->hi)) writeFar = &a;
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
    case OpKind::kCopy:
    case OpKind::kReduceLocal: break;
  }
  if (st.sendPeer >= 0) fifo(r, st.sendPeer).push_back(std::move(out));
  return Status::ok();
}

// Loads the rank's next batch that has steps to do; false when none is left.
bool Simulator::nextBatch(int r) {
  Batch& b = batch_[r];
  const std::vector<Step>& steps = sched_[r].steps;
  for (int p : b.peers) {
    for (Lane* lane : {&b.sendLanes[p], &b.recvLanes[p]}) {
      lane->steps.clear();  // keeps the capacity: no allocation per batch
      lane->head = 0;
    }
  }
  b.peers.clear();
  while (b.left == 0 && b.end < steps.size()) {
    b.begin = b.end;
    b.end = batchEnd(steps, b.begin);
    if (b.end - b.begin == 1) {  // a step on its own, the common case: no lanes
      b.left = steps[b.begin].count > 0 ? 1 : 0;
      continue;
    }
    for (size_t i = b.begin; i < b.end; ++i) {
      const Step& st = steps[i];
      if (st.count == 0) continue;  // done at once
      ++b.left;
      if (st.sendPeer < 0 && st.recvPeer < 0) b.local.push_back(i);
      auto queue = [&](std::vector<Lane>& lanes, int p) {
        if (b.sendLanes[p].steps.empty() && b.recvLanes[p].steps.empty()) b.peers.push_back(p);
        lanes[p].steps.push_back(i);
      };
      if (st.sendPeer >= 0) queue(b.sendLanes, st.sendPeer);
      if (st.recvPeer >= 0) queue(b.recvLanes, st.recvPeer);
    }
  }
  return b.left > 0;
}

bool Simulator::runnable(int r, size_t i) {
  const Batch& b = batch_[r];
  const Step& st = sched_[r].steps[i];
  if (st.sendPeer >= 0 && b.sendLanes[st.sendPeer].front() != i) return false;
  if (st.recvPeer >= 0 && b.recvLanes[st.recvPeer].front() != i) return false;
  return ready(r, st);
}

// Runs every step of the rank's batch that can run now. Only the rank's own
// steps change what it may run next (a step heading two lanes), so repeat
// until a pass over the lanes runs nothing.
Status Simulator::advance(int r, bool* progressed) {
  Batch& b = batch_[r];
  if (b.end - b.begin == 1) {
    if (!ready(r, sched_[r].steps[b.begin])) return Status::ok();
    b.left = 0;
    *progressed = true;
    return execute(r, b.begin);
  }
  for (size_t i : b.local) BRAID_TRY(execute(r, i));
  b.left -= b.local.size();
  *progressed = *progressed || !b.local.empty();
  b.local.clear();
  for (bool again = true; again && b.left > 0;) {
    again = false;
    for (int p : b.peers) {
      for (Lane* lane : {&b.recvLanes[p], &b.sendLanes[p]}) {
        while (!lane->empty() && runnable(r, lane->front())) {
          const Step& st = sched_[r].steps[lane->front()];
          BRAID_TRY(execute(r, lane->front()));
          if (st.sendPeer >= 0) ++b.sendLanes[st.sendPeer].head;
          if (st.recvPeer >= 0) ++b.recvLanes[st.recvPeer].head;
          --b.left;
          again = true;
          *progressed = true;
        }
      }
    }
  }
  return Status::ok();
}

// Why step i (heading at least one of its lanes) cannot run.
std::string Simulator::waitsFor(int r, size_t i) {
  const Batch& b = batch_[r];
  const bool alone = b.end - b.begin == 1;
  const Step& st = sched_[r].steps[i];
  std::string why;
  auto add = [&](const std::string& w) { why += (why.empty() ? "" : " and ") + w; };
  if (st.recvPeer >= 0) {
    const std::string peer = "rank " + std::to_string(st.recvPeer);
    const size_t head = alone ? i : b.recvLanes[st.recvPeer].front();
    if (head != i) add("step " + std::to_string(head) + " (an earlier receive from " + peer + ")");
    if (head == i && fifo(st.recvPeer, r).empty()) add("a message from " + peer);
  }
  if (st.sendPeer >= 0) {
    const std::string peer = "rank " + std::to_string(st.sendPeer);
    const size_t head = alone ? i : b.sendLanes[st.sendPeer].front();
    if (head != i) add("step " + std::to_string(head) + " (an earlier send to " + peer + ")");
    if (head == i && fifo(r, st.sendPeer).size() >= opts_.fifoMessages) {
      add("room to send to " + peer + " (FIFO full: " + std::to_string(opts_.fifoMessages) +
          " messages)");
    }
  }
  return why;
}

// The blocked rank's waiting steps: those heading a lane of its batch.
std::string Simulator::waiting(int r) {
  const Batch& b = batch_[r];
  if (b.end - b.begin == 1) return where(r, b.begin) + " waits for " + waitsFor(r, b.begin);
  std::vector<size_t> heads;
  for (int p : b.peers) {
    for (const Lane* lane : {&b.recvLanes[p], &b.sendLanes[p]}) {
      if (!lane->empty()) heads.push_back(lane->front());
    }
  }
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  constexpr size_t kShown = 16;
  std::string msg = "rank " + std::to_string(r) + " batch of steps " + std::to_string(b.begin) +
                    "-" + std::to_string(b.end - 1) + " (" + std::to_string(b.left) + " not done):";
  for (size_t j = 0; j < heads.size() && j < kShown; ++j) {
    msg += std::string(j == 0 ? " " : ", ") + stepName(r, heads[j]) + " waits for " +
           waitsFor(r, heads[j]);
  }
  if (heads.size() > kShown) msg += ", and " + std::to_string(heads.size() - kShown) + " more";
  return msg;
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

}  // namespace

Status simulate(const std::vector<algo::Schedule>& schedules, braidDataType_t datatype,
                braidRedOp_t op, std::vector<SimRank>& ranks, const SimOptions& options) {
  return Simulator(schedules, datatype, op, ranks, options).run();
}

}  // namespace braid
