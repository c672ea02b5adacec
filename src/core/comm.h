// Comm: one rank's view of a communicator, below the C API.
//
// Owns the peer table from bootstrap, this rank's listener for peer links, the
// endpoints (made lazily, the first time a schedule needs a peer), and the
// liveness watch: every rank keeps a control connection to rank 0, which
// relays "rank r is gone" to everyone when a connection drops without a
// goodbye. Errors raised that way are sticky (asyncError) and make every wait
// on this communicator fail.
//
// Thread-safety: operations run on one thread at a time; asyncError(),
// raiseAsyncError() and requestAbort() may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/link_hello.h"
#include "core/trace.h"
#include "core/transport.h"

namespace braid {

// What an operation is, as plain values (formatted only when someone asks).
struct OpLabel {
  const char* collective = "";
  const char* algorithm = "";
  uint64_t seq = 0;
  uint64_t bytes = 0;
  int datatype = 0;
  int op = 0;
};

struct CommConfig {
  int64_t timeoutMs = 300000;
  size_t sliceBytes = 128 << 10;
  int slots = 8;
  int spinUs = 1000;
  int yieldUs = 2000;
  // The smallest send the host executor posts by single copy where an endpoint
  // can (Endpoint::canPostAt): BRAID_SHM_CMA_MIN_BYTES, else the cost model's
  // price of the transport's probe; UINT64_MAX: never.
  uint64_t singleCopyMinBytes = UINT64_MAX;
  // What this rank tells its peers at bootstrap (PeerInfo::place, nodeBlob).
  std::string place;
  std::string nodeBlob;
  // Formats an OpLabel for progress answers and dumps (the API layer knows
  // datatype names); nullptr: a generic text.
  std::string (*describeOp)(const OpLabel&) = nullptr;
};

class Comm {
 public:
  // Bootstraps rank `rank` of `nranks`; `transports` in order of preference.
  static Expected<std::unique_ptr<Comm>> create(const UniqueIdData& id, int nranks, int rank,
                                                const CommConfig& config,
                                                std::vector<std::unique_ptr<Transport>> transports);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int localRanks() const { return localRanks_; }
  // Ranks whose processes share this machine's CPUs (same host name), which
  // BRAID_HOST_ID may split into several nodes; for the spin-or-yield choice.
  int machineRanks() const { return machineRanks_; }
  // Node index of every rank (ranks with the same host id share a node),
  // numbered in order of first appearance; and the number of nodes.
  const std::vector<int>& nodeOf() const { return nodeOf_; }
  int nodes() const { return nodes_; }
  const PeerInfo& peer(int rank) const { return peers_[rank]; }
  const CommConfig& config() const { return config_; }
  // "rank 3 (pid 123 on host1)"
  std::string describePeer(int rank) const;

  // Makes sure endpoints to every rank in `peers` exist (each side of a pair
  // must ask for the other within the deadline; ranks ask in a global order,
  // so this cannot deadlock).
  Status connectPeers(const std::vector<int>& peers, const Deadline& deadline);
  Endpoint* endpoint(int peer) const { return endpoints_[peer].get(); }
  const char* transportName(int peer) const { return endpointTransport_[peer]; }
  // The transport that made `peer`'s endpoint (nullptr before it connects).
  Transport* transportOf(int peer) const { return endpointTransportOf_[peer]; }

  // Sticky error from a peer's death or an abort; ok otherwise. Cheap.
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  Status asyncError() const;
  void raiseAsyncError(const Status& status);
  void requestAbort();
  // A transport found `peer` gone: records the error naming it, tells rank 0
  // (which tells everyone), and returns the error to report.
  Status peerFailed(int peer, const Status& cause);
  // A deadline of the communicator's timeout that braidCommAbort cancels.
  Deadline deadline() const { return Deadline(config_.timeoutMs, &aborted_); }
  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }

  // Operations are numbered per communicator, alike on every rank. nextSeq()
  // posts the next one (`what` describes it, for peers asking why we wait;
  // its seq is filled in); opCompleted() marks it done.
  uint64_t nextSeq(const OpLabel& what = OpLabel());
  void opCompleted(uint64_t seq);
  uint64_t postedSeq() const { return posted_.load(std::memory_order_relaxed); }
  uint64_t completedSeq() const { return completed_.load(std::memory_order_relaxed); }
  std::string currentOp() const;

  // What `peer` last posted and completed, and the operation it is in, asked
  // through rank 0's control connections; nullopt when no answer comes within
  // `timeoutMs` (the peer is dead, or stuck outside Braid without its watch
  // thread). Any thread.
  struct Progress {
    uint64_t posted = 0;
    uint64_t completed = 0;
    std::string current;  // description of the operation it is in ("" if none)
  };
  std::optional<Progress> askProgress(int peer, int timeoutMs);
  // "rank 5 last completed #1741 and has not posted #1742" for an operation
  // `seq` waiting on `peer`; "" when the peer does not answer.
  std::string describeLag(int peer, uint64_t seq, const std::string& mine);

