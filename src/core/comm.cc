#include "core/comm.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/env.h"
#include "core/host.h"
#include "core/logging.h"

namespace braid {
namespace {

constexpr uint32_t kMsgBye = 1;
constexpr uint32_t kMsgDead = 2;    // rank is gone (relayed by rank 0, or reported to it)
constexpr uint32_t kMsgFailed = 3;  // leaving after an error caused by rank (not a death)
// Progress queries travel through rank 0. To rank 0: rank = whom to ask (query)
// or who asked (reply). From rank 0: rank = who asks (query) or who answers
// (reply).
constexpr uint32_t kMsgQuery = 4;
constexpr uint32_t kMsgReply = 5;
// Clock ping-pong with rank 0: posted = the ping's local time, completed = rank 0's.
constexpr uint32_t kMsgClockPing = 6;
constexpr uint32_t kMsgClockPong = 7;

}  // namespace

// Fixed size; `what` is NUL-terminated.
struct Comm::ControlMsg {
  uint32_t type;
  int32_t rank;
  uint64_t posted;
  uint64_t completed;
  char what[104];
};

Expected<std::unique_ptr<Comm>> Comm::create(const UniqueIdData& id, int nranks, int rank,
                                             const CommConfig& config,
                                             std::vector<std::unique_ptr<Transport>> transports) {
  std::unique_ptr<Comm> comm(new Comm());
  comm->config_ = config;
  comm->transports_ = std::move(transports);
  BRAID_TRY(comm->init(id, nranks, rank));
  return comm;
}

Status Comm::init(const UniqueIdData& id, int nranks, int rank) {
  rank_ = rank;
  nranks_ = nranks;
  secret_ = id.secret;
  Deadline deadline(config_.timeoutMs, &aborted_);
  // Listen where peers can reach us: the interface that routes to the root,
  // or the one BRAID_SOCKET_IFNAME names.
  std::string ifname = envString("BRAID_SOCKET_IFNAME");
  Expected<SockAddr> local = ifname.empty() ? localAddressToward(id.root)
                                            : chooseInterfaceAddress(ifname);
  if (!local.isOk()) return local.status();
  SockAddr bound;
  BRAID_ASSIGN_OR_RETURN(listenFd_, listenOn(local.value(), &bound));
  BRAID_INFO("rank %d: peers connect to %s", rank, bound.toString().c_str());
  PeerInfo self;
  self.rank = rank;
  self.pid = getpid();
  self.hostId = hostIdentity();
  self.hostName = hostName();
  self.listenAddr = bound;
  self.place = config_.place;
  self.nodeBlob = config_.nodeBlob;
  BRAID_ASSIGN_OR_RETURN(peers_, bootstrapJoin(id, rank, nranks, self, config_.timeoutMs));
  localRanks_ = 0;
  machineRanks_ = 0;
  std::vector<std::string> hosts;
  for (const PeerInfo& p : peers_) {
    localRanks_ += p.hostId == self.hostId ? 1 : 0;
    machineRanks_ += p.hostName == self.hostName ? 1 : 0;
    auto it = std::find(hosts.begin(), hosts.end(), p.hostId);
    nodeOf_.push_back(static_cast<int>(it - hosts.begin()));
    if (it == hosts.end()) hosts.push_back(p.hostId);
  }
  nodes_ = static_cast<int>(hosts.size());
  endpoints_.resize(nranks);
  endpointTransport_.assign(nranks, "none");
  endpointTransportOf_.assign(nranks, nullptr);
  BRAID_TRY(connectControl(deadline));
  wakeFd_ = eventfd(0, EFD_CLOEXEC);
  if (wakeFd_ < 0) return systemError("eventfd (liveness watch)");
  watcher_ = std::thread([this] { watchLoop(); });
  return Status::ok();
}

std::string Comm::describePeer(int r) const {
  if (r < 0 || r >= static_cast<int>(peers_.size())) return "rank " + std::to_string(r);
  return "rank " + std::to_string(r) + " (pid " + std::to_string(peers_[r].pid) + " on " +
         peers_[r].hostName + ")";
}

Expected<int> Comm::openLink(int peer, uint32_t kind, const Deadline& deadline) {
  BRAID_ASSIGN_OR_RETURN(int fd, connectTo(peers_[peer].listenAddr, deadline));
  const LinkHello h =
      makeLinkHello(kind, secret_, rank_, peer, config_.sliceBytes, config_.slots);
  Status st = sendAll(fd, &h, sizeof(h), deadline, "link hello");
  if (!st.isOk()) {
    close(fd);
    return st.withContext("connecting to " + describePeer(peer) + ": ");
  }
  return fd;
}

// Reads what a not-yet-identified connection has sent; once its hello is
// complete, keeps it (stashed by kind and rank) or drops it. True when done
// with the connection.
bool Comm::readLinkHello(PendingLink& p, Status* fatal) {
  char* dst = reinterpret_cast<char*>(&p.hello) + p.got;
  ssize_t n = recv(p.fd, dst, sizeof(LinkHello) - p.got, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    close(p.fd);
    return true;
  }
  if (n > 0) p.got += static_cast<size_t>(n);
  if (p.got < sizeof(LinkHello)) return false;
  const LinkExpectation expect{secret_, rank_, nranks_, config_.sliceBytes, config_.slots};
  Expected<LinkOrigin> origin = parseLinkHello(&p.hello, sizeof(p.hello), expect);
  if (!origin.isOk()) {
    close(p.fd);
    if (origin.status().code() == braidInvalidUsage) {
      *fatal = origin.status();
    } else {
      BRAID_WARN("rank %d: dropped a peer-link connection: %s", rank_,
                 origin.status().message().c_str());
    }
    return true;
  }
  setNonBlocking(p.fd, false).isOk();
  stashedLinks_[{origin.value().kind, origin.value().from}] = p.fd;
  return true;
}

// Waits for the link of `kind` from `peer`. New connections and their hellos
// are read together with poll, so a silent or slow stranger holds nothing up.
Expected<int> Comm::acceptLink(int peer, uint32_t kind, const Deadline& deadline) {
  constexpr uint64_t kStrangerNs = 5000000000ull;
  for (;;) {
    auto it = stashedLinks_.find({kind, peer});
    if (it != stashedLinks_.end()) {
      int fd = it->second;
      stashedLinks_.erase(it);
      return fd;
    }
    std::string waiting = "waiting for " + describePeer(peer) + " to connect";
    if (deadline.cancelled()) return invalidUsage(waiting + ": the communicator was aborted");
    if (deadline.expired()) return timeoutError(waiting + ": timed out (BRAID_TIMEOUT_MS)");
    std::vector<pollfd> pfds{{listenFd_, POLLIN, 0}};
    for (const PendingLink& p : pendingLinks_) pfds.push_back({p.fd, POLLIN, 0});
    if (poll(pfds.data(), pfds.size(), std::min(deadline.remainingMs(), 100)) < 0 &&
        errno != EINTR) {
      return systemError(waiting + ": poll");
    }
    if (pfds[0].revents & POLLIN) {
      int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        setNoDelay(fd);
        pendingLinks_.push_back(PendingLink{fd, 0, LinkHello{}, nowNs()});
      } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The connection stays queued and poll keeps reporting it: retrying
        // would spin until the deadline and then blame the peer.
        return systemError(waiting + ": accept");
      }
    }
    Status fatal;
    std::vector<PendingLink> keep;
    for (size_t i = 0; i < pendingLinks_.size(); ++i) {
      PendingLink& p = pendingLinks_[i];
      bool done = i + 1 < pfds.size() && pfds[i + 1].revents != 0 && readLinkHello(p, &fatal);
      if (!done && nowNs() - p.acceptedNs > kStrangerNs) {
        BRAID_WARN("rank %d: dropped a connection that sent no hello in time", rank_);
        close(p.fd);
        done = true;
      }
      if (!done) keep.push_back(p);
    }
    pendingLinks_.swap(keep);
    if (!fatal.isOk()) return fatal;
  }
}

