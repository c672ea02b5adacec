#include "transports/ibverbs/ibverbs_transport.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/env.h"
#include "core/logging.h"
#include "core/net.h"
#include "transports/ibverbs/ib_logic.h"

namespace braid::transport::ibverbs {
namespace {

constexpr uint64_t kCtsWr = uint64_t{1} << 63;  // wr_id marks: clear-to-send writes
constexpr size_t kMrCacheEntries = 64;

const char* qpStateName(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "UNKNOWN";
  }
}

// The opened port every endpoint of a communicator uses.
struct Device {
  std::string name;
  int port = 1;
  int gidIndex = 0;
  ibv_port_attr portAttr{};
  ibv_gid gid{};
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  std::unique_ptr<MrCache> mrs;

  std::string where() const { return name + ":" + std::to_string(port); }
  ~Device() {
    mrs.reset();
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
  }
};

GidType gidType(ibv_context* ctx, int port, int index, bool ethernet) {
  if (!ethernet) return GidType::kIb;
  // rdma-core exposes the type in sysfs; RoCE v2 is what routes over IP.
  std::string path = std::string("/sys/class/infiniband/") + ibv_get_device_name(ctx->device) +
                     "/ports/" + std::to_string(port) + "/gid_attrs/types/" +
                     std::to_string(index);
  char buf[32] = {};
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return GidType::kRoceV1;
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  return n > 0 && std::strstr(buf, "v2") != nullptr ? GidType::kRoceV2 : GidType::kRoceV1;
}

// Opens the first active port that BRAID_IB_HCA allows, `preferred` (the device
// nearest the rank's GPU) tried first; an error says why none was usable.
Expected<std::unique_ptr<Device>> openDevice(const std::string& preferred) {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr || count == 0) {
    if (list) ibv_free_device_list(list);
    return invalidUsage("no RDMA device (ibv_get_device_list found none)");
  }
  const std::string spec = envString("BRAID_IB_HCA");
  const int forcedGid = static_cast<int>(envInt("BRAID_IB_GID_INDEX", -1));
  std::vector<std::string> names;
  for (int d = 0; d < count; ++d) names.push_back(ibv_get_device_name(list[d]));
  std::string tried;
  std::unique_ptr<Device> found;
  for (int d : hcaOrder(names, preferred, spec)) {
    if (found) break;
    ibv_context* ctx = ibv_open_device(list[d]);
    if (ctx == nullptr) continue;
    ibv_device_attr attr{};
    bool kept = false;
    for (int p = 1; ibv_query_device(ctx, &attr) == 0 && p <= attr.phys_port_cnt && !kept; ++p) {
      const std::string name = ibv_get_device_name(list[d]);
      ibv_port_attr pa{};
      if (!hcaAllowed(spec, name, p) || ibv_query_port(ctx, p, &pa) != 0) continue;
      tried += " " + name + ":" + std::to_string(p);
      if (pa.state != IBV_PORT_ACTIVE) continue;
      const bool eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
      std::vector<GidInfo> gids;
      for (int i = 0; i < pa.gid_tbl_len; ++i) {
        ibv_gid g{};
        if (ibv_query_gid(ctx, p, i, &g) != 0) continue;
        GidInfo info;
        info.index = i;
        info.type = gidType(ctx, p, i, eth);
        std::memcpy(info.raw, g.raw, 16);
        gids.push_back(info);
      }
      int gi = chooseGidIndex(gids, eth, forcedGid);
      if (gi < 0) continue;
      found = std::make_unique<Device>();
      found->name = name;
      found->port = p;
      found->gidIndex = gi;
      found->portAttr = pa;
      ibv_query_gid(ctx, p, gi, &found->gid);
      found->ctx = ctx;
      kept = true;
    }
    if (!kept) ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  if (!found) {
    return invalidUsage("no active RDMA port with a usable GID among" +
                        (tried.empty() ? std::string(" (none allowed)") : tried) +
                        " (BRAID_IB_HCA, BRAID_IB_GID_INDEX)");
  }
  found->pd = ibv_alloc_pd(found->ctx);
  if (found->pd == nullptr) return systemError("ibv_alloc_pd on " + found->where());
  ibv_pd* pd = found->pd;
  found->mrs = std::make_unique<MrCache>(
      [pd, where = found->where()](uintptr_t base, size_t len) -> Expected<MrHandle> {
        ibv_mr* mr = ibv_reg_mr(pd, reinterpret_cast<void*>(base), len,
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (mr == nullptr) {
          return systemError("ibv_reg_mr of " + std::to_string(len) + " bytes on " + where +
                             " (is the locked-memory limit, ulimit -l, too low?)");
        }
        return MrHandle{base, len, mr->lkey, mr->rkey, mr};
      },
      [](const MrHandle& mr) { ibv_dereg_mr(static_cast<ibv_mr*>(mr.opaque)); },
      kMrCacheEntries);
  return found;
}

// What each side tells the other over the link (wire format).
struct QpInfo {
  uint32_t qpn;
  uint32_t psn;
  uint16_t lid;
  uint8_t mtu;
  uint8_t pad;
  uint8_t gid[16];
  uint64_t recvAddr;  // this side's receive ring
  uint32_t recvRkey;
  uint32_t ctsRkey;
  uint64_t ctsAddr;   // this side's clear-to-send FIFO (written by the peer)
};

class IbEndpoint : public Endpoint {
 public:
  IbEndpoint(std::shared_ptr<Device> dev, int linkFd, const ConnectOptions& o, std::string peer)
      : dev_(std::move(dev)), linkFd_(linkFd), slots_(o.slots), slice_(o.sliceBytes),
        peer_(std::move(peer)), sendRing_(slots_ * slice_), recvRing_(slots_ * slice_),
        cts_(slots_), ctsOut_(slots_), fifo_(cts_.data(), slots_) {}
  ~IbEndpoint() override;

  Status setUp(const Deadline& deadline);

  void* sendSlot() override {
    if (sendHead_ - sendTail_ >= static_cast<uint64_t>(slots_)) {
      (void)progress();
      if (sendHead_ - sendTail_ >= static_cast<uint64_t>(slots_)) return nullptr;
    }
    return sendRing_.data() + (sendHead_ % slots_) * slice_;
  }
  Status sendPost(size_t bytes) override {
    sendBytes_.resize(slots_);
    sendBytes_[sendHead_ % slots_] = static_cast<uint32_t>(bytes);
    ++sendHead_;
    return progress();
  }
  const void* recvSlot(size_t* bytes) override {
    if (recvTail_ == recvHead_) {
      (void)progress();
      if (recvTail_ == recvHead_) return nullptr;
    }
    *bytes = recvBytes_[recvTail_ % slots_];
    return recvRing_.data() + (recvTail_ % slots_) * slice_;
  }
  void recvRelease() override {
    ++recvTail_;
    Status st = postReceiveAndCts(recvTail_ - 1 + slots_);
    if (!st.isOk() && error_.isOk()) error_ = st;
  }
  Status progress() override;
  bool sendPending() const override { return sendTail_ != sendHead_; }
  int pollFd() const override { return -1; }
  void wait(bool, bool, int timeoutUs) override {
    (void)progress();
    usleep(static_cast<useconds_t>(std::min(timeoutUs, 50)));
  }

 private:
  Status verbsError(const std::string& call, int err);
  Status toRtr(const QpInfo& remote);
  Status toRts(uint32_t psn);
  Status postReceiveAndCts(uint64_t frame);
  Status issueSends();

  std::shared_ptr<Device> dev_;
  int linkFd_;
  const int slots_;
  const size_t slice_;
  std::string peer_;
  std::vector<char> sendRing_, recvRing_;
  std::vector<CtsEntry> cts_;     // written by the peer: where our frames go
  std::vector<CtsEntry> ctsOut_;  // staging for the entries we write to the peer
  CtsFifo fifo_;
  MrHandle sendMr_, recvMr_, ctsMr_, ctsOutMr_;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  QpInfo remote_{};
  std::vector<uint32_t> sendBytes_;
  std::vector<uint32_t> recvBytes_ = std::vector<uint32_t>(slots_, 0);
  uint64_t sendHead_ = 0, sendIssued_ = 0, sendTail_ = 0;
  uint64_t recvHead_ = 0, recvTail_ = 0;
  Status error_;
};

Status IbEndpoint::verbsError(const std::string& call, int err) {
  std::string state = "unknown";
  if (qp_ != nullptr) {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(qp_, &a, IBV_QP_STATE, &ia) == 0) state = qpStateName(a.qp_state);
  }
  return Status(braidSystemError, "ibverbs to " + peer_ + " on " + dev_->where() + ", QP " +
                                      std::to_string(qp_ ? qp_->qp_num : 0) + " (state " +
                                      state + "): " + call + ": " + std::strerror(err));
}

Status IbEndpoint::setUp(const Deadline& deadline) {
  MrCache& mrs = *dev_->mrs;
  BRAID_ASSIGN_OR_RETURN(sendMr_, mrs.get(sendRing_.data(), sendRing_.size()));
  BRAID_ASSIGN_OR_RETURN(recvMr_, mrs.get(recvRing_.data(), recvRing_.size()));
  BRAID_ASSIGN_OR_RETURN(ctsMr_, mrs.get(cts_.data(), cts_.size() * sizeof(CtsEntry)));
  BRAID_ASSIGN_OR_RETURN(ctsOutMr_, mrs.get(ctsOut_.data(), ctsOut_.size() * sizeof(CtsEntry)));
  cq_ = ibv_create_cq(dev_->ctx, 4 * slots_ + 16, nullptr, nullptr, 0);
  if (cq_ == nullptr) return verbsError("ibv_create_cq", errno);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq_;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 2 * slots_ + 4;
  init.cap.max_recv_wr = slots_ + 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  qp_ = ibv_create_qp(dev_->pd, &init);
  if (qp_ == nullptr) return verbsError("ibv_create_qp (RC)", errno);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = static_cast<uint8_t>(dev_->port);
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                         IBV_QP_ACCESS_FLAGS)) {
    return verbsError("ibv_modify_qp to INIT", rc);
  }
  QpInfo mine{};
  mine.qpn = qp_->qp_num;
  mine.psn = static_cast<uint32_t>(getpid()) & 0xffffff;
  mine.lid = dev_->portAttr.lid;
  mine.mtu = static_cast<uint8_t>(dev_->portAttr.active_mtu);
  std::memcpy(mine.gid, dev_->gid.raw, 16);
  mine.recvAddr = reinterpret_cast<uintptr_t>(recvRing_.data());
  mine.recvRkey = recvMr_.rkey;
  mine.ctsAddr = reinterpret_cast<uintptr_t>(cts_.data());
  mine.ctsRkey = ctsMr_.rkey;
  BRAID_TRY(sendAll(linkFd_, &mine, sizeof(mine), deadline, "ibverbs QP info"));
  BRAID_TRY(recvAll(linkFd_, &remote_, sizeof(remote_), deadline, "ibverbs QP info"));
  remote_.mtu = std::min(remote_.mtu, mine.mtu);
  BRAID_TRY(toRtr(remote_));
  BRAID_TRY(toRts(mine.psn));
  // Both QPs must be ready before either writes: one byte each way.
  char mark = 'i';
  BRAID_TRY(sendAll(linkFd_, &mark, 1, deadline, "ibverbs ready mark"));
  BRAID_TRY(recvAll(linkFd_, &mark, 1, deadline, "ibverbs ready mark"));
  for (int f = 0; f < slots_; ++f) BRAID_TRY(postReceiveAndCts(static_cast<uint64_t>(f)));
  return Status::ok();
}

