#include "api/cuda_ipc.h"

#include <algorithm>

#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/reduce.h"

namespace braid {
namespace {

using algo::Collective;

// Elements [lo, hi) of `count` that rank q of n handles in a two-shot round.
size_t sliceStart(size_t count, int q, int n) {
  return count * static_cast<size_t>(q) / static_cast<size_t>(n);
}

bool isDevice(const void* p) { return cuda::memoryKind(p) == cuda::MemoryKind::kDevice; }

}  // namespace

bool DeviceWindows::supports(const OpRequest& op, int nranks) {
  if (op.kind != OpRequest::Kind::kCollective) return false;
  if (nranks < 2 || nranks > cuda::kMaxReduceInputs) return false;
  switch (op.collective) {
    case Collective::kAllReduce:
    case Collective::kReduceScatter:
    case Collective::kReduce:
      return static_cast<int>(op.op) >= 0 && op.op < braidNumOps;
    case Collective::kAllGather:
    case Collective::kBroadcast:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kAllToAllv:  // a lowered schedule
      return true;
  }
  return false;
}

// Orders this call after the communicator's last one (whatever stream that ran on).
Status DeviceWindows::order(void* stream) {
  // Also on the same stream handle: a destroyed stream's address may come back as a new
  // stream while the old one's work still runs.
  if (!anyCall_) return Status::ok();
  return cuda::streamWaitEvent(stream, lastEvent_);
}

Status DeviceWindows::finishCall(void* stream) {
  BRAID_TRY(cuda::eventRecord(lastEvent_, stream));
  anyCall_ = true;
  return Status::ok();
}

// Enqueues barrier e: this rank's counter becomes e once the stream's work so far has
// finished, and the stream's later work waits until every peer's counter is at least e.
Status DeviceWindows::barrier(void* stream) {
  const uint64_t e = epoch_.load(std::memory_order_relaxed) + 1;
  epoch_.store(e, std::memory_order_relaxed);
  for (int q = 0; q < nranks_; ++q) {
    char* counter = device(counters_[q].value);
    BRAID_TRY(q == rank_ ? cuda::streamWriteValue64(stream, counter, e)
                         : cuda::streamWaitValue64(stream, counter, e));
  }
  if (e % 64 == 1) watchCv_.notify_one();  // wakes an idle watch within a few calls
  return Status::ok();
}

// Null where kernels may write `recv`; else a device buffer of at least `bytes` (one
// round's output) that reduceTo copies from. Growing it frees the old one, which waits
// for the device (rare: a round is at most a half).
Expected<void*> DeviceWindows::scratchFor(const void* recv, size_t bytes) {
  if (isDevice(recv)) return static_cast<void*>(nullptr);
  if (scratchBytes_ < bytes) {
    if (scratch_ != nullptr) (void)cuda::deviceFree(scratch_);
    scratch_ = nullptr;
    scratchBytes_ = 0;
    // At least 1 MiB (a barrier's one byte should not cost a half's worth), at most a half.
    const size_t want = std::min(halfBytes_, std::max(bytes, size_t{1} << 20));
    BRAID_ASSIGN_OR_RETURN(scratch_, cuda::deviceAlloc(want));
    scratchBytes_ = want;
  }
  return scratch_;
}

// The reduction of n elements of every rank's `srcs` into `out`, through `scratch` when
// that is not null (scratchFor).
Status DeviceWindows::reduceTo(char* out, void* scratch, const std::vector<const void*>& srcs,
                               size_t n, const OpRequest& op, void* stream) {
  void* dst = scratch != nullptr ? scratch : out;
  BRAID_TRY(cuda::launchReduce(dst, srcs.data(), nranks_, n, op.datatype, op.op, nranks_, stream));
  if (scratch == nullptr) return Status::ok();
  return cuda::copyAsync(out, scratch, n * datatypeSize(op.datatype), stream);
}

Status DeviceWindows::run(const std::vector<OpRequest>& ops, void* stream) {
  if (released()) {
    Status err = comm_->asyncError();
    return err.isOk() ? Status(braidRemoteError, "device windows: barriers were released") : err;
  }
  // Sends to this rank pair with receives from it, in order (checked before anything is
  // enqueued: bad usage must not release the windows).
  std::vector<const OpRequest*> selfSends, selfRecvs;
  for (const OpRequest& op : ops) {
    if (op.kind == OpRequest::Kind::kCollective || op.peer != rank_) continue;
    (op.kind == OpRequest::Kind::kSend ? selfSends : selfRecvs).push_back(&op);
  }
  bool paired = selfSends.size() == selfRecvs.size();
  for (size_t i = 0; paired && i < selfSends.size(); ++i) {
    paired = selfSends[i]->count * datatypeSize(selfSends[i]->datatype) ==
             selfRecvs[i]->count * datatypeSize(selfRecvs[i]->datatype);
  }
  if (!paired) {
    return invalidUsage(
        "a send to this rank needs a receive from it of the same size in the same group (and "
        "a receive from it a send)");
  }
  Status st = order(stream);
  for (size_t i = 0; st.isOk() && i < selfSends.size(); ++i) {
    if (selfRecvs[i]->recv == selfSends[i]->send) continue;
    st = cuda::copyAsync(selfRecvs[i]->recv, selfSends[i]->send,
                         selfSends[i]->count * datatypeSize(selfSends[i]->datatype), stream);
  }
  std::vector<const OpRequest*> pairs;
  for (const OpRequest& op : ops) {
    if (!st.isOk()) break;
    if (op.kind != OpRequest::Kind::kCollective) {
      if (op.peer != rank_) pairs.push_back(&op);
    } else if (op.count != 0 || op.collective == Collective::kAllToAllv) {  // its count is 0
      st = runOne(op, stream);
    }
  }
  if (st.isOk() && !pairs.empty()) st = pointToPoint(pairs, stream);
  if (st.isOk()) st = finishCall(stream);
  // A call enqueued in part leaves the ranks' counts apart: release them now rather than
  // let the peers wait for the timeout.
  if (!st.isOk()) release(st.withContext("device windows: enqueueing a call failed: "));
  return st;
}

Status DeviceWindows::runOne(const OpRequest& op, void* stream) {
  algo::Algorithm alg = algo::Algorithm::kRing;
  BRAID_ASSIGN_OR_RETURN(bool lowered, lowers(op, &alg));
  if (lowered) return runSchedule(op, alg, stream);
  switch (op.collective) {
    case Collective::kAllReduce:
      return allReduce(op, stream);
    case Collective::kReduceScatter:
      return reduceScatter(op, stream);
    case Collective::kAllGather:
      return allGather(op, stream);
    case Collective::kBroadcast:
      return broadcast(op, stream);
    case Collective::kAllToAll:
      return allToAll(op, stream);
    case Collective::kReduce:
      return reduce(op, stream);
    case Collective::kGather:
      return gather(op, stream);
    case Collective::kScatter:
      return scatter(op, stream);
    default:
      return Status(braidInternalError, "device windows: unsupported collective");
  }
}

// Round i of every send, then of every receive, for i = 0, 1, ...: a send's round waits
// only for its slot, which the receiver empties in its own round i - 2, so no pattern
// deadlocks; rounds to one peer are numbered in the order both sides list them.
Status DeviceWindows::pointToPoint(const std::vector<const OpRequest*>& ops, void* stream) {
  size_t most = 0;
  for (const OpRequest* op : ops) {
    const size_t bytes = op->count * datatypeSize(op->datatype);
    most = std::max(most, (bytes + slotBytes_ - 1) / slotBytes_);
  }
  for (size_t i = 0; i < most; ++i) {
    for (OpRequest::Kind kind : {OpRequest::Kind::kSend, OpRequest::Kind::kRecv}) {
      for (const OpRequest* op : ops) {
        if (op->kind == kind) BRAID_TRY(pairRound(*op, i, stream));
      }
    }
  }
  return Status::ok();
}

// Round `round` of a send or a receive (nothing past the message's end). Rank s's rounds
// to rank r are numbered k = 1, 2, ... alike on both sides and go through slot k % 2.
Status DeviceWindows::pairRound(const OpRequest& op, size_t round, void* stream) {
  const size_t bytes = op.count * datatypeSize(op.datatype), at = round * slotBytes_;
  if (at >= bytes) return Status::ok();
  const size_t n = std::min(slotBytes_, bytes - at);
  const bool sends = op.kind == OpRequest::Kind::kSend;
  const int from = sends ? rank_ : op.peer, to = sends ? op.peer : rank_;
  std::atomic<uint64_t>& count = sends ? sent_[op.peer] : received_[op.peer];
  const uint64_t k = count.load(std::memory_order_relaxed) + 1;
  if (sends) {  // the slot is free once the receiver consumed round k - 2
    if (k > 2) BRAID_TRY(cuda::streamWaitValue64(stream, device(consumed(from, to)), k - 2));
    BRAID_TRY(
        cuda::copyAsync(slot(from, to, k % 2), static_cast<const char*>(op.send) + at, n, stream));
    BRAID_TRY(cuda::streamWriteValue64(stream, device(posted(from, to)), k));
  } else {
    BRAID_TRY(cuda::streamWaitValue64(stream, device(posted(from, to)), k));
    BRAID_TRY(cuda::copyAsync(static_cast<char*>(op.recv) + at, slot(from, to, k % 2), n, stream));
    BRAID_TRY(cuda::streamWriteValue64(stream, device(consumed(from, to)), k));
  }
  count.store(k, std::memory_order_relaxed);
  if (k % 64 == 1) watchCv_.notify_one();
  return Status::ok();
}

Status DeviceWindows::allReduce(const OpRequest& op, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = halfBytes_ / es;
  // Ranks sharing one GPU take turns on it (each process is its own context), so every
  // round trip costs a context switch there: one-shot, with its one barrier less, wins
  // (measured on an H100: docs/architecture.md). Across GPUs two-shot spreads the reads.
  const bool twoShot =
      nranks_ >= 3 && op.count * es >= twoShotBytes_ && (!oneDevice_ || twoShotForced_);
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  void* scratch = nullptr;
  if (!twoShot) {
    BRAID_ASSIGN_OR_RETURN(scratch, scratchFor(recv, std::min(chunk, op.count) * es));
  }
  std::vector<const void*> srcs(static_cast<size_t>(nranks_));
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    BRAID_TRY(cuda::copyAsync(half(rank_), send + off * es, n * es, stream));
    BRAID_TRY(barrier(stream));
    if (!twoShot) {
      for (int q = 0; q < nranks_; ++q) srcs[static_cast<size_t>(q)] = half(q);
      BRAID_TRY(reduceTo(recv + off * es, scratch, srcs, n, op, stream));
      continue;
    }
    const size_t lo = sliceStart(n, rank_, nranks_), hi = sliceStart(n, rank_ + 1, nranks_);
    for (int q = 0; q < nranks_; ++q) srcs[static_cast<size_t>(q)] = half(q) + lo * es;
    if (hi > lo) {
      BRAID_TRY(cuda::launchReduce(half(rank_) + lo * es, srcs.data(), nranks_, hi - lo,
                                   op.datatype, op.op, nranks_, stream));
    }
    BRAID_TRY(barrier(stream));
    for (int q = 0; q < nranks_; ++q) {
      const size_t qlo = sliceStart(n, q, nranks_), qhi = sliceStart(n, q + 1, nranks_);
      BRAID_TRY(
          cuda::copyAsync(recv + (off + qlo) * es, half(q) + qlo * es, (qhi - qlo) * es, stream));
    }
  }
  return Status::ok();
}