Status Comm::connectControl(const Deadline& deadline) {
  if (rank_ == 0) {
    controlFds_.assign(nranks_, -1);
    for (int r = 1; r < nranks_; ++r) {
      BRAID_ASSIGN_OR_RETURN(controlFds_[r], acceptLink(r, kLinkControl, deadline));
    }
  } else {
    controlFds_.assign(1, -1);
    BRAID_ASSIGN_OR_RETURN(controlFds_[0], openLink(0, kLinkControl, deadline));
  }
  saidBye_.assign(controlFds_.size(), false);
  return Status::ok();
}

Status Comm::connectOne(int peer, const Deadline& deadline) {
  Transport* chosen = nullptr;
  for (auto& t : transports_) {
    if (t->canConnect(peers_[rank_], peers_[peer])) {
      chosen = t.get();
      break;
    }
  }
  if (chosen == nullptr) {
    return invalidUsage("no transport in BRAID_TRANSPORTS can reach " + describePeer(peer) +
                        " (add 'socket' to reach other hosts)");
  }
  Expected<int> link = peer < rank_ ? acceptLink(peer, kLinkData, deadline)
                                    : openLink(peer, kLinkData, deadline);
  if (!link.isOk()) return link.status();
  ConnectOptions opts{config_.sliceBytes, config_.slots};
  Expected<std::unique_ptr<Endpoint>> ep =
      chosen->connect(link.value(), peers_[rank_], peers_[peer], opts, deadline);
  if (!ep.isOk()) {
    return ep.status().withContext(std::string(chosen->name()) + " connection to " +
                                   describePeer(peer) + ": ");
  }
  endpoints_[peer] = std::move(ep).value();
  endpointTransport_[peer] = chosen->name();
  endpointTransportOf_[peer] = chosen;
  BRAID_INFO("rank %d: connected to %s over %s", rank_, describePeer(peer).c_str(),
             chosen->name());
  return Status::ok();
}

