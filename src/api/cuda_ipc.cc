#include "api/cuda_ipc.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "api/handle.h"
#include "core/clock.h"
#include "core/env.h"
#include "core/logging.h"
#include "core/transport.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/reduce.h"
#include "transports/shm/shm_transport.h"

namespace braid {
namespace {

using algo::Collective;

// The counters' page: the barrier counters (128 bytes apart), then the send/receive
// counters posted[s][r] and consumed[s][r] (8 bytes each).
constexpr size_t kFlagsBytes = 4096;
constexpr size_t kPostedAt = 1024;
constexpr size_t kConsumedAt = kPostedAt + 8 * 8 * 8;
constexpr size_t kNameBytes = 64;
// A counter at or past this was released by a watch thread (every wait passes).
constexpr uint64_t kReleased = uint64_t{1} << 62;

// What each rank tells the others at set-up (all-gathered as bytes).
struct SetupRecord {
  int32_t ok;      // 1: this rank's window exists
  int32_t device;  // the CUDA device it lives on (this process's numbering)
  cuda::DeviceUuid uuid;
  cuda::IpcHandle handle;
  char flagsName[kNameBytes];  // rank 0: the counters' region
};

// Elements [lo, hi) of `count` that rank q of n handles in a two-shot round.
size_t sliceStart(size_t count, int q, int n) {
  return count * static_cast<size_t>(q) / static_cast<size_t>(n);
}

bool isDevice(const void* p) { return cuda::memoryKind(p) == cuda::MemoryKind::kDevice; }

}  // namespace

struct alignas(128) DeviceWindows::Counter {
  std::atomic<uint64_t> value{0};
};
static_assert(sizeof(std::atomic<uint64_t>) == 8, "counters are written by the GPU as 8 bytes");

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
      return true;
    default:
      return false;
  }
}

std::atomic<uint64_t>& DeviceWindows::posted(int s, int r) const {
  auto* base =
      reinterpret_cast<std::atomic<uint64_t>*>(reinterpret_cast<char*>(counters_) + kPostedAt);
  return base[s * 8 + r];
}

std::atomic<uint64_t>& DeviceWindows::consumed(int s, int r) const {
  auto* base =
      reinterpret_cast<std::atomic<uint64_t>*>(reinterpret_cast<char*>(counters_) + kConsumedAt);
  return base[s * 8 + r];
}

char* DeviceWindows::device(const std::atomic<uint64_t>& counter) const {
  return countersDevice_ +
         (reinterpret_cast<const char*>(&counter) - reinterpret_cast<const char*>(counters_));
}