Status IbEndpoint::toRtr(const QpInfo& r) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(r.mtu);
  a.dest_qp_num = r.qpn;
  a.rq_psn = r.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = static_cast<uint8_t>(dev_->port);
  a.ah_attr.dlid = r.lid;
  if (dev_->portAttr.link_layer == IBV_LINK_LAYER_ETHERNET || r.lid == 0) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, r.gid, 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev_->gidIndex);
    a.ah_attr.grh.hop_limit = 255;
  }
  int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                      IBV_QP_MIN_RNR_TIMER);
  return rc == 0 ? Status::ok() : verbsError("ibv_modify_qp to RTR (remote QP " +
                                             std::to_string(r.qpn) + ")", rc);
}

Status IbEndpoint::toRts(uint32_t psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = psn;
  a.max_rd_atomic = 1;
  int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  return rc == 0 ? Status::ok() : verbsError("ibv_modify_qp to RTS", rc);
}

// Frame `frame` may land in its receive slot: post the receive for its
// immediate and tell the sender where to write it.
Status IbEndpoint::postReceiveAndCts(uint64_t frame) {
  ibv_recv_wr rwr{};
  ibv_recv_wr* badR = nullptr;
  rwr.wr_id = frame;
  if (int rc = ibv_post_recv(qp_, &rwr, &badR)) return verbsError("ibv_post_recv", rc);
  const size_t slot = frame % slots_;
  CtsEntry& e = ctsOut_[CtsFifo::indexFor(frame, slots_)];
  e = CtsFifo::entryFor(frame, reinterpret_cast<uintptr_t>(recvRing_.data()) + slot * slice_,
                        recvMr_.rkey, static_cast<uint32_t>(slice_));
  ibv_sge sge{reinterpret_cast<uintptr_t>(&e), sizeof(e), ctsOutMr_.lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kCtsWr | frame;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote_.ctsAddr + CtsFifo::indexFor(frame, slots_) * sizeof(CtsEntry);
  wr.wr.rdma.rkey = remote_.ctsRkey;
  if (int rc = ibv_post_send(qp_, &wr, &bad)) return verbsError("ibv_post_send (clear-to-send)", rc);
  return Status::ok();
}

// Writes every posted frame whose clear-to-send entry has arrived.
Status IbEndpoint::issueSends() {
  CtsEntry where{};
  while (sendIssued_ < sendHead_ && fifo_.ready(&where)) {
    const size_t slot = sendIssued_ % slots_;
    const uint32_t bytes = sendBytes_[slot];
    if (bytes > where.bytes) {
      return Status(braidInvalidUsage, "ibverbs to " + peer_ + ": frame of " +
                                           std::to_string(bytes) + " bytes for a " +
                                           std::to_string(where.bytes) + "-byte slot");
    }
    ibv_sge sge{reinterpret_cast<uintptr_t>(sendRing_.data() + slot * slice_), bytes,
                sendMr_.lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = sendIssued_;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(bytes);
    wr.wr.rdma.remote_addr = where.addr;
    wr.wr.rdma.rkey = where.rkey;
    if (int rc = ibv_post_send(qp_, &wr, &bad)) {
      return verbsError("ibv_post_send (frame " + std::to_string(sendIssued_) + ")", rc);
    }
    fifo_.consume();
    ++sendIssued_;
  }
  return Status::ok();
}

Status IbEndpoint::progress() {
  if (!error_.isOk()) return error_;
  ibv_wc wc[16];
  int n;
  while ((n = ibv_poll_cq(cq_, 16, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        return error_ = Status(braidRemoteError,
                               verbsError("work completion", EIO).message() + " (" +
                                   ibv_wc_status_str(wc[i].status) + ", vendor error " +
                                   std::to_string(wc[i].vendor_err) + ")");
      }
      if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        recvBytes_[recvHead_ % slots_] = ntohl(wc[i].imm_data);
        ++recvHead_;  // RC delivers in order
      } else if (wc[i].opcode == IBV_WC_RDMA_WRITE && !(wc[i].wr_id & kCtsWr)) {
        ++sendTail_;
      }
    }
  }
  if (n < 0) return error_ = verbsError("ibv_poll_cq", EIO);
  Status st = issueSends();
  if (!st.isOk()) error_ = st;
  return error_;
}

IbEndpoint::~IbEndpoint() {
  if (qp_) ibv_destroy_qp(qp_);
  if (cq_) ibv_destroy_cq(cq_);
  for (const MrHandle* mr : {&sendMr_, &recvMr_, &ctsMr_, &ctsOutMr_}) {
    if (mr->opaque) dev_->mrs->release(*mr);
  }
  close(linkFd_);
}

class IbverbsTransport : public Transport {
 public:
  explicit IbverbsTransport(const std::string& preferred) {
    Expected<std::unique_ptr<Device>> d = openDevice(preferred);
    if (d.isOk()) {
      dev_ = std::move(d).value();
      BRAID_INFO("ibverbs: using %s, GID index %d%s", dev_->where().c_str(), dev_->gidIndex,
                 dev_->name == preferred ? " (the NIC nearest this rank's GPU or CPU)" : "");
    } else {
      BRAID_INFO("ibverbs: not used: %s", d.status().message().c_str());
    }
  }
  const char* name() const override { return "ibverbs"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return dev_ != nullptr; }
  Expected<std::unique_ptr<Endpoint>> connect(int linkFd, const PeerInfo&, const PeerInfo& peer,
                                              const ConnectOptions& o,
                                              const Deadline& deadline) override {
    std::string who = "rank " + std::to_string(peer.rank) + " (" + peer.hostName + ")";
    auto ep = std::make_unique<IbEndpoint>(dev_, linkFd, o, who);
    BRAID_TRY(ep->setUp(deadline));
    return std::unique_ptr<Endpoint>(std::move(ep));
  }

 private:
  std::shared_ptr<Device> dev_;
};

}  // namespace

std::unique_ptr<Transport> makeIbverbsTransport(const std::string& preferred) {
  return std::make_unique<IbverbsTransport>(preferred);
}

}  // namespace braid::transport::ibverbs
