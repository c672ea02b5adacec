#include "transports/ucx/ucx_transport.h"

#include <poll.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/logging.h"
#include "core/net.h"

namespace braid::transport::ucx {
namespace {

// Tags: bit 63 marks credit messages, bits 40..62 the sender's rank, 0..39
// the frame number (wraps after 2^40 frames, far beyond any window).
constexpr uint64_t kCreditBit = uint64_t{1} << 63;
constexpr int kRankShift = 40;
constexpr uint64_t kFrameMask = (uint64_t{1} << kRankShift) - 1;
constexpr uint32_t kMaxAddressBytes = 1u << 16;
constexpr uint64_t kCloseWaitNs = 2000000000ull;

Status ucxError(const std::string& what, ucs_status_t st) {
  return Status(braidSystemError, what + ": " + ucs_status_string(st));
}

uint64_t frameTag(int rank, uint64_t frame) {
  return (static_cast<uint64_t>(rank) << kRankShift) | (frame & kFrameMask);
}

// The UCP context and worker of one communicator; endpoints share it and
// keep it alive until the last of them is closed.
struct Worker {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  int eventFd = -1;
  ~Worker() {
    if (worker) ucp_worker_destroy(worker);
    if (context) ucp_cleanup(context);
  }
  void progress() {
    for (int i = 0; i < 64 && ucp_worker_progress(worker) != 0; ++i) {
    }
  }
};

Expected<std::shared_ptr<Worker>> makeWorker() {
  auto w = std::make_shared<Worker>();
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucxError("ucp_config_read (check the UCX_* variables)", st);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, config, &w->context);
  ucp_config_release(config);
  if (st != UCS_OK) return ucxError("ucp_init (no usable UCX transport? see UCX_TLS)", st);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  st = ucp_worker_create(w->context, &wp, &w->worker);
  if (st != UCS_OK) return ucxError("ucp_worker_create", st);
  if (ucp_worker_get_efd(w->worker, &w->eventFd) != UCS_OK) w->eventFd = -1;  // wait() polls
  return w;
}

class UcxEndpoint;

// One posted operation, named by the slot it uses.
struct Op {
  UcxEndpoint* owner = nullptr;
  void* request = nullptr;  // in flight while set
};

class UcxEndpoint : public Endpoint {
 public:
  UcxEndpoint(std::shared_ptr<Worker> w, int linkFd, int selfRank, int peerRank,
              const ConnectOptions& o, std::string peer)
      : w_(std::move(w)), linkFd_(linkFd), self_(selfRank), peerRank_(peerRank),
        slots_(o.slots), slice_(o.sliceBytes), peer_(std::move(peer)) {
    sendData_.assign(static_cast<size_t>(slots_) * slice_, 0);
    recvData_.assign(static_cast<size_t>(slots_) * slice_, 0);
    sizes_.assign(slots_, 0);
    sent_.assign(slots_, 0);
    received_.assign(slots_, 0);
    sendOps_.resize(slots_);
    recvOps_.resize(slots_);
    for (int i = 0; i < slots_; ++i) sendOps_[i].owner = recvOps_[i].owner = this;
    creditInOp_.owner = creditOutOp_.owner = this;
  }
  ~UcxEndpoint() override;

  // Creates the UCP endpoint to the peer's worker and posts the first receives.
  Status start(const std::vector<char>& peerAddress);

  void* sendSlot() override {
    if (!roomToSend()) {
      w_->progress();
      settle();
      if (!roomToSend()) return nullptr;
    }
    return sendData_.data() + (sendHead_ % slots_) * slice_;
  }
  Status sendPost(size_t bytes) override;
  const void* recvSlot(size_t* bytes) override {
    if (recvTail_ == recvHead_) {
      w_->progress();
      settle();
      if (recvTail_ == recvHead_) return nullptr;
    }
    *bytes = sizes_[recvTail_ % slots_];
    return recvData_.data() + (recvTail_ % slots_) * slice_;
  }
  void recvRelease() override {
    ++recvTail_;
    postRecvs();
    if (recvTail_ - creditSent_ >= static_cast<uint64_t>(std::max(1, slots_ / 2))) sendCredit();
  }
  Status progress() override {
    w_->progress();
    settle();
    return error_;
  }
  bool sendPending() const override { return sendTail_ != sendHead_; }
  int pollFd() const override { return -1; }  // wait() arms the worker's event fd itself
  void wait(bool wantRecv, bool wantSend, int timeoutUs) override;