std::unique_ptr<DeviceWindows> DeviceWindows::create(braidComm* comm) {
  Comm& c = *comm->comm;
  auto refuse = [](const std::string& why) {
    BRAID_INFO("device windows (CUDA IPC) off: %s; device buffers are staged through host memory",
               why.c_str());
    return std::unique_ptr<DeviceWindows>();
  };
  if (envInt("BRAID_CUDA_IPC", 1) == 0) return refuse("BRAID_CUDA_IPC=0");
  if (c.nodes() != 1) return refuse("the ranks span " + std::to_string(c.nodes()) + " nodes");
  if (c.nranks() > cuda::kMaxReduceInputs) {
    return refuse(std::to_string(c.nranks()) + " ranks (at most " +
                  std::to_string(cuda::kMaxReduceInputs) + ")");
  }
  const int64_t bytes = envInt("BRAID_CUDA_WINDOW_BYTES", 128 << 20);
  if (bytes < 8192) return refuse("BRAID_CUDA_WINDOW_BYTES is below 8192");

  std::unique_ptr<DeviceWindows> w(new DeviceWindows());
  w->comm_ = &c;
  w->rank_ = c.rank();
  w->nranks_ = c.nranks();
  w->halfBytes_ = static_cast<size_t>(bytes) / 2 / 256 * 256;
  w->twoShotBytes_ = static_cast<size_t>(envInt("BRAID_CUDA_TWO_SHOT_BYTES", 1 << 20));
  w->twoShotForced_ = std::getenv("BRAID_CUDA_TWO_SHOT_BYTES") != nullptr;
  const int64_t slot = envInt("BRAID_CUDA_P2P_SLOT_BYTES", 4 << 20);
  if (slot < 4096) return refuse("BRAID_CUDA_P2P_SLOT_BYTES is below 4096");
  w->slotBytes_ = static_cast<size_t>(slot) / 256 * 256;
  w->sent_.reset(new std::atomic<uint64_t>[static_cast<size_t>(w->nranks_)]());
  w->received_.reset(new std::atomic<uint64_t>[static_cast<size_t>(w->nranks_)]());
  w->windows_.assign(static_cast<size_t>(w->nranks_), nullptr);
  w->shm_ = transport::shm::makeShmTransport();

  // This rank's window and its handle (rank 0: also the counters' region); a failure is
  // told to the others, not returned.
  SetupRecord mine{};
  std::string why;
  Expected<int> device = cuda::currentDevice();
  Expected<cuda::DeviceUuid> uuid = device.isOk() ? cuda::deviceUuid(device.value())
                                                  : Expected<cuda::DeviceUuid>(device.status());
  Expected<void*> mem = uuid.isOk()
                            ? cuda::deviceAlloc(2 * w->halfBytes_ +
                                                static_cast<size_t>(w->nranks_) * 2 * w->slotBytes_)
                            : uuid.status();
  if (mem.isOk()) {
    w->own_ = mem.value();
    Expected<cuda::IpcHandle> h = cuda::ipcHandle(w->own_);
    if (h.isOk()) {
      mine.ok = 1;
      mine.device = device.value();
      mine.uuid = uuid.value();
      mine.handle = h.value();
    } else {
      why = h.status().message();
    }
  } else {
    why = mem.status().message();
  }
  if (w->rank_ == 0 && why.empty()) {
    Expected<std::unique_ptr<SharedRegion>> r = w->shm_->createRegion(kFlagsBytes);
    if (r.isOk() && r.value()->name().size() < kNameBytes) {
      w->flags_ = std::move(r).value();
      std::memcpy(mine.flagsName, w->flags_->name().data(), w->flags_->name().size());
    } else {
      why = r.isOk() ? "the counters' region name is too long" : r.status().message();
    }
  }
  std::vector<SetupRecord> all(static_cast<size_t>(w->nranks_));
  OpRequest gather;
  gather.collective = Collective::kAllGather;
  gather.send = &mine;
  gather.recv = all.data();
  gather.count = sizeof(SetupRecord);
  gather.datatype = braidUint8;
  Status st = runOpsLocked(comm, &gather, 1);
  if (!st.isOk()) return refuse("exchanging window handles failed: " + st.message());

  // Map every peer's window (CUDA refuses where the devices have no peer access).
  w->oneDevice_ = true;
  for (int q = 0; q < w->nranks_ && why.empty(); ++q) {
    const SetupRecord& r = all[static_cast<size_t>(q)];
    if (r.ok == 1 && std::memcmp(r.uuid.bytes, mine.uuid.bytes, sizeof(mine.uuid.bytes)) != 0) {
      w->oneDevice_ = false;
    }
    if (q == w->rank_) {
      w->windows_[static_cast<size_t>(q)] = static_cast<char*>(w->own_);
    } else if (r.ok != 1) {
      why = "rank " + std::to_string(q) + " has no window";
    } else {
      Expected<void*> p = cuda::ipcOpen(r.handle);
      if (p.isOk()) {
        w->windows_[static_cast<size_t>(q)] = static_cast<char*>(p.value());
      } else {
        why = "mapping rank " + std::to_string(q) + "'s window: " + p.status().message();
      }
    }
  }
  // The counters: rank 0's region, mapped by all, page-locked for the devices; then one
  // barrier's stream operations on a stream of our own, to learn the driver runs them.
  if (why.empty() && w->rank_ != 0) {
    const char* name = all[0].flagsName;
    Expected<std::unique_ptr<SharedRegion>> r =
        w->shm_->openRegion(std::string(name, strnlen(name, kNameBytes)), kFlagsBytes);
    if (r.isOk()) {
      w->flags_ = std::move(r).value();
    } else {
      why = "mapping the barrier counters: " + r.status().message();
    }
  }
  if (why.empty()) {
    w->counters_ = static_cast<Counter*>(w->flags_->base());
    Expected<void*> dev = cuda::hostRegister(w->flags_->base(), kFlagsBytes);
    if (dev.isOk()) {
      w->countersDevice_ = static_cast<char*>(dev.value());
      Expected<void*> s = cuda::streamCreate();
      Status probe = s.isOk() ? Status::ok() : s.status();
      char* myCounter = w->countersDevice_ + static_cast<size_t>(w->rank_) * sizeof(Counter);
      if (probe.isOk()) probe = cuda::streamWriteValue64(s.value(), myCounter, 0);
      if (probe.isOk()) probe = cuda::streamWaitValue64(s.value(), myCounter, 0);
      if (probe.isOk()) probe = cuda::streamSynchronize(s.value());
      if (s.isOk()) (void)cuda::streamDestroy(s.value());
      if (!probe.isOk()) why = "stream memory operations: " + probe.message();
    } else {
      w->counters_ = nullptr;
      why = "page-locking the barrier counters: " + dev.status().message();
    }
  }
  if (why.empty()) {
    Expected<void*> e = cuda::eventCreate();
    if (e.isOk()) {
      w->lastEvent_ = e.value();
    } else {
      why = e.status().message();
    }
  }
  // Every rank uses the windows, or none does.
  uint8_t ok = why.empty() ? 1 : 0;
  OpRequest agree;
  agree.send = &ok;
  agree.recv = &ok;
  agree.count = 1;
  agree.datatype = braidUint8;
  agree.op = braidMin;
  st = runOpsLocked(comm, &agree, 1);
  if (w->flags_ != nullptr) w->flags_->unlinkName();  // every rank has it mapped, or gave up
  if (!st.isOk() || ok == 0) {
    // Nothing ran: let go of the peers' windows, and (while the communicator works) wait
    // until every rank has, before the destructor frees this rank's.
    for (int q = 0; q < w->nranks_; ++q) {
      char*& p = w->windows_[static_cast<size_t>(q)];
      if (p != nullptr && q != w->rank_) (void)cuda::ipcClose(p);
      p = nullptr;
    }
    if (st.isOk()) {
      uint8_t done = 1;
      agree.send = &done;
      agree.recv = &done;
      (void)runOpsLocked(comm, &agree, 1);
    }
    w->released_ = true;
    return refuse(!why.empty() ? why : !st.isOk() ? st.message() : "a peer could not map them");
  }
  w->watcher_ = std::thread([raw = w.get()] { raw->watch(); });
  BRAID_INFO(
      "device windows (CUDA IPC): %zu bytes per rank on device %d, %d ranks%s; "
      "barriers on the GPU",
      2 * w->halfBytes_, mine.device, w->nranks_, w->oneDevice_ ? ", all on this one GPU" : "");
  return w;
}

