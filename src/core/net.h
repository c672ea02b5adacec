// TCP helpers for bootstrap and the socket transport: addresses, interface
// choice, listen/connect/accept and whole-message send/recv with deadlines.
// Every failure is a Status naming the call, the address and strerror.
// Stateless functions; thread-safe.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>

#include "core/clock.h"
#include "core/status.h"

namespace braid {

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  int family() const { return storage.ss_family; }
  int port() const;
  void setPort(int port);
  std::string toString() const;  // "1.2.3.4:5" or "[::1]:5"
};

// "host:port", "[v6]:port"; host may be a name. Port must be 1..65535 unless
// allowZeroPort.
Expected<SockAddr> parseHostPort(const std::string& text, bool allowZeroPort = false);

// The interface address for bootstrap and sockets: BRAID_SOCKET_IFNAME's
// grammar (prefix list, ^ excludes, = exact match); without it the first up
// interface that is not loopback, else loopback.
Expected<SockAddr> chooseInterfaceAddress(const std::string& ifnameSpec);
// True when interface `name` matches the spec (exposed for tests).
bool interfaceMatches(const std::string& spec, const std::string& name);

// The local address the kernel would use to reach `dest` (no packet is sent).
Expected<SockAddr> localAddressToward(const SockAddr& dest);

// A listening socket on addr (port 0 picks one); *bound gets the real address.
Expected<int> listenOn(const SockAddr& addr, SockAddr* bound);
// Connects, retrying refused connections until the deadline. The socket is
// blocking, with TCP_NODELAY. Every wait here also ends when the deadline is
// cancelled.
Expected<int> connectTo(const SockAddr& addr, const Deadline& deadline);
// Accepts one connection before the deadline.
Expected<int> acceptBefore(int listenFd, const Deadline& deadline);

// Sends / receives exactly len bytes before the deadline. A closed connection
// is a remote error; `what` names the exchange in messages.
Status sendAll(int fd, const void* buf, size_t len, const Deadline& deadline, const char* what);
Status recvAll(int fd, void* buf, size_t len, const Deadline& deadline, const char* what);

void setNoDelay(int fd);
Status setNonBlocking(int fd, bool on);

}  // namespace braid