// Elements [off, off + n) of each of the nranks blocks of op's input into `to`, block q
// at q * chunk elements (reduce-scatter and all-to-all).
Status DeviceWindows::copyBlocksIn(const OpRequest& op, char* to, size_t off, size_t n,
                                   size_t chunk, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const char* send = static_cast<const char*>(op.send);
  for (int q = 0; q < nranks_; ++q) {
    BRAID_TRY(cuda::copyAsync(to + static_cast<size_t>(q) * chunk * es,
                              send + (static_cast<size_t>(q) * op.count + off) * es, n * es,
                              stream));
  }
  return Status::ok();
}

Status DeviceWindows::reduceScatter(const OpRequest& op, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = halfBytes_ / (es * static_cast<size_t>(nranks_));  // per block, per round
  char* recv = static_cast<char*>(op.recv);
  BRAID_ASSIGN_OR_RETURN(void* scratch, scratchFor(recv, std::min(chunk, op.count) * es));
  std::vector<const void*> srcs(static_cast<size_t>(nranks_));
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    BRAID_TRY(copyBlocksIn(op, half(rank_), off, n, chunk, stream));
    BRAID_TRY(barrier(stream));
    for (int q = 0; q < nranks_; ++q) {
      srcs[static_cast<size_t>(q)] = half(q) + static_cast<size_t>(rank_) * chunk * es;
    }
    BRAID_TRY(reduceTo(recv + off * es, scratch, srcs, n, op, stream));
  }
  return Status::ok();
}

