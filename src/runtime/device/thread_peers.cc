#include "runtime/device/thread_peers.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "core/comm.h"
#include "core/futex.h"
#include "cuda/device.h"
#include "runtime/communicator.h"

namespace braid {

// The counts of a communicator's ranks in this process. Rank r's: coll[r], its
// collectives; sends[r * n + q] and recvs[r * n + q], its sends to and receives from q.
struct ThreadPeers::Shared {
  explicit Shared(int n)
      : coll(static_cast<size_t>(n)),
        sends(static_cast<size_t>(n) * static_cast<size_t>(n)),
        recvs(static_cast<size_t>(n) * static_cast<size_t>(n)),
        where(static_cast<size_t>(n)) {}
  std::vector<std::atomic<uint64_t>> coll, sends, recvs;
  std::vector<std::atomic<int>> where;  // rank r's thread: a Where
  ChangeSignal changed;                 // notified at every issued(): what waiters sleep on

  // The communicator's object for `key`, made by its first rank here.
  static std::shared_ptr<Shared> join(const std::string& key, int n) {
    static std::mutex mu;
    static auto* live = new std::map<std::string, std::weak_ptr<Shared>>;
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = live->begin(); it != live->end();) {
      it = it->second.expired() ? live->erase(it) : std::next(it);
    }
    std::shared_ptr<Shared> s = (*live)[key].lock();
    if (s == nullptr) {
      s = std::make_shared<Shared>(n);
      (*live)[key] = s;
    }
    return s;
  }
};

ThreadPeers::~ThreadPeers() = default;

ThreadPeers* ThreadPeers::of(braidComm* comm) {
  std::call_once(comm->threadPeersOnce, [comm] {
    const Comm& c = *comm->comm;
    std::unique_ptr<ThreadPeers> t(new ThreadPeers);
    t->comm_ = comm;
    t->rank_ = c.rank();
    t->nranks_ = c.nranks();
    t->isThread_.assign(static_cast<size_t>(t->nranks_), false);
    const PeerInfo& self = c.peer(c.rank());
    for (int q = 0; q < t->nranks_; ++q) {
      const PeerInfo& p = c.peer(q);
      if (q != t->rank_ && p.pid == self.pid && p.hostId == self.hostId) {
        t->threads_.push_back(q);
        t->isThread_[static_cast<size_t>(q)] = true;
      }
    }
    if (t->threads_.empty()) return;
    // Rank 0's listening address names the communicator while it lives.
    const PeerInfo& first = c.peer(0);
    t->shared_ = Shared::join(first.hostId + "|" + std::to_string(first.pid) + "|" +
                                  first.listenAddr.toString() + "|" + std::to_string(t->nranks_),
                              t->nranks_);
    comm->threadPeers = std::shared_ptr<ThreadPeers>(std::move(t));
  });
  return comm->threadPeers.get();
}

void ThreadPeers::hostCallIssued(braidComm* comm, const std::vector<Call>& ops) {
  if (!cuda::compiled() || !cuda::hasDevice()) return;
  if (ThreadPeers* t = of(comm)) t->issued(ops);
}

void ThreadPeers::issued(const std::vector<Call>& ops) {
  Shared& s = *shared_;
  const size_t row = static_cast<size_t>(rank_) * static_cast<size_t>(nranks_);
  for (const Call& op : ops) {
    if (op.kind == Call::Kind::kCollective) {
      s.coll[static_cast<size_t>(rank_)].fetch_add(1);
    } else if (op.peer != rank_) {
      auto& counts = op.kind == Call::Kind::kSend ? s.sends : s.recvs;
      counts[row + static_cast<size_t>(op.peer)].fetch_add(1);
    }
  }
  s.changed.notify();
}

void ThreadPeers::at(Where where) {
  shared_->where[static_cast<size_t>(rank_)].store(where, std::memory_order_relaxed);
}

namespace {

const char* describe(int where) {
  switch (where) {
    case ThreadPeers::kStaging:
      return "is in a staged call, staging its buffers (CUDA calls)";
    case ThreadPeers::kAwaiting:
      return "is in an earlier staged call, waiting for its own peers";
    case ThreadPeers::kEnqueueing:
      return "is in an earlier staged call, enqueueing its waits (CUDA calls)";
    default:
      return "is not in a staged call of this communicator (held by the application, or "
             "in another call)";
  }
}

}  // namespace

Status ThreadPeers::awaitPeers(const std::vector<Call>& ops) {
  Shared& s = *shared_;
  const size_t n = static_cast<size_t>(nranks_), me = static_cast<size_t>(rank_);
  bool collective = false;
  for (const Call& op : ops)
    collective = collective || op.kind == Call::Kind::kCollective;
  // The first rank of this process that has not yet issued its part of `ops`, or -1.
  auto lagging = [&]() -> int {
    if (collective) {
      for (int q : threads_) {
        if (s.coll[static_cast<size_t>(q)].load() < s.coll[me].load()) return q;
      }
    }
    for (const Call& op : ops) {
      if (op.kind == Call::Kind::kCollective || op.peer == rank_ ||
          !isThread_[static_cast<size_t>(op.peer)]) {
        continue;
      }
      const size_t q = static_cast<size_t>(op.peer);
      // My k-th send to q meets q's k-th receive from me, and the other way round.
      const bool send = op.kind == Call::Kind::kSend;
      const uint64_t mine = (send ? s.sends : s.recvs)[me * n + q].load();
      const uint64_t theirs = (send ? s.recvs : s.sends)[q * n + me].load();
      if (theirs < mine) return op.peer;
    }
    return -1;
  };
  const Comm& c = *comm_->comm;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(c.config().timeoutMs);
  int q = -1;
  return awaitChange(
      s.changed, [&] { return (q = lagging()) < 0; },
      [&]() -> Status {
        if (c.aborted() || c.failed()) {
          Status err = c.asyncError();
          return err.isOk() ? Status(braidRemoteError, "the communicator was aborted") : err;
        }
        if (std::chrono::steady_clock::now() <= until) return Status::ok();
        return Status(braidTimeout,
                      "staged device call: rank " + std::to_string(q) +
                          " (a thread of this process) did not issue its part of the call "
                          "within " +
                          std::to_string(c.config().timeoutMs) + " ms (its thread " +
                          describe(s.where[static_cast<size_t>(q)].load()) +
                          "); threads that drive several ranks must group their calls");
      });
}

}  // namespace braid
