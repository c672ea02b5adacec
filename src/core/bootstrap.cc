#include "core/bootstrap.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "core/logging.h"

namespace braid {
namespace {

constexpr uint32_t kIdMagic = 0x42524944;     // "BRID"
constexpr uint32_t kHelloMagic = 0x4252484c;  // "BRHL"
constexpr uint32_t kReplyMagic = 0x42525250;  // "BRRP"
constexpr uint32_t kWireVersion = 2;
constexpr int64_t kStrangerTimeoutMs = 5000;

struct PackedId {
  uint32_t magic;
  uint32_t version;
  uint32_t addrLen;
  uint8_t addr[sizeof(sockaddr_in6)];
  uint8_t secret[16];
};
static_assert(sizeof(PackedId) <= BRAID_UNIQUE_ID_BYTES);

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint8_t secret[16];
  int32_t nranks;
  WirePeer peer;
  uint32_t nodeBytes;  // PeerInfo::nodeBlob follows, at most kMaxNodeBlob
};

struct ReplyHeader {
  uint32_t magic;
  uint32_t ok;           // 1: a table of nranks WirePeers follows; 0: error text
  uint32_t payloadBytes;
};

template <size_t N>
void copyString(char (&dst)[N], const std::string& src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), std::min(src.size(), N - 1));
}

template <size_t N>
std::string fromFixed(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

}  // namespace

void packUniqueId(const UniqueIdData& data, braidUniqueId* id) {
  std::memset(id, 0, sizeof(*id));
  PackedId p{};
  p.magic = kIdMagic;
  p.version = kWireVersion;
  p.addrLen = std::min<uint32_t>(data.root.len, sizeof(p.addr));
  std::memcpy(p.addr, &data.root.storage, p.addrLen);
  std::memcpy(p.secret, data.secret.data(), 16);
  std::memcpy(id->internal, &p, sizeof(p));
}

Expected<UniqueIdData> unpackUniqueId(const braidUniqueId& id) {
  PackedId p;
  std::memcpy(&p, id.internal, sizeof(p));
  if (p.magic != kIdMagic || p.version != kWireVersion || p.addrLen == 0 ||
      p.addrLen > sizeof(p.addr)) {
    return invalidArgument("commId is not a Braid unique id (make it with braidGetUniqueId "
                           "and pass the same bytes to every rank)");
  }
  UniqueIdData d;
  std::memcpy(&d.root.storage, p.addr, p.addrLen);
  d.root.len = p.addrLen;
  if (d.root.family() != AF_INET && d.root.family() != AF_INET6) {
    return invalidArgument("commId holds no valid root address");
  }
  std::memcpy(d.secret.data(), p.secret, 16);
  return d;
}