Status Comm::connectPeers(const std::vector<int>& peers, const Deadline& deadline) {
  std::vector<int> todo;
  for (int p : peers) {
    if (p != rank_ && p >= 0 && p < nranks_ && !endpoints_[p]) todo.push_back(p);
  }
  if (todo.empty()) return Status::ok();
  // Once a peer is known gone, its death is the error: a connection made now
  // would only meet its leftovers (a FIFO name it unlinked, a refused port).
  if (failed()) return asyncError();
  // Global order on pairs (min rank, max rank): lower peers first, then higher.
  std::sort(todo.begin(), todo.end());
  todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
  for (int p : todo) BRAID_TRY(connectOne(p, deadline));
  return Status::ok();
}

Expected<std::string> Comm::passBytes(int from, const std::vector<int>& to,
                                      const std::string& bytes, const Deadline& deadline) {
  constexpr uint32_t kMaxPass = 1u << 16;
  if (rank_ == from) {
    if (bytes.size() > kMaxPass) return invalidArgument("passBytes: too many bytes");
    const uint32_t len = static_cast<uint32_t>(bytes.size());
    for (int r : to) {
      if (r == rank_) continue;
      BRAID_ASSIGN_OR_RETURN(int fd, openLink(r, kLinkPass, deadline));
      Status st = sendAll(fd, &len, sizeof(len), deadline, "pass length");
      if (st.isOk()) st = sendAll(fd, bytes.data(), len, deadline, "pass bytes");
      close(fd);
      if (!st.isOk()) return st.withContext("passing bytes to " + describePeer(r) + ": ");
    }
    return bytes;
  }
  BRAID_ASSIGN_OR_RETURN(int fd, acceptLink(from, kLinkPass, deadline));
  uint32_t len = 0;
  Status st = recvAll(fd, &len, sizeof(len), deadline, "pass length");
  if (st.isOk() && len > kMaxPass) st = remoteError("passBytes: too many bytes announced");
  std::string out(st.isOk() ? len : 0, '\0');
  if (st.isOk()) st = recvAll(fd, out.data(), out.size(), deadline, "pass bytes");
  close(fd);
  if (!st.isOk()) return st.withContext("receiving bytes from " + describePeer(from) + ": ");
  return out;
}

Status Comm::asyncError() const {
  if (!failed()) return Status::ok();
  std::lock_guard<std::mutex> lock(errorMu_);
  return asyncError_;
}