  // A few bytes from `from` to every rank in `to` over one-off authenticated
  // links that need neither the data links nor rank 0 (so they work among the
  // survivors of a failure). `from` passes `bytes`; the others get them.
  // Every rank of {from} + to must call it. Used by braidCommShrink.
  Expected<std::string> passBytes(int from, const std::vector<int>& to, const std::string& bytes,
                                  const Deadline& deadline);

  // Says goodbye to the liveness watch so leaving is not taken for a death.
  void finalize();

  // BRAID_TRACE's recorder (core/trace.h), null when tracing is off: callers test it once
  // per call or step. Set at init, before any operation.
  TraceSink* trace() const { return trace_.get(); }
  void setTrace(std::unique_ptr<TraceSink> sink) { trace_ = std::move(sink); }
  // Rank 0's clock against this one's, from `rounds` ping-pongs over the control connection
  // (the fastest one's midpoint); every rank must call it (rank 0 only answers, through its
  // watch thread, and gets offset 0).
  TraceClock measureClock(int rounds);

 private:
  // An accepted connection whose hello has not fully arrived.
  struct PendingLink {
    int fd;
    size_t got;
    LinkHello hello;
    uint64_t acceptedNs;
  };

  Comm() = default;
  bool readLinkHello(PendingLink& p, Status* fatal);
  Status init(const UniqueIdData& id, int nranks, int rank);
  Status connectControl(const Deadline& deadline);
  Expected<int> openLink(int peer, uint32_t kind, const Deadline& deadline);
  Expected<int> acceptLink(int peer, uint32_t kind, const Deadline& deadline);
  Status connectOne(int peer, const Deadline& deadline);
  void watchLoop();
  void onControlLost(int peer, const std::string& how);
  void relayDead(int peer, int except);
  struct ControlMsg;
  Status sendControl(int slot, const ControlMsg& msg);
  void onProgressMessage(int slot, const ControlMsg& msg);
  void onClockMessage(int slot, const ControlMsg& msg);
  ControlMsg progressMessage(uint32_t type, int rank) const;

  int rank_ = 0;
  int nranks_ = 0;
  int localRanks_ = 1;
  int machineRanks_ = 1;
  std::vector<int> nodeOf_;
  int nodes_ = 1;
  CommConfig config_;
  Secret secret_{};
  std::vector<PeerInfo> peers_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<const char*> endpointTransport_;
  std::vector<Transport*> endpointTransportOf_;
  int listenFd_ = -1;
  std::map<std::pair<uint32_t, int>, int> stashedLinks_;  // (kind, rank) -> fd
  std::vector<PendingLink> pendingLinks_;

  std::vector<int> controlFds_;  // rank 0: by rank; others: [0] is rank 0
  std::vector<bool> saidBye_;
  int wakeFd_ = -1;              // eventfd that stops the watch thread
  std::thread watcher_;
  bool finalized_ = false;

  std::atomic<bool> failed_{false};
  std::atomic<bool> aborted_{false};
  mutable std::mutex errorMu_;
  Status asyncError_;
  std::atomic<int> culprit_{-1};  // the rank whose loss failed this communicator
  uint64_t seq_ = 0;
  std::atomic<uint64_t> posted_{0};
  std::atomic<uint64_t> completed_{0};
  // The posted operation until it completes, written by the thread running operations
  // and read by any (currentOp): a sequence lock over atomic fields, so a call posts and
  // completes without taking a lock. currentVersion_ is odd while a write is under way;
  // inOp_ says whether the label is the operation in progress.
  std::atomic<uint64_t> currentVersion_{0};
  std::atomic<const char*> currentCollective_{""};
  std::atomic<const char*> currentAlgorithm_{""};
  std::atomic<uint64_t> currentSeq_{0};
  std::atomic<uint64_t> currentBytes_{0};
  std::atomic<int> currentDatatype_{0};
  std::atomic<int> currentOp_{0};
  std::atomic<bool> inOp_{false};
  std::mutex controlSendMu_;       // control sends come from the op and watch threads
  std::mutex progressMu_;          // answers to askProgress, by peer
  std::condition_variable progressCv_;
  std::map<int, Progress> progressAnswers_;
  // The last clock pong (under progressMu_): the ping's time, rank 0's, and its arrival.
  struct Pong {
    uint64_t sentNs = 0, remoteNs = 0, arrivedNs = 0;
  };
  Pong pong_;
  std::unique_ptr<TraceSink> trace_;
};

}  // namespace braid