Status DeviceWindows::allGather(const OpRequest& op, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = halfBytes_ / es;
  const size_t block = op.count * es;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  const bool inPlace = send == recv + static_cast<size_t>(rank_) * block;
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    BRAID_TRY(cuda::copyAsync(half(rank_), send + off * es, n * es, stream));
    BRAID_TRY(barrier(stream));
    for (int q = 0; q < nranks_; ++q) {
      char* dst = recv + static_cast<size_t>(q) * block + off * es;
      if (q == rank_) {
        if (!inPlace) BRAID_TRY(cuda::copyAsync(dst, send + off * es, n * es, stream));
      } else {
        BRAID_TRY(cuda::copyAsync(dst, half(q), n * es, stream));
      }
    }
  }
  return Status::ok();
}

Status DeviceWindows::broadcast(const OpRequest& op, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = halfBytes_ / es;
  const bool root = rank_ == op.root;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    if (root) BRAID_TRY(cuda::copyAsync(half(rank_), send + off * es, n * es, stream));
    BRAID_TRY(barrier(stream));
    if (!root) {
      BRAID_TRY(cuda::copyAsync(recv + off * es, half(op.root), n * es, stream));
    } else if (send != recv) {
      BRAID_TRY(cuda::copyAsync(recv + off * es, send + off * es, n * es, stream));
    }
  }
  return Status::ok();
}