void Comm::raiseAsyncError(const Status& status) {
  std::lock_guard<std::mutex> lock(errorMu_);
  if (failed_.load()) return;  // the first cause is the one worth reporting
  asyncError_ = status;
  failed_.store(true);
}

void Comm::requestAbort() {
  aborted_.store(true);
  raiseAsyncError(invalidUsage("the communicator was aborted (braidCommAbort)"));
}

Status Comm::sendControl(int slot, const ControlMsg& msg) {
  std::lock_guard<std::mutex> lock(controlSendMu_);
  if (slot < 0 || slot >= static_cast<int>(controlFds_.size()) || controlFds_[slot] < 0) {
    return remoteError("no control connection");
  }
  return sendAll(controlFds_[slot], &msg, sizeof(msg), Deadline(1000), "control message");
}

void Comm::relayDead(int peer, int except) {
  ControlMsg msg{};
  msg.type = kMsgDead;
  msg.rank = peer;
  if (rank_ != 0) {
    (void)sendControl(0, msg);
    return;
  }
  for (int r = 1; r < nranks_; ++r) {
    if (r == peer || r == except) continue;
    (void)sendControl(r, msg);  // a rank we cannot tell will learn from its own connections
  }
}

uint64_t Comm::nextSeq(const OpLabel& what) {
  const uint64_t v = currentVersion_.load(std::memory_order_relaxed);
  currentVersion_.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  currentCollective_.store(what.collective, std::memory_order_relaxed);
  currentAlgorithm_.store(what.algorithm, std::memory_order_relaxed);
  currentSeq_.store(seq_ + 1, std::memory_order_relaxed);
  currentBytes_.store(what.bytes, std::memory_order_relaxed);
  currentDatatype_.store(what.datatype, std::memory_order_relaxed);
  currentOp_.store(what.op, std::memory_order_relaxed);
  inOp_.store(true, std::memory_order_relaxed);
  currentVersion_.store(v + 2, std::memory_order_release);
  posted_.store(++seq_, std::memory_order_relaxed);
  return seq_;
}

void Comm::opCompleted(uint64_t seq) {
  completed_.store(seq, std::memory_order_relaxed);
  inOp_.store(false, std::memory_order_release);
}

std::string Comm::currentOp() const {
  OpLabel label;
  for (;;) {
    const uint64_t v = currentVersion_.load(std::memory_order_acquire);
    if (v % 2 != 0) continue;  // a post under way: its stores end at once
    const bool inOp = inOp_.load(std::memory_order_relaxed);
    label.collective = currentCollective_.load(std::memory_order_relaxed);
    label.algorithm = currentAlgorithm_.load(std::memory_order_relaxed);
    label.seq = currentSeq_.load(std::memory_order_relaxed);
    label.bytes = currentBytes_.load(std::memory_order_relaxed);
    label.datatype = currentDatatype_.load(std::memory_order_relaxed);
    label.op = currentOp_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (currentVersion_.load(std::memory_order_relaxed) != v) continue;
    if (!inOp) return "";
    break;
  }
  if (config_.describeOp != nullptr) return config_.describeOp(label);
  return std::string(label.collective) + " #" + std::to_string(label.seq) + " (" +
         std::to_string(label.bytes) + " B, " + label.algorithm + ")";
}

Comm::ControlMsg Comm::progressMessage(uint32_t type, int rank) const {
  ControlMsg msg{};
  msg.type = type;
  msg.rank = rank;
  msg.posted = postedSeq();
  msg.completed = completedSeq();
  const std::string what = currentOp();
  std::memcpy(msg.what, what.data(), std::min(what.size(), sizeof(msg.what) - 1));
  return msg;
}

std::optional<Comm::Progress> Comm::askProgress(int peer, int timeoutMs) {
  if (peer < 0 || peer >= nranks_) return std::nullopt;
  if (peer == rank_) return Progress{postedSeq(), completedSeq(), currentOp()};
  {
    std::lock_guard<std::mutex> lock(progressMu_);
    progressAnswers_.erase(peer);
  }
  ControlMsg q{};
  q.type = kMsgQuery;
  q.rank = rank_ == 0 ? 0 : peer;
  if (!sendControl(rank_ == 0 ? peer : 0, q).isOk()) return std::nullopt;
  std::unique_lock<std::mutex> lock(progressMu_);
  if (!progressCv_.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                            [&] { return progressAnswers_.count(peer) > 0; })) {
    return std::nullopt;
  }
  return progressAnswers_[peer];
}