Secret randomSecret() {
  Secret s{};
  size_t got = 0;
  while (got < s.size()) {
    ssize_t n = getrandom(s.data() + got, s.size() - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return s;
}

std::string secretToHex(const Secret& secret) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : secret) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

Expected<Secret> secretFromHex(const std::string& hex) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Secret s{};
  bool ok = hex.size() == 32;
  for (size_t i = 0; ok && i < 16; ++i) {
    int hi = digit(hex[2 * i]);
    int lo = digit(hex[2 * i + 1]);
    ok = hi >= 0 && lo >= 0;
    s[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  if (!ok) return invalidArgument("BRAID_SECRET must be 32 hex digits");
  return s;
}

bool secretEquals(const uint8_t* a, const uint8_t* b) {
  uint8_t diff = 0;
  for (int i = 0; i < 16; ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

WirePeer toWire(const PeerInfo& info) {
  WirePeer w{};
  w.rank = info.rank;
  w.pid = info.pid;
  copyString(w.hostId, info.hostId);
  copyString(w.hostName, info.hostName);
  copyString(w.place, info.place);
  w.addrLen = std::min<uint32_t>(info.listenAddr.len, sizeof(w.addr));
  std::memcpy(w.addr, &info.listenAddr.storage, w.addrLen);
  return w;
}

Expected<PeerInfo> fromWire(const WirePeer& w) {
  if (w.addrLen == 0 || w.addrLen > sizeof(w.addr) || w.addrLen > sizeof(sockaddr_storage)) {
    return remoteError("peer info carries an invalid address length");
  }
  // toWire always leaves a terminator; a field without one was not made by it.
  if (strnlen(w.hostId, sizeof(w.hostId)) == sizeof(w.hostId) ||
      strnlen(w.hostName, sizeof(w.hostName)) == sizeof(w.hostName) ||
      strnlen(w.place, sizeof(w.place)) == sizeof(w.place)) {
    return remoteError("peer info carries an unterminated text field");
  }
  PeerInfo p;
  p.rank = w.rank;
  p.pid = w.pid;
  p.hostId = fromFixed(w.hostId);
  p.hostName = fromFixed(w.hostName);
  p.place = fromFixed(w.place);
  std::memcpy(&p.listenAddr.storage, w.addr, w.addrLen);
  p.listenAddr.len = w.addrLen;
  return p;
}

namespace {

// One accepted connection that has not yet presented a full hello.
struct Pending {
  int fd;
  uint64_t acceptedNs;
  size_t got = 0;
  Hello hello{};
  std::string node;  // the node blob, once the hello is complete and checked
  size_t nodeGot = 0;
};

class RootService {
 public:
  RootService(int listenFd, const Secret& secret, int64_t timeoutMs)
      : listenFd_(listenFd), secret_(secret), deadline_(timeoutMs) {}
  void run();

 private:
  void acceptOne();
  // Reads what is there; returns true when the connection is finished with.
  bool readHello(Pending& p);
  void admit(Pending& p);
  void replyAll(bool ok, const std::string& error);
  std::string missingRanks() const;

  int listenFd_;
  Secret secret_;
  Deadline deadline_;
  std::vector<Pending> pending_;
  std::vector<int> fds_;  // by rank, -1 until joined
  std::vector<WirePeer> table_;
  std::vector<std::string> nodes_;  // node blob by rank
  int nranks_ = -1;
  int joined_ = 0;
  std::string fatal_;
};

void RootService::acceptOne() {
  int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
    // The connection stays queued and poll keeps reporting it: retrying would
    // spin until the deadline, then blame the ranks that could not get in.
    fatal_ = systemError("the root cannot accept a rank's connection: accept").message();
    BRAID_WARN("bootstrap: %s", fatal_.c_str());
    return;
  }
  if (fd < 0) return;
  Pending p;
  p.fd = fd;
  p.acceptedNs = nowNs();
  pending_.push_back(std::move(p));
}

bool RootService::readHello(Pending& p) {
  const bool fixedPart = p.got < sizeof(Hello);
  char* dst = fixedPart ? reinterpret_cast<char*>(&p.hello) + p.got : p.node.data() + p.nodeGot;
  const size_t want = fixedPart ? sizeof(Hello) - p.got : p.node.size() - p.nodeGot;
  ssize_t n = want == 0 ? 0 : recv(p.fd, dst, want, MSG_DONTWAIT);
  if (want > 0 && (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))) {
    BRAID_WARN("bootstrap: a connection closed before presenting a complete hello; ignored");
    return true;
  }
  if (n > 0) (fixedPart ? p.got : p.nodeGot) += static_cast<size_t>(n);
  if (p.got < sizeof(Hello)) return false;
  const Hello& h = p.hello;
  if (fixedPart) {
    // Checked before a byte of the variable part is accepted.
    if (h.magic != kHelloMagic || h.version != kWireVersion ||
        !secretEquals(h.secret, secret_.data())) {
      BRAID_WARN("bootstrap: dropped a connection that did not present this job's secret");
      return true;
    }
    if (h.nodeBytes > kMaxNodeBlob) {
      BRAID_WARN("bootstrap: dropped rank %d's hello: its node description has %u bytes (at "
                 "most %zu)", h.peer.rank, h.nodeBytes, kMaxNodeBlob);
      return true;
    }
    p.node.assign(h.nodeBytes, '\0');
  }
  if (p.nodeGot < p.node.size()) return false;
  admit(p);  // takes or closes the fd
  return true;
}

void RootService::admit(Pending& p) {
  const Hello& h = p.hello;
  if (nranks_ < 0) {
    if (h.nranks < 1) return;
    nranks_ = h.nranks;
    fds_.assign(nranks_, -1);
    table_.resize(nranks_);
    nodes_.resize(nranks_);
  }
  std::string problem;
  if (h.nranks != nranks_) {
    problem = "rank " + std::to_string(h.peer.rank) + " was started with nranks " +
              std::to_string(h.nranks) + " but rank(s) before it with " + std::to_string(nranks_);
  } else if (h.peer.rank < 0 || h.peer.rank >= nranks_) {
    problem = "a rank joined with rank " + std::to_string(h.peer.rank) + " outside 0.." +
              std::to_string(nranks_ - 1);
  } else if (fds_[h.peer.rank] >= 0) {
    problem = "two processes joined as rank " + std::to_string(h.peer.rank);
  }
  if (!problem.empty()) {
    if (fatal_.empty()) fatal_ = problem;
    close(p.fd);
    p.fd = -1;
    return;
  }
  fds_[h.peer.rank] = p.fd;
  table_[h.peer.rank] = h.peer;
  nodes_[h.peer.rank] = std::move(p.node);
  ++joined_;
  p.fd = -1;  // now owned by fds_
}

std::string RootService::missingRanks() const {
  std::string out;
  int shown = 0;
  for (int r = 0; r < nranks_; ++r) {
    if (fds_[r] >= 0) continue;
    if (shown++ < 16) out += (out.empty() ? "" : ", ") + std::to_string(r);
  }
  if (shown > 16) out += " and " + std::to_string(shown - 16) + " more";
  return out;
}

void RootService::replyAll(bool ok, const std::string& error) {
  // The table, then per rank a 32-bit length and its node blob: non-empty on
  // the lowest rank of each host id only, so a node's description travels
  // once per receiver however many ranks it holds.
  std::string payload = error;
  if (ok) {
    payload.assign(reinterpret_cast<const char*>(table_.data()), table_.size() * sizeof(WirePeer));
    std::vector<std::string> seen;
    for (int r = 0; r < nranks_; ++r) {
      const std::string host = fromFixed(table_[r].hostId);
      const bool first = std::find(seen.begin(), seen.end(), host) == seen.end();
      if (first) seen.push_back(host);
      const uint32_t len = first ? static_cast<uint32_t>(nodes_[r].size()) : 0;
      payload.append(reinterpret_cast<const char*>(&len), sizeof(len));
      if (first) payload += nodes_[r];
    }
  }
  ReplyHeader hdr{kReplyMagic, ok ? 1u : 0u, static_cast<uint32_t>(payload.size())};
  Deadline d(5000);
  for (int fd : fds_) {
    if (fd < 0) continue;
    setNonBlocking(fd, false).isOk();
    Status st = sendAll(fd, &hdr, sizeof(hdr), d, "bootstrap reply");
    if (st.isOk()) st = sendAll(fd, payload.data(), payload.size(), d, "bootstrap reply");
    close(fd);
  }
}

void RootService::run() {
  while (fatal_.empty() && (nranks_ < 0 || joined_ < nranks_) && !deadline_.expired()) {
    std::vector<pollfd> pfds{{listenFd_, POLLIN, 0}};
    for (const Pending& p : pending_) pfds.push_back({p.fd, POLLIN, 0});
    int rc = poll(pfds.data(), pfds.size(), std::min(deadline_.remainingMs(), 200));
    if (rc < 0 && errno != EINTR) break;
    if (pfds[0].revents & POLLIN) acceptOne();
    std::vector<Pending> keep;
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      bool done = false;
      if (i + 1 < pfds.size() && pfds[i + 1].revents) done = readHello(p);
      if (!done && nowNs() - p.acceptedNs > kStrangerTimeoutMs * 1000000ull) {
        BRAID_WARN("bootstrap: dropped a connection that sent no hello within %lld ms",
                   static_cast<long long>(kStrangerTimeoutMs));
        done = true;
      }
      if (done && p.fd >= 0) close(p.fd);
      if (!done) keep.push_back(p);
    }
    pending_.swap(keep);
  }
  for (Pending& p : pending_) close(p.fd);
  if (!fatal_.empty()) {
    replyAll(false, "bootstrap failed: " + fatal_);
  } else if (nranks_ > 0 && joined_ == nranks_) {
    replyAll(true, "");
  } else {
    std::string missing = nranks_ > 0 ? missingRanks() : "all";
    BRAID_WARN("bootstrap: rank(s) %s did not join before the deadline", missing.c_str());
    replyAll(false, "bootstrap timed out (BRAID_TIMEOUT_MS): rank(s) " + missing +
                        " did not join the rendezvous");
  }
  close(listenFd_);
}

}  // namespace

namespace {

class ThreadRootHandle : public RootHandle {
 public:
  explicit ThreadRootHandle(std::thread t) : thread_(std::move(t)) {}
  ~ThreadRootHandle() override {
    if (thread_.joinable()) thread_.detach();
  }
  void wait() override {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

}  // namespace

Expected<std::shared_ptr<RootHandle>> startRootService(const SockAddr& bindAddr,
                                                       const Secret& secret, int64_t timeoutMs,
                                                       SockAddr* bound) {
  BRAID_ASSIGN_OR_RETURN(int fd, listenOn(bindAddr, bound));
  std::thread t([fd, secret, timeoutMs] {
    RootService service(fd, secret, timeoutMs);
    service.run();
  });
  return std::shared_ptr<RootHandle>(new ThreadRootHandle(std::move(t)));
}

Expected<std::vector<PeerInfo>> parseBootstrapTable(const std::string& payload, int nranks) {
  if (nranks < 1) return remoteError("table for no ranks");
  const size_t tableBytes = static_cast<size_t>(nranks) * sizeof(WirePeer);
  if (payload.size() < tableBytes) return remoteError("table size does not match nranks");
  std::vector<PeerInfo> peers;
  size_t at = tableBytes;
  for (int r = 0; r < nranks; ++r) {
    WirePeer w;
    std::memcpy(&w, payload.data() + r * sizeof(WirePeer), sizeof(w));
    BRAID_ASSIGN_OR_RETURN(PeerInfo p, fromWire(w));
    if (p.rank != r) return remoteError("table out of order");
    uint32_t len = 0;
    if (payload.size() - at < sizeof(len)) return remoteError("node section truncated");
    std::memcpy(&len, payload.data() + at, sizeof(len));
    at += sizeof(len);
    if (len > kMaxNodeBlob || payload.size() - at < len) {
      return remoteError("node section truncated");
    }
    p.nodeBlob.assign(payload.data() + at, len);
    at += len;
    peers.push_back(std::move(p));
  }
  if (at != payload.size()) return remoteError("trailing bytes after the node section");
  return peers;
}

Expected<std::vector<PeerInfo>> bootstrapJoin(const UniqueIdData& id, int rank, int nranks,
                                              const PeerInfo& self, int64_t timeoutMs) {
  // The root reports missing ranks at its own deadline; give it a margin.
  Deadline deadline(timeoutMs + 2000);
  std::string where = "bootstrap with the root at " + id.root.toString();
  BRAID_ASSIGN_OR_RETURN(int fd, connectTo(id.root, deadline));
  Hello h{};
  h.magic = kHelloMagic;
  h.version = kWireVersion;
  std::memcpy(h.secret, id.secret.data(), 16);
  h.nranks = nranks;
  h.peer = toWire(self);
  h.peer.rank = rank;
  if (self.nodeBlob.size() > kMaxNodeBlob) {
    close(fd);
    return invalidArgument("this rank's node description has " +
                           std::to_string(self.nodeBlob.size()) + " bytes; at most " +
                           std::to_string(kMaxNodeBlob) + " fit the bootstrap");
  }
  h.nodeBytes = static_cast<uint32_t>(self.nodeBlob.size());
  Status st = sendAll(fd, &h, sizeof(h), deadline, where.c_str());
  if (st.isOk()) st = sendAll(fd, self.nodeBlob.data(), self.nodeBlob.size(), deadline, where.c_str());
  ReplyHeader hdr{};
  if (st.isOk()) st = recvAll(fd, &hdr, sizeof(hdr), deadline, where.c_str());
  if (st.isOk() && hdr.magic != kReplyMagic) st = remoteError(where + ": malformed reply");
  if (st.isOk() && hdr.payloadBytes > (64u << 20)) st = remoteError(where + ": reply too large");
  std::string payload(st.isOk() ? hdr.payloadBytes : 0, '\0');
  if (st.isOk()) st = recvAll(fd, payload.data(), payload.size(), deadline, where.c_str());
  close(fd);
  if (!st.isOk()) {
    if (st.code() == braidTimeout) {
      return timeoutError(where + ": no reply before the deadline (BRAID_TIMEOUT_MS); is the "
                          "process that made the unique id alive and reachable?");
    }
    return st;
  }
  if (hdr.ok == 0) return remoteError(payload);
  Expected<std::vector<PeerInfo>> peers = parseBootstrapTable(payload, nranks);
  if (!peers.isOk()) return peers.status().withContext(where + ": ");
  return peers;
}

}  // namespace braid
