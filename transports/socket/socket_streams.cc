#include "transports/socket/socket_streams.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/env.h"
#include "core/net.h"

namespace braid::transport::socket {
namespace {

constexpr int64_t kJoinWaitMs = 5000;  // for a connection to present its token

void closeAll(const std::vector<int>& fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

long readProcLong(const char* path) {
  std::ifstream f(path);
  long v = -1;
  f >> v;
  return f ? v : -1;
}

Expected<SockAddr> linkAddress(int fd, bool local) {
  SockAddr a;
  a.len = sizeof(a.storage);
  auto* sa = reinterpret_cast<sockaddr*>(&a.storage);
  int rc = local ? getsockname(fd, sa, &a.len) : getpeername(fd, sa, &a.len);
  if (rc != 0) return systemError(local ? "getsockname (link)" : "getpeername (link)");
  return a;
}

// The listening side: offers a port and token, then accepts streams 1..n-1.
Status acceptStreams(std::vector<int>& fds, int n, const Deadline& deadline,
                     const std::string& who) {
  BRAID_ASSIGN_OR_RETURN(SockAddr local, linkAddress(fds[0], true));
  local.setPort(0);
  SockAddr bound;
  BRAID_ASSIGN_OR_RETURN(int listenFd, listenOn(local, &bound));
  StreamOffer offer{kStreamMagic, static_cast<uint32_t>(bound.port()), {}};
  Status st;
  if (getrandom(offer.token, sizeof(offer.token), 0) != sizeof(offer.token)) {
    st = systemError("getrandom (stream token)");
  } else {
    st = sendAll(fds[0], &offer, sizeof(offer), deadline, "offering extra socket streams");
  }
  int joined = 1;
  while (st.isOk() && joined < n) {
    Expected<int> fd = acceptBefore(listenFd, deadline);
    if (!fd.isOk()) {
      st = fd.status().withContext("waiting for " + who + " to open stream " +
                                   std::to_string(joined) + " of " + std::to_string(n) + ": ");
      break;
    }
    StreamJoin join{};
    Deadline joinBy(std::min<int64_t>(kJoinWaitMs, deadline.remainingMs()));
    Status got = recvAll(fd.value(), &join, sizeof(join), joinBy, "stream token");
    Expected<int> index = got.isOk() ? parseStreamJoin(&join, sizeof(join), offer.token, n)
                                     : Expected<int>(got);
    if (!index.isOk() || fds[index.value()] >= 0) {  // a stranger, or a stream that lost its way
      close(fd.value());
      continue;
    }
    fds[index.value()] = fd.value();
    ++joined;
  }
  close(listenFd);
  return st;
}

// The connecting side: reads the offer and opens streams 1..n-1 to it.
Status joinStreams(std::vector<int>& fds, int n, const Deadline& deadline) {
  StreamOffer offer{};
  BRAID_TRY(recvAll(fds[0], &offer, sizeof(offer), deadline, "reading the stream offer"));
  uint8_t token[kTokenBytes];
  BRAID_ASSIGN_OR_RETURN(int port, parseStreamOffer(&offer, sizeof(offer), token));
  BRAID_ASSIGN_OR_RETURN(SockAddr peer, linkAddress(fds[0], false));
  peer.setPort(port);
  for (int i = 1; i < n; ++i) {
    BRAID_ASSIGN_OR_RETURN(fds[i], connectTo(peer, deadline));
    StreamJoin join{kJoinMagic, static_cast<uint32_t>(i), {}};
    std::memcpy(join.token, token, sizeof(join.token));
    BRAID_TRY(sendAll(fds[i], &join, sizeof(join), deadline, "presenting the stream token"));
  }
  return Status::ok();
}

}  // namespace

int wantedStreams(const PeerInfo& self, const PeerInfo& peer) {
  // envString falls back to NCCL_NSOCKS_PERTHREAD, which NCCL multiplies by
  // its thread count; Braid has no per-stream threads, so it counts sockets.
  int64_t n = parseSize(envString("BRAID_SOCKET_NSOCKS"));
  const char* threads = std::getenv("NCCL_SOCKET_NTHREADS");
  if (n > 0 && std::getenv("BRAID_SOCKET_NSOCKS") == nullptr && threads != nullptr) {
    n *= std::max(1, std::atoi(threads));
  }
  if (n <= 0) n = self.hostId == peer.hostId ? 1 : 2;
  return static_cast<int>(std::clamp<int64_t>(n, 1, kMaxStreams));
}

Expected<std::vector<int>> openStreams(int linkFd, bool lowerRank, int want,
                                       const Deadline& deadline, const std::string& who) {
  std::vector<int> fds{linkFd};
  StreamHello mine{kStreamMagic, static_cast<uint32_t>(want)};
  StreamHello theirs{};
  Status st = sendAll(linkFd, &mine, sizeof(mine), deadline, "socket stream count");
  if (st.isOk()) st = recvAll(linkFd, &theirs, sizeof(theirs), deadline, "socket stream count");
  Expected<int> count = st.isOk() ? parseStreamHello(&theirs, sizeof(theirs)) : Expected<int>(st);
  if (st.isOk() && !count.isOk()) st = count.status().withContext("from " + who + ": ");
  if (st.isOk()) {
    int n = std::min(want, count.value());
    fds.resize(n, -1);
    if (n > 1) st = lowerRank ? acceptStreams(fds, n, deadline, who) : joinStreams(fds, n, deadline);
  }
  if (!st.isOk()) {
    closeAll(fds);
    return st;
  }
  return fds;
}

void setStreamBuffers(int fd, int bytes) {
  if (bytes <= 0) return;
  if (readProcLong("/proc/sys/net/core/wmem_max") >= bytes) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  }
  if (readProcLong("/proc/sys/net/core/rmem_max") >= bytes) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  }
}

}  // namespace braid::transport::socket