DeviceWindows::~DeviceWindows() {
  const bool started = watcher_.joinable();
  if (started && (comm_->aborted() || comm_->failed())) {
    release(comm_->failed() ? comm_->asyncError() : Status(braidInvalidUsage, "aborted"));
  }
  Status st = started ? flush() : Status::ok();
  if (started) {
    {
      std::lock_guard<std::mutex> lock(watchMu_);
      stopping_ = true;
    }
    watchCv_.notify_all();
    watcher_.join();
  }
  for (int q = 0; q < nranks_; ++q) {
    char* p = windows_.empty() ? nullptr : windows_[static_cast<size_t>(q)];
    if (p != nullptr && q != rank_) (void)cuda::ipcClose(p);
  }
  // Every rank has let go of every window before any is freed (freeing memory a peer
  // still maps is undefined in CUDA IPC): one more barrier, on the host.
  bool clean = started && st.isOk() && !released();
  if (clean) {
    const uint64_t e = epoch_.load() + 1;
    counters_[rank_].value.store(e, std::memory_order_release);
    Deadline deadline = comm_->deadline();
    for (int q = 0; q < nranks_ && clean; ++q) {
      while (counters_[q].value.load(std::memory_order_acquire) < e) {
        if (deadline.expired() || deadline.cancelled() || comm_->failed()) {
          clean = false;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
  }
  if (own_ != nullptr) {
    if (clean || !started) {
      (void)cuda::deviceFree(own_);
    } else {
      BRAID_INFO("device windows: leaving this rank's window allocated (a peer may still map it)");
    }
  }
  if (scratch_ != nullptr) (void)cuda::deviceFree(scratch_);
  if (lastEvent_ != nullptr) (void)cuda::eventDestroy(lastEvent_);
  if (countersDevice_ != nullptr) (void)cuda::hostUnregister(flags_->base());
}

// Releases every rank's barriers for good and raises the communicator's error (any
// thread; idempotent).
void DeviceWindows::release(const Status& why) {
  if (released_.exchange(true)) return;
  for (int q = 0; q < nranks_; ++q) {
    counters_[q].value.store(kReleased, std::memory_order_release);
    for (int r = 0; r < nranks_; ++r) {
      posted(q, r).store(kReleased, std::memory_order_release);
      consumed(q, r).store(kReleased, std::memory_order_release);
    }
  }
  comm_->raiseAsyncError(why);
  BRAID_WARN("%s", why.message().c_str());
}

void DeviceWindows::watch() {
  std::vector<uint64_t> seen(static_cast<size_t>(nranks_), 0);
  std::vector<uint64_t> seenPairs(static_cast<size_t>(nranks_) * 4, 0);
  uint64_t changedAt = nowNs(), pairsChangedAt = changedAt;
  const uint64_t timeoutNs = static_cast<uint64_t>(comm_->config().timeoutMs) * 1000000ull;
  std::unique_lock<std::mutex> lock(watchMu_);
  while (!stopping_) {
    if (released_.load()) {
      watchCv_.wait(lock);
      continue;
    }
    bool changed = false, pending = false, behind = false, peerReleased = false;
    const uint64_t mine = counters_[rank_].value.load(std::memory_order_acquire);
    pending = mine < epoch_.load(std::memory_order_relaxed);
    std::string lagging;
    for (int q = 0; q < nranks_; ++q) {
      const uint64_t v = counters_[q].value.load(std::memory_order_acquire);
      if (v >= kReleased) peerReleased = true;
      changed = changed || v != seen[static_cast<size_t>(q)];
      seen[static_cast<size_t>(q)] = v;
      if (v < mine) {
        behind = pending = true;
        lagging += (lagging.empty() ? "" : ", ") + std::to_string(q);
      }
    }
    // Sends and receives: a receive waits for a post that has not come, or a send for its
    // slot, which the receiver has not emptied.
    bool pairsChanged = false;
    std::string silent;
    for (int q = 0; q < nranks_; ++q) {
      if (q == rank_) continue;
      const uint64_t in = posted(q, rank_).load(std::memory_order_acquire);
      const uint64_t done = consumed(q, rank_).load(std::memory_order_acquire);
      const uint64_t out = posted(rank_, q).load(std::memory_order_acquire);
      const uint64_t taken = consumed(rank_, q).load(std::memory_order_acquire);
      const uint64_t values[4] = {in, done, out, taken};
      for (int i = 0; i < 4; ++i) {
        uint64_t& was = seenPairs[static_cast<size_t>(q) * 4 + static_cast<size_t>(i)];
        pairsChanged = pairsChanged || was != values[i];
        was = values[i];
      }
      const bool recvPending = received_[q].load(std::memory_order_relaxed) > done;
      const bool sendPending = sent_[q].load(std::memory_order_relaxed) > out;
      pending = pending || recvPending || sendPending;
      if ((recvPending && in <= done) || (sendPending && taken + 1 < out)) {
        silent += (silent.empty() ? "" : ", ") + std::to_string(q);
      }
    }
    const uint64_t now = nowNs();
    if (changed) changedAt = now;
    if (pairsChanged) pairsChangedAt = now;
    if (peerReleased) {
      (void)released();
    } else if (comm_->failed() || comm_->aborted()) {
      release(comm_->failed()
                  ? comm_->asyncError().withContext("device windows: ")
                  : Status(braidInvalidUsage, "device windows: the communicator was aborted"));
    } else if (behind && now - changedAt > timeoutNs) {
      release(Status(braidTimeout,
                     "device windows: rank(s) " + lagging + " did not reach GPU barrier #" +
                         std::to_string(mine) + " within " +
                         std::to_string(comm_->config().timeoutMs) +
                         " ms of this rank; every rank's barriers are released and results "
                         "since are undefined"));
    } else if (!silent.empty() && now - pairsChangedAt > timeoutNs) {
      release(Status(braidTimeout, "device windows: rank(s) " + silent +
                                       " did not send or receive what this rank waits for "
                                       "within " +
                                       std::to_string(comm_->config().timeoutMs) +
                                       " ms; every rank's waits are released and results "
                                       "since are undefined"));
    }
    if (pending) {
      watchCv_.wait_for(lock, std::chrono::milliseconds(2));
    } else {
      watchCv_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
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
    char* counter = countersDevice_ + static_cast<size_t>(q) * sizeof(Counter);
    BRAID_TRY(q == rank_ ? cuda::streamWriteValue64(stream, counter, e)
                         : cuda::streamWaitValue64(stream, counter, e));
  }
  if (e % 64 == 1) watchCv_.notify_one();  // wakes an idle watch within a few calls
  return Status::ok();
}

Status DeviceWindows::flush() {
  if (!anyCall_) return Status::ok();
  return cuda::eventSynchronize(lastEvent_);
}

// Null where kernels may write `recv`; else a device buffer of at least `bytes` (one
// round's output) that the caller copies from. Growing it frees the old one, which waits
// for the device (rare: a round is at most a half).
void* DeviceWindows::scratchFor(const void* recv, size_t bytes, Status* st) {
  if (isDevice(recv)) return nullptr;
  if (scratchBytes_ < bytes) {
    if (scratch_ != nullptr) (void)cuda::deviceFree(scratch_);
    scratch_ = nullptr;
    scratchBytes_ = 0;
    // At least 1 MiB (a barrier's one byte should not cost a half's worth), at most a half.
    const size_t want = std::min(halfBytes_, std::max(bytes, size_t{1} << 20));
    Expected<void*> m = cuda::deviceAlloc(want);
    if (!m.isOk()) {
      *st = m.status();
      return nullptr;
    }
    scratch_ = m.value();
    scratchBytes_ = want;
  }
  return scratch_;
}

bool DeviceWindows::released() {
  if (released_.load()) return true;
  for (int q = 0; q < nranks_; ++q) {
    if (counters_[q].value.load(std::memory_order_acquire) < kReleased) continue;
    if (!released_.exchange(true)) {
      comm_->raiseAsyncError(Status(braidRemoteError,
                                    "device windows: another rank released the GPU barriers "
                                    "(a peer failed or timed out); results since are undefined"));
    }
    return true;
  }
  return false;
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
    } else if (op.count != 0) {
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
  Status st;
  {
    switch (op.collective) {
      case Collective::kAllReduce:
        st = allReduce(op, stream);
        break;
      case Collective::kReduceScatter:
        st = reduceScatter(op, stream);
        break;
      case Collective::kAllGather:
        st = allGather(op, stream);
        break;
      case Collective::kBroadcast:
        st = broadcast(op, stream);
        break;
      case Collective::kAllToAll:
        st = allToAll(op, stream);
        break;
      case Collective::kReduce:
        st = reduce(op, stream);
        break;
      case Collective::kGather:
        st = gather(op, stream);
        break;
      case Collective::kScatter:
        st = scatter(op, stream);
        break;
      default:
        st = Status(braidInternalError, "device windows: unsupported collective");
    }
  }
  return st;
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
    for (const OpRequest* op : ops) {
      if (op->kind == OpRequest::Kind::kSend) BRAID_TRY(sendRound(*op, i, stream));
    }
    for (const OpRequest* op : ops) {
      if (op->kind == OpRequest::Kind::kRecv) BRAID_TRY(recvRound(*op, i, stream));
    }
  }
  return Status::ok();
}

Status DeviceWindows::sendRound(const OpRequest& op, size_t round, void* stream) {
  const size_t bytes = op.count * datatypeSize(op.datatype);
  if (round * slotBytes_ >= bytes) return Status::ok();
  const size_t n = std::min(slotBytes_, bytes - round * slotBytes_);
  const int r = op.peer;
  const uint64_t k = sent_[r].load(std::memory_order_relaxed) + 1;
  if (k > 2) BRAID_TRY(cuda::streamWaitValue64(stream, device(consumed(rank_, r)), k - 2));
  BRAID_TRY(cuda::copyAsync(slot(rank_, r, k % 2),
                            static_cast<const char*>(op.send) + round * slotBytes_, n, stream));
  BRAID_TRY(cuda::streamWriteValue64(stream, device(posted(rank_, r)), k));
  sent_[r].store(k, std::memory_order_relaxed);
  if (k % 64 == 1) watchCv_.notify_one();
  return Status::ok();
}

Status DeviceWindows::recvRound(const OpRequest& op, size_t round, void* stream) {
  const size_t bytes = op.count * datatypeSize(op.datatype);
  if (round * slotBytes_ >= bytes) return Status::ok();
  const size_t n = std::min(slotBytes_, bytes - round * slotBytes_);
  const int s = op.peer;
  const uint64_t k = received_[s].load(std::memory_order_relaxed) + 1;
  BRAID_TRY(cuda::streamWaitValue64(stream, device(posted(s, rank_)), k));
  BRAID_TRY(cuda::copyAsync(static_cast<char*>(op.recv) + round * slotBytes_, slot(s, rank_, k % 2),
                            n, stream));
  BRAID_TRY(cuda::streamWriteValue64(stream, device(consumed(s, rank_)), k));
  received_[s].store(k, std::memory_order_relaxed);
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
  Status st;
  void* scratch = twoShot ? nullptr : scratchFor(recv, std::min(chunk, op.count) * es, &st);
  BRAID_TRY(st);
  std::vector<const void*> srcs(static_cast<size_t>(nranks_));
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    BRAID_TRY(cuda::copyAsync(half(rank_), send + off * es, n * es, stream));
    BRAID_TRY(barrier(stream));
    if (!twoShot) {
      for (int q = 0; q < nranks_; ++q) srcs[static_cast<size_t>(q)] = half(q);
      void* dst = scratch != nullptr ? scratch : recv + off * es;
      BRAID_TRY(
          cuda::launchReduce(dst, srcs.data(), nranks_, n, op.datatype, op.op, nranks_, stream));
      if (scratch != nullptr) BRAID_TRY(cuda::copyAsync(recv + off * es, scratch, n * es, stream));
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
  Status st;
  void* scratch = scratchFor(recv, std::min(chunk, op.count) * es, &st);
  BRAID_TRY(st);
  std::vector<const void*> srcs(static_cast<size_t>(nranks_));
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    BRAID_TRY(copyBlocksIn(op, half(rank_), off, n, chunk, stream));
    BRAID_TRY(barrier(stream));
    for (int q = 0; q < nranks_; ++q) {
      srcs[static_cast<size_t>(q)] = half(q) + static_cast<size_t>(rank_) * chunk * es;
    }
    void* dst = scratch != nullptr ? scratch : recv + off * es;
    BRAID_TRY(
        cuda::launchReduce(dst, srcs.data(), nranks_, n, op.datatype, op.op, nranks_, stream));
    if (scratch != nullptr) BRAID_TRY(cuda::copyAsync(recv + off * es, scratch, n * es, stream));
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
  Status st;
  void* scratch = root ? scratchFor(recv, std::min(chunk, op.count) * es, &st) : nullptr;
  BRAID_TRY(st);
  std::vector<const void*> srcs(static_cast<size_t>(nranks_));
  for (size_t off = 0; off < op.count; off += chunk) {
    const size_t n = std::min(chunk, op.count - off);
    ++round_;
    BRAID_TRY(cuda::copyAsync(half(rank_), send + off * es, n * es, stream));
    BRAID_TRY(barrier(stream));
    if (!root) continue;
    for (int q = 0; q < nranks_; ++q) srcs[static_cast<size_t>(q)] = half(q);
    void* dst = scratch != nullptr ? scratch : recv + off * es;
    BRAID_TRY(
        cuda::launchReduce(dst, srcs.data(), nranks_, n, op.datatype, op.op, nranks_, stream));
    if (scratch != nullptr) BRAID_TRY(cuda::copyAsync(recv + off * es, scratch, n * es, stream));
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
