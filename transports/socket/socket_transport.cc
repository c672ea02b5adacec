#include "transports/socket/socket_transport.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/env.h"
#include "core/logging.h"
#include "transports/socket/socket_streams.h"
#include "transports/socket/socket_wire.h"

namespace braid::transport::socket {
namespace {

constexpr uint32_t kUnregistered = ~0u;  // a stream not in the epoll set

// A ring of `slots` slot buffers of sliceBytes each, with their sizes.
struct SlotRing {
  std::vector<char> data;
  std::vector<uint32_t> sizes;
  void init(int slots, size_t slice) {
    data.assign(static_cast<size_t>(slots) * slice, 0);
    sizes.assign(slots, 0);
  }
};

// Where one stream stands in the frames it carries (k, k + n, k + 2n, ...).
struct StreamState {
  uint64_t frame = 0;      // the frame it sends or receives next
  size_t done = 0;         // bytes of that frame (header + payload) moved
  FrameHeader header{};    // receive side: the header being read
  bool closed = false;     // receive side: the peer shut this stream
  uint32_t interest = 0;   // epoll events registered for it
};

class SocketEndpoint : public Endpoint {
 public:
  SocketEndpoint(std::vector<int> fds, int epollFd, const ConnectOptions& o, std::string peer)
      : fds_(std::move(fds)),
        epollFd_(epollFd),
        slots_(o.slots),
        slice_(o.sliceBytes),
        peer_(std::move(peer)) {
    send_.init(slots_, slice_);
    recv_.init(slots_, slice_);
    sent_.assign(slots_, 0);
    received_.assign(slots_, 0);
    const int n = static_cast<int>(fds_.size());
    sendStreams_.resize(n);
    recvStreams_.resize(n);
    for (int s = 0; s < n; ++s) {
      sendStreams_[s].frame = recvStreams_[s].frame = static_cast<uint64_t>(s);
      recvStreams_[s].interest = EPOLLIN;  // as registered by connect()
    }
  }
  ~SocketEndpoint() override {
    for (int fd : fds_) close(fd);
    if (epollFd_ >= 0) close(epollFd_);
  }