Status DeviceWindows::allToAll(const OpRequest& op, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = halfBytes_ / (es * static_cast<size_t>(nranks_));
  char* recv = static_cast<char*>(op.recv);
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    BRAID_TRY(copyBlocksIn(op, half(rank_), off, n, chunk, stream));
    BRAID_TRY(barrier(stream));
    for (int q = 0; q < nranks_; ++q) {
      BRAID_TRY(cuda::copyAsync(recv + (static_cast<size_t>(q) * op.count + off) * es,
                                half(q) + static_cast<size_t>(rank_) * chunk * es, n * es, stream));
    }
  }
  return Status::ok();
}

// Every rank's input into its half; the root alone reduces them all.
Status DeviceWindows::reduce(const OpRequest& op, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = halfBytes_ / es;
  const bool root = rank_ == op.root;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  void* scratch = nullptr;
  if (root) {
    BRAID_ASSIGN_OR_RETURN(scratch, scratchFor(recv, std::min(chunk, op.count) * es));
  }
  std::vector<const void*> srcs(static_cast<size_t>(nranks_));
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    BRAID_TRY(cuda::copyAsync(half(rank_), send + off * es, n * es, stream));
    BRAID_TRY(barrier(stream));
    if (!root) continue;
    for (int q = 0; q < nranks_; ++q) srcs[static_cast<size_t>(q)] = half(q);
    BRAID_TRY(reduceTo(recv + off * es, scratch, srcs, n, op, stream));
  }
  return Status::ok();
}

// Every rank's block into its half; the root copies them all out.
Status DeviceWindows::gather(const OpRequest& op, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = halfBytes_ / es;
  const size_t block = op.count * es;
  const bool root = rank_ == op.root;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    if (!root) BRAID_TRY(cuda::copyAsync(half(rank_), send + off * es, n * es, stream));
    BRAID_TRY(barrier(stream));
    if (!root) continue;
    for (int q = 0; q < nranks_; ++q) {
      char* dst = recv + static_cast<size_t>(q) * block + off * es;
      const char* src = q == rank_ ? send + off * es : half(q);
      if (dst != src) BRAID_TRY(cuda::copyAsync(dst, src, n * es, stream));
    }
  }
  return Status::ok();
}

// The root's blocks into its half, block q at q * chunk; every rank copies its own out.
Status DeviceWindows::scatter(const OpRequest& op, void* stream) {
  const size_t es = datatypeSize(op.datatype);
  const size_t chunk = halfBytes_ / (es * static_cast<size_t>(nranks_));
  const bool root = rank_ == op.root;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    if (root) BRAID_TRY(copyBlocksIn(op, half(rank_), off, n, chunk, stream));
    BRAID_TRY(barrier(stream));
    const char* src = root ? send + (static_cast<size_t>(rank_) * op.count + off) * es
                           : half(op.root) + static_cast<size_t>(rank_) * chunk * es;
    if (recv + off * es != src) BRAID_TRY(cuda::copyAsync(recv + off * es, src, n * es, stream));
  }
  return Status::ok();
}

}  // namespace braid