 private:
  static void onSend(void* request, ucs_status_t st, void* user);
  static void onRecv(void* request, ucs_status_t st, const ucp_tag_recv_info_t* info, void* user);
  static void onCredit(void* request, ucs_status_t st, const ucp_tag_recv_info_t* info, void* user);
  static void onPeerError(void* arg, ucp_ep_h ep, ucs_status_t st);

  bool roomToSend() const {
    return sendHead_ - sendTail_ < static_cast<uint64_t>(slots_) &&
           sendHead_ - peerReleased_ < static_cast<uint64_t>(slots_);
  }
  void fail(const std::string& what, ucs_status_t st) {
    if (error_.isOk()) {
      error_ = Status(braidRemoteError, "ucx to " + peer_ + ": " + what + ": " +
                                            ucs_status_string(st));
    }
  }
  void settle();
  void postRecv(void* buf, size_t len, uint64_t tag, Op& op, ucp_tag_recv_nbx_callback_t cb);
  void postRecvs();
  void postCreditRecv();
  void sendCredit();
  void closeEndpoint();

  std::shared_ptr<Worker> w_;
  int linkFd_;
  const int self_;
  const int peerRank_;
  const int slots_;
  const size_t slice_;
  std::string peer_;
  ucp_ep_h ep_ = nullptr;
  std::vector<char> sendData_;
  std::vector<char> recvData_;
  std::vector<uint32_t> sizes_;    // by slot: bytes of the received frame
  std::vector<uint8_t> sent_;      // by slot: UCX is done with the frame's buffer
  std::vector<uint8_t> received_;  // by slot: the frame has landed
  std::vector<Op> sendOps_;
  std::vector<Op> recvOps_;
  uint64_t sendHead_ = 0, sendTail_ = 0;
  uint64_t recvHead_ = 0, recvTail_ = 0, recvPosted_ = 0;
  // Flow control: the sender may run at most `slots` frames ahead of what the
  // receiver released, so every frame meets a posted receive and nothing
  // piles up in UCX's unexpected queue.
  uint64_t peerReleased_ = 0;  // from the peer's last credit
  uint64_t creditSent_ = 0;    // recvTail_ in our last credit
  uint64_t creditOut_ = 0, creditIn_ = 0;
  Op creditOutOp_, creditInOp_;
  bool creditInDone_ = false;
  Status error_;
};

void UcxEndpoint::onSend(void* request, ucs_status_t st, void* user) {
  Op* op = static_cast<Op*>(user);
  UcxEndpoint* e = op->owner;
  if (op != &e->creditOutOp_) e->sent_[op - e->sendOps_.data()] = 1;
  if (st != UCS_OK) e->fail("send", st);
  op->request = nullptr;
  ucp_request_free(request);
}

void UcxEndpoint::onRecv(void* request, ucs_status_t st, const ucp_tag_recv_info_t* info,
                         void* user) {
  Op* op = static_cast<Op*>(user);
  UcxEndpoint* e = op->owner;
  size_t slot = static_cast<size_t>(op - e->recvOps_.data());
  if (st == UCS_OK) {
    e->sizes_[slot] = static_cast<uint32_t>(info->length);
    e->received_[slot] = 1;
  } else if (st != UCS_ERR_CANCELED) {
    e->fail("receive", st);
  }
  op->request = nullptr;
  if (request) ucp_request_free(request);
}

void UcxEndpoint::onCredit(void* request, ucs_status_t st, const ucp_tag_recv_info_t*,
                           void* user) {
  Op* op = static_cast<Op*>(user);
  UcxEndpoint* e = op->owner;
  if (st == UCS_OK) {
    e->peerReleased_ = std::max(e->peerReleased_, e->creditIn_);
    e->creditInDone_ = true;
  } else if (st != UCS_ERR_CANCELED) {
    e->fail("credit receive", st);
  }
  op->request = nullptr;
  if (request) ucp_request_free(request);
}

void UcxEndpoint::onPeerError(void* arg, ucp_ep_h, ucs_status_t st) {
  static_cast<UcxEndpoint*>(arg)->fail("connection lost", st);
}

Status UcxEndpoint::start(const std::vector<char>& peerAddress) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t*>(peerAddress.data());
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = &UcxEndpoint::onPeerError;
  p.err_handler.arg = this;
  ucs_status_t st = ucp_ep_create(w_->worker, &p, &ep_);
  if (st != UCS_OK) return ucxError("ucp_ep_create to " + peer_, st);
  postRecvs();
  postCreditRecv();
  return error_;
}

