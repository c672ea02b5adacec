#include "train/group.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace braid::train {

namespace {
int gLogRank = -1;
}

void setLogRank(int rank) { gLogRank = rank; }

void fatal(const std::string& message) {
  if (gLogRank >= 0) {
    std::fprintf(stderr, "braid-train: rank %d: %s\n", gLogRank, message.c_str());
  } else {
    std::fprintf(stderr, "braid-train: %s\n", message.c_str());
  }
  std::fflush(stderr);
  std::exit(1);
}

void CommStats::add(const std::string& key, uint64_t bytes, double seconds, double busFactor) {
  for (auto* m : {&total_, &step_}) {
    Counter& c = (*m)[key];
    c.calls++;
    c.bytes += bytes;
    c.seconds += seconds;
    c.busFactor = busFactor;
  }
  exposed_ += seconds;
}

Group::Group(std::string name, braidComm_t comm, CommStats* stats)
    : name_(std::move(name)), comm_(comm), stats_(stats) {
  if (comm_ != nullptr) {
    check(braidCommCount(comm_, &size_), "braidCommCount");
    check(braidCommUserRank(comm_, &rank_), "braidCommUserRank");
  }
}

void Group::check(braidResult_t r, const char* what) const {
  if (r == braidSuccess) return;
  fatal(std::string(what) + " on the " + name_ + " group (rank " + std::to_string(rank_) + " of " +
        std::to_string(size_) + ") failed: " + braidGetErrorString(r) + ": " +
        braidGetLastError(comm_));
}

void Group::record(const char* coll, uint64_t bytes, double seconds, double busFactor) const {
  if (stats_ != nullptr) stats_->add(name_ + "." + coll, bytes, seconds, busFactor);
}

void Group::allReduceRaw(void* buf, size_t n, braidDataType_t t, size_t es, braidRedOp_t op,
                         braidStream_t stream) const {
  const double t0 = nowSeconds();
  check(braidAllReduce(buf, buf, n, t, op, comm_, stream), "braidAllReduce");
  const double busFactor = 2.0 * (size_ - 1) / size_;
  record(stream ? "allreduce_async" : "allreduce", n * es, stream ? 0.0 : nowSeconds() - t0,
         busFactor);
}

void Group::reduceScatterRaw(const void* send, void* recv, size_t n, braidDataType_t t, size_t es,
                             braidStream_t stream) const {
  if (size_ == 1) {
    std::memmove(recv, send, n * es);
    return;
  }
  const double t0 = nowSeconds();
  check(braidReduceScatter(send, recv, n, t, braidSum, comm_, stream), "braidReduceScatter");
  record(stream ? "reducescatter_async" : "reducescatter", n * es * size_,
         stream ? 0.0 : nowSeconds() - t0, double(size_ - 1) / size_);
}

void Group::allGatherRaw(const void* send, void* recv, size_t n, braidDataType_t t, size_t es) const {
  if (size_ == 1) {
    std::memmove(recv, send, n * es);
    return;
  }
  const double t0 = nowSeconds();
  check(braidAllGather(send, recv, n, t, comm_, nullptr), "braidAllGather");
  record("allgather", n * es * size_, nowSeconds() - t0, double(size_ - 1) / size_);
}

void Group::alltoallvRaw(const void* send, const std::vector<size_t>& sc, void* recv,
                         const std::vector<size_t>& rc, braidDataType_t t, size_t es) const {
  if (size_ == 1) {
    std::memmove(recv, send, sc[0] * es);
    return;
  }
  std::vector<size_t> sd(size_), rd(size_);
  size_t st = 0, rt = 0;
  for (int p = 0; p < size_; ++p) {
    sd[p] = st;
    rd[p] = rt;
    st += sc[p];
    rt += rc[p];
  }
  const double t0 = nowSeconds();
  check(braidAlltoAllv(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), t, comm_, nullptr),
        "braidAlltoAllv");
  record("alltoallv", st * es, nowSeconds() - t0, double(size_ - 1) / size_);
}

void Group::alltoallCounts(const uint64_t* send, uint64_t* recv, size_t count) const {
  if (size_ == 1) {
    std::memmove(recv, send, count * sizeof(uint64_t));
    return;
  }
  const double t0 = nowSeconds();
  check(braidAlltoAll(send, recv, count, braidUint64, comm_, nullptr), "braidAlltoAll");
  record("alltoall", count * size_ * sizeof(uint64_t), nowSeconds() - t0,
         double(size_ - 1) / size_);
}

void Group::sendRecvRaw(const void* send, size_t sn, int sp, void* recv, size_t rn, int rp,
                        braidDataType_t t, size_t es) const {
  const bool doSend = sp >= 0 && sn > 0;
  const bool doRecv = rp >= 0 && rn > 0;
  if (!doSend && !doRecv) return;
  const double t0 = nowSeconds();
  check(braidGroupStart(), "braidGroupStart");
  if (doSend) check(braidSend(send, sn, t, sp, comm_, nullptr), "braidSend");
  if (doRecv) check(braidRecv(recv, rn, t, rp, comm_, nullptr), "braidRecv");
  check(braidGroupEnd(), "braidGroupEnd");
  record("sendrecv", (doSend ? sn : 0) * es + (doRecv ? rn : 0) * es, nowSeconds() - t0, 1.0);
}

}  // namespace braid::train