  void* sendSlot() override {
    if (sendHead_ - sendTail_ >= static_cast<uint64_t>(slots_)) {
      (void)progressSend();  // an error stays in error_ for progress() to report
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
      (void)progressRecv();
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
    if (recvTail_ == recvHead_ && recvStreams_[recvHead_ % fds_.size()].closed) {
      return error_ = Status(braidRemoteError,
                             "socket to " + peer_ + ": connection closed by the peer");
    }
    syncInterest();
    return Status::ok();
  }
  bool sendPending() const override { return sendTail_ != sendHead_; }
  int pollFd() const override { return epollFd_ >= 0 ? epollFd_ : fds_[0]; }
  void wait(bool wantRecv, bool wantSend, int timeoutUs) override;

 private:
  char* slot(SlotRing& ring, uint64_t index) {
    return ring.data.data() + (index % slots_) * slice_;
  }
  bool recvRoom(const StreamState& s) const {
    return !s.closed && s.frame - recvTail_ < static_cast<uint64_t>(slots_);
  }
  Status broken(const char* what, size_t stream, int err) {
    return Status(braidRemoteError, "socket to " + peer_ + " (stream " + std::to_string(stream) +
                                        " of " + std::to_string(fds_.size()) + "): " + what +
                                        ": " + std::strerror(err));
  }
  Status progressSend();
  Status progressRecv();
  Status sendStream(size_t s);
  Status recvStream(size_t s);
  void syncInterest();

  std::vector<int> fds_;
  int epollFd_;  // -1 with a single stream
  const int slots_;
  const size_t slice_;
  std::string peer_;
  SlotRing send_;
  SlotRing recv_;
  std::vector<uint8_t> sent_;      // by slot: its frame is fully written
  std::vector<uint8_t> received_;  // by slot: its frame has fully arrived
  std::vector<StreamState> sendStreams_;
  std::vector<StreamState> recvStreams_;
  uint64_t sendHead_ = 0;  // posted
  uint64_t sendTail_ = 0;  // every earlier frame fully written to the kernel
  uint64_t recvHead_ = 0;  // every earlier frame fully received
  uint64_t recvTail_ = 0;  // released
  Status error_;
};

Status SocketEndpoint::progressSend() {
  if (!error_.isOk()) return error_;
  for (size_t s = 0; s < fds_.size(); ++s) BRAID_TRY(sendStream(s));
  while (sendTail_ != sendHead_ && sent_[sendTail_ % slots_]) {
    sent_[sendTail_ % slots_] = 0;
    ++sendTail_;
  }
  return Status::ok();
}

Status SocketEndpoint::sendStream(size_t s) {
  StreamState& st = sendStreams_[s];
  while (st.frame < sendHead_) {
    FrameHeader h{kFrameMagic, send_.sizes[st.frame % slots_]};
    size_t total = sizeof(h) + h.bytes;
    iovec iov[2];
    int n = 0;
    if (st.done < sizeof(h)) {
      iov[n++] = {reinterpret_cast<char*>(&h) + st.done, sizeof(h) - st.done};
      iov[n++] = {slot(send_, st.frame), h.bytes};
    } else {
      iov[n++] = {slot(send_, st.frame) + (st.done - sizeof(h)), total - st.done};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t w = sendmsg(fds_[s], &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
      return error_ = broken("send", s, errno);
    }
    st.done += static_cast<size_t>(w);
    if (st.done < total) return Status::ok();  // the kernel's buffer is full
    st.done = 0;
    sent_[st.frame % slots_] = 1;
    st.frame += fds_.size();
  }
  return Status::ok();
}

Status SocketEndpoint::progressRecv() {
  if (!error_.isOk()) return error_;
  for (size_t s = 0; s < fds_.size(); ++s) BRAID_TRY(recvStream(s));
  while (received_[recvHead_ % slots_] && recvHead_ - recvTail_ < static_cast<uint64_t>(slots_)) {
    received_[recvHead_ % slots_] = 0;
    ++recvHead_;
  }
  return Status::ok();
}

Status SocketEndpoint::recvStream(size_t s) {
  StreamState& st = recvStreams_[s];
  while (recvRoom(st)) {
    ssize_t r;
    if (st.done < sizeof(FrameHeader)) {
      r = recv(fds_[s], reinterpret_cast<char*>(&st.header) + st.done,
               sizeof(FrameHeader) - st.done, MSG_DONTWAIT);
    } else {
      size_t got = st.done - sizeof(FrameHeader);
      r = recv(fds_[s], slot(recv_, st.frame) + got, st.header.bytes - got, MSG_DONTWAIT);
    }
    if (r == 0) {
      st.closed = true;  // frames already received stay readable
      return Status::ok();
    }
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::ok();
      return error_ = broken("recv", s, errno);
    }
    st.done += static_cast<size_t>(r);
    if (st.done == sizeof(FrameHeader)) {
      Expected<uint32_t> bytes = parseFrameHeader(&st.header, sizeof(st.header), slice_);
      if (!bytes.isOk()) {
        return error_ = bytes.status().withContext("socket to " + peer_ + " (stream " +
                                                   std::to_string(s) + "): ");
      }
    }
    if (st.done >= sizeof(FrameHeader) && st.done == sizeof(FrameHeader) + st.header.bytes) {
      recv_.sizes[st.frame % slots_] = st.header.bytes;
      received_[st.frame % slots_] = 1;
      st.frame += fds_.size();
      st.done = 0;
    }
  }
  return Status::ok();
}

// Registers with epoll only what progress could act on: readable streams
// whose next frame has a free slot, writable streams with frames to write.
// Small messages never change either, so they cost no epoll_ctl.
void SocketEndpoint::syncInterest() {
  if (epollFd_ < 0) return;
  for (size_t s = 0; s < fds_.size(); ++s) {
    uint32_t want = 0;
    if (recvRoom(recvStreams_[s])) want |= EPOLLIN;
    if (sendStreams_[s].frame < sendHead_) want |= EPOLLOUT;
    uint32_t& have = recvStreams_[s].interest;
    // A stream the peer closed keeps reporting hang-up: it leaves the set.
    if (recvStreams_[s].closed && !(want & EPOLLOUT)) want = kUnregistered;
    if (want == have) continue;
    epoll_event ev{};
    ev.events = want;
    ev.data.u32 = static_cast<uint32_t>(s);
    int op = want == kUnregistered ? EPOLL_CTL_DEL
             : have == kUnregistered ? EPOLL_CTL_ADD
                                     : EPOLL_CTL_MOD;
    if (epoll_ctl(epollFd_, op, fds_[s], &ev) == 0) have = want;
  }
}

void SocketEndpoint::wait(bool wantRecv, bool wantSend, int timeoutUs) {
  (void)wantSend;  // queued sends are always waited on: they need the kernel's room
  pollfd p[kMaxStreams];
  nfds_t n = 0;
  for (size_t s = 0; s < fds_.size(); ++s) {
    short ev = 0;
    if (wantRecv && recvRoom(recvStreams_[s])) ev |= POLLIN;
    if (sendStreams_[s].frame < sendHead_) ev |= POLLOUT;
    if (ev != 0) p[n++] = {fds_[s], ev, 0};
  }
  if (n > 0) poll(p, n, (timeoutUs + 999) / 1000);
}

class SocketTransport : public Transport {
 public:
  const char* name() const override { return "socket"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  Expected<std::unique_ptr<Endpoint>> connect(int linkFd, const PeerInfo& self,
                                              const PeerInfo& peer, const ConnectOptions& o,
                                              const Deadline& deadline) override;
};

Expected<std::unique_ptr<Endpoint>> SocketTransport::connect(int linkFd, const PeerInfo& self,
                                                             const PeerInfo& peer,
                                                             const ConnectOptions& o,
                                                             const Deadline& deadline) {
  std::string who = "rank " + std::to_string(peer.rank) + " (" + peer.listenAddr.toString() + ")";
  BRAID_ASSIGN_OR_RETURN(std::vector<int> fds,
                         openStreams(linkFd, self.rank < peer.rank, wantedStreams(self, peer),
                                     deadline, who));
  const int bufBytes = static_cast<int>(envInt("BRAID_SOCKET_BUF_BYTES", 4 << 20));
  int epollFd = -1;
  Status st;
  if (fds.size() > 1) {
    epollFd = epoll_create1(EPOLL_CLOEXEC);
    if (epollFd < 0) st = systemError("epoll_create1 (socket streams to " + who + ")");
  }
  for (size_t s = 0; s < fds.size() && st.isOk(); ++s) {
    setStreamBuffers(fds[s], bufBytes);
    setNoDelay(fds[s]);
    st = setNonBlocking(fds[s], true);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(s);
    if (st.isOk() && epollFd >= 0 && epoll_ctl(epollFd, EPOLL_CTL_ADD, fds[s], &ev) != 0) {
      st = systemError("epoll_ctl (socket streams to " + who + ")");
    }
  }
  if (!st.isOk()) {
    for (int fd : fds) close(fd);
    if (epollFd >= 0) close(epollFd);
    return st;
  }
  BRAID_INFO("socket to %s: %zu stream(s)", who.c_str(), fds.size());
  return std::unique_ptr<Endpoint>(new SocketEndpoint(std::move(fds), epollFd, o, who));
}

}  // namespace

std::unique_ptr<Transport> makeSocketTransport() { return std::make_unique<SocketTransport>(); }

}  // namespace braid::transport::socket