// Moves completed sends and receives to the ring's counters.
void UcxEndpoint::settle() {
  while (sendTail_ != sendHead_ && sent_[sendTail_ % slots_]) {
    sent_[sendTail_ % slots_] = 0;
    ++sendTail_;
  }
  while (recvHead_ != recvPosted_ && received_[recvHead_ % slots_]) {
    received_[recvHead_ % slots_] = 0;
    ++recvHead_;
  }
  if (creditInDone_) {
    creditInDone_ = false;
    postCreditRecv();
  }
  if (recvTail_ == recvHead_ && recvTail_ != creditSent_) sendCredit();  // owed, and idle
}

// Posts a tagged receive whose completion, immediate or later, goes to cb.
void UcxEndpoint::postRecv(void* buf, size_t len, uint64_t tag, Op& op,
                           ucp_tag_recv_nbx_callback_t cb) {
  ucp_tag_recv_info_t info{};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_RECV_INFO;
  p.cb.recv = cb;
  p.user_data = &op;
  p.recv_info.tag_info = &info;
  ucs_status_ptr_t r = ucp_tag_recv_nbx(w_->worker, buf, len, tag, ~uint64_t{0}, &p);
  if (UCS_PTR_IS_ERR(r)) {
    fail("posting a receive", UCS_PTR_STATUS(r));
  } else if (r == nullptr) {
    cb(nullptr, UCS_OK, &info, &op);
  } else {
    op.request = r;
  }
}

void UcxEndpoint::postRecvs() {
  while (error_.isOk() && recvPosted_ < recvTail_ + static_cast<uint64_t>(slots_)) {
    const size_t slot = recvPosted_ % slots_;
    const uint64_t tag = frameTag(peerRank_, recvPosted_++);
    postRecv(recvData_.data() + slot * slice_, slice_, tag, recvOps_[slot], &UcxEndpoint::onRecv);
  }
}

void UcxEndpoint::postCreditRecv() {
  postRecv(&creditIn_, sizeof(creditIn_), kCreditBit | frameTag(peerRank_, 0), creditInOp_,
           &UcxEndpoint::onCredit);
}

void UcxEndpoint::sendCredit() {
  if (creditOutOp_.request != nullptr || !error_.isOk()) return;  // the next one carries it
  creditOut_ = recvTail_;
  creditSent_ = recvTail_;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &UcxEndpoint::onSend;
  p.user_data = &creditOutOp_;
  ucs_status_ptr_t r = ucp_tag_send_nbx(ep_, &creditOut_, sizeof(creditOut_),
                                        kCreditBit | frameTag(self_, 0), &p);
  if (UCS_PTR_IS_ERR(r)) {
    fail("sending a credit", UCS_PTR_STATUS(r));
  } else if (r != nullptr) {
    creditOutOp_.request = r;
  }
}

Status UcxEndpoint::sendPost(size_t bytes) {
  BRAID_TRY(error_);
  const size_t slot = sendHead_ % slots_;
  Op& op = sendOps_[slot];
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = &UcxEndpoint::onSend;
  p.user_data = &op;
  ucs_status_ptr_t r = ucp_tag_send_nbx(ep_, sendData_.data() + slot * slice_, bytes,
                                        frameTag(self_, sendHead_), &p);
  ++sendHead_;
  if (UCS_PTR_IS_ERR(r)) {
    fail("send of frame " + std::to_string(sendHead_ - 1), UCS_PTR_STATUS(r));
  } else if (r == nullptr) {
    sent_[slot] = 1;
  } else {
    op.request = r;
  }
  settle();
  return error_;
}

void UcxEndpoint::wait(bool wantRecv, bool wantSend, int timeoutUs) {
  (void)wantRecv;
  (void)wantSend;
  if (ucp_worker_progress(w_->worker) != 0 || w_->eventFd < 0) return;
  if (ucp_worker_arm(w_->worker) != UCS_OK) return;  // busy: events are waiting
  // Some UCX transports make progress that no descriptor announces (a send
  // parked in the pending queue), so a sleep is kept short.
  pollfd p{w_->eventFd, POLLIN, 0};
  poll(&p, 1, std::min(1, (timeoutUs + 999) / 1000));
}