void Comm::onProgressMessage(int slot, const ControlMsg& msg) {
  const auto deliver = [&](int from) {
    std::lock_guard<std::mutex> lock(progressMu_);
    progressAnswers_[from] = Progress{msg.posted, msg.completed,
                                      std::string(msg.what, strnlen(msg.what, sizeof(msg.what)))};
    progressCv_.notify_all();
  };
  if (rank_ != 0) {  // from rank 0
    if (msg.type == kMsgQuery) {
      (void)sendControl(0, progressMessage(kMsgReply, msg.rank));
    } else {
      deliver(msg.rank);
    }
    return;
  }
  // Rank 0: `slot` is the sender.
  if (msg.type == kMsgQuery) {
    if (msg.rank == 0) {
      (void)sendControl(slot, progressMessage(kMsgReply, 0));
    } else {
      ControlMsg fwd = msg;
      fwd.rank = slot;  // who asks
      (void)sendControl(msg.rank, fwd);
    }
  } else if (msg.rank == 0) {
    deliver(slot);  // the answer to rank 0's own question
  } else {
    ControlMsg fwd = msg;
    fwd.rank = slot;  // who answers
    (void)sendControl(msg.rank, fwd);
  }
}

void Comm::onClockMessage(int slot, const ControlMsg& msg) {
  if (msg.type == kMsgClockPing) {
    if (rank_ != 0) return;
    ControlMsg pong = msg;
    pong.type = kMsgClockPong;
    pong.completed = nowNs();
    (void)sendControl(slot, pong);
    return;
  }
  const uint64_t arrived = nowNs();
  std::lock_guard<std::mutex> lock(progressMu_);
  pong_ = Pong{msg.posted, msg.completed, arrived};
  progressCv_.notify_all();
}

TraceClock Comm::measureClock(int rounds) {
  TraceClock best;
  if (rank_ == 0) return best;
  uint64_t bestRtt = UINT64_MAX;
  for (int i = 0; i < rounds; ++i) {
    ControlMsg ping{};
    ping.type = kMsgClockPing;
    ping.rank = rank_;
    ping.posted = nowNs();
    if (!sendControl(0, ping).isOk()) break;
    std::unique_lock<std::mutex> lock(progressMu_);
    if (!progressCv_.wait_for(lock, std::chrono::milliseconds(1000),
                              [&] { return pong_.sentNs == ping.posted; })) {
      break;
    }
    const uint64_t rtt = pong_.arrivedNs - pong_.sentNs;
    ++best.samples;
    if (rtt >= bestRtt) continue;
    bestRtt = rtt;
    best.offsetNs = static_cast<int64_t>(pong_.remoteNs) -
                    static_cast<int64_t>(pong_.sentNs + rtt / 2);
    best.errorNs = rtt / 2;
  }
  return best;
}

std::string Comm::describeLag(int peer, uint64_t seq, const std::string& mine) {
  std::optional<Progress> p = askProgress(peer, 1000);
  const std::string who = "rank " + std::to_string(peer);
  if (!p) return who + " did not answer a progress query (dead, or stuck outside Braid)";
  const std::string n = "#" + std::to_string(seq);
  std::string out = who + " last completed #" + std::to_string(p->completed);
  if (p->posted < seq) return out + " and has not posted " + n;
  if (p->completed >= seq) return out + ", so it finished " + n + " and waits elsewhere";
  if (!p->current.empty() && p->posted == seq && p->current != mine) {
    return out + "; it is in " + p->current + ", a different call than this rank's " + mine +
           " (the ranks' calls do not match)";
  }
  return out + " and is in " + (p->current.empty() ? n : p->current) + " too";
}

