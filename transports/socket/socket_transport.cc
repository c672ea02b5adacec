#include "transports/socket/socket_transport.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace braid::transport::socket {
namespace {

constexpr uint32_t kFrameMagic = 0x42524652;  // "BRFR"

struct FrameHeader {
  uint32_t magic;
  uint32_t bytes;
};

// A ring of `slots` slot buffers of sliceBytes each, with their sizes.
struct SlotRing {
  std::vector<char> data;
  std::vector<uint32_t> sizes;
  void init(int slots, size_t slice) {
    data.assign(static_cast<size_t>(slots) * slice, 0);
    sizes.assign(slots, 0);
  }
};

class SocketEndpoint : public Endpoint {
 public:
  SocketEndpoint(int fd, const ConnectOptions& o, std::string peer)
      : fd_(fd), slots_(o.slots), slice_(o.sliceBytes), peer_(std::move(peer)) {
    send_.init(slots_, slice_);
    recv_.init(slots_, slice_);
  }
  ~SocketEndpoint() override { close(fd_); }

  void* sendSlot() override {
    if (sendHead_ - sendTail_ >= static_cast<uint64_t>(slots_)) {
      (void)progressSend();
      if (sendHead_ - sendTail_ >= static_cast<uint64_t>(slots_)) return nullptr;
    }
    return slot(send_, sendHead_);
  }

  Status sendPost(size_t bytes) override {
    send_.sizes[sendHead_ % slots_] = static_cast<uint32_t>(bytes);
    ++sendHead_;
    return progressSend();
  }

  const void* recvSlot(size_t* bytes) override {
    if (recvTail_ == recvHead_) {
      (void)progressRecv();  // an error stays in error_ for progress() to report
      if (recvTail_ == recvHead_) return nullptr;
    }
    *bytes = recv_.sizes[recvTail_ % slots_];
    return slot(recv_, recvTail_);
  }

  void recvRelease() override { ++recvTail_; }

  Status progress() override {
    BRAID_TRY(progressSend());
    BRAID_TRY(progressRecv());
    // The peer closing is only an error once we wait for data it never sent.
    if (closed_ && recvTail_ == recvHead_) {
      return error_ = Status(braidRemoteError,
                             "socket to " + peer_ + ": connection closed by the peer");
    }
    return Status::ok();
  }
  bool sendPending() const override { return sendTail_ != sendHead_; }
  int pollFd() const override { return fd_; }

  void wait(bool wantRecv, bool wantSend, int timeoutUs) override {
    pollfd p{fd_, 0, 0};
    if (wantRecv) p.events |= POLLIN;
    if (sendPending()) p.events |= POLLOUT;
    if (p.events == 0) return;
    poll(&p, 1, (timeoutUs + 999) / 1000);
  }

 private:
  char* slot(SlotRing& ring, uint64_t index) {
    return ring.data.data() + (index % slots_) * slice_;
  }
  Status broken(const char* what, int err) {
    return Status(braidRemoteError, "socket to " + peer_ + ": " + what + ": " +
                                        std::strerror(err));
  }
  Status progressSend();
  Status progressRecv();

  int fd_;
  const int slots_;
  const size_t slice_;
  std::string peer_;
  SlotRing send_;
  SlotRing recv_;
  uint64_t sendHead_ = 0;  // posted
  uint64_t sendTail_ = 0;  // fully written to the kernel
  size_t sendDone_ = 0;    // bytes of the tail frame (header + payload) written
  uint64_t recvHead_ = 0;  // fully received
  uint64_t recvTail_ = 0;  // released
  size_t recvDone_ = 0;    // bytes of the head frame received
  FrameHeader recvHeader_{};
  bool closed_ = false;  // the peer shut its side; buffered frames remain
  Status error_;
};

Status SocketEndpoint::progressSend() {
  if (!error_.isOk()) return error_;
  while (sendTail_ != sendHead_) {
    FrameHeader h{kFrameMagic, send_.sizes[sendTail_ % slots_]};
    size_t total = sizeof(h) + h.bytes;
    iovec iov[2];
    int n = 0;
    if (sendDone_ < sizeof(h)) {
      iov[n++] = {reinterpret_cast<char*>(&h) + sendDone_, sizeof(h) - sendDone_};
      iov[n++] = {slot(send_, sendTail_), h.bytes};
    } else {
      iov[n++] = {slot(send_, sendTail_) + (sendDone_ - sizeof(h)), total - sendDone_};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t w = sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
      return error_ = broken("send", errno);
    }
    sendDone_ += static_cast<size_t>(w);
    if (sendDone_ < total) return Status::ok();
    sendDone_ = 0;
    ++sendTail_;
  }
  return Status::ok();
}

Status SocketEndpoint::progressRecv() {
  if (!error_.isOk()) return error_;
  if (closed_) return Status::ok();
  while (recvHead_ - recvTail_ < static_cast<uint64_t>(slots_)) {
    ssize_t r;
    if (recvDone_ < sizeof(FrameHeader)) {
      r = recv(fd_, reinterpret_cast<char*>(&recvHeader_) + recvDone_,
               sizeof(FrameHeader) - recvDone_, MSG_DONTWAIT);
    } else {
      size_t got = recvDone_ - sizeof(FrameHeader);
      r = recv(fd_, slot(recv_, recvHead_) + got, recvHeader_.bytes - got, MSG_DONTWAIT);
    }
    if (r == 0) {
      closed_ = true;  // frames already received stay readable
      return Status::ok();
    }
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
      return error_ = broken("recv", errno);
    }
    recvDone_ += static_cast<size_t>(r);
    if (recvDone_ == sizeof(FrameHeader)) {
      if (recvHeader_.magic != kFrameMagic || recvHeader_.bytes > slice_) {
        return error_ = Status(braidRemoteError, "socket to " + peer_ +
                                                     ": malformed frame header (corrupt stream)");
      }
    }
    if (recvDone_ >= sizeof(FrameHeader) &&
        recvDone_ == sizeof(FrameHeader) + recvHeader_.bytes) {
      recv_.sizes[recvHead_ % slots_] = recvHeader_.bytes;
      ++recvHead_;
      recvDone_ = 0;
    }
  }
  return Status::ok();
}

class SocketTransport : public Transport {
 public:
  const char* name() const override { return "socket"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  Expected<std::unique_ptr<Endpoint>> connect(int linkFd, const PeerInfo& self,
                                              const PeerInfo& peer, const ConnectOptions& o,
                                              const Deadline& deadline) override {
    int size = 4 << 20;
    setsockopt(linkFd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    setsockopt(linkFd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    setNoDelay(linkFd);
    Status st = setNonBlocking(linkFd, true);
    if (!st.isOk()) {
      close(linkFd);
      return st;
    }
    std::string who = "rank " + std::to_string(peer.rank) + " (" + peer.listenAddr.toString() + ")";
    return std::unique_ptr<Endpoint>(new SocketEndpoint(linkFd, o, who));
  }
};

}  // namespace

std::unique_ptr<Transport> makeSocketTransport() { return std::make_unique<SocketTransport>(); }

}  // namespace braid::transport::socket