// Cancels posted receives and closes the UCP endpoint, flushing sends the
// peer may still read; a peer that is gone cannot hold this up for long.
void UcxEndpoint::closeEndpoint() {
  for (Op& op : recvOps_) {
    if (op.request) ucp_request_cancel(w_->worker, op.request);
  }
  if (creditInOp_.request) ucp_request_cancel(w_->worker, creditInOp_.request);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = error_.isOk() ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t r = ucp_ep_close_nbx(ep_, &p);
  const uint64_t until = nowNs() + kCloseWaitNs;
  while (UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS && nowNs() < until) {
    ucp_worker_progress(w_->worker);
  }
  if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);
  // Requests still in flight call back into this object: let them finish.
  auto busy = [&] {
    for (const Op& op : sendOps_) if (op.request) return true;
    for (const Op& op : recvOps_) if (op.request) return true;
    return creditInOp_.request != nullptr || creditOutOp_.request != nullptr;
  };
  while (busy() && nowNs() < until) ucp_worker_progress(w_->worker);
  if (busy()) BRAID_WARN("ucx to %s: requests still in flight at close", peer_.c_str());
}

UcxEndpoint::~UcxEndpoint() {
  if (ep_) closeEndpoint();
  close(linkFd_);
}

class UcxTransport : public Transport {
 public:
  const char* name() const override { return "ucx"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  Expected<std::unique_ptr<Endpoint>> connect(int linkFd, const PeerInfo& self,
                                              const PeerInfo& peer, const ConnectOptions& o,
                                              const Deadline& deadline) override;

 private:
  std::shared_ptr<Worker> worker_;
};

// Sends our worker address over the link and reads the peer's.
Expected<std::vector<char>> swapAddresses(int linkFd, Worker& w, const Deadline& deadline) {
  ucp_address_t* mine = nullptr;
  size_t mineLen = 0;
  ucs_status_t st = ucp_worker_get_address(w.worker, &mine, &mineLen);
  if (st != UCS_OK) return ucxError("ucp_worker_get_address", st);
  uint32_t len = static_cast<uint32_t>(mineLen);
  Status s = sendAll(linkFd, &len, sizeof(len), deadline, "ucx worker address");
  if (s.isOk()) s = sendAll(linkFd, mine, mineLen, deadline, "ucx worker address");
  ucp_worker_release_address(w.worker, mine);
  BRAID_TRY(s);
  BRAID_TRY(recvAll(linkFd, &len, sizeof(len), deadline, "ucx worker address"));
  if (len == 0 || len > kMaxAddressBytes) return remoteError("malformed ucx worker address");
  std::vector<char> theirs(len);
  BRAID_TRY(recvAll(linkFd, theirs.data(), len, deadline, "ucx worker address"));
  return theirs;
}

Expected<std::unique_ptr<Endpoint>> UcxTransport::connect(int linkFd, const PeerInfo& self,
                                                          const PeerInfo& peer,
                                                          const ConnectOptions& o,
                                                          const Deadline& deadline) {
  std::string who = "rank " + std::to_string(peer.rank) + " (" + peer.hostName + ")";
  if (!worker_) {
    Expected<std::shared_ptr<Worker>> w = makeWorker();
    if (!w.isOk()) {
      close(linkFd);
      return w.status();
    }
    worker_ = std::move(w).value();
  }
  Expected<std::vector<char>> address = swapAddresses(linkFd, *worker_, deadline);
  if (!address.isOk()) {
    close(linkFd);
    return address.status();
  }
  auto ep = std::make_unique<UcxEndpoint>(worker_, linkFd, self.rank, peer.rank, o, who);
  BRAID_TRY(ep->start(address.value()));
  // Both sides have an endpoint before either sends: one byte each way.
  char mark = 'u';
  BRAID_TRY(sendAll(linkFd, &mark, 1, deadline, "ucx ready mark"));
  BRAID_TRY(recvAll(linkFd, &mark, 1, deadline, "ucx ready mark"));
  return std::unique_ptr<Endpoint>(std::move(ep));
}

}  // namespace

std::unique_ptr<Transport> makeUcxTransport() { return std::make_unique<UcxTransport>(); }

}  // namespace braid::transport::ucx