void Comm::onControlLost(int peer, const std::string& how) {
  if (failed() && culprit_.load() >= 0) return;  // already known and relayed
  culprit_.store(peer);
  // Relay first: once the error is raised this rank's calls fail, and a program that exits
  // on the failure ends the relay with it, leaving the ranks not yet told to blame rank 0.
  if (rank_ == 0) relayDead(peer, -1);
  raiseAsyncError(remoteError(describePeer(peer) + " is gone: " + how));
}

Status Comm::peerFailed(int peer, const Status& cause) {
  // A connection also closes when its peer leaves because of a third rank's
  // death; the liveness watch usually hears the real cause within moments.
  Deadline grace(250);
  while (!failed() && !grace.expired()) usleep(1000);
  if (!failed()) {
    culprit_.store(peer);
    raiseAsyncError(Status(cause.code(), describePeer(peer) + " is gone: " + cause.message()));
    relayDead(peer, -1);
  }
  return asyncError();
}

void Comm::watchLoop() {
  for (;;) {
    std::vector<pollfd> pfds{{wakeFd_, POLLIN, 0}};
    std::vector<int> who;
    for (size_t i = 0; i < controlFds_.size(); ++i) {
      if (controlFds_[i] < 0) continue;
      pfds.push_back({controlFds_[i], POLLIN, 0});
      who.push_back(static_cast<int>(i));
    }
    if (poll(pfds.data(), pfds.size(), -1) < 0 && errno != EINTR) return;
    if (pfds[0].revents) return;
    for (size_t k = 1; k < pfds.size(); ++k) {
      if (!pfds[k].revents) continue;
      int slot = who[k - 1];
      ControlMsg msg{};
      ssize_t n = recv(controlFds_[slot], &msg, sizeof(msg), MSG_WAITALL);
      bool valid = n == sizeof(msg) && msg.rank >= 0 && msg.rank < nranks_;
      if (valid && (msg.type == kMsgQuery || msg.type == kMsgReply)) {
        onProgressMessage(slot, msg);
      } else if (valid && (msg.type == kMsgClockPing || msg.type == kMsgClockPong)) {
        onClockMessage(slot, msg);
      } else if (valid && msg.type == kMsgBye) {
        saidBye_[slot] = true;
      } else if (valid && (msg.type == kMsgDead || msg.type == kMsgFailed)) {
        // kMsgFailed: the sender leaves because of msg.rank; do not blame it.
        if (msg.type == kMsgFailed) saidBye_[slot] = true;
        onControlLost(msg.rank, "reported by " + describePeer(rank_ == 0 ? slot : 0));
      } else {
        if (!saidBye_[slot]) {
          onControlLost(rank_ == 0 ? slot : 0,
                        "its connection closed without a goodbye (it exited, crashed or was "
                        "killed)");
        }
        std::lock_guard<std::mutex> lock(controlSendMu_);
        close(controlFds_[slot]);
        controlFds_[slot] = -1;
      }
    }
  }
}

void Comm::finalize() {
  if (finalized_) return;
  finalized_ = true;
  // A rank aborted by its user leaves without a goodbye, so peers report it;
  // one that leaves because another rank died says so, so it is not blamed.
  int culprit = culprit_.load();
  ControlMsg bye{};
  bye.type = culprit >= 0 ? kMsgFailed : kMsgBye;
  bye.rank = culprit >= 0 ? culprit : rank_;
  bool silent = aborted() && culprit < 0;
  for (size_t slot = 0; !silent && slot < controlFds_.size(); ++slot) {
    (void)sendControl(static_cast<int>(slot), bye);
  }
  if (watcher_.joinable()) {
    uint64_t one = 1;
    (void)!write(wakeFd_, &one, sizeof(one));
    watcher_.join();
  }
}

Comm::~Comm() {
  finalize();
  endpoints_.clear();
  for (int fd : controlFds_) {
    if (fd >= 0) close(fd);
  }
  for (auto& [key, fd] : stashedLinks_) close(fd);
  for (const PendingLink& p : pendingLinks_) close(p.fd);
  if (listenFd_ >= 0) close(listenFd_);
  if (wakeFd_ >= 0) close(wakeFd_);
}

}  // namespace braid
