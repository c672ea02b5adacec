// NodeWindows' interpreter of window schedules (exec/host/shared_windows.h). Flags, waits
// and lent buffers are in shared_windows_flags.cc, the choice of schedules and their plans
// in shared_windows_plans.cc, set-up in shared_windows_setup.cc.
#include "exec/host/shared_windows.h"

#include <algorithm>
#include <cstring>

#include "core/clock.h"
#include "exec/copy.h"
#include "exec/host/shared_windows_layout.h"
#include "exec/reduce.h"
#include "exec/stream_copy.h"

namespace braid {
namespace {

using algo::BufRef;
using algo::OpKind;
using algo::Step;
using windows::kLineDepth;

// Reductions of several inputs run over blocks this big, so the partial
// result stays in L1 while every input is added to it.
constexpr size_t kReduceBlockBytes = 16 << 10;
// Peers' allocations kept mapped; more are unmapped between calls.
constexpr size_t kMaxLent = 64;

}  // namespace

inline void NodeWindows::prepare(const Plan& plan, const ExecBuffers& b) {
  const algo::Schedule& s = plan.schedule;
  es_ = plan.elemSize;
  in_ = static_cast<const char*>(b.input);
  out_ = static_cast<char*>(b.output);
  own_[static_cast<int>(BufRef::kInput)] = const_cast<char*>(in_);
  own_[static_cast<int>(BufRef::kOutput)] = out_;
  scale_ = b.scale;
  streamOut_ = plan.outputBytes >= kStreamOutMinBytes;
  line_ = plan.line;
  zin_.on = false;
  zout_.on = false;
  zin_.address = 0;
  zout_.address = 0;
  if (s.lendsInput && !line_ && scale_ == nullptr) {
    lend(in_, plan.inputBytes, &zin_);
    if (!zin_.on && !s.lendsOutput) lendByAddress(plan, in_, &zin_);
  }
  // An output is lent only along with the input (two-shot: in place or scaled, every
  // rank copies).
  if (s.lendsOutput && !line_ && (zin_.on || !s.lendsInput)) {
    lend(out_, plan.outputBytes, &zout_);
  }
  if (lent_.size() > kMaxLent) lent_.clear();
  data_.resize(comm_.nranks());
  deadlineSet_ = false;
}

// A writer reuses half e % 2 once every peer has started round e - 1 (so has read round
// e - 2), and line e % kLineDepth once every peer has started round e - kLineDepth + 1.
// A peer publishes ready = e only after it has read every round before e.
inline Status NodeWindows::beginRound(bool writes, const OpDesc& desc) {
  const uint64_t e = ++epoch_;
  half_ = static_cast<int>(e & 1);
  writes_ = writes;
  readyWaits_ = 0;
  const uint64_t depth = line_ ? kLineDepth : 2;
  if (writes && e >= depth && allReady_ + depth <= e) {
    BRAID_TRY(waitAll(Flag::kReady, e - depth + 1, desc));
    allReady_ = line_ ? slowestReady() : e - 1;
  }
  if (line_) {
    own_[static_cast<int>(BufRef::kWindowIn)] = lineData(comm_.rank(), e);
    return Status::ok();
  }
  own_[static_cast<int>(BufRef::kWindowIn)] = inputArea(comm_.rank(), half_);
  own_[static_cast<int>(BufRef::kWindowOut)] = outputArea(comm_.rank(), half_);
  if (!writes) return Status::ok();
  describe(false, half_, zin_);
  describe(true, half_, zout_);
  return Status::ok();
}

// One interpreted step on BRAID_TRACE's timeline, ending now (returned); a wait is all
// waiting.
uint64_t NodeWindows::traceStep(TraceSink& trace, const Step& st, const OpDesc& desc,
                                uint64_t startNs) const {
  TraceEvent e;
  e.kind = TraceEvent::Kind::kStep;
  e.name = algo::opKindName(st.op);
  e.seq = desc.seq;
  e.bytes = st.count * es_;
  e.recvPeer = st.recvPeer;
  e.startNs = startNs;
  e.endNs = nowNs();
  e.waitNs = st.op == OpKind::kWait ? e.endNs - startNs : 0;
  trace.record(e);
  return e.endNs;
}

Status NodeWindows::execute(const Plan& plan, const ExecBuffers& b, const OpDesc& desc) {
  if (comm_.failed()) return comm_.asyncError().withContext(desc.describe() + ": ");
  if (!plan.schedule.windowed) {
    return internalError(desc.describe() + ": the shared windows run only window schedules");
  }
  prepare(plan, b);
  const algo::Schedule* oneShot = plan.hasOneShot && zin_.on ? &plan.oneShot : nullptr;
  const Step* it = plan.schedule.steps.data();
  const Step* end = it + plan.schedule.steps.size();
  TraceSink* trace = comm_.trace();
  uint64_t stepStartNs = trace != nullptr ? nowNs() : 0;  // each step starts as the last ends
  while (it != end) {
    const Step& st = *it++;
    switch (st.op) {
      case OpKind::kBeginRound:
        BRAID_TRY(beginRound(st.writes, desc));
        break;
      case OpKind::kPut:
        if (!lent(st.dst)) put(st, desc);
        break;
      case OpKind::kSignal:
        signal(st.flag);
        break;
      case OpKind::kWait:
        BRAID_TRY(wait(st, desc));
        break;
      case OpKind::kReducePeers:
        if (oneShot != nullptr && inputsAllLent(half_)) {
          // Every input lent, seen alike by both ranks after the ready flags: continue with
          // the one-shot schedule from its first reduction (rules in shared_windows.h).
          end = oneShot->steps.data() + oneShot->steps.size();
          it = std::find_if(oneShot->steps.data(), end,
                            [](const Step& t) { return t.op == OpKind::kReducePeers; });
          oneShot = nullptr;
          break;
        }
        oneShot = nullptr;
        BRAID_TRY(reduceStep(st, &it, end, desc));
        break;
      case OpKind::kCopyPeer:
        BRAID_TRY(copyPeer(st, desc));
        break;
      case OpKind::kCopy:
        if (ownAt(st.src, st.srcOffset) != ownAt(st.dst, st.dstOffset)) {
          copyOut(ownAt(st.dst, st.dstOffset), ownAt(st.src, st.srcOffset), st.count * es_);
        }
        break;
      default:
        return internalError(desc.describe() + ": the shared windows cannot run a " +
                             algo::opKindName(st.op) + " step");
    }
    if (trace != nullptr) stepStartNs = traceStep(*trace, st, desc, stepStartNs);
  }
  // Peers read the lent buffers until they finish: they stay untouched until then.
  if (zin_.on || zout_.on) BRAID_TRY(waitAll(Flag::kFinished, epoch_, desc));
  return Status::ok();
}

// A put of the reduced range into this rank's window right after the reduction is made
// in its pass (the put is skipped where that window's buffer is lent).
Status NodeWindows::reduceStep(const Step& st, const Step** next, const Step* end,
                               const OpDesc& desc) {
  const Step* put = *next;
  const bool fuse = put != end && algo::putsReduced(st, *put);
  if (fuse) ++*next;
  return reducePeers(st, fuse && !lent(put->dst) ? put : nullptr, desc);
}

void NodeWindows::put(const Step& st, const OpDesc& desc) {
  char* dst = ownAt(st.dst, st.dstOffset);
  const char* src = ownAt(st.src, st.srcOffset);
  if (line_) {
    copyBytes(dst, src, st.count * es_);
  } else {
    copyIn(dst, src, st.count * es_, st.src == BufRef::kInput, desc);
  }
}

void NodeWindows::signal(Flag flag) {
  if (!line_) {
    publish(flag, epoch_);
    return;
  }
  // Lines: nothing is lent, so nobody waits for kFinished; ready rides with the data.
  if (flag == Flag::kFinished) return;
  const int me = comm_.rank();
  Header* h = header(me);
  const bool wrote = flag == Flag::kReady && writes_;
  if (wrote) lineEpoch(me, epoch_).store(epoch_, std::memory_order_release);
  (flag == Flag::kReady ? h->ready : h->done).store(epoch_, std::memory_order_release);
  wakeSleepers(h);
}

Status NodeWindows::wait(const Step& st, const OpDesc& desc) {
  const int n = comm_.nranks();
  const int waits = st.recvPeer >= 0 ? 1 : n - 1;
  int q = st.recvPeer >= 0 ? st.recvPeer : comm_.rank();
  for (int i = 0; i < waits; ++i) {
    if (st.recvPeer < 0 && ++q == n) q = 0;  // every peer, from this rank's next on
    std::atomic<uint64_t>& flag =
        line_ && st.flag == Flag::kReady ? lineEpoch(q, epoch_) : flagOf(q, st.flag);
    if (flag.load(std::memory_order_acquire) < epoch_) {
      BRAID_TRY(waitOn(q, flag, st.flag, epoch_, desc));
    }
  }
  if (st.flag != Flag::kReady || (readyWaits_ += waits) != n - 1) return Status::ok();
  allReady_ = epoch_;
  // Every peer has published this round, so has read this rank's line of the next one
  // kLineDepth rounds ago: take it back for writing now, not at the next call's store.
  if (line_ && writes_)
    __builtin_prefetch(&header(comm_.rank())->lines[(epoch_ + 1) % kLineDepth], 1);
  return Status::ok();
}

const char* NodeWindows::dataOf(int q, const Step& st) const {
  const bool output = st.src == BufRef::kWindowOut;
  if (q == comm_.rank()) {
    const bool fromBuffer = st.ownFromBuffer || (output ? zout_.on : zin_.on);
    if (fromBuffer || st.op == OpKind::kCopyPeer) {
      return ownAt(output ? BufRef::kOutput : BufRef::kInput, st.bufOffset);
    }
    return ownAt(st.src, st.srcOffset);
  }
  if (line_) return lineData(q, epoch_) + st.srcOffset * es_;
  if (described(q, output, half_)) return nullptr;
  return (output ? outputArea(q, half_) : inputArea(q, half_)) + st.srcOffset * es_;
}

Expected<const char*> NodeWindows::lentDataOf(int q, const Step& st, const OpDesc& desc) {
  return lentOf(q, st.src == BufRef::kWindowOut, half_, st.bufOffset * es_, st.count * es_, desc);
}

Status NodeWindows::reducePeers(const Step& st, const Step* fusedPut, const OpDesc& desc) {
  for (int q = 0; q < comm_.nranks(); ++q) {
    data_[q] = dataOf(q, st);
    if (data_[q] == nullptr) {
      BRAID_ASSIGN_OR_RETURN(data_[q], lentDataOf(q, st, desc));
    }
  }
  char* shared = fusedPut != nullptr ? ownAt(fusedPut->dst, fusedPut->dstOffset) : nullptr;
  reduceAll(ownAt(st.dst, st.dstOffset), shared, data_, st.count, desc);
  return Status::ok();
}

Status NodeWindows::copyPeer(const Step& st, const OpDesc& desc) {
  const char* src = dataOf(st.recvPeer, st);
  if (src == nullptr && lentAddress(st.recvPeer, st)) {
    return readLent(st.recvPeer, st, ownAt(st.dst, st.dstOffset), desc);
  }
  if (src == nullptr) {
    BRAID_ASSIGN_OR_RETURN(src, lentDataOf(st.recvPeer, st, desc));
  }
  char* dst = ownAt(st.dst, st.dstOffset);
  if (src == dst) return Status::ok();
  if (line_) {
    copyBytes(dst, src, st.count * es_);
  } else {
    copyOut(dst, src, st.count * es_);
  }
  return Status::ok();
}

void NodeWindows::reduceAll(char* dst, char* shared, const std::vector<const char*>& data,
                            size_t count, const OpDesc& desc) {
  const ReduceKernels& k = reduceKernels(desc.datatype, desc.op);
  const size_t es = datatypeSize(desc.datatype);
  const int n = comm_.nranks();
  const size_t block = std::max<size_t>(1, kReduceBlockBytes / es);
  const bool stream = count * es >= kStreamMinBytes;
  for (size_t b = 0; b < count; b += block) {
    const size_t m = std::min(block, count - b);
    const size_t at = b * es;
    // A large output is made in L1 and streamed out (see streamOut_).
    char* d = streamOut_ ? block_ : dst + at;
    if (n == 2) {
      k.reduceFinal(d, nullptr, data[0] + at, data[1] + at, m, n);
    } else {
      k.reduce(d, data[0] + at, data[1] + at, m);
      for (int r = 2; r < n - 1; ++r) k.reduce(d, d, data[r] + at, m);
      k.reduceFinal(d, nullptr, d, data[n - 1] + at, m, n);
    }
    if (streamOut_) streamLines(dst + at, d, m * es);
    // From L1 into the window: peers read it, so stream it (exec/stream_copy.h).
    if (shared == nullptr) continue;
    if (stream) {
      streamLines(shared + at, d, m * es);
    } else {
      copyBytes(shared + at, d, m * es);
    }
  }
}

void NodeWindows::copyOut(char* dst, const char* src, size_t bytes) const {
  if (streamOut_) {
    streamCopy(dst, src, bytes);
  } else {
    copyBytes(dst, src, bytes);
  }
}

void NodeWindows::copyIn(char* dst, const char* src, size_t bytes, bool scaled,
                         const OpDesc& desc) {
  if (scale_ == nullptr || !scaled) {
    streamCopy(dst, src, bytes);
    return;
  }
  const ScaleFn scale = reduceKernels(desc.datatype, braidSum).scale;
  const size_t es = datatypeSize(desc.datatype);
  if (bytes < kStreamMinBytes) {
    scale(dst, src, bytes / es, scale_);
    return;
  }
  // Scaled in L1, then streamed into the window, which peers read next.
  const size_t block = sizeof(block_) / es * es;
  for (size_t at = 0; at < bytes; at += block) {
    const size_t m = std::min(block, bytes - at);
    scale(block_, src + at, m / es, scale_);
    streamLines(dst + at, block_, m);
  }
}

}  // namespace braid
