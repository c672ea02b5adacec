#include "runtime/device/staged_proxy.h"

#include <atomic>
#include <chrono>
#include <cstring>

#include "core/comm.h"
#include "core/env.h"
#include "core/futex.h"
#include "core/logging.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "exec/cuda/device_call.h"
#include "exec/reduce.h"
#include "runtime/communicator.h"
#include "runtime/device/device_order.h"
#include "runtime/device/thread_peers.h"
#include "runtime/host_calls.h"
#include "runtime/last_error.h"
#include "runtime/premul.h"

namespace braid {
namespace {

std::atomic<uint64_t>* word(uint64_t* w) { return reinterpret_cast<std::atomic<uint64_t>*>(w); }

}  // namespace

Expected<std::unique_ptr<StagedProxy>> StagedProxy::create(braidComm* comm,
                                                           std::shared_ptr<DeviceOrder> order) {
  std::unique_ptr<StagedProxy> p(new StagedProxy(comm));
  p->order_ = std::move(order);
  p->kernelWaits_ = envString("BRAID_CUDA_WAITS") == "kernel";
  BRAID_ASSIGN_OR_RETURN(void* words, cuda::pinnedAlloc(sizeof(Words)));
  p->words_ = static_cast<Words*>(words);
  std::memset(p->words_, 0, sizeof(Words));
  // The thread on the communicator's device: the pinned buffers it lets go are freed there
  // (releaseLater), where a thread's own default, device 0, would get a context of its own.
  p->thread_ = std::thread([raw = p.get(), device = comm->cudaDevice] {
    if (device >= 0) (void)cuda::setCurrentDevice(device);
    raw->loop();
  });
  return p;
}

StagedProxy::~StagedProxy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  // After an abort or a failure a stream may be held anywhere (a gate, a dead peer's
  // data): go at once. Otherwise give the streams the timeout to copy their results out.
  const bool broken = comm_->comm->aborted() || comm_->comm->failed();
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(broken ? 0 : comm_->comm->config().timeoutMs);
  std::unique_lock<std::mutex> lock(mu_);
  for (reclaimLocked(); !returning_.empty(); reclaimLocked()) {
    if (std::chrono::steady_clock::now() > until) {
      if (!broken) {
        BRAID_WARN(
            "%zu staged device calls never copied their results back (is a stream stuck?); "
            "their pinned memory is left allocated",
            returning_.size());
      }
      // A stream may still write them: the pinned copies and the words stay.
      keepUntilExit(std::make_shared<std::deque<Ticket>>(std::move(returning_)));
      keepUntilExit(std::shared_ptr<void>(words_, [](void*) {}));
      return;
    }
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    lock.lock();
  }
  if (words_ == nullptr) return;
  if (broken) {
    // cudaFreeHost waits for the whole device, a stream the caller holds too (until after
    // the abort, say): an aborted or failed communicator keeps the page until exit.
    keepUntilExit(std::shared_ptr<void>(words_, [](void*) {}));
    return;
  }
  // On the reaper's thread: here it would wait for every stream of the device, another
  // rank's held one too.
  freePinnedLater(words_);
}

