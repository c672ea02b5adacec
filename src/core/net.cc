#include "core/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "core/logging.h"

namespace braid {

int SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return 0;
}

void SockAddr::setPort(int port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SockAddr::toString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host,
              sizeof(host));
    return std::string(host) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host,
              sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(port());
  }
  return "(no address)";
}

Expected<SockAddr> parseHostPort(const std::string& text, bool allowZeroPort) {
  std::string host;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalidArgument("address '" + text + "' is not [ipv6]:port");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return invalidArgument("address '" + text + "' is not host:port");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < (allowZeroPort ? 0 : 1) || p > 65535) {
    return invalidArgument("address '" + text + "' has no valid port (1..65535)");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return invalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  SockAddr addr;
  std::memcpy(&addr.storage, res->ai_addr, res->ai_addrlen);
  addr.len = res->ai_addrlen;
  freeaddrinfo(res);
  addr.setPort(static_cast<int>(p));
  return addr;
}

bool interfaceMatches(const std::string& spec, const std::string& name) {
  std::string s = spec;
  bool exclude = false;
  if (!s.empty() && s[0] == '^') {
    exclude = true;
    s = s.substr(1);
  }
  bool exact = false;
  if (!s.empty() && s[0] == '=') {
    exact = true;
    s = s.substr(1);
  }
  bool hit = false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma == std::string::npos ? std::string::npos
                                                                   : comma - start);
    if (!item.empty()) {
      if (exact ? name == item : name.compare(0, item.size(), item) == 0) hit = true;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return exclude ? !hit : hit;
}

Expected<SockAddr> chooseInterfaceAddress(const std::string& spec) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return systemError("getifaddrs (listing network interfaces)");
  SockAddr chosen;
  SockAddr loopback;
  for (int pass = 0; pass < 2 && chosen.len == 0; ++pass) {
    int family = pass == 0 ? AF_INET : AF_INET6;
    for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
      if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != family) continue;
      if (!(it->ifa_flags & IFF_UP)) continue;
      if (family == AF_INET6) {
        auto* a6 = reinterpret_cast<sockaddr_in6*>(it->ifa_addr);
        if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;
      }
      SockAddr addr;
      addr.len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      std::memcpy(&addr.storage, it->ifa_addr, addr.len);
      bool isLoop = it->ifa_flags & IFF_LOOPBACK;
      if (!spec.empty()) {
        if (interfaceMatches(spec, it->ifa_name)) {
          chosen = addr;
          break;
        }
      } else if (isLoop) {
        if (loopback.len == 0) loopback = addr;
      } else {
        chosen = addr;
        break;
      }
    }
  }
  freeifaddrs(list);
  if (chosen.len == 0 && spec.empty()) chosen = loopback;
  if (chosen.len == 0) {
    return invalidArgument("no network interface matches BRAID_SOCKET_IFNAME='" + spec + "'");
  }
  return chosen;
}

Expected<SockAddr> localAddressToward(const SockAddr& dest) {
  int fd = socket(dest.family(), SOCK_DGRAM, 0);
  if (fd < 0) return systemError("socket (finding the route to " + dest.toString() + ")");
  SockAddr local;
  local.len = sizeof(local.storage);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&dest.storage), dest.len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.len) != 0) {
    Status st = systemError("no route to " + dest.toString());
    close(fd);
    return st;
  }
  close(fd);
  local.setPort(0);
  return local;
}

Expected<int> listenOn(const SockAddr& addr, SockAddr* bound) {
  int fd = socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return systemError("socket (listening on " + addr.toString() + ")");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0) {
    // systemError's hint for EADDRINUSE says to pick another port in BRAID_ROOT.
    Status st = systemError("bind " + addr.toString());
    close(fd);
    return st;
  }
  if (listen(fd, 1024) != 0) {
    Status st = systemError("listen on " + addr.toString());
    close(fd);
    return st;
  }
  bound->len = sizeof(bound->storage);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound->storage), &bound->len);
  return fd;
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Status setNonBlocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return systemError("fcntl(F_GETFL)");
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (fcntl(fd, F_SETFL, flags) != 0) return systemError("fcntl(F_SETFL)");
  return Status::ok();
}

namespace {

Status cancelledError(const std::string& what) {
  return invalidUsage(what + ": the communicator was aborted");
}

// Waits for `events` on fd, in slices so a cancellation is seen.
Status pollOne(int fd, short events, const Deadline& deadline, const char* what) {
  for (;;) {
    if (deadline.cancelled()) return cancelledError(what);
    int ms = deadline.remainingMs();
    if (ms <= 0) return timeoutError(std::string(what) + ": timed out (BRAID_TIMEOUT_MS)");
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, ms < 100 ? ms : 100);
    if (rc > 0) return Status::ok();
    if (rc < 0 && errno != EINTR) return systemError(std::string(what) + ": poll");
  }
}

}  // namespace

Expected<int> connectTo(const SockAddr& addr, const Deadline& deadline) {
  int backoffMs = 1;
  for (;;) {
    int fd = socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return systemError("socket (connecting to " + addr.toString() + ")");
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) == 0) {
      setNoDelay(fd);
      return fd;
    }
    int err = errno;
    close(fd);
    if (err != ECONNREFUSED && err != EINTR && err != ETIMEDOUT && err != EAGAIN) {
      return systemError("connect to " + addr.toString(), err);
    }
    if (deadline.cancelled()) return cancelledError("connect to " + addr.toString());
    if (deadline.expired()) {
      return timeoutError("connect to " + addr.toString() + ": " + std::strerror(err) +
                          " until the deadline (BRAID_TIMEOUT_MS)");
    }
    usleep(backoffMs * 1000);
    backoffMs = backoffMs < 100 ? backoffMs * 2 : 100;
  }
}

Expected<int> acceptBefore(int listenFd, const Deadline& deadline) {
  for (;;) {
    BRAID_TRY(pollOne(listenFd, POLLIN, deadline, "waiting for a peer to connect"));
    int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      return fd;
    }
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      return systemError("accept");
    }
  }
}

Status sendAll(int fd, const void* buf, size_t len, const Deadline& deadline, const char* what) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      BRAID_TRY(pollOne(fd, POLLOUT, deadline, what));
      continue;
    }
    if (errno == EPIPE || errno == ECONNRESET) {
      return remoteError(std::string(what) + ": connection closed by the peer");
    }
    return systemError(std::string(what) + ": send");
  }
  return Status::ok();
}

Status recvAll(int fd, void* buf, size_t len, const Deadline& deadline, const char* what) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return remoteError(std::string(what) + ": connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      BRAID_TRY(pollOne(fd, POLLIN, deadline, what));
      continue;
    }
    if (errno == ECONNRESET) {
      return remoteError(std::string(what) + ": connection reset by the peer");
    }
    return systemError(std::string(what) + ": recv");
  }
  return Status::ok();
}

}  // namespace braid