Status StagedProxy::issue(std::vector<Call> ops, void* stream) {
  const int rank = comm_->comm->rank(), nranks = comm_->comm->nranks();
  // What runOps would refuse at once is refused here, before anything is enqueued: a
  // communicator that failed (as the windows refuse calls once released), a bad group.
  BRAID_TRY(comm_->comm->asyncError());
  BRAID_TRY(pointToPointPlan(ops, rank).status());
  // A premul-sum's scalar in device memory is staged with the buffers: the host
  // collective scales the staged input by it when it runs (runtime/host_calls.cc placeScale).
  std::vector<StagedRegion> regions;
  for (const Call& op : ops) {
    for (const StagedRegion& r : regionsOf(op, rank, nranks)) regions.push_back(r);
    if (op.preMul.on && op.preMul.scalarPtr != nullptr) {
      regions.push_back({op.preMul.scalarPtr, datatypeSize(op.datatype), false});
    }
  }
  // Where this thread is, for a thread peer's timeout message (runtime/device/thread_peers.h).
  ThreadPeers* threads = ThreadPeers::of(comm_);
  struct Whereabouts {
    ThreadPeers* t;
    void at(ThreadPeers::Where w) const {
      if (t != nullptr) t->at(w);
    }
    ~Whereabouts() { at(ThreadPeers::kOutside); }
  } whereabouts{threads};
  whereabouts.at(ThreadPeers::kStaging);
  std::unique_lock<std::mutex> lock(mu_);
  for (reclaimLocked(); queue_.size() + returning_.size() >= kSlots; reclaimLocked()) {
    cv_.wait_for(lock, std::chrono::microseconds(200));  // the oldest pair is in use
  }
  // After the communicator's last device call, whatever its stream: a call may read what
  // the one before wrote.
  BRAID_TRY(order_->after(stream));
  Ticket t;
  BRAID_ASSIGN_OR_RETURN(StagedBuffers stagedIn, StagedBuffers::stageIn(regions, stream));
  auto staged = std::make_shared<StagedBuffers>(std::move(stagedIn));
  t.staged = staged;
  t.number = ++issued_;
  const uint64_t number = t.number, slot = number % kSlots;
  for (Call& op : ops) {
    op.send = staged->hostOf(op.send);
    op.recv = staged->hostOf(op.recv);
    if (op.preMul.scalarPtr != nullptr) op.preMul.scalarPtr = staged->hostOf(op.preMul.scalarPtr);
  }
  Status st = checkHostScalars(ops);  // each device scalar has its staged copy now
  if (st.isOk()) st = cuda::streamWriteValue64(stream, &words_->ready[slot], number);
  // The proxy runs the ticket once its ready word lands, whatever this thread does next:
  // a peer's call must not wait for this thread (ranks that are threads of one process:
  // one held elsewhere, by an application's synchronous CUDA call say, would hold its
  // peers' point-to-point calls, and their streams, with it). A ticket whose ready write
  // failed goes too, its word written here, and runs nothing.
  const bool ready = st.isOk();
  std::vector<Call> mine;
  if (ready) {
    if (threads != nullptr) {
      threads->issued(ops);
      mine = ops;
    }
    t.ops = std::move(ops);
  } else {
    word(&words_->ready[slot])->store(number, std::memory_order_release);
  }
  queue_.push_back(std::move(t));
  comm_->inflight.fetch_add(1);
  cv_.notify_all();
  // Ranks that are threads of this process: the done wait only once each has issued its
  // part (runtime/device/thread_peers.h). The proxy thread may take the lock meanwhile.
  if (ready && threads != nullptr) {
    whereabouts.at(ThreadPeers::kAwaiting);
    lock.unlock();
    st = threads->awaitPeers(mine);
    lock.lock();
    whereabouts.at(ThreadPeers::kEnqueueing);
  }
  if (st.isOk()) {
    st = kernelWaits_ ? cuda::launchWait(&words_->done, number, stream)
                      : cuda::streamWaitValue64(stream, &words_->done, number);
  }
  if (st.isOk()) st = staged->copyBack(stream);
  if (st.isOk()) st = cuda::streamWriteValue64(stream, &words_->back[slot], number);
  if (st.isOk()) st = order_->mark(stream);
  if (st.isOk()) return st;
  // Enqueued in part, its number taken. What was enqueued may still run (the stream may
  // be held: no waiting for it here), so its pinned copies stay until exit. The peers'
  // host collective may lack this rank's part: the communicator fails (later calls are
  // refused, waiting tickets dropped; its pages are kept, ~StagedProxy).
  keepUntilExit(staged);
  word(&words_->back[slot])->store(number, std::memory_order_release);
  // Frees (another rank's proxy page, the pinned pool's) wait for the part enqueued.
  order_->holdReleasesFor(stream);
  comm_->comm->raiseAsyncError(st.withContext("a staged device call was enqueued in part: "));
  return st;
}

void StagedProxy::waitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty(); });
}

bool StagedProxy::waitReady(uint64_t number) {
  std::atomic<uint64_t>* ready = word(&words_->ready[number % kSlots]);
  for (int spin = 0;; ++spin) {
    const uint64_t v = ready->load(std::memory_order_acquire);
    if (v == number) return true;
    // Aborted, or failed (a call enqueued in part is queued before its stream may be
    // held for good): the ticket is dropped, so destroying the communicator never waits
    // for a stream.
    if (comm_->comm->aborted() || comm_->comm->failed()) return false;
    if (spin < 64) {
      std::this_thread::yield();
      continue;
    }
    // A GPU's stream write wakes nobody: sleep briefly and look again.
    futexWait(reinterpret_cast<std::atomic<uint32_t>*>(ready), static_cast<uint32_t>(v), 50);
  }
}

void StagedProxy::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;
    Ticket& t = queue_.front();  // stays put while issue() appends
    lock.unlock();
    Status st = Status::ok();
    // Aborted or failed before the stream got here: the call is dropped (the user asked for
    // it, or the error is reported already); its stream goes on when it can.
    if (waitReady(t.number) && !t.ops.empty()) st = runOps(comm_, t.ops);
    if (!st.isOk()) {
      comm_->comm->raiseAsyncError(st);
      finish(comm_, st);
    }
    word(&words_->done)->store(t.number, std::memory_order_release);
    futexWakeAll(reinterpret_cast<std::atomic<uint32_t>*>(&words_->done));
    lock.lock();
    returning_.push_back(std::move(queue_.front()));
    queue_.pop_front();
    reclaimLocked();
    comm_->inflight.fetch_sub(1);
    cv_.notify_all();
  }
}

void StagedProxy::reclaimLocked() {
  while (!returning_.empty()) {
    const Ticket& t = returning_.front();
    if (word(&words_->back[t.number % kSlots])->load(std::memory_order_acquire) != t.number) {
      return;  // tickets of other streams may have come back; they wait their turn
    }
    returning_.pop_front();
  }
}

}  // namespace braid
